//! The calls Go vcert (cert-manager, the Terraform provider, the vcert CLI)
//! makes around an authentication: refresh, `GET Identity/Self`,
//! `POST Log` with every field as a string, then `Verify`.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::support::TestServer;

#[tokio::test]
async fn the_vcert_sequence_sees_one_identity() {
    let s = TestServer::start().await;
    let alice = s.user("alice").await;
    // Scope `certificate:manage`: vcert's own; Identity/Self and POST Log take any scope.
    s.integration("vcert-sdk", "certificate:manage", |_| {}).await;
    // Alice is in a group: Identity/Self lists it between her and the provider.
    s.admin.create_group("deployers").await.unwrap();
    s.admin.add_member("deployers", "alice").await.unwrap();
    let t = s.tokens_for(&alice, "vcert-sdk", "certificate:manage").await;
    let (st, t) = s.refresh("vcert-sdk", t["refresh_token"].as_str().unwrap()).await;
    assert_eq!(st, StatusCode::OK, "{t}");
    let at = t["access_token"].as_str().unwrap().to_owned();

    // GET Identity/Self: the caller first, the provider last.
    let (st, me) = s.get_bearer("/vedsdk/Identity/Self", &at).await;
    assert_eq!(st, StatusCode::OK, "{me}");
    let ids = me["Identities"].as_array().unwrap();
    assert_eq!(ids[0]["PrefixedUniversal"], alice.id.identity());
    assert_eq!(ids[0]["PrefixedName"], "local:alice");
    assert_eq!(ids[0]["Name"], "alice");
    assert_eq!(ids[0]["FullName"], "\\VED\\Identity\\alice");
    assert_eq!(ids[0]["Type"], 1, "an integer: Go's int");
    assert_eq!(ids[0]["Universal"], format!("{{{}}}", alice.id));
    assert_eq!(ids.len(), 3, "{me}");
    assert_eq!((ids[1]["PrefixedName"].as_str(), ids[1]["Type"].as_i64()), (Some("local:deployers"), Some(2)));
    assert_eq!(ids.last().unwrap()["Type"], 32);

    // POST Log as vcert sends it: every field a string.
    let log = |body: Value| {
        let r = s.http.post(s.at("/vedsdk/Log")).bearer_auth(&at).json(&body).send();
        async move {
            let r = r.await.unwrap();
            (r.status(), r.json::<Value>().await.unwrap())
        }
    };
    let (st, v) =
        log(json!({"ID": "26808595", "Text1": "build-host-7", "Component": "\\VED\\Policy\\Certificates", "Severity": "7"})).await;
    assert_eq!((st, v), (StatusCode::OK, json!({"LogResult": 0})));
    // Verify: the same identity.
    let (st, v) = s.get_bearer("/vedauth/authorize/verify", &at).await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(v["identity"], ids[0]["PrefixedUniversal"]);

    // The event joined the chain under the caller's identity, as a client event.
    let events = s.store.events(strongroom_store::EventFilter { kind: Some("client.log".into()), limit: 10, ..Default::default() });
    let events = events.await.unwrap();
    assert_eq!(events.len(), 1);
    let e = &events[0].event;
    assert_eq!(
        (e.identity.as_str(), e.client_id.as_str(), e.object.as_str()),
        (alice.id.identity().as_str(), "vcert-sdk", "\\VED\\Policy\\Certificates")
    );
    assert_eq!(e.detail, "ID=26808595 Severity=Info Component=\"\\\\VED\\\\Policy\\\\Certificates\" Text1=\"build-host-7\"");

    // It cannot pose as a server event or as another identity.
    let (_, v) =
        log(json!({"id": 1, "Name": "token.issued", "Identity": "local:{00000000-0000-0000-0000-000000000000}", "Kind": "grant.revoked"}))
            .await;
    assert_eq!(v["LogResult"], 0);
    let all = s.store.events(strongroom_store::EventFilter { limit: 1000, ..Default::default() }).await.unwrap();
    let last = &all.last().unwrap().event;
    assert_eq!((last.kind.as_str(), last.identity.as_str()), ("client.log", alice.id.identity().as_str()));

    // Refused, nothing written: no ID, a bad severity, an over-long field, a body that is not JSON.
    for (body, why) in [
        (json!({"Text1": "x"}), "ID is required"),
        (json!({"ID": "-1"}), "ID must be"),
        (json!({"ID": 5, "Severity": "loud"}), "Severity"),
        (json!({"ID": 5, "Text2": "x".repeat(1025)}), "Text2 is over 1024"),
        (json!({"ID": 5, "Text1": {"nested": true}}), "Text1 must be"),
    ] {
        let (st, v) = log(body).await;
        assert_eq!((st, v["LogResult"].as_i64()), (StatusCode::OK, Some(1)), "{v}");
        assert!(v["Error"].as_str().unwrap().contains(why), "{why}: {v}");
    }
    let r = s.http.post(s.at("/vedsdk/Log")).bearer_auth(&at).body("not json").send().await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let after = s.store.events(strongroom_store::EventFilter { kind: Some("client.log".into()), limit: 10, ..Default::default() });
    assert_eq!(after.await.unwrap().len(), 2, "the refused events wrote nothing");
    // No token, no identity.
    assert_eq!(s.http.get(s.at("/vedsdk/identity/self")).send().await.unwrap().status(), StatusCode::UNAUTHORIZED);
    assert_eq!(s.http.post(s.at("/vedsdk/log")).json(&json!({"ID": 1})).send().await.unwrap().status(), StatusCode::UNAUTHORIZED);
    assert!(s.admin.verify_events().await.unwrap().events > 0, "the chain holds");
}

