//! Named keys with the software driver alone: `Keyname` is honoured,
//! `Crypto/DefaultKey`, `EncryptionKeysInUse`, and `RotateKey` moving one
//! entry to a new data key. (The PKCS#11 driver is tested with SoftHSM2 in
//! the CLI tests, against the real binary.)

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::TestServer;

const TEAM: &str = "\\VED\\Policy\\Team A";
const SCOPE: &str = "restricted:manage;admin:rotate";

fn result(v: &Value) -> i64 {
    v["Result"].as_i64().unwrap_or_else(|| panic!("no Result in {v}"))
}

fn add_body(key: Option<&str>, data: &[u8]) -> Value {
    let mut b = json!({"VaultType": 32, "Namespace": "config", "Owner": TEAM, "Base64Data": STANDARD.encode(data)});
    if let Some(k) = key {
        b["Keyname"] = json!(k);
    }
    b
}

#[tokio::test]
async fn keyname_default_key_and_rotate_key_with_the_software_driver() {
    let s = TestServer::start().await;
    s.integration("app", SCOPE, |_| {}).await;
    let root = s.admin.create_user("root", &strongroom_core::secret::Secret::new(crate::support::PASSWORD), true).await.unwrap();
    s.admin.create_folder(TEAM).await.unwrap();
    let t = s.tokens_for(&root, "app", SCOPE).await["access_token"].as_str().unwrap().to_owned();
    let manage_only = s.tokens_for(&root, "app", "restricted:manage").await["access_token"].as_str().unwrap().to_owned();

    let (st, v) = s.get_bearer("/vedsdk/Crypto/DefaultKey", &t).await;
    assert_eq!((st, v), (StatusCode::OK, json!({"DefaultKey": "Software:Default"})));

    // Unknown names (another driver, another software key) are Result 21 and store nothing.
    for bad in ["PKCS11:nowhere", "Software:Other", "Null:Null", "k"] {
        let (st, v) = s.sdk("Add", &t, add_body(Some(bad), b"x")).await;
        assert_eq!((st, result(&v)), (StatusCode::OK, 21), "{bad}: {v}");
    }
    let (_, v) = s.get_bearer("/vedsdk/SecretStore/EncryptionKeysInUse", &t).await;
    assert_eq!(v["EncryptionKeys"], json!([]), "nothing was stored");

    // Names compare case-insensitively and are stored canonically; no Keyname means the default.
    let (_, v) = s.sdk("Add", &t, add_body(Some("software:default"), b"one")).await;
    let one = v["VaultID"].as_i64().unwrap();
    let (_, v) = s.sdk("Add", &t, add_body(None, b"two")).await;
    let two = v["VaultID"].as_i64().unwrap();
    assert_eq!(result(&s.sdk("Associate", &t, json!({"VaultID": one, "Name": "n", "IntValue": 7})).await.1), 0);
    let (_, v) = s.get_bearer("/vedsdk/SecretStore/EncryptionKeysInUse", &t).await;
    assert_eq!(v, json!({"EncryptionKeys": ["Software:Default"], "Result": 0}));

    // RotateKey: scope admin:rotate; unknown key 21; unknown entry 8; bad id 9.
    let rotate = |id: &str, name: &str, tok: &str| {
        let path = format!("/vedsdk/SecretStore/RotateKey/{id}?NewKeyName={name}");
        let tok = tok.to_owned();
        let s = &s;
        async move { s.get_bearer(&path, &tok).await }
    };
    assert_eq!(rotate(&one.to_string(), "Software:Default", &manage_only).await.0, StatusCode::FORBIDDEN);
    assert_eq!(result(&rotate(&one.to_string(), "PKCS11:nowhere", &t).await.1), 21);
    assert_eq!(result(&rotate("999", "Software:Default", &t).await.1), 8);
    assert_eq!(result(&rotate("x", "Software:Default", &t).await.1), 9);
    let (st, v) = s.get_bearer(&format!("/vedsdk/SecretStore/RotateKey/{one}"), &t).await;
    assert_eq!((st, result(&v)), (StatusCode::OK, 9), "newkeyname is required: {v}");

    // RotateKey re-seals one entry (data and associations) under the key's current data key.
    let rotated = s.admin.rotate_keys(None, &mut |_, _| {}).await.unwrap();
    let (key, n) = (rotated.iter().map(|r| r.1).max().unwrap(), rotated.iter().map(|r| r.2).sum::<u64>());
    assert_eq!((key, n), (2, 3), "the admin's rotation re-sealed two entries and an association");
    let (st, v) = rotate(&one.to_string(), "software:DEFAULT", &t).await;
    assert_eq!((st, result(&v)), (StatusCode::OK, 0), "{v}");
    let db = rusqlite::Connection::open(s.db_path()).unwrap();
    let keys = |id: i64| -> (String, i64, i64) {
        db.query_row(
            "SELECT e.key_name, e.key_id, (SELECT max(key_id) FROM associations a WHERE a.vault_id = e.vault_id) FROM vault_entries e WHERE vault_id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, Option<i64>>(2)?.unwrap_or(0))),
        )
        .unwrap()
    };
    assert_eq!(keys(one), ("Software:Default".to_owned(), 2, 2));
    assert_eq!(keys(two).1, 2);
    let (_, v) = s.sdk("Retrieve", &t, json!({"VaultID": one})).await;
    assert_eq!(v["Base64Data"], STANDARD.encode("one"));
    let (_, v) = s.sdk("LookupAssociationbyVaultID", &t, json!({"VaultID": one, "Name": "n"})).await;
    assert_eq!(v["Value"], "7");
    assert!(s.event_kinds().await.iter().filter(|k| *k == "vault.resealed").count() >= 2);

    // `admin keys move` takes two different configured keys, however spelled.
    let e = s.admin.move_key("Software:Default", " software:DEFAULT", &mut |_| {}).await.unwrap_err();
    assert!(e.to_string().contains("Software:Default is the key the entries are under already"), "{e}");
    let e = s.admin.move_key("PKCS11:nowhere", "Software:Default", &mut |_| {}).await.unwrap_err();
    assert!(e.to_string().contains("\"PKCS11:nowhere\""), "{e}");
    let e = s.admin.move_key("Software:Default", "PKCS11:nowhere", &mut |_| {}).await.unwrap_err();
    assert!(e.to_string().contains("\"PKCS11:nowhere\""), "{e}");
    assert_eq!(keys(one).0, "Software:Default", "nothing moved");
}
