//! The `oauth2` crate as a standard RFC 6749 / RFC 8628 client: device flow
//! and form-encoded refresh against the server.

use oauth2::basic::BasicClient;
use oauth2::{AuthType, RefreshToken};
use oauth2::{ClientId, DeviceAuthorizationUrl, Scope, StandardDeviceAuthorizationResponse, TokenResponse as _, TokenUrl};

use crate::support::{PASSWORD, PageClient, TestServer};

#[tokio::test]
async fn oauth2_crate_device_flow_and_refresh() {
    let s = TestServer::start().await;
    s.user("alice").await;
    s.integration("rfc-client", "restricted:manage", |i| i.overrides.poll_interval = Some(1)).await;

    let client = BasicClient::new(ClientId::new("rfc-client".into()))
        .set_auth_type(AuthType::RequestBody)
        .set_device_authorization_url(DeviceAuthorizationUrl::new(s.at("/vedauth/authorize/device")).unwrap())
        .set_token_uri(TokenUrl::new(s.at("/vedauth/authorize/token")).unwrap());
    let http = oauth2::reqwest::Client::builder().redirect(oauth2::reqwest::redirect::Policy::none()).build().unwrap();

    let details: StandardDeviceAuthorizationResponse =
        client.exchange_device_code().add_scope(Scope::new("restricted:manage".into())).request_async(&http).await.unwrap();
    assert_eq!(details.interval().as_secs(), 1);
    let uri = details.verification_uri_complete().unwrap().secret().to_owned();
    let user_code = details.user_code().secret().to_owned();

    // The person approves in the browser while the client polls.
    let approver = async {
        let page = PageClient::open(&s, &uri).await;
        let (_, html) = page.sign_in_and_decide(&user_code, "alice", PASSWORD, true).await;
        assert!(html.contains("Access approved"), "{html}");
    };
    let poller = client.exchange_device_access_token(&details).request_async(&http, tokio::time::sleep, None);
    let ((), token) = tokio::join!(approver, poller);
    let token = token.unwrap();
    assert_eq!(token.access_token().secret().len(), 48);
    assert_eq!(token.expires_in().unwrap().as_secs(), 3600);
    assert_eq!(token.scopes().unwrap()[0].as_str(), "restricted:manage");

    // Form-encoded refresh with grant_type=refresh_token (tokens carry + / =,
    // which arrive percent-encoded).
    let rt = token.refresh_token().unwrap().secret().to_owned();
    let refreshed = client.exchange_refresh_token(&RefreshToken::new(rt.clone())).request_async(&http).await.unwrap();
    assert_ne!(refreshed.access_token().secret(), token.access_token().secret());
    // The spent one, after the retry window, is refused with invalid_grant,
    // which the crate reports.
    s.clock.advance_secs(31);
    let err = client.exchange_refresh_token(&RefreshToken::new(rt)).request_async(&http).await.unwrap_err();
    assert!(format!("{err:?}").contains("invalid_grant"), "{err:?}");
}
