//! `Config/*`: the `\VED` tree's folders and local identities as
//! objects, each `Result` code, the scopes, and who sees what.

use reqwest::StatusCode;
use serde_json::{Value, json};
use strongroom_core::identity::User;
use strongroom_core::secret::Secret;
use strongroom_core::vault::Rights;

use crate::support::{PASSWORD, TestServer};

pub const FULL: &str = "configuration:delete,manage;security:delete,manage;restricted:manage";

pub async fn token(s: &TestServer, user: &User, scope: &str) -> String {
    s.tokens_for(user, "admin-app", scope).await["access_token"].as_str().unwrap().to_owned()
}

/// A server with an integration for every scope, a Master Admin `root` and a plain user `bob`.
pub async fn setup() -> (TestServer, String, String, User) {
    let s = TestServer::start().await;
    s.integration("admin-app", FULL, |i| i.password = Some(true)).await;
    let root = s.admin.create_user("root", &Secret::new(PASSWORD), true).await.unwrap();
    let bob = s.user("bob").await;
    let (rt, bt) = (token(&s, &root, FULL).await, token(&s, &bob, FULL).await);
    (s, rt, bt, bob)
}

/// `POST /vedsdk/<path>` with a bearer token, as a client spells it.
pub async fn call(s: &TestServer, path: &str, token: &str, body: Value) -> (StatusCode, Value) {
    let r = s.http.post(s.at(&format!("/vedsdk/{path}"))).bearer_auth(token).json(&body).send().await.unwrap();
    let status = r.status();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path}: {status} {text}")))
}

/// The `Result` of an HTTP 200 Config answer (anything else fails the test).
pub async fn result(s: &TestServer, path: &str, token: &str, body: Value) -> (i64, Value) {
    let (st, v) = call(s, path, token, body).await;
    assert_eq!(st, StatusCode::OK, "{path}: {v}");
    let r = v["Result"].as_i64().unwrap_or_else(|| panic!("{path}: no Result in {v}"));
    if r != 1 {
        assert!(!v["Error"].as_str().unwrap_or_default().is_empty(), "{path}: Result {r} without an Error: {v}");
    }
    (r, v)
}

#[tokio::test]
async fn create_answers_each_result_code() {
    let (s, root, bob, _) = setup().await;
    let (r, v) = result(&s, "config/create", &root, json!({"ObjectDN": "\\VED\\Policy\\TeamA", "Class": "Policy"})).await;
    assert_eq!(r, 1, "{v}");
    let o = &v["Object"];
    assert_eq!(o["DN"], "\\VED\\Policy\\TeamA");
    assert_eq!((o["Name"].as_str(), o["Parent"].as_str(), o["TypeName"].as_str()), (Some("TeamA"), Some("\\VED\\Policy"), Some("Policy")));
    let guid = o["GUID"].as_str().unwrap();
    assert!(guid.starts_with('{') && guid.ends_with('}') && guid.len() == 38, "{guid}");
    assert!(o["Id"].is_i64() && o["Revision"].is_i64(), "integers for Go vcert: {o}");
    // pyvenafi's spelling, with a trailing backslash and an empty attribute list.
    let (r, _) =
        result(&s, "Config/Create", &root, json!({"ObjectDN": "\\VED\\Policy\\TeamA\\", "Class": "Policy", "NameAttributeList": []})).await;
    assert_eq!(r, 401, "exists");
    assert_eq!(result(&s, "config/create", &root, json!({"ObjectDN": "\\VED\\Policy\\Nope\\X", "Class": "Policy"})).await.0, 400);
    assert_eq!(result(&s, "config/create", &root, json!({"ObjectDN": "\\VED\\Policy\\a*b", "Class": "Policy"})).await.0, 405);
    // Names a new folder may not have are the caller's mistake (405), never a 500.
    for name in ["..", "a\u{202E}b", "a\u{200B}b"] {
        let dn = format!("\\VED\\Policy\\{name}");
        assert_eq!(result(&s, "config/create", &root, json!({"ObjectDN": dn, "Class": "Policy"})).await.0, 405, "{name:?}");
    }
    assert_eq!(result(&s, "config/create", &root, json!({"ObjectDN": "\\VED\\Policy\\D", "Class": "Device"})).await.0, 406);
    assert_eq!(result(&s, "config/create", &root, json!({"ObjectDN": "\\VED\\Identity\\x", "Class": "Policy"})).await.0, 407);
    // Bob sees \VED\Policy but holds no Create there.
    assert_eq!(result(&s, "config/create", &bob, json!({"ObjectDN": "\\VED\\Policy\\TeamB", "Class": "Policy"})).await.0, 7);
    s.admin.set_rights("\\VED\\Policy\\TeamA", "bob", Rights::CREATE).await.unwrap();
    assert_eq!(result(&s, "config/create", &bob, json!({"ObjectDN": "\\VED\\Policy\\TeamA\\App", "Class": "Policy"})).await.0, 1);
    // A folder made by the API keeps its GUID, and the event names the caller.
    let events = s.store.events(strongroom_store::EventFilter { limit: 1000, ..Default::default() }).await.unwrap();
    let made = events.iter().rfind(|e| e.event.kind.as_str() == "folder.created").unwrap();
    assert_eq!(made.event.object, "\\VED\\Policy\\TeamA\\App");
    assert!(made.event.identity.starts_with("local:{"), "{:?}", made.event.identity);
    // Users: Master Admin only, without a usable password.
    assert_eq!(result(&s, "config/create", &bob, json!({"ObjectDN": "\\VED\\Identity\\carol", "Class": "User"})).await.0, 7);
    let (r, v) = result(&s, "config/create", &root, json!({"ObjectDN": "\\VED\\Identity\\carol", "Class": "User"})).await;
    assert_eq!((r, v["Object"]["TypeName"].as_str()), (1, Some("User")), "{v}");
    let carol = s.store.user_by_name("carol".into()).await.unwrap().unwrap().0;
    assert_eq!(v["Object"]["GUID"].as_str().unwrap(), format!("{{{}}}", carol.id.as_str()), "the user's object GUID is its Universal");
    assert_eq!(result(&s, "config/create", &root, json!({"ObjectDN": "\\VED\\Identity\\carol", "Class": "User"})).await.0, 401);
    let (st, login) = s
        .post_json(
            "/vedauth/authorize/oauth",
            json!({"client_id": "admin-app", "username": "carol", "password": "any password at all", "scope": "configuration"}),
        )
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "no password works for carol yet: {login}");
    s.stop().await;
}

