//! `POST /vedsdk/oauth/*`: API integrations, their rules
//! and grants administered with the product's calls, as pyvenafi sends them
//! (lower-case paths) and as VenafiPS's `Revoke-VdcGrant` does; refused
//! without the scope or the role (403 both: book/src/administration/integrations.md); a removed rule
//! cuts a live token at once; two administrators changing one application
//! at once both keep their changes.

use reqwest::StatusCode;
use serde_json::{Value, json};
use strongroom_app::admin::IntegrationSpec;
use strongroom_core::identity::User;
use strongroom_core::secret::Secret;

use crate::support::{PASSWORD, TestServer};

const ADMIN_SCOPE: &str = "admin:delete";

/// A Master Admin named `name` and a token of theirs through integration `console` with `scope`.
async fn admin_token(s: &TestServer, name: &str, scope: &str) -> (User, String) {
    let u = s.admin.create_user(name, &Secret::new(PASSWORD), true).await.unwrap();
    let t = s.tokens_for(&u, "console", scope).await["access_token"].as_str().unwrap().to_owned();
    (u, t)
}

async fn server() -> TestServer {
    let s = TestServer::start().await;
    s.integration("console", "admin:delete,viewlogs;restricted:manage", |_| {}).await;
    s
}

/// `POST /vedsdk/oauth/<op>` as pyvenafi spells it (lower case).
async fn call(s: &TestServer, op: &str, token: &str, body: Value) -> (StatusCode, Value) {
    let r = s.http.post(s.at(&format!("/vedsdk/oauth/{op}"))).bearer_auth(token).json(&body).send().await.unwrap();
    let status = r.status();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("{op}: {status} {text}")))
}

/// A call that must succeed: its body.
async fn ok(s: &TestServer, op: &str, token: &str, body: Value) -> Value {
    let (status, v) = call(s, op, token, body).await;
    assert_eq!(status, StatusCode::OK, "{op}: {v}");
    assert_eq!((v["Result"].as_i64(), v["Success"].as_bool()), (Some(0), Some(true)), "{op}: {v}");
    v
}

/// A call refused with the product's `Result` code (HTTP 200).
async fn refused(s: &TestServer, op: &str, token: &str, body: Value, code: i64) -> Value {
    let (status, v) = call(s, op, token, body).await;
    assert_eq!(status, StatusCode::OK, "{op}: {v}");
    assert_eq!((v["Result"].as_i64(), v["Success"].as_bool()), (Some(code), Some(false)), "{op}: {v}");
    assert!(v["error_description"].as_str().is_some_and(|d| !d.is_empty()), "{op}: {v}");
    v
}

async fn verify(s: &TestServer, token: &str) -> StatusCode {
    s.get_bearer("/vedauth/authorize/verify", token).await.0
}

