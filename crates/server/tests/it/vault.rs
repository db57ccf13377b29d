//! The vault over HTTP: every operation, its Result codes and permission
//! cases, atomicity with the event log, encryption at rest, key rotation and
//! the event chain.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::TestServer;

const TEAM: &str = "\\VED\\Policy\\Team A";
const SCOPE: &str = "restricted:manage,delete;admin:viewlogs";

async fn server() -> TestServer {
    let s = TestServer::start().await;
    s.integration("app", SCOPE, |_| {}).await;
    s
}

async fn token(s: &TestServer, user: &strongroom_core::identity::User, scope: &str) -> String {
    s.tokens_for(user, "app", scope).await["access_token"].as_str().unwrap().to_owned()
}

fn result(v: &Value) -> i64 {
    v["Result"].as_i64().unwrap_or_else(|| panic!("no Result in {v}"))
}

async fn add(s: &TestServer, t: &str, owner: &str, data: &[u8]) -> i64 {
    let (st, v) = s
        .sdk(
            "Add",
            t,
            json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": owner, "Base64Data": STANDARD.encode(data)}),
        )
        .await;
    assert_eq!((st, result(&v)), (StatusCode::OK, 0), "{v}");
    v["VaultID"].as_i64().unwrap()
}

#[tokio::test]
async fn the_readme_story_end_to_end() {
    let s = server().await;
    let alice = s.vault_user("alice", TEAM, "read,write").await;
    let t = token(&s, &alice, SCOPE).await;
    let id = add(&s, &t, TEAM, b"the secret").await;

    for body in [
        json!({"VaultID": id, "Name": "Purpose", "StringValue": "Access to endpoint"}),
        json!({"VaultID": id, "Name": "Key Size", "IntValue": 2048}),
        json!({"VaultID": id, "Name": "Create Date", "DateValue": "2024-01-02T03:04:05.1234567Z"}),
    ] {
        let (st, v) = s.sdk("Associate", &t, body).await;
        assert_eq!((st, result(&v)), (StatusCode::OK, 0), "{v}");
    }
    let (_, v) = s.sdk("LookupByAssociation", &t, json!({"Name": "Purpose", "StringValue": "Access to endpoint"})).await;
    assert_eq!(v["VaultIDs"], json!([id]));
    let (_, v) = s.sdk("LookupByAssociation", &t, json!({"Name": "Key Size", "IntValue": "2048"})).await;
    assert_eq!(v["VaultIDs"], json!([id]), "numeric strings are numbers");
    let (_, v) = s.sdk("LookupByAssociation", &t, json!({"Name": "Create Date", "DateValue": "2024-01-02T03:04:05.1234567Z"})).await;
    assert_eq!(v["VaultIDs"], json!([id]));
    let (_, v) = s.sdk("LookupByAssociation", &t, json!({"Name": "Purpose", "StringValue": "other"})).await;
    assert_eq!(v["VaultIDs"], json!([]));
    let (_, v) = s.sdk("LookupByAssociation", &t, json!({"name": "Key Size"})).await;
    assert_eq!(v["VaultIDs"], json!([id]), "no value: every entry with that name");

    let (_, v) = s.sdk("LookupAssociationbyVaultID", &t, json!({"VaultID": id.to_string(), "Name": "Create Date"})).await;
    assert_eq!(v["Value"], "2024-01-02T03:04:05.1234567Z");
    let (_, v) = s.sdk("LookupAllAssociationsbyVaultid", &t, json!({"vaultid": id})).await;
    assert_eq!(
        v["TypedNameValues"],
        json!([
            {"Name": "Create Date", "Type": "datetime", "Value": "2024-01-02T03:04:05.1234567Z"},
            {"Name": "Key Size", "Type": "int", "Value": "2048"},
            {"Name": "Purpose", "Type": "string", "Value": "Access to endpoint"}
        ])
    );
    let r = s.http.get(s.at("/vedsdk/SecretStore/Lookup")).bearer_auth(&t).header("content-type", "application/json").send().await.unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["VaultIDs"], json!([id]));
    let r = s.http.get(s.at("/vedsdk/secretstore/encryptionkeysinuse")).bearer_auth(&t).send().await.unwrap();
    assert_eq!(r.json::<Value>().await.unwrap(), json!({"EncryptionKeys": ["Software:Default"], "Result": 0}));

    // Dissociate: a wrong value removes nothing (17), the right one removes it.
    let (_, v) = s.sdk("Dissociate", &t, json!({"VaultID": id, "Name": "Key Size", "IntValue": 1024})).await;
    assert_eq!(result(&v), 17);
    let (_, v) = s.sdk("Dissociate", &t, json!({"VaultID": id, "Name": "Key Size", "IntValue": 2048})).await;
    assert_eq!(result(&v), 0);
    let (_, v) = s.sdk("Dissociate", &t, json!({"VaultID": id, "Name": "Create Date", "ValueDate": "2024-01-02T03:04:05.1234567Z"})).await;
    assert_eq!(result(&v), 0, "ValueDate is an alias: {v}");
    let (_, v) = s.sdk("Dissociate", &t, json!({"VaultID": id})).await;
    assert_eq!(result(&v), 0);
    let (_, v) = s.sdk("LookupAllAssociationsbyVaultid", &t, json!({"VaultID": id})).await;
    assert_eq!(v["TypedNameValues"], json!([]));

    // Every step is in the log, filterable by VaultID.
    let r = s.http.get(s.at(&format!("/vedsdk/Log?Value1={id}"))).bearer_auth(&t).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let log: Value = r.json().await.unwrap();
    let names: Vec<&str> = log["LogEvents"].as_array().unwrap().iter().map(|e| e["Name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "vault.dissociated",
            "vault.dissociated",
            "vault.dissociated",
            "vault.associated",
            "vault.associated",
            "vault.associated",
            "vault.added",
        ]
    );
    // Values never reach the log (hashes are random hex: leave them out of the search).
    let mut events = log["LogEvents"].clone();
    for e in events.as_array_mut().unwrap() {
        e.as_object_mut().unwrap().remove("Hash");
    }
    let text = events.to_string();
    assert!(!text.contains("Access to endpoint") && !text.contains("2048"), "{text}");
    assert!(s.admin.verify_events().await.unwrap().events > 10);
}

