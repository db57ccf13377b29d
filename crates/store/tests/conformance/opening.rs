//! Opening a store that must exist already, and probing one: neither
//! creates anything where no store is; opening one at an older schema
//! migrates nothing, and `upgrade` migrates it.

use strongroom_store::{Probe, StoreError};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_open_existing_creates_nothing() {
    let root = tempfile::tempdir().unwrap();
    let db = root.path().join("data").join("strongroom.db");
    let url = db.to_str().unwrap();
    assert_eq!(strongroom_store::probe(url).await.unwrap(), Probe::Absent);
    let err = strongroom_store::open_existing(url).await.unwrap_err();
    assert!(matches!(err, StoreError::NoStore(_)), "{err}");
    assert!(err.to_string().contains(url), "{err}");
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0, "no directory, no file");
    // A file that is not a store is refused and left as it was.
    std::fs::create_dir(root.path().join("data")).unwrap();
    std::fs::write(&db, b"").unwrap();
    assert!(matches!(strongroom_store::open_existing(url).await, Err(StoreError::NoStore(_))));
    assert!(matches!(strongroom_store::probe(url).await, Err(StoreError::NoStore(_))));
    assert_eq!(std::fs::metadata(&db).unwrap().len(), 0);
    std::fs::remove_file(&db).unwrap();
    // Once made, it opens, and the probe sees its schema.
    drop(strongroom_store::open(url).await.unwrap());
    assert_eq!(strongroom_store::probe(url).await.unwrap(), Probe::Present { version: Some(strongroom_store::schema_version()) });
    let store = strongroom_store::open_existing(url).await.unwrap();
    store.ready().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_open_existing_creates_no_table() {
    let Some(root) = strongroom_testkit::pg_url_or_skip("PostgreSQL open_existing") else { return };
    let url = strongroom_store::postgres::testing::fresh_schema_url(&root).await.unwrap();
    assert_eq!(strongroom_store::probe(&url).await.unwrap(), Probe::Absent);
    let err = strongroom_store::open_existing(&url).await.unwrap_err();
    assert!(matches!(err, StoreError::NoStore(_)), "{err}");
    assert!(err.to_string().contains("no Strongroom tables"), "{err}");
    assert_eq!(strongroom_store::probe(&url).await.unwrap(), Probe::Absent, "still nothing there");
    drop(strongroom_store::open(&url).await.unwrap());
    assert_eq!(strongroom_store::probe(&url).await.unwrap(), Probe::Present { version: Some(strongroom_store::schema_version()) });
    strongroom_store::open_existing(&url).await.unwrap().ready().await.unwrap();
    // An unreachable server is an error, not an absent store.
    assert!(strongroom_store::probe("postgres://postgres@127.0.0.1:1/x?connect_timeout=2").await.is_err());
}

/// The newest migration undone in the database at `url` (SQLite path or
/// PostgreSQL URL): the schema a store of the previous version has.
async fn undo_newest(url: &str) -> i64 {
    let newest = strongroom_store::schema_version();
    let sql = format!(
        "{} DELETE FROM schema_migrations WHERE version = {newest};",
        strongroom_testkit::undo_migration(newest, strongroom_store::names_postgres(url))
    );
    if strongroom_store::names_postgres(url) {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
        let driver = tokio::spawn(conn);
        client.batch_execute(&format!("BEGIN; {sql} COMMIT;")).await.unwrap();
        drop(client);
        let _ = driver.await;
    } else {
        rusqlite::Connection::open(url).unwrap().execute_batch(&format!("BEGIN; {sql} COMMIT;")).unwrap();
    }
    // The one before it (numbers may skip: each branch takes its own).
    match strongroom_store::probe(url).await.unwrap() {
        Probe::Present { version: Some(v) } => v,
        other => panic!("after undoing migration {newest}: {other:?}"),
    }
}

/// An older store: `open_existing` refuses it and changes nothing;
/// `upgrade` migrates it and says from which schema; a newer one is refused.
async fn older_store_is_upgraded_only_when_asked(url: &str) {
    drop(strongroom_store::open(url).await.unwrap());
    let newest = strongroom_store::schema_version();
    let older = undo_newest(url).await;
    let Err(err) = strongroom_store::open_existing(url).await else { panic!("an older store opened as it was") };
    assert!(matches!(err, StoreError::Schema { found, needed } if found == older && needed == newest), "{err}");
    assert_eq!(strongroom_store::probe(url).await.unwrap(), Probe::Present { version: Some(older) }, "refusing changed the schema");
    let (before, store) = strongroom_store::upgrade(url).await.unwrap();
    assert_eq!(before, Some(older));
    store.ready().await.unwrap();
    drop(store);
    strongroom_store::open_existing(url).await.unwrap().ready().await.unwrap();
    let (before, _) = strongroom_store::upgrade(url).await.unwrap();
    assert_eq!(before, Some(newest), "a second upgrade has nothing to do");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_older_store_is_upgraded_only_when_asked() {
    let root = tempfile::tempdir().unwrap();
    older_store_is_upgraded_only_when_asked(root.path().join("strongroom.db").to_str().unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_older_store_is_upgraded_only_when_asked() {
    let Some(root) = strongroom_testkit::pg_url_or_skip("PostgreSQL upgrade") else { return };
    let url = strongroom_store::postgres::testing::fresh_schema_url(&root).await.unwrap();
    older_store_is_upgraded_only_when_asked(&url).await;
}
