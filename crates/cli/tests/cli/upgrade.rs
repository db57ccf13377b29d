//! Upgrades are explicit: the admin commands refuse a store at an older
//! schema, change nothing and say how to upgrade; `admin upgrade` backs the
//! store up and migrates it; the grants made before keep working; `serve`
//! migrates at start and says from which schema to which.
//!
//! The older store is this one with its newest migration undone (by
//! `strongroom_testkit::undo_migration`): what the previous version of
//! Strongroom left. A new migration fails this test until its undoing is
//! added there.
#![allow(clippy::disallowed_methods)] // waits on real processes

use std::path::Path;

use crate::process::{Api, Server, TokensExt as _, run};

const PASSWORD: &str = "upgrade-test-password-1";

/// Undoes the newest migration of the SQLite store at `db`; the schema it leaves.
fn undo_newest_migration(db: &Path) -> i64 {
    let newest = strongroom_store::schema_version();
    let down = strongroom_testkit::undo_migration(newest, false);
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch(&format!("BEGIN; {down} DELETE FROM schema_migrations WHERE version = {newest}; COMMIT;")).unwrap();
    // The one before it (numbers may skip: each branch takes its own).
    conn.query_row("SELECT max(version) FROM schema_migrations", [], |r| r.get(0)).unwrap()
}

fn schema_of(db: &Path) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("SELECT max(version) FROM schema_migrations", [], |r| r.get(0)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_store_is_refused_by_admin_then_upgraded_after_a_backup_and_its_grants_keep_working() {
    let server = Server::start(&["--insecure-http"], &[]);
    server.admin(&["integrations", "create", "app", "--scope", "restricted:manage", "--allow-all-users", "--password-grant", "true"], "");
    server.admin(&["users", "create", "root", "--master-admin"], &format!("{PASSWORD}\n"));
    let api = Api::new(server.http_base());
    let pair = api.password_grant("app", "root", PASSWORD, "restricted:manage").await;
    let (_, data) = server.stop_keeping_data();
    let dir = data.path().to_owned();
    let dir_arg = dir.to_string_lossy().into_owned();
    let db = dir.join("strongroom.db");
    let newest = strongroom_store::schema_version();
    let older = undo_newest_migration(&db);

    // Any admin command on the older store: refused, nothing changed, the way out named.
    let refused = run(&["admin", "--data-dir", &dir_arg, "users", "list"], &[]);
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(refused.stderr.contains(&format!("the store is at schema {older}")), "{}", refused.stderr);
    assert!(refused.stderr.contains("strongroom admin upgrade"), "{}", refused.stderr);
    assert_eq!(schema_of(&db), older, "a refused admin command migrated the store");

    // The upgrade: a backup at the older schema first, then the migration.
    let up = run(&["admin", "--data-dir", &dir_arg, "upgrade", "--json"], &[]);
    assert_eq!(up.code, 0, "{up:?}");
    let said: serde_json::Value = serde_json::from_str(up.stdout.trim()).unwrap();
    assert_eq!((said["from"].as_i64(), said["to"].as_i64()), (Some(older), Some(newest)), "{said}");
    let backup = said["backup"].as_str().unwrap_or_else(|| panic!("no backup named: {said}"));
    assert!(backup.starts_with(&dir.join("backups").to_string_lossy().into_owned()), "{backup}");
    assert_eq!(schema_of(Path::new(backup)), older, "the backup is of the store before the upgrade");
    assert_eq!(schema_of(&db), newest);
    let again = run(&["admin", "--data-dir", &dir_arg, "upgrade"], &[]);
    assert_eq!(again.code, 0, "{again:?}");
    assert!(again.stdout.contains("nothing to upgrade"), "{}", again.stdout);
    let users = run(&["admin", "--data-dir", &dir_arg, "users", "list"], &[]);
    assert_eq!(users.code, 0, "{users:?}");
    assert!(users.stdout.contains("root"), "{}", users.stdout);

    // The grant made before the upgrade works on: its access token verifies,
    // its refresh token rotates.
    let server = Server::start_on(dir.clone(), &["--insecure-http"], &[]);
    let api = Api::new(server.http_base());
    assert_eq!(api.verify(pair.access()).await, 200);
    let next = api.refresh("app", pair.refresh()).await.unwrap();
    assert_eq!(api.verify(next.access()).await, 200);
    server.stop();

    // `serve` on an older store migrates it at start and says so.
    let older = undo_newest_migration(&db);
    let server = Server::start_on(dir.clone(), &["--insecure-http"], &[]);
    server.wait_for("store schema migrated");
    let log = server.stop();
    let line = log.lines().find(|l| l.contains("store schema migrated")).unwrap_or_default();
    assert!(line.contains(&older.to_string()) && line.contains(&newest.to_string()), "{line}");
    assert_eq!(schema_of(&db), newest);
    drop(data);
}
