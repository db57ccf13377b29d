//! Groups, teams and passwords administered over the API: pyvenafi's `Group.create` / `add_members` sequence and VenafiPS's
//! `New-VdcTeam` / `Add-VdcTeamMember` sequence as the clients send them,
//! each call refused without its scope (403
//! `insufficient_scope`) and without the role (403 with `Message`), a group
//! right reaching a member's token as soon as they are added and stopping
//! as soon as they are removed, every change an event naming the caller.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use strongroom_core::identity::User;
use strongroom_core::secret::Secret;
use strongroom_core::vault::Rights;

use crate::support::{PASSWORD, TestServer};

const ALL: &str = "configuration:manage,delete;security:manage;restricted:manage";

/// An access token for `user` through the password grant of integration `admin-app` (scope `ALL` at most).
async fn token(s: &TestServer, user: &str, scope: &str) -> String {
    let (st, v) = s
        .post_json("/vedauth/authorize/oauth", json!({"client_id": "admin-app", "username": user, "password": PASSWORD, "scope": scope}))
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    v["access_token"].as_str().unwrap().to_owned()
}

async fn setup() -> (TestServer, User) {
    let s = TestServer::start().await;
    s.integration("admin-app", ALL, |spec| spec.password = Some(true)).await;
    let root = s.admin.create_user("root", &Secret::new(PASSWORD), true).await.unwrap();
    (s, root)
}

/// A call as the client sends it: (status, body as JSON, or `null` for an empty body).
async fn call(s: &TestServer, method: Method, path: &str, token: &str, body: Option<Value>) -> (StatusCode, Value) {
    let mut r = s.http.request(method, s.at(path)).bearer_auth(token);
    if let Some(b) = body {
        r = r.json(&b);
    }
    let r = r.send().await.unwrap();
    let st = r.status();
    let text = r.text().await.unwrap();
    (st, if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path}: {st} {text}")) })
}

fn names(v: &Value, key: &str) -> Vec<String> {
    v[key].as_array().unwrap_or_else(|| panic!("{key} in {v}")).iter().map(|e| e["PrefixedName"].as_str().unwrap().to_owned()).collect()
}

async fn add_secret(s: &TestServer, token: &str) -> i64 {
    let (_, v) = s
        .sdk("Add", token, json!({"VaultType": 32, "Namespace": "config", "Owner": "\\VED\\Policy\\TeamA", "Base64Data": "c2VjcmV0"}))
        .await;
    v["Result"].as_i64().unwrap()
}