#[tokio::test]
async fn objects_are_found_by_dn_and_guid_and_seen_only_with_view() {
    let (s, root, bob, _) = setup().await;
    let (_, v) = result(&s, "config/create", &root, json!({"ObjectDN": "\\VED\\Policy\\TeamA", "Class": "Policy"})).await;
    let guid = v["Object"]["GUID"].as_str().unwrap().to_owned();
    let bare = guid.trim_matches(|c| c == '{' || c == '}').to_owned();
    // Invisible to bob: reported as absent (400 with an Error, which Go vcert requires).
    let (r, v) = result(&s, "Config/IsValid", &bob, json!({"ObjectDN": "\\VED\\Policy\\TeamA"})).await;
    assert_eq!(r, 400, "{v}");
    assert_eq!(result(&s, "config/DnToGuid", &bob, json!({"ObjectDN": "\\VED\\Policy\\TeamA"})).await.0, 400);
    s.admin.set_rights("\\VED\\Policy\\TeamA", "bob", Rights::VIEW).await.unwrap();
    for body in [json!({"ObjectDN": "\\\\VED\\\\Policy\\\\teama\\"}), json!({"ObjectGUID": guid}), json!({"objectguid": bare})] {
        let (r, v) = result(&s, "Config/IsValid", &bob, body.clone()).await;
        assert_eq!((r, v["Object"]["DN"].as_str()), (1, Some("\\VED\\Policy\\TeamA")), "{body}: {v}");
    }
    let (r, v) = result(&s, "config/dntoguid", &bob, json!({"ObjectDN": "\\VED\\Policy\\TeamA"})).await;
    assert_eq!((r, v["GUID"].as_str(), v["ClassName"].as_str()), (1, Some(guid.as_str()), Some("Policy")));
    assert!(v["Revision"].is_i64());
    let (r, v) = result(&s, "Config/GuidToDn", &bob, json!({"ObjectGUID": guid})).await;
    assert_eq!((r, v["ObjectDN"].as_str()), (1, Some("\\VED\\Policy\\TeamA")));
    assert_eq!(result(&s, "Config/GuidToDn", &bob, json!({"ObjectGUID": "{00000000-1111-4111-8111-000000000000}"})).await.0, 400);
    assert_eq!(result(&s, "Config/GuidToDn", &bob, json!({"ObjectGUID": "not a guid"})).await.0, 400);
    assert_eq!(result(&s, "Config/IsValid", &bob, json!({})).await.0, 400);
    // The roots have fixed GUIDs.
    let (_, v) = result(&s, "config/dntoguid", &bob, json!({"ObjectDN": "\\VED\\Policy"})).await;
    assert_eq!(v["GUID"], format!("{{{}}}", strongroom_core::tree::POLICY_GUID));
    // DnToGuid and GuidToDn take any scope; IsValid needs configuration.
    let root_user = s.store.user_by_name("root".into()).await.unwrap().unwrap().0;
    let security_only = token(&s, &root_user, "security").await;
    assert_eq!(result(&s, "config/dntoguid", &security_only, json!({"ObjectDN": "\\VED\\Policy\\TeamA"})).await.0, 1);
    assert_eq!(result(&s, "config/guidtodn", &security_only, json!({"ObjectGUID": guid})).await.0, 1);
    let (st, v) = call(&s, "Config/IsValid", &security_only, json!({"ObjectDN": "\\VED\\Policy\\TeamA"})).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{v}");
    s.stop().await;
}

