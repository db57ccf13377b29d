//! A real browser for the approval page: Debian's ChromeDriver (on a port it
//! picks itself and prints) driving headless Chromium, through the
//! `fantoccini` WebDriver client over plain HTTP. Waiting on a real process
//! takes real time: sleeping is allowed here.
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;

use crate::env::skip;

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// How long an element may take to appear, or the page to show a title.
const PATIENCE: Duration = Duration::from_secs(10);

/// A running ChromeDriver; killed when dropped.
#[derive(Debug)]
pub struct ChromeDriver {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

impl Drop for ChromeDriver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One browser session (a fresh profile in a temporary directory).
#[derive(Debug)]
pub struct Session {
    pub client: Client,
    profile: tempfile::TempDir,
}

impl ChromeDriver {
    /// Starts ChromeDriver with `--port=0` and reads the port it reports;
    /// `None` after the skip rule when Chromium or ChromeDriver is missing.
    pub fn start() -> Option<ChromeDriver> {
        if !std::path::Path::new(CHROMEDRIVER).exists() || !std::path::Path::new(CHROMIUM).exists() {
            skip("browser test: chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)");
            return None;
        }
        let mut child = Command::new(CHROMEDRIVER)
            .args(["--port=0", "--allowed-ips=127.0.0.1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // "ChromeDriver was started successfully on port 39769."; the rest is drained.
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(port) = line.split("started successfully on port ").nth(1) {
                    let _ = tx.send(port.trim_end_matches('.').trim().parse::<u16>().ok());
                }
            }
        });
        let port = rx.recv_timeout(Duration::from_secs(30)).ok().flatten();
        let mut driver = ChromeDriver { child, url: String::new() };
        let port = port.unwrap_or_else(|| panic!("chromedriver did not report its port"));
        driver.url = format!("http://127.0.0.1:{port}");
        Some(driver)
    }

    /// A headless Chromium session.
    pub async fn session(&self) -> Session {
        let profile = tempfile::tempdir().unwrap();
        let caps = serde_json::json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                         "--no-first-run", "--disable-background-networking", "--disable-component-update",
                         "--disable-sync", format!("--user-data-dir={}", profile.path().display())]
            }
        });
        let serde_json::Value::Object(caps) = caps else { unreachable!("an object") };
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(caps)
            .connect(&self.url)
            .await
            .unwrap_or_else(|e| panic!("a browser session: {e}"));
        Session { client, profile }
    }
}

impl Session {
    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.unwrap_or_else(|e| panic!("opening {url}: {e}"));
    }

    /// The element `css` selects, waiting (bounded) for the page to show it.
    pub async fn element(&self, css: &str) -> fantoccini::elements::Element {
        let found = self.client.wait().at_most(PATIENCE).for_element(Locator::Css(css)).await;
        found.unwrap_or_else(|e| panic!("no element {css} appeared: {e}"))
    }

    pub async fn type_into(&self, css: &str, text: &str) {
        self.element(css).await.send_keys(text).await.unwrap();
    }

    pub async fn click(&self, css: &str) {
        self.element(css).await.click().await.unwrap();
    }

    /// The visible text of the element `css` selects (waiting for it like [`Session::element`]).
    pub async fn text(&self, css: &str) -> String {
        self.element(css).await.text().await.unwrap_or_else(|e| panic!("the text of {css}: {e}"))
    }

    /// How many elements `css` selects now (no waiting).
    pub async fn count(&self, css: &str) -> usize {
        self.client.find_all(Locator::Css(css)).await.map_or(0, |v| v.len())
    }

    /// The text of the element `css` selects once it contains `needle`,
    /// waiting (bounded) across a page load: after a click that posts a form,
    /// the page being left may still show its own notice, or its element may
    /// go stale under us.
    pub async fn wait_text(&self, css: &str, needle: &str) -> String {
        let now = async || match self.client.find(Locator::Css(css)).await {
            Ok(e) => e.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        until(now, |t| t.contains(needle), || format!("{css} never said {needle:?}; it says")).await
    }

    /// Waits (bounded) until `title` of the page's title is `want`.
    pub async fn wait_title(&self, title: impl Fn(&str) -> String, want: &str) {
        let now = async || title(&self.title().await);
        until(now, |t| t == want, || format!("the page never showed {want:?}; it shows")).await;
    }

    /// Waits (bounded) until the page's URL contains `needle`: after a click
    /// that submits a form by GET, the page being left can still answer for
    /// its elements.
    pub async fn wait_url(&self, needle: &str) {
        let now = async || self.url().await;
        until(now, |u| u.contains(needle), || format!("the page never went to a URL with {needle:?}; it is at")).await;
    }

    /// The page's URL now.
    pub async fn url(&self) -> String {
        self.client.current_url().await.map(|u| u.to_string()).unwrap_or_default()
    }

    /// The page's title now.
    pub async fn title(&self) -> String {
        self.client.title().await.unwrap_or_default()
    }

    /// Ends the session and closes the browser; then its profile goes.
    pub async fn close(self) {
        let Session { client, profile } = self;
        let _ = client.close().await;
        drop(profile);
    }
}

/// What `now` answers once `done` holds of it, asking every 50 ms; past
/// [`PATIENCE`] the test fails with `failure` and the last answer.
async fn until(mut now: impl AsyncFnMut() -> String, done: impl Fn(&str) -> bool, failure: impl Fn() -> String) -> String {
    let start = Instant::now();
    loop {
        let answer = now().await;
        if done(&answer) {
            return answer;
        }
        assert!(start.elapsed() < PATIENCE, "{} {answer:?}", failure());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
