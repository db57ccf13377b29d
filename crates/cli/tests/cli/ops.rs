//! Operator commands: `config check`, `completions`, `man`, and the
//! metrics listener of a real server.

use crate::process::{Server, free_port, run};

const KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

#[test]
fn config_check_prints_effective_settings_with_secrets_masked() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("strongroom.toml");
    std::fs::write(
        &file,
        "database_url = \"postgres://sr:hunter2-secret@db.internal/sr\"\ntrusted_proxies = [\"10.0.0.0/8\"]\n\
         [tokens]\naccess_validity = 600\n[metrics]\nlisten = \"127.0.0.1:9090\"\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let env = [("STRONGROOM_MASTER_KEY", KEY), ("STRONGROOM_POLL_INTERVAL", "7")];
    let r = run(&["config", "check", "--config", f, "--listen", "127.0.0.1:9443"], &env);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    for secret in ["hunter2", KEY] {
        assert!(!r.stdout.contains(secret) && !r.stderr.contains(secret), "a secret was printed: {}", r.stdout);
    }
    for shown in [
        "postgres://sr:****@db.internal/sr",
        "127.0.0.1:9443",
        "10.0.0.0/8",
        "600 s",
        "7 s",
        "http://127.0.0.1:9090/metrics",
        "from STRONGROOM_MASTER_KEY",
        "configuration OK",
    ] {
        assert!(r.stdout.contains(shown), "{shown:?} missing from:\n{}", r.stdout);
    }
    let r = run(&["config", "check", "--config", f, "--json"], &env);
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["tokens"]["access_validity"], 600);
    assert_eq!(v["database_url"], "postgres://sr:****@db.internal/sr");

    // Invalid: a clear message naming the setting, and a non-zero exit.
    for (text, named) in [
        ("listen = \"everywhere\"\n", "listen"),
        ("[tokens]\npoll_interval = 0\n", "poll_interval"),
        ("[metrics]\nlisten = \"x\"\n", "metrics.listen"),
        ("colour = \"blue\"\n", "unknown field `colour`"),
    ] {
        std::fs::write(&file, text).unwrap();
        let r = run(&["config", "check", "--config", f], &env[..1]);
        assert_ne!(r.code, 0, "{text} was accepted");
        assert!(r.stderr.contains(named), "{text}: {}", r.stderr);
    }
    std::fs::write(&file, "").unwrap();
    let r = run(&["config", "check", "--config", f], &[("STRONGROOM_MASTER_KEY", "not-hex")]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("master key") && !r.stderr.contains("not-hex"), "{}", r.stderr);
}

#[test]
fn completions_and_man_pages_come_from_the_cli_definition() {
    let r = run(&["completions", "bash"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("_strongroom") && r.stdout.contains("backup") && r.stdout.contains("completions"));
    for shell in ["zsh", "fish"] {
        let r = run(&["completions", shell], &[]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains("strongroom"));
    }
    let r = run(&["man"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with(".ie") && r.stdout.contains(".TH strongroom 1"), "{}", &r.stdout[..200.min(r.stdout.len())]);
    let dir = tempfile::tempdir().unwrap();
    let r = run(&["man", "--out-dir", dir.path().to_str().unwrap()], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for page in ["strongroom.1", "strongroom-admin-backup.1", "strongroom-config-check.1"] {
        assert!(dir.path().join(page).exists(), "{page}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_can_have_a_listener_of_their_own() {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let server = Server::start(&["--insecure-http"], &[("STRONGROOM_METRICS_LISTEN", &listen)]);
    let http = reqwest::Client::new();
    let main = format!("http://127.0.0.1:{}", server.port);
    assert_eq!(http.get(format!("{main}/health/ready")).send().await.unwrap().status(), 200);
    assert_eq!(http.get(format!("{main}/metrics")).send().await.unwrap().status(), 404, "not on the main listener");
    let text = http.get(format!("http://{listen}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(text.contains("strongroom_http_requests_total{route=\"/health/ready\",method=\"GET\",status=\"200\"} 1"), "{text}");
    server.stop();
}
