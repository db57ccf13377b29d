//! `scripts/bench`: the load generator. Starts the release server
//! (`strongroom serve`) as a separate process on a fresh data directory on
//! 127.0.0.1, prepares fixtures (`strongroom admin`, password-grant logins,
//! approved device codes, a JWT issuer's key in a JWKS file and JWTs it
//! signed), drives 32 keep-alive HTTP/1.1 connections at each workload for a
//! fixed time (the password grant: 16, one user each, since one address may
//! have 20 sign-ins checked at once; the JWT grant: EdDSA JWTs with distinct
//! jtis, each presented once), then stops the server, stores a million grants
//! and a hundred thousand vault entries in its SQLite store through the
//! store's own copier and row codec (so a migration can never leave the
//! seeding behind), restarts it and measures again.
//!
//! The certificate workloads, `cert-p256` and `cert-rsa2048`:
//! a CA of each algorithm (`admin ca create`), a policy folder whose
//! default policy names it, and per iteration one `Certificates/Request`
//! with a user CSR (each for a new P-256 key and a name of its own, all
//! made before the timed window, so the figure is the CA's: the CSR's proof
//! of possession, the policy, the signature, the one write) followed by one
//! `Certificates/Retrieve` of it with the chain; a row's req/s is pairs per
//! second. After each, the bytes the store kept per issued certificate.
//! And `crl`: `GET /crl/NAME.crl` (no token) of an RSA-4096 CA, each request
//! answered the CRL kept since its last signature or a new one.
//!
//! Every figure is also printed as a ratio to `GET /healthz` measured in the
//! same run (shared machines are noisy; ratios travel better than rates), and
//! the large-store figures as a ratio to the small store. After the refresh
//! workload it prints what the refreshes left in the store (bytes per
//! refresh, all told and the event log's, read with SQLite's `dbstat` or
//! PostgreSQL's relation sizes) and the store's size. The targets are
//! reported as met or not met; nothing here fails on a slow machine.
//!
//! Options (`--help` lists them): `--bin PATH` (default `target/release/strongroom`), `--secs N`
//! per workload (default 8), `--grants N` (default 1000000), `--entries N`
//! (default 100000), `--no-scale` (skip the large store), `--pg URL` (then
//! the small-store workloads again on PostgreSQL, in a fresh schema of the
//! database at URL, and the PostgreSQL/SQLite ratios), `--database-url URL`
//! (PostgreSQL instead of SQLite; no large store), `--only W,W` (the
//! small-store workloads named, by the first word of their row, e.g.
//! `--only associate,refresh`; `/healthz` always runs, as the reference;
//! for profiling one workload), `--tail` (refresh and `Associate` only, 60 s
//! each by default and at least 30, with p99.9, the slowest request and the
//! throughput of every second, judged against p99 < 5 ms, p99.9 < 20 ms and
//! max < 50 ms: the 8-second runs cannot tell a quiet run from one that
//! crossed a stall; on SQLite with the disk's own syncs timed beside the
//! load, [`DiskProbe`]). The benchmark's own
//! connection (fixtures, the schema) uses no TLS: give a loopback URL.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::disallowed_methods,
    missing_debug_implementations,
    unreachable_pub
)]

use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use strongroom_app::OsRandom;
use strongroom_core::grant::Grant;
use strongroom_core::grant::device::{DeviceAuthorization, DeviceState};
use strongroom_core::integration::TokenSettings;
use strongroom_core::scope::Scope;
use strongroom_core::time::UnixTime;
use strongroom_core::token::{TokenHash, TokenKind, mint_device_code, mint_user_code};
use strongroom_core::vault::value::ValueType;
use strongroom_core::vault::{FolderPath, VaultId};
use strongroom_keyring::keys::{self, Keys};
use strongroom_store::transfer::{self, Cell, Counters, Row, Table, Transfer};
use strongroom_store::{Store, StoredAssociation, VaultEntry};

const CONNECTIONS: usize = 32;
const LOGINS: usize = 200;
const REFRESH_GRANTS: usize = 64;
const PASSWORD: &str = "benchmark passphrase";
const CLIENT: &str = "bench";
const SCOPE: &str = "restricted:manage";
/// The integration's scope: the vault's, and certificates' for the certificate workloads' tokens.
const INTEGRATION_SCOPE: &str = "restricted:manage;certificate:manage";
/// The certificate workloads' tokens: request (Create on the folder) and retrieve (Read).
const CERT_SCOPE: &str = "certificate:manage";
/// User CSRs made per second of a certificate workload (more than it can use), and at most.
const CSRS_PER_SEC: f64 = 2000.0;
const MAX_CSRS: usize = 40_000;
/// The certificate workloads: each its CA (name, `admin ca create --algorithm`) and the policy
/// folder whose (default) policy names it.
const CERT_CAS: [(Work, &str, &str, &str); 2] = [
    (Work::CertP256, "Bench P256", "p256", "\\VED\\Policy\\Bench Certificates P256"),
    (Work::CertRsa, "Bench RSA2048", "rsa2048", "\\VED\\Policy\\Bench Certificates RSA2048"),
];
/// The CA of the CRL workload.
const CRL_CA: &str = "Bench CRL";
const FOLDER: &str = "\\VED\\Policy\\Bench";
const GROUPS: usize = 8;
/// Device codes stored per second of the device workload (more than it can use).
const DEVICE_CODES_PER_SEC: f64 = 4000.0;
const MAX_DEVICE_CODES: usize = 40_000;
const MIB: f64 = 1024.0;
/// Connections of the password-grant workload: one user each, and at most 20 sign-ins of one address checked at once.
const PASSWORD_CONNECTIONS: usize = 16;
const JWT_ISSUER: &str = "https://bench.issuer.invalid";

/// An Ed25519 key in a JWKS file (`--jwks-file`), and `n` JWTs it signed,
/// each with its own jti, valid for 50 minutes.
fn jwt_fixtures(dir: &Path, n: usize) -> (PathBuf, Vec<String>) {
    use base64::Engine as _;
    use ring::signature::{Ed25519KeyPair, KeyPair as _};
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&ring::rand::SystemRandom::new()).unwrap();
    let key = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    let jwks = dir.join("bench-jwks.json");
    let doc = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "bench", "x": b64(key.public_key().as_ref())}]});
    std::fs::write(&jwks, doc.to_string()).unwrap();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let header = b64(json!({"alg": "EdDSA", "kid": "bench", "typ": "JWT"}).to_string().as_bytes());
    let jwts = (0..n)
        .map(|i| {
            let claims = json!({"iss": JWT_ISSUER, "aud": "strongroom", "sub": "repo:bench/app:ref:refs/heads/main",
                "repository": "bench/app", "iat": now, "exp": now + 3000, "jti": format!("bench-{i}")});
            let input = format!("{header}.{}", b64(claims.to_string().as_bytes()));
            let sig = key.sign(input.as_bytes());
            format!("{input}.{}", b64(sig.as_ref()))
        })
        .collect();
    (jwks, jwts)
}

/// `n` user CSRs (PEM), each for its own new P-256 key and its own name
/// (`{tag}-{i}.bench.example`, as CN and DNS name), made before the timed
/// window on two threads: the certificate workloads measure the CA (the
/// CSR's proof of possession checked, the policy judged, the certificate
/// signed and stored), not the client's key generation.
async fn csr_fixtures(tag: &str, n: usize) -> Vec<String> {
    let make = |tag: String, range: std::ops::Range<usize>| {
        tokio::task::spawn_blocking(move || {
            range
                .map(|i| {
                    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
                    let name = format!("{tag}-{i}.bench.example");
                    let mut params = rcgen::CertificateParams::new(vec![name.clone()]).unwrap();
                    params.distinguished_name.push(rcgen::DnType::CommonName, name);
                    params.serialize_request(&key).unwrap().pem().unwrap()
                })
                .collect::<Vec<String>>()
        })
    };
    let (a, b) = (make(tag.to_owned(), 0..n / 2), make(tag.to_owned(), n / 2..n));
    let mut out = a.await.unwrap();
    out.extend(b.await.unwrap());
    out
}

