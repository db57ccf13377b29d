//! F1 (kill -9 in the middle of refresh and Associate streams), F2 (the
//! durability settings the server reports), F5 (why it does not apply);
//! F3 and F4 are `crates/cli/tests/cli`'s (replicas, PostgreSQL).
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Fx, report};

const REFRESHERS: usize = 4;
const WRITERS: usize = 4;
const TRIALS: u64 = 5;
const FOLDER: &str = "\\VED\\Policy\\Crash";
const STREAM_LIMIT: Duration = Duration::from_secs(20);
const MAX_OPS: usize = 5_000;

/// What a stream had acknowledged when the server died.
#[derive(Debug, Default)]
struct Acked {
    refresh: Option<(String, String)>,
    /// (name, value) of every acknowledged Associate.
    written: Vec<(String, String)>,
    count: usize,
    refused: Option<String>,
    transport_end: bool,
}

async fn refresher(http: reqwest::Client, base: String, client: String, mut rt: String, warm: Arc<AtomicUsize>) -> Acked {
    let mut a = Acked::default();
    let start = Instant::now();
    while a.count < MAX_OPS && start.elapsed() < STREAM_LIMIT {
        let r = http.post(format!("{base}/vedauth/authorize/token")).json(&json!({"client_id": client, "refresh_token": rt})).send().await;
        let Ok(r) = r else {
            a.transport_end = true;
            return a;
        };
        let st = r.status().as_u16();
        let Ok(body) = r.text().await else {
            a.transport_end = true;
            return a;
        };
        if st != 200 {
            a.refused = Some(format!("{st} {body}"));
            return a;
        }
        let v: Value = serde_json::from_str(&body).unwrap();
        rt = v["refresh_token"].as_str().unwrap().to_owned();
        a.refresh = Some((v["access_token"].as_str().unwrap().to_owned(), rt.clone()));
        a.count += 1;
        if a.count == 1 {
            warm.fetch_add(1, Ordering::SeqCst);
        }
    }
    a
}

async fn writer(http: reqwest::Client, base: String, at: String, id: i64, tag: String, warm: Arc<AtomicUsize>) -> Acked {
    let mut a = Acked::default();
    let start = Instant::now();
    while a.count < MAX_OPS && start.elapsed() < STREAM_LIMIT {
        let name = format!("{tag}-{}", a.count);
        let value = format!("value-{tag}-{}", a.count);
        let r = http
            .post(format!("{base}/vedsdk/SecretStore/Associate"))
            .bearer_auth(&at)
            .json(&json!({"VaultID": id, "Name": name, "StringValue": value}))
            .send()
            .await;
        let Ok(r) = r else {
            a.transport_end = true;
            return a;
        };
        let Ok(body) = r.text().await else {
            a.transport_end = true;
            return a;
        };
        let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        if v["Result"] != 0 {
            a.refused = Some(body);
            return a;
        }
        a.written.push((name, value));
        a.count += 1;
        if a.count == 1 {
            warm.fetch_add(1, Ordering::SeqCst);
        }
    }
    a
}