/// pyvenafi: `Group.create('G')` (Validate, then AddGroup), then
/// `Group.add_members('local:G', ['local:alice'])` (AddGroupMembers with
/// ShowMembers, which raises on any InvalidMembers); a right granted to the
/// group works for alice's token once she is added, and stops once removed.
#[tokio::test]
async fn pyvenafis_group_sequence_and_a_group_right_reaching_a_members_token() {
    let (s, root) = setup().await;
    let alice = s.user("alice").await;
    s.user("bob").await;
    let t = token(&s, "root", ALL).await;
    let at = token(&s, "alice", "restricted:manage").await;

    let (st, v) = call(&s, Method::POST, "/vedsdk/Identity/Validate", &t, Some(json!({"ID": {"PrefixedName": "local:G"}}))).await;
    assert_eq!((st, v), (StatusCode::OK, Value::Null), "not there yet: an empty body");
    let (st, v) =
        call(&s, Method::POST, "/vedsdk/Identity/AddGroup", &t, Some(json!({"Name": {"PrefixedName": "local:G"}, "Members": []}))).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!((v["ID"]["PrefixedName"].as_str(), v["ID"]["Type"].as_i64()), (Some("local:G"), Some(2)), "{v}");
    assert_eq!(v["InvalidMembers"], json!([]));
    let guid = v["ID"]["Universal"].as_str().unwrap().to_owned();
    let (st, v) =
        call(&s, Method::POST, "/vedsdk/Identity/AddGroup", &t, Some(json!({"Name": {"PrefixedName": "local:g"}, "Members": []}))).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "a name taken, in any case: {v}");
    assert!(v["Message"].as_str().unwrap().contains("already exists"), "{v}");
    assert_eq!(v.as_object().unwrap().len(), 1, "only Message: {v}");

    // A right of the group's: nothing for alice until she is a member.
    s.admin.create_folder("\\VED\\Policy\\TeamA").await.unwrap();
    s.admin.set_group_rights("\\VED\\Policy\\TeamA", "G", Rights::WRITE).await.unwrap();
    assert_eq!(add_secret(&s, &at).await, 10, "no right yet");

    let add = |members: Value| {
        let body = json!({"Group": {"PrefixedName": "local:G"}, "Members": members, "ShowMembers": true});
        call(&s, Method::PUT, "/vedsdk/Identity/AddGroupMembers", &t, Some(body))
    };
    let (st, v) = add(json!([{"PrefixedName": "local:alice"}])).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v["InvalidMembers"], json!([]), "pyvenafi raises on any: {v}");
    assert_eq!(names(&v, "Members"), ["local:alice"]);
    assert_eq!(add_secret(&s, &at).await, 0, "the group's Write, through the same token");
    // Again: no error, no second event. Unknown identities and groups are invalid; valid ones still go in.
    let (st, v) = add(json!([{"PrefixedName": "local:alice"}, {"PrefixedName": "local:nobody"}, {"PrefixedName": "local:G"}, {"PrefixedName": "local:bob"}]))
        .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(v["InvalidMembers"], json!([{"PrefixedName": "local:nobody"}, {"PrefixedName": "local:G"}]), "{v}");
    assert_eq!(names(&v, "Members"), ["local:alice", "local:bob"]);
    let (st, v) =
        call(&s, Method::POST, "/vedsdk/Identity/GetMembers", &t, Some(json!({"ID": {"PrefixedUniversal": format!("local:{guid}")}})))
            .await;
    assert_eq!((st, names(&v, "Identities")), (StatusCode::OK, vec!["local:alice".to_owned(), "local:bob".to_owned()]));

    // Removed: the same token's next write is refused at once.
    let body =
        json!({"Group": {"PrefixedUniversal": format!("local:{guid}")}, "Members": [{"PrefixedName": "local:alice"}], "ShowMembers": true});
    let (st, v) = call(&s, Method::PUT, "/vedsdk/Identity/RemoveGroupMembers", &t, Some(body)).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!((names(&v, "Members"), v["InvalidMembers"].clone()), (vec!["local:bob".to_owned()], json!([])));
    assert_eq!(add_secret(&s, &at).await, 10, "the removal reached the live token");

    // Every change an event naming the caller.
    let events = s.store.events(strongroom_store::EventFilter { limit: 1000, ..Default::default() }).await.unwrap();
    let mine: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e.event.kind.as_str().starts_with("group.") && e.event.identity == root.id.identity())
        .map(|e| (e.event.kind.as_str(), e.event.detail.as_str()))
        .collect();
    assert_eq!(
        mine.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
        ["group.created", "group.member_added", "group.member_added", "group.member_removed"],
        "{mine:?}"
    );
    assert_eq!((mine[1].1, mine[2].1, mine[3].1), ("user=alice", "user=bob", "user=alice"));
    assert_eq!(alice.name, "alice");
}