#[tokio::test]
async fn owners_master_admin_and_deletion() {
    let s = server().await;
    let alice = s.vault_user("alice", TEAM, "read,write").await;
    let _ = s.admin.create_folder("\\VED\\Policy\\Team B").await.unwrap();
    s.admin.set_rights("\\VED\\Policy\\Team B", "alice", strongroom_core::vault::Rights::WRITE).await.unwrap();
    let root = s.admin.create_user("root", &strongroom_core::secret::Secret::new(crate::support::PASSWORD), true).await.unwrap();
    let t = token(&s, &alice, SCOPE).await;
    let rt = token(&s, &root, SCOPE).await;
    let id = add(&s, &t, TEAM, b"payload").await;

    // Master Admin only: Retrieve, OwnerLookup, LookupByOwner, Mutate, OrphanLookup.
    assert_eq!(result(&s.sdk("Retrieve", &t, json!({"VaultID": id})).await.1), 10);
    let (_, v) = s.sdk("Retrieve", &rt, json!({"VaultID": id})).await;
    assert_eq!((result(&v), v["Base64Data"].as_str(), v["VaultType"].as_i64()), (0, Some(STANDARD.encode("payload").as_str()), Some(32)));
    assert_eq!(result(&s.sdk("Mutate", &t, json!({"VaultID": id, "VaultType": 1073741856})).await.1), 10);
    assert_eq!(result(&s.sdk("Mutate", &rt, json!({"VaultID": id, "VaultType": 1073741856})).await.1), 0);
    let (_, v) = s.sdk("LookupByVaultType", &t, json!({"VaultType": 1073741856})).await;
    assert_eq!(v["VaultIDs"], json!([id]));

    // OwnerAdd needs Write on the new owner and on a current one.
    let (_, v) = s.sdk("OwnerAdd", &t, json!({"Namespace": "config", "Owner": "\\VED\\Policy\\Team B", "VaultId": id})).await;
    assert_eq!(result(&v), 0, "{v}");
    let (_, v) = s.sdk("OwnerLookup", &rt, json!({"Namespace": "config", "VaultID": id})).await;
    assert_eq!(v["Owners"], json!(["\\VED\\Policy\\Team A", "\\VED\\Policy\\Team B"]));
    let (_, v) = s.sdk("LookupByOwner", &rt, json!({"Namespace": "config", "Owner": "\\VED\\Policy\\Team B"})).await;
    assert_eq!(v["VaultIDs"], json!([id]));
    assert_eq!(result(&s.sdk("OwnerLookup", &t, json!({"Namespace": "config", "VaultID": id})).await.1), 10);

    // OwnerDelete: removing one of two owners keeps the entry; the last one deletes it.
    let del = |owner: &str| json!({"Namespace": "config", "Owner": owner, "VaultId": id});
    assert_eq!(result(&s.sdk("OwnerDelete", &t, del("\\VED\\Policy\\Team B")).await.1), 0);
    assert_eq!(result(&s.sdk("Retrieve", &rt, json!({"VaultID": id})).await.1), 0);
    assert_eq!(result(&s.sdk("OwnerDelete", &t, del(TEAM)).await.1), 0);
    assert_eq!(result(&s.sdk("Retrieve", &rt, json!({"VaultID": id})).await.1), 8, "deleted with its last owner");
    let (_, v) = s.sdk("OrphanLookup", &rt, json!({"VaultType": 32})).await;
    assert_eq!(v["VaultIDs"], json!([]));

    // Without a VaultID the owner leaves every entry it owns.
    let a = add(&s, &t, TEAM, b"a").await;
    let b = add(&s, &t, TEAM, b"b").await;
    assert_eq!(result(&s.sdk("OwnerDelete", &t, json!({"Namespace": "config", "Owner": TEAM})).await.1), 0);
    for id in [a, b] {
        assert_eq!(result(&s.sdk("Retrieve", &rt, json!({"VaultID": id})).await.1), 8);
    }
    assert!(s.event_kinds().await.iter().filter(|k| *k == "vault.deleted").count() >= 3);
}

