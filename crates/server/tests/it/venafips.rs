//! The VenafiPS and pyvenafi administration sequences (each client's calls in order),
//! replayed request by request as the clients send them (paths cased as
//! they case them, braces percent-encoded as Python's `requests` encodes
//! them): create a folder, find the user, grant Write (with each client's
//! pre-reads), make a group (a team for VenafiPS) with the user in it and
//! grant it Write on a second folder, read the log, and then the user's
//! token can `Add` under both folders.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use strongroom_core::secret::Secret;

use crate::config::{FULL, token};
use crate::support::{PASSWORD, TestServer};

async fn send(s: &TestServer, method: Method, path: &str, t: &str, body: Option<Value>) -> (StatusCode, Value) {
    let mut r = s.http.request(method, s.at(&format!("/vedsdk/{path}"))).bearer_auth(t);
    if let Some(b) = body {
        r = r.json(&b);
    }
    let r = r.send().await.unwrap();
    let status = r.status();
    let text = r.text().await.unwrap();
    (status, if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) })
}

async fn server() -> (TestServer, String) {
    let s = TestServer::start().await;
    s.integration("admin-app", &format!("{FULL};admin:viewlogs"), |_| {}).await;
    let root = s.admin.create_user("root", &Secret::new(PASSWORD), true).await.unwrap();
    s.user("alice").await;
    let t = token(&s, &root, &format!("{FULL};admin:viewlogs")).await;
    (s, t)
}

async fn alice_adds_under(s: &TestServer, folder: &str) {
    let alice = s.store.user_by_name("alice".into()).await.unwrap().unwrap().0;
    let t = token(s, &alice, "restricted:manage").await;
    let (st, v) = s
        .sdk(
            "Add",
            &t,
            json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": folder, "Base64Data": "eA=="}),
        )
        .await;
    assert_eq!((st, v["Result"].as_i64()), (StatusCode::OK, Some(0)), "alice may add under {folder}: {v}");
}

async fn alice_cannot_add_under(s: &TestServer, folder: &str) {
    let alice = s.store.user_by_name("alice".into()).await.unwrap().unwrap().0;
    let t = token(s, &alice, "restricted:manage").await;
    let (_, v) = s
        .sdk(
            "Add",
            &t,
            json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": folder, "Base64Data": "eA=="}),
        )
        .await;
    assert_ne!(v["Result"].as_i64(), Some(0), "not yet: {v}");
}