/// `scripts/bench`'s options (`--help` lists them).
#[derive(clap::Parser)]
#[command(about = "The benchmark's load generator: run it through scripts/bench, which builds the release server first.")]
struct Opts {
    /// The server binary to start.
    #[arg(long, default_value = "target/release/strongroom")]
    bin: PathBuf,
    /// Seconds per workload (1 to 60; with --tail 30 to 600, default 60).
    #[arg(long)]
    secs: Option<f64>,
    /// The tail run: only the write workloads that a stall shows in
    /// (refresh and `Associate`), each long enough to cross many WAL
    /// checkpoints and janitor rounds (default 60 s, at least 30), with
    /// p99.9, the slowest request and the throughput of every second;
    /// judged against p99 < 5 ms, p99.9 < 20 ms and max < 50 ms.
    #[arg(long)]
    tail: bool,
    /// Seconds per workload, as `--secs` and `--tail` make it.
    #[arg(skip)]
    work_secs: f64,
    /// Grants stored for the large-store workloads (at most 10,000,000).
    #[arg(long, default_value_t = 1_000_000)]
    grants: usize,
    /// Vault entries stored for the large-store workloads (at most 1,000,000).
    #[arg(long, default_value_t = 100_000)]
    entries: usize,
    /// Skip the large store.
    #[arg(long = "no-scale", action = clap::ArgAction::SetFalse)]
    scale: bool,
    /// PostgreSQL after SQLite, for the ratios: the small-store workloads
    /// again in a fresh schema of the database at this (loopback) URL.
    #[arg(long)]
    pg: Option<String>,
    /// PostgreSQL instead of SQLite (no large store).
    #[arg(long = "database-url")]
    database_url: Option<String>,
    /// Only these small-store workloads, by the first word of their row
    /// (`associate,refresh`); `/healthz` always runs, as the reference.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
}

/// Seconds per workload, from `--secs` and `--tail`.
fn secs(o: &Opts) -> f64 {
    match (o.tail, o.secs) {
        (false, s) => s.unwrap_or(8.0).clamp(1.0, 60.0),
        (true, s) => s.unwrap_or(60.0).clamp(30.0, 600.0),
    }
}

/// The small-store workloads run: all of them, `--only`'s (by the first word
/// of the row, or its first token: `cert` runs both certificate workloads,
/// `cert-p256` one), or the tail run's.
fn runs(o: &Opts, work: Work) -> bool {
    let name = work.name().to_lowercase();
    let first_word = name.split([' ', '-']).next().unwrap_or("");
    let first_token = name.split(' ').next().unwrap_or("");
    work == Work::Health
        || if o.tail {
            matches!(work, Work::Refresh | Work::Associate)
        } else {
            o.only.is_empty() || o.only.iter().any(|w| w == first_word || w == first_token)
        }
}

/// The tail run's targets, on 32 connections.
const TAIL_P99_MS: f64 = 5.0;
const TAIL_P999_MS: f64 = 20.0;
const TAIL_MAX_MS: f64 = 50.0;
/// Seconds of `/healthz` in the tail run (only the reference of its ratios).
const TAIL_HEALTH_SECS: f64 = 8.0;

fn opts() -> Opts {
    let mut o = <Opts as clap::Parser>::parse();
    o.work_secs = secs(&o);
    o.grants = o.grants.min(10_000_000);
    o.entries = o.entries.min(1_000_000);
    o.only = o.only.iter().map(|w| w.trim().to_lowercase()).filter(|w| !w.is_empty()).collect();
    if o.database_url.is_some() || !o.only.is_empty() || o.tail {
        o.scale = false;
    }
    o
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

// ---------------------------------------------------------------- the server process

struct Server {
    child: Child,
    pid: u32,
    /// Highest VmHWM seen over this process's life (peaks are reset per workload).
    peak_kib: u64,
}

impl Server {
    async fn start(bin: &Path, data: &Path, db: Option<&str>, port: u16, http: &reqwest::Client) -> Server {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(data.with_extension("log")).unwrap();
        let mut cmd = Command::new(bin);
        cmd.arg("serve");
        if let Some(url) = db {
            cmd.arg("--database-url").arg(url);
        }
        let child = cmd
            .arg("--data-dir")
            .arg(data)
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--insecure-http")
            // One access-log line per request would measure the logger.
            .env("STRONGROOM_LOG", "warn")
            .env_remove("STRONGROOM_DATABASE_URL")
            .env_remove("STRONGROOM_CONFIG")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e} (run scripts/bench, which builds it)", bin.display()));
        let pid = child.id();
        let mut server = Server { child, pid, peak_kib: 0 };
        for _ in 0..300 {
            if let Ok(r) = http.get(format!("http://127.0.0.1:{port}/healthz")).send().await
                && r.status().is_success()
            {
                return server;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("the server exited with {status}; see {}", data.with_extension("log").display());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        server.kill();
        panic!("the server did not answer /healthz within 30 s");
    }

    fn status_kib(&self, key: &str) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.pid))
            .ok()
            .and_then(|s| s.lines().find(|l| l.starts_with(key)).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
            .unwrap_or(0)
    }

    fn rss_kib(&self) -> u64 {
        self.status_kib("VmRSS:")
    }

    /// The peak since the last reset; remembered for the whole-run peak.
    fn hwm_kib(&mut self) -> u64 {
        let hwm = self.status_kib("VmHWM:");
        self.peak_kib = self.peak_kib.max(hwm);
        hwm
    }

    /// Resets the kernel's peak-RSS counter (VmHWM) to the current RSS.
    fn reset_peak(&mut self) {
        self.hwm_kib();
        let _ = std::fs::write(format!("/proc/{}/clear_refs", self.pid), "5");
    }

    /// utime + stime in clock ticks.
    fn cpu_ticks(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap_or_default();
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after.split_whitespace().collect();
        // Fields 14 and 15 of stat(5); the first after ')' is field 3.
        let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
        field(14) + field(15)
    }

    /// SIGTERM, then a bounded wait; returns the process's peak RSS.
    async fn stop(mut self) -> u64 {
        self.hwm_kib();
        let _ = Command::new("kill").args(["-TERM", &self.pid.to_string()]).status();
        for _ in 0..200 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return self.peak_kib;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.kill();
        self.peak_kib
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}

fn clock_ticks_per_sec() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse::<f64>().ok())
        .unwrap_or(100.0)
}