/// VenafiPS: `New-VdcTeam` (`POST Teams/`), `Add-VdcTeamMember` (Validate
/// twice, then `PUT Teams/AddTeamMembers` with PrefixedName and
/// PrefixedUniversal), as the team's owner, who is no Master Admin;
/// `Get-VdcTeam`, and `Remove-VdcTeam`.
#[tokio::test]
async fn venafips_team_sequence_with_an_owner_adding_members() {
    let (s, _) = setup().await;
    s.user("alice").await;
    let bob = s.user("bob").await;
    let carol = s.user("carol").await;
    let t = token(&s, "root", ALL).await;
    let bt = token(&s, "bob", ALL).await;
    let body = json!({
        "Name": {"PrefixedName": "local:Platform"},
        "Members": [{"PrefixedName": "local:alice"}],
        "Owners": [{"PrefixedUniversal": bob.id.identity()}],
        "Products": ["TLS"],
        "Assets": [],
        "Description": "the platform team",
    });
    let (st, v) = call(&s, Method::POST, "/vedsdk/Teams/", &t, Some(body.clone())).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!((v["InvalidMembers"].clone(), v["InvalidOwners"].clone()), (json!([]), json!([])), "{v}");
    let team = v["ID"]["PrefixedUniversal"].as_str().unwrap().to_owned();
    let guid = v["ID"]["Universal"].as_str().unwrap().trim_matches(['{', '}']).to_owned();

    // Add-VdcTeamMember: Validate the team and the member, then the PUT, as bob (an owner).
    for id in [team.clone(), carol.id.identity()] {
        let (st, v) = call(&s, Method::POST, "/vedsdk/Identity/Validate", &bt, Some(json!({"ID": {"PrefixedUniversal": id}}))).await;
        assert_eq!(st, StatusCode::OK, "{v}");
        assert!(v["ID"]["PrefixedName"].is_string(), "{v}");
    }
    let add = json!({"Team": {"PrefixedName": "local:Platform"}, "Members": [{"PrefixedName": "local:carol", "PrefixedUniversal": carol.id.identity()}]});
    let (st, v) = call(&s, Method::PUT, "/vedsdk/Teams/AddTeamMembers", &bt, Some(add.clone())).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!((names(&v, "Members"), v["InvalidMembers"].clone()), (vec!["local:alice".to_owned(), "local:carol".to_owned()], json!([])));

    // Get-VdcTeam, with the braces percent-encoded as Python sends them.
    let (st, v) = call(&s, Method::GET, &format!("/vedsdk/Teams/local/%7B{guid}%7D"), &t, None).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(
        (names(&v, "Members"), names(&v, "Owners")),
        (vec!["local:alice".to_owned(), "local:carol".to_owned()], vec!["local:bob".to_owned()])
    );
    assert_eq!(
        (v["Products"].clone(), v["Description"].clone(), v["Assets"].clone()),
        (json!(["TLS"]), json!("the platform team"), json!([]))
    );
    // A plain group is no team: the product's answer.
    s.admin.create_group("plain").await.unwrap();
    let plain = s.admin.group("plain").await.unwrap();
    let (st, v) = call(&s, Method::GET, &format!("/vedsdk/Teams/local/{}", plain.id.as_str()), &t, None).await;
    assert_eq!((st, v), (StatusCode::BAD_REQUEST, json!({"Message": "Failed to read the team identity"})));

    // Bob owns Platform, not plain; nor may he delete his team.
    let other = json!({"Team": {"PrefixedName": "local:plain"}, "Members": [{"PrefixedName": "local:carol"}]});
    let (st, v) = call(&s, Method::PUT, "/vedsdk/Teams/AddTeamMembers", &bt, Some(other)).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{v}");
    assert!(v["Message"].as_str().unwrap().contains("owner"), "{v}");
    let (st, _) = call(&s, Method::DELETE, &format!("/vedsdk/Teams/local/{{{guid}}}"), &bt, None).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    let (st, v) = call(&s, Method::PUT, "/vedsdk/Teams/RemoveTeamMembers", &bt, Some(add)).await;
    assert_eq!((st, names(&v, "Members")), (StatusCode::OK, vec!["local:alice".to_owned()]), "{v}");
    let (st, v) = call(&s, Method::POST, "/vedsdk/Teams/", &bt, Some(body)).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "only a Master Admin makes teams: {v}");

    let (st, v) = call(&s, Method::DELETE, &format!("/vedsdk/Teams/local/{guid}"), &t, None).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert!(s.store.group_by_name("platform".into()).await.unwrap().is_none());
    assert!(s.store.user_by_name("alice".into()).await.unwrap().is_some(), "members remain");
}

