//! `GET /vedsdk/Log` in the product's shape: each filter, the newest first,
//! paging by `Limit` and `Offset`, parameter names in any case, the rights
//! rule (a user never sees the events of a folder they may not read), and
//! `Log/LogSchema` and the `Metadata/GetItemsForClass` stub.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{PASSWORD, TestServer};

const TEAM: &str = "\\VED\\Policy\\Team A";
const ELSEWHERE: &str = "\\VED\\Policy\\Elsewhere";
const SCOPE: &str = "restricted:manage,delete;admin:viewlogs";

async fn token(s: &TestServer, user: &strongroom_core::identity::User, scope: &str) -> String {
    s.tokens_for(user, "app", scope).await["access_token"].as_str().unwrap().to_owned()
}

async fn add(s: &TestServer, t: &str, owner: &str) -> i64 {
    let body =
        json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": owner, "Base64Data": STANDARD.encode(b"x")});
    let (_, v) = s.sdk("Add", t, body).await;
    assert_eq!(v["Result"], 0, "{v}");
    v["VaultID"].as_i64().unwrap()
}

/// `GET <path>?<query>` with `token`: status and body.
async fn get(s: &TestServer, path: &str, token: &str, query: &[(&str, String)]) -> (StatusCode, Value) {
    let r = s.http.get(s.at(path)).query(query).bearer_auth(token).send().await.unwrap();
    let status = r.status();
    (status, r.json().await.unwrap())
}

async fn events(s: &TestServer, token: &str, query: &[(&str, String)]) -> Vec<Value> {
    let (status, v) = get(s, "/vedsdk/log", token, query).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    v["LogEvents"].as_array().unwrap_or_else(|| panic!("no LogEvents: {v}")).clone()
}

fn q(k: &'static str, v: impl ToString) -> (&'static str, String) {
    (k, v.to_string())
}

fn field<'a>(es: &'a [Value], f: &str) -> Vec<&'a Value> {
    es.iter().map(|e| &e[f]).collect()
}

#[tokio::test]
async fn the_log_filters_pages_and_follows_rights() {
    filters_pages_and_rights(TestServer::start().await).await;
}

/// The same on PostgreSQL (its dialect of the events statement).
#[tokio::test]
async fn the_log_filters_pages_and_follows_rights_on_postgres() {
    let Some(s) = TestServer::start_on_postgres().await else { return };
    filters_pages_and_rights(s).await;
}