#[tokio::test]
async fn result_codes_permissions_and_bad_input() {
    let s = server().await;
    let alice = s.vault_user("alice", TEAM, "read,write").await;
    let bob = s.vault_user("bob", "\\VED\\Policy\\Elsewhere", "read,write").await;
    let carol = s.vault_user("carol", "\\VED\\Policy", "write").await;
    let t = token(&s, &alice, SCOPE).await;
    let tb = token(&s, &bob, SCOPE).await;
    let tc = token(&s, &carol, SCOPE).await;
    let id = add(&s, &t, TEAM, b"x").await;
    let assoc = |name: &str| json!({"VaultID": id, "Name": name, "StringValue": "v"});

    // Permission cases: none, inherited Write, owner Write. To a caller with no
    // right on any owner the entry does not exist (Result 8, as for a VaultID
    // that was never issued): the Result tells nobody which VaultIDs exist.
    assert_eq!(result(&s.sdk("Associate", &tb, assoc("n")).await.1), 8);
    assert_eq!(result(&s.sdk("Associate", &tb, json!({"VaultID": id + 1000, "Name": "n", "StringValue": "v"})).await.1), 8);
    assert_eq!(result(&s.sdk("Associate", &tc, assoc("n")).await.1), 0, "Write inherited from \\VED\\Policy");
    assert_eq!(result(&s.sdk("LookupAssociationbyVaultID", &tc, json!({"VaultID": id, "Name": "n"})).await.1), 10, "no Read");
    assert_eq!(result(&s.sdk("LookupAssociationbyVaultID", &tb, json!({"VaultID": id, "Name": "n"})).await.1), 8);
    let (_, v) = s.sdk("LookupByAssociation", &tb, json!({"Name": "n"})).await;
    assert_eq!((result(&v), v["VaultIDs"].clone()), (0, json!([])), "silently left out");
    assert_eq!(
        result(
            &s.sdk(
                "Add",
                &tb,
                json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": TEAM, "Base64Data": "eA=="})
            )
            .await
            .1
        ),
        10
    );

    // Result codes.
    assert_eq!(result(&s.sdk("Associate", &t, assoc("n")).await.1), 27, "identical association");
    assert_eq!(result(&s.sdk("Associate", &t, json!({"VaultID": id, "Name": "n", "StringValue": "w"})).await.1), 0, "replaced");
    assert_eq!(result(&s.sdk("LookupAssociationbyVaultID", &t, json!({"VaultID": id, "Name": "n"})).await.1), 0);
    assert_eq!(result(&s.sdk("LookupAssociationbyVaultID", &t, json!({"VaultID": id, "Name": "none"})).await.1), 29);
    for bad_id in [json!(999_999), json!(-1), json!(0), json!("12345")] {
        let (_, v) = s.sdk("Associate", &t, json!({"VaultID": bad_id, "Name": "n", "StringValue": "v"})).await;
        assert_eq!(result(&v), 8, "VaultID {bad_id}: {v}");
    }
    // StringValue wins over IntValue over DateValue.
    assert_eq!(result(&s.sdk("Associate", &t, json!({"VaultID": id, "Name": "p", "StringValue": "s", "IntValue": 5})).await.1), 0);
    let (_, v) = s.sdk("LookupAssociationbyVaultID", &t, json!({"VaultID": id, "Name": "p"})).await;
    assert_eq!(v["Value"], "s");

    let long_name = "n".repeat(257);
    let big = "x".repeat(64 * 1024 + 1);
    let bad: Vec<(Value, &str)> = vec![
        (json!({"Name": "n", "StringValue": "v"}), "VaultID"),
        (json!({"VaultID": 1.5, "Name": "n", "StringValue": "v"}), "VaultID"),
        (json!({"VaultID": "12x", "Name": "n", "StringValue": "v"}), "VaultID"),
        (json!({"VaultID": 9_223_372_036_854_775_808u64, "Name": "n", "StringValue": "v"}), "VaultID"),
        (json!({"VaultID": id, "StringValue": "v"}), "Name"),
        (json!({"VaultID": id, "Name": "", "StringValue": "v"}), "Name"),
        (json!({"VaultID": id, "Name": long_name, "StringValue": "v"}), "Name"),
        (json!({"VaultID": id, "Name": 5, "StringValue": "v"}), "Name"),
        (json!({"VaultID": id, "Name": "n"}), "StringValue"),
        (json!({"VaultID": id, "Name": "n", "StringValue": ""}), "StringValue"),
        (json!({"VaultID": id, "Name": "n", "StringValue": big}), "StringValue"),
        (json!({"VaultID": id, "Name": "n", "StringValue": 7}), "StringValue"),
        (json!({"VaultID": id, "Name": "n", "IntValue": 1.5}), "IntValue"),
        (json!({"VaultID": id, "Name": "n", "IntValue": 9_223_372_036_854_775_808u64}), "IntValue"),
        (json!({"VaultID": id, "Name": "n", "IntValue": true}), "IntValue"),
        (json!({"VaultID": id, "Name": "n", "DateValue": "2024-02-30T00:00:00Z"}), "DateValue"),
        (json!({"VaultID": id, "Name": "n", "DateValue": "01/02/2024"}), "DateValue"),
        (json!({"VaultID": id, "Name": "n", "DateValue": "2024-01-01T00:00:00+01:00"}), "DateValue"),
    ];
    for (body, field) in bad {
        let (st, v) = s.sdk("Associate", &t, body.clone()).await;
        assert_eq!((st, result(&v)), (StatusCode::OK, 9), "{body}: {v}");
        assert!(v["Error"].as_str().unwrap().contains(field), "{body}: {v}");
    }
    for (body, field) in [
        (
            json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": TEAM, "Base64Data": "not base64!"}),
            "Base64Data",
        ),
        (json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": TEAM, "Base64Data": ""}), "Base64Data"),
        (json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "other", "Owner": TEAM, "Base64Data": "eA=="}), "Namespace"),
        (
            json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": "\\VED\\Policy\\Nope", "Base64Data": "eA=="}),
            "Owner",
        ),
        (json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": "Policy", "Base64Data": "eA=="}), "Owner"),
        (
            json!({"VaultType": 4_294_967_296u64, "Keyname": "Software:Default", "Namespace": "config", "Owner": TEAM, "Base64Data": "eA=="}),
            "VaultType",
        ),
    ] {
        let (_, v) = s.sdk("Add", &t, body.clone()).await;
        assert_eq!(result(&v), 9, "{body}: {v}");
        assert!(v["Error"].as_str().unwrap().contains(field), "{body}: {v}");
    }

    // JSON that does not parse: HTTP 400 with Error. Unknown keys are ignored.
    let r = s
        .http
        .post(s.at("/vedsdk/SecretStore/Associate"))
        .bearer_auth(&t)
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.json::<Value>().await.unwrap()["Error"].is_string());
    let (_, v) = s.sdk("Associate", &t, json!({"VaultID": id, "Name": "q", "StringValue": "v", "Whatever": [1]})).await;
    assert_eq!(result(&v), 0);

    // Bearer: none → 401, too small a scope → 403 (never 401).
    let r = s.http.post(s.at("/vedsdk/SecretStore/Associate")).json(&assoc("z")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let small = token(&s, &alice, "restricted").await;
    let (st, v) = s.sdk("Associate", &small, assoc("z")).await;
    assert_eq!((st, v["error"].as_str()), (StatusCode::FORBIDDEN, Some("insufficient_scope")));
    assert!(v["error_description"].as_str().unwrap().contains("restricted:manage"));
    // Any valid scope reads the log (the product's rule).
    let r = s.http.get(s.at("/vedsdk/Log")).bearer_auth(&small).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // A read scope suffices for reads.
    assert_eq!(result(&s.sdk("LookupByAssociation", &small, json!({"Name": "n"})).await.1), 0);
}