/// Each call without its scope: 403 `insufficient_scope`; with the scope
/// but without the role: 403 with `Message`; a bad token: 401.
#[tokio::test]
async fn each_call_is_refused_without_its_scope_and_without_the_role() {
    let (s, _) = setup().await;
    s.user("alice").await;
    s.user("bob").await;
    let g = s.admin.create_group("ops").await.unwrap();
    let guid = g.id.universal();
    let root_read = token(&s, "root", "configuration").await;
    let root_sec = token(&s, "root", "security:manage").await;
    let alice = token(&s, "alice", ALL).await;
    let members = json!({"Group": {"PrefixedName": "local:ops"}, "Members": [{"PrefixedName": "local:bob"}]});
    let team_members = json!({"Team": {"PrefixedName": "local:ops"}, "Members": [{"PrefixedName": "local:bob"}]});
    let calls: Vec<(Method, String, Option<Value>, &str)> = vec![
        (Method::POST, "/vedsdk/Identity/AddGroup".into(), Some(json!({"Name": {"PrefixedName": "local:x"}})), "configuration:manage"),
        (Method::PUT, "/vedsdk/Identity/AddGroupMembers".into(), Some(members.clone()), "configuration:manage"),
        (Method::PUT, "/vedsdk/Identity/RemoveGroupMembers".into(), Some(members), "configuration:manage"),
        (
            Method::PUT,
            "/vedsdk/Identity/RenameGroup".into(),
            Some(json!({"Group": {"PrefixedName": "local:ops"}, "NewGroupName": "y"})),
            "configuration:manage",
        ),
        (Method::DELETE, format!("/vedsdk/Identity/Group/local/{guid}"), None, "configuration:delete"),
        (
            Method::POST,
            "/vedsdk/Identity/SetPassword".into(),
            Some(json!({"ID": {"PrefixedName": "local:bob"}, "Password": "another passphrase"})),
            "security:manage",
        ),
        (
            Method::POST,
            "/vedsdk/Teams".into(),
            Some(json!({"Name": {"PrefixedName": "local:t"}, "Owners": [{"PrefixedName": "local:bob"}]})),
            "configuration:manage",
        ),
        (Method::PUT, "/vedsdk/Teams/AddTeamMembers".into(), Some(team_members.clone()), "configuration:manage"),
        (Method::PUT, "/vedsdk/Teams/RemoveTeamMembers".into(), Some(team_members), "configuration:manage"),
        (Method::DELETE, format!("/vedsdk/Teams/local/{guid}"), None, "configuration:delete"),
    ];
    for (method, path, body, scope) in &calls {
        let without = if scope.starts_with("security") { &root_read } else { &root_sec };
        let (st, v) = call(&s, method.clone(), path, without, body.clone()).await;
        assert_eq!((st, v["error"].as_str()), (StatusCode::FORBIDDEN, Some("insufficient_scope")), "{method} {path}: {v}");
        let (st, v) = call(&s, method.clone(), path, &alice, body.clone()).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{method} {path} as no Master Admin: {v}");
        assert!(v["Message"].is_string() && v.as_object().unwrap().len() == 1, "{method} {path}: {v}");
        let (st, _) = call(&s, method.clone(), path, "not-a-token", body.clone()).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{method} {path}");
    }
    // Reads need `configuration`.
    let for_read = [
        (
            Method::POST,
            "/vedsdk/Identity/ReadAttribute".to_owned(),
            Some(json!({"ID": {"PrefixedName": "local:ops"}, "AttributeName": "Name"})),
        ),
        (Method::GET, format!("/vedsdk/Teams/local/{guid}"), None),
    ];
    for (method, path, body) in for_read {
        let (st, v) = call(&s, method.clone(), &path, &root_sec, body).await;
        assert_eq!((st, v["error"].as_str()), (StatusCode::FORBIDDEN, Some("insufficient_scope")), "{path}: {v}");
    }
    // Nothing changed.
    assert_eq!(s.admin.members("ops").await.unwrap().len(), 0);
    assert!(s.store.group_by_name("x".into()).await.unwrap().is_none());
}

