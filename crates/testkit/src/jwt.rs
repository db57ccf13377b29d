//! A JWT issuer the test starts: `crates/cli/tests/jwt-issuer/issuer.mjs` on
//! Node.js, with the `jose` library pinned in that directory's
//! `package-lock.json`, serving a JWKS and an OpenID discovery document
//! over HTTPS (a CA and certificate made here with rcgen, for 127.0.0.1)
//! and minting tokens on request.
//!
//! The npm package is installed once (`npm ci`) into
//! `${XDG_CACHE_HOME:-~/.cache}/strongroom/npm/jwt-issuer-<lock digest>`,
//! outside the clone, under a lock; `scripts/test` installs Node.js and npm
//! where they are missing. Without them the test skips loudly (and fails
//! under `STRONGROOM_REQUIRE_ALL_TESTS=1`).

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// The twin of a P-256 ECDSA signature's `s` (big-endian, 32 bytes): `n − s`,
/// which verifies the same input as `s` (ECDSA's malleability). For tests
/// that a used ES256 token cannot be presented again with it.
pub fn p256_twin(s: &[u8]) -> Vec<u8> {
    const N: [u8; 32] = [
        0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17,
        0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
    ];
    let mut out = vec![0u8; 32];
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let mut d = i16::from(N[i]) - i16::from(s.get(i).copied().unwrap_or(0)) - borrow;
        borrow = i16::from(d < 0);
        if d < 0 {
            d += 256;
        }
        out[i] = u8::try_from(d).unwrap_or(0);
    }
    out
}

const SCRIPT: &str = include_str!("../../cli/tests/jwt-issuer/issuer.mjs");
const PACKAGE: &str = include_str!("../../cli/tests/jwt-issuer/package.json");
const LOCK: &str = include_str!("../../cli/tests/jwt-issuer/package-lock.json");

/// A CA and a server certificate for 127.0.0.1 it signed, as PEM.
#[derive(Debug)]
pub struct TestCa {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl TestCa {
    pub fn new() -> TestCa {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, "strongroom test issuer CA");
        let ca_key = KeyPair::generate().unwrap();
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let leaf_key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .unwrap()
            .signed_by(&leaf_key, &ca, &ca_key)
            .unwrap();
        TestCa { ca_pem: ca.pem(), cert_pem: leaf.pem(), key_pem: leaf_key.serialize_pem() }
    }
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}

fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache"));
    let digest: u64 = LOCK.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    base.join("strongroom").join("npm").join(format!("jwt-issuer-{digest:016x}"))
}

fn have(cmd: &str) -> bool {
    Command::new(cmd).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// The directory with `jose` installed and the issuer script, made if need be.
fn installed() -> Result<PathBuf, String> {
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let lock = std::fs::File::create(dir.with_extension("lock")).map_err(|e| e.to_string())?;
    lock.lock().map_err(|e| e.to_string())?;
    if !dir.join(".complete").exists() {
        std::fs::write(dir.join("package.json"), PACKAGE).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("package-lock.json"), LOCK).map_err(|e| e.to_string())?;
        let out = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
            .current_dir(&dir)
            .output()
            .map_err(|e| format!("npm ci: {e}"))?;
        if !out.status.success() {
            return Err(format!("npm ci failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        std::fs::write(dir.join(".complete"), "").map_err(|e| e.to_string())?;
    }
    std::fs::write(dir.join("issuer.mjs"), SCRIPT).map_err(|e| e.to_string())?;
    Ok(dir)
}

/// The running issuer. Killed when dropped.
#[derive(Debug)]
pub struct Issuer {
    child: Child,
    /// `https://127.0.0.1:PORT`: its `iss` and where its documents are.
    pub base: String,
    /// The CA its certificate chains to (give it to the server as `jwt.ca_file`).
    pub ca_file: PathBuf,
    pub ca: TestCa,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Issuer {
    /// Starts the issuer, or skips (`None`) when Node.js or npm is missing.
    pub fn start_or_skip(test: &str) -> Option<Issuer> {
        if !have("node") || !have("npm") {
            crate::skip(&format!("{test}: Node.js and npm are needed for the test JWT issuer (scripts/test installs them)"));
            return None;
        }
        let modules = match installed() {
            Ok(d) => d,
            Err(e) => {
                crate::skip(&format!("{test}: installing the jose package failed: {e}"));
                return None;
            }
        };
        Some(Self::start_in(&modules))
    }

    fn start_in(modules: &Path) -> Issuer {
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new();
        let (cert, key, ca_file) = (dir.path().join("cert.pem"), dir.path().join("key.pem"), dir.path().join("ca.pem"));
        std::fs::write(&cert, &ca.cert_pem).unwrap();
        std::fs::write(&key, &ca.key_pem).unwrap();
        std::fs::write(&ca_file, &ca.ca_pem).unwrap();
        let mut child = Command::new("node")
            .arg(modules.join("issuer.mjs"))
            .current_dir(modules)
            .env("TLS_CERT", &cert)
            .env("TLS_KEY", &key)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port: u16 = line.trim().strip_prefix("listening ").unwrap_or_else(|| panic!("the issuer said {line:?}")).parse().unwrap();
        let http = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(ca.ca_pem.as_bytes()).unwrap())
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        Issuer { child, base: format!("https://127.0.0.1:{port}"), ca_file, ca, http, _dir: dir }
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let r = self.http.post(format!("{}{path}", self.base)).json(&body).send().await.unwrap();
        assert!(r.status().is_success(), "issuer {path}: {}", r.status());
        r.json().await.unwrap()
    }

    /// A token: `alg` RS256, PS256, ES256 or EdDSA (signed with its current
    /// key), `none`, or `HS256-public` (HMAC keyed with the RSA public key);
    /// `claims` as given.
    pub async fn mint(&self, alg: &str, claims: Value) -> String {
        self.mint_with(json!({"alg": alg, "claims": claims})).await
    }

    /// A token as `/mint` takes it (`kid`, `no_kid` besides `alg` and `claims`).
    pub async fn mint_with(&self, body: Value) -> String {
        self.post("/mint", body).await["token"].as_str().unwrap().to_owned()
    }

    /// Publishes or withdraws key `kid` from the JWKS.
    pub async fn publish(&self, kid: &str, published: bool) {
        self.post("/publish", json!({"kid": kid, "published": published})).await;
    }

    /// A new key for `alg`, published and used from now on; its kid.
    pub async fn rotate(&self, alg: &str) -> String {
        self.post("/rotate", json!({"alg": alg})).await["kid"].as_str().unwrap().to_owned()
    }

    /// The kid of `alg`'s current key.
    pub async fn kid(&self, alg: &str) -> String {
        let v: Value = self.http.get(format!("{}/keys", self.base)).send().await.unwrap().json().await.unwrap();
        v[alg].as_str().unwrap().to_owned()
    }

    /// How many times the JWKS was fetched.
    pub async fn fetches(&self) -> u64 {
        let v: Value = self.http.get(format!("{}/fetches", self.base)).send().await.unwrap().json().await.unwrap();
        v["jwks"].as_u64().unwrap()
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