#[tokio::test]
async fn available_namespaces_is_config() {
    let s = TestServer::start().await;
    let alice = s.user("alice").await;
    s.integration("app", "restricted:manage", |_| {}).await;
    let t = s.tokens_for(&alice, "app", "restricted:manage").await;
    let (st, v) = s.get_bearer("/vedsdk/SecretStore/AvailableNamespaces", t["access_token"].as_str().unwrap()).await;
    assert_eq!((st, v), (StatusCode::OK, json!({"Namespaces": ["config"], "Result": 0})));
    s.integration("reader", "restricted", |_| {}).await;
    let t = s.tokens_for(&alice, "reader", "restricted").await;
    assert_eq!(s.get_bearer("/vedsdk/SecretStore/AvailableNamespaces", t["access_token"].as_str().unwrap()).await.0, StatusCode::FORBIDDEN);
}

/// A database that takes no writes for a moment (another process holds its
/// write lock): `POST Log` answers 503 `temporarily_unavailable` with
/// `Retry-After`, as every other call does, not `LogResult` 1 (which tells a
/// client its event was refused); once the lock is gone the event is written.
#[tokio::test]
async fn post_log_on_a_locked_database_is_503_temporarily_unavailable() {
    let s = TestServer::start().await;
    let alice = s.user("alice").await;
    s.integration("vcert-sdk", "certificate:manage", |_| {}).await;
    let t = s.tokens_for(&alice, "vcert-sdk", "certificate:manage").await;
    let at = t["access_token"].as_str().unwrap().to_owned();
    // The token's first use is recorded (a write): done before the lock.
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", &at).await.0, StatusCode::OK);
    let log = || s.http.post(s.at("/vedsdk/Log")).bearer_auth(&at).json(&json!({"ID": 1, "Component": "locked"})).send();
    let db = rusqlite::Connection::open(s.db_path()).unwrap();
    db.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let r = log().await.unwrap();
    let (status, retry_after) = (r.status(), r.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned()));
    let v = r.json::<Value>().await.unwrap();
    assert_eq!(
        (status, retry_after.as_deref(), v["error"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("1"), Some("temporarily_unavailable")),
        "{v}"
    );
    db.execute_batch("COMMIT").unwrap();
    let r = log().await.unwrap();
    assert_eq!((r.status(), r.json::<Value>().await.unwrap()), (StatusCode::OK, json!({"LogResult": 0})));
    let written = s.store.events(strongroom_store::EventFilter { kind: Some("client.log".into()), limit: 10, ..Default::default() });
    assert_eq!(written.await.unwrap().len(), 1, "the refused attempt wrote nothing, the second one its event");
}
