//! `admin backup` under a write load, `admin restore` into an empty data
//! directory, and a server on the restored directory.
#![allow(clippy::disallowed_methods)] // waits on real processes

use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::process::{Api, Server, TokensExt as _, run, run_bounded};

#[cfg(unix)]
fn mode(p: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// Waits (bounded) until `acked` holds at least `n` ids.
async fn until_acked(acked: &Mutex<Vec<String>>, n: usize) {
    for _ in 0..3000 {
        if acked.lock().unwrap().len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the write load never reached {n} acknowledged writes");
}

const PASSWORD: &str = "backup-test-password-1";
const FOLDER: &str = "\\VED\\Policy\\Backups";
const SECRET: &[u8] = b"kept through backup and restore";
/// [`SECRET`], base64.
const SECRET_B64: &str = "a2VwdCB0aHJvdWdoIGJhY2t1cCBhbmQgcmVzdG9yZQ==";

/// An access token for `root` through the password grant.
async fn root_token(api: &Api) -> String {
    api.password_grant("app", "root", PASSWORD, "restricted:manage").await.access().to_owned()
}

fn json_of(r: &crate::process::Run) -> Value {
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    serde_json::from_str(r.stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.stdout))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_write_load_restores_every_acknowledged_write() {
    let server = Server::start(&["--insecure-http"], &[("STRONGROOM_TRUSTED_PROXIES", "127.0.0.1")]);
    server.admin(&["integrations", "create", "app", "--scope", "restricted:manage", "--allow-all-users", "--password-grant", "true"], "");
    let base = format!("http://127.0.0.1:{}", server.port);

    // A vault secret written before the backup, to be read back after the restore.
    server.admin(&["users", "create", "root", "--master-admin"], &format!("{PASSWORD}\n"));
    server.admin(&["folders", "create", FOLDER], "");
    let api = Api::new(base.clone());
    let token = root_token(&api).await;
    let vault_id = api.add(&token, FOLDER, "Software:Default", SECRET).await.unwrap().vault_id;

    // The load: device authorizations (each one write: rows and an event),
    // every request with its own request id and, through the trusted proxy,
    // its own client address (the per-address quota stays out of the way).
    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut load = Vec::new();
    for w in 0..2 {
        let (acked, stop, base) = (acked.clone(), stop.clone(), base.clone());
        load.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            for i in 0..5000u32 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let id = format!("load-{w}-{i}");
                let r = http
                    .post(format!("{base}/vedauth/authorize/device"))
                    .header("x-request-id", &id)
                    .header("x-forwarded-for", format!("10.{w}.{}.{}", i / 256, i % 256))
                    .json(&serde_json::json!({"client_id": "app", "scope": "restricted:manage"}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
                acked.lock().unwrap().push(id);
            }
        }));
    }
    until_acked(&acked, 40).await;
    // Every write acknowledged before the backup starts must be in it.
    let before: Vec<String> = acked.lock().unwrap().clone();
    let backups = tempfile::tempdir().unwrap();
    let file = backups.path().join("strongroom.snapshot");
    let (file_arg, dir_arg) = (file.to_str().unwrap().to_owned(), server.dir.to_str().unwrap().to_owned());
    let made =
        tokio::task::spawn_blocking(move || run(&["admin", "--data-dir", &dir_arg, "backup", &file_arg, "--json"], &[])).await.unwrap();
    let made = json_of(&made);
    let after_backup = acked.lock().unwrap().len();
    until_acked(&acked, after_backup + 20).await;
    stop.store(true, Ordering::Relaxed);
    for t in load {
        t.await.unwrap();
    }

    let sidecar_path = backups.path().join("strongroom.snapshot.json");
    let sidecar: Value = serde_json::from_slice(&std::fs::read(&sidecar_path).unwrap()).unwrap();
    assert_eq!(sidecar["event_seq"], made["event_seq"]);
    assert_eq!(sidecar["event_hash"], made["event_hash"]);
    assert_eq!(sidecar["event_hash"].as_str().unwrap().len(), 64);
    #[cfg(unix)]
    for p in [&file, &sidecar_path] {
        assert_eq!(mode(p), 0o600, "{}", p.display());
    }

    // Not over live data: a non-empty data directory is refused.
    let dir = server.dir.to_str().unwrap();
    let refused = run(&["admin", "--data-dir", dir, "restore", file.to_str().unwrap()], &[]);
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains("not empty"), "{}", refused.stderr);

    let fresh = tempfile::tempdir().unwrap();
    let target = fresh.path().join("restored");
    let t = target.to_str().unwrap();
    let restored = json_of(&run(&["admin", "--data-dir", t, "restore", file.to_str().unwrap(), "--json"], &[]));
    assert_eq!(restored["event_seq"], made["event_seq"]);
    assert_eq!(restored["events_verified"], made["event_seq"], "every event of the snapshot verified");
    assert_eq!(restored["sidecar_checked"], true);
    assert!(!target.join("master.key").exists(), "restore makes no master key");

    // Without its master key the restored store is refused, and the key a
    // start would make is not left behind to be taken for the store's.
    let keyless = run_bounded(&["serve", "--data-dir", t, "--insecure-http", "--listen", "127.0.0.1:0"], &[], Duration::from_secs(60));
    let said = format!("{}{}", keyless.stdout, keyless.stderr);
    assert!(keyless.code > 0, "a start without the store's key ends with an error (-1: still serving after 60 s): {said}");
    assert!(said.contains("is not the key this store was first opened with") && said.contains("removed again"), "{said}");
    assert!(!target.join("master.key").exists(), "the key made by the refused start is gone");
    let other = "cd".repeat(32);
    let wrong = run(&["admin", "--data-dir", t, "users", "list"], &[("STRONGROOM_MASTER_KEY", &other)]);
    assert_ne!(wrong.code, 0, "an admin command with another key is refused: {}", wrong.stdout);
    assert!(wrong.stderr.contains("STRONGROOM_MASTER_KEY is not the key") && !wrong.stderr.contains(&other), "{}", wrong.stderr);

    // The master key comes back separately.
    std::fs::copy(server.dir.join("master.key"), target.join("master.key")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(target.join("master.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let events =
        json_of(&run(&["admin", "--data-dir", t, "events", "list", "--kind", "device.started", "--limit", "10000", "--json"], &[]));
    let ids: BTreeSet<&str> = events.as_array().unwrap().iter().map(|e| e["request_id"].as_str().unwrap()).collect();
    let missing: Vec<&String> = before.iter().filter(|id| !ids.contains(id.as_str())).collect();
    assert!(missing.is_empty(), "acknowledged before the backup but not in it: {missing:?}");
    let total = acked.lock().unwrap().len();
    assert!(ids.len() < total, "the snapshot is of a moment, not of the end: {} of {total}", ids.len());
    drop(server);

    // A server on the restored directory is ready, its data and chain intact.
    let restored = Server::start_on(target.clone(), &["--insecure-http"], &[]);
    let api = Api::new(restored.http_base());
    let r = api.http.get(api.url("/health/ready")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(restored.admin(&["events", "verify"], "").contains("event log intact"));
    let integrations = restored.admin(&["integrations", "list", "--json"], "");
    let integrations: Value = serde_json::from_str(integrations.trim()).unwrap();
    assert_eq!(integrations[0]["client_id"], "app");
    // The secret written before the backup opens with the master key put
    // back: the data key wrapped by it came through the snapshot.
    let token = root_token(&api).await;
    let got = api.retrieve(&token, vault_id).await.unwrap();
    assert_eq!(got.base64_data.expose(), SECRET_B64);
    restored.stop();
}

/// A restore that fails after it copied the snapshot (a broken event chain,
/// a head other than the sidecar's) leaves the target as it found it: a
/// directory it made is gone, an empty one it was given is empty again.
#[test]
fn a_failed_restore_leaves_the_target_as_it_was() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    let s = src.to_str().unwrap();
    // admin makes no store: `admin init` does.
    let r = run(&["admin", "--data-dir", s, "init"], &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    for folder in ["\\VED\\Policy\\A", "\\VED\\Policy\\B"] {
        let r = run(&["admin", "--data-dir", s, "folders", "create", folder], &[]);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    }
    let snapshot = |name: &str| {
        let file = work.path().join(name);
        let r = run(&["admin", "--data-dir", s, "backup", file.to_str().unwrap()], &[]);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        file
    };
    let restore = |dir: &std::path::Path, file: &std::path::Path| {
        run(&["admin", "--data-dir", dir.to_str().unwrap(), "restore", file.to_str().unwrap()], &[])
    };

    // An event rewritten inside the snapshot: the head (and so the sidecar)
    // still match, the chain does not.
    let broken = snapshot("broken.db");
    let db = rusqlite::Connection::open(&broken).unwrap();
    assert_eq!(db.execute("UPDATE events SET detail = 'rewritten' WHERE seq = 1", []).unwrap(), 1);
    drop(db);
    let new_dir = work.path().join("new").join("data");
    let r = restore(&new_dir, &broken);
    assert_ne!(r.code, 0, "a broken chain was restored: {}", r.stdout);
    assert!(r.stderr.contains("verifying the restored event log") && r.stderr.contains("which the restore had created"), "{}", r.stderr);
    assert!(!work.path().join("new").exists(), "the directories restore made are gone");

    let empty = work.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let r = restore(&empty, &broken);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("it is empty again"), "{}", r.stderr);
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0, "the empty directory is empty again");

    // A sidecar naming another head.
    let other = snapshot("other.db");
    let sidecar = work.path().join("other.db.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&sidecar).unwrap()).unwrap();
    v["event_seq"] = Value::from(v["event_seq"].as_i64().unwrap() + 1);
    std::fs::write(&sidecar, v.to_string()).unwrap();
    let r = restore(&empty, &other);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("does not hold the event-chain head") && r.stderr.contains("it is empty again"), "{}", r.stderr);
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);

    // The same directory then takes a good snapshot.
    let good = snapshot("good.db");
    let r = restore(&empty, &good);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // One event for the master key the store recorded, one per folder created.
    assert!(r.stdout.contains("event log intact: 3 events") && r.stdout.contains("(as recorded at backup)"), "{}", r.stdout);
}
