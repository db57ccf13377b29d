//! Named keys in a PKCS#11 token: SoftHSM2 with a token initialised here, in
//! a temporary directory, and the real `strongroom` binary. Skips loudly when
//! SoftHSM2 is not installed (`scripts/test` installs `softhsm2` and
//! `opensc`), and fails then under `STRONGROOM_REQUIRE_ALL_TESTS=1`.
//! Waiting on real processes takes real time: sleeping is allowed here.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::process::{BIN, Server, free_port, run};

const PIN: &str = "hsm-pin-4711-never-logged";
const WRONG_PIN: &str = "wrong-pin-0815-never-logged";
const TOKEN: &str = "strongroom-test";
const PASSWORD: &str = "a long passphrase for root";
const FOLDER: &str = "\\VED\\Policy\\Keys";

fn softhsm_module() -> Option<PathBuf> {
    let candidates =
        ["/usr/lib/softhsm/libsofthsm2.so", "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so", "/usr/local/lib/softhsm/libsofthsm2.so"];
    let util = Command::new("softhsm2-util").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
    if !util.is_ok_and(|s| s.success()) {
        return None;
    }
    candidates.iter().map(PathBuf::from).find(|p| p.exists())
}

fn skip(what: &str) {
    if std::env::var("STRONGROOM_REQUIRE_ALL_TESTS").is_ok_and(|v| v == "1") {
        panic!("{what} (STRONGROOM_REQUIRE_ALL_TESTS=1 forbids skipping)");
    }
    eprintln!("\n!!! SKIPPED: {what} !!!\n");
}

/// A SoftHSM2 set-up of its own: configuration, token directory, PIN file.
struct Hsm {
    dir: tempfile::TempDir,
    module: PathBuf,
}

impl Hsm {
    fn conf(&self) -> String {
        self.dir.path().join("softhsm2.conf").display().to_string()
    }

    fn tokens(&self) -> PathBuf {
        self.dir.path().join("tokens")
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![("SOFTHSM2_CONF", self.conf())]
    }

    fn init(module: PathBuf) -> Hsm {
        let dir = tempfile::tempdir().unwrap();
        let h = Hsm { dir, module };
        std::fs::create_dir(h.tokens()).unwrap();
        std::fs::write(
            h.conf(),
            format!("directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\n", h.tokens().display()),
        )
        .unwrap();
        let out = Command::new("softhsm2-util")
            .args(["--init-token", "--free", "--label", TOKEN, "--pin", PIN, "--so-pin", "so-pin-1234"])
            .env("SOFTHSM2_CONF", h.conf())
            .output()
            .unwrap();
        assert!(out.status.success(), "softhsm2-util: {}", String::from_utf8_lossy(&out.stderr));
        std::fs::write(h.dir.path().join("pin"), format!("{PIN}\n")).unwrap();
        h
    }

    /// A configuration file naming key `PKCS11:hsm` on token `token`, PIN from `pin` (a file or a variable).
    fn config(&self, file: &str, token: &str, pin: &str) -> String {
        let path = self.dir.path().join(file);
        std::fs::write(
            &path,
            format!(
                "[keys]\n[[keys.pkcs11]]\nname = \"hsm\"\nlibrary = \"{}\"\ntoken_label = \"{token}\"\nkey_label = \"strongroom-vault\"\n{pin}\n",
                self.module.display()
            ),
        )
        .unwrap();
        path.display().to_string()
    }

    fn pin_file(&self) -> String {
        format!("pin_file = \"{}\"", self.dir.path().join("pin").display())
    }
}

/// `strongroom admin --config CONFIG --data-dir DIR ARGS`, with SoftHSM's environment.
fn admin(hsm: &Hsm, config: &str, dir: &Path, args: &[&str]) -> crate::process::Run {
    let dir = dir.display().to_string();
    let mut full = vec!["admin", "--config", config, "--data-dir", &dir];
    full.extend_from_slice(args);
    let env = hsm.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    run(&full, &env)
}