/// LookupByAssociation reads its body before its one context read (the
/// entries come with the caller): the token is still judged first, then the
/// scope, then the body; and an entry the caller cannot read is left out.
#[tokio::test]
async fn lookup_by_association_judges_token_scope_then_body_in_one_read() {
    let s = server().await;
    let alice = s.vault_user("alice", TEAM, "read,write").await;
    let bob = s.vault_user("bob", "\\VED\\Policy\\Team B", "read,write").await;
    let (ta, tb) = (token(&s, &alice, SCOPE).await, token(&s, &bob, SCOPE).await);
    let mine = add(&s, &ta, TEAM, b"a").await;
    let theirs = add(&s, &tb, "\\VED\\Policy\\Team B", b"b").await;
    for (t, id) in [(&ta, mine), (&tb, theirs)] {
        let (_, v) = s.sdk("Associate", t, json!({"VaultID": id, "Name": "env", "StringValue": "prod"})).await;
        assert_eq!(result(&v), 0, "{v}");
    }
    let (st, v) = s.sdk("LookupByAssociation", &ta, json!({"Name": "env", "StringValue": "prod"})).await;
    assert_eq!((st, &v["VaultIDs"]), (StatusCode::OK, &json!([mine])), "bob's entry is left out");
    let (_, v) = s.sdk("LookupByAssociation", &tb, json!({"Name": "env"})).await;
    assert_eq!(v["VaultIDs"], json!([theirs]));

    // A bad token is 401 whatever the body, a valid one without the scope 403, then the body's fault.
    let bad_body = json!({"StringValue": "prod"});
    let (st, _) = s.sdk("LookupByAssociation", "not-a-token", bad_body.clone()).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    let r = s
        .http
        .post(s.at("/vedsdk/SecretStore/LookupByAssociation"))
        .bearer_auth(&ta)
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST, "a body it cannot read, as the vault's other calls");
    assert!(r.json::<Value>().await.unwrap()["Error"].is_string());
    let noscope = token(&s, &alice, "admin:viewlogs").await;
    let (st, v) = s.sdk("LookupByAssociation", &noscope, bad_body.clone()).await;
    assert_eq!((st, v["error"].as_str()), (StatusCode::FORBIDDEN, Some("insufficient_scope")));
    let (st, v) = s.sdk("LookupByAssociation", &ta, bad_body).await;
    assert_eq!(st, StatusCode::OK);
    assert_ne!(result(&v), 0, "{v}");
    assert_eq!(v["Error"].as_str(), Some("Name is required."), "{v}");
}

