//! The whole device flow over HTTP, through the approval page's forms.

use reqwest::StatusCode;
use serde_json::{Value, json};

use strongroom_core::time::Clock as _;

use crate::support::{DEVICE_GRANT, PASSWORD, PageClient, TestServer};

fn assert_token_response(t: &Value, scope: &str) {
    for k in ["access_token", "refresh_token"] {
        let v = t[k].as_str().unwrap_or_else(|| panic!("{k} missing: {t}"));
        assert_eq!(v.len(), 48, "{k}");
        assert!(v.ends_with("=="), "{k} ends in == (pyvenafi picks its header by it)");
    }
    for k in ["expires_in", "expires", "refresh_until"] {
        assert!(t[k].is_i64(), "{k} is a JSON integer: {t}");
    }
    assert_eq!(t["token_type"], "Bearer");
    assert_eq!(t["scope"], scope);
    assert!(t["identity"].as_str().unwrap().starts_with("local:{"));
}

#[tokio::test]
async fn device_flow_end_to_end() {
    let s = TestServer::start().await;
    let alice = s.user("alice").await;
    s.integration("my-app", "restricted:manage", |_| {}).await;

    // Start: the page's URLs are absolute and carry the user code.
    let d = s.start_device("my-app", "restricted:manage").await;
    let device_code = d["device_code"].as_str().unwrap().to_owned();
    let user_code = d["user_code"].as_str().unwrap().to_owned();
    assert_eq!(d["verification_uri"], s.at("/vedauth/device"));
    assert_eq!(d["verification_uri_complete"], format!("{}?user_code={user_code}", s.at("/vedauth/device")));
    assert_eq!((d["expires_in"].as_i64(), d["interval"].as_i64()), (Some(300), Some(5)));
    assert_eq!(d["expires"].as_i64().unwrap(), s.clock.now().secs() + 300);

    // Pending, then polling too fast.
    let (st, e) = s.poll("my-app", &device_code).await;
    assert_eq!((st, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("authorization_pending")));
    s.clock.advance_secs(1);
    let (st, e) = s.poll("my-app", &device_code).await;
    assert_eq!((st, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("slow_down")));
    // The interval is now 10 s: a poll 6 s later is still too fast, and
    // makes it 15 s.
    s.clock.advance_secs(6);
    assert_eq!(s.poll("my-app", &device_code).await.1["error"], "slow_down");
    s.clock.advance_secs(13);
    assert_eq!(s.poll("my-app", &device_code).await.1["error"], "slow_down");
    s.clock.advance_secs(20);
    assert_eq!(s.poll("my-app", &device_code).await.1["error"], "authorization_pending");

    // Approve through the page: the link's code in lower case, without the dash.
    let page = PageClient::open(&s, d["verification_uri_complete"].as_str().unwrap()).await;
    let typed = user_code.replace('-', "").to_lowercase();
    let (st, html) = page.sign_in_and_decide(&typed, "alice", PASSWORD, true).await;
    assert_eq!(st, StatusCode::OK);
    assert!(html.contains("Access approved"), "{html}");

    // Exchange, once.
    s.clock.advance_secs(10);
    let (st, t) = s.poll("my-app", &device_code).await;
    assert_eq!(st, StatusCode::OK, "{t}");
    assert_token_response(&t, "restricted:manage");
    assert_eq!(t["identity"], alice.id.identity());
    assert_eq!(t["expires_in"], 3600);
    assert_eq!(t["refresh_until"].as_i64().unwrap(), s.clock.now().secs() + 90 * 86_400);
    // The same code again while its pair is unused (the answer was lost):
    // a new pair for the same grant, and the first one stops working.
    let first_access = t["access_token"].as_str().unwrap().to_owned();
    let (st, t) = s.poll("my-app", &device_code).await;
    assert_eq!(st, StatusCode::OK, "{t}");
    assert_ne!(t["access_token"].as_str().unwrap(), first_access);
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", &first_access).await.0, StatusCode::UNAUTHORIZED);
    let access = t["access_token"].as_str().unwrap().to_owned();
    let refresh = t["refresh_token"].as_str().unwrap().to_owned();

    // Verify and Version accept the token.
    let (st, v) = s.get_bearer("/vedauth/Authorize/Verify", &access).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v["application"], "my-app");
    assert_eq!(v["identity"], alice.id.identity());
    assert_eq!(v["scope"], "restricted:manage");
    assert_eq!(v["valid_for"], 3600);
    assert_eq!(v["expires_unix_time"], t["refresh_until"]);
    assert!(v["access_issued_on"].as_str().unwrap().starts_with("/Date("));
    assert!(v["grant_issued_on_ISO8601"].as_str().unwrap().ends_with('Z'));
    let (st, v) = s.get_bearer("/vedsdk/SystemStatus/Version", &access).await;
    assert_eq!((st, v["Version"].as_str()), (StatusCode::OK, Some("25.1.0")));
    // The pair was used: the code is spent for good.
    let (st, e) = s.poll("my-app", &device_code).await;
    assert_eq!((st, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));

    // Refresh in the product's JSON shape: new pair, same scope and refresh_until.
    s.clock.advance_secs(60);
    let (st, t2) = s.refresh("my-app", &refresh).await;
    assert_eq!(st, StatusCode::OK, "{t2}");
    assert_token_response(&t2, "restricted:manage");
    assert_ne!(t2["access_token"], t["access_token"]);
    assert_ne!(t2["refresh_token"], t["refresh_token"]);
    assert_eq!(t2["refresh_until"], t["refresh_until"]);
    let access2 = t2["access_token"].as_str().unwrap().to_owned();
    let refresh2 = t2["refresh_token"].as_str().unwrap().to_owned();

    // The new pair is used; then the spent refresh token again: refused,
    // and the whole grant dies.
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", &access2).await.0, StatusCode::OK);
    let (st, e) = s.refresh("my-app", &refresh).await;
    assert_eq!((st, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
    assert_eq!(e["error_description"], "Grant has been revoked, has expired, or the refresh token is invalid");
    assert_eq!(s.refresh("my-app", &refresh2).await.1["error"], "invalid_grant");
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", &access2).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(s.get_bearer("/vedsdk/systemstatus/version", &access).await.0, StatusCode::UNAUTHORIZED);

    let kinds = s.event_kinds().await;
    for k in ["device.started", "device.approved", "token.issued", "device.code_replayed", "token.refreshed", "token.refresh_reuse"] {
        assert!(kinds.iter().any(|x| x == k), "event {k} missing from {kinds:?}");
    }
    s.stop().await;
}

#[tokio::test]
async fn revoke_ends_the_grant() {
    let s = TestServer::start().await;
    let alice = s.user("alice").await;
    s.integration("app", "restricted", |_| {}).await;
    let t = s.tokens_for(&alice, "app", "restricted").await;
    let access = t["access_token"].as_str().unwrap();

    let r = s.http.get(s.at("/vedauth/revoke/token")).bearer_auth(access).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["Success"], true);
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", access).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(s.refresh("app", t["refresh_token"].as_str().unwrap()).await.1["error"], "invalid_grant");
    // Again, and with no token at all: 202 "not found", as the product answers.
    let r = s.http.get(s.at("/vedauth/revoke/token")).bearer_auth(access).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    assert_eq!(s.http.get(s.at("/vedauth/revoke/token")).send().await.unwrap().status(), StatusCode::ACCEPTED);
    assert!(s.event_kinds().await.iter().any(|k| k == "grant.revoked"));
}