#[tokio::test]
async fn venafips_creates_a_folder_grants_write_and_reads_the_log() {
    let (s, t) = server().await;
    // 1. New-VdcPolicy -Path 'TeamA'.
    let (st, v) = send(&s, Method::POST, "config/create", &t, Some(json!({"ObjectDN": "\\VED\\Policy\\TeamA", "Class": "Policy"}))).await;
    assert_eq!((st, v["Result"].as_i64()), (StatusCode::OK, Some(1)), "{v}");
    assert!(v["Object"]["GUID"].is_string() && v["Object"]["DN"].is_string() && v["Object"]["TypeName"] == "Policy");
    alice_cannot_add_under(&s, "\\VED\\Policy\\TeamA").await;
    // 2. Find-VdcIdentity -Name alice.
    let (st, v) = send(&s, Method::POST, "Identity/Browse", &t, Some(json!({"Filter": "alice", "Limit": 500, "IdentityType": 11}))).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let id = v["Identities"].as_array().unwrap().iter().find(|i| i["Name"] == "alice").unwrap()["PrefixedUniversal"]
        .as_str()
        .unwrap()
        .to_owned();
    let u = id.split_once(':').unwrap().1.to_owned();
    // 3. Set-VdcPermission -Path '\VED\Policy\TeamA' -IdentityId 'local:{u}' -IsWriteAllowed.
    let (st, v) = send(&s, Method::POST, "config/DnToGuid", &t, Some(json!({"ObjectDN": "\\VED\\Policy\\TeamA"}))).await;
    assert_eq!((st, v["Result"].as_i64()), (StatusCode::OK, Some(1)));
    let g = v["GUID"].as_str().unwrap().to_owned();
    // The pre-read (Get-VdcPermission -Explicit); the empty-GUID form it may send gets a clean 4xx.
    let (st, _) = send(&s, Method::GET, "Permissions/object/{}", &t, None).await;
    assert!(st.is_client_error(), "{st}");
    let (st, v) = send(&s, Method::GET, &format!("Permissions/object/{g}"), &t, None).await;
    assert_eq!((st, v), (StatusCode::OK, json!([])));
    let all12 = json!({
        "IsAssociateAllowed": false, "IsCreateAllowed": false, "IsDeleteAllowed": false, "IsManagePermissionsAllowed": false,
        "IsPolicyWriteAllowed": false, "IsPrivateKeyReadAllowed": false, "IsPrivateKeyWriteAllowed": false, "IsReadAllowed": false,
        "IsRenameAllowed": false, "IsRevokeAllowed": false, "IsViewAllowed": false, "IsWriteAllowed": true
    });
    let (st, _) = send(&s, Method::POST, &format!("Permissions/object/{g}/local/{u}"), &t, Some(all12.clone())).await;
    assert_eq!(st, StatusCode::CREATED);
    // Run again: the pre-read lists alice, reads her entry and validates her; then PUT.
    let (_, v) = send(&s, Method::GET, &format!("Permissions/object/{g}"), &t, None).await;
    assert_eq!(v, json!([id.clone()]));
    let (st, v) = send(&s, Method::GET, &format!("Permissions/object/{g}/local/{u}"), &t, None).await;
    assert_eq!((st, v["ExplicitPermissions"]["IsWriteAllowed"].as_bool()), (StatusCode::OK, Some(true)));
    let (st, v) = send(&s, Method::POST, "Identity/Validate", &t, Some(json!({"ID": {"PrefixedUniversal": id}}))).await;
    assert_eq!((st, v["ID"]["Name"].as_str()), (StatusCode::OK, Some("alice")));
    let (st, _) = send(&s, Method::PUT, &format!("Permissions/object/{g}/local/{u}"), &t, Some(all12.clone())).await;
    assert_eq!(st, StatusCode::OK);
    // 4. Group membership, VenafiPS's only way: New-VdcTeam -Name Deployers -Owner 'local:{root}' -Member 'local:{u}'
    //    -Product TLS (POST Teams/), then Set-VdcPermission for the team on a second folder (DnToGuid, POST).
    let (st, v) = send(&s, Method::POST, "config/create", &t, Some(json!({"ObjectDN": "\\VED\\Policy\\TeamB", "Class": "Policy"}))).await;
    assert_eq!((st, v["Result"].as_i64()), (StatusCode::OK, Some(1)), "{v}");
    alice_cannot_add_under(&s, "\\VED\\Policy\\TeamB").await;
    let (st, me) = send(&s, Method::GET, "Identity/Self", &t, None).await;
    assert_eq!(st, StatusCode::OK);
    let root_id = me["Identities"][0]["PrefixedUniversal"].as_str().unwrap().to_owned();
    let team = json!({
        "Name": {"PrefixedName": "local:Deployers"},
        "Owners": [{"PrefixedName": "local:root", "PrefixedUniversal": root_id}],
        "Members": [{"PrefixedName": "local:alice", "PrefixedUniversal": id}],
        "Products": ["TLS"],
    });
    let (st, v) = send(&s, Method::POST, "Teams/", &t, Some(team)).await;
    assert_eq!((st, v["InvalidMembers"].clone()), (StatusCode::OK, json!([])), "{v}");
    let team_universal = v["ID"]["Universal"].as_str().unwrap().to_owned();
    // Add-VdcTeamMember again with alice: Validate twice, then the PUT (no change, no error).
    for who in [v["ID"]["PrefixedUniversal"].as_str().unwrap().to_owned(), id.clone()] {
        let (st, v) = send(&s, Method::POST, "Identity/Validate", &t, Some(json!({"ID": {"PrefixedUniversal": who}}))).await;
        assert_eq!(st, StatusCode::OK, "{v}");
    }
    let add = json!({"Team": {"PrefixedName": "local:Deployers"}, "Members": [{"PrefixedName": "local:alice", "PrefixedUniversal": id}]});
    let (st, v) = send(&s, Method::PUT, "Teams/AddTeamMembers", &t, Some(add)).await;
    assert_eq!((st, v["InvalidMembers"].clone()), (StatusCode::OK, json!([])), "{v}");
    let (_, v) = send(&s, Method::POST, "config/DnToGuid", &t, Some(json!({"ObjectDN": "\\VED\\Policy\\TeamB"}))).await;
    let gb = v["GUID"].as_str().unwrap().to_owned();
    let (st, _) = send(&s, Method::POST, &format!("Permissions/object/{gb}/local/{team_universal}"), &t, Some(all12)).await;
    assert_eq!(st, StatusCode::CREATED);
    alice_adds_under(&s, "\\VED\\Policy\\TeamB").await;
    // 5. Read-VdcLog -First 50 -Path '\VED\Policy\TeamA'.
    let (st, v) = send(&s, Method::GET, "Log/?Limit=50&Component=%5CVED%5CPolicy%5CTeamA", &t, None).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert!(!v["LogEvents"].as_array().unwrap().is_empty(), "the folder's events: {v}");
    // And alice's token can Add under the folder.
    alice_adds_under(&s, "\\VED\\Policy\\TeamA").await;
    s.stop().await;
}