#[tokio::test]
async fn a_failed_event_write_leaves_no_change() {
    let s = server().await;
    let alice = s.vault_user("alice", TEAM, "read,write").await;
    let t = token(&s, &alice, SCOPE).await;
    let id = add(&s, &t, TEAM, b"x").await;
    let db = rusqlite::Connection::open(s.db_path()).unwrap();
    db.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
    db.execute_batch(
        "CREATE TRIGGER fail_vault_events BEFORE INSERT ON events WHEN NEW.kind IN ('vault.associated', 'vault.added') \
         BEGIN SELECT RAISE(ABORT, 'forced failure'); END;",
    )
    .unwrap();
    let before = s.event_kinds().await.len();
    let (st, v) = s.sdk("Associate", &t, json!({"VaultID": id, "Name": "n", "StringValue": "v"})).await;
    assert_eq!((st, result(&v)), (StatusCode::OK, 22), "{v}");
    let (st, v) = s
        .sdk("Add", &t, json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": TEAM, "Base64Data": "eA=="}))
        .await;
    assert_eq!((st, result(&v)), (StatusCode::OK, 22));
    assert_eq!(result(&s.sdk("LookupAssociationbyVaultID", &t, json!({"VaultID": id, "Name": "n"})).await.1), 29, "nothing stored");
    let (_, v) =
        s.http.get(s.at("/vedsdk/SecretStore/Lookup")).bearer_auth(&t).send().await.unwrap().json::<Value>().await.map(|v| (0, v)).unwrap();
    assert_eq!(v["VaultIDs"], json!([id]), "no entry added");
    assert_eq!(s.event_kinds().await.len(), before);
    db.execute_batch("DROP TRIGGER fail_vault_events").unwrap();
    assert_eq!(result(&s.sdk("Associate", &t, json!({"VaultID": id, "Name": "n", "StringValue": "v"})).await.1), 0);
    // Every association has its event.
    let assoc: i64 = db.query_row("SELECT count(*) FROM associations", [], |r| r.get(0)).unwrap();
    let events: i64 = db.query_row("SELECT count(*) FROM events WHERE kind = 'vault.associated'", [], |r| r.get(0)).unwrap();
    assert_eq!((assoc, events), (1, 1));
}

fn random_marker() -> String {
    let mut b = [0u8; 18];
    getrandom::getrandom(&mut b).unwrap();
    format!("MARK{}", b.iter().map(|x| format!("{x:02x}")).collect::<String>())
}

#[tokio::test]
async fn values_are_encrypted_at_rest_and_tampering_is_detected() {
    let s = server().await;
    let alice = s.vault_user("alice", TEAM, "read,write").await;
    let root = s.admin.create_user("root", &strongroom_core::secret::Secret::new(crate::support::PASSWORD), true).await.unwrap();
    let t = token(&s, &alice, SCOPE).await;
    let rt = token(&s, &root, SCOPE).await;
    let mut markers = Vec::new();
    let mut ids = Vec::new();
    for i in 0..20 {
        let data = random_marker();
        let value = random_marker();
        let id = add(&s, &t, TEAM, data.as_bytes()).await;
        let (_, v) = s.sdk("Associate", &t, json!({"VaultID": id, "Name": format!("n{i}"), "StringValue": value})).await;
        assert_eq!(result(&v), 0);
        markers.extend([data, value]);
        ids.push(id);
    }
    let mut files = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        let p = format!("{}{suffix}", s.db_path().display());
        if let Ok(b) = std::fs::read(&p) {
            files.push((p, b));
        }
    }
    assert!(files.iter().map(|(_, b)| b.len()).sum::<usize>() > 10_000, "the database was read");
    for m in &markers {
        for form in [m.clone(), STANDARD.encode(m), m.bytes().map(|b| format!("{b:02x}")).collect()] {
            for (p, bytes) in &files {
                assert!(!bytes.windows(form.len()).any(|w| w == form.as_bytes()), "{form} found in {p}");
            }
        }
    }

    // A flipped ciphertext byte, and a ciphertext moved to another entry: Result 11, never data.
    let db = rusqlite::Connection::open(s.db_path()).unwrap();
    db.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
    // XOR, not overwrite: an overwritten byte may already hold the new value.
    let sealed: Vec<u8> = db.query_row("SELECT sealed FROM associations WHERE vault_id = ?1", [ids[0]], |r| r.get(0)).unwrap();
    let mut flipped = sealed.clone();
    flipped[30] ^= 0x01;
    assert_ne!(flipped, sealed);
    assert_eq!(db.execute("UPDATE associations SET sealed = ?1 WHERE vault_id = ?2", rusqlite::params![flipped, ids[0]]).unwrap(), 1);
    let (_, v) = s.sdk("LookupAssociationbyVaultID", &t, json!({"VaultID": ids[0], "Name": "n0"})).await;
    assert_eq!(result(&v), 11, "{v}");
    db.execute(
        "UPDATE associations SET sealed = (SELECT sealed FROM associations WHERE vault_id = ?1) WHERE vault_id = ?2",
        [ids[1], ids[2]],
    )
    .unwrap();
    let (_, v) = s.sdk("LookupAssociationbyVaultID", &t, json!({"VaultID": ids[2], "Name": "n2"})).await;
    assert_eq!(result(&v), 11, "{v}");
    db.execute(
        "UPDATE vault_entries SET sealed = (SELECT sealed FROM vault_entries WHERE vault_id = ?1) WHERE vault_id = ?2",
        [ids[3], ids[4]],
    )
    .unwrap();
    assert_eq!(result(&s.sdk("Retrieve", &rt, json!({"VaultID": ids[4]})).await.1), 11);
    // The untouched ones still read.
    let (_, v) = s.sdk("LookupAssociationbyVaultID", &t, json!({"VaultID": ids[5], "Name": "n5"})).await;
    assert_eq!(v["Value"], markers[11]);
}