/// `strongroom admin ...` on the data directory.
fn admin(bin: &Path, data: &Path, db: Option<&str>, args: &[&str], stdin: &str) {
    let mut cmd = Command::new(bin);
    cmd.arg("admin");
    if let Some(url) = db {
        cmd.arg("--database-url").arg(url);
    }
    let mut child = cmd
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env("STRONGROOM_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "admin {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

// ---------------------------------------------------------------- workloads

#[derive(Clone, Copy, PartialEq, Eq)]
enum Work {
    Health,
    Password,
    Jwt,
    Refresh,
    Device,
    Associate,
    Lookup,
    Verify,
    /// One `Certificates/Request` (a user CSR) and one `Certificates/Retrieve` of it, from a P-256 CA.
    CertP256,
    /// The same from an RSA-2048 CA.
    CertRsa,
    /// `GET /crl/NAME.crl` (no token) of an RSA-4096 CA.
    Crl,
}

impl Work {
    fn name(self) -> &'static str {
        match self {
            Work::Health => "GET /healthz",
            Work::Password => "password grant (16 c.)",
            Work::Jwt => "JWT grant (EdDSA)",
            Work::Refresh => "refresh (rotation)",
            Work::Device => "device-code exchange",
            Work::Associate => "Associate",
            Work::Lookup => "LookupByAssociation",
            Work::Verify => "Verify",
            Work::CertP256 => "cert-p256 Req+Retr",
            Work::CertRsa => "cert-rsa2048 Req+Retr",
            Work::Crl => "crl (RSA-4096 CA)",
        }
    }
}

struct Ctx {
    http: reqwest::Client,
    base: String,
    /// Refresh tokens not yet spent: each request takes one and puts back the one it gets.
    refresh: Mutex<VecDeque<String>>,
    /// Approved device codes, each exchanged once.
    device: Mutex<Vec<String>>,
    /// Signed JWTs, each presented once (a distinct jti each).
    jwts: Mutex<Vec<String>>,
    /// An access token and a vault entry per connection.
    access: Vec<String>,
    entries: Vec<i64>,
    /// A `certificate:manage` token per connection (none when no certificate workload runs).
    cert_access: Vec<String>,
    /// The certificate workloads' policy folders and unused CSRs, each sent once.
    certs: Vec<CertPool>,
}

/// A certificate workload's fixtures: the policy folder its requests name and its CSRs.
struct CertPool {
    work: Work,
    folder: &'static str,
    csrs: Mutex<Vec<String>>,
}

/// Reads the whole answer (so the connection is reused) as JSON.
async fn answer(r: reqwest::Result<reqwest::Response>) -> Option<(u16, Value)> {
    let r = r.ok()?;
    let status = r.status().as_u16();
    let body = r.bytes().await.ok()?;
    Some((status, serde_json::from_slice(&body).unwrap_or(Value::Null)))
}

fn sdk_ok(a: &Option<(u16, Value)>) -> bool {
    matches!(a, Some((200, v)) if v["Result"] == 0)
}

impl Ctx {
    /// One request; `None` when the fixtures ran out.
    async fn one(&self, work: Work, conn: usize, i: usize) -> Option<bool> {
        let url = |p: &str| format!("{}{p}", self.base);
        Some(match work {
            Work::Health => matches!(answer(self.http.get(url("/healthz")).send().await).await, Some((200, _))),
            Work::Refresh => {
                let mut token = None;
                for _ in 0..2000 {
                    token = self.refresh.lock().unwrap().pop_front();
                    if token.is_some() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                let token = token?;
                let a = answer(
                    self.http
                        .post(url("/vedauth/authorize/token"))
                        .json(&json!({"client_id": CLIENT, "refresh_token": token}))
                        .send()
                        .await,
                )
                .await;
                match a {
                    Some((200, v)) if v["refresh_token"].is_string() => {
                        self.refresh.lock().unwrap().push_back(v["refresh_token"].as_str().unwrap_or_default().to_owned());
                        true
                    }
                    _ => false,
                }
            }
            Work::Password => {
                // 16 connections, one user each: one address may have 20 sign-ins checked at once.
                if conn >= PASSWORD_CONNECTIONS {
                    return None;
                }
                let body = json!({"client_id": CLIENT, "username": format!("pw{conn}"), "password": PASSWORD, "scope": SCOPE});
                matches!(answer(self.http.post(url("/vedauth/authorize/oauth")).json(&body).send().await).await,
                    Some((200, v)) if v["access_token"].is_string())
            }
            Work::Jwt => {
                let jwt = self.jwts.lock().unwrap().pop()?;
                let body = json!({"client_id": CLIENT, "jwt": jwt, "scope": SCOPE});
                matches!(answer(self.http.post(url("/vedauth/authorize/jwt")).json(&body).send().await).await,
                    Some((200, v)) if v["access_token"].is_string())
            }
            Work::Device => {
                let code = self.device.lock().unwrap().pop()?;
                let body = json!({"client_id": CLIENT, "grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": code});
                matches!(answer(self.http.post(url("/vedauth/authorize/token")).json(&body).send().await).await,
                    Some((200, v)) if v["access_token"].is_string())
            }
            Work::Associate => {
                let body = json!({"VaultID": self.entries[conn], "Name": format!("n{}", i % 16), "StringValue": format!("v{conn}-{i}")});
                let r = self.http.post(url("/vedsdk/SecretStore/Associate")).bearer_auth(&self.access[conn]).json(&body).send().await;
                sdk_ok(&answer(r).await)
            }
            Work::Lookup => {
                let body = json!({"Name": "Group", "StringValue": format!("g{}", (conn + i) % GROUPS)});
                let r =
                    self.http.post(url("/vedsdk/SecretStore/LookupByAssociation")).bearer_auth(&self.access[conn]).json(&body).send().await;
                let a = answer(r).await;
                sdk_ok(&a) && a.is_some_and(|(_, v)| v["VaultIDs"].as_array().is_some_and(|ids| !ids.is_empty()))
            }
            Work::Verify => {
                let r = self.http.get(url("/vedauth/authorize/verify")).bearer_auth(&self.access[conn]).send().await;
                matches!(answer(r).await, Some((200, _)))
            }
            Work::CertP256 | Work::CertRsa => {
                // As cert-manager and the vcert CLI do it with a CSR of their own: the
                // Request (issued synchronously), then the Retrieve with the chain.
                let pool = self.certs.iter().find(|p| p.work == work)?;
                let csr = pool.csrs.lock().unwrap().pop()?;
                let token = &self.cert_access[conn];
                let body = json!({"PolicyDN": pool.folder, "PKCS10": csr, "CertificateType": "AUTO", "DisableAutomaticRenewal": true,
                    "Reenable": true, "Origin": "strongroom bench"});
                let r = self.http.post(url("/vedsdk/certificates/request")).bearer_auth(token).json(&body).send().await;
                let dn = match answer(r).await {
                    Some((200, v)) => v["CertificateDN"].as_str().unwrap_or_default().to_owned(),
                    _ => return Some(false),
                };
                let body = json!({"CertificateDN": dn, "Format": "base64", "IncludeChain": true});
                let r = self.http.post(url("/vedsdk/certificates/retrieve")).bearer_auth(token).json(&body).send().await;
                matches!(answer(r).await, Some((200, v)) if v["CertificateData"].as_str().is_some_and(|d| !d.is_empty()))
            }
            Work::Crl => {
                let r = self.http.get(url(&format!("/crl/{}.crl", CRL_CA.to_lowercase().replace(' ', "%20")))).send().await;
                match r {
                    Ok(r) if r.status() == 200 => r.bytes().await.is_ok_and(|b| b.first() == Some(&0x30)),
                    _ => false,
                }
            }
        })
    }
}

#[derive(Clone)]
struct Stats {
    name: &'static str,
    requests: usize,
    errors: usize,
    rate: f64,
    p50_ms: f64,
    p99_ms: f64,
    p999_ms: f64,
    max_ms: f64,
    cpu_ms: f64,
    peak_kib: u64,
    /// Requests completed in each second of the run, and the slowest of them (µs).
    per_sec: Vec<(u32, u32)>,
    /// The disk's own fsyncs beside the run (the tail run on SQLite).
    disk: Option<Disk>,
}

/// The disk alone: a 4 KiB write and `fdatasync` of a file of its own, every
/// 20 ms, on the data directory's file system, beside the load (a few
/// dozen syncs a second against the server's hundreds). A durable commit
/// cannot return before its sync does, so a second whose slowest request
/// stalled while this file's sync stalled too is the device's stall.
#[derive(Clone, Default)]
struct Disk {
    /// Every sync's time (µs), sorted.
    lat: Vec<u32>,
    /// The slowest sync of each second (µs).
    per_sec: Vec<u32>,
}

/// A thread timing the disk's syncs until [`DiskProbe::finish`].
struct DiskProbe {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Disk>,
}

impl DiskProbe {
    fn start(dir: &Path) -> DiskProbe {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let path = dir.join("fsync-probe");
        let halt = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut f = std::fs::File::create(&path).unwrap();
            let (start, mut disk) = (Instant::now(), Disk::default());
            while !halt.load(std::sync::atomic::Ordering::Relaxed) {
                let t0 = Instant::now();
                std::io::Seek::rewind(&mut f).unwrap();
                f.write_all(&[7u8; 4096]).unwrap();
                f.sync_data().unwrap();
                let us = t0.elapsed().as_micros() as u32;
                let sec = t0.duration_since(start).as_secs() as usize;
                if disk.per_sec.len() <= sec {
                    disk.per_sec.resize(sec + 1, 0);
                }
                disk.per_sec[sec] = disk.per_sec[sec].max(us);
                disk.lat.push(us);
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = std::fs::remove_file(&path);
            disk.lat.sort_unstable();
            disk
        });
        DiskProbe { stop, thread }
    }

    fn finish(self) -> Disk {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

impl Disk {
    fn summary(&self) -> String {
        format!(
            "{} syncs, p50 {:.2} ms, p99 {:.2} ms, max {:.1} ms",
            self.lat.len(),
            percentile_ms(&self.lat, 0.50),
            percentile_ms(&self.lat, 0.99),
            percentile_ms(&self.lat, 1.0)
        )
    }
}

/// The `q` quantile (1.0: the largest) of `sorted` times in µs, in ms; 0 for none.
fn percentile_ms(sorted: &[u32], q: f64) -> f64 {
    let i = ((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1));
    sorted.get(i).map_or(0.0, |&us| f64::from(us) / 1000.0)
}

async fn measure(ctx: &Arc<Ctx>, server: &mut Server, work: Work, secs: f64, ticks_per_sec: f64) -> Stats {
    server.reset_peak();
    let cpu0 = server.cpu_ticks();
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(secs);
    let tasks: Vec<_> = (0..CONNECTIONS)
        .map(|conn| {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                let (mut lat, mut errors, mut per_sec) = (Vec::new(), 0usize, Vec::<(u32, u32)>::new());
                let mut i = 0;
                while Instant::now() < deadline {
                    let t0 = Instant::now();
                    let Some(ok) = ctx.one(work, conn, i).await else { break };
                    let us = t0.elapsed().as_micros() as u32;
                    lat.push(us);
                    let sec = start.elapsed().as_secs() as usize;
                    if per_sec.len() <= sec {
                        per_sec.resize(sec + 1, (0, 0));
                    }
                    per_sec[sec] = (per_sec[sec].0 + 1, per_sec[sec].1.max(us));
                    errors += usize::from(!ok);
                    i += 1;
                }
                (lat, errors, per_sec)
            })
        })
        .collect();
    let (mut lat, mut errors, mut per_sec) = (Vec::new(), 0, Vec::<(u32, u32)>::new());
    for t in tasks {
        let (l, e, p) = t.await.unwrap();
        lat.extend(l);
        errors += e;
        if per_sec.len() < p.len() {
            per_sec.resize(p.len(), (0, 0));
        }
        for (all, (n, worst)) in per_sec.iter_mut().zip(p) {
            *all = (all.0 + n, all.1.max(worst));
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let cpu = server.cpu_ticks().saturating_sub(cpu0) as f64 / ticks_per_sec;
    lat.sort_unstable();
    let requests = lat.len();
    Stats {
        name: work.name(),
        requests,
        errors,
        rate: requests as f64 / elapsed,
        p50_ms: percentile_ms(&lat, 0.50),
        p99_ms: percentile_ms(&lat, 0.99),
        p999_ms: percentile_ms(&lat, 0.999),
        max_ms: percentile_ms(&lat, 1.0),
        cpu_ms: cpu * 1000.0 / requests.max(1) as f64,
        peak_kib: server.hwm_kib(),
        per_sec,
        disk: None,
    }
}

fn header(reference: &str) {
    println!(
        "{:<22} {:>9} {:>6} {:>8} {:>6} {:>8} {:>6} {:>8} {:>8} {:>7} {:>9} {:>6} {:>8} {:>6}",
        "workload",
        "req/s",
        reference,
        "p50 ms",
        reference,
        "p99 ms",
        reference,
        "p99.9 ms",
        "max ms",
        "errors",
        "cpu ms/rq",
        reference,
        "peak MiB",
        reference
    );
}

fn row(s: &Stats, r: &Stats) {
    println!(
        "{:<22} {:>9.0} {:>6.2} {:>8.2} {:>6.2} {:>8.2} {:>6.2} {:>8.2} {:>8.1} {:>7} {:>9.3} {:>6.2} {:>8.1} {:>6.2}",
        s.name,
        s.rate,
        s.rate / r.rate,
        s.p50_ms,
        s.p50_ms / r.p50_ms,
        s.p99_ms,
        s.p99_ms / r.p99_ms,
        s.p999_ms,
        s.max_ms,
        s.errors,
        s.cpu_ms,
        s.cpu_ms / r.cpu_ms,
        s.peak_kib as f64 / MIB,
        s.peak_kib as f64 / r.peak_kib.max(1) as f64
    );
}

/// The tail run's view of a workload: its percentiles, then the requests
/// and the slowest request of every second, so a stall shows as a dip.
fn tail_report(label: &str, s: &Stats) {
    println!(
        "{} ({label}): {:.0}/s, p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.1} ms, {} errors",
        s.name, s.rate, s.p50_ms, s.p99_ms, s.p999_ms, s.max_ms, s.errors
    );
    let whole = &s.per_sec[..s.per_sec.len().saturating_sub(1)]; // the last second is the tail end of the run
    if let Some((sec, (n, _))) = whole.iter().enumerate().min_by_key(|(_, (n, _))| *n) {
        let mean = whole.iter().map(|(n, _)| f64::from(*n)).sum::<f64>() / whole.len().max(1) as f64;
        println!("  lowest second: {n} requests in second {sec} ({:.2} of the mean second)", f64::from(*n) / mean.max(1.0));
    }
    let ms = |us: u32| format!("{:.0}", f64::from(us) / 1000.0);
    let mut rows: Vec<(&str, Vec<String>)> = vec![
        ("requests", whole.iter().map(|&(n, _)| n.to_string()).collect()),
        ("slowest ms", whole.iter().map(|&(_, us)| ms(us)).collect()),
    ];
    if let Some(d) = &s.disk {
        rows.push(("disk ms", d.per_sec.iter().take(whole.len()).map(|&us| ms(us)).collect()));
    }
    for (what, cells) in rows {
        for (i, chunk) in cells.chunks(15).enumerate() {
            println!("  {:<11} s{:<3} {}", if i == 0 { what } else { "" }, i * 15, chunk.join(" "));
        }
    }
    if let Some(d) = &s.disk {
        // The seconds the target's max was missed in, and how many of them the disk's own sync stalled in too.
        let slow: Vec<usize> = (0..whole.len()).filter(|&i| f64::from(whole[i].1) / 1000.0 >= TAIL_MAX_MS).collect();
        // A request is counted in the second it ended in: the sync may have stalled in the second before.
        let stalled = |i: usize| d.per_sec.get(i).is_some_and(|&us| f64::from(us) / 1000.0 >= TAIL_MAX_MS / 2.0);
        let both = slow.iter().filter(|&&i| stalled(i) || (i > 0 && stalled(i - 1))).count();
        println!(
            "  the disk alone beside it: {}; of the {} seconds with a request over {TAIL_MAX_MS} ms, {both} had a probe sync over {} ms in it or the second before",
            d.summary(),
            slow.len(),
            TAIL_MAX_MS / 2.0
        );
    }
}

fn target(what: &str, met: bool) {
    println!("  target {what}: {}", if met { "met" } else { "NOT MET" });
}

// ---------------------------------------------------------------- fixtures

async fn login(http: &reqwest::Client, base: &str, scope: &str) -> (String, String) {
    let body = json!({"client_id": CLIENT, "username": "bench", "password": PASSWORD, "scope": scope});
    let v: Value = http.post(format!("{base}/vedauth/authorize/oauth")).json(&body).send().await.unwrap().json().await.unwrap();
    let s = |k: &str| v[k].as_str().unwrap_or_else(|| panic!("login failed: {v}")).to_owned();
    (s("access_token"), s("refresh_token"))
}

async fn sdk(http: &reqwest::Client, base: &str, token: &str, call: &str, body: Value) -> Value {
    let v: Value =
        http.post(format!("{base}/vedsdk/SecretStore/{call}")).bearer_auth(token).json(&body).send().await.unwrap().json().await.unwrap();
    assert_eq!(v["Result"], 0, "{call} failed: {v}");
    v
}

/// The keys the server at `data` derived from its master key file.
fn master_keys(data: &Path) -> Keys {
    keys::load_or_create(data, None, &OsRandom).unwrap().0
}

/// The store the server at `data` uses (`url`, or its SQLite file), opened
/// as the server opens it, with its copier side.
async fn open_store(data: &Path, url: Option<&str>) -> (Arc<dyn Store>, Arc<dyn Transfer>) {
    let sqlite = data.join("strongroom.db");
    let url = url.map_or_else(|| sqlite.to_str().unwrap().to_owned(), str::to_owned);
    transfer::open(&url).await.unwrap_or_else(|e| panic!("opening the store: {e}"))
}

/// Approved device codes, stored as the approval page would leave them,
/// through the store's own row codec (one transaction; no events, as no
/// one approved them on a page).
async fn approved_device_codes(data: &Path, url: Option<&str>, n: usize) -> Vec<String> {
    let keys = master_keys(data);
    let (store, copier) = open_store(data, url).await;
    let (user, _) = store.user_by_name("bench".into()).await.unwrap().unwrap();
    let now = UnixTime::from_millis(now_ms());
    let mut codes = Vec::with_capacity(n);
    let mut rows = Vec::with_capacity(n);
    // User codes are unique among live codes: 32,000 drawn from 20^8 would
    // repeat one in about one run of fifty (and the load would fail).
    let mut user_codes = std::collections::HashSet::with_capacity(n);
    while codes.len() < n {
        let code = mint_device_code(&OsRandom);
        let user_code = mint_user_code(&OsRandom);
        if !user_codes.insert(user_code.expose().to_owned()) {
            continue;
        }
        let d = DeviceAuthorization {
            code_hash: keys.token.hash(TokenKind::DeviceCode, code.expose()),
            user_code_hash: keys.token.hash(TokenKind::UserCode, user_code.expose()),
            client_id: CLIENT.into(),
            scope: Scope::parse(SCOPE).unwrap(),
            state: DeviceState::Approved { user_id: user.id.clone() },
            created_at: now,
            expires_at: now.plus_secs(3600),
            interval_secs: 5,
            last_poll_at: None,
            version: 0,
        };
        rows.push(transfer::device_row(&d));
        codes.push(code.expose().to_owned());
    }
    load_pages(&*copier, rows).await;
    codes
}

/// A fast generator of bytes that no real token hash will ever equal
/// (seeded from the OS; not for secrets).
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        for chunk in out.chunks_mut(8) {
            chunk.copy_from_slice(&self.next().to_le_bytes()[..chunk.len()]);
        }
        out
    }
    fn hash(&mut self) -> TokenHash {
        TokenHash::from_slice(&self.bytes::<32>()).unwrap()
    }
}

/// Rows per transaction of the large store's load.
const SEED_PAGE: usize = 20_000;

/// Loads `rows` (each a table's row, in dependency order) a page per table at a time.
async fn load_pages(copier: &dyn Transfer, rows: Vec<(&'static Table, Row)>) {
    let mut tables: Vec<(&'static Table, Vec<Row>)> = Vec::new();
    for (table, row) in rows {
        match tables.iter_mut().find(|(t, _)| t.name == table.name) {
            Some((_, rows)) => rows.push(row),
            None => tables.push((table, vec![row])),
        }
    }
    for (table, mut rows) in tables {
        // In key order: the B-trees fill far faster than from random keys.
        rows.sort_by(|a, b| a[..table.key].iter().map(Cell::sort_key).cmp(b[..table.key].iter().map(Cell::sort_key)));
        copier.load(table, rows).await.unwrap();
    }
}

/// Stores `grants` live grants (each with a token pair) and `entries` vault entries (one owner, two associations each) in
/// the stopped server's store, as rows of the store's own codec through its
/// copier: every column the current schema has, written as the store writes
/// it.
async fn seed(data: &Path, grants: usize, entries: usize) {
    let (store, copier) = open_store(data, None).await;
    let (user, _) = store.user_by_name("bench".into()).await.unwrap().unwrap();
    let key_id = store.data_keys().await.unwrap().iter().map(|k| k.id).max().unwrap();
    let mut seed = [0u8; 8];
    getrandom::getrandom(&mut seed).unwrap();
    let mut noise = Noise(u64::from_le_bytes(seed));
    let now = UnixTime::from_millis(now_ms());
    // An hour's access tokens, 90 days' grants.
    let settings = TokenSettings::default();
    let scope = Scope::parse(SCOPE).unwrap();
    let mut done = 0;
    while done < grants {
        let mut rows = Vec::with_capacity(3 * SEED_PAGE);
        for _ in done..(done + SEED_PAGE).min(grants) {
            let mut grant = Grant::new(&OsRandom, CLIENT, user.id.clone(), scope.clone(), now, settings);
            grant.pair.refresh = Some(noise.hash());
            grant.pair.access = Some(noise.hash());
            rows.push(transfer::grant_row(&grant));
        }
        load_pages(&*copier, rows).await;
        done = (done + SEED_PAGE).min(grants);
    }
    let counters = copier.counters().await.unwrap();
    let first = counters.next_vault_id;
    let folder = FolderPath::parse(FOLDER).unwrap();
    let mut rows = Vec::with_capacity(4 * SEED_PAGE);
    for id in first..first + entries as i64 {
        let entry = VaultEntry {
            vault_id: VaultId(id),
            vault_type: 32,
            key_name: "Software:Default".into(),
            key_id,
            sealed: noise.bytes::<64>().to_vec(),
            owners: vec![folder.clone()],
            created_at: now,
        };
        rows.extend(transfer::entry_rows(&entry));
        for name in ["Purpose", "Serial"] {
            let a = StoredAssociation {
                name: name.into(),
                value_type: ValueType::String,
                key_id,
                sealed: noise.bytes::<48>().to_vec(),
                lookup: noise.bytes::<32>(),
            };
            rows.push(transfer::association_row(entry.vault_id, &a));
        }
        if rows.len() >= 4 * SEED_PAGE {
            load_pages(&*copier, std::mem::take(&mut rows)).await;
        }
    }
    load_pages(&*copier, rows).await;
    copier.set_counters(Counters { next_vault_id: first + entries as i64, ..counters }).await.unwrap();
}

// ---------------------------------------------------------------- the run

/// The database of a run: SQLite in the data directory, or a fresh schema
/// on PostgreSQL (dropped at the end).
struct Db {
    /// What the server and `admin` get as `--database-url` (`None`: SQLite).
    url: Option<String>,
    /// The benchmark's own PostgreSQL connection, and the schema.
    pg: Option<(tokio_postgres::Client, String)>,
}

impl Db {
    fn sqlite() -> Db {
        Db { url: None, pg: None }
    }

    async fn postgres(url: &str) -> Db {
        // The server's own parameters mean nothing to the driver, and the
        // benchmark's connection (fixtures, the schema) is plain.
        let own = match url.split_once('?') {
            Some((base, query)) => {
                let kept: Vec<&str> = query.split('&').filter(|p| !p.starts_with("pool_max_size=") && !p.starts_with("sslmode=")).collect();
                if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) }
            }
            None => url.to_owned(),
        };
        let (client, conn) =
            tokio_postgres::connect(&own, tokio_postgres::NoTls).await.unwrap_or_else(|e| panic!("connecting to PostgreSQL: {e}"));
        tokio::spawn(conn);
        let schema = format!("bench_{}_{}", std::process::id(), now_ms());
        client.batch_execute(&format!("CREATE SCHEMA {schema}; SET search_path = {schema}")).await.unwrap();
        let sep = if url.contains('?') { '&' } else { '?' };
        Db { url: Some(format!("{url}{sep}options=-c%20search_path%3D{schema}")), pg: Some((client, schema)) }
    }

    fn label(&self) -> &'static str {
        if self.pg.is_some() { "PostgreSQL" } else { "SQLite, synchronous=FULL" }
    }

    /// Bytes of every table and index of the store, by name: SQLite's
    /// pages as `dbstat` counts them (read beside the running server),
    /// PostgreSQL's relation sizes.
    async fn sizes(&self, data: &Path) -> Vec<(String, u64)> {
        match &self.pg {
            Some((client, schema)) => client
                .query(
                    "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                     WHERE n.nspname = $1 AND c.relkind IN ('r', 'i', 't')",
                    &[schema],
                )
                .await
                .unwrap()
                .iter()
                .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1).unsigned_abs()))
                .collect(),
            None => {
                let c =
                    rusqlite::Connection::open_with_flags(data.join("strongroom.db"), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
                let mut st = c.prepare("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").unwrap();
                st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?.unsigned_abs())))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect()
            }
        }
    }

    async fn drop_schema(&self) {
        if let Some((client, schema)) = &self.pg {
            let _ = client.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).await;
        }
    }
}

