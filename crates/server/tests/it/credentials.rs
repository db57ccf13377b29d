//! Credential objects (`/vedsdk/Credentials/*`) over HTTP, with
//! the bodies pyvenafi's `Credentials` endpoints send: whoever holds Read
//! on a credential (directly, through a group, or as a machine identity)
//! reads it back, whoever does not is refused; every read is a chained
//! event; values are sealed at rest and never reach the event log.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::TestServer;
use strongroom_core::vault::Rights;

const TEAM: &str = "\\VED\\Policy\\Team A";
const SCOPE: &str = "security:manage,delete";
const SECRET: &str = "correct horse battery staple";

async fn token(s: &TestServer, user: &strongroom_core::identity::User, scope: &str) -> String {
    s.tokens_for(user, "app", scope).await["access_token"].as_str().unwrap().to_owned()
}

async fn call(s: &TestServer, op: &str, t: &str, body: Value) -> (StatusCode, Value) {
    s.sdk(&format!("../Credentials/{op}"), t, body).await
}

/// The `Result` of a call answered HTTP 200.
async fn result(s: &TestServer, op: &str, t: &str, body: Value) -> i64 {
    let (st, v) = call(s, op, t, body).await;
    assert_eq!(st, StatusCode::OK, "{op}: {v}");
    v["Result"].as_i64().unwrap_or_else(|| panic!("{op}: no Result in {v}"))
}

/// `Credentials.Create.post` as pyvenafi's `UsernamePasswordCredential.create` sends it.
fn pyvenafi_create(dn: &str, username: &str, password: &str) -> Value {
    json!({
        "CredentialPath": dn,
        "Password": null,
        "FriendlyName": "UsernamePassword",
        "Values": [
            {"Name": "Username", "Type": "string", "Value": username},
            {"Name": "Password", "Type": "string", "Value": password}
        ],
        "Expiration": "/Date(1900000000000)/",
        "Description": null,
        "EncryptionKey": null,
        "Shared": false,
        "Contact": null
    })
}

fn value_of<'a>(v: &'a Value, name: &str) -> Option<&'a str> {
    v["Values"].as_array()?.iter().find(|x| x["Name"] == name)?["Value"].as_str()
}

