//! `scripts/bench`: throughput of the two hot write paths, token refresh and
//! vault association, on SQLite and (when reachable) PostgreSQL, with one
//! client and with many at once. Everything runs against a real server on
//! 127.0.0.1 and stops by itself.
//!
//! Figures are reported as ratios measured in the same run (shared machines
//! are noisy): many clients vs one shows what group commit buys; PostgreSQL
//! vs SQLite compares the stores. Absolute rates are printed for context.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, missing_debug_implementations)]

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strongroom_core::secret::Secret;
use strongroom_core::vault::Rights;
use strongroom_server::admin::{Admin, IntegrationSpec};
use strongroom_server::config::RawConfig;
use strongroom_server::keys::Keys;
use strongroom_server::serve;
use strongroom_server::state::{OsRandom, SystemClock};

const CLIENTS: usize = 16;
const PER_CLIENT: usize = 40;
const PASSWORD: &str = "benchmark passphrase";

struct Bench {
    url: String,
    http: reqwest::Client,
    running: serve::Running,
    _dir: tempfile::TempDir,
}

async fn start(database_url: Option<String>) -> Bench {
    let dir = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let raw = RawConfig { data_dir: Some(dir.path().into()), insecure_http: Some(true), database_url, ..Default::default() };
    let config = raw.validate().unwrap();
    let store = match config.database_url.starts_with("postgres") {
        true => strongroom_store::postgres::testing::fresh_schema(&config.database_url).await.unwrap(),
        false => strongroom_store::open(&config.database_url).await.unwrap(),
    };
    let keys = Keys::from_master(&[7; 32]);
    let state = serve::state(store.clone(), Arc::new(SystemClock), Arc::new(OsRandom), keys, &config);
    let admin = Admin { store, clock: Arc::new(SystemClock), rng: Arc::new(OsRandom), keyring: state.keyring.clone() };
    let running = serve::spawn(listener, strongroom_server::http::app(state, serve::limits(&config)), None).unwrap();
    admin.create_user("bench", &Secret::new(PASSWORD), false).await.unwrap();
    admin.create_folder("\\VED\\Policy\\Bench").await.unwrap();
    admin.set_rights("\\VED\\Policy\\Bench", "bench", Rights::READ.union(Rights::WRITE)).await.unwrap();
    let spec =
        IntegrationSpec { scope: Some("restricted:manage".into()), allow_all_users: true, password: Some(true), ..Default::default() };
    admin.create_integration("bench", spec).await.unwrap();
    Bench { url, http: reqwest::Client::new(), running, _dir: dir }
}

impl Bench {
    async fn login(&self) -> (String, String) {
        let t: Value = self
            .http
            .post(format!("{}/vedauth/authorize/oauth", self.url))
            .json(&json!({"client_id": "bench", "username": "bench", "password": PASSWORD, "scope": "restricted:manage"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        (t["access_token"].as_str().unwrap().to_owned(), t["refresh_token"].as_str().unwrap().to_owned())
    }

    /// `clients` callers each refresh their own grant `PER_CLIENT` times in a row.
    async fn refreshes(&self, clients: usize) -> f64 {
        let mut grants = Vec::new();
        for _ in 0..clients {
            grants.push(self.login().await.1);
        }
        let start = Instant::now();
        let tasks: Vec<_> = grants
            .into_iter()
            .map(|mut rt| {
                let (http, url) = (self.http.clone(), self.url.clone());
                tokio::spawn(async move {
                    for _ in 0..PER_CLIENT {
                        let t: Value = http
                            .post(format!("{url}/vedauth/authorize/token"))
                            .json(&json!({"client_id": "bench", "refresh_token": rt}))
                            .send()
                            .await
                            .unwrap()
                            .json()
                            .await
                            .unwrap();
                        rt = t["refresh_token"].as_str().expect("refresh succeeded").to_owned();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        (clients * PER_CLIENT) as f64 / start.elapsed().as_secs_f64()
    }

    /// `clients` callers each associate `PER_CLIENT` values with their own entry.
    async fn associations(&self, clients: usize) -> f64 {
        let (token, _) = self.login().await;
        let mut ids = Vec::new();
        for _ in 0..clients {
            let v: Value = self
                .http
                .post(format!("{}/vedsdk/SecretStore/Add", self.url))
                .bearer_auth(&token)
                .json(
                    &json!({"VaultType": 32, "Keyname": "k", "Namespace": "config", "Owner": "\\VED\\Policy\\Bench", "Base64Data": "eA=="}),
                )
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            ids.push(v["VaultID"].as_i64().unwrap());
        }
        let start = Instant::now();
        let tasks: Vec<_> = ids
            .into_iter()
            .map(|id| {
                let (http, url, token) = (self.http.clone(), self.url.clone(), token.clone());
                tokio::spawn(async move {
                    for i in 0..PER_CLIENT {
                        let v: Value = http
                            .post(format!("{url}/vedsdk/SecretStore/Associate"))
                            .bearer_auth(&token)
                            .json(&json!({"VaultID": id, "Name": format!("n{i}"), "StringValue": "value"}))
                            .send()
                            .await
                            .unwrap()
                            .json()
                            .await
                            .unwrap();
                        assert_eq!(v["Result"], 0);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        (clients * PER_CLIENT) as f64 / start.elapsed().as_secs_f64()
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
        .unwrap_or(0)
}

async fn measure(name: &str, database_url: Option<String>) -> Option<(f64, f64, f64, f64)> {
    let b = start(database_url).await;
    let r1 = b.refreshes(1).await;
    let rn = b.refreshes(CLIENTS).await;
    let a1 = b.associations(1).await;
    let an = b.associations(CLIENTS).await;
    println!(
        "{name:>10}: refresh {r1:>7.0}/s with 1 client, {rn:>7.0}/s with {CLIENTS} (x{:.1}); associate {a1:>7.0}/s with 1, {an:>7.0}/s with {CLIENTS} (x{:.1})",
        rn / r1,
        an / a1
    );
    b.running.shutdown(Duration::from_secs(5)).await.unwrap();
    Some((r1, rn, a1, an))
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let rss0 = rss_kib();
    println!("strongroom bench: {CLIENTS} clients x {PER_CLIENT} operations; durable writes (SQLite WAL, synchronous=FULL)");
    let sqlite = measure("sqlite", None).await.unwrap();
    let pg_url = std::env::var("STRONGROOM_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let reachable = std::net::TcpStream::connect_timeout(&"127.0.0.1:5432".parse().unwrap(), Duration::from_secs(1)).is_ok();
    if reachable {
        let pg = measure("postgres", Some(pg_url)).await.unwrap();
        println!(
            "  postgres/sqlite: refresh x{:.2} (1 client), x{:.2} ({CLIENTS}); associate x{:.2} (1), x{:.2} ({CLIENTS})",
            pg.0 / sqlite.0,
            pg.1 / sqlite.1,
            pg.2 / sqlite.2,
            pg.3 / sqlite.3
        );
    } else {
        println!("  postgres: not reachable at 127.0.0.1:5432, skipped");
    }
    println!("resident memory: {} MiB at start, {} MiB at the end", rss0 / 1024, rss_kib() / 1024);
}
