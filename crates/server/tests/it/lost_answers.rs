//! A refresh or device-code exchange whose answer is lost must not end the
//! grant: within the retry window, the token presented again gets a new pair
//! while the pair it replaces was never used. Everything else stays strict.

use reqwest::StatusCode;
use serde_json::Value;

use crate::support::TestServer;

fn tok<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap()
}

async fn verify(s: &TestServer, access: &str) -> StatusCode {
    s.get_bearer("/vedauth/authorize/verify", access).await.0
}

async fn setup(s: TestServer) -> (TestServer, Value) {
    let alice = s.user("alice").await;
    s.integration("app", "restricted", |_| {}).await;
    let t = s.tokens_for(&alice, "app", "restricted").await;
    (s, t)
}

async fn a_lost_refresh_answer_is_recovered_and_the_unused_pair_dies(s: TestServer) {
    let (s, t) = setup(s).await;
    let rt = tok(&t, "refresh_token");
    let (st, lost) = s.refresh("app", rt).await;
    assert_eq!(st, StatusCode::OK);
    s.clock.advance_secs(10);
    let (st, again) = s.refresh("app", rt).await;
    assert_eq!(st, StatusCode::OK, "inside the window: {again}");
    assert_ne!(tok(&again, "refresh_token"), tok(&lost, "refresh_token"));
    assert_eq!(verify(&s, tok(&lost, "access_token")).await, StatusCode::UNAUTHORIZED, "the replaced pair stopped working");
    assert_eq!(verify(&s, tok(&again, "access_token")).await, StatusCode::OK);
    let (st, _) = s.refresh("app", tok(&again, "refresh_token")).await;
    assert_eq!(st, StatusCode::OK, "the client continues with the new pair");
    let kinds = s.event_kinds().await;
    assert!(kinds.iter().any(|k| k == "token.refresh_retried"), "{kinds:?}");
    assert!(!kinds.iter().any(|k| k == "token.refresh_reuse"), "{kinds:?}");
}

async fn a_thief_replaying_after_the_owner_used_the_successor_revokes_the_grant(s: TestServer) {
    let (s, t) = setup(s).await;
    let stolen = tok(&t, "refresh_token").to_owned();
    let (_, owner) = s.refresh("app", &stolen).await;
    assert_eq!(verify(&s, tok(&owner, "access_token")).await, StatusCode::OK, "the owner uses the new pair");
    let (st, v) = s.refresh("app", &stolen).await;
    assert_eq!((st, v["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
    assert_eq!(verify(&s, tok(&owner, "access_token")).await, StatusCode::UNAUTHORIZED, "the whole grant is revoked");
    assert!(s.event_kinds().await.iter().any(|k| k == "token.refresh_reuse"));
}

async fn a_replay_after_the_successor_was_refreshed_revokes_the_grant(s: TestServer) {
    let (s, t) = setup(s).await;
    let stolen = tok(&t, "refresh_token").to_owned();
    let (_, second) = s.refresh("app", &stolen).await;
    let (_, third) = s.refresh("app", tok(&second, "refresh_token")).await;
    let (st, _) = s.refresh("app", &stolen).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    let (st, _) = s.refresh("app", tok(&third, "refresh_token")).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "revoked");
}

async fn a_replay_after_the_window_revokes_the_grant(s: TestServer) {
    let (s, t) = setup(s).await;
    let rt = tok(&t, "refresh_token").to_owned();
    let (_, next) = s.refresh("app", &rt).await;
    s.clock.advance_secs(30);
    let (st, _) = s.refresh("app", &rt).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    let (st, _) = s.refresh("app", tok(&next, "refresh_token")).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "revoked");
}

async fn an_integration_can_be_strict(s: TestServer) {
    let alice = s.user("alice").await;
    s.integration("app", "restricted", |i| i.overrides.retry_window = Some(0)).await;
    let t = s.tokens_for(&alice, "app", "restricted").await;
    let rt = tok(&t, "refresh_token").to_owned();
    let (_, next) = s.refresh("app", &rt).await;
    assert_eq!(s.refresh("app", &rt).await.0, StatusCode::BAD_REQUEST);
    assert_eq!(s.refresh("app", tok(&next, "refresh_token")).await.0, StatusCode::BAD_REQUEST, "revoked at once");
}

async fn a_lost_device_code_exchange_answer_is_recovered(s: TestServer) {
    let alice = s.user("alice").await;
    s.integration("app", "restricted", |_| {}).await;
    let d = s.start_device("app", "restricted").await;
    s.approve_in_store(&alice, tok(&d, "user_code")).await;
    let code = tok(&d, "device_code");
    let (st, lost) = s.poll("app", code).await;
    assert_eq!(st, StatusCode::OK);
    let (st, again) = s.poll("app", code).await;
    assert_eq!(st, StatusCode::OK, "the same code again, inside the window: {again}");
    assert_eq!(verify(&s, tok(&lost, "access_token")).await, StatusCode::UNAUTHORIZED, "the earlier pair stopped working");
    assert_eq!(verify(&s, tok(&again, "access_token")).await, StatusCode::OK);
    // Once the pair was used, the code is spent for good (refused, not revoked).
    let (st, v) = s.poll("app", code).await;
    assert_eq!((st, v["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
    assert_eq!(verify(&s, tok(&again, "access_token")).await, StatusCode::OK, "the grant lives on");
    // Another client never gets a pair for it.
    let (st, _) = s.poll("other", code).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    let kinds = s.event_kinds().await;
    assert!(kinds.iter().any(|k| k == "token.reissued") && kinds.iter().any(|k| k == "device.code_replayed"), "{kinds:?}");
}

async fn a_device_code_after_the_window_is_refused(s: TestServer) {
    let alice = s.user("alice").await;
    s.integration("app", "restricted", |_| {}).await;
    let d = s.start_device("app", "restricted").await;
    s.approve_in_store(&alice, tok(&d, "user_code")).await;
    let (_, first) = s.poll("app", tok(&d, "device_code")).await;
    s.clock.advance_secs(30);
    let (st, _) = s.poll("app", tok(&d, "device_code")).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert_eq!(verify(&s, tok(&first, "access_token")).await, StatusCode::OK, "a replayed code does not revoke");
}

/// Each case on SQLite and on PostgreSQL.
macro_rules! on_both {
    ($($case:ident),* $(,)?) => {
        mod on_sqlite {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(crate::support::TestServer::start().await).await;
                }
            )*
        }
        mod on_postgres {
            $(
                #[tokio::test]
                async fn $case() {
                    if let Some(s) = crate::support::TestServer::start_on_postgres().await {
                        super::$case(s).await;
                    }
                }
            )*
        }
    };
}

on_both!(
    a_lost_refresh_answer_is_recovered_and_the_unused_pair_dies,
    a_thief_replaying_after_the_owner_used_the_successor_revokes_the_grant,
    a_replay_after_the_successor_was_refreshed_revokes_the_grant,
    a_replay_after_the_window_revokes_the_grant,
    an_integration_can_be_strict,
    a_lost_device_code_exchange_answer_is_recovered,
    a_device_code_after_the_window_is_refused
);