/// Starts `serve` expecting it to refuse; returns everything it printed.
fn serve_refuses(config: &str, env: &[(&str, String)]) -> String {
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["serve", "--insecure-http", "--config", config, "--listen", &format!("127.0.0.1:{}", free_port())])
        .arg("--data-dir")
        .arg(data.path())
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve did not stop on an unusable key");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "serve must fail");
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn result(v: &Value) -> i64 {
    v["Result"].as_i64().unwrap_or_else(|| panic!("no Result in {v}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_under_a_softhsm_key() {
    let Some(module) = softhsm_module() else {
        skip("SoftHSM2 (softhsm2-util and libsofthsm2.so) is not installed: the PKCS#11 test cannot run");
        return;
    };
    let hsm = Hsm::init(module);
    let config = hsm.config("config.toml", TOKEN, &hsm.pin_file());

    // The key is made in the token by the server's own admin command, once.
    let scratch = hsm.dir.path().join("scratch");
    let r = admin(&hsm, &config, &scratch, &["keys", "create", "PKCS11:hsm"]);
    assert_eq!((r.code, r.stdout.trim()), (0, "created PKCS11:hsm"), "{}", r.stderr);
    let r = admin(&hsm, &config, &scratch, &["keys", "create", "PKCS11:hsm"]);
    assert!(r.code != 0 && r.stderr.contains("already exists"), "{r:?}");
    // OpenSC's view of it: AES-256, encrypt/decrypt only, sensitive, never extractable.
    let module = hsm.module.display().to_string();
    let listed = Command::new("pkcs11-tool")
        .args(["--module", &module, "--token-label", TOKEN, "--login", "--pin", PIN, "--list-objects", "--type", "secrkey"])
        .env("SOFTHSM2_CONF", hsm.conf())
        .output();
    match listed {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("AES length 32") && text.contains("label:      strongroom-vault"), "{text}");
            assert!(text.contains("Usage:      encrypt, decrypt\n"), "{text}");
            assert!(text.contains("Access:     sensitive, always sensitive, never extractable"), "{text}");
        }
        Err(e) => skip(&format!("pkcs11-tool (opensc) cannot run ({e}): the key's attributes are not checked")),
    }

    let env = hsm.env();
    let server = Server::start(
        &["--insecure-http", "--config", &config],
        &[("SOFTHSM2_CONF", env[0].1.as_str()), ("STRONGROOM_LOG", "trace"), ("RUST_LOG", "trace")],
    );
    assert!(server.output.lock().unwrap().contains("vault key ready"));
    server.admin(&["users", "create", "root", "--master-admin"], &format!("{PASSWORD}\n"));
    server.admin(&["folders", "create", FOLDER], "");
    let scope = "restricted:manage;admin:rotate";
    server.admin(&["integrations", "create", "app", "--scope", scope, "--allow-all-users", "--password-grant", "true"], "");
    let base = format!("http://127.0.0.1:{}", server.port);
    let http = reqwest::Client::new();
    let t: Value = http
        .post(format!("{base}/vedauth/authorize/oauth"))
        .json(&json!({"client_id": "app", "username": "root", "password": PASSWORD, "scope": scope}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = t["access_token"].as_str().unwrap_or_else(|| panic!("{t}")).to_owned();
    let sdk = |op: &str, body: Value| {
        let r = http.post(format!("{base}/vedsdk/SecretStore/{op}")).bearer_auth(&token).json(&body).send();
        async move { r.await.unwrap().json::<Value>().await.unwrap() }
    };
    let get = |path: String| {
        let r = http.get(format!("{base}{path}")).bearer_auth(&token).send();
        async move { r.await.unwrap().json::<Value>().await.unwrap() }
    };
    let add = |key: &str, data: &str| {
        sdk("Add", json!({"VaultType": 32, "Keyname": key, "Namespace": "config", "Owner": FOLDER, "Base64Data": STANDARD.encode(data)}))
    };
    let retrieve = |id: i64| sdk("Retrieve", json!({"VaultID": id}));

    // One entry under the software key, one under the HSM key, each with an association.
    let sw = add("Software:Default", "software secret").await["VaultID"].as_i64().unwrap();
    let v = add("PKCS11:hsm", "hsm secret").await;
    assert_eq!(result(&v), 0, "{v}");
    let hw = v["VaultID"].as_i64().unwrap();
    for (id, value) in [(sw, "sw value"), (hw, "hsm value")] {
        assert_eq!(result(&sdk("Associate", json!({"VaultID": id, "Name": "n", "StringValue": value})).await), 0);
    }
    assert_eq!(retrieve(sw).await["Base64Data"], STANDARD.encode("software secret"));
    assert_eq!(retrieve(hw).await["Base64Data"], STANDARD.encode("hsm secret"));
    assert_eq!(get("/vedsdk/SecretStore/EncryptionKeysInUse".into()).await["EncryptionKeys"], json!(["PKCS11:hsm", "Software:Default"]));
    assert_eq!(get("/vedsdk/Crypto/DefaultKey".into()).await["DefaultKey"], "Software:Default");
    assert_eq!(result(&add("PKCS11:nope", "x").await), 21, "an unknown key");

    // RotateKey software → HSM → software, the value readable at every step.
    let rotate = |id: i64, key: &str| get(format!("/vedsdk/SecretStore/RotateKey/{id}?newkeyname={key}"));
    assert_eq!(result(&rotate(sw, "PKCS11:hsm").await), 0);
    assert_eq!(get("/vedsdk/SecretStore/EncryptionKeysInUse".into()).await["EncryptionKeys"], json!(["PKCS11:hsm"]));
    assert_eq!(retrieve(sw).await["Base64Data"], STANDARD.encode("software secret"));
    assert_eq!(sdk("LookupAssociationbyVaultID", json!({"VaultID": sw, "Name": "n"})).await["Value"], "sw value");
    assert_eq!(result(&rotate(sw, "Software:Default").await), 0);
    assert_eq!(retrieve(sw).await["Base64Data"], STANDARD.encode("software secret"));
    assert_eq!(sdk("LookupAssociationbyVaultID", json!({"VaultID": sw, "Name": "n"})).await["Value"], "sw value");

    // The admin rotates the HSM key: a new data key, wrapped by the token.
    let r = admin(&hsm, &config, &server.dir, &["keys", "rotate", "PKCS11:hsm"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("PKCS11:hsm: data key") && r.stdout.contains("re-encrypted 2 values"), "{r:?}");
    assert!(r.stderr.contains("re-encrypted 2 values so far"), "progress: {r:?}");
    let r = admin(&hsm, &config, &server.dir, &["keys", "list"]);
    assert!(
        r.stdout.lines().any(|l| l.starts_with("PKCS11:hsm ") && l.contains(" in use ") && l.contains("token \"strongroom-test\"")),
        "{r:?}"
    );

    // Read once through the new data key, then the token goes away: nothing
    // a token wraps is kept in memory, so the HSM entry is Result 11 at once;
    // everything else works.
    assert_eq!(retrieve(hw).await["Base64Data"], STANDARD.encode("hsm secret"));
    let away = hsm.dir.path().join("tokens-away");
    std::fs::rename(hsm.tokens(), &away).unwrap();
    assert_eq!(result(&retrieve(hw).await), 11);
    assert_eq!(result(&sdk("LookupAssociationbyVaultID", json!({"VaultID": hw, "Name": "n"})).await), 11);
    assert_eq!(result(&add("PKCS11:hsm", "x").await), 21, "a key that cannot be used now");
    assert_eq!(retrieve(sw).await["Base64Data"], STANDARD.encode("software secret"));
    assert_eq!(sdk("LookupAssociationbyVaultID", json!({"VaultID": sw, "Name": "n"})).await["Value"], "sw value");
    assert_eq!(result(&add("Software:Default", "still works").await), 0);
    assert_eq!(http.get(format!("{base}/healthz")).send().await.unwrap().status(), 200);
    // It comes back: so do the entries.
    std::fs::rename(&away, hsm.tokens()).unwrap();
    let v = retrieve(hw).await;
    let o = server.output.lock().unwrap().clone();
    let errs: Vec<&str> = o.lines().filter(|l| l.contains("ERROR")).collect();
    assert_eq!(v["Base64Data"], STANDARD.encode("hsm secret"), "{errs:#?}");

    let output = server.stop();
    assert!(output.contains("TRACE"), "no trace lines captured");
    assert!(output.contains("PKCS11:hsm"), "the failing key is named in the log");
    for secret in [PIN, "hsm secret", "hsm value"] {
        for form in [secret.to_owned(), STANDARD.encode(secret), secret.bytes().map(|b| format!("{b:02x}")).collect()] {
            assert!(!output.contains(&form), "{form:?} appears in the log");
        }
    }

    // Start-up checks every configured key: a wrong PIN or a missing token stops it, naming the key.
    let wrong = hsm.config("wrong-pin.toml", TOKEN, "pin_env = \"TEST_HSM_PIN\"");
    let out = serve_refuses(
        &wrong,
        &[("SOFTHSM2_CONF", hsm.conf()), ("TEST_HSM_PIN", WRONG_PIN.to_owned()), ("STRONGROOM_LOG", "trace".to_owned())],
    );
    assert!(out.contains("PKCS11:hsm") && out.contains("PinIncorrect"), "{out}");
    assert!(!out.contains(WRONG_PIN) && !out.contains(PIN), "a PIN in the output: {out}");
    let missing = hsm.config("missing.toml", "no-such-token", &hsm.pin_file());
    let out = serve_refuses(&missing, &[("SOFTHSM2_CONF", hsm.conf())]);
    assert!(out.contains("PKCS11:hsm") && out.contains("no token labelled \"no-such-token\""), "{out}");
}
