//! Sign-in through a directory: Debian's `slapd`, started by the test on
//! 127.0.0.1 with its own TLS certificate (`strongroom_testkit::ldap`), in
//! an LDAP shape (inetOrgPerson, nested groupOfNames, a locked account)
//! and an AD shape (`sAMAccountName`, `objectGUID`, `memberOf`,
//! `userAccountControl`). The password grant and the approval page sign in
//! through it; refused cleanly: a wrong password, an empty one, a filter
//! injection, a locked account, the directory down (local users still
//! work); a removal from a directory group reaches existing grants at their
//! next refresh (the bound: one access token's lifetime).

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::{Value, json};

use strongroom_server::config::RawLdap;
use strongroom_testkit::ldap::{BASE, PASSWORD, READER_DN, READER_PASSWORD, Shape, Slapd};

use crate::support::TestServer;

const SCOPE: &str = "restricted:manage";

fn raw_ldap(slapd: &Slapd, profile: &str) -> RawLdap {
    let password_file = slapd.dir.path().join("bind-password");
    std::fs::write(&password_file, format!("{READER_PASSWORD}\n")).unwrap();
    RawLdap {
        url: Some(slapd.url()),
        ca_file: Some(slapd.ca_file()),
        profile: Some(profile.into()),
        name: Some(if profile == "ad" { "corp".into() } else { "dir".into() }),
        bind_dn: Some(READER_DN.into()),
        bind_password_file: Some(password_file),
        user_base: Some(format!("ou=people,{BASE}")),
        timeout_secs: Some(2),
        ..Default::default()
    }
}

async fn sign_in(s: &TestServer, user: &str, password: &str) -> (StatusCode, Value) {
    s.post_json("/vedauth/authorize/oauth", json!({"client_id": "app", "username": user, "password": password, "scope": SCOPE})).await
}

fn result(v: &Value) -> i64 {
    v["Result"].as_i64().unwrap()
}

