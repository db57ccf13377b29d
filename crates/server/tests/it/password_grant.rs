//! `Authorize/OAuth`: off unless the integration allows it; throttled.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::{PASSWORD, TestServer};

#[tokio::test]
async fn password_grant_is_opt_in_and_locks_out() {
    let s = TestServer::start().await;
    let alice = s.user("alice").await;
    s.integration("vcert-sdk", "certificate:manage,revoke;restricted", |_| {}).await;
    s.integration("pw-app", "certificate:manage,revoke", |i| i.password = Some(true)).await;
    let body = |client: &str, password: &str| json!({"client_id": client, "username": "alice", "password": password, "scope": "certificate:manage,revoke", "state": ""});
    let (st, e) = s.post_json("/vedauth/authorize/oauth", body("vcert-sdk", PASSWORD)).await;
    assert_eq!((st, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("unauthorized_client")));

    let (st, t) = s.post_json("/vedauth/Authorize/OAuth", body("pw-app", PASSWORD)).await;
    assert_eq!(st, StatusCode::OK, "{t}");
    assert_eq!(t["identity"], alice.id.identity());
    assert_eq!(t["scope"], "certificate:manage,revoke");
    assert_eq!(t["state"], "");
    let (st, e) = s
        .post_json("/vedauth/authorize/oauth", json!({"client_id": "pw-app", "username": "alice", "password": PASSWORD, "scope": "admin"}))
        .await;
    assert_eq!((st, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_scope")));

    // Five wrong passwords from one address lock the name there: then even
    // the right one is refused, unchecked.
    for _ in 0..5 {
        let (_, e) = s.post_json("/vedauth/authorize/oauth", body("pw-app", "wrong")).await;
        assert_eq!(e["error_description"], "Username or password is invalid.", "{e}");
    }
    let (_, e) = s.post_json("/vedauth/authorize/oauth", body("pw-app", "wrong")).await;
    assert!(e["error_description"].as_str().unwrap().contains("Too many"), "{e}");
    let (st, e) = s.post_json("/vedauth/authorize/oauth", body("pw-app", PASSWORD)).await;
    assert_eq!((st, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
    // The lock limits guessing; a grant that exists involves no password and
    // keeps working (else anyone could stop a user's integrations).
    let (st, t2) = s.refresh("pw-app", t["refresh_token"].as_str().unwrap()).await;
    assert_eq!(st, StatusCode::OK, "{t2}");
    s.clock.advance_secs(901);
    let (st, _) = s.post_json("/vedauth/authorize/oauth", body("pw-app", PASSWORD)).await;
    assert_eq!(st, StatusCode::OK);
    let kinds = s.event_kinds().await;
    assert_eq!(kinds.iter().filter(|k| *k == "login.failed").count(), 5, "five passwords checked, none after the lock");
    assert_eq!(kinds.iter().filter(|k| *k == "login.lockout").count(), 1);
    // The three right passwords checked are events (the one asking for a
    // scope it may not have too: the password was right, the grant then
    // refused), and the user's last sign-in is the newest's time; the wrong
    // ones and the one refused unchecked are neither.
    let signed_in = s
        .store
        .events(strongroom_store::EventFilter { kind: Some("login.succeeded".into()), limit: 100, ..Default::default() })
        .await
        .unwrap();
    assert_eq!(signed_in.len(), 3, "{signed_in:?}");
    for e in &signed_in {
        assert_eq!((e.event.identity.as_str(), e.event.object.as_str()), (alice.id.identity().as_str(), "alice"));
        assert_eq!(e.event.detail, "password grant");
        assert!(!e.event.detail.contains(PASSWORD) && !e.event.object.contains(PASSWORD));
    }
    let stamped = s.store.user_by_id(alice.id.clone()).await.unwrap().unwrap().signed_in_at;
    assert_eq!(stamped, Some(signed_in.iter().map(|e| e.event.at).max().unwrap()));
}

#[tokio::test]
async fn client_addresses_come_from_trusted_proxies_only() {
    for (trusted, want) in [(Some(vec!["127.0.0.0/8".to_owned()]), "203.0.113.7"), (None, "127.0.0.1")] {
        let s = TestServer::start_with(|c| c.trusted_proxies = trusted.clone()).await;
        s.user("alice").await;
        s.integration("pw-app", "restricted", |i| i.password = Some(true)).await;
        let r = s
            .http
            .post(s.at("/vedauth/authorize/oauth"))
            .header("x-forwarded-for", "6.6.6.6, 203.0.113.7")
            .json(&json!({"client_id": "pw-app", "username": "alice", "password": "wrong", "scope": "restricted"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        let f = strongroom_store::EventFilter { kind: Some("login.failed".into()), limit: 10, ..Default::default() };
        let events = s.store.events(f).await.unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].event.source, want, "trusted proxies: {trusted:?}");
    }
}
