//! Opening a store that must exist already, and probing one: neither
//! creates anything where no store is.

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