#[tokio::test]
async fn every_oauth_call_as_pyvenafi_sends_it() {
    let s = server().await;
    let (root, t) = admin_token(&s, "root", ADMIN_SCOPE).await;
    let alice = s.user("alice").await;
    let devs = s.admin.create_group("devs").await.unwrap();

    // CreateApplication with every field pyvenafi sends.
    let v = ok(
        &s,
        "createapplication",
        &t,
        json!({"ApplicationId": "team-app", "Name": "Team app", "Vendor": "Acme", "Description": "d", "Url": "https://x",
               "Scope": "restricted:manage", "MaximumScope": "restricted:manage,delete", "AccessValidity": 600,
               "GrantValidity": 86400, "Renewable": true}),
    )
    .await;
    let a = &v["Application"];
    assert_eq!((a["ID"].as_str(), a["Name"].as_str()), (Some("team-app"), Some("Team app")));
    assert_eq!(a["MaximumScope"], "restricted:delete,manage");
    assert_eq!((a["AccessValidity"].as_i64(), a["GrantValidity"].as_i64(), a["Renewable"].as_bool()), (Some(600), Some(86400), Some(true)));
    assert_eq!((a["GrantCount"].as_i64(), a["UserCount"].as_i64()), (Some(0), Some(0)));
    refused(&s, "createapplication", &t, json!({"ApplicationId": "team-app", "Scope": "restricted"}), 19).await;
    refused(&s, "createapplication", &t, json!({"ApplicationId": "no-scope"}), 6).await;
    refused(&s, "createapplication", &t, json!({"ApplicationId": "bad", "Scope": "nonsense:x"}), 6).await;
    refused(&s, "createapplication", &t, json!({"ApplicationId": "bad", "Scope": "restricted", "AccessValidity": -1}), 6).await;

    // GetApplication.
    assert_eq!(ok(&s, "getapplication", &t, json!({"ApplicationId": "team-app"})).await["Application"]["Name"], "Team app");
    refused(&s, "getapplication", &t, json!({"ApplicationId": "nope"}), 2).await;

    // Rules: a user and a group (braces or not, percent-free here: bodies carry them as they are).
    let alice_id = alice.id.identity();
    let devs_id = devs.identity();
    let v = ok(&s, "createrule", &t, json!({"ApplicationId": "team-app", "TrusteePrefixedUniversal": alice_id})).await;
    assert_eq!(v["Rule"]["TrusteePrefixedUniversal"], alice_id.as_str());
    assert_eq!(v["Rule"]["MaximumScope"], "restricted:delete,manage");
    refused(&s, "createrule", &t, json!({"ApplicationId": "team-app", "TrusteePrefixedUniversal": alice_id}), 20).await;
    ok(&s, "createrule", &t, json!({"ApplicationId": "team-app", "TrusteePrefixedUniversal": devs_id})).await;
    refused(&s, "createrule", &t, json!({"ApplicationId": "nope", "TrusteePrefixedUniversal": devs_id}), 2).await;
    refused(
        &s,
        "createrule",
        &t,
        json!({"ApplicationId": "team-app", "TrusteePrefixedUniversal": "local:{00000000-0000-4000-8000-000000000000}"}),
        6,
    )
    .await;
    let rules = ok(&s, "getrules", &t, json!({"ApplicationId": "team-app"})).await;
    let trustees: Vec<&str> = rules["Rules"].as_array().unwrap().iter().map(|r| r["TrusteePrefixedUniversal"].as_str().unwrap()).collect();
    assert_eq!(trustees, vec![alice_id.as_str(), devs_id.as_str()]);
    let by_trustee = ok(&s, "getrules", &t, json!({"TrusteePrefixedUniversal": devs_id})).await;
    assert_eq!(by_trustee["Rules"].as_array().unwrap().len(), 1);
    let page = ok(&s, "enumeraterules", &t, json!({"Start": 1, "Count": 5})).await;
    assert_eq!(page["Rules"][0]["TrusteePrefixedUniversal"], devs_id.as_str());

    // Alice may use it now: a grant, counted.
    let alice_token = s.tokens_for(&alice, "team-app", "restricted:manage").await["access_token"].as_str().unwrap().to_owned();
    assert_eq!(verify(&s, &alice_token).await, StatusCode::OK);
    let v = ok(&s, "getapplications", &t, json!({"ApplicationIds": ["team-app", "missing"]})).await;
    let apps = v["Applications"].as_array().unwrap();
    assert_eq!(apps.len(), 1);
    assert_eq!((apps[0]["GrantCount"].as_i64(), apps[0]["UserCount"].as_i64()), (Some(1), Some(1)));
    let v = ok(&s, "getapplications", &t, json!({"Filter": "TEAM"})).await;
    assert_eq!(v["Applications"].as_array().unwrap().len(), 1);

    // EnumerateApplications: order, direction, paging.
    let ids = |v: &Value| v["Applications"].as_array().unwrap().iter().map(|a| a["ID"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert_eq!(ids(&ok(&s, "enumerateapplications", &t, json!({})).await), vec!["console", "team-app"]);
    assert_eq!(ids(&ok(&s, "enumerateapplications", &t, json!({"Descending": "true", "Count": 1})).await), vec!["team-app"]);
    assert_eq!(ids(&ok(&s, "enumerateapplications", &t, json!({"OrderBy": "Name", "Start": 1})).await), vec!["team-app"]);
    refused(&s, "enumerateapplications", &t, json!({"Count": 0}), 6).await;

    // UpdateApplication: only what it names changes.
    let v = ok(&s, "updateapplication", &t, json!({"Application": {"ID": "team-app", "Name": "Renamed", "AccessValidity": 900}})).await;
    assert_eq!((v["Application"]["Name"].as_str(), v["Application"]["AccessValidity"].as_i64()), (Some("Renamed"), Some(900)));
    assert_eq!(v["Application"]["MaximumScope"], "restricted:delete,manage");
    assert_eq!(v["Application"]["GrantValidity"], 86400);
    refused(&s, "updateapplication", &t, json!({"Application": {"ID": "nope", "Name": "x"}}), 2).await;

    // Grants.
    let v = ok(&s, "getgrants", &t, json!({"ApplicationId": "team-app"})).await;
    let g = &v["Grants"][0];
    assert_eq!(v["Grants"].as_array().unwrap().len(), 1);
    assert_eq!((g["Application"].as_str(), g["GranteePrefixedUniversal"].as_str()), (Some("team-app"), Some(alice_id.as_str())));
    assert_eq!(g["Scope"], "restricted:manage");
    assert!(g["GrantIssuedOn"].as_str().unwrap().starts_with("/Date("), "{g}");
    assert!(g["ExpiresISO8601"].as_str().unwrap().ends_with('Z'), "{g}");
    assert_eq!(g["ExpiresUnixTime"].as_i64().unwrap() - g["AccessIssuedOnUnixTime"].as_i64().unwrap(), g["ValidFor"].as_i64().unwrap());
    let mine = ok(&s, "getgrants", &t, json!({"GranteePrefixedUniversal": alice_id})).await;
    assert_eq!(mine["Grants"].as_array().unwrap().len(), 1);
    let all = ok(&s, "enumerategrants", &t, json!({"Start": 0, "Count": 10})).await;
    assert_eq!(all["Grants"].as_array().unwrap().len(), 2, "root's own console grant and alice's");
    assert_eq!(ok(&s, "grantcount", &t, json!({"ApplicationId": "team-app"})).await["GrantCount"], 1);
    assert_eq!(ok(&s, "usercount", &t, json!({})).await["UserCount"], 2);

    // DeleteRule(s).
    ok(&s, "deleterule", &t, json!({"ApplicationId": "team-app", "TrusteePrefixedUniversal": devs_id})).await;
    refused(&s, "deleterule", &t, json!({"ApplicationId": "team-app", "TrusteePrefixedUniversal": devs_id}), 4).await;
    ok(&s, "createrule", &t, json!({"ApplicationId": "team-app", "TrusteePrefixedUniversal": devs_id})).await;
    ok(&s, "deleterules", &t, json!({"Rules": [{"ApplicationId": "team-app", "TrusteePrefixedUniversal": devs_id}]})).await;

    // Every change names the caller in its event.
    let f = strongroom_store::EventFilter { kind: Some("integration.updated".into()), limit: 100, ..Default::default() };
    let updates = s.store.events(f).await.unwrap();
    assert!(updates.len() >= 5, "{updates:?}");
    assert!(updates.iter().all(|e| e.event.identity == root.id.identity()), "{updates:?}");
    assert!(updates.iter().any(|e| e.event.detail == format!("rule added: {alice_id}")));

    // DeleteApplication ends its grants.
    ok(&s, "deleteapplication", &t, json!({"ApplicationId": "team-app"})).await;
    refused(&s, "getapplication", &t, json!({"ApplicationId": "team-app"}), 2).await;
    refused(&s, "deleteapplication", &t, json!({"ApplicationId": "team-app"}), 2).await;
    assert_eq!(verify(&s, &alice_token).await, StatusCode::UNAUTHORIZED);
    let kinds = s.event_kinds().await;
    assert!(kinds.iter().any(|k| k == "integration.created") && kinds.iter().any(|k| k == "integration.deleted"), "{kinds:?}");

    // Mixed case as VenafiPS and the DOC write them routes the same.
    let r = s.http.post(s.at("/vedsdk/OAuth/GetApplications")).bearer_auth(&t).json(&json!({})).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    s.stop().await;
}

#[tokio::test]
async fn oauth_calls_are_refused_without_the_scope_or_the_role() {
    let s = server().await;
    let (_, no_scope) = admin_token(&s, "root", "restricted:manage").await;
    let (_, read_only) = {
        let u = s.admin.create_user("reader", &Secret::new(PASSWORD), true).await.unwrap();
        let t = s.tokens_for(&u, "console", "admin").await["access_token"].as_str().unwrap().to_owned();
        (u, t)
    };
    let bob = s.user("bob").await;
    let not_admin = s.tokens_for(&bob, "console", ADMIN_SCOPE).await["access_token"].as_str().unwrap().to_owned();
    s.integration("team-app", "restricted", |_| {}).await;
    let body = json!({"ApplicationId": "team-app"});

    // No token: 401 (a bad token only).
    let r = s.http.post(s.at("/vedsdk/oauth/getapplication")).json(&body).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    for op in [
        "createapplication",
        "getapplication",
        "getapplications",
        "enumerateapplications",
        "updateapplication",
        "createrule",
        "getrules",
        "enumeraterules",
        "getgrants",
        "enumerategrants",
        "grantcount",
        "usercount",
        "deleteapplication",
        "deleterule",
        "deleterules",
        "revokegrants",
    ] {
        // The scope missing: 403 insufficient_scope.
        let (status, v) = call(&s, op, &no_scope, body.clone()).await;
        assert_eq!((status, v["error"].as_str()), (StatusCode::FORBIDDEN, Some("insufficient_scope")), "{op}: {v}");
        // The role missing (not a Master Admin): 403 insufficient_rights, never 401.
        let (status, v) = call(&s, op, &not_admin, body.clone()).await;
        assert_eq!((status, v["error"].as_str()), (StatusCode::FORBIDDEN, Some("insufficient_rights")), "{op}: {v}");
    }
    // `admin` reads and edits; deleting and revoking need `admin:delete`.
    ok(&s, "getapplication", &read_only, body.clone()).await;
    for op in ["deleteapplication", "deleterule", "deleterules", "revokegrants"] {
        let (status, v) = call(&s, op, &read_only, body.clone()).await;
        assert_eq!(
            (status, v["error_description"].as_str()),
            (StatusCode::FORBIDDEN, Some("Grant rejected scope 'admin:delete'.")),
            "{op}"
        );
    }
    // Nothing was changed by any refused call.
    assert!(s.admin.store.integration("team-app".into()).await.unwrap().is_some());
    // Bad bodies are the documented answers, never a 500.
    let (status, _) = call(&s, "getapplication", &read_only, json!([1])).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    refused(&s, "getapplication", &read_only, json!({"ApplicationId": 5}), 6).await;
    refused(&s, "getrules", &read_only, json!({"TrusteePrefixedUniversal": "local:{nope"}), 6).await;
    s.stop().await;
}

#[tokio::test]
async fn removing_a_rule_cuts_an_existing_token_at_once() {
    let s = server().await;
    let (_, t) = admin_token(&s, "root", ADMIN_SCOPE).await;
    let alice = s.user("alice").await;
    ok(&s, "createapplication", &t, json!({"ApplicationId": "team-app", "Scope": "restricted:manage"})).await;
    ok(&s, "createrule", &t, json!({"ApplicationId": "team-app", "TrusteePrefixedUniversal": alice.id.identity()})).await;
    let tokens = s.tokens_for(&alice, "team-app", "restricted:manage").await;
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(verify(&s, access).await, StatusCode::OK);
    // With braces percent-free, and as a bare GUID without braces: the same identity.
    let bare = alice.id.as_str().to_owned();
    ok(&s, "deleterule", &t, json!({"ApplicationId": "team-app", "TrusteePrefixedUniversal": format!("local:{bare}")})).await;
    assert_eq!(verify(&s, access).await, StatusCode::UNAUTHORIZED, "the next request after the removal is refused");
    let (status, _) = s.refresh("team-app", tokens["refresh_token"].as_str().unwrap()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "and so is a refresh");
    s.stop().await;
}

#[tokio::test]
async fn revoke_grants_as_venafips_sends_it() {
    let s = server().await;
    let (_, t) = admin_token(&s, "root", ADMIN_SCOPE).await;
    let alice = s.user("alice").await;
    let bob = s.user("bob").await;
    s.integration("team-app", "restricted:manage", |_| {}).await;
    let a1 = s.tokens_for(&alice, "team-app", "restricted").await["access_token"].as_str().unwrap().to_owned();
    let a2 = s.tokens_for(&alice, "console", "restricted").await["access_token"].as_str().unwrap().to_owned();
    let b1 = s.tokens_for(&bob, "team-app", "restricted").await["access_token"].as_str().unwrap().to_owned();
    // Revoke-VdcGrant: only GranteePrefixedUniversal, mixed-case path, scope admin:delete.
    let r = s
        .http
        .post(s.at("/vedsdk/oauth/RevokeGrants"))
        .bearer_auth(&t)
        .json(&json!({"GranteePrefixedUniversal": alice.id.identity()}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert_eq!((v["Result"].as_i64(), v["Success"].as_bool(), v["Revoked"].as_i64()), (Some(0), Some(true), Some(2)), "{v}");
    assert_eq!(verify(&s, &a1).await, StatusCode::UNAUTHORIZED);
    assert_eq!(verify(&s, &a2).await, StatusCode::UNAUTHORIZED);
    assert_eq!(verify(&s, &b1).await, StatusCode::OK, "only alice's grants");
    // By application: bob's grant on team-app, each with its grant.revoked event.
    let v = ok(&s, "revokegrants", &t, json!({"ApplicationId": "team-app"})).await;
    assert_eq!(v["Revoked"], 1);
    assert_eq!(verify(&s, &b1).await, StatusCode::UNAUTHORIZED);
    refused(&s, "revokegrants", &t, json!({}), 6).await;
    refused(&s, "revokegrants", &t, json!({"GranteePrefixedUniversal": "local:{00000000-0000-4000-8000-000000000000}"}), 3).await;
    let kinds = s.event_kinds().await;
    assert!(kinds.iter().any(|k| k == "user.grants_revoked") && kinds.iter().any(|k| k == "grant.revoked"), "{kinds:?}");
    s.stop().await;
}

#[tokio::test]
async fn two_admins_updating_one_application_at_once_keep_both_changes() {
    let s = server().await;
    let (_, t1) = admin_token(&s, "root", ADMIN_SCOPE).await;
    let (_, t2) = admin_token(&s, "root2", ADMIN_SCOPE).await;
    ok(&s, "createapplication", &t1, json!({"ApplicationId": "team-app", "Scope": "restricted"})).await;
    for round in 0..10i64 {
        let name = format!("Name {round}");
        let (a, b) = tokio::join!(
            call(&s, "updateapplication", &t1, json!({"Application": {"ID": "team-app", "Name": name}})),
            call(&s, "updateapplication", &t2, json!({"Application": {"ID": "team-app", "AccessValidity": 600 + round}})),
        );
        assert_eq!((a.1["Result"].as_i64(), b.1["Result"].as_i64()), (Some(0), Some(0)), "{a:?} {b:?}");
        let i = s.store.integration("team-app".into()).await.unwrap().unwrap();
        assert_eq!((i.name.as_str(), i.overrides.access_validity), (name.as_str(), Some(600 + round)), "round {round}: a change was lost");
    }
    // Many administrators at once through the one implementation, each a different field.
    let admin = s.admin.clone();
    let specs = vec![
        IntegrationSpec { name: Some("Final".into()), ..Default::default() },
        IntegrationSpec { scope: Some("restricted:manage".into()), ..Default::default() },
        IntegrationSpec { disabled: Some(true), ..Default::default() },
        IntegrationSpec { password: Some(true), ..Default::default() },
        IntegrationSpec { device: Some(false), ..Default::default() },
        IntegrationSpec {
            overrides: strongroom_core::integration::TokenOverrides { poll_interval: Some(9), ..Default::default() },
            ..Default::default()
        },
        IntegrationSpec {
            overrides: strongroom_core::integration::TokenOverrides { retry_window: Some(11), ..Default::default() },
            ..Default::default()
        },
        IntegrationSpec { allow_users: Some(vec!["root".into()]), ..Default::default() },
    ];
    let tasks: Vec<_> = specs
        .into_iter()
        .map(|spec| {
            let admin = admin.clone();
            tokio::spawn(async move { admin.update_integration("team-app", spec).await.unwrap() })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let i = s.store.integration("team-app".into()).await.unwrap().unwrap();
    assert_eq!(i.name, "Final");
    assert_eq!(i.max_scope.to_string(), "restricted:manage");
    assert!(i.disabled && i.grant_types.password && !i.grant_types.device);
    assert_eq!((i.overrides.poll_interval, i.overrides.retry_window), (Some(9), Some(11)));
    assert!(matches!(&i.allowed_users, strongroom_core::integration::AllowedUsers::Only(l) if l.len() == 1));
    s.stop().await;
}
