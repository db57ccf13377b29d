//! The approval page in a real browser: headless Chromium driven through
//! ChromeDriver's WebDriver protocol, with a few JSON calls over reqwest
//! (no WebDriver crate: the protocol subset we need is six endpoints).

use reqwest::StatusCode;
use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support::{PASSWORD, TestServer, skip};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

struct Driver {
    child: Child,
    base: String,
    http: reqwest::Client,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Session<'a> {
    d: &'a Driver,
    id: String,
}

impl Driver {
    async fn start() -> Option<Driver> {
        if !std::path::Path::new(CHROMEDRIVER).exists() || !std::path::Path::new(CHROMIUM).exists() {
            skip("browser test: chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let d = Driver { child, base: format!("http://127.0.0.1:{port}"), http: reqwest::Client::new() };
        for _ in 0..100 {
            if d.http.get(format!("{}/status", d.base)).send().await.is_ok() {
                return Some(d);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("chromedriver did not come up");
    }

    async fn session(&self) -> Session<'_> {
        let profile = tempfile::tempdir().unwrap();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                         "--no-first-run", "--disable-background-networking", "--disable-component-update",
                         "--disable-sync", format!("--user-data-dir={}", profile.path().display())]
            }
        }}});
        let v = self.call(reqwest::Method::POST, "/session", caps).await;
        // The profile directory must outlive the browser; leak it for the test's life.
        std::mem::forget(profile);
        Session { d: self, id: v["sessionId"].as_str().expect("a session id").to_owned() }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if !body.is_null() {
            req = req.json(&body);
        }
        let r = req.send().await.unwrap();
        let status = r.status();
        let v: Value = r.json().await.unwrap();
        assert_eq!(status, StatusCode::OK, "webdriver {path}: {v}");
        v["value"].clone()
    }
}

impl Session<'_> {
    async fn go(&self, url: &str) {
        self.d.call(reqwest::Method::POST, &format!("/session/{}/url", self.id), json!({"url": url})).await;
    }

    /// Finds an element by CSS selector, waiting for the page to show it.
    async fn find(&self, css: &str) -> String {
        for _ in 0..100 {
            let r = self
                .d
                .http
                .post(format!("{}/session/{}/element", self.d.base, self.id))
                .json(&json!({"using": "css selector", "value": css}))
                .send()
                .await
                .unwrap();
            if r.status() == StatusCode::OK {
                let v: Value = r.json().await.unwrap();
                return v["value"][ELEMENT].as_str().unwrap().to_owned();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no element {css} appeared");
    }

    async fn type_into(&self, css: &str, text: &str) {
        let e = self.find(css).await;
        self.d.call(reqwest::Method::POST, &format!("/session/{}/element/{e}/value", self.id), json!({"text": text})).await;
    }

    async fn click(&self, css: &str) {
        let e = self.find(css).await;
        self.d.call(reqwest::Method::POST, &format!("/session/{}/element/{e}/click", self.id), json!({})).await;
    }

    /// The page title (no element handles, so no stale references while the
    /// browser navigates).
    async fn heading(&self) -> String {
        let title = self.d.call(reqwest::Method::GET, &format!("/session/{}/title", self.id), Value::Null).await;
        title.as_str().unwrap_or("").trim_end_matches(" · Strongroom").to_owned()
    }

    async fn wait_heading(&self, want: &str) {
        for _ in 0..100 {
            if self.heading().await == want {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the page never showed {want:?}; it shows {:?}", self.heading().await);
    }

    async fn close(self) {
        let _ = self.d.http.delete(format!("{}/session/{}", self.d.base, self.id)).send().await;
    }
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
    let Some(driver) = Driver::start().await else { return };
    let s = TestServer::start().await;
    s.user("alice").await;
    s.integration("app", "restricted:manage", |_| {}).await;

    for approve in [true, false] {
        let d = s.start_device("app", "restricted:manage").await;
        let code = d["device_code"].as_str().unwrap().to_owned();
        let page = driver.session().await;
        page.go(d["verification_uri_complete"].as_str().unwrap()).await;
        page.wait_heading("Sign in to approve a device").await;
        page.type_into("#username", "alice").await;
        page.type_into("#password", PASSWORD).await;
        page.click("#sign_in").await;
        page.wait_heading("Approve access?").await;
        page.click(if approve { "#approve" } else { "#deny" }).await;
        page.wait_heading(if approve { "Access approved" } else { "Access denied" }).await;
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