#[tokio::test]
async fn pyvenafi_creates_a_folder_grants_write_and_reads_the_log() {
    let (s, t) = server().await;
    // 1. Folder.create(name='TeamA', parent_folder=r'\VED\Policy').
    let create = json!({"ObjectDN": "\\VED\\Policy\\TeamA", "Class": "Policy", "NameAttributeList": []});
    let (st, v) = send(&s, Method::POST, "Config/Create", &t, Some(create.clone())).await;
    assert_eq!((st, v["Result"].as_i64()), (StatusCode::OK, Some(1)), "{v}");
    // Created before: 401, then Config/IsValid for the object.
    let (_, v) = send(&s, Method::POST, "Config/Create", &t, Some(create)).await;
    assert_eq!(v["Result"].as_i64(), Some(401));
    alice_cannot_add_under(&s, "\\VED\\Policy\\TeamA").await;
    // 2. Permissions.update(obj=r'\VED\Policy\TeamA', identity='local:alice', is_write_allowed=True).
    let (_, v) = send(&s, Method::POST, "Config/IsValid", &t, Some(json!({"ObjectDN": "\\VED\\Policy\\TeamA"}))).await;
    assert_eq!(v["Result"].as_i64(), Some(1));
    let g = v["Object"]["GUID"].as_str().unwrap().to_owned();
    let (_, v) = send(&s, Method::POST, "Identity/Validate", &t, Some(json!({"ID": {"PrefixedName": "local:alice"}}))).await;
    let universal = v["ID"]["Universal"].as_str().unwrap().to_owned();
    assert_eq!(v["ID"]["Prefix"], "local");
    let enc = |x: &str| x.replace('{', "%7B").replace('}', "%7D");
    let entry = format!("Permissions/Object/{}/Local/{}", enc(&g), enc(&universal));
    let (st, v) = send(&s, Method::GET, &entry, &t, None).await;
    assert!(st.is_client_error() && v["Error"].is_string(), "no explicit entry yet: never a 200 without ExplicitPermissions: {st} {v}");
    let (st, _) = send(&s, Method::POST, &entry, &t, Some(json!({"IsWriteAllowed": true}))).await;
    assert_eq!(st, StatusCode::CREATED);
    let (st, v) = send(&s, Method::GET, &entry, &t, None).await;
    assert_eq!((st, v["ExplicitPermissions"]["IsWriteAllowed"].as_bool()), (StatusCode::OK, Some(true)));
    // update() again with an entry there: PUT.
    let (st, _) = send(&s, Method::PUT, &entry, &t, Some(json!({"IsWriteAllowed": true, "IsReadAllowed": true}))).await;
    assert_eq!(st, StatusCode::OK);
    let (st, v) = send(&s, Method::GET, &format!("{entry}/Effective"), &t, None).await;
    assert_eq!((st, v["EffectivePermissions"]["IsWriteAllowed"].as_bool()), (StatusCode::OK, Some(true)));
    // 3. Group.create('Deployers') (Validate: unknown, an empty body; then AddGroup), then
    //    Group.add_members('local:Deployers', ['local:alice']), then Permissions.update for the group on TeamB.
    let (st, v) = send(&s, Method::POST, "Identity/Validate", &t, Some(json!({"ID": {"PrefixedName": "local:Deployers"}}))).await;
    assert_eq!((st, v), (StatusCode::OK, Value::Null), "unknown: an empty body");
    let (st, v) =
        send(&s, Method::POST, "Identity/AddGroup", &t, Some(json!({"Name": {"PrefixedName": "local:Deployers"}, "Members": []}))).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let group_universal = v["ID"]["Universal"].as_str().unwrap().to_owned();
    let body = json!({"Group": {"PrefixedName": "local:Deployers"}, "Members": [{"PrefixedName": "local:alice"}], "ShowMembers": true});
    let (st, v) = send(&s, Method::PUT, "Identity/AddGroupMembers", &t, Some(body)).await;
    assert_eq!((st, v["InvalidMembers"].clone()), (StatusCode::OK, json!([])), "pyvenafi raises on any: {v}");
    let (_, v) = send(
        &s,
        Method::POST,
        "Config/Create",
        &t,
        Some(json!({"ObjectDN": "\\VED\\Policy\\TeamB", "Class": "Policy", "NameAttributeList": []})),
    )
    .await;
    assert_eq!(v["Result"].as_i64(), Some(1), "{v}");
    alice_cannot_add_under(&s, "\\VED\\Policy\\TeamB").await;
    let gb = v["Object"]["GUID"].as_str().unwrap().to_owned();
    let group_entry = format!("Permissions/Object/{}/Local/{}", enc(&gb), enc(&group_universal));
    let (st, _) = send(&s, Method::GET, &group_entry, &t, None).await;
    assert!(st.is_client_error());
    let (st, _) = send(&s, Method::POST, &group_entry, &t, Some(json!({"IsWriteAllowed": true}))).await;
    assert_eq!(st, StatusCode::CREATED);
    alice_adds_under(&s, "\\VED\\Policy\\TeamB").await;
    // 4. api.websdk.Log.get(limit=50, component=dn).
    let (st, v) = send(&s, Method::GET, "Log?Limit=50&Component=%5CVED%5CPolicy%5CTeamA", &t, None).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let events = v["LogEvents"].as_array().unwrap();
    assert!(events.iter().any(|e| e["Component"] == "\\VED\\Policy\\TeamA"), "{v}");
    alice_adds_under(&s, "\\VED\\Policy\\TeamA").await;
    s.stop().await;
}