#[tokio::test]
async fn read_only_users_retrieve_credentials_and_every_read_is_an_event() {
    let s = TestServer::start().await;
    s.integration("app", SCOPE, |_| {}).await;
    let alice = s.vault_user("alice", TEAM, "view,read,write,create,delete,rename").await;
    let bob = s.vault_user("bob", TEAM, "read").await;
    let eve = s.vault_user("eve", TEAM, "view").await;
    let carol = s.user("carol").await;
    let dave = s.user("dave").await;
    s.admin.create_group("readers").await.unwrap();
    s.admin.add_member("readers", "dave").await.unwrap();
    s.admin.set_group_rights(TEAM, "readers", Rights::READ).await.unwrap();
    let (ta, tb, te, tc, td) = (
        token(&s, &alice, SCOPE).await,
        token(&s, &bob, SCOPE).await,
        token(&s, &eve, SCOPE).await,
        token(&s, &carol, SCOPE).await,
        token(&s, &dave, SCOPE).await,
    );
    let dn = format!("{TEAM}\\db");

    // alice writes; writing it again is 401 (ObjectAlreadyExists: pyvenafi's get_if_already_exists).
    assert_eq!(result(&s, "Create", &ta, pyvenafi_create(&dn, "svc", SECRET)).await, 1);
    assert_eq!(result(&s, "Create", &ta, pyvenafi_create(&dn, "svc", SECRET)).await, 401);
    // Read only cannot write.
    assert_eq!(result(&s, "Create", &tb, pyvenafi_create(&format!("{TEAM}\\b"), "x", "y")).await, 7);

    // Read only (directly, or through a group) reads it back.
    for t in [&tb, &td, &ta] {
        let (st, v) = call(&s, "Retrieve", t, json!({"CredentialPath": dn})).await;
        assert_eq!((st, v["Result"].as_i64()), (StatusCode::OK, Some(1)), "{v}");
        assert_eq!(v["Classname"], "Username Password Credential");
        assert_eq!(v["FriendlyName"], "UsernamePassword");
        assert_eq!(v["Expiration"], "/Date(1900000000000)/");
        assert_eq!(value_of(&v, "Username"), Some("svc"));
        assert_eq!(value_of(&v, "Password"), Some(SECRET));
    }
    // No Read: View alone is 7; no right at all is 400 (as if there were none).
    assert_eq!(result(&s, "Retrieve", &te, json!({"CredentialPath": dn})).await, 7);
    assert_eq!(result(&s, "Retrieve", &tc, json!({"CredentialPath": dn})).await, 400);
    assert_eq!(result(&s, "Retrieve", &tb, json!({"CredentialPath": format!("{TEAM}\\nothing")})).await, 400);
    // A plain folder is no credential.
    assert_eq!(result(&s, "Retrieve", &tb, json!({"CredentialPath": TEAM})).await, 400);
    // SecretStore/Retrieve stays Master Admin only.
    assert_eq!(s.sdk("Retrieve", &tb, json!({"VaultID": 1})).await.0, StatusCode::FORBIDDEN, "restricted:manage is not granted");

    // Update: Write needed; the class cannot change.
    let update = |pw: &str| {
        json!({"CredentialPath": dn, "FriendlyName": "UsernamePassword", "Values": [
            {"Name": "Username", "Type": "string", "Value": "svc"}, {"Name": "Password", "Type": "string", "Value": pw}],
            "Description": null, "EncryptionKey": null, "Shared": false, "Contact": null, "Expiration": "/Date(1900000000001)/"})
    };
    assert_eq!(result(&s, "Update", &tb, update("nope")).await, 7);
    let mut other = update("x");
    other["FriendlyName"] = json!("Password");
    assert_eq!(result(&s, "Update", &ta, other).await, 1004);
    assert_eq!(result(&s, "Update", &ta, update("rotated secret")).await, 1);
    let (_, v) = call(&s, "Retrieve", &tb, json!({"credentialpath": dn})).await;
    assert_eq!((value_of(&v, "Password"), v["Expiration"].as_str()), (Some("rotated secret"), Some("/Date(1900000000001)/")));

    // Values the class does not hold, or lacks.
    let mut bad = pyvenafi_create(&format!("{TEAM}\\bad"), "u", "p");
    bad["Values"][0]["Name"] = json!("Certificate");
    assert_eq!(result(&s, "Create", &ta, bad).await, 112);
    let lacking = json!({"CredentialPath": format!("{TEAM}\\bad"), "FriendlyName": "Password", "Values": []});
    assert_eq!(result(&s, "Create", &ta, lacking).await, 110);

    // The other classes, as pyvenafi's features build them.
    let generic = json!({"CredentialPath": format!("{TEAM}\\gen"), "FriendlyName": "Generic", "Values": [
        {"Name": "Generic", "Type": "byte[]", "Value": "AAEC"}, {"Name": "Password", "Type": "string", "Value": null}],
        "Expiration": "/Date(1900000000000)/", "Shared": false});
    assert_eq!(result(&s, "Create", &ta, generic).await, 1);
    let password = json!({"CredentialPath": format!("{TEAM}\\pw"), "FriendlyName": "Password", "Values": [
        {"Name": "Password", "Type": "string", "Value": "p"}], "Expiration": "/Date(1900000000000)/"});
    assert_eq!(result(&s, "Create", &ta, password).await, 1);

    // Enumerate: what the caller holds a right on; nothing for carol.
    let (_, v) = call(&s, "Enumerate", &tb, json!({"CredentialPath": TEAM, "Recursive": false, "Pattern": null})).await;
    assert_eq!(v["Result"], 1, "{v}");
    let names: Vec<&str> = v["CredentialInfos"].as_array().unwrap().iter().map(|c| c["FullName"].as_str().unwrap()).collect();
    assert_eq!(names, [format!("{TEAM}\\db"), format!("{TEAM}\\gen"), format!("{TEAM}\\pw")]);
    assert_eq!(v["CredentialInfos"][1]["ClassName"], "Generic Credential");
    let (_, v) = call(&s, "Enumerate", &tb, json!({"CredentialPath": "\\VED\\Policy", "Recursive": true, "Pattern": "p*"})).await;
    assert_eq!(v["CredentialInfos"], json!([{"ClassName": "Password Credential", "FullName": format!("{TEAM}\\pw")}]));
    let (_, v) = call(&s, "Enumerate", &tc, json!({"CredentialPath": TEAM})).await;
    assert_eq!(v["CredentialInfos"], json!([]));

    // No credential inside a credential; a folder made below one by other means stops its deletion before anything goes.
    assert_eq!(result(&s, "Create", &ta, pyvenafi_create(&format!("{dn}\\inner"), "u", "p")).await, 407);
    s.admin.create_folder(&format!("{TEAM}\\pw\\below")).await.unwrap();
    assert_eq!(result(&s, "Delete", &ta, json!({"CredentialPath": format!("{TEAM}\\pw")})).await, 402);
    assert_eq!(result(&s, "Retrieve", &tb, json!({"CredentialPath": format!("{TEAM}\\pw")})).await, 1, "still there");

    // Rename moves the sealed entry with it; it still opens.
    let renamed = format!("{TEAM}\\database");
    assert_eq!(result(&s, "Rename", &tb, json!({"CredentialPath": dn, "NewCredentialPath": renamed})).await, 7);
    assert_eq!(result(&s, "Rename", &ta, json!({"CredentialPath": dn, "NewCredentialPath": renamed})).await, 1);
    assert_eq!(result(&s, "Retrieve", &tb, json!({"CredentialPath": dn})).await, 400);
    let (_, v) = call(&s, "Retrieve", &tb, json!({"CredentialPath": renamed})).await;
    assert_eq!(value_of(&v, "Password"), Some("rotated secret"), "{v}");

    // Every successful read is one chained event; none names a value.
    let retrieved = s.event_kinds().await.iter().filter(|k| *k == "credential.retrieved").count();
    assert_eq!(retrieved, 6, "three first reads, one after the update, one of pw, one after the rename");
    let events = s.store.events(strongroom_store::EventFilter { limit: 10_000, ..Default::default() }).await.unwrap();
    let text = format!("{events:?}");
    assert!(!text.contains(SECRET) && !text.contains("rotated secret"), "a value reached the event log");
    assert!(s.admin.verify_events().await.unwrap().events > 10);
    // Sealed at rest.
    let db = std::fs::read(s.db_path()).unwrap();
    let wal = std::fs::read(s.db_path().with_extension("db-wal")).unwrap_or_default();
    for bytes in [&db, &wal] {
        assert!(!bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()), "the value is stored in the clear");
    }

    // Delete: Write and Delete needed; then it is gone, folder and all.
    assert_eq!(result(&s, "Delete", &tb, json!({"CredentialPath": renamed})).await, 7);
    assert_eq!(result(&s, "Delete", &ta, json!({"CredentialPath": renamed})).await, 1);
    assert_eq!(result(&s, "Retrieve", &ta, json!({"CredentialPath": renamed})).await, 400);
    assert_eq!(result(&s, "Delete", &ta, json!({"CredentialPath": renamed})).await, 400);
    assert_eq!(result(&s, "Create", &ta, pyvenafi_create(&renamed, "svc", "again")).await, 1, "the DN is free again");
    s.stop().await;
}