#[test]
fn f2_durability_settings_at_start_up() {
    let fx = Fx::start(&[], &[]);
    let store_line = fx.server.output.lock().unwrap().lines().find(|l| l.contains("store opened")).unwrap_or("").to_owned();
    let f2 = report(
        "F2",
        "durability settings at start-up",
        &format!("the server logs: {}", store_line.split("store=").nth(1).unwrap_or(&store_line)),
        {
            let l = store_line.to_lowercase();
            l.contains("journal_mode=wal") && l.contains("synchronous=full") && l.contains("foreign_keys=on")
        },
    );
    assert!(f2, "F2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f1_kill_during_refresh_and_associate() {
    let mut fx = Fx::start(&[], &[]);
    for i in 0..REFRESHERS {
        fx.integration(&format!("r{i}"), &[]);
    }
    fx.folder(FOLDER);
    let (mut acked_refresh, mut acked_writes, mut lost_writes, mut lost_grants, mut refused_up) = (0, 0, 0, 0, 0);
    let mut integrity = Vec::new();
    let mut verified = 0;
    let mut notes = Vec::new();
    for trial in 0..TRIALS {
        let (http, base) = (fx.http.clone(), fx.base.clone());
        let warm = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for i in 0..REFRESHERS {
            let g = fx.grant(&format!("r{i}")).await;
            let rt = g["refresh_token"].as_str().unwrap().to_owned();
            tasks.push(tokio::spawn(refresher(http.clone(), base.clone(), format!("r{i}"), rt, warm.clone())));
        }
        let mut entries = Vec::new();
        for i in 0..WRITERS {
            let at = fx.grant("app").await["access_token"].as_str().unwrap().to_owned();
            let (_, added) = fx
                .sdk(
                    &at,
                    "Add",
                    &json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": FOLDER, "Base64Data": "AA=="}),
                )
                .await;
            let id = added["VaultID"].as_i64().unwrap();
            entries.push(id);
            tasks.push(tokio::spawn(writer(http.clone(), base.clone(), at, id, format!("t{trial}w{i}"), warm.clone())));
        }
        let t = Instant::now();
        while warm.load(Ordering::SeqCst) < REFRESHERS + WRITERS && t.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(Duration::from_millis(20 + (trial * 17) % 41)).await;
        fx.server.kill();
        let mut results = Vec::new();
        for task in tasks {
            results.push(task.await.unwrap());
        }
        {
            let db = rusqlite::Connection::open(fx.server.dir.join("strongroom.db")).unwrap();
            integrity.push(db.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0)).unwrap());
        }
        fx.server.restart();
        fx.rebase();
        let reader = fx.grant("app").await["access_token"].as_str().unwrap().to_owned();
        for (i, a) in results.iter().enumerate() {
            if a.refused.is_some() {
                refused_up += 1;
                notes.push(format!("trial {trial} stream {i}: refused while up: {:?}", a.refused));
            }
            if i < REFRESHERS {
                acked_refresh += a.count;
                if let Some((at, rt)) = &a.refresh {
                    let alive = fx.verify(at).await == 200;
                    let (st, v) = fx.refresh(&format!("r{i}"), rt).await;
                    let again = if st == 200 { fx.refresh(&format!("r{i}"), v["refresh_token"].as_str().unwrap()).await.0 } else { st };
                    if !alive || again != 200 {
                        lost_grants += 1;
                        notes.push(format!("trial {trial} refresher {i}: access {alive}, carries on {again}"));
                    }
                }
            } else {
                acked_writes += a.count;
                let id = entries[i - REFRESHERS];
                for (name, value) in &a.written {
                    let (_, r) = fx.sdk(&reader, "LookupAssociationbyVaultID", &json!({"VaultID": id, "Name": name})).await;
                    if r["Value"].as_str() != Some(value.as_str()) {
                        lost_writes += 1;
                        notes.push(format!("trial {trial} writer {i}: {name} answers {r}"));
                    }
                }
            }
        }
        if fx.events_verify() {
            verified += 1;
        }
    }
    let associated_events = fx.events("vault.associated");
    for n in &notes {
        eprintln!("F1 note: {n}");
    }
    let ok_integrity = integrity.iter().filter(|s| *s == "ok").count();
    let f1 = report(
        "F1",
        "kill -9 during refresh and Associate streams (SQLite)",
        &format!(
            "{TRIALS} kills x ({REFRESHERS} refresh + {WRITERS} Associate streams): {acked_refresh} refreshes and {acked_writes} Associates acknowledged; lost afterwards: {lost_writes} values, {lost_grants} grants; {associated_events} vault.associated events (>= acknowledged); refused while up {refused_up}; integrity_check ok {ok_integrity}/{TRIALS}; events verify {verified}/{TRIALS}"
        ),
        lost_writes == 0
            && lost_grants == 0
            && refused_up == 0
            && ok_integrity == TRIALS as usize
            && verified == TRIALS as usize
            && associated_events >= acked_writes
            && acked_writes > 0
            && acked_refresh > 0,
    );
    assert!(f1, "F1");
}
