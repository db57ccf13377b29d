//! Operator commands: `config check`, `completions`, `man`, and the
//! metrics listener of a real server.

use crate::process::{Server, run};

const KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

#[test]
fn config_check_prints_effective_settings_with_secrets_masked() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("strongroom.toml");
    std::fs::write(
        &file,
        "database_url = \"postgres://sr:hunter2/secret@db.internal/sr?password=param-secret\"\n\
         trusted_proxies = [\"10.0.0.0/8\"]\n\
         [tokens]\naccess_validity = 600\n[metrics]\nlisten = \"127.0.0.1:9090\"\n\
         [keys]\ndefault = \"PKCS11:hsm\"\n\
         [[keys.pkcs11]]\nname = \"hsm\"\nlibrary = \"/usr/lib/softhsm/libsofthsm2.so\"\ntoken_label = \"strongroom\"\n\
         key_label = \"strongroom-vault\"\npin_env = \"STRONGROOM_HSM_PIN\"\n\
         [[keys.pkcs11]]\nname = \"spare\"\nlibrary = \"/opt/hsm/libpkcs11.so\"\ntoken_label = \"spare-token\"\n\
         pin_file = \"/etc/strongroom/spare.pin\"\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    const PIN: &str = "pin-987654-secret";
    let env = [
        ("STRONGROOM_MASTER_KEY", KEY),
        ("STRONGROOM_POLL_INTERVAL", "7"),
        ("STRONGROOM_HSM_PIN", PIN),
        ("STRONGROOM_LOG", "warn,strongroom_server=debug"),
        ("STRONGROOM_LOG_FORMAT", "json"),
    ];
    // Neither PKCS#11 module exists here: start-up would stop on them, so
    // config check lists every setting, then both problems, and fails.
    let r = run(&["config", "check", "--config", f, "--listen", "127.0.0.1:9443"], &env);
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    for key in ["PKCS11:hsm", "PKCS11:spare"] {
        assert!(r.stderr.contains(&format!("vault key {key} cannot be used")), "{key}: {}", r.stderr);
    }
    assert!(r.stderr.contains("2 problems"), "{}", r.stderr);
    for secret in ["hunter2", "secret@", "param-secret", KEY, PIN] {
        assert!(!r.stdout.contains(secret) && !r.stderr.contains(secret), "a secret was printed: {}", r.stdout);
    }
    for shown in [
        // What the driver reads (a `/` in the password does not end it), no password.
        "postgres hosts=db.internal:5432 dbname=sr user=sr password=(set) sslmode=prefer",
        "127.0.0.1:9443",
        "10.0.0.0/8",
        "600 s",
        "7 s",
        "http://127.0.0.1:9090/metrics",
        "from STRONGROOM_MASTER_KEY",
        "PKCS11:hsm",
        "library /usr/lib/softhsm/libsofthsm2.so, token \"strongroom\", key \"strongroom-vault\", PIN from $STRONGROOM_HSM_PIN",
        "library /opt/hsm/libpkcs11.so, token \"spare-token\", key \"spare\", PIN from file /etc/strongroom/spare.pin",
        "warn,strongroom_server=debug (from STRONGROOM_LOG)",
    ] {
        assert!(r.stdout.contains(shown), "{shown:?} missing from:\n{}", r.stdout);
    }
    let line = |key: &str| r.stdout.lines().find(|l| l.split_whitespace().next() == Some(key)).map(str::to_owned);
    assert_eq!(line("keys.default").as_deref().map(str::split_whitespace).and_then(|mut w| w.nth(1)), Some("PKCS11:hsm"));
    assert_eq!(line("log.format").as_deref().map(str::split_whitespace).and_then(|mut w| w.nth(1)), Some("json"));
    let r = run(&["config", "check", "--config", f, "--json"], &env);
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    for secret in ["hunter2", "secret@", "param-secret", KEY, PIN] {
        assert!(!r.stdout.contains(secret) && !r.stderr.contains(secret), "a secret was printed: {}", r.stdout);
    }
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["tokens"]["access_validity"], 600);
    assert!(v["database_url"].as_str().unwrap().starts_with("postgres hosts=db.internal:5432 dbname=sr user=sr password=(set)"), "{v}");
    assert_eq!(v["keys"]["default"], "PKCS11:hsm");
    assert_eq!(
        v["keys"]["pkcs11"],
        serde_json::json!([
            {"name": "PKCS11:hsm", "library": "/usr/lib/softhsm/libsofthsm2.so", "token_label": "strongroom",
             "key_label": "strongroom-vault", "pin_env": "STRONGROOM_HSM_PIN"},
            {"name": "PKCS11:spare", "library": "/opt/hsm/libpkcs11.so", "token_label": "spare-token",
             "key_label": "spare", "pin_file": "/etc/strongroom/spare.pin"},
        ])
    );
    assert_eq!(v["log"], serde_json::json!({"filter": "warn,strongroom_server=debug", "filter_from": "STRONGROOM_LOG", "format": "json"}));
    assert_eq!((v["ok"].as_bool(), v["problems"].as_array().map(Vec::len)), (Some(false), Some(2)), "{v}");
    // Without [keys] and log variables: the software key and serve's defaults.
    std::fs::write(&file, "").unwrap();
    let plain = [("STRONGROOM_MASTER_KEY", KEY), ("STRONGROOM_LOG", ""), ("RUST_LOG", ""), ("STRONGROOM_LOG_FORMAT", "")];
    let v: serde_json::Value = serde_json::from_str(run(&["config", "check", "--config", f, "--json"], &plain).stdout.trim()).unwrap();
    assert_eq!(v["keys"], serde_json::json!({"default": "Software:Default", "pkcs11": []}));
    assert_eq!(v["ok"], true, "{v}");
    let r = run(&["config", "check", "--config", f], &plain);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.trim_end().ends_with("configuration OK"), "{}", r.stdout);
    assert_eq!(v["log"], serde_json::json!({"filter": "info", "filter_from": "default", "format": "text"}));
    // A log filter serve would refuse is refused here too, naming its variable.
    let r = run(&["config", "check", "--config", f], &[("STRONGROOM_MASTER_KEY", KEY), ("STRONGROOM_LOG", "[[[")]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("STRONGROOM_LOG"), "{}", r.stderr);

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
fn config_check_prints_every_section_it_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("strongroom.toml");
    std::fs::write(
        &file,
        "listen = \"127.0.0.1:9443\"\n\
         [events]\nretention_days = 30\narchive_dir = \"/srv/archive\"\n\
         [jwt]\nkey_cache_secs = 120\n\
         [certificate]\nlisten = \"127.0.0.1:9444\"\nreload_secs = 3\nproxy_header = \"X-Client-Cert\"\n\
         [key_generation]\nconcurrency = 3\nper_identity = 2\n\
         [ldap]\nurl = \"ldaps://ldap.example.com\"\nbind_dn = \"cn=svc,dc=example,dc=com\"\n\
         bind_password_file = \"/etc/strongroom/ldap.pw\"\nuser_base = \"ou=people,dc=example,dc=com\"\nname = \"corp\"\n\
         [oidc]\nissuer = \"https://sso.example.com\"\nclient_id = \"strongroom\"\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let env = [("STRONGROOM_MASTER_KEY", KEY), ("STRONGROOM_LOG", ""), ("RUST_LOG", ""), ("STRONGROOM_LOG_FORMAT", "")];
    let r = run(&["config", "check", "--config", f], &env);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let line = |key: &str| {
        r.stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("no {key} line:\n{}", r.stdout))
            .to_owned()
    };
    assert!(
        line("file").ends_with(&format!("{f}: read top level, [events], [jwt], [certificate], [key_generation], [ldap], [oidc]")),
        "{}",
        r.stdout
    );
    for (key, shown) in [
        ("events", "archived after 30 days to /srv/archive"),
        ("jwt", "issuers' keys kept 120 s"),
        ("certificate", "grant listener 127.0.0.1:9444, mappings' CAs read every 3 s, 0 CRL file(s), proxy header X-Client-Cert"),
        ("key_generation", "server-made RSA keys: 3 at once, 2 in progress per caller, 32 waiting (past them 429)"),
        (
            "ldap",
            "LDAP+corp at ldaps://ldap.example.com, bind \"cn=svc,dc=example,dc=com\" with password from file /etc/strongroom/ldap.pw (not shown)",
        ),
        ("oidc", "OIDC+sso at https://sso.example.com, client \"strongroom\" with secret from $STRONGROOM_OIDC_CLIENT_SECRET (not shown)"),
    ] {
        assert!(line(key).contains(shown), "{key}: {shown:?} missing from:\n{}", r.stdout);
    }
    let v: serde_json::Value = serde_json::from_str(run(&["config", "check", "--config", f, "--json"], &env).stdout.trim()).unwrap();
    assert_eq!(
        v["sections_read"],
        serde_json::json!(["top level", "[events]", "[jwt]", "[certificate]", "[key_generation]", "[ldap]", "[oidc]"])
    );
    assert!(v["ldap"].as_str().unwrap().starts_with("LDAP+corp"), "{v}");
    // Nothing set: every section is still printed, saying it is off.
    std::fs::write(&file, "# nothing\n").unwrap();
    let r = run(&["config", "check", "--config", f], &env);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    for shown in ["read nothing set (all defaults)", "kept forever", "off (no listen", "off (no url", "off (no issuer"] {
        assert!(r.stdout.contains(shown), "{shown:?} missing from:\n{}", r.stdout);
    }
}