#[tokio::test]
async fn people_sign_in_through_ldap_with_their_nested_groups() {
    let Some(mut slapd) = Slapd::start(Shape::Ldap, "LDAP sign-in") else { return };
    let s = TestServer::start_with(|raw| {
        let mut l = raw_ldap(&slapd, "ldap");
        l.group_base = Some(format!("ou=groups,{BASE}"));
        raw.ldap = l;
    })
    .await;
    s.integration("app", SCOPE, |spec| spec.password = Some(true)).await;
    s.user("carol").await;

    // The same person by every name form; the identity is the directory's stable id.
    let alice = "LDAP+dir:{0b8f7f8e-1111-4222-8333-000000000001}";
    for name in ["alice", "dir\\alice", "DIR\\alice", "LDAP+dir:alice"] {
        let (st, t) = sign_in(&s, name, PASSWORD).await;
        assert_eq!(st, StatusCode::OK, "{name}: {t}\n{}", slapd.log());
        assert_eq!(t["identity"], alice, "{name}");
    }
    // Sign-in latency through LDAP (TLS connect, service bind, search, the person's bind, group searches).
    let mut took = Vec::new();
    for _ in 0..20 {
        let start = Instant::now();
        assert_eq!(sign_in(&s, "dir\\alice", PASSWORD).await.0, StatusCode::OK);
        took.push(start.elapsed());
    }
    took.sort();
    eprintln!("LDAP sign-in latency over 20 password grants: p50 {:?}, max {:?}", took[10], took[19]);

    let (_, t) = sign_in(&s, "alice", PASSWORD).await;
    let at = t["access_token"].as_str().unwrap().to_owned();
    assert_eq!(s.get_bearer("/vedauth/authorize/verify", &at).await.1["identity"], alice);
    // Identity/Self: alice, her groups (devs, and engineering through it), the provider.
    let (_, me) = s.get_bearer("/vedsdk/Identity/Self", &at).await;
    let names: Vec<&str> = me["Identities"].as_array().unwrap().iter().map(|e| e["PrefixedName"].as_str().unwrap()).collect();
    assert_eq!(names[..3], ["LDAP+dir:alice", "LDAP+dir:devs", "LDAP+dir:engineering"], "{me}");
    assert_eq!(me["Identities"][0]["PrefixedUniversal"], alice);
    // Browse finds directory people and groups by their shown name (scope configuration needed: the token has none).
    s.integration("ps", "configuration", |spec| spec.password = Some(true)).await;
    let (_, ps) = s
        .post_json(
            "/vedauth/authorize/oauth",
            json!({"client_id": "ps", "username": "carol", "password": crate::support::PASSWORD, "scope": "configuration"}),
        )
        .await;
    let r = s
        .http
        .post(s.at("/vedsdk/Identity/Browse"))
        .bearer_auth(ps["access_token"].as_str().unwrap())
        .json(&json!({"Filter": "ali"}))
        .send()
        .await
        .unwrap();
    let found: Value = r.json().await.unwrap();
    assert_eq!(found["Identities"][0]["PrefixedUniversal"], alice, "{found}");
    let last = me["Identities"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["Prefix"].as_str(), last["Type"].as_i64()), (Some("LDAP+dir"), Some(32)), "the directory is the provider: {me}");

    // Refused cleanly, each as a wrong password, nothing issued.
    for (name, password, why) in [
        ("alice", "wrong password", "wrong user name or password"),
        ("alice", "", "wrong user name or password"),
        ("*)(uid=*", PASSWORD, "wrong user name or password"),
        ("dir\\*", PASSWORD, "wrong user name or password"),
        ("mallory", PASSWORD, "the directory account is disabled or locked"),
        ("nobody", PASSWORD, "wrong user name or password"),
    ] {
        let (st, v) = sign_in(&s, name, password).await;
        assert_eq!((st, v["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")), "{name}: {v}");
        let failed = s.store.events(strongroom_store::EventFilter { kind: Some("login.failed".into()), limit: 1000, ..Default::default() });
        let last = failed.await.unwrap().pop().unwrap().event;
        assert_eq!(last.detail, why, "{name}");
    }
    // A local user is a local user: `local:carol` and `carol` never reach the directory.
    assert_eq!(sign_in(&s, "carol", crate::support::PASSWORD).await.0, StatusCode::OK);

    // Rights granted to a directory group; a removal in the directory reaches the grant at its next refresh.
    s.admin.create_folder("\\VED\\Policy\\Dev").await.unwrap();
    s.admin
        .set_group_rights("\\VED\\Policy\\Dev", "LDAP+dir:engineering", strongroom_core::vault::Rights::parse("read,write").unwrap())
        .await
        .unwrap();
    let (_, v) =
        s.sdk("Add", &at, json!({"VaultType": 32, "Namespace": "config", "Owner": "\\VED\\Policy\\Dev", "Base64Data": "c2VjcmV0"})).await;
    assert_eq!(result(&v), 0, "Write through the nested group: {v}");
    let id = v["VaultID"].as_i64().unwrap();
    slapd.modify(&format!("dn: cn=devs,ou=groups,{BASE}\nchangetype: modify\ndelete: member\nmember: uid=alice,ou=people,{BASE}\n"));
    // The access token in hand keeps the groups of its last refresh...
    assert_eq!(result(&s.sdk("Associate", &at, json!({"VaultID": id, "Name": "a", "StringValue": "v"})).await.1), 0);
    // ...the refresh reads the directory again: gone.
    let (st, t2) = s.refresh("app", t["refresh_token"].as_str().unwrap()).await;
    assert_eq!(st, StatusCode::OK, "{t2}");
    let at2 = t2["access_token"].as_str().unwrap();
    let (_, v) = s.sdk("Associate", at2, json!({"VaultID": id, "Name": "b", "StringValue": "v"})).await;
    assert_ne!(result(&v), 0, "the rights are gone after the refresh: {v}");
    assert_ne!(
        result(&s.sdk("Associate", &at, json!({"VaultID": id, "Name": "c", "StringValue": "v"})).await.1),
        0,
        "and for the older token too"
    );
    let synced =
        s.store.events(strongroom_store::EventFilter { kind: Some("user.directory_synced".into()), limit: 100, ..Default::default() });
    assert!(synced.await.unwrap().iter().any(|e| e.event.detail.contains("left=[LDAP+dir:devs,LDAP+dir:engineering]")));

    // The directory down: a clear error within its timeout; local users still sign in; refresh waits for it.
    slapd.stop();
    let start = Instant::now();
    let (st, v) = sign_in(&s, "alice", PASSWORD).await;
    assert_eq!((st, v["error"].as_str()), (StatusCode::SERVICE_UNAVAILABLE, Some("temporarily_unavailable")), "{v}");
    assert!(v["error_description"].as_str().unwrap().contains("identity provider cannot be reached"), "{v}");
    assert!(start.elapsed() < Duration::from_secs(10), "bounded: {:?}", start.elapsed());
    assert_eq!(sign_in(&s, "carol", crate::support::PASSWORD).await.0, StatusCode::OK);
    let (st, v) = s.refresh("app", t2["refresh_token"].as_str().unwrap()).await;
    assert_eq!((st, v["error"].as_str()), (StatusCode::SERVICE_UNAVAILABLE, Some("temporarily_unavailable")), "{v}");
    // The page says so too.
    let d = s.start_device("app", SCOPE).await;
    let page = strongroom_testkit::page::Page::open(&s.http, d["verification_uri_complete"].as_str().unwrap()).await.with_origin(&s.url);
    let (status, html) = page.sign_in(d["user_code"].as_str().unwrap(), "dir\\alice", PASSWORD).await;
    assert_eq!(status, 503, "{html}");
    assert!(html.contains("directory cannot be reached"), "{html}");
    // Back up: the same refresh token works (it was not spent), and the page signs in through the directory.
    slapd.resume();
    let (st, v) = s.refresh("app", t2["refresh_token"].as_str().unwrap()).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let (status, html) = page.sign_in_and_decide(d["user_code"].as_str().unwrap(), "dir\\alice", PASSWORD, true).await;
    assert_eq!(status, 200, "{html}");
    let (st, t) = s.poll("app", d["device_code"].as_str().unwrap()).await;
    assert_eq!((st, t["identity"].as_str()), (StatusCode::OK, Some(alice)), "{t}");
    assert!(s.admin.verify_events().await.unwrap().events > 0);
}

