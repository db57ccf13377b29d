//! What operators see beside the API: metrics, health, request ids.

use reqwest::StatusCode;
use serde_json::json;
use std::collections::BTreeMap;

use crate::support::{PASSWORD, TestServer};

/// The exposition text as `name{labels}` → value (comments and `# EOF` left out).
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap_or_else(|| panic!("bad sample line {l:?}"));
            (k.to_owned(), v.parse().unwrap_or_else(|_| panic!("bad value in {l:?}")))
        })
        .collect()
}

async fn scrape(s: &TestServer) -> BTreeMap<String, f64> {
    let r = s.http.get(s.at("/metrics")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(ct.starts_with("application/openmetrics-text"), "{ct}");
    let text = r.text().await.unwrap();
    assert!(text.ends_with("# EOF\n"));
    samples(&text)
}

fn value(m: &BTreeMap<String, f64>, key: &str) -> f64 {
    *m.get(key).unwrap_or_else(|| panic!("no sample {key}; have {:#?}", m.keys().collect::<Vec<_>>()))
}

#[tokio::test]
async fn metrics_count_exactly_the_flows_made() {
    let s = TestServer::start().await;
    let alice = s.user("alice").await;
    s.integration("app", "restricted:manage", |i| i.password = Some(true)).await;

    // Two grants: a device-code exchange and a password grant.
    let t = s.tokens_for(&alice, "app", "restricted:manage").await;
    let pw = |password: &str| json!({"client_id": "app", "username": "alice", "password": password, "scope": "restricted:manage"});
    let (st, p) = s.post_json("/vedauth/authorize/oauth", pw(PASSWORD)).await;
    assert_eq!(st, StatusCode::OK, "{p}");
    // Two rotations, then the first refresh token again: reuse, the grant is revoked.
    let r0 = t["refresh_token"].as_str().unwrap();
    let (st, r1) = s.refresh("app", r0).await;
    assert_eq!(st, StatusCode::OK, "{r1}");
    let (st, r2) = s.refresh("app", r1["refresh_token"].as_str().unwrap()).await;
    assert_eq!(st, StatusCode::OK, "{r2}");
    let (st, e) = s.refresh("app", r0).await;
    assert_eq!((st, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")));
    // The client revokes the password grant.
    let (st, _) = s.get_bearer("/vedauth/revoke/token", p["access_token"].as_str().unwrap()).await;
    assert_eq!(st, StatusCode::OK);
    // Six wrong passwords (five are allowed) lock alice: one lockout, the address allows 20.
    for _ in 0..6 {
        assert_eq!(s.post_json("/vedauth/authorize/oauth", pw("wrong")).await.0, StatusCode::BAD_REQUEST);
    }
    assert_eq!(s.http.get(s.at("/no/such/path?token=x")).send().await.unwrap().status(), StatusCode::NOT_FOUND);

    let m = scrape(&s).await;
    assert_eq!(value(&m, "strongroom_tokens_issued_total"), 2.0);
    assert_eq!(value(&m, "strongroom_tokens_refreshed_total"), 2.0);
    assert_eq!(value(&m, "strongroom_refresh_reuse_detections_total"), 1.0);
    assert_eq!(value(&m, "strongroom_grants_revoked_total"), 2.0, "one by reuse, one by the client");
    assert_eq!(value(&m, "strongroom_lockouts_total"), 1.0);
    let token =
        |status: u16| format!("strongroom_http_requests_total{{route=\"/vedauth/authorize/token\",method=\"POST\",status=\"{status}\"}}");
    assert_eq!(value(&m, &token(200)), 3.0, "one exchange, two refreshes");
    assert_eq!(value(&m, &token(400)), 1.0, "the reused token");
    let oauth =
        |status: u16| format!("strongroom_http_requests_total{{route=\"/vedauth/authorize/oauth\",method=\"POST\",status=\"{status}\"}}");
    assert_eq!(value(&m, &oauth(200)), 1.0);
    assert_eq!(value(&m, &oauth(400)), 6.0);
    assert_eq!(value(&m, "strongroom_http_requests_total{route=\"unmatched\",method=\"GET\",status=\"404\"}"), 1.0);
    assert!(!m.keys().any(|k| k.contains("no/such") || k.contains("token=x")), "raw paths are never labels");
    assert_eq!(value(&m, "strongroom_http_request_duration_seconds_count{route=\"/vedauth/authorize/token\"}"), 4.0);
    // Every write went through the SQLite writer's group commit.
    let batches = value(&m, "strongroom_store_commit_batch_jobs_count");
    assert!(batches >= 5.0 && value(&m, "strongroom_store_commit_batch_jobs_sum") >= batches, "{batches}");
    assert!(value(&m, "strongroom_store_commit_duration_seconds_count") == batches);
    assert_eq!(value(&m, "strongroom_store_connections_max"), 3.0, "one writer and two readers");
    assert!(value(&m, "process_resident_memory_bytes") > 1_048_576.0);
    // The scrape itself is counted, once it has been answered.
    let m = scrape(&s).await;
    assert_eq!(value(&m, "strongroom_http_requests_total{route=\"/metrics\",method=\"GET\",status=\"200\"}"), 1.0);
    s.stop().await;
}

/// Simultaneous presentations of one spent refresh token: each may decide
/// "reuse", one revocation commits. The reuse counter counts what the store
/// committed, so it equals the `token.refresh_reuse` events: one per round.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reuse_is_counted_once_per_revocation_like_its_events() {
    // No retry window: a spent token presented again is always reuse.
    let s = TestServer::start_with(|c| c.tokens.retry_window = Some(0)).await;
    let alice = s.user("alice").await;
    s.integration("app", "restricted:manage", |_| {}).await;
    const ROUNDS: usize = 3;
    for _ in 0..ROUNDS {
        let t = s.tokens_for(&alice, "app", "restricted:manage").await;
        let spent = t["refresh_token"].as_str().unwrap().to_owned();
        let (st, r1) = s.refresh("app", &spent).await;
        assert_eq!(st, StatusCode::OK, "{r1}");
        let answers = crate::concurrency::futures_join_all((0..8).map(|_| s.refresh("app", &spent))).await;
        for (st, body) in answers {
            assert_eq!((st, body["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")), "{body}");
        }
    }
    let reuse_events = s.event_kinds().await.iter().filter(|k| *k == "token.refresh_reuse").count();
    assert_eq!(reuse_events, ROUNDS, "one revocation per spent token");
    let m = scrape(&s).await;
    assert_eq!(value(&m, "strongroom_refresh_reuse_detections_total"), reuse_events as f64, "metric and events agree");
    assert_eq!(value(&m, "strongroom_grants_revoked_total"), reuse_events as f64);
    s.stop().await;
}

#[tokio::test]
async fn metrics_on_their_own_listener_leave_the_main_one() {
    let s = TestServer::start_with(|c| c.metrics.listen = Some("127.0.0.1:0".into())).await;
    assert_eq!(s.http.get(s.at("/metrics")).send().await.unwrap().status(), StatusCode::NOT_FOUND);
    s.stop().await;
}

async fn status(s: &TestServer, path: &str) -> StatusCode {
    s.http.get(s.at(path)).send().await.unwrap().status()
}

#[tokio::test]
async fn readiness_follows_a_locked_database_and_the_schema() {
    let s = TestServer::start().await;
    for p in ["/health/live", "/health/ready", "/healthz"] {
        assert_eq!(status(&s, p).await, StatusCode::OK, "{p}");
    }
    let db = rusqlite::Connection::open(s.db_path()).unwrap();
    db.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
    // Another process holds the write lock: writes cannot happen, so not ready.
    db.execute_batch("BEGIN EXCLUSIVE").unwrap();
    assert_eq!(status(&s, "/health/ready").await, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(status(&s, "/healthz").await, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(status(&s, "/health/live").await, StatusCode::OK, "the process itself is alive");
    db.execute_batch("COMMIT").unwrap();
    assert_eq!(status(&s, "/health/ready").await, StatusCode::OK, "ready again once the lock is gone");
    // A schema behind this binary's migrations is not ready either.
    let newest: i64 = db.query_row("SELECT max(version) FROM schema_migrations", [], |r| r.get(0)).unwrap();
    let (name, at): (String, i64) = db
        .query_row("SELECT name, applied_at FROM schema_migrations WHERE version = ?1", [newest], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    db.execute("DELETE FROM schema_migrations WHERE version = ?1", [newest]).unwrap();
    assert_eq!(status(&s, "/health/ready").await, StatusCode::SERVICE_UNAVAILABLE);
    db.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, ?3)", rusqlite::params![newest, name, at])
        .unwrap();
    assert_eq!(status(&s, "/health/ready").await, StatusCode::OK);
    s.stop().await;
}

#[tokio::test]
async fn readiness_follows_a_blocked_postgresql() {
    let Some(url) = crate::support::pg_url_or_skip("readiness_follows_a_blocked_postgresql") else { return };
    let (store, schema) = strongroom_store::postgres::testing::fresh_schema_named(&url).await.unwrap();
    let s = TestServer::start_on_store(store).await;
    assert_eq!(status(&s, "/health/ready").await, StatusCode::OK);
    // Another session holds the schema's tables: the store cannot answer.
    let (mut client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    let driver = tokio::spawn(conn);
    let tx = client.transaction().await.unwrap();
    tx.batch_execute(&format!("LOCK TABLE {schema}.schema_migrations IN ACCESS EXCLUSIVE MODE")).await.unwrap();
    assert_eq!(status(&s, "/health/ready").await, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(status(&s, "/health/live").await, StatusCode::OK);
    tx.rollback().await.unwrap();
    assert_eq!(status(&s, "/health/ready").await, StatusCode::OK, "ready again once the lock is gone");
    // A schema behind this binary's migrations is not ready.
    client
        .batch_execute(&format!(
            "DELETE FROM {schema}.schema_migrations WHERE version = (SELECT max(version) FROM {schema}.schema_migrations)"
        ))
        .await
        .unwrap();
    assert_eq!(status(&s, "/health/ready").await, StatusCode::SERVICE_UNAVAILABLE);
    drop(client);
    let _ = driver.await;
    s.stop().await;
}

#[tokio::test]
async fn inbound_request_ids_are_bounded_echoed_and_recorded() {
    let s = TestServer::start().await;
    s.integration("app", "restricted:manage", |_| {}).await;
    let start = |id: Option<&str>| {
        let mut r = s.http.post(s.at("/vedauth/authorize/device")).json(&json!({"client_id": "app", "scope": "restricted:manage"}));
        if let Some(id) = id {
            r = r.header("x-request-id", id);
        }
        r.send()
    };
    let r = start(Some("lb-7f3a:42")).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["x-request-id"], "lb-7f3a:42", "an acceptable id is echoed");
    let long = "x".repeat(65);
    let mut generated = Vec::new();
    for bad in [Some(long.as_str()), Some("has space"), Some(""), None] {
        let r = start(bad).await.unwrap();
        let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
        assert!(id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{bad:?} → {id}");
        generated.push(id);
    }
    let f = strongroom_store::EventFilter { kind: Some("device.started".into()), limit: 10, ..Default::default() };
    let ids: Vec<String> = s.store.events(f).await.unwrap().into_iter().map(|e| e.event.request_id).collect();
    let mut want = vec!["lb-7f3a:42".to_owned()];
    want.extend(generated);
    assert_eq!(ids, want, "every event carries its request's id");
    s.stop().await;
}

/// The timeout layer answers 408 with an empty body, as the OpenAPI
/// document says, to a request whose body never finishes arriving.
#[tokio::test]
async fn a_request_that_takes_too_long_is_answered_408() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let s = TestServer::start_with(|c| c.request_timeout_secs = Some(1)).await;
    let addr = s.url.trim_start_matches("http://").to_owned();
    let mut conn = tokio::net::TcpStream::connect(&addr).await.unwrap();
    // 10 of the 100 bytes announced, then nothing.
    let head = format!(
        "POST /vedauth/Authorize/Token HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"client_i"
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    let started = std::time::Instant::now();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        let mut buf = [0u8; 4096];
        loop {
            let n = conn.read(&mut buf).await.unwrap();
            answer.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&answer);
            if n == 0 || text.contains("\r\n\r\n") {
                break;
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no answer within 10 s");
    let text = String::from_utf8_lossy(&answer).to_string();
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.to_ascii_lowercase().contains("content-length: 0"), "an empty body: {text}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(900), "answered before the timeout: {:?}", started.elapsed());
    let doc: serde_json::Value = s.http.get(s.at("/openapi.json")).send().await.unwrap().json().await.unwrap();
    assert_eq!(doc["paths"]["/vedauth/Authorize/Token"]["post"]["responses"]["408"]["$ref"], "#/components/responses/Timeout");
    s.stop().await;
}

/// The server speaks HTTP/1.1 only (ALPN offers nothing else): a client that
/// opens with HTTP/2's preface and then says nothing more is not held open
/// (HTTP/2 has none of the read timeouts HTTP/1 connections get).
#[tokio::test]
async fn an_http2_preface_is_not_served() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let s = TestServer::start().await;
    let addr = s.url.trim_start_matches("http://").to_owned();
    let mut conn = tokio::net::TcpStream::connect(&addr).await.unwrap();
    // The preface, then an empty SETTINGS frame, then silence.
    conn.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00").await.unwrap();
    let closed = tokio::time::timeout(std::time::Duration::from_secs(3), async {
        let mut buf = [0u8; 4096];
        loop {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the connection was still open 3 s after an HTTP/2 preface");
}