#[tokio::test]
async fn expiry_follows_the_injected_clock() {
    let s = TestServer::start().await;
    let alice = s.user("alice").await;
    s.integration("app", "restricted", |i| {
        i.overrides.access_validity = Some(600);
        i.overrides.grant_validity = Some(3600);
    })
    .await;
    let t = s.tokens_for(&alice, "app", "restricted").await;
    assert_eq!(t["expires_in"], 600);
    let access = t["access_token"].as_str().unwrap();
    s.clock.advance_secs(599);
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", access).await.0, StatusCode::OK);
    s.clock.advance_secs(1);
    let (st, e) = s.get_bearer("/vedauth/authorize/verify", access).await;
    assert_eq!((st, e["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("invalid_token")));

    // Refresh works until refresh_until; the last access token is cut to it.
    s.clock.advance_secs(2400);
    let (st, t2) = s.refresh("app", t["refresh_token"].as_str().unwrap()).await;
    assert_eq!(st, StatusCode::OK, "{t2}");
    assert_eq!(t2["expires_in"], 600);
    s.clock.advance_secs(599);
    let (st, t3) = s.refresh("app", t2["refresh_token"].as_str().unwrap()).await;
    assert_eq!(st, StatusCode::OK, "{t3}");
    assert_eq!(t3["expires_in"], 1, "an access token never outlives its grant");
    assert_eq!(t3["expires"], t3["refresh_until"]);
    s.clock.advance_secs(1);
    assert_eq!(s.refresh("app", t3["refresh_token"].as_str().unwrap()).await.1["error"], "invalid_grant");

    // A device code expires too.
    let d = s.start_device("app", "restricted").await;
    s.approve_in_store(&alice, d["user_code"].as_str().unwrap()).await;
    s.clock.advance_secs(300);
    let (st, e) = s.poll("app", d["device_code"].as_str().unwrap()).await;
    assert_eq!((st, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
}

#[tokio::test]
async fn denial_through_the_page_reaches_the_client() {
    let s = TestServer::start().await;
    s.user("alice").await;
    s.integration("app", "restricted", |_| {}).await;
    let d = s.start_device("app", "restricted").await;
    let page = PageClient::open(&s, d["verification_uri"].as_str().unwrap()).await;
    let (st, html) = page.sign_in_and_decide(d["user_code"].as_str().unwrap(), "local:alice", PASSWORD, false).await;
    assert_eq!(st, StatusCode::OK);
    assert!(html.contains("Access denied"), "{html}");
    let (st, e) = s.poll("app", d["device_code"].as_str().unwrap()).await;
    assert_eq!((st, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("access_denied")));
    assert!(s.event_kinds().await.iter().any(|k| k == "device.denied"));
}

#[tokio::test]
async fn the_page_refuses_forgery_wrong_passwords_and_guessing() {
    let s = TestServer::start().await;
    s.user("alice").await;
    s.user("bob").await;
    s.integration("app", "restricted", |_| {}).await;
    let d = s.start_device("app", "restricted").await;
    let code = d["user_code"].as_str().unwrap();
    let page = PageClient::open(&s, d["verification_uri"].as_str().unwrap()).await;

    // No cookie, wrong anti-forgery field, foreign Origin.
    let r = s
        .http
        .post(s.at("/vedauth/device"))
        .form(&[("csrf", "x"), ("user_code", code), ("username", "alice"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let r = s
        .http
        .post(s.at("/vedauth/device"))
        .header("cookie", format!("sr_csrf={}", "A".repeat(43)))
        .header("origin", "https://evil.example")
        .form(&[("csrf", "A".repeat(43).as_str()), ("user_code", code), ("username", "alice"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    // A decision without a valid ticket.
    let (st, _) = page.post("/vedauth/device/decision", &[("ticket", "forged.ticket"), ("action", "approve")]).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);

    // Wrong password.
    let (st, html) = page.post("/vedauth/device", &[("user_code", code), ("username", "alice"), ("password", "wrong")]).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    assert!(html.contains("wrong"), "{html}");

    // Bob guesses codes: five wrong ones, then he is locked out of guessing,
    // even with the right code.
    for i in 0..5 {
        let (st, _) = page.post("/vedauth/device", &[("user_code", "BCDF-GHJK"), ("username", "bob"), ("password", PASSWORD)]).await;
        assert_eq!(st, StatusCode::NOT_FOUND, "guess {i}");
    }
    let (st, _) = page.post("/vedauth/device", &[("user_code", "BCDF-GHJK"), ("username", "bob"), ("password", PASSWORD)]).await;
    assert_eq!(st, StatusCode::TOO_MANY_REQUESTS);
    let (st, _) = page.post("/vedauth/device", &[("user_code", code), ("username", "bob"), ("password", PASSWORD)]).await;
    assert_eq!(st, StatusCode::TOO_MANY_REQUESTS);

    // Nothing was approved.
    assert_eq!(s.poll("app", d["device_code"].as_str().unwrap()).await.1["error"], "authorization_pending");
    let kinds = s.event_kinds().await;
    assert_eq!(kinds.iter().filter(|k| *k == "device.user_code_failed").count(), 5, "five codes compared, none after the lock");
    assert!(kinds.iter().any(|k| k == "login.lockout"));
}

#[tokio::test]
async fn wrong_client_neither_gets_nor_burns_codes_and_tokens() {
    let s = TestServer::start().await;
    let alice = s.user("alice").await;
    s.integration("app", "restricted", |_| {}).await;
    s.integration("other", "restricted", |_| {}).await;
    let d = s.start_device("app", "restricted").await;
    s.approve_in_store(&alice, d["user_code"].as_str().unwrap()).await;
    let code = d["device_code"].as_str().unwrap();
    assert_eq!(s.poll("other", code).await.1["error"], "invalid_grant");
    assert_eq!(s.poll("App", code).await.1["error"], "invalid_grant", "client ids are case-sensitive");
    let (st, t) = s.poll("app", code).await;
    assert_eq!(st, StatusCode::OK, "the rightful client still redeems: {t}");
    let rt = t["refresh_token"].as_str().unwrap();
    let (st, e) = s.refresh("other", rt).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert!(e["error_description"].as_str().unwrap().contains("does not match"), "{e}");
    assert_eq!(s.refresh("app", rt).await.0, StatusCode::OK, "not burned by the wrong client");
}

#[tokio::test]
async fn disabled_users_and_integrations_lose_access_at_once() {
    let s = TestServer::start().await;
    let alice = s.user("alice").await;
    s.integration("app", "restricted", |_| {}).await;
    let t = s.tokens_for(&alice, "app", "restricted").await;
    let access = t["access_token"].as_str().unwrap();
    assert_eq!(s.admin.set_user_disabled("alice", true).await.unwrap(), 1, "her one grant is revoked");
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", access).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(s.refresh("app", t["refresh_token"].as_str().unwrap()).await.1["error"], "invalid_grant");
    // Enabling her again revives nothing: the grant ended with the disable.
    s.admin.set_user_disabled("alice", false).await.unwrap();
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", access).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(s.refresh("app", t["refresh_token"].as_str().unwrap()).await.1["error"], "invalid_grant");
    let t = s.tokens_for(&alice, "app", "restricted").await;
    let access = t["access_token"].as_str().unwrap();
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", access).await.0, StatusCode::OK, "a new grant works");
    let spec = strongroom_app::admin::IntegrationSpec { disabled: Some(true), ..Default::default() };
    s.admin.update_integration("app", spec).await.unwrap();
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", access).await.0, StatusCode::UNAUTHORIZED);
    let (st, e) = s.post_json("/vedauth/authorize/device", json!({"client_id": "app", "scope": "restricted"})).await;
    assert_eq!((st, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_client")));
}

#[tokio::test]
async fn real_client_quirks() {
    let s = TestServer::start().await;
    let alice = s.user("alice").await;
    s.integration("app", "restricted:manage", |_| {}).await;
    let t = s.tokens_for(&alice, "app", "restricted").await;
    // A stale Authorization header on the token endpoint is ignored (pyvenafi),
    // paths match in any case and with doubled slashes, and the standard form
    // refresh with grant_type=refresh_token works too.
    let r = s
        .http
        .post(format!("{}//VEDAUTH/authorize/TOKEN", s.url))
        .header("authorization", "Bearer stale-and-revoked-token==")
        .form(&[("grant_type", "refresh_token"), ("refresh_token", t["refresh_token"].as_str().unwrap()), ("client_id", "app")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
    assert_eq!(r.headers()["cache-control"], "no-store");
    let t2: Value = r.json().await.unwrap();
    // pyvenafi's fallback header.
    let r = s
        .http
        .get(s.at("/vedauth/authorize/verify"))
        .header("X-Venafi-API-Key", format!("Bearer {}", t2["access_token"].as_str().unwrap()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // The device-code exchange as a form.
    let d = s.start_device("app", "restricted:manage").await;
    s.approve_in_store(&alice, d["user_code"].as_str().unwrap()).await;
    let (st, t3) = s
        .post_form(
            "/vedauth/authorize/token",
            &[("client_id", "app"), ("grant_type", DEVICE_GRANT), ("device_code", d["device_code"].as_str().unwrap())],
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{t3}");
    // GET /vedsdk/ answers 200 (Go vcert's Ping); a 401 carries the challenge.
    assert_eq!(s.http.get(s.at("/vedsdk/")).send().await.unwrap().status(), StatusCode::OK);
    let r = s.http.get(s.at("/vedsdk/systemstatus/version")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers()["www-authenticate"].to_str().unwrap().starts_with("Bearer"));
}

#[tokio::test]
async fn device_starts_are_limited_per_address() {
    let s = TestServer::start().await;
    s.integration("app", "restricted", |_| {}).await;
    for i in 0..60 {
        let (st, v) = s.post_json("/vedauth/authorize/device", json!({"client_id": "app", "scope": "restricted"})).await;
        assert_eq!(st, StatusCode::OK, "start {i}: {v}");
    }
    let (st, v) = s.post_json("/vedauth/authorize/device", json!({"client_id": "app", "scope": "restricted"})).await;
    assert_eq!((st, v["error"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("slow_down")));
    assert_eq!(s.event_kinds().await.iter().filter(|k| *k == "device.started").count(), 60, "the refused start wrote nothing");
    // The window passes.
    s.clock.advance_secs(601);
    let (st, _) = s.post_json("/vedauth/authorize/device", json!({"client_id": "app", "scope": "restricted"})).await;
    assert_eq!(st, StatusCode::OK);
}