#[tokio::test]
async fn key_rotation_reencrypts_everything() {
    let s = server().await;
    let alice = s.vault_user("alice", TEAM, "read,write").await;
    let root = s.admin.create_user("root", &strongroom_core::secret::Secret::new(crate::support::PASSWORD), true).await.unwrap();
    let t = token(&s, &alice, SCOPE).await;
    let rt = token(&s, &root, SCOPE).await;
    let mut ids = Vec::new();
    for i in 0..30 {
        let id = add(&s, &t, TEAM, format!("data{i}").as_bytes()).await;
        assert_eq!(result(&s.sdk("Associate", &t, json!({"VaultID": id, "Name": "n", "IntValue": i})).await.1), 0);
        ids.push(id);
    }
    let rotated = s.admin.rotate_keys(None, &mut |_, _| {}).await.unwrap();
    let (key, n) = (rotated.iter().map(|r| r.1).max().unwrap(), rotated.iter().map(|r| r.2).sum::<u64>());
    assert_eq!((key, n), (2, 60));
    let db = rusqlite::Connection::open(s.db_path()).unwrap();
    let old: i64 = db
        .query_row(
            "SELECT (SELECT count(*) FROM vault_entries WHERE key_id <> 2) + (SELECT count(*) FROM associations WHERE key_id <> 2)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(old, 0);
    for (i, id) in ids.iter().enumerate() {
        let (_, v) = s.sdk("LookupAssociationbyVaultID", &t, json!({"VaultID": id, "Name": "n"})).await;
        assert_eq!(v["Value"], i.to_string());
        let (_, v) = s.sdk("Retrieve", &rt, json!({"VaultID": id})).await;
        assert_eq!(v["Base64Data"], STANDARD.encode(format!("data{i}")));
    }
    let (_, v) = s.sdk("LookupByAssociation", &t, json!({"Name": "n", "IntValue": 7})).await;
    assert_eq!(v["VaultIDs"], json!([ids[7]]), "lookups survive rotation");
    let new = add(&s, &t, TEAM, b"after").await;
    let k: i64 = db.query_row("SELECT key_id FROM vault_entries WHERE vault_id = ?1", [new], |r| r.get(0)).unwrap();
    assert_eq!(k, 2, "new writes use the new key");
    assert!(s.event_kinds().await.iter().any(|k| k == "vault.resealed"));
}

#[tokio::test]
async fn the_event_chain_detects_edits_and_deletions() {
    for tamper in [
        "UPDATE events SET detail = 'edited' WHERE seq = 3",
        "DELETE FROM events WHERE seq = 4",
        "DELETE FROM events WHERE seq = (SELECT max(seq) FROM events)",
    ] {
        let s = server().await;
        let alice = s.vault_user("alice", TEAM, "read,write").await;
        let t = token(&s, &alice, SCOPE).await;
        add(&s, &t, TEAM, b"x").await;
        let n = s.admin.verify_events().await.unwrap().events;
        assert!(n >= 6, "{n}");
        let db = rusqlite::Connection::open(s.db_path()).unwrap();
        db.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
        db.execute_batch(tamper).unwrap();
        let err = s.admin.verify_events().await.unwrap_err();
        assert!(err.to_string().contains("event"), "{tamper}: {err}");
    }
}