/// `config example`: the commented file made from the settings table, which
/// `config check` reads as the defaults; `--set` values are in force.
#[test]
fn config_example_is_every_setting_and_checks_clean() {
    let r = run(&["config", "example"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let settings = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../book/src/reference/settings.md")).unwrap();
    // Every key of the book's generated settings table is in the file, commented out.
    let mut n = 0;
    for row in settings.lines().filter(|l| l.starts_with("| `")) {
        let key = row.split('`').nth(1).unwrap();
        let name = key.rsplit(' ').next().unwrap();
        assert!(r.stdout.contains(&format!("\n#{name} =")), "{key} missing");
        n += 1;
    }
    assert!(n > 60, "{n} settings");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("strongroom.toml");
    std::fs::write(&file, &r.stdout).unwrap();
    let env = [("STRONGROOM_MASTER_KEY", KEY)];
    let check = run(&["config", "check", "--config", file.to_str().unwrap()], &env);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
    assert!(check.stdout.contains("read nothing set (all defaults)") && check.stdout.contains("127.0.0.1:8443"), "{}", check.stdout);
    let r = run(&["config", "example", "--set", "data_dir=/var/lib/strongroom", "--set", "tokens.poll_interval=9"], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    std::fs::write(&file, &r.stdout).unwrap();
    let check = run(&["config", "check", "--config", file.to_str().unwrap()], &env);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
    assert!(check.stdout.contains("read top level, [tokens]") && check.stdout.contains("/var/lib/strongroom"), "{}", check.stdout);
    assert!(check.stdout.lines().any(|l| l.starts_with("tokens.poll_interval") && l.ends_with(" 9 s")), "{}", check.stdout);
    let bad = run(&["config", "example", "--set", "colour=blue"], &[]);
    assert!(bad.code != 0 && bad.stderr.contains("no setting colour"), "{bad:?}");
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
    // Port 0: the system picks the metrics port; the server logs it.
    let server = Server::start(&["--insecure-http"], &[("STRONGROOM_METRICS_LISTEN", "127.0.0.1:0")]);
    let listen = server.logged_addr("metrics served").expect("the metrics listener's address is logged");
    let http = reqwest::Client::new();
    let main = format!("http://127.0.0.1:{}", server.port);
    assert_eq!(http.get(format!("{main}/health/ready")).send().await.unwrap().status(), 200);
    assert_eq!(http.get(format!("{main}/metrics")).send().await.unwrap().status(), 404, "not on the main listener");
    let text = http.get(format!("http://{listen}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(text.contains("strongroom_http_requests_total{route=\"/health/ready\",method=\"GET\",status=\"200\"} 1"), "{text}");
    server.stop();
}

/// The book's configuration table (book/src/reference/configuration.md) names every setting and its variable,
/// so that a setting added to `config::SETTINGS` is documented there too.
#[test]
fn the_readme_names_every_setting_and_variable() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../book/src/reference/configuration.md")).unwrap();
    let table = &readme[readme.find("| setting (TOML / env) |").unwrap()..];
    let table = &table[..table.find("\n\n").unwrap()];
    for s in strongroom_server::config::SETTINGS {
        let key = s.key.rsplit('.').next().unwrap();
        assert!(table.contains(&format!("`{key}`")) || table.contains(&format!(" {key}`")), "{} is not in the book's table", s.key);
        if let Some(var) = s.env {
            assert!(table.contains(var), "{var} is not in the book's table");
        }
    }
}
