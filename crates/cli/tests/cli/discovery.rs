//! A standards client finds its way: the `oauth2` crate reads nothing but
//! the RFC 8414 metadata at `/.well-known/oauth-authorization-server`, runs
//! the device flow (RFC 8628) and revokes the grant (RFC 7009), over HTTPS
//! with the server's self-signed certificate.

use oauth2::basic::BasicClient;
use oauth2::{
    AuthType, ClientId, DeviceAuthorizationUrl, RefreshToken, RevocationUrl, Scope, StandardDeviceAuthorizationResponse,
    StandardRevocableToken, TokenResponse as _, TokenUrl,
};
use serde_json::Value;

use crate::process::{Server, approve};

const PASSWORD: &str = "a long passphrase";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standards_client_discovers_the_endpoints_logs_in_and_revokes() {
    let server = Server::start(&[], &[]);
    server.admin(&["users", "create", "alice"], &format!("{PASSWORD}\n"));
    server.admin(&["integrations", "create", "std-app", "--scope", "restricted:manage", "--allow-all-users", "--poll-interval", "1"], "");
    server.admin(&["integrations", "create", "other-app", "--scope", "restricted", "--allow-all-users"], "");
    let pem = std::fs::read(server.dir.join("tls").join("cert.pem")).unwrap();
    let http = oauth2::reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(oauth2::reqwest::Certificate::from_pem(&pem).unwrap())
        .redirect(oauth2::reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let base = format!("https://localhost:{}", server.port);

    // Discovery: RFC 8414 at the well-known path, every URL under the public URL.
    let meta: Value = http.get(format!("{base}/.well-known/oauth-authorization-server")).send().await.unwrap().json().await.unwrap();
    assert_eq!(meta["issuer"], base.as_str(), "{meta}");
    let url = |k: &str| meta[k].as_str().unwrap_or_else(|| panic!("no {k} in {meta}")).to_owned();
    for k in ["token_endpoint", "device_authorization_endpoint", "revocation_endpoint"] {
        assert!(url(k).starts_with(&base), "{k}: {meta}");
    }
    let grants: Vec<&str> = meta["grant_types_supported"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(grants.contains(&"urn:ietf:params:oauth:grant-type:device_code") && grants.contains(&"refresh_token"), "{meta}");
    assert!(meta["scopes_supported"].as_array().unwrap().iter().any(|s| s == "restricted:manage"), "{meta}");

    let client = BasicClient::new(ClientId::new("std-app".into()))
        .set_auth_type(AuthType::RequestBody)
        .set_device_authorization_url(DeviceAuthorizationUrl::new(url("device_authorization_endpoint")).unwrap())
        .set_token_uri(TokenUrl::new(url("token_endpoint")).unwrap())
        .set_revocation_url(RevocationUrl::new(url("revocation_endpoint")).unwrap());

    // The device flow, approved by a person on the page.
    let details: StandardDeviceAuthorizationResponse =
        client.exchange_device_code().add_scope(Scope::new("restricted:manage".into())).request_async(&http).await.unwrap();
    let link = details.verification_uri_complete().unwrap().secret().to_owned();
    assert!(link.starts_with(&base), "{link}");
    let page = approve(&http, &link, "alice", PASSWORD, true).await;
    assert!(page.contains("Access approved"), "{page}");
    let token = client.exchange_device_access_token(&details).request_async(&http, tokio::time::sleep, None).await.unwrap();
    let access = token.access_token().secret().to_owned();
    let refresh = token.refresh_token().unwrap().secret().to_owned();
    let verify = |t: String| {
        let http = http.clone();
        let base = base.clone();
        async move { http.get(format!("{base}/vedauth/authorize/verify")).bearer_auth(t).send().await.unwrap().status().as_u16() }
    };
    assert_eq!(verify(access.clone()).await, 200);

    // Another client may not revoke it: refused, nothing changes.
    let other = BasicClient::new(ClientId::new("other-app".into()))
        .set_auth_type(AuthType::RequestBody)
        .set_revocation_url(RevocationUrl::new(url("revocation_endpoint")).unwrap());
    let refused = other.revoke_token(StandardRevocableToken::RefreshToken(RefreshToken::new(refresh.clone()))).unwrap();
    let err = refused.request_async(&http).await.unwrap_err();
    assert!(format!("{err:?}").contains("unauthorized_client"), "{err:?}");
    assert_eq!(verify(access.clone()).await, 200);

    // RFC 7009 by the refresh token: the whole grant ends, access token too.
    client
        .revoke_token(StandardRevocableToken::RefreshToken(RefreshToken::new(refresh.clone())))
        .unwrap()
        .request_async(&http)
        .await
        .unwrap();
    assert_eq!(verify(access.clone()).await, 401);
    let err = client.exchange_refresh_token(&RefreshToken::new(refresh.clone())).request_async(&http).await.unwrap_err();
    assert!(format!("{err:?}").contains("invalid_grant"), "{err:?}");
    // Revoking again, or an unknown token: 200 all the same (RFC 7009 §2.2).
    client.revoke_token(StandardRevocableToken::RefreshToken(RefreshToken::new(refresh))).unwrap().request_async(&http).await.unwrap();
    let unknown = oauth2::AccessToken::new("not-a-token".into());
    client.revoke_token(StandardRevocableToken::AccessToken(unknown)).unwrap().request_async(&http).await.unwrap();
    // Without a token, or without a client: invalid_request.
    for body in [vec![("client_id", "std-app")], vec![("token", "x")]] {
        let r = http.post(url("revocation_endpoint")).form(&body).send().await.unwrap();
        assert_eq!(r.status(), 400);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"], "invalid_request", "{v}");
    }
    let events = server.admin(&["events", "list", "--kind", "grant.revoked"], "");
    assert_eq!(events.matches("revoked by the client (RFC 7009)").count(), 1, "{events}");
    server.stop();
}
