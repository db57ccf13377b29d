//! An outage: the real server on a PostgreSQL server (of the test's own)
//! that stops and comes back.
//!
//! While the database is down, the token endpoints answer `503
//! temporarily_unavailable` with `Retry-After` (RFC 6749 §5.2: try again),
//! where they answered `400 invalid_request` ("The request could not be
//! processed; try again.") before store errors had kinds, which told a
//! client not to retry; the bearer check answers 503 too; no answer names the
//! database, and the server counts the failures by kind. Once the database
//! is back the same server, not restarted, serves again, and the refresh
//! token presented during the outage still works: nothing was spent.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strongroom_testkit::{Api, TokensExt as _};

use crate::pg_instance::{PgInstance, server_binaries};
use crate::process::Server;

const USER: &str = "olga";
const PASSWORD: &str = "a long passphrase";
const CLIENT: &str = "outage";
/// Words no error body may hold.
const INTERNALS: &[&str] = &["db error", "postgres", "tokio", "SqlState", "connection", "strongroom-pg", "panicked", "pool"];

/// `POST {path}` with a JSON body: status, `Retry-After`, body. Raw, not
/// the kit's typed calls: the subject is the wire (the status and its
/// `Retry-After`).
async fn post(api: &Api, path: &str, body: &Value) -> (u16, Option<String>, Value) {
    let r = api.http.post(api.url(path)).json(body).send().await.unwrap();
    let status = r.status().as_u16();
    let retry_after = r.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    let text = r.text().await.unwrap();
    assert!(!INTERNALS.iter().any(|w| text.contains(w)), "{path} names internals: {text}");
    (status, retry_after, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_database_is_answered_503_temporarily_unavailable_and_served_again_when_back() {
    let Some(bin) = server_binaries("a_stopped_database_is_answered_503_temporarily_unavailable_and_served_again_when_back") else {
        return;
    };
    let pg = tokio::task::spawn_blocking(move || {
        let mut pg = PgInstance::init(&bin, &[], &[]);
        pg.start("");
        pg
    })
    .await
    .unwrap();
    let url = pg.socket_url("connect_timeout=5");
    let server = Server::start(&["--insecure-http", "--database-url", &url], &[]);
    let admin = |args: &[&str], stdin: &str| {
        let mut all = vec!["--database-url", url.as_str()];
        all.extend_from_slice(args);
        server.admin(&all, stdin)
    };
    admin(&["users", "create", USER], &format!("{PASSWORD}\n"));
    admin(&["integrations", "create", CLIENT, "--scope", "restricted", "--allow-all-users", "--password-grant", "true"], "");
    let api = Api::with(reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap(), server.http_base());
    let t = api.password_grant(CLIENT, USER, PASSWORD, "restricted").await;
    let (access, refresh) = (t.access().to_owned(), t.refresh().to_owned());
    api.try_device(CLIENT, "restricted").await.expect("a device start while the database is up");
    let device = json!({"client_id": CLIENT, "scope": "restricted"});

    // Down.
    let mut pg = tokio::task::spawn_blocking(move || {
        let mut pg = pg;
        pg.stop("fast");
        pg
    })
    .await
    .unwrap();
    let refresh_body = json!({"client_id": CLIENT, "refresh_token": refresh});
    for (what, path, body) in
        [("device start", "/vedauth/authorize/device", &device), ("refresh", "/vedauth/authorize/token", &refresh_body)]
    {
        let started = Instant::now();
        let (status, retry_after, v) = post(&api, path, body).await;
        eprintln!("{what} with the database down: {status} after {:?}: {v}", started.elapsed());
        assert_eq!(status, 503, "{what}: {v}");
        assert_eq!(v["error"], "temporarily_unavailable", "{what}: {v}");
        assert_eq!(retry_after.as_deref(), Some("1"), "{what}");
    }
    let r = api.http.get(api.url("/vedauth/authorize/verify")).bearer_auth(&access).send().await.unwrap();
    assert_eq!(r.status(), 503, "the bearer check, never a 401 the client would answer by refreshing");
    assert_eq!(r.json::<Value>().await.unwrap()["error"], "temporarily_unavailable");
    let metrics = api.http.get(api.url("/metrics")).send().await.unwrap().text().await.unwrap();
    let unavailable = metrics
        .lines()
        .find_map(|l| l.strip_prefix("strongroom_store_failures_total{kind=\"unavailable\"} "))
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or(0.0);
    assert!(unavailable >= 3.0, "every failed call is counted by kind: {unavailable}\n{metrics}");

    // Back: the same server serves again, and the refresh token presented
    // while the database was down was never spent.
    let pg = tokio::task::spawn_blocking(move || {
        pg.start("");
        pg
    })
    .await
    .unwrap();
    let back = Instant::now();
    let answer = loop {
        let answer = api.refresh(CLIENT, &refresh).await;
        if !matches!(&answer, Err(f) if f.status() == Some(503)) || back.elapsed() > Duration::from_secs(10) {
            break answer;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!("refresh after the database came back ({:?}): {answer:?}", back.elapsed());
    let renewed = answer.expect("the refresh token presented during the outage still works");
    assert_ne!(renewed.refresh(), refresh, "a new refresh token");
    drop(server);
    drop(pg);
}