/// What the refresh workload left in the store: bytes per refresh, all
/// told and those of the event log (its table and indexes), and the
/// store's size after it.
#[derive(Clone, Copy, Default)]
struct Growth {
    per_op: f64,
    events_per_op: f64,
    store_bytes: u64,
}

impl Growth {
    fn of(before: &[(String, u64)], after: &[(String, u64)], refreshes: usize) -> Growth {
        let total = |v: &[(String, u64)], f: &dyn Fn(&str) -> bool| v.iter().filter(|(n, _)| f(n)).map(|(_, b)| *b as f64).sum::<f64>();
        let events = |n: &str| n == "events" || n.starts_with("events_") || n.starts_with("sqlite_autoindex_events");
        let all = |_: &str| true;
        let n = refreshes.max(1) as f64;
        Growth {
            per_op: (total(after, &all) - total(before, &all)) / n,
            events_per_op: (total(after, &events) - total(before, &events)) / n,
            store_bytes: total(after, &all) as u64,
        }
    }

    /// The line of a certificate workload: its Request+Retrieve pairs each issued one certificate.
    fn print_certificates(&self, work: &str, label: &str, issued: usize) {
        println!(
            "storage ({work}, {label}): {issued} certificates issued kept {:.0} bytes each (the object's folder and row, \
             the certificate's and the CSR's sealed vault entries and owners, two events), of which the event log {:.0}; \
             the store holds {:.1} MiB after them",
            self.per_op,
            self.events_per_op,
            self.store_bytes as f64 / MIB / MIB
        );
    }

