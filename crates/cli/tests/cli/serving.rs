//! `strongroom serve` as an operator starts it: a port in use stops it
//! before anything is made, a second server on one SQLite store is refused,
//! the first start of an empty store says the next step,
//! `strongroom health` probes it, `/` is a page linking the console, balancer health checks stay
//! out of the INFO log, and `/metrics` has what dashboards expect.
#![allow(clippy::disallowed_methods)]

use std::time::Duration;

use crate::process::{ClosedPort, Server, run, run_bounded};

#[test]
fn a_port_in_use_stops_serve_before_it_makes_anything() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("new-data");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let r = run_bounded(
        &["serve", "--data-dir", data.to_str().unwrap(), "--listen", &format!("127.0.0.1:{port}")],
        &[],
        Duration::from_secs(20),
    );
    assert!(r.code > 0 && r.stderr.contains(&format!("listening on 127.0.0.1:{port}")), "{r:?}");
    assert!(!data.exists(), "a start that could not listen made {}", data.display());
    // The metrics listener's port too.
    let r = run_bounded(
        &["serve", "--data-dir", data.to_str().unwrap(), "--listen", "127.0.0.1:0"],
        &[("STRONGROOM_METRICS_LISTEN", &format!("127.0.0.1:{port}"))],
        Duration::from_secs(20),
    );
    assert!(r.code > 0 && r.stderr.contains(&format!("listening on 127.0.0.1:{port}")), "{r:?}");
    assert!(!data.exists());
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    drop(taken);
}

#[test]
fn a_second_serve_on_one_sqlite_store_is_refused() {
    let first = Server::start(&["--insecure-http"], &[]);
    let dir = first.dir.to_str().unwrap().to_owned();
    let r = run_bounded(&["serve", "--insecure-http", "--data-dir", &dir, "--listen", "127.0.0.1:0"], &[], Duration::from_secs(20));
    assert!(r.code > 0, "{r:?}");
    assert!(r.stderr.contains(&format!("is being served by process {}", first.pid())) && r.stderr.contains("stop that one first"), "{r:?}");
    // The first one serves on, and its admin commands still work.
    assert!(first.admin(&["events", "verify"], "").contains("event log intact"));
    first.stop();
    // Once it is gone, the store serves again.
    let again = Server::start_on(dir.into(), &["--insecure-http"], &[]);
    again.stop();
}