async fn filters_pages_and_rights(s: TestServer) {
    s.integration("app", SCOPE, |_| {}).await;
    let alice = s.vault_user("alice", TEAM, "read,write").await;
    let ta = token(&s, &alice, SCOPE).await;
    let id = add(&s, &ta, TEAM).await;
    for i in 0..5 {
        let (_, v) = s.sdk("Associate", &ta, json!({"VaultID": id, "Name": format!("n{i}"), "StringValue": format!("v4lue-{i}")})).await;
        assert_eq!(v["Result"], 0);
    }
    let bob = s.vault_user("bob", ELSEWHERE, "read,write").await;
    let tb = token(&s, &bob, "restricted:manage").await;
    let bobs = add(&s, &tb, ELSEWHERE).await;
    let root = s.admin.create_user("root", &strongroom_core::secret::Secret::new(PASSWORD), true).await.unwrap();
    let rt = token(&s, &root, SCOPE).await;

    // Newest first; Limit and Offset page through every event once.
    let total = s.event_kinds().await.len() as i64;
    let mut seen = Vec::new();
    for page in 0.. {
        let es = events(&s, &rt, &[q("Limit", 4), q("Offset", page * 4)]).await;
        assert!(es.len() <= 4);
        if es.is_empty() {
            break;
        }
        seen.extend(es.iter().map(|e| e["Grouping"].as_i64().unwrap()));
    }
    assert_eq!(seen, (1..=total).rev().collect::<Vec<_>>(), "every event once, the newest first");
    assert_eq!(events(&s, &rt, &[]).await.len() as i64, total.min(100), "Limit defaults to 100");
    // Parameter names in any case (PY lower-cases, PS sends the product's).
    assert_eq!(events(&s, &rt, &[q("LIMIT", 2)]).await.len(), 2);
    assert_eq!(events(&s, &rt, &[q("limit", 3)]).await.len(), 3);

    // The product's shape: every field, a Severity name, integers where integers go.
    let newest = &events(&s, &rt, &[q("Limit", 1), q("Value1", bobs)]).await[0];
    for f in [
        "ClientTimestamp",
        "Component",
        "ComponentId",
        "ComponentSubsystem",
        "Data",
        "Grouping",
        "Id",
        "Name",
        "ServerTimestamp",
        "Severity",
        "SourceIP",
        "Text1",
        "Text2",
        "Value1",
        "Value2",
    ] {
        assert!(newest.get(f).is_some(), "{f} missing: {newest}");
    }
    assert_eq!(newest["Name"], "vault.added");
    assert_eq!(newest["Component"], ELSEWHERE);
    assert_eq!((newest["ComponentId"].as_i64(), newest["Value1"].as_i64(), newest["Value2"].as_i64()), (Some(bobs), Some(bobs), Some(0)));
    assert_eq!((newest["ComponentSubsystem"].as_str(), newest["Severity"].as_str()), (Some("vault"), Some("Info")));
    assert_eq!((newest["Text1"].as_str(), newest["Data"].as_str()), (Some(bob.id.identity().as_str()), Some("app")));
    assert!(newest["Id"].is_i64() && newest["Grouping"].is_i64());

    // Component: a folder DN, events at or below it (a trailing `\` is ignored).
    let team = events(&s, &rt, &[q("Component", format!("{TEAM}\\")), q("Limit", 1000)]).await;
    assert!(team.iter().all(|e| e["Component"].as_str().unwrap().eq_ignore_ascii_case(TEAM)), "{team:?}");
    assert_eq!(team.iter().filter(|e| e["Name"] == "vault.associated").count(), 5);
    assert!(team.iter().any(|e| e["Name"] == "folder.created"));
    let policy = events(&s, &rt, &[q("Component", "\\VED\\Policy"), q("Limit", 1000)]).await;
    assert!(policy.iter().any(|e| e["Value1"] == bobs) && policy.iter().any(|e| e["Value1"] == id));
    assert!(events(&s, &rt, &[q("Component", "\\VED\\Policy\\Team")]).await.is_empty(), "a prefix of a name is not a folder above");

    // Id: a kind's code from LogSchema, in decimal or hex.
    let (status, schema) = get(&s, "/vedsdk/Log/LogSchema", &rt, &[]).await;
    assert_eq!((status, schema["LogResult"].as_i64()), (StatusCode::OK, Some(0)), "{schema}");
    let code = schema["LogEventDefinitions"].as_array().unwrap().iter().find(|d| d["Description"] == "vault.associated").unwrap()["Id"]
        .as_i64()
        .unwrap();
    let assoc = events(&s, &rt, &[q("Id", code)]).await;
    assert_eq!(field(&assoc, "Name"), [&json!("vault.associated"); 5]);
    assert_eq!(events(&s, &rt, &[q("Id", format!("0x{code:08X}"))]).await.len(), 5);
    assert!(events(&s, &rt, &[q("Id", 12345)]).await.is_empty());

    // Severity by name.
    let notices = events(&s, &rt, &[q("Severity", "Notice"), q("Limit", 1000)]).await;
    assert!(!notices.is_empty() && notices.iter().all(|e| e["Severity"] == "Notice"));
    assert!(notices.iter().any(|e| e["Name"] == "user.created"));
    assert!(events(&s, &rt, &[q("Severity", "Alert")]).await.is_empty());

    // Text1 (the identity), Text2 (the detail), Value1 (the VaultID), Value2 (always 0).
    let hers = events(&s, &rt, &[q("Text1", alice.id.identity()), q("Limit", 1000)]).await;
    assert!(hers.len() >= 6 && hers.iter().all(|e| e["Text1"] == alice.id.identity()));
    let detail = assoc[0]["Text2"].as_str().unwrap().to_owned();
    assert!(!detail.is_empty());
    let by_detail = events(&s, &rt, &[q("Text2", &detail)]).await;
    assert!(!by_detail.is_empty() && by_detail.iter().all(|e| e["Text2"] == detail.as_str()));
    let entry = events(&s, &rt, &[q("Value1", id)]).await;
    assert_eq!(entry.len(), 6);
    assert!(entry.iter().all(|e| e["Value1"] == id && e["Component"] == TEAM));
    assert_eq!(events(&s, &rt, &[q("Value1", id), q("Value2", 0)]).await.len(), 6);
    assert!(events(&s, &rt, &[q("Value2", 1)]).await.is_empty());
    // Grouping: one event by its place in the chain.
    assert_eq!(field(&events(&s, &rt, &[q("Grouping", 3)]).await, "Grouping"), [&json!(3)]);

    // Time.
    assert!(events(&s, &rt, &[q("FromTime", "2999-01-01T00:00:00Z")]).await.is_empty());
    assert!(events(&s, &rt, &[q("ToTime", "2000-01-01T00:00:00Z")]).await.is_empty());
    assert_eq!(
        events(&s, &rt, &[q("FromTime", "2000-01-01T00:00:00Z"), q("ToTime", "2999-01-01T00:00:00Z"), q("Limit", 1000)]).await.len() as i64,
        total
    );
    // PY drops None-valued keys; an empty value is "not given" too.
    assert_eq!(events(&s, &rt, &[q("Component", ""), q("Limit", 2)]).await.len(), 2);

    // Bad input: Result 9 with the reason, never a 5xx.
    for bad in [
        q("FromTime", "yesterday"),
        q("Limit", 0),
        q("Limit", 5000),
        q("Offset", -1),
        q("Severity", "Loud"),
        q("Component", "Policy"),
        q("Id", "x"),
    ] {
        let (status, v) = get(&s, "/vedsdk/Log", &rt, std::slice::from_ref(&bad)).await;
        assert_eq!((status, v["Result"].as_i64()), (StatusCode::OK, Some(9)), "{bad:?}: {v}");
        assert!(v["Error"].as_str().is_some_and(|e| !e.is_empty()));
    }

    // Values never reach the log.
    let all = events(&s, &rt, &[q("Limit", 1000)]).await;
    assert!(!serde_json::to_string(&all).unwrap().contains("v4lue-"));

    // Rights: bob (no rights on Team A, any scope) sees nothing of Team A's entry, only his own doings.
    let his = events(&s, &tb, &[q("Limit", 1000)]).await;
    assert!(!his.is_empty());
    for e in &his {
        assert!(e["Text1"] == bob.id.identity().as_str(), "bob sees only his own events and his folders': {e}");
        assert!(e["Value1"] != id && !e["Component"].as_str().unwrap().eq_ignore_ascii_case(TEAM), "{e}");
    }
    assert!(events(&s, &tb, &[q("Component", TEAM)]).await.is_empty());
    assert!(events(&s, &tb, &[q("Value1", id)]).await.is_empty());
    // Alice sees her entry's events, not bob's entry's.
    let hers = events(&s, &ta, &[q("Limit", 1000)]).await;
    assert!(hers.iter().any(|e| e["Value1"] == id));
    assert!(hers.iter().all(|e| e["Value1"] != bobs && e["Component"] != ELSEWHERE));
    // Once Bob may read Team A, he sees its entry's events.
    s.admin.set_rights(TEAM, "bob", strongroom_core::vault::Rights::parse("read").unwrap()).await.unwrap();
    assert_eq!(events(&s, &tb, &[q("Value1", id)]).await.len(), 6);

    // No token: 401.
    let r = s.http.get(s.at("/vedsdk/Log")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn log_schema_needs_admin_viewlogs_and_the_metadata_stub_answers_empty() {
    let s = TestServer::start().await;
    s.integration("app", SCOPE, |_| {}).await;
    let alice = s.user("alice").await;
    let small = token(&s, &alice, "restricted").await;
    let (status, v) = get(&s, "/vedsdk/log/logschema", &small, &[]).await;
    assert_eq!((status, v["error"].as_str()), (StatusCode::FORBIDDEN, Some("insufficient_scope")), "{v}");
    let (status, v) = get(&s, "/vedsdk/Log/LogSchema", &token(&s, &alice, "admin:viewlogs").await, &[]).await;
    assert_eq!(status, StatusCode::OK);
    let defs = v["LogEventDefinitions"].as_array().unwrap();
    assert_eq!(defs.len(), strongroom_core::event::EventKind::ALL.len());
    assert!(defs.iter().all(|d| d["Id"].as_i64().is_some_and(|i| i >> 16 == 0x0300) && d["Text1Title"] == "Identity"));
    assert_eq!(v["LogEventApplicationDefinitions"], json!([{"ApplicationName": "Strongroom", "Id": 0x0300}]));

    // VenafiPS's session start: three classes, each `{"Result":0,"Items":[]}`; any valid token.
    for class in ["X509 Certificate", "Device", "Application Base"] {
        let r = s.http.post(s.at("/vedsdk/metadata/getitemsforclass")).bearer_auth(&small).json(&json!({"ConfigClass": class})).send();
        let r = r.await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.json::<Value>().await.unwrap(), json!({"Result": 0, "Items": []}));
    }
    let r = s.http.post(s.at("/vedsdk/Metadata/GetItemsForClass")).json(&json!({})).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

/// One implementation of each administrative act: the CLI's `Admin`, acting
/// as an API caller, writes the same event naming that caller (its identity,
/// address and request id), and the log shows it.
#[tokio::test]
async fn an_administrative_act_names_whoever_did_it() {
    use strongroom_app::admin::{Actor, IntegrationSpec};
    let s = TestServer::start().await;
    s.integration("app", SCOPE, |_| {}).await;
    let root = s.admin.create_user("root", &strongroom_core::secret::Secret::new(PASSWORD), true).await.unwrap();
    let rt = token(&s, &root, SCOPE).await;
    let actor = Actor { identity: root.id.identity(), source: "192.0.2.7".into(), request_id: "req-1".into() };
    let spec = IntegrationSpec { scope: Some("restricted".into()), ..Default::default() };
    s.admin.acting_as(actor).create_integration("other", spec.clone()).await.unwrap();
    s.admin.update_integration("other", IntegrationSpec { name: Some("Other".into()), ..spec }).await.unwrap();
    let es = events(&s, &rt, &[q("Limit", 2)]).await;
    assert_eq!(field(&es, "Name"), [&json!("integration.updated"), &json!("integration.created")]);
    assert_eq!(
        (es[1]["Text1"].as_str(), es[1]["SourceIP"].as_str(), es[1]["RequestId"].as_str()),
        (Some(root.id.identity().as_str()), Some("192.0.2.7"), Some("req-1"))
    );
    assert_eq!(
        (es[0]["Text1"].as_str(), es[0]["SourceIP"].as_str()),
        (Some("admin"), Some("cli")),
        "the CLI's own handle still names the CLI"
    );
    assert!(es.iter().all(|e| e["Data"] == "other"));
}

/// `GET Log/{guid}` (pyvenafi's `Log._Guid`): a folder's events are those at
/// or below it, a user's those that name them; the GUID with braces,
/// percent-encoded braces or none; the reader's rights still apply.
#[tokio::test]
async fn the_log_of_one_object_by_its_guid() {
    let s = TestServer::start().await;
    s.integration("app", SCOPE, |_| {}).await;
    let alice = s.vault_user("alice", TEAM, "read,write").await;
    let ta = token(&s, &alice, SCOPE).await;
    let mine = add(&s, &ta, TEAM).await;
    let bob = s.vault_user("bob", ELSEWHERE, "read,write").await;
    let tb = token(&s, &bob, "restricted:manage").await;
    let bobs = add(&s, &tb, ELSEWHERE).await;
    let root = s.admin.create_user("root", &strongroom_core::secret::Secret::new(PASSWORD), true).await.unwrap();
    let rt = token(&s, &root, SCOPE).await;
    let team = s.store.folder_object(TEAM.to_lowercase()).await.unwrap().unwrap().guid;
    let team = team.as_str();

    let value1s = |es: &[Value]| es.iter().map(|e| e["Value1"].as_i64().unwrap()).filter(|v| *v != 0).collect::<Vec<_>>();
    for path in [format!("/vedsdk/Log/{{{team}}}"), format!("/vedsdk/log/%7B{team}%7D"), format!("/vedsdk/Log/{team}")] {
        let (st, v) = get(&s, &path, &rt, &[]).await;
        assert_eq!(st, StatusCode::OK, "{path}: {v}");
        let es = v["LogEvents"].as_array().unwrap();
        assert!(!es.is_empty(), "{path}: {v}");
        assert!(value1s(es).contains(&mine) && !value1s(es).contains(&bobs), "only the folder's entries: {v}");
        assert!(es.iter().all(|e| e["Component"].as_str().is_some_and(|c| c.starts_with(TEAM))), "{v}");
    }
    // The filters apply as on GET Log.
    let (_, v) = get(&s, &format!("/vedsdk/Log/{team}"), &rt, &[q("Limit", 1)]).await;
    assert_eq!(v["LogEvents"].as_array().unwrap().len(), 1);

    // A user's events are those that name them (created, rights).
    let (st, v) = get(&s, &format!("/vedsdk/Log/{{{}}}", bob.id.as_str()), &rt, &[]).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let names: Vec<&str> = v["LogEvents"].as_array().unwrap().iter().map(|e| e["Name"].as_str().unwrap()).collect();
    assert!(names.contains(&"user.created"), "{v}");

    // Bob reads the log of alice's folder: nothing of hers (Read there is hers, not his).
    let (st, v) = get(&s, &format!("/vedsdk/Log/{team}"), &tb, &[]).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert!(!value1s(v["LogEvents"].as_array().unwrap()).contains(&mine), "{v}");

    // An unknown or malformed GUID: Result 9 with the reason.
    for bad in ["{00000000-0000-4000-8000-0000000000ff}", "nope"] {
        let (st, v) = get(&s, &format!("/vedsdk/Log/{bad}"), &rt, &[]).await;
        assert_eq!((st, v["Result"].as_i64()), (StatusCode::OK, Some(9)), "{bad}: {v}");
        assert!(v["Error"].is_string());
    }
    s.stop().await;
}
