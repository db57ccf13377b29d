//! `strongroom config check` checks what start-up checks: one test per
//! start-up check it repeats, each also showing that the setting really is
//! refused (by `serve` where start-up would fail on it).
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::hsm::{Hsm, TOKEN, softhsm_module};
use crate::process::{BIN, Run, run, run_bounded};
use strongroom_testkit::skip;

/// `config check --config FILE --data-dir DIR/data ARGS` with `env`, the file holding `toml`.
fn check(dir: &Path, toml: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let file = dir.join("strongroom.toml");
    std::fs::write(&file, toml).unwrap();
    let data = dir.join("data");
    let mut all = vec!["config", "check", "--config", file.to_str().unwrap(), "--data-dir", data.to_str().unwrap()];
    all.extend_from_slice(args);
    run(&all, env)
}

fn refused(r: &Run, needles: &[&str]) {
    assert_ne!(r.code, 0, "accepted:\n{}{}", r.stdout, r.stderr);
    for n in needles {
        assert!(r.stderr.contains(n), "{n:?} missing from:\n{}", r.stderr);
    }
    assert!(!r.stdout.contains("configuration OK"), "{}", r.stdout);
}

#[test]
fn an_unknown_database_scheme_is_refused_by_check_and_serve_and_makes_no_file() {
    let dir = tempfile::tempdir().unwrap();
    for (url, hint) in [("postgress://postgres@127.0.0.1/strongroom", "did you mean postgres://?"), ("mysql://x@127.0.0.1/db", "")] {
        let r = check(dir.path(), &format!("database_url = \"{url}\"\n"), &[], &[]);
        refused(&r, &["database_url", "unknown scheme", hint]);
        // serve refuses it too, in a directory of its own: nothing appears there.
        let cwd = tempfile::tempdir().unwrap();
        let out = Command::new(BIN)
            .args(["serve", "--insecure-http", "--listen", "127.0.0.1:0", "--data-dir", "data", "--database-url", url])
            .current_dir(cwd.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("unknown scheme"), "{err}");
        let left: Vec<_> = std::fs::read_dir(cwd.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.is_empty(), "serve made {left:?}");
    }
}

#[test]
fn a_pkcs11_module_that_does_not_load_is_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    let toml = "[[keys.pkcs11]]\nname = \"hsm\"\nlibrary = \"/nonexistent/libpkcs11-missing.so\"\ntoken_label = \"t\"\n\
                pin_env = \"CHECK_TEST_PIN\"\n";
    let r = check(dir.path(), toml, &[], &[("CHECK_TEST_PIN", "1234")]);
    refused(&r, &["vault key PKCS11:hsm cannot be used", "loading the PKCS#11 module"]);
    // The settings are still listed, the PIN is not.
    assert!(r.stdout.contains("keys.PKCS11:hsm") && !r.stdout.contains("1234") && !r.stderr.contains("1234"), "{}", r.stdout);
}

/// A SoftHSM2 module with the hint about `SOFTHSM2_CONF`: a token that is
/// not in the directory SoftHSM2 reads.
#[test]
fn an_absent_token_is_a_problem_with_the_softhsm2_hint() {
    let Some(module) = softhsm_module() else {
        skip("SoftHSM2 (softhsm2-util and libsofthsm2.so) is not installed: the token check cannot run");
        return;
    };
    let hsm = Hsm::init(module.clone());
    let toml =
        format!("[[keys.pkcs11]]\nname = \"hsm\"\nlibrary = \"{}\"\ntoken_label = \"not-there\"\n{}\n", module.display(), hsm.pin_file());
    let conf = hsm.conf();
    let r = check(hsm.dir.path(), &toml, &[], &[("SOFTHSM2_CONF", conf.as_str())]);
    refused(&r, &["no token labelled \"not-there\" is present", &format!("SOFTHSM2_CONF is {conf}"), "directories.tokendir"]);
}

#[test]
fn a_missing_key_label_is_a_problem() {
    let Some(module) = softhsm_module() else {
        skip("SoftHSM2 (softhsm2-util and libsofthsm2.so) is not installed: the key check cannot run");
        return;
    };
    let hsm = Hsm::init(module);
    // The token is there and takes the PIN; the key was never made (`admin keys create`).
    let config = hsm.config("keys.toml", &[("hsm", TOKEN, hsm.pin_file())]);
    let conf = hsm.conf();
    let data = hsm.dir.path().join("data");
    let r = run(&["config", "check", "--config", &config, "--data-dir", data.to_str().unwrap()], &[("SOFTHSM2_CONF", conf.as_str())]);
    refused(&r, &["vault key PKCS11:hsm", "no key labelled \"strongroom-vault\""]);
    // Made, the same configuration passes.
    let made = run(&["admin", "--config", &config, "keys", "create", "PKCS11:hsm"], &[("SOFTHSM2_CONF", conf.as_str())]);
    assert_eq!(made.code, 0, "{made:?}");
    let r = run(&["config", "check", "--config", &config, "--data-dir", data.to_str().unwrap()], &[("SOFTHSM2_CONF", conf.as_str())]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("configuration OK"), "{}", r.stdout);
    assert!(!data.exists(), "config check creates nothing");
}

