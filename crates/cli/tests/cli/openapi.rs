//! The OpenAPI description from the binary: `strongroom openapi` prints
//! exactly the committed `openapi.json`, and the running server serves the
//! same document at `GET /openapi.json` without credentials.

use crate::process::{Server, run};

fn committed() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../openapi.json")).unwrap()
}

#[test]
fn strongroom_openapi_prints_the_committed_document() {
    let printed = run(&["openapi"], &[]);
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    assert!(
        printed.stdout == committed(),
        "`strongroom openapi` differs from openapi.json; regenerate it: cargo run -q -p strongroom -- openapi > openapi.json"
    );
}

#[tokio::test]
async fn the_server_serves_it_without_credentials() {
    let server = Server::start(&["--insecure-http"], &[]);
    // Any case, like every other path.
    let res = reqwest::get(format!("http://127.0.0.1:{}/OpenAPI.json", server.port)).await.unwrap();
    assert_eq!(res.status(), 200);
    let ct = res.headers().get("content-type").unwrap().to_str().unwrap().to_owned();
    assert!(ct.starts_with("application/json"), "{ct}");
    let served: serde_json::Value = res.json().await.unwrap();
    let expected: serde_json::Value = serde_json::from_str(&committed()).unwrap();
    assert_eq!(served, expected);
    assert_eq!(served["openapi"], "3.1.0");
    server.stop();
}
