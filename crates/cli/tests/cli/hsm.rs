//! Named keys in a PKCS#11 token: SoftHSM2 with tokens initialised here, in
//! a temporary directory, and the real `strongroom` binary. Skips loudly when
//! SoftHSM2 is not installed (`scripts/test` installs `softhsm2` and
//! `opensc`), and fails then under `STRONGROOM_REQUIRE_ALL_TESTS=1`.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use strongroom_proto::vedsdk::{DefaultKeyResponse, EncryptionKeysResponse, ResultResponse};
use strongroom_testkit::api::{Fail, TokensExt as _, string};
use strongroom_testkit::skip;

use crate::process::{Server, run, run_bounded};

const PIN: &str = "hsm-pin-4711-never-logged";
const NEW_PIN: &str = "hsm-pin-0042-changed-never-logged";
const WRONG_PIN: &str = "wrong-pin-0815-never-logged";
const PIN2: &str = "second-token-pin-never-logged";
pub(crate) const TOKEN: &str = "strongroom-test";
const TOKEN2: &str = "strongroom-two";
const PASSWORD: &str = "a long passphrase for root";
const FOLDER: &str = "\\VED\\Policy\\Keys";
const SCOPE: &str = "restricted:manage;admin:rotate";
/// The log line the driver writes each time it presents a PIN (C_Login).
const PRESENTED: &str = "presenting the PIN to the token";

pub(crate) fn softhsm_module() -> Option<PathBuf> {
    let candidates =
        ["/usr/lib/softhsm/libsofthsm2.so", "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so", "/usr/local/lib/softhsm/libsofthsm2.so"];
    let util = Command::new("softhsm2-util").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
    if !util.is_ok_and(|s| s.success()) {
        return None;
    }
    candidates.iter().map(PathBuf::from).find(|p| p.exists())
}