/// RenameGroup, DELETE Identity/Group, ReadAttribute and SetPassword.
#[tokio::test]
async fn rename_delete_read_attributes_and_set_passwords() {
    let (s, root) = setup().await;
    let alice = s.user("alice").await;
    s.user("bob").await;
    let t = token(&s, "root", ALL).await;
    let (_, v) = call(
        &s,
        Method::POST,
        "/vedsdk/Identity/AddGroup",
        &t,
        Some(json!({"Name": {"PrefixedName": "local:ops"}, "Members": [{"PrefixedName": "local:alice"}, "local:bob"]})),
    )
    .await;
    let guid = v["ID"]["Universal"].as_str().unwrap().to_owned();

    let rename = |to: &str| {
        call(&s, Method::PUT, "/vedsdk/Identity/RenameGroup", &t, Some(json!({"Group": {"PrefixedName": "local:ops"}, "NewGroupName": to})))
    };
    let (st, v) = rename("bob").await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "a user's name: {v}");
    let (st, v) = rename("a b").await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
    let (st, v) = rename("operations").await;
    assert_eq!(
        (st, v["ID"]["PrefixedName"].as_str(), v["ID"]["Universal"].as_str()),
        (StatusCode::OK, Some("local:operations"), Some(guid.as_str()))
    );

    let read = |id: &str, attribute: &str| {
        call(&s, Method::POST, "/vedsdk/Identity/ReadAttribute", &t, Some(json!({"ID": {"PrefixedName": id}, "AttributeName": attribute})))
    };
    assert_eq!(read("local:alice", "Full Name").await, (StatusCode::OK, json!({"Attributes": ["alice"]})));
    assert_eq!(read("local:operations", "Group Membership").await, (StatusCode::OK, json!({"Attributes": ["local:alice", "local:bob"]})));
    assert_eq!(read("local:alice", "Internet EMail Address").await, (StatusCode::OK, json!({"Attributes": []})), "not kept: none");
    assert_eq!(read("local:nobody", "Name").await.0, StatusCode::BAD_REQUEST);

    // SetPassword: a Master Admin sets alice's; her grants end with it.
    let at = token(&s, "alice", ALL).await;
    let sr = &s;
    let set = |tok: String, body: Value| async move { call(sr, Method::POST, "/vedsdk/Identity/SetPassword", &tok, Some(body)).await };
    let (st, v) = set(t.clone(), json!({"ID": {"PrefixedName": "local:alice"}, "Password": "short"})).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
    let (st, v) = set(t.clone(), json!({"ID": {"PrefixedName": "local:alice"}, "Password": "alice's new passphrase"})).await;
    assert_eq!((st, v["ID"]["PrefixedUniversal"].as_str()), (StatusCode::OK, Some(alice.id.identity().as_str())), "{v}");
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", &at).await.0, StatusCode::UNAUTHORIZED, "her grants ended");
    let (st, _) = s
        .post_json(
            "/vedauth/authorize/oauth",
            json!({"client_id": "admin-app", "username": "alice", "password": "alice's new passphrase", "scope": "security:manage"}),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    s.admin.set_password("alice", &Secret::new(PASSWORD), false).await.unwrap();
    let at = token(&s, "alice", ALL).await;
    // Her own, without Master Admin: only with the right old password; another's never.
    let (st, v) =
        set(at.clone(), json!({"ID": {"PrefixedName": "local:bob"}, "Password": "bob's new passphrase", "OldPassword": PASSWORD})).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{v}");
    let (st, v) = set(at.clone(), json!({"ID": {"PrefixedName": "local:alice"}, "Password": "my own passphrase"})).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
    let failed_before = s.event_kinds().await.iter().filter(|k| *k == "login.failed").count();
    let (st, v) =
        set(at.clone(), json!({"ID": {"PrefixedName": "local:alice"}, "Password": "my own passphrase", "OldPassword": "not my password"}))
            .await;
    assert_eq!((st, v), (StatusCode::BAD_REQUEST, json!({"Message": "The old password is wrong."})));
    let failed_after = s.event_kinds().await.iter().filter(|k| *k == "login.failed").count();
    assert_eq!(failed_after, failed_before + 1, "a wrong old password counts as a failed sign-in");
    let (st, v) =
        set(at.clone(), json!({"ID": {"PrefixedName": "local:alice"}, "Password": "my own passphrase", "OldPassword": PASSWORD})).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    // No password in any event.
    let events = s.store.events(strongroom_store::EventFilter { limit: 1000, ..Default::default() }).await.unwrap();
    for e in &events {
        let text = format!("{:?}", e.event);
        for p in ["my own passphrase", "alice's new passphrase", "not my password", PASSWORD] {
            assert!(!text.contains(p), "{text}");
        }
    }
    let changed: Vec<_> =
        events.iter().filter(|e| e.event.kind.as_str() == "user.password_changed").map(|e| e.event.identity.clone()).collect();
    assert!(changed.contains(&root.id.identity()) && changed.contains(&alice.id.identity()), "{changed:?}");

    // DELETE Identity/Group/local/{guid}, braces percent-encoded; members remain.
    let bare = guid.trim_matches(['{', '}']);
    let (st, v) = call(&s, Method::DELETE, &format!("/vedsdk/Identity/Group/local/%7B{bare}%7D"), &t, None).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert!(v["Message"].is_string());
    let (st, v) = call(&s, Method::DELETE, &format!("/vedsdk/Identity/Group/local/{bare}"), &t, None).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "gone: {v}");
    let (st, _) = call(&s, Method::DELETE, "/vedsdk/Identity/Group/AD+corp/%7Bx%7D", &t, None).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert!(s.store.user_by_name("alice".into()).await.unwrap().is_some());
}