/// A SIGTERM that comes while the server is still starting (after it opened its store, before
/// it serves) is a clean stop, status 0: the handlers are installed before anything is opened,
/// so the default action, which ends the process at once, never takes it.
#[test]
fn a_sigterm_during_the_start_is_a_clean_stop() {
    use std::io::{BufRead as _, BufReader};
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(crate::process::BIN)
        .args(["serve", "--insecure-http", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines().map_while(Result::ok);
    let mut said = String::new();
    for line in lines.by_ref() {
        said.push_str(&line);
        said.push('\n');
        if line.contains("store opened") {
            break;
        }
    }
    assert!(said.contains("store opened"), "{said}");
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let rest: Vec<String> = lines.collect();
    let status = child.wait().unwrap();
    assert!(status.success(), "a SIGTERM during the start ended it with {status}:\n{said}{}", rest.join("\n"));
}

#[test]
fn the_first_start_of_an_empty_store_says_the_next_step() {
    const NEXT: &str = "no Master Admin yet. Next step: strongroom admin users create NAME --master-admin";
    let server = Server::start(&["--insecure-http"], &[]);
    server.wait_for(NEXT);
    let console = format!(":{}/admin", server.port);
    server.wait_for(&console);
    // A user who is no Master Admin does not end it: nobody could sign in to the console.
    server.admin(&["users", "create", "alice"], "a long passphrase\n");
    let (_, kept) = server.stop_keeping_data();
    let again = Server::start_on(kept.path().to_owned(), &["--insecure-http"], &[]);
    again.wait_for(NEXT);
    // The step as it is said, then a start that says nothing more.
    again.admin(&["users", "create", "root", "--master-admin"], "a long passphrase\n");
    again.stop();
    let third = Server::start_on(kept.path().to_owned(), &["--insecure-http"], &[]);
    let out = third.stop();
    assert!(out.contains("strongroom serving") && !out.contains("no Master Admin yet"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_probes_the_configured_listener() {
    // HTTPS with the self-signed certificate: the probe does not check it.
    let tls = Server::start(&[], &[]);
    let listen = format!("127.0.0.1:{}", tls.port);
    let dir = tls.dir.to_str().unwrap().to_owned();
    let r = run(&["health", "--data-dir", &dir, "--listen", &listen], &[]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout.trim(), format!("ready: https://{listen}/health/ready"));
    // Plain HTTP, and an unspecified address probed on the loopback.
    let plain = Server::start(&["--insecure-http"], &[]);
    let r = run(&["health", "--insecure-http", "--listen", &format!("0.0.0.0:{}", plain.port)], &[]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains(&format!("http://127.0.0.1:{}/health/ready", plain.port)), "{r:?}");
    // Nothing listening: not ready, saying why.
    let closed = ClosedPort::new();
    let r = run(&["health", "--insecure-http", "--listen", &closed.addr().to_string(), "--timeout", "3"], &[]);
    assert!(r.code == 1 && r.stderr.contains("not ready") && r.stderr.to_lowercase().contains("refused"), "{r:?}");
    drop((tls, plain));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_front_page_health_logs_and_process_metrics() {
    let server = Server::start(&["--insecure-http"], &[("STRONGROOM_LOG", "info")]);
    let base = format!("http://127.0.0.1:{}", server.port);
    let http = reqwest::Client::new();
    let page = http.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    assert!(page.headers().contains_key("content-security-policy"));
    let html = page.text().await.unwrap();
    for link in [
        "href=\"/vedauth/device\"",
        "href=\"/vedauth/device/grants\"",
        "href=\"/admin\"",
        "href=\"/health/ready\"",
        "href=\"/openapi.json\"",
        "href=\"/.well-known/oauth-authorization-server\"",
    ] {
        assert!(html.contains(link), "{link} missing from {html}");
    }
    assert!(html.contains("Applications I have approved") && html.contains("Admin console"), "{html}");
    // Every link of the page leads somewhere (a page, not a 404).
    for href in html.split("href=\"").skip(1).filter_map(|rest| rest.split('"').next()).filter(|h| h.starts_with('/')) {
        if href.ends_with(".css") {
            continue;
        }
        let status = http.get(format!("{base}{href}")).send().await.unwrap().status();
        assert_eq!(status, 200, "{href}");
    }
    for _ in 0..3 {
        assert_eq!(http.get(format!("{base}/health/ready")).send().await.unwrap().status(), 200);
        assert_eq!(http.get(format!("{base}/healthz")).send().await.unwrap().status(), 200);
    }
    let metrics = http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    let value = |name: &str| -> f64 {
        let line = metrics.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{name} missing:\n{metrics}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert!(value("process_cpu_seconds_total") >= 0.0);
    assert!(value("process_resident_memory_bytes") > 1e6);
    assert!(value("process_open_fds") >= 5.0);
    let start = value("process_start_time_seconds");
    let now = std::time::SystemTime::UNIX_EPOCH.elapsed().unwrap().as_secs_f64();
    assert!((now - 120.0..=now + 5.0).contains(&start), "started at {start}, now {now}");
    assert!(metrics.contains(&format!("strongroom_build_info{{version=\"{}\"}} 1", env!("CARGO_PKG_VERSION"))), "{metrics}");
    let out = server.stop();
    // At INFO: the page and the scrape are logged, the health checks are not.
    assert!(out.lines().any(|l| l.contains("path=/}") && l.contains("status=200")), "{out}");
    assert!(out.lines().any(|l| l.contains("path=/metrics}") && l.contains("status=200")), "{out}");
    let health: Vec<&str> = out.lines().filter(|l| l.contains("path=/health") || l.contains("path=/healthz")).collect();
    assert!(health.is_empty(), "health checks at INFO: {health:?}");
}