fn pkcs11_tool_present() -> bool {
    Command::new("pkcs11-tool").arg("--help").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

/// A SoftHSM2 set-up of its own: configuration, token directory, PIN file,
/// and two tokens (`TOKEN` with `PIN`, `TOKEN2` with `PIN2`).
pub(crate) struct Hsm {
    pub(crate) dir: tempfile::TempDir,
    module: PathBuf,
    /// Each token's own directory inside `tokens()`.
    token_dirs: Vec<(&'static str, PathBuf)>,
}

impl Hsm {
    pub(crate) fn conf(&self) -> String {
        self.dir.path().join("softhsm2.conf").display().to_string()
    }

    fn tokens(&self) -> PathBuf {
        self.dir.path().join("tokens")
    }

    fn token_dir(&self, label: &str) -> PathBuf {
        self.token_dirs.iter().find(|(l, _)| *l == label).unwrap().1.clone()
    }

    pub(crate) fn init(module: PathBuf) -> Hsm {
        let dir = tempfile::tempdir().unwrap();
        let mut h = Hsm { dir, module, token_dirs: Vec::new() };
        std::fs::create_dir(h.tokens()).unwrap();
        std::fs::write(
            h.conf(),
            format!("directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\n", h.tokens().display()),
        )
        .unwrap();
        for (label, pin) in [(TOKEN, PIN), (TOKEN2, PIN2)] {
            let before: Vec<PathBuf> = std::fs::read_dir(h.tokens()).unwrap().map(|e| e.unwrap().path()).collect();
            let out = Command::new("softhsm2-util")
                .args(["--init-token", "--free", "--label", label, "--pin", pin, "--so-pin", "so-pin-1234"])
                .env("SOFTHSM2_CONF", h.conf())
                .output()
                .unwrap();
            assert!(out.status.success(), "softhsm2-util: {}", String::from_utf8_lossy(&out.stderr));
            let made = std::fs::read_dir(h.tokens()).unwrap().map(|e| e.unwrap().path()).find(|p| !before.contains(p)).unwrap();
            h.token_dirs.push((label, made));
        }
        h.write_pin(PIN);
        h
    }

    fn pin_path(&self) -> PathBuf {
        self.dir.path().join("pin")
    }

    /// Replaces the PIN file at once (mode 0600, then renamed into place).
    fn write_pin(&self, pin: &str) {
        let next = self.dir.path().join("pin.next");
        std::fs::write(&next, format!("{pin}\n")).unwrap();
        std::fs::set_permissions(&next, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::rename(&next, self.pin_path()).unwrap();
    }

    pub(crate) fn pin_file(&self) -> String {
        format!("pin_file = \"{}\"", self.pin_path().display())
    }

    /// A configuration file naming `keys`: (name, token, PIN line), each on this module.
    pub(crate) fn config(&self, file: &str, keys: &[(&str, &str, String)]) -> String {
        let path = self.dir.path().join(file);
        let mut text = "[keys]\n".to_owned();
        for (name, token, pin) in keys {
            text.push_str(&format!(
                "[[keys.pkcs11]]\nname = \"{name}\"\nlibrary = \"{}\"\ntoken_label = \"{token}\"\nkey_label = \"strongroom-vault\"\n{pin}\n",
                self.module.display()
            ));
        }
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    fn pkcs11_tool(&self, args: &[&str]) -> std::process::Output {
        let module = self.module.display().to_string();
        Command::new("pkcs11-tool").args(["--module", &module]).args(args).env("SOFTHSM2_CONF", self.conf()).output().unwrap()
    }

    /// The token's flags as `pkcs11-tool -L` shows them.
    fn token_flags(&self, label: &str) -> String {
        let out = self.pkcs11_tool(&["-L"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let block = text.split("\nSlot ").find(|b| b.lines().any(|l| l.trim() == format!("token label        : {label}")));
        let block = block.unwrap_or_else(|| panic!("no token {label} in {text}"));
        block.lines().find(|l| l.trim_start().starts_with("token flags")).unwrap_or_else(|| panic!("{block}")).to_owned()
    }
}

/// `strongroom admin --config CONFIG --data-dir DIR ARGS`, with SoftHSM's environment.
fn admin(hsm: &Hsm, config: &str, dir: &Path, args: &[&str]) -> crate::process::Run {
    let dir = dir.display().to_string();
    let mut full = vec!["admin", "--config", config, "--data-dir", &dir];
    full.extend_from_slice(args);
    let conf = hsm.conf();
    run(&full, &[("SOFTHSM2_CONF", conf.as_str()), ("TEST_HSM_PIN2", PIN2)])
}

/// Starts `serve` expecting it to refuse; returns everything it printed.
fn serve_refuses(config: &str, env: &[(&str, String)]) -> String {
    let data = tempfile::tempdir().unwrap();
    let data = data.path().display().to_string();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let args = ["serve", "--insecure-http", "--config", config, "--listen", "127.0.0.1:0", "--data-dir", &data];
    let r = run_bounded(&args, &env, Duration::from_secs(30));
    assert_ne!(r.code, -1, "serve did not stop on an unusable key");
    assert_ne!(r.code, 0, "serve must fail");
    format!("{}{}", r.stdout, r.stderr)
}

/// A signed-in client of the vault: the test kit's, with root's token.
#[derive(Clone)]
struct Api {
    api: strongroom_testkit::Api,
    token: String,
}

/// A refusal's `Result` code (the call must have been answered).
fn code(f: Fail) -> i64 {
    f.code().unwrap_or_else(|| panic!("no Result in {f}"))
}

impl Api {
    /// Makes the root user, the folder and an integration, and signs in.
    async fn sign_in(server: &Server) -> Api {
        server.admin(&["users", "create", "root", "--master-admin"], &format!("{PASSWORD}\n"));
        server.admin(&["folders", "create", FOLDER], "");
        server.admin(&["integrations", "create", "app", "--scope", SCOPE, "--allow-all-users", "--password-grant", "true"], "");
        let api = strongroom_testkit::Api::new(server.http_base());
        let token = api.password_grant("app", "root", PASSWORD, SCOPE).await.access().to_owned();
        Api { api, token }
    }

    /// `Add` of `data` under `key`: the VaultID, or the refusal's `Result`.
    async fn add(&self, key: &str, data: &str) -> Result<i64, i64> {
        self.api.add(&self.token, FOLDER, key, data.as_bytes()).await.map(|a| a.vault_id).map_err(code)
    }

    /// Adds `data` under `key` with association `n` = `value`; the VaultID.
    async fn add_with_value(&self, key: &str, data: &str, value: &str) -> i64 {
        let id = self.add(key, data).await.unwrap_or_else(|c| panic!("{key}: Result {c}"));
        self.api.associate(&self.token, id, "n", &string(value)).await.unwrap();
        id
    }

    /// `Retrieve`: the entry's `Base64Data`, or the refusal's `Result`.
    async fn retrieve(&self, id: i64) -> Result<String, i64> {
        self.api.retrieve(&self.token, id).await.map(|r| r.base64_data.0).map_err(code)
    }

    /// The value of association `n`, or the refusal's `Result`.
    async fn value(&self, id: i64) -> Result<String, i64> {
        self.api.lookup_association(&self.token, id, "n").await.map(|r| r.value.0).map_err(code)
    }

    async fn keys_in_use(&self) -> Vec<String> {
        let keys: EncryptionKeysResponse = self.api.sdk_get(&self.token, "/vedsdk/SecretStore/EncryptionKeysInUse").await.unwrap();
        keys.encryption_keys
    }

    async fn default_key(&self) -> String {
        let key: DefaultKeyResponse = self.api.sdk_get(&self.token, "/vedsdk/Crypto/DefaultKey").await.unwrap();
        key.default_key
    }

    /// `RotateKey` of entry `id` to `key`: the refusal's `Result`, if any.
    async fn rotate(&self, id: i64, key: &str) -> Result<(), i64> {
        let path = format!("/vedsdk/SecretStore/RotateKey/{id}?newkeyname={key}");
        self.api.sdk_get::<ResultResponse>(&self.token, &path).await.map(drop).map_err(code)
    }

    async fn healthz(&self) -> reqwest::StatusCode {
        self.api.http.get(self.api.url("/healthz")).send().await.unwrap().status()
    }
}

/// The forms bytes may take in a log line.
fn byte_forms(bytes: &[u8]) -> Vec<String> {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    vec![hex.to_uppercase(), hex, STANDARD.encode(bytes), URL_SAFE_NO_PAD.encode(bytes), format!("{bytes:?}")]
}

/// Asserts that nothing secret is in `output`: the PINs, the plaintexts,
/// the master key and every key derived from it, and every data key the
/// master key wraps (unwrapped here from the server's database).
fn assert_no_secrets(output: &str, data_dir: &Path, plaintexts: &[&str]) {
    let hex = std::fs::read_to_string(data_dir.join("master.key")).unwrap();
    let hex = hex.trim();
    let master: [u8; 32] = (0..32).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap()).collect::<Vec<_>>().try_into().unwrap();
    let keys = strongroom_keyring::keys::Keys::from_master(&master);
    let mut secret_bytes: Vec<Vec<u8>> = vec![master.to_vec(), keys.page.to_vec(), keys.vault_kek.to_vec(), keys.vault_lookup.to_vec()];
    let db = rusqlite::Connection::open(data_dir.join("strongroom.db")).unwrap();
    let mut st = db.prepare("SELECT id, key_name, wrapped FROM data_keys").unwrap();
    let rows: Vec<(i64, String, Vec<u8>)> =
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect();
    let kek = strongroom_core::vault::crypto::Key::new(keys.vault_kek);
    let mut software = 0;
    for (id, name, wrapped) in rows {
        if name == "Software:Default" {
            let aad = strongroom_core::vault::crypto::aad_wrapped_key(id);
            secret_bytes.push(strongroom_core::vault::crypto::open(&kek, &aad, &wrapped).unwrap());
            software += 1;
        }
    }
    assert!(software > 0, "the scan covers data keys");
    let mut forms: Vec<String> = secret_bytes.iter().flat_map(|b| byte_forms(b)).collect();
    for s in [PIN, NEW_PIN, WRONG_PIN, PIN2].iter().chain(plaintexts) {
        forms.push((*s).to_owned());
        forms.extend(byte_forms(s.as_bytes()));
    }
    for form in forms {
        assert!(!output.contains(&form), "{form:?} appears in the log");
    }
}

fn count(output: &str, all: &[&str]) -> usize {
    output.lines().filter(|l| all.iter().all(|w| l.contains(w))).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_under_a_softhsm_key() {
    let Some(module) = softhsm_module() else {
        skip("SoftHSM2 (softhsm2-util and libsofthsm2.so) is not installed: the PKCS#11 test cannot run");
        return;
    };
    let hsm = Hsm::init(module);
    // Two keys on one module, each in its own token.
    let keys = [("hsm", TOKEN, hsm.pin_file()), ("two", TOKEN2, "pin_env = \"TEST_HSM_PIN2\"".to_owned())];
    let config = hsm.config("config.toml", &keys);

    // The keys are made in the tokens by the server's own admin command, once.
    let scratch = hsm.dir.path().join("scratch");
    let r = admin(&hsm, &config, &scratch, &["keys", "create", "PKCS11:hsm"]);
    assert_eq!((r.code, r.stdout.trim()), (0, "created PKCS11:hsm"), "{}", r.stderr);
    let r = admin(&hsm, &config, &scratch, &["keys", "create", "PKCS11:hsm"]);
    assert!(r.code != 0 && r.stderr.contains("already exists"), "{r:?}");
    let r = admin(&hsm, &config, &scratch, &["keys", "create", "pkcs11:TWO"]);
    assert_eq!((r.code, r.stdout.trim()), (0, "created PKCS11:two"), "{}", r.stderr);
    // OpenSC's view of it: AES-256, encrypt/decrypt only, sensitive, never extractable.
    if pkcs11_tool_present() {
        let out = hsm.pkcs11_tool(&["--token-label", TOKEN, "--login", "--pin", PIN, "--list-objects", "--type", "secrkey"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("AES length 32") && text.contains("label:      strongroom-vault"), "{text}");
        assert!(text.contains("Usage:      encrypt, decrypt\n"), "{text}");
        assert!(text.contains("Access:     sensitive, always sensitive, never extractable"), "{text}");
    } else {
        skip("pkcs11-tool (opensc) cannot run: the key's attributes are not checked");
    }

    let conf = hsm.conf();
    let server = Server::start(
        &["--insecure-http", "--config", &config],
        &[("SOFTHSM2_CONF", conf.as_str()), ("TEST_HSM_PIN2", PIN2), ("STRONGROOM_LOG", "trace"), ("RUST_LOG", "trace")],
    );
    assert_eq!(count(&server.output.lock().unwrap(), &["vault key ready"]), 3, "Software:Default and both PKCS#11 keys");
    let api = Api::sign_in(&server).await;

    // One entry under the software key, one under each HSM key, each with an association.
    let sw = api.add_with_value("Software:Default", "software secret", "sw value").await;
    let hw = api.add_with_value("PKCS11:hsm", "hsm secret", "hsm value").await;
    let two = api.add_with_value("PKCS11:two", "second token secret", "two value").await;
    assert_eq!(api.retrieve(sw).await, Ok(STANDARD.encode("software secret")));
    assert_eq!(api.retrieve(hw).await, Ok(STANDARD.encode("hsm secret")));
    assert_eq!(api.value(two).await, Ok("two value".into()));
    assert_eq!(api.keys_in_use().await, ["PKCS11:hsm", "PKCS11:two", "Software:Default"]);
    assert_eq!(api.default_key().await, "Software:Default");
    assert_eq!(api.add("PKCS11:nope", "x").await, Err(21), "an unknown key");

    // RotateKey software → HSM → software, the value readable at every step.
    assert_eq!(api.rotate(sw, "PKCS11:hsm").await, Ok(()));
    assert_eq!(api.keys_in_use().await, ["PKCS11:hsm", "PKCS11:two"]);
    assert_eq!(api.retrieve(sw).await, Ok(STANDARD.encode("software secret")));
    assert_eq!(api.value(sw).await, Ok("sw value".into()));
    assert_eq!(api.rotate(sw, "Software:Default").await, Ok(()));
    assert_eq!(api.retrieve(sw).await, Ok(STANDARD.encode("software secret")));
    assert_eq!(api.value(sw).await, Ok("sw value".into()));

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

    // Two keys share the module: while the second token is away, every
    // request for it makes the module look for it again (finalise and
    // initialise), and the first key's requests, running at the same
    // time, never fail.
    let away2 = hsm.dir.path().join("token2-away");
    std::fs::rename(hsm.token_dir(TOKEN2), &away2).unwrap();
    let mut calls = Vec::new();
    for i in 0..40 {
        let api = api.clone();
        calls.push(tokio::spawn(async move { (i % 2, api.retrieve(if i % 2 == 0 { hw } else { two }).await) }));
    }
    for c in calls {
        match c.await.unwrap() {
            (0, v) => assert_eq!(v, Ok(STANDARD.encode("hsm secret")), "the present token's key keeps working: {v:?}"),
            (_, v) => assert_eq!(v, Err(11), "{v:?}"),
        }
    }
    std::fs::rename(&away2, hsm.token_dir(TOKEN2)).unwrap();
    assert_eq!(api.value(two).await, Ok("two value".into()), "the second token is back");

    // Read once through the new data key, then the token goes away: nothing
    // a token wraps is kept in memory, so the HSM entry is Result 11 at once;
    // everything else works.
    assert_eq!(api.retrieve(hw).await, Ok(STANDARD.encode("hsm secret")));
    let away = hsm.dir.path().join("tokens-away");
    std::fs::rename(hsm.tokens(), &away).unwrap();
    assert_eq!(api.retrieve(hw).await, Err(11));
    assert_eq!(api.value(hw).await, Err(11));
    assert_eq!(api.add("PKCS11:hsm", "x").await, Err(21), "a key that cannot be used now");
    assert_eq!(api.retrieve(sw).await, Ok(STANDARD.encode("software secret")));
    assert_eq!(api.value(sw).await, Ok("sw value".into()));
    assert!(api.add("Software:Default", "still works").await.is_ok());
    assert_eq!(api.healthz().await, 200);
    // It comes back: so do the entries.
    std::fs::rename(&away, hsm.tokens()).unwrap();
    let v = api.retrieve(hw).await;
    let errs: Vec<String> = server.output.lock().unwrap().lines().filter(|l| l.contains("ERROR")).map(str::to_owned).collect();
    assert_eq!(v, Ok(STANDARD.encode("hsm secret")), "{errs:#?}");

    // The administrator moves everything under the software key into the
    // token, and then everything in the token back, while the server runs.
    let r = admin(&hsm, &config, &server.dir, &["keys", "move", "--from", "Software:Default", "--to", "PKCS11:hsm"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.starts_with("moved 2 entries from Software:Default to PKCS11:hsm (data key "), "{r:?}");
    assert!(r.stderr.contains("Software:Default -> PKCS11:hsm: moved 2 entries so far"), "progress: {r:?}");
    assert_eq!(api.keys_in_use().await, ["PKCS11:hsm", "PKCS11:two"]);
    assert_eq!(api.retrieve(sw).await, Ok(STANDARD.encode("software secret")));
    assert_eq!(api.value(sw).await, Ok("sw value".into()));
    let r = admin(&hsm, &config, &server.dir, &["keys", "move", "--from", "pkcs11:HSM", "--to", "Software:Default"]);
    assert!(r.code == 0 && r.stdout.starts_with("moved 3 entries from PKCS11:hsm to Software:Default"), "{r:?}");
    assert_eq!(api.keys_in_use().await, ["PKCS11:two", "Software:Default"]);
    for (id, data, value) in [(sw, "software secret", "sw value"), (hw, "hsm secret", "hsm value")] {
        assert_eq!(api.retrieve(id).await, Ok(STANDARD.encode(data)));
        assert_eq!(api.value(id).await, Ok(value.into()));
    }
    let r = admin(&hsm, &config, &server.dir, &["keys", "move", "--from", "PKCS11:two", "--to", "pkcs11:two"]);
    assert!(r.code != 0 && r.stderr.contains("PKCS11:two is the key the entries are under already"), "{r:?}");

    let (output, kept) = server.stop_keeping_data();
    let data_dir = kept.path().to_owned();
    assert!(output.contains("TRACE"), "no trace lines captured");
    assert!(output.contains("PKCS11:hsm"), "the failing key is named in the log");
    assert_no_secrets(&output, &data_dir, &["hsm secret", "hsm value", "software secret", "sw value", "second token secret", "two value"]);

    // Entries under a key that is no longer configured: the server starts,
    // and warns once, naming the key and its entries.
    let only_hsm = hsm.config("only-hsm.toml", &keys[..1]);
    let server = Server::start_on(data_dir.clone(), &["--insecure-http", "--config", &only_hsm], &[("SOFTHSM2_CONF", conf.as_str())]);
    let out = server.output.lock().unwrap().clone();
    assert_eq!(count(&out, &["WARN", "not configured", "PKCS11:two (1 entry)"]), 1, "{out}");
    assert!(!out.contains("PKCS11:hsm ("), "{out}");
    drop(server);

    // Start-up checks every configured key: a wrong PIN, a missing token or
    // a PIN file others may read stops it, naming the key.
    let wrong = hsm.config("wrong-pin.toml", &[("hsm", TOKEN, "pin_env = \"TEST_HSM_PIN\"".to_owned())]);
    let out = serve_refuses(
        &wrong,
        &[("SOFTHSM2_CONF", hsm.conf()), ("TEST_HSM_PIN", WRONG_PIN.to_owned()), ("STRONGROOM_LOG", "trace".to_owned())],
    );
    assert!(out.contains("PKCS11:hsm") && out.contains("PinIncorrect"), "{out}");
    assert!(!out.contains(WRONG_PIN) && !out.contains(PIN), "a PIN in the output: {out}");
    let missing = hsm.config("missing.toml", &[("hsm", "no-such-token", hsm.pin_file())]);
    let out = serve_refuses(&missing, &[("SOFTHSM2_CONF", hsm.conf())]);
    assert!(out.contains("PKCS11:hsm") && out.contains("no token labelled \"no-such-token\""), "{out}");
    std::fs::set_permissions(hsm.pin_path(), std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = serve_refuses(&only_hsm, &[("SOFTHSM2_CONF", hsm.conf())]);
    let shown = hsm.pin_path().display().to_string();
    assert!(out.contains("PKCS11:hsm") && out.contains(&format!("{shown} is open to group or other users")), "{out}");
    assert!(out.contains(&format!("chmod 600 {shown}")), "{out}");
    assert!(!out.contains(PIN), "{out}");
}

/// The token's PIN changes while the server runs: the live session keeps
/// working; once it is gone the old PIN is refused once, never presented
/// again (the token's own flag shows it), and the new PIN in the file brings
/// the entries back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pin_the_token_refused_is_not_presented_again() {
    let Some(module) = softhsm_module() else {
        skip("SoftHSM2 (softhsm2-util and libsofthsm2.so) is not installed: the PKCS#11 test cannot run");
        return;
    };
    if !pkcs11_tool_present() {
        skip("pkcs11-tool (opensc) is not installed: the PIN cannot be changed from outside");
        return;
    }
    let hsm = Hsm::init(module);
    let config = hsm.config("config.toml", &[("hsm", TOKEN, hsm.pin_file())]);
    let r = admin(&hsm, &config, &hsm.dir.path().join("scratch"), &["keys", "create", "PKCS11:hsm"]);
    assert_eq!(r.code, 0, "{r:?}");
    let conf = hsm.conf();
    let server = Server::start(
        &["--insecure-http", "--config", &config],
        &[("SOFTHSM2_CONF", conf.as_str()), ("STRONGROOM_LOG", "trace"), ("RUST_LOG", "trace")],
    );
    let api = Api::sign_in(&server).await;
    let sw = api.add_with_value("Software:Default", "software secret", "sw value").await;
    let hw = api.add_with_value("PKCS11:hsm", "hsm secret", "hsm value").await;
    let presented = || count(&server.output.lock().unwrap(), &[PRESENTED, "PKCS11:hsm"]);
    let logged_in = presented();
    assert!(logged_in >= 1, "the driver logs each time it presents the PIN");

    // The PIN changes from outside. The server's session is logged in
    // already, so its entries keep working.
    let out = hsm.pkcs11_tool(&["--token-label", TOKEN, "--login", "--pin", PIN, "--change-pin", "--new-pin", NEW_PIN]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(api.retrieve(hw).await, Ok(STANDARD.encode("hsm secret")), "a live session outlives a PIN change");
    assert!(!hsm.token_flags(TOKEN).contains("user PIN count low"), "{}", hsm.token_flags(TOKEN));

    // The session goes away (the token is taken away and comes back): the
    // server must log in again, with the old PIN still in its file.
    let away = hsm.dir.path().join("tokens-away");
    std::fs::rename(hsm.tokens(), &away).unwrap();
    assert_eq!(api.retrieve(hw).await, Err(11));
    std::fs::rename(&away, hsm.tokens()).unwrap();
    assert_eq!(presented(), logged_in, "nothing is presented to a token that is away");
    assert_eq!(api.retrieve(hw).await, Err(11), "the old PIN is refused");
    assert_eq!(presented(), logged_in + 1);
    assert!(hsm.token_flags(TOKEN).contains("user PIN count low"), "SoftHSM counted the refusal: {}", hsm.token_flags(TOKEN));
    // A good login from outside clears the token's flag; from here on any
    // wrong PIN presented would set it again.
    let out = hsm.pkcs11_tool(&["--token-label", TOKEN, "--login", "--pin", NEW_PIN, "--list-objects", "--type", "secrkey"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!hsm.token_flags(TOKEN).contains("user PIN count low"), "{}", hsm.token_flags(TOKEN));

    // Clients keep asking: Result 11 (and 21 for Add), everything else works,
    // and the refused PIN is never presented again.
    for _ in 0..5 {
        assert_eq!(api.retrieve(hw).await, Err(11));
        assert_eq!(api.value(hw).await, Err(11));
        assert_eq!(api.add("PKCS11:hsm", "x").await, Err(21));
        assert_eq!(api.retrieve(sw).await, Ok(STANDARD.encode("software secret")));
        assert_eq!(api.value(sw).await, Ok("sw value".into()));
        assert_eq!(api.healthz().await, 200);
    }
    assert_eq!(presented(), logged_in + 1, "the refused PIN was presented again");
    assert!(!hsm.token_flags(TOKEN).contains("user PIN count low"), "a wrong PIN reached the token: {}", hsm.token_flags(TOKEN));
    let out = server.output.lock().unwrap().clone();
    assert_eq!(count(&out, &["ERROR", "PKCS11:hsm", "refused the PIN from the PIN file"]), 1, "one clear error: {out}");

    // The new PIN in the file: the entries are back, and it is presented once.
    hsm.write_pin(NEW_PIN);
    assert_eq!(api.retrieve(hw).await, Ok(STANDARD.encode("hsm secret")));
    assert_eq!(api.value(hw).await, Ok("hsm value".into()));
    assert!(api.add("PKCS11:hsm", "third hsm secret").await.is_ok());
    assert_eq!(presented(), logged_in + 2);
    assert!(!hsm.token_flags(TOKEN).contains("user PIN count low"), "{}", hsm.token_flags(TOKEN));

    let (output, kept) = server.stop_keeping_data();
    assert_no_secrets(&output, kept.path(), &["hsm secret", "hsm value", "software secret", "sw value", "third hsm secret"]);
}

/// The PEM blocks of a file, each as its base64 body (line breaks removed).
fn pem_bodies(text: &str) -> Vec<String> {
    text.split("-----BEGIN CERTIFICATE-----")
        .skip(1)
        .map(|b| b.split("-----END").next().unwrap_or_default().chars().filter(|c| !c.is_whitespace()).collect())
        .collect()
}

/// CAs whose keys are made in SoftHSM (`admin ca create --key PKCS11:hsm`),
/// end to end through the real binary: a P-256 root, an RSA 2048 root and a
/// P-256 intermediate whose certificate an offline root (openssl) signed.
/// The token signs their certificates, every leaf (a user CSR, central keys,
/// sixteen concurrent requests) and their CRLs, each checked with openssl;
/// `Retrieve` gives the intermediate's chain in both orders; the keys are
/// sensitive and never extractable (that the token refuses their secret
/// parts is `crates/keyring/tests/signing_keys.rs`), and the store holds
/// only their labels.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cas_with_keys_in_softhsm_issue_revoke_and_keep_their_keys() {
    use crate::certificates::{Call, csr, openssl, serial_of};
    use serde_json::json;
    let Some(module) = softhsm_module() else {
        skip("SoftHSM2 (softhsm2-util and libsofthsm2.so) is not installed: the HSM CA test cannot run");
        return;
    };
    let started = std::time::Instant::now();
    let hsm = Hsm::init(module);
    let dir = hsm.dir.path().to_owned();
    let config = hsm.config("config.toml", &[("hsm", TOKEN, hsm.pin_file())]);
    let data = dir.join("data");
    let ok = |args: &[&str]| {
        let r = admin(&hsm, &config, &data, args);
        assert_eq!(r.code, 0, "{args:?}: {r:?}");
        r.stdout
    };
    let fails = |args: &[&str], why: &str| {
        let r = admin(&hsm, &config, &data, args);
        assert!(r.code != 0 && r.stderr.contains(why), "{args:?} must fail with {why:?}: {r:?}");
    };
    ok(&["init"]);
    ok(&["keys", "create", "PKCS11:hsm"]);
    let dn = ok(&["ca", "create", "HSM CA", "--key", "pkcs11:HSM", "--subject", "CN=HSM CA, O=Strongroom tests"]);
    assert_eq!(dn.trim(), "\\VED\\Policy\\CA Templates\\HSM CA");
    let dn = ok(&["ca", "create", "RSA CA", "--algorithm", "rsa2048", "--key", "PKCS11:hsm"]);
    assert_eq!(dn.trim(), "\\VED\\Policy\\CA Templates\\RSA CA");
    let sub_csr = dir.join("sub.csr").display().to_string();
    let subject = "CN=HSM Sub CA, O=Strongroom tests";
    ok(&["ca", "create", "HSM Sub", "--key", "PKCS11:hsm", "--intermediate", "--csr-out", &sub_csr, "--subject", subject]);
    let shown = ok(&["ca", "show", "RSA CA"]);
    assert!(shown.contains("key:         in the token of PKCS11:hsm") && shown.contains("algorithm:   rsa2048"), "{shown}");
    for (name, file) in [("HSM CA", "ca.pem"), ("RSA CA", "rsa-ca.pem")] {
        std::fs::write(dir.join(file), ok(&["ca", "show", name, "--pem"])).unwrap();
        let (good, out) = openssl(&dir, &["verify", "-CAfile", file, file]);
        assert!(good, "{name}: the token's self-signature: {out}");
    }
    let (_, text) = openssl(&dir, &["x509", "-in", "rsa-ca.pem", "-noout", "-text"]);
    assert!(text.contains("sha256WithRSAEncryption") && text.contains("(2048 bit)"), "{text}");

    // The server (the CA commands run beside it): three policy folders, one per CA, and a signed-in client.
    let conf = hsm.conf();
    let server = Server::start_on(data.clone(), &["--insecure-http", "--config", &config], &[("SOFTHSM2_CONF", conf.as_str())]);
    server.admin(&["users", "create", "alice"], &format!("{PASSWORD}\n"));
    for (folder, ca) in [("\\VED\\Policy\\Hsm", "HSM CA"), ("\\VED\\Policy\\Rsa", "RSA CA"), ("\\VED\\Policy\\Sub", "HSM Sub")] {
        server.admin(&["folders", "create", folder], "");
        server.admin(&["policy", "set", folder, "--issuing-ca", ca], "");
        server.admin(&["rights", "grant", folder, "alice", "--rights", "view,read,write,create,revoke,privatekeyread"], "");
    }
    let scope = "certificate:manage,revoke";
    server.admin(&["integrations", "create", "vcert", "--scope", scope, "--allow-all-users", "--password-grant", "true"], "");
    let token =
        strongroom_testkit::Api::new(server.http_base()).password_grant("vcert", "alice", PASSWORD, scope).await.access().to_owned();
    let c = Call { http: strongroom_testkit::api::client(), base: server.http_base() };
    let request = |body: serde_json::Value| {
        let (http, base, token) = (c.http.clone(), c.base.clone(), token.clone());
        async move {
            let (status, v) = Call { http, base }.post(&token, "/vedsdk/certificates/request", body).await;
            assert_eq!(status, 200, "{v}");
            v["CertificateDN"].as_str().unwrap().to_owned()
        }
    };

    // The intermediate: no certificate until one is installed; its CSR signed by an openssl root.
    fails(&["ca", "show", "HSM Sub", "--pem"], "no certificate yet");
    let (status, v) =
        c.post(&token, "/vedsdk/certificates/request", json!({"PolicyDN": "\\VED\\Policy\\Sub", "Subject": "early.sub.example"})).await;
    assert_eq!(status, 400, "{v}");
    assert!(v["Error"].as_str().is_some_and(|e| e.contains("cannot issue yet")), "{v}");
    assert_eq!(reqwest::get(format!("{}/crl/hsm%20sub.crl", server.http_base())).await.unwrap().status().as_u16(), 404, "no CRL yet");
    let again = ok(&["ca", "csr", "HSM Sub"]);
    assert!(again.starts_with("-----BEGIN CERTIFICATE REQUEST-----") && again.contains("-----END CERTIFICATE REQUEST-----"), "{again}");
    let pending = ok(&["ca", "list"]);
    assert!(pending.lines().any(|l| l.starts_with("HSM Sub ") && l.contains(" pending ")), "{pending}");
    let (good, out) = openssl(&dir, &["req", "-in", "sub.csr", "-noout", "-verify", "-subject"]);
    assert!(good && out.contains("HSM Sub CA"), "the CSR the token signed: {out}");
    let (good, out) = openssl(
        &dir,
        &[
            "req",
            "-x509",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-384",
            "-nodes",
            "-keyout",
            "root.key",
            "-out",
            "root.pem",
            "-days",
            "30",
            "-subj",
            "/CN=Offline Root/O=Strongroom tests",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
    assert!(good, "{out}");
    std::fs::write(
        dir.join("sub.ext"),
        "basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign,digitalSignature\n\
         subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid:always\n",
    )
    .unwrap();
    let (good, out) = crate::certificates::root_signs(&dir, "sub.csr", "sub.ext", "sub.pem");
    assert!(good, "{out}");
    let (sub_pem, root_pem) = (dir.join("sub.pem").display().to_string(), dir.join("root.pem").display().to_string());
    fails(&["ca", "install", "HSM Sub", "--cert", &sub_pem], "does not reach a self-signed root");
    fails(&["ca", "install", "HSM CA", "--cert", &sub_pem, "--chain", &root_pem], "not the CA's key");
    fails(&["ca", "install", "HSM Sub", "--cert", &root_pem], "not the CA's key");
    let installed = ok(&["ca", "install", "HSM Sub", "--cert", &sub_pem, "--chain", &root_pem]);
    assert!(installed.starts_with("installed: \\VED\\Policy\\CA Templates\\HSM Sub (issued by CN=Offline Root"), "{installed}");
    let listed = ok(&["ca", "list"]);
    assert!(listed.lines().any(|l| l.starts_with("HSM Sub ") && l.contains(" intermediate ")), "{listed}");
    let chain = ok(&["ca", "show", "HSM Sub", "--chain"]);
    let root_body = pem_bodies(&std::fs::read_to_string(dir.join("root.pem")).unwrap());
    let sub_body = pem_bodies(&std::fs::read_to_string(dir.join("sub.pem")).unwrap());
    assert_eq!(pem_bodies(&chain), [sub_body.clone(), root_body.clone()].concat());

    // The store holds each CA key's label in its token, never a key.
    {
        let db = rusqlite::Connection::open(data.join("strongroom.db")).unwrap();
        let mut q = db.prepare("SELECT name, key_name, key_id, key_sealed FROM cert_authorities ORDER BY name_key").unwrap();
        let rows: Vec<(String, String, i64, Vec<u8>)> =
            q.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).unwrap().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 3);
        for (name, key_name, key_id, sealed) in rows {
            assert_eq!((key_name.as_str(), key_id), ("PKCS11:hsm", 0), "{name}");
            assert_eq!(String::from_utf8(sealed).unwrap(), format!("strongroom CA {name}"), "{name}: only the label is stored");
        }
    }

    // The P-256 token CA: a user CSR, then a central P-521 key handed out as PBES2 PKCS#8 (the
    // certificate rewritten after rcgen, then signed in the token).
    let pem = csr(&dir, "www", "/CN=www.hsm.example", &["www.hsm.example"], None);
    let www = request(json!({"PolicyDN": "\\VED\\Policy\\Hsm", "PKCS10": pem})).await;
    c.retrieve(&token, &dir, "www.pem", json!({"CertificateDN": www, "Format": "Base64", "IncludeChain": true})).await;
    let (good, out) = openssl(&dir, &["verify", "-CAfile", "ca.pem", "www.pem"]);
    assert!(good && out.contains("www.pem: OK"), "{out}");
    let api =
        request(json!({"PolicyDN": "\\VED\\Policy\\Hsm", "Subject": "api.hsm.example", "KeyAlgorithm": "ECC", "EllipticCurve": "P521"}))
            .await;
    c.retrieve(
        &token,
        &dir,
        "api.pem",
        json!({"CertificateDN": api, "Format": "Base64 (PKCS #8)", "IncludeChain": true, "IncludePrivateKey": true, "Password": "a token passphrase"}),
    )
    .await;
    let (good, out) = openssl(&dir, &["verify", "-CAfile", "ca.pem", "api.pem"]);
    assert!(good, "{out}");
    let (good, out) = openssl(&dir, &["pkcs8", "-in", "api.pem", "-passin", "pass:a token passphrase", "-out", "api.key"]);
    assert!(good, "{out}");
    let (_, text) = openssl(&dir, &["x509", "-in", "api.pem", "-noout", "-text"]);
    assert!(text.contains("NIST CURVE: P-521"), "{text}");

    // The RSA token CA signs with sha256WithRSAEncryption (two OUs: the rewritten certificate too).
    let rsa = request(json!({"PolicyDN": "\\VED\\Policy\\Rsa", "Subject": "rsa.hsm.example", "KeyAlgorithm": "RSA", "KeyBitSize": 2048,
                            "OrganizationalUnit": ["Blue", "Green"]}))
    .await;
    c.retrieve(&token, &dir, "rsa.pem", json!({"CertificateDN": rsa, "Format": "Base64"})).await;
    let (good, out) = openssl(&dir, &["verify", "-CAfile", "rsa-ca.pem", "rsa.pem"]);
    assert!(good && out.contains("rsa.pem: OK"), "{out}");
    let (_, text) = openssl(&dir, &["x509", "-in", "rsa.pem", "-noout", "-text"]);
    assert!(text.contains("Signature Algorithm: sha256WithRSAEncryption") && text.contains("Issuer: CN = RSA CA"), "{text}");
    assert!(text.contains("Subject: CN = rsa.hsm.example, OU = Blue, OU = Green"), "{text}");

    // The intermediate: leaf, intermediate, root; or root first. openssl verifies up to the offline root.
    let pem = csr(&dir, "sub-leaf", "/CN=leaf.sub.example", &["leaf.sub.example"], Some(2048));
    let leaf = request(json!({"PolicyDN": "\\VED\\Policy\\Sub", "PKCS10": pem})).await;
    let data_ = c.retrieve(&token, &dir, "leaf.pem", json!({"CertificateDN": leaf, "Format": "Base64", "IncludeChain": true})).await;
    let blocks = pem_bodies(&String::from_utf8(data_).unwrap());
    assert_eq!(blocks.len(), 3);
    assert_eq!((&blocks[1], &blocks[2]), (&sub_body[0], &root_body[0]), "leaf, intermediate, root");
    let first = c
        .retrieve(
            &token,
            &dir,
            "rootfirst.pem",
            json!({"CertificateDN": leaf, "Format": "Base64", "IncludeChain": true, "RootFirstOrder": true}),
        )
        .await;
    let reversed: Vec<String> = blocks.iter().rev().cloned().collect();
    assert_eq!(pem_bodies(&String::from_utf8(first).unwrap()), reversed, "root, intermediate, leaf");
    let (good, out) = openssl(&dir, &["verify", "-CAfile", "root.pem", "-untrusted", "sub.pem", "leaf.pem"]);
    assert!(good && out.contains("leaf.pem: OK"), "{out}");
    let (_, text) = openssl(&dir, &["x509", "-in", "leaf.pem", "-noout", "-issuer", "-ext", "authorityKeyIdentifier"]);
    let (_, ski) = openssl(&dir, &["x509", "-in", "sub.pem", "-noout", "-ext", "subjectKeyIdentifier"]);
    let ski = ski.lines().last().unwrap().trim().to_owned();
    assert!(text.contains("CN = HSM Sub CA") && text.contains(&ski), "the leaf names the intermediate and its key id {ski}: {text}");

    // Sixteen requests at once to the token CA: every one answered 200 with a valid certificate of its own.
    let at = std::time::Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..16 {
        tasks.spawn(request(json!({"PolicyDN": "\\VED\\Policy\\Hsm", "Subject": format!("c{i}.hsm.example"), "KeyAlgorithm": "ECC"})));
    }
    let mut dns = Vec::new();
    while let Some(dn) = tasks.join_next().await {
        dns.push(dn.unwrap());
    }
    let took = at.elapsed();
    let mut serials = std::collections::BTreeSet::new();
    for (i, dn) in dns.iter().enumerate() {
        let file = format!("c{i}.pem");
        c.retrieve(&token, &dir, &file, json!({"CertificateDN": dn, "Format": "Base64"})).await;
        let (good, out) = openssl(&dir, &["verify", "-CAfile", "ca.pem", &file]);
        assert!(good, "{dn}: {out}");
        serials.insert(serial_of(&dir, &file));
    }
    assert_eq!(serials.len(), 16, "sixteen certificates, sixteen serials");
    eprintln!("HSM 16 concurrent Requests to the SoftHSM P-256 CA answered in {took:?}");

    // The intermediate's CRL is one openssl takes as its own (issuer, authority key id): with it the leaf
    // verifies; once revoked, it does not.
    let crl_check = |when: &str| {
        let dir = dir.clone();
        let url = format!("{}/crl/hsm%20sub.crl", server.http_base());
        let when = when.to_owned();
        async move {
            std::fs::write(dir.join("sub.crl"), reqwest::get(url).await.unwrap().bytes().await.unwrap()).unwrap();
            let (good, out) = openssl(&dir, &["crl", "-inform", "DER", "-in", "sub.crl", "-out", "sub-crl.pem"]);
            assert!(good, "{when}: {out}");
            openssl(&dir, &["verify", "-crl_check", "-CAfile", "root.pem", "-untrusted", "sub.pem", "-CRLfile", "sub-crl.pem", "leaf.pem"])
        }
    };
    let (good, out) = crl_check("before").await;
    assert!(good && out.contains("leaf.pem: OK"), "the intermediate's CRL is taken as its own: {out}");

    // Revocations: each CRL signed by the CA's key in the token, the serial on it.
    for (dn, pem, crl, ca_file) in [
        (&www, "www.pem", "hsm%20ca.crl", "ca.pem"),
        (&rsa, "rsa.pem", "rsa%20ca.crl", "rsa-ca.pem"),
        (&leaf, "leaf.pem", "hsm%20sub.crl", "sub.pem"),
    ] {
        let serial = serial_of(&dir, pem);
        let (status, v) = c.post(&token, "/vedsdk/certificates/revoke", json!({"CertificateDN": dn, "Reason": 1})).await;
        assert_eq!((status, &v["Success"]), (200, &json!(true)), "{v}");
        let body = reqwest::get(format!("{}/crl/{crl}", server.http_base())).await.unwrap();
        assert_eq!(body.status().as_u16(), 200, "{crl}");
        std::fs::write(dir.join("got.crl"), body.bytes().await.unwrap()).unwrap();
        let (good, out) = openssl(&dir, &["crl", "-inform", "DER", "-in", "got.crl", "-CAfile", ca_file, "-verify", "-noout", "-text"]);
        assert!(good && out.contains("verify OK"), "{crl}, signed in the token: {out}");
        assert!(out.contains(&serial), "{crl} lists {serial}: {out}");
    }

    let (good, out) = crl_check("after").await;
    assert!(!good && out.contains("certificate revoked"), "the revoked leaf fails openssl's CRL check: {out}");

    // The token's view: each CA's private key sensitive, never extractable, its secret refused.
    if pkcs11_tool_present() {
        let out = hsm.pkcs11_tool(&["--token-label", TOKEN, "--login", "--pin", PIN, "--list-objects", "--type", "privkey"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        for name in ["HSM CA", "RSA CA", "HSM Sub"] {
            let block = text.split("Private Key Object").find(|b| b.contains(&format!("label:      strongroom CA {name}\n")));
            let block = block.unwrap_or_else(|| panic!("{name} in {text}"));
            assert!(block.contains("Access:     sensitive, always sensitive, never extractable"), "{name}: {block}");
        }
        // (C_GetAttributeValue of the secret itself answers CKR_ATTRIBUTE_SENSITIVE: crates/keyring/tests/signing_keys.rs,
        // through PKCS#11 itself; pkcs11-tool --read-object reads no private key of any kind, so it proves nothing.)
    } else {
        skip("pkcs11-tool (opensc) cannot run: the CA keys' attributes are not checked");
    }
    drop(server);
    eprintln!("HSM the SoftHSM CA test took {:?}", started.elapsed());
}
