//! The approval page in a real browser: headless Chromium driven through
//! ChromeDriver (the test kit's `browser`: `fantoccini`, ChromeDriver on a
//! port it picks itself).

use reqwest::StatusCode;
use serde_json::Value;
use std::time::Duration;

use strongroom_testkit::browser::ChromeDriver;

use crate::support::{PASSWORD, TestServer};

/// The page's title without the site's name: the page's heading.
fn heading(title: &str) -> String {
    title.trim_end_matches(" · Strongroom").to_owned()
}

/// Polls like a client does until the answer is final.
async fn poll_until_final(s: &TestServer, code: &str) -> (StatusCode, Value) {
    for _ in 0..200 {
        s.clock.advance_secs(5);
        let (st, v) = s.poll("app", code).await;
        if v["error"] != "authorization_pending" {
            return (st, v);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the device flow never finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_and_deny_in_a_real_browser() {
    let Some(driver) = ChromeDriver::start() else { return };
    let s = TestServer::start().await;
    s.user("alice").await;
    s.integration("app", "restricted:manage", |_| {}).await;

    for approve in [true, false] {
        let d = s.start_device("app", "restricted:manage").await;
        let code = d["device_code"].as_str().unwrap().to_owned();
        let page = driver.session().await;
        page.goto(d["verification_uri_complete"].as_str().unwrap()).await;
        page.wait_title(heading, "Sign in to approve a device").await;
        page.type_into("#username", "alice").await;
        page.type_into("#password", PASSWORD).await;
        page.click("#sign_in").await;
        page.wait_title(heading, "Approve access?").await;
        page.click(if approve { "#approve" } else { "#deny" }).await;
        page.wait_title(heading, if approve { "Access approved" } else { "Access denied" }).await;
        page.close().await;

        let (st, v) = poll_until_final(&s, &code).await;
        if approve {
            assert_eq!(st, StatusCode::OK, "{v}");
            assert!(v["access_token"].as_str().unwrap().ends_with("=="));
        } else {
            assert_eq!((st, v["error"].as_str()), (StatusCode::BAD_REQUEST, Some("access_denied")));
        }
    }
}
