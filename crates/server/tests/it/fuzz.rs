//! Random requests at every route: whatever arrives, the answer is a
//! documented 2xx/4xx with a JSON or HTML body, never a 5xx, a hang or a
//! dropped connection.

use rand_free::Rng;
use reqwest::StatusCode;

use crate::support::TestServer;

/// A tiny deterministic generator (xorshift), so failures reproduce.
mod rand_free {
    pub struct Rng(pub u64);
    impl Rng {
        pub fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        pub fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
            &v[self.below(v.len())]
        }
    }
}

/// Every route the router serves (from the router's own list, so a new
/// route is fuzzed without editing this file), and one it does not.
fn paths() -> Vec<&'static str> {
    let mut p = strongroom_http::route_paths();
    p.push("/nope");
    p
}

fn body(r: &mut Rng, token: &str) -> Vec<u8> {
    let keys = [
        "client_id",
        "grant_type",
        "device_code",
        "refresh_token",
        "scope",
        "VaultID",
        "vaultid",
        "Name",
        "StringValue",
        "IntValue",
        "DateValue",
        "Owner",
        "Namespace",
        "Base64Data",
        "VaultType",
        "csrf",
        "ticket",
        "user_code",
        "username",
        "password",
    ];
    let values = [
        "\"app\"".to_owned(),
        "1".to_owned(),
        "-1".to_owned(),
        "1.5".to_owned(),
        "99999999999999999999".to_owned(),
        "null".to_owned(),
        "true".to_owned(),
        "[]".to_owned(),
        "{}".to_owned(),
        format!("\"{token}\""),
        "\"urn:ietf:params:oauth:grant-type:device_code\"".to_owned(),
        "\"\\\\VED\\\\Policy\\\\Team A\"".to_owned(),
        "\"2024-01-02T03:04:05Z\"".to_owned(),
        // Small enough to sit in the socket buffer whole: a route that answers
        // without reading a large body closes the connection mid-upload, which
        // the client reports as a send error (413s for big bodies: bad_input.rs).
        format!("\"{}\"", "x".repeat(r.below(8_000))),
        "\"\\u0000\\ud800\"".to_owned(),
    ];
    match r.below(4) {
        0 => (0..r.below(64)).map(|_| r.next() as u8).collect(),
        1 => {
            let n = r.below(6);
            let fields: Vec<String> = (0..n).map(|_| format!("\"{}\":{}", r.pick(&keys), r.pick(&values))).collect();
            format!("{{{}}}", fields.join(",")).into_bytes()
        }
        2 => {
            let n = r.below(6);
            let fields: Vec<String> =
                (0..n).map(|_| format!("{}={}", r.pick(&keys), r.pick(&["", "x", "%ZZ", "app", token, "+/="]))).collect();
            fields.join("&").into_bytes()
        }
        _ => Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_requests_never_get_a_5xx() {
    let s = TestServer::start_with(|c| c.max_body_bytes = Some(64 * 1024)).await;
    let alice = s.vault_user("alice", "\\VED\\Policy\\Team A", "read,write").await;
    s.integration("app", "restricted:manage,delete;admin:viewlogs", |_| {}).await;
    let token = s.tokens_for(&alice, "app", "restricted:manage,delete;admin:viewlogs").await["access_token"].as_str().unwrap().to_owned();
    let mut r = Rng(0x5eed_1234_abcd_0001);
    let methods = [reqwest::Method::GET, reqwest::Method::POST, reqwest::Method::PUT, reqwest::Method::DELETE];
    let types = ["application/json", "application/x-www-form-urlencoded", "text/plain", "application/json; charset=utf-8", ""];
    let paths = paths();
    // Routes whose handler ran at least once (answered neither 404 nor 405).
    let mut reached = std::collections::BTreeSet::new();
    for i in 0..paths.len() * 24 {
        // Every path in turn, so each gets the same share of the run.
        let path = paths[i % paths.len()];
        let method = r.pick(&methods).clone();
        let ct = *r.pick(&types);
        let mut req = s.http.request(method.clone(), s.at(path)).body(body(&mut r, &token));
        if !ct.is_empty() {
            req = req.header("content-type", ct);
        }
        match r.below(3) {
            // Revoking the one token would leave the rest of the run unauthenticated.
            0 if path != "/vedauth/revoke/token" => req = req.bearer_auth(&token),
            0 | 1 => req = req.header("authorization", "Bearer garbage=="),
            _ => {}
        }
        let resp = req.send().await.unwrap_or_else(|e| panic!("request {i} {method} {path}: {e}"));
        let status = resp.status();
        let ctype = resp.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        assert!(status < StatusCode::INTERNAL_SERVER_ERROR, "request {i}: {method} {path} ({ct}) answered {status}");
        if status != StatusCode::NOT_FOUND && status != StatusCode::METHOD_NOT_ALLOWED {
            reached.insert(path);
        }
        if status != StatusCode::REQUEST_TIMEOUT
            && !(status == StatusCode::OK && path == "/vedauth/device" && method == reqwest::Method::GET)
            && !(status == StatusCode::OK && path == "/vedauth/device/style.css")
            && !(status == StatusCode::OK && path == "/admin/style.css")
            && !(status == StatusCode::SEE_OTHER && path.starts_with("/admin"))
            && !(status == StatusCode::OK && path == "/metrics" && ctype.starts_with("application/openmetrics-text"))
        {
            assert!(
                ctype.starts_with("application/json") || ctype.starts_with("text/html"),
                "request {i}: {method} {path}: content type {ctype:?}"
            );
        }
    }
    // `/crl/{name}` answers 404 for a CA that does not exist, as the router does for no route (its
    // CRLs are fetched and verified in the CLI suite's `certificates`).
    let missed: Vec<_> = paths.iter().filter(|p| **p != "/nope" && **p != "/crl/{name}" && !reached.contains(*p)).collect();
    assert!(missed.is_empty(), "no request reached the handler of {missed:?}");
    assert!(paths.len() >= 29, "the router's 28 routes and /nope");
    // The server still works.
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", &token).await.0, StatusCode::OK);
}