    fn print(&self, label: &str, refreshes: usize) {
        println!(
            "storage ({label}): {refreshes} refreshes kept {:.0} bytes each, of which the event log {:.0} and everything else {:.0}; \
             the store holds {:.1} MiB after them",
            self.per_op,
            self.events_per_op,
            self.per_op - self.events_per_op,
            self.store_bytes as f64 / MIB / MIB
        );
    }
}

/// The small-store run on one database: fixtures, then every workload.
struct Run {
    small: Vec<(Work, Stats)>,
    growth: Growth,
    /// What each certificate workload kept per certificate it issued, and how many it issued.
    cert_growth: Vec<(Work, Growth, usize)>,
    server: Server,
    ctx: Arc<Ctx>,
    data: PathBuf,
    port: u16,
    db: Db,
}

async fn small_store(o: &Opts, bin: &Path, data: PathBuf, db: Db, http: &reqwest::Client, tps: f64) -> Run {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    let url = db.url.clone();
    let url = url.as_deref();
    let run_start = Instant::now();

    println!("strongroom bench: {CONNECTIONS} connections, {} s per workload, release server on {base} ({})", o.work_secs, db.label());
    let mut server = Server::start(bin, &data, url, port, http).await;
    let idle = server.rss_kib();
    for args in [
        &[
            "integrations",
            "create",
            CLIENT,
            "--name",
            "Bench",
            "--scope",
            INTEGRATION_SCOPE,
            "--allow-all-users",
            "--password-grant",
            "true",
        ][..],
        &["folders", "create", FOLDER],
    ] {
        admin(bin, &data, url, args, "");
    }
    admin(bin, &data, url, &["users", "create", "bench"], &format!("{PASSWORD}\n"));
    for conn in 0..PASSWORD_CONNECTIONS {
        admin(bin, &data, url, &["users", "create", &format!("pw{conn}")], &format!("{PASSWORD}\n"));
    }
    // As many one-use fixtures as the workload can use (none when it does not run).
    let fixtures = |w: Work| if runs(o, w) { ((o.work_secs * DEVICE_CODES_PER_SEC) as usize).min(MAX_DEVICE_CODES) } else { 0 };
    let (jwks, jwts) = jwt_fixtures(data.parent().unwrap_or(&data), fixtures(Work::Jwt));
    let jwks = jwks.to_str().unwrap().to_owned();
    admin(
        bin,
        &data,
        url,
        &["jwt-issuers", "set", "bench", "--issuer", JWT_ISSUER, "--jwks-file", &jwks, "--audience", "strongroom", "--algorithms", "EdDSA"],
        "",
    );
    admin(
        bin,
        &data,
        url,
        &["mappings", "set-jwt", "bench", "--issuer", "bench", "--claim", "repository=bench/*", "--client", CLIENT, "--scope", SCOPE],
        "",
    );
    admin(bin, &data, url, &["rights", "grant", FOLDER, "bench", "--rights", "read,write"], "");

    // Password-grant logins: 5 at a time, the most one user may sign in at
    // once from one address (its guessing limit's slots, book/src/security/limits.md).
    let t = Instant::now();
    let mut logins = Vec::with_capacity(LOGINS);
    for _ in 0..LOGINS / 5 {
        let batch: Vec<_> = (0..5)
            .map(|_| {
                let (http, base) = (http.clone(), base.clone());
                tokio::spawn(async move { login(&http, &base, SCOPE).await })
            })
            .collect();
        for t in batch {
            logins.push(t.await.unwrap());
        }
    }
    let login_secs = t.elapsed().as_secs_f64();
    println!(
        "server RSS: {:.1} MiB idle; after {LOGINS} password logins ({:.0}/s): {:.1} MiB now, {:.1} MiB peak",
        idle as f64 / MIB,
        LOGINS as f64 / login_secs,
        server.rss_kib() as f64 / MIB,
        server.hwm_kib() as f64 / MIB
    );

    // A vault entry per connection, each in one of GROUPS lookup groups.
    let mut entries = Vec::new();
    for (conn, (access, _)) in logins[REFRESH_GRANTS..REFRESH_GRANTS + CONNECTIONS].iter().enumerate() {
        let body =
            json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": FOLDER, "Base64Data": "c2VjcmV0"});
        let id = sdk(http, &base, access, "Add", body).await["VaultID"].as_i64().unwrap();
        sdk(http, &base, access, "Associate", json!({"VaultID": id, "Name": "Group", "StringValue": format!("g{}", conn % GROUPS)})).await;
        entries.push(id);
    }
    let codes = fixtures(Work::Device);
    let device = if codes > 0 { approved_device_codes(&data, url, codes).await } else { Vec::new() };
    // The certificate workloads: a CA each (P-256, RSA-2048, sealed by the key
    // ring), a policy folder whose default policy names it, Create and Read
    // there for the user, a `certificate:manage` token per connection, and
    // distinct user CSRs (P-256 keys), each requested once.
    let mut certs = Vec::new();
    for (work, ca, algorithm, folder) in CERT_CAS {
        if !runs(o, work) {
            continue;
        }
        admin(bin, &data, url, &["ca", "create", ca, "--algorithm", algorithm], "");
        admin(bin, &data, url, &["folders", "create", folder], "");
        admin(bin, &data, url, &["policy", "set", folder, "--issuing-ca", ca], "");
        admin(bin, &data, url, &["rights", "grant", folder, "bench", "--rights", "view,read,create"], "");
        let n = ((o.work_secs * CSRS_PER_SEC) as usize).min(MAX_CSRS);
        let tag = work.name().split(' ').next().unwrap_or("cert");
        certs.push(CertPool { work, folder, csrs: Mutex::new(csr_fixtures(tag, n).await) });
    }
    if runs(o, Work::Crl) {
        admin(bin, &data, url, &["ca", "create", CRL_CA, "--algorithm", "rsa4096"], "");
    }
    let mut cert_access = Vec::new();
    if !certs.is_empty() {
        for _ in 0..CONNECTIONS {
            cert_access.push(login(http, &base, CERT_SCOPE).await.0);
        }
    }
    let csrs: usize = certs.iter().map(|p| p.csrs.lock().unwrap().len()).sum();
    let ctx = Arc::new(Ctx {
        http: http.clone(),
        base: base.clone(),
        refresh: Mutex::new(logins[..REFRESH_GRANTS].iter().map(|(_, r)| r.clone()).collect()),
        device: Mutex::new(device),
        jwts: Mutex::new(jwts),
        access: logins[REFRESH_GRANTS..REFRESH_GRANTS + CONNECTIONS].iter().map(|(a, _)| a.clone()).collect(),
        entries,
        cert_access,
        certs,
    });
    // Planner statistics for the freshly filled schema, as pgbench does
    // after loading: without them PostgreSQL plans from empty tables' guesses
    // (here it walked all of the one user's grants to find a token),
    // something a running database's autovacuum corrects within a minute.
    if let Some((client, schema)) = &db.pg {
        let tables = client.query("SELECT tablename FROM pg_tables WHERE schemaname = $1", &[schema]).await.unwrap();
        for t in tables {
            client.batch_execute(&format!("ANALYZE {schema}.{}", t.get::<_, String>(0))).await.unwrap();
        }
    }
    println!("fixtures ready after {:.1} s ({codes} approved device codes, {csrs} CSRs)\n", run_start.elapsed().as_secs_f64());
    if o.tail && db.pg.is_none() {
        // The device before any load: a disk that stalls on its own puts a floor under the durable writes' max.
        let probe = DiskProbe::start(&data);
        tokio::time::sleep(Duration::from_secs(5)).await;
        println!("the disk alone, the server idle, 5 s: {}\n", probe.finish().summary());
    }

    let mut small = Vec::new();
    let mut growth = Growth::default();
    let mut cert_growth = Vec::new();
    for work in [
        Work::Health,
        Work::Password,
        Work::Jwt,
        Work::Refresh,
        Work::Device,
        Work::Associate,
        Work::Lookup,
        Work::Verify,
        Work::CertP256,
        Work::CertRsa,
        Work::Crl,
    ] {
        if !runs(o, work) {
            continue;
        }
        let is_cert = matches!(work, Work::CertP256 | Work::CertRsa);
        let before = if work == Work::Refresh || is_cert { db.sizes(&data).await } else { Vec::new() };
        let secs = if o.tail && work == Work::Health { TAIL_HEALTH_SECS } else { o.work_secs };
        let probe = (o.tail && db.pg.is_none() && work != Work::Health).then(|| DiskProbe::start(&data));
        let mut stats = measure(&ctx, &mut server, work, secs, tps).await;
        stats.disk = probe.map(DiskProbe::finish);
        if o.tail && db.pg.is_none() {
            let size = |suffix: &str| std::fs::metadata(data.join(format!("strongroom.db{suffix}"))).map_or(0, |m| m.len());
            println!(
                "after {}: database file {:.1} MiB, WAL file {:.1} MiB",
                work.name(),
                size("") as f64 / MIB / MIB,
                size("-wal") as f64 / MIB / MIB
            );
        }
        if work == Work::Refresh {
            growth = Growth::of(&before, &db.sizes(&data).await, stats.requests - stats.errors);
            growth.print(db.label(), stats.requests - stats.errors);
        }
        if is_cert {
            let issued = stats.requests - stats.errors;
            let g = Growth::of(&before, &db.sizes(&data).await, issued);
            g.print_certificates(work.name(), db.label(), issued);
            if ctx.certs.iter().any(|p| p.work == work && p.csrs.lock().unwrap().is_empty()) {
                println!("  (the workload ran out of CSRs: raise CSRS_PER_SEC in bench.rs)");
            }
            cert_growth.push((work, g, issued));
        }
        small.push((work, stats));
    }
    let hz = get(&small, Work::Health);
    println!("small store ({}); ratios (x hz) to GET /healthz of this run", db.label());
    header("x hz");
    for (_, s) in &small {
        row(s, &hz);
    }
    if o.tail {
        println!();
        for (w, s) in &small {
            if *w != Work::Health {
                tail_report(db.label(), s);
            }
        }
    }
    Run { small, growth, cert_growth, server, ctx, data, port, db }
}