#[tokio::test]
async fn enumerate_and_find_list_what_the_caller_sees() {
    let (s, root, bob, _) = setup().await;
    for f in ["\\VED\\Policy\\Team1", "\\VED\\Policy\\Team2", "\\VED\\Policy\\Team1\\App", "\\VED\\Policy\\Other"] {
        assert_eq!(result(&s, "config/create", &root, json!({"ObjectDN": f, "Class": "Policy"})).await.0, 1, "{f}");
    }
    let dns = |v: &Value| v["Objects"].as_array().unwrap().iter().map(|o| o["DN"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    let (_, v) = result(&s, "Config/Enumerate", &root, json!({"ObjectDN": "\\VED\\Policy"})).await;
    assert_eq!(dns(&v), ["\\VED\\Policy\\Other", "\\VED\\Policy\\Team1", "\\VED\\Policy\\Team2"]);
    // Recursive in the three spellings the clients send.
    for rec in [json!(true), json!(1), json!("true")] {
        let (_, v) =
            result(&s, "config/enumerate", &root, json!({"ObjectDN": "\\VED\\Policy", "Recursive": rec, "Pattern": "Team*"})).await;
        assert_eq!(dns(&v), ["\\VED\\Policy\\Team1", "\\VED\\Policy\\Team2"], "{rec}");
        let (_, v) = result(&s, "config/enumerate", &root, json!({"ObjectDN": "\\VED\\Policy", "Recursive": rec, "Pattern": "?pp"})).await;
        assert_eq!(dns(&v), ["\\VED\\Policy\\Team1\\App"], "{rec}");
    }
    // Bob sees only what he holds View on.
    s.admin.set_rights("\\VED\\Policy\\Team1", "bob", Rights::VIEW).await.unwrap();
    let (_, v) = result(&s, "Config/Enumerate", &bob, json!({"ObjectDN": "\\VED\\Policy", "Recursive": "1"})).await;
    assert_eq!(dns(&v), ["\\VED\\Policy\\Team1", "\\VED\\Policy\\Team1\\App"]);
    // Local users and groups under \VED\Identity, by class.
    s.admin.create_group("ops").await.unwrap();
    let (_, v) = result(&s, "Config/FindObjectsOfClass", &bob, json!({"ObjectDN": "\\VED\\Identity", "Classes": ["User", "Group"]})).await;
    assert_eq!(dns(&v), ["\\VED\\Identity\\bob", "\\VED\\Identity\\ops", "\\VED\\Identity\\root"]);
    let bob_user = s.store.user_by_name("bob".into()).await.unwrap().unwrap().0;
    let found = v["Objects"].as_array().unwrap().iter().find(|o| o["Name"] == "bob").unwrap();
    assert_eq!(found["GUID"], bob_user.id.universal(), "Config and Identity name the same object");
    let (_, v) = result(&s, "Config/FindObjectsOfClass", &root, json!({"Class": "Group"})).await;
    assert_eq!(dns(&v), ["\\VED\\Identity\\ops"]);
    let (_, v) =
        result(&s, "Config/FindObjectsOfClass", &root, json!({"ObjectDN": "\\VED\\Policy", "Class": "Policy", "Recursive": true})).await;
    assert_eq!(dns(&v).len(), 4);
    assert_eq!(result(&s, "Config/FindObjectsOfClass", &root, json!({"ObjectDN": "\\VED\\Policy"})).await.0, 406);
    assert_eq!(result(&s, "Config/Enumerate", &root, json!({"ObjectDN": "\\VED\\Policy\\Nope"})).await.0, 400);
    s.stop().await;
}

#[tokio::test]
async fn delete_refuses_children_and_entries_unless_recursive() {
    let (s, root, bob, bob_user) = setup().await;
    for f in ["\\VED\\Policy\\A\\Sub", "\\VED\\Policy\\B\\Sub", "\\VED\\Policy\\C\\Sub", "\\VED\\Policy\\Owner"] {
        s.admin.create_folder(f).await.unwrap();
    }
    // Recursive given as each client gives it.
    for (f, rec) in [("A", json!(0)), ("B", json!("false")), ("C", json!(false))] {
        let (r, v) = result(&s, "config/delete", &root, json!({"ObjectDN": format!("\\VED\\Policy\\{f}"), "Recursive": rec})).await;
        assert_eq!(r, 402, "{v}");
    }
    for (f, rec) in [("A", json!(1)), ("B", json!("true")), ("C", json!(true))] {
        assert_eq!(
            result(&s, "config/delete", &root, json!({"ObjectDN": format!("\\VED\\Policy\\{f}"), "Recursive": rec})).await.0,
            1,
            "{f}"
        );
    }
    assert!(!s.store.folder_exists("\\ved\\policy\\a\\sub".into()).await.unwrap());
    // A folder that owns a vault entry.
    s.admin.set_rights("\\VED\\Policy\\Owner", "bob", Rights::parse("view,read,write").unwrap()).await.unwrap();
    let (st, v) = s
        .sdk("Add", &bob, json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": "\\VED\\Policy\\Owner", "Base64Data": "eA=="}))
        .await;
    assert_eq!((st, v["Result"].as_i64()), (StatusCode::OK, Some(0)), "{v}");
    // Bob sees it but holds no Delete.
    assert_eq!(result(&s, "config/delete", &bob, json!({"ObjectDN": "\\VED\\Policy\\Owner", "Recursive": 1})).await.0, 7);
    assert_eq!(result(&s, "config/delete", &root, json!({"ObjectDN": "\\VED\\Policy\\Owner"})).await.0, 402);
    assert_eq!(result(&s, "config/delete", &root, json!({"ObjectDN": "\\VED\\Policy\\Owner", "Recursive": 1})).await.0, 1);
    assert_eq!(result(&s, "config/delete", &root, json!({"ObjectDN": "\\VED\\Policy\\Owner"})).await.0, 400);
    assert_eq!(result(&s, "config/delete", &root, json!({"ObjectDN": "\\VED\\Policy"})).await.0, 7, "roots stay");
    // Identities: Master Admin only, and never their own (the act refuses it, as in the console).
    let (r, v) = result(&s, "config/delete", &root, json!({"ObjectDN": "\\VED\\Identity\\root"})).await;
    assert_eq!(r, 7, "{v}");
    assert!(v["Error"].as_str().unwrap_or_default().contains("You cannot delete your own account"), "{v}");
    assert!(s.store.user_by_name("root".into()).await.unwrap().is_some());
    assert_eq!(result(&s, "config/delete", &bob, json!({"ObjectDN": "\\VED\\Identity\\bob"})).await.0, 7);
    assert_eq!(result(&s, "config/delete", &root, json!({"ObjectDN": "\\VED\\Identity\\bob"})).await.0, 1);
    assert!(s.store.user_by_id(bob_user.id).await.unwrap().is_none());
    s.admin.create_group("ops").await.unwrap();
    assert_eq!(result(&s, "config/delete", &root, json!({"ObjectDN": "\\VED\\Identity\\ops"})).await.0, 1);
    assert!(s.store.group_by_name("ops".into()).await.unwrap().is_none());
    s.stop().await;
}

#[tokio::test]
async fn rename_moves_a_folder_with_its_guid_rights_and_entries() {
    let (s, root, bob, _) = setup().await;
    for f in ["\\VED\\Policy\\R\\Sub", "\\VED\\Policy\\Taken", "\\VED\\Policy\\Target"] {
        s.admin.create_folder(f).await.unwrap();
    }
    s.admin.set_rights("\\VED\\Policy\\R\\Sub", "bob", Rights::parse("view,read,write").unwrap()).await.unwrap();
    let (_, v) = s
        .sdk("Add", &bob, json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": "\\VED\\Policy\\R\\Sub", "Base64Data": "eA=="}))
        .await;
    let id = v["VaultID"].as_i64().unwrap();
    let (_, v) = result(&s, "Config/IsValid", &root, json!({"ObjectDN": "\\VED\\Policy\\R\\Sub"})).await;
    let guid = v["Object"]["GUID"].clone();
    let rename = |from: &str, to: &str| json!({"ObjectDN": from, "NewObjectDN": to});
    // Bob may see Sub but holds no Rename.
    assert_eq!(result(&s, "Config/RenameObject", &bob, rename("\\VED\\Policy\\R\\Sub", "\\VED\\Policy\\S2")).await.0, 7);
    assert_eq!(result(&s, "Config/RenameObject", &root, rename("\\VED\\Policy\\R", "\\VED\\Policy\\Taken")).await.0, 401);
    assert_eq!(result(&s, "Config/RenameObject", &root, rename("\\VED\\Policy\\R", "\\VED\\Policy\\Nope\\R")).await.0, 400);
    assert_eq!(result(&s, "Config/RenameObject", &root, rename("\\VED\\Policy\\Nope", "\\VED\\Policy\\X")).await.0, 400);
    assert_eq!(result(&s, "Config/RenameObject", &root, rename("\\VED\\Identity\\bob", "\\VED\\Identity\\rob")).await.0, 406);
    assert_eq!(result(&s, "Config/RenameObject", &root, rename("\\VED\\Policy\\R", "\\VED\\Policy\\R\\Sub\\In")).await.0, 401);
    assert_eq!(result(&s, "config/renameobject", &root, rename("\\VED\\Policy\\R", "\\VED\\Policy\\Target\\Moved")).await.0, 1);
    assert_eq!(result(&s, "Config/IsValid", &root, json!({"ObjectDN": "\\VED\\Policy\\R\\Sub"})).await.0, 400);
    let (r, v) = result(&s, "Config/IsValid", &root, json!({"ObjectGUID": guid})).await;
    assert_eq!((r, v["Object"]["DN"].as_str()), (1, Some("\\VED\\Policy\\Target\\Moved\\Sub")), "the GUID follows the folder");
    // The entry's owner and Bob's rights followed: he still writes there.
    let owners = s.store.owners_of(vec![strongroom_core::vault::VaultId(id)]).await.unwrap();
    assert_eq!(owners[0].1.iter().map(|o| o.as_str().to_owned()).collect::<Vec<_>>(), ["\\VED\\Policy\\Target\\Moved\\Sub"]);
    let (_, v) = s
        .sdk("Add", &bob, json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": "\\VED\\Policy\\Target\\Moved\\Sub", "Base64Data": "eA=="}))
        .await;
    assert_eq!(v["Result"].as_i64(), Some(0), "{v}");
    s.stop().await;
}

#[tokio::test]
async fn each_config_call_needs_its_scope() {
    let (s, _, _, _) = setup().await;
    let root = s.store.user_by_name("root".into()).await.unwrap().unwrap().0;
    s.admin.create_folder("\\VED\\Policy\\T").await.unwrap();
    let read_only = token(&s, &root, "configuration").await;
    let manage_only = token(&s, &root, "configuration:manage").await;
    let none = token(&s, &root, "security").await;
    let cases = [
        ("config/create", json!({"ObjectDN": "\\VED\\Policy\\N", "Class": "Policy"}), &read_only),
        ("config/delete", json!({"ObjectDN": "\\VED\\Policy\\T"}), &manage_only),
        ("config/renameobject", json!({"ObjectDN": "\\VED\\Policy\\T", "NewObjectDN": "\\VED\\Policy\\U"}), &read_only),
        ("config/isvalid", json!({"ObjectDN": "\\VED\\Policy\\T"}), &none),
        ("config/enumerate", json!({"ObjectDN": "\\VED\\Policy"}), &none),
        ("config/findobjectsofclass", json!({"Class": "Policy"}), &none),
    ];
    for (path, body, t) in cases {
        let (st, v) = call(&s, path, t, body).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{path}: {v}");
    }
    let (st, _) = call(&s, "config/isvalid", "not-a-token", json!({})).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    assert!(s.store.folder_exists("\\ved\\policy\\t".into()).await.unwrap(), "nothing was deleted");
    s.stop().await;
}