#[tokio::test]
async fn people_sign_in_through_an_ad_shaped_directory() {
    let Some(slapd) = Slapd::start(Shape::Ad, "AD-shaped sign-in") else { return };
    let s = TestServer::start_with(|raw| {
        let mut l = raw_ldap(&slapd, "ad");
        // slapd has no objectCategory shortcut (AD reads `person` as its DN).
        l.user_filter = Some("(objectClass=user)".into());
        raw.ldap = l;
    })
    .await;
    s.integration("app", SCOPE, |spec| spec.password = Some(true)).await;
    // objectGUID's bytes in Microsoft's order: 13121110-1514-1716-1819-1a1b1c1d1e01.
    let alice = "AD+corp:{13121110-1514-1716-1819-1a1b1c1d1e01}";
    for name in ["corp\\alice", "AD+corp:alice", "alice"] {
        let (st, t) = sign_in(&s, name, PASSWORD).await;
        assert_eq!(st, StatusCode::OK, "{name}: {t}\n{}", slapd.log());
        assert_eq!(t["identity"], alice, "{name}");
    }
    let (_, t) = sign_in(&s, "corp\\alice", PASSWORD).await;
    // A refresh finds her again by objectGUID (its 16 bytes, escaped, in the filter).
    let (st, t) = s.refresh("app", t["refresh_token"].as_str().unwrap()).await;
    assert_eq!((st, t["identity"].as_str()), (StatusCode::OK, Some(alice)), "{t}");
    let (_, me) = s.get_bearer("/vedsdk/Identity/Self", t["access_token"].as_str().unwrap()).await;
    let names: Vec<&str> = me["Identities"].as_array().unwrap().iter().map(|e| e["PrefixedName"].as_str().unwrap()).collect();
    assert_eq!(names[..3], ["AD+corp:alice", "AD+corp:devs", "AD+corp:engineering"], "memberOf, nested: {me}");
    for (name, password) in [("corp\\alice", "wrong"), ("corp\\*)(sAMAccountName=*", PASSWORD), ("corp\\mallory", PASSWORD)] {
        let (st, v) = sign_in(&s, name, password).await;
        assert_eq!((st, v["error"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_grant")), "{name}: {v}");
    }
    let failed = s.store.events(strongroom_store::EventFilter { kind: Some("login.failed".into()), limit: 1000, ..Default::default() });
    assert_eq!(failed.await.unwrap().pop().unwrap().event.detail, "the directory account is disabled or locked", "userAccountControl 514");
}