/// The certificate workloads in a few lines per database: Request+Retrieve
/// pairs per second, p99, and the bytes kept per issued certificate.
/// One database's certificate figures: its label, its rows, and what each certificate workload kept.
type CertRun<'a> = (&'a str, &'a [(Work, Stats)], &'a [(Work, Growth, usize)]);

fn certificates_summary(runs: &[CertRun<'_>]) {
    let mut first = true;
    for (label, stats, growth) in runs {
        for (work, g, issued) in growth.iter() {
            let Some((_, s)) = stats.iter().find(|(w, _)| w == work) else { continue };
            if first {
                println!(
                    "\ncertificates ({CONNECTIONS} connections; a pair is one Certificates/Request with a user CSR and one Retrieve of it)"
                );
                first = false;
            }
            println!(
                "  {} on {label}: {:.0} pairs/s, p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.1} ms, {} errors; {issued} issued, \
                 {:.0} bytes kept per certificate ({:.0} of them the event log)",
                s.name, s.rate, s.p50_ms, s.p99_ms, s.p999_ms, s.max_ms, s.errors, g.per_op, g.events_per_op
            );
        }
    }
}

fn get(v: &[(Work, Stats)], w: Work) -> Stats {
    v.iter().find(|(x, _)| *x == w).map(|(_, s)| s.clone()).unwrap()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let o = opts();
    let bin = std::fs::canonicalize(&o.bin).unwrap_or_else(|e| panic!("{}: {e} (run scripts/bench, which builds it)", o.bin.display()));
    let tmp = tempfile::tempdir().unwrap();
    let http = reqwest::Client::builder()
        .no_proxy()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(2 * CONNECTIONS)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let tps = clock_ticks_per_sec();
    let run_start = Instant::now();

    let db = match &o.database_url {
        Some(url) => Db::postgres(url).await,
        None => Db::sqlite(),
    };
    let Run { small, growth, cert_growth, server, ctx, data, port, db } =
        small_store(&o, &bin, tmp.path().join("data"), db, &http, tps).await;
    let label = db.label();
    let mut peak = server.stop().await;
    db.drop_schema().await;

    let mut scale = Vec::new();
    if o.scale {
        let t = Instant::now();
        seed(&data, o.grants, o.entries).await;
        println!(
            "\nstored {} grants (each with a token pair) and {} vault entries in {:.1} s",
            o.grants,
            o.entries,
            t.elapsed().as_secs_f64()
        );
        let mut server = Server::start(&bin, &data, None, port, &http).await;
        for work in [Work::Health, Work::Refresh, Work::Associate, Work::Verify] {
            scale.push((work, measure(&ctx, &mut server, work, o.work_secs, tps).await));
        }
        let hz = get(&scale, Work::Health);
        println!("large store ({} grants, {} entries); ratios (x hz) to its own GET /healthz", o.grants, o.entries);
        header("x hz");
        for (_, s) in &scale {
            row(s, &hz);
        }
        println!("large store as a ratio (x sm) to the small store");
        header("x sm");
        for (w, s) in &scale {
            row(s, &get(&small, *w));
        }
        peak = peak.max(server.stop().await);
    }

    let mut on_pg = Vec::new();
    let mut pg_certs = Vec::new();
    if let Some(url) = &o.pg {
        println!();
        let run = small_store(&o, &bin, tmp.path().join("pg-data"), Db::postgres(url).await, &http, tps).await;
        let Run { small: pg_small, cert_growth: pg_cert_growth, server, db, .. } = run;
        peak = peak.max(server.stop().await);
        db.drop_schema().await;
        println!("PostgreSQL as a ratio (x sq) to SQLite, same run");
        header("x sq");
        for (w, s) in &pg_small {
            row(s, &get(&small, *w));
        }
        on_pg = pg_small;
        pg_certs = pg_cert_growth;
    }
    certificates_summary(&[(label, small.as_slice(), cert_growth.as_slice()), ("PostgreSQL", on_pg.as_slice(), pg_certs.as_slice())]);

    if o.tail {
        println!("\ntail targets ({CONNECTIONS} connections, {} s per workload)", o.work_secs);
        for w in [Work::Refresh, Work::Associate] {
            let s = get(&small, w);
            let disk = s
                .disk
                .as_ref()
                .map_or(String::new(), |d| format!("; the disk's own slowest sync beside it {:.1} ms", percentile_ms(&d.lat, 1.0)));
            target(
                &format!(
                    "{}: p99 < {TAIL_P99_MS} ms ({:.2}), p99.9 < {TAIL_P999_MS} ms ({:.2}), max < {TAIL_MAX_MS} ms ({:.1}){disk}",
                    s.name, s.p99_ms, s.p999_ms, s.max_ms
                ),
                s.p99_ms < TAIL_P99_MS && s.p999_ms < TAIL_P999_MS && s.max_ms < TAIL_MAX_MS,
            );
            if !on_pg.is_empty() {
                let p = get(&on_pg, w);
                target(&format!("{} on PostgreSQL >= 0.5 x SQLite ({:.2})", s.name, p.rate / s.rate), p.rate >= 0.5 * s.rate);
            }
        }
        let errors: usize = small.iter().chain(&on_pg).map(|(_, s)| s.errors).sum();
        println!("errors in all workloads: {errors}; whole run {:.0} s", run_start.elapsed().as_secs_f64());
        return;
    }
    if !o.only.is_empty() {
        println!("\n--only: targets not judged");
        return;
    }
    let hz = get(&small, Work::Health);
    println!("\ntargets ({CONNECTIONS} connections)");
    let (r, a, v) = (get(&small, Work::Refresh), get(&small, Work::Associate), get(&small, Work::Verify));
    target(
        &format!("refresh >= 0.35 x healthz ({:.2}) and p99 < 5 ms ({:.2} ms)", r.rate / hz.rate, r.p99_ms),
        r.rate >= 0.35 * hz.rate && r.p99_ms < 5.0,
    );
    target(
        &format!("Associate >= 0.4 x healthz ({:.2}) and p99 < 5 ms ({:.2} ms)", a.rate / hz.rate, a.p99_ms),
        a.rate >= 0.4 * hz.rate && a.p99_ms < 5.0,
    );
    // Page rounding aside (2 %), a refresh keeps nothing but its event.
    target(
        &format!(
            "bytes kept per refresh <= its event's ({:.0} <= {:.0}; store {:.1} MiB)",
            growth.per_op,
            growth.events_per_op,
            growth.store_bytes as f64 / MIB / MIB
        ),
        growth.per_op <= growth.events_per_op * 1.02,
    );
    target(&format!("Verify >= 0.8 x healthz ({:.2})", v.rate / hz.rate), v.rate >= 0.8 * hz.rate);
    target(&format!("peak RSS < 100 MiB through the benchmark, logins included ({:.1} MiB)", peak as f64 / MIB), peak < 100 * 1024);
    if o.scale {
        let (rs, as_) = (get(&scale, Work::Refresh), get(&scale, Work::Associate));
        target(&format!("at {} grants refresh >= 0.9 x small store ({:.2})", o.grants, rs.rate / r.rate), rs.rate >= 0.9 * r.rate);
        target(&format!("at {} grants Associate >= 0.8 x small store ({:.2})", o.grants, as_.rate / a.rate), as_.rate >= 0.8 * a.rate);
    }
    if !on_pg.is_empty() {
        let (pr, pa) = (get(&on_pg, Work::Refresh), get(&on_pg, Work::Associate));
        target(&format!("refresh on PostgreSQL >= 0.5 x SQLite ({:.2})", pr.rate / r.rate), pr.rate >= 0.5 * r.rate);
        target(&format!("Associate on PostgreSQL >= 0.5 x SQLite ({:.2})", pa.rate / a.rate), pa.rate >= 0.5 * a.rate);
    }
    let errors: usize = small.iter().chain(&scale).chain(&on_pg).map(|(_, s)| s.errors).sum();
    println!("errors in all workloads: {errors}; whole run {:.0} s", run_start.elapsed().as_secs_f64());
}