#[tokio::test]
async fn scopes_and_tokens() {
    let s = TestServer::start().await;
    s.integration("app", "security:manage,delete;restricted:manage", |_| {}).await;
    let alice = s.vault_user("alice", TEAM, "view,read,write,create").await;
    let read_only = token(&s, &alice, "security").await;
    let dn = format!("{TEAM}\\x");
    let (st, v) = call(&s, "Create", &read_only, pyvenafi_create(&dn, "u", "p")).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{v}");
    assert_eq!(v["error"], "insufficient_scope");
    let restricted = token(&s, &alice, "restricted:manage").await;
    assert_eq!(call(&s, "Retrieve", &restricted, json!({"CredentialPath": dn})).await.0, StatusCode::FORBIDDEN);
    let manage = token(&s, &alice, "security:manage").await;
    assert_eq!(result(&s, "Create", &manage, pyvenafi_create(&dn, "u", "p")).await, 1);
    assert_eq!(call(&s, "Delete", &manage, json!({"CredentialPath": dn})).await.0, StatusCode::FORBIDDEN, "security:delete");
    assert_eq!(
        call(&s, "Retrieve", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", json!({"CredentialPath": dn})).await.0,
        StatusCode::UNAUTHORIZED
    );
    // The credential's entry is not the SecretStore's to read or change, even for a Master Admin (Result 14).
    let root = s.admin.create_user("root", &strongroom_core::secret::Secret::new(crate::support::PASSWORD), true).await.unwrap();
    let rt = token(&s, &root, "restricted:manage").await;
    let (_, v) = s.sdk("LookupByOwner", &rt, json!({"Namespace": "config", "Owner": dn})).await;
    let id = v["VaultIDs"][0].as_i64().unwrap_or_else(|| panic!("{v}"));
    assert_eq!(s.sdk("Retrieve", &rt, json!({"VaultID": id})).await.1["Result"], 14);
    assert_eq!(s.sdk("Associate", &rt, json!({"VaultID": id, "Name": "n", "StringValue": "v"})).await.1["Result"], 14);
    assert_eq!(s.sdk("Mutate", &rt, json!({"VaultID": id, "VaultType": 32})).await.1["Result"], 14);
    assert_eq!(result(&s, "Retrieve", &token(&s, &alice, "security").await, json!({"CredentialPath": dn})).await, 1);
    // Names a new folder may not have.
    assert_eq!(result(&s, "Create", &manage, pyvenafi_create(&format!("{TEAM}\\.."), "u", "p")).await, 405);
    assert_eq!(result(&s, "Create", &manage, pyvenafi_create(&format!("{TEAM}\\a\u{200b}b"), "u", "p")).await, 405);
    // Outside \VED\Policy, and not JSON.
    assert_eq!(result(&s, "Create", &manage, pyvenafi_create("\\VED\\Identity\\x", "u", "p")).await, 407);
    let r = s.http.post(s.at("/vedsdk/Credentials/Retrieve")).bearer_auth(&manage).body("{").send().await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    s.stop().await;
}

/// A machine identity (the JWT grant) holding Read on the folder reads a credential back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_identity_with_read_retrieves() {
    use strongroom_app::admin::machines::MappingSpec;
    use strongroom_core::time::Clock as _;

    let s = TestServer::start().await;
    s.integration("app", SCOPE, |_| {}).await;
    let alice = s.vault_user("alice", TEAM, "view,read,write,create").await;
    let ta = token(&s, &alice, SCOPE).await;
    let dn = format!("{TEAM}\\deploy-key");
    assert_eq!(result(&s, "Create", &ta, pyvenafi_create(&dn, "deployer", SECRET)).await, 1);

    let es = crate::support::Es256Issuer::save(&s, |_| {}).await;
    let issuer = crate::support::Es256Issuer::ISSUER;
    s.integration("ci", "security", |i| i.allow_all_users = false).await;
    let spec = MappingSpec { name: "deploy".into(), clients: vec!["ci".into()], scope: "security".into() };
    s.admin.save_jwt_mapping(spec, "es", &["sub=repo:*".into()], "sub").await.unwrap();
    let jwt = |sub: &str| {
        let now = s.clock.now().secs();
        es.sign(&json!({"iss": issuer, "aud": "strongroom", "sub": sub, "iat": now, "exp": now + 60, "jti": sub}))
    };
    let machine_token = |sub: &'static str| {
        let jwt = jwt(sub);
        let server = &s;
        async move {
            let (st, v) = server.post_json("/vedauth/authorize/jwt", json!({"client_id": "ci", "jwt": jwt, "scope": "security"})).await;
            assert_eq!(st, StatusCode::OK, "{v}");
            v["access_token"].as_str().unwrap().to_owned()
        }
    };

    // Named in a grant of Read before its first token; another machine of the same mapping holds nothing.
    s.admin.set_rights(TEAM, "jwt+deploy:repo:app", Rights::READ).await.unwrap();
    let (_, v) = call(&s, "Retrieve", &machine_token("repo:app").await, json!({"CredentialPath": dn})).await;
    assert_eq!((v["Result"].as_i64(), value_of(&v, "Password")), (Some(1), Some(SECRET)), "{v}");
    assert_eq!(result(&s, "Retrieve", &machine_token("repo:other").await, json!({"CredentialPath": dn})).await, 400);
    s.stop().await;
}