#[test]
fn metrics_on_the_main_listener_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (listen, metrics) in [("127.0.0.1:8443", "127.0.0.1:8443"), ("0.0.0.0:9000", "127.0.0.1:9000")] {
        let r = check(dir.path(), &format!("listen = \"{listen}\"\n[metrics]\nlisten = \"{metrics}\"\n"), &[], &[]);
        refused(&r, &["metrics.listen", "the main listener's address"]);
    }
    let r = check(dir.path(), "listen = \"127.0.0.1:8443\"\n[metrics]\nlisten = \"127.0.0.1:9090\"\n", &[], &[]);
    assert_eq!(r.code, 0, "{r:?}");
}

#[test]
fn an_unknown_log_format_is_refused_by_check_and_serve() {
    let dir = tempfile::tempdir().unwrap();
    let r = check(dir.path(), "", &[], &[("STRONGROOM_LOG_FORMAT", "jsn")]);
    refused(&r, &["STRONGROOM_LOG_FORMAT", "\"jsn\"", "accepted: text or json"]);
    let data = dir.path().join("serve-data");
    let r = run_bounded(
        &["serve", "--insecure-http", "--listen", "127.0.0.1:0", "--data-dir", data.to_str().unwrap()],
        &[("STRONGROOM_LOG_FORMAT", "jsn")],
        Duration::from_secs(20),
    );
    assert!(r.code > 0 && r.stderr.contains("STRONGROOM_LOG_FORMAT"), "{r:?}");
    assert!(!data.exists());
    for ok in ["json", "text", ""] {
        assert_eq!(check(dir.path(), "", &[], &[("STRONGROOM_LOG_FORMAT", ok)]).code, 0, "{ok}");
    }
}

#[test]
fn a_grant_shorter_than_its_access_tokens_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let r = check(dir.path(), "[tokens]\naccess_validity = 7200\ngrant_validity = 3600\n", &[], &[]);
    refused(&r, &["tokens.grant_validity", "shorter than tokens.access_validity"]);
    let r = check(dir.path(), "", &[], &[("STRONGROOM_GRANT_VALIDITY", "60")]);
    refused(&r, &["tokens.grant_validity", "3600 s"]);
}

#[test]
fn unreadable_variables_say_what_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    for (var, value, accepted) in [
        ("STRONGROOM_REFRESHABLE", "yes", "accepted: true or false"),
        ("STRONGROOM_INSECURE_HTTP", "on", "accepted: true or false"),
        ("STRONGROOM_ACCESS_VALIDITY", "1h", "accepted: whole seconds"),
        ("STRONGROOM_POLL_INTERVAL", "5s", "accepted: whole seconds"),
    ] {
        let r = check(dir.path(), "", &[], &[(var, value)]);
        refused(&r, &[var, &format!("{value:?}"), accepted]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn online_reaches_the_database_and_says_what_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // SQLite: nothing yet, then a store.
    let r = check(dir.path(), "", &["--online"], &[]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("no store there yet"), "{}", r.stdout);
    assert!(!data.exists(), "config check --online creates nothing");
    assert_eq!(run(&["admin", "--data-dir", data.to_str().unwrap(), "init"], &[]).code, 0);
    let r = check(dir.path(), "", &["--online", "--json"], &[]);
    assert_eq!(r.code, 0, "{r:?}");
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert!(v["online"].as_str().unwrap().contains(&format!("store at schema {}", strongroom_store::schema_version())), "{v}");
    assert_eq!(v["ok"], true);
    // Nothing listens: a problem, named.
    let r = check(dir.path(), "database_url = \"postgres://postgres@127.0.0.1:1/x?connect_timeout=3\"\n", &["--online"], &[]);
    refused(&r, &["database:"]);
    assert!(r.stdout.contains("not reachable"), "{}", r.stdout);
    // Without --online the same file passes: only the string is read.
    let r = check(dir.path(), "database_url = \"postgres://postgres@127.0.0.1:1/x?connect_timeout=3\"\n", &[], &[]);
    assert_eq!(r.code, 0, "{r:?}");
    // A PostgreSQL server with an empty schema, then a migrated one.
    let Some(root) = crate::replicas::pg_url("config check --online") else { return };
    let url = strongroom_store::postgres::testing::fresh_schema_url(&root).await.unwrap();
    let r = check(dir.path(), "", &["--online"], &[("STRONGROOM_DATABASE_URL", url.as_str())]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("no store there yet"), "{}", r.stdout);
    drop(strongroom_store::open(&url).await.unwrap());
    let r = check(dir.path(), "", &["--online"], &[("STRONGROOM_DATABASE_URL", url.as_str())]);
    assert!(r.stdout.contains("this binary's"), "{}", r.stdout);
}
