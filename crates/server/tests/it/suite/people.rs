//! L1 (filter injection through the directory sign-in) and L2 (a removal
//! from a group reaches live tokens at once, probed while it happens).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use reqwest::StatusCode;
use serde_json::json;

use strongroom_server::config::RawLdap;
use strongroom_testkit::ldap::{BASE, PASSWORD as DIR_PASSWORD, READER_DN, READER_PASSWORD, Shape, Slapd};

use super::report;
use crate::support::TestServer;

/// L1: user names that are LDAP filter syntax, through the password grant:
/// each is one escaped value (RFC 4515), so none signs anybody in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn l1_ldap_filter_injection() {
    let Some(slapd) = Slapd::start(Shape::Ldap, "L1 LDAP filter injection") else { return };
    let password_file = slapd.dir.path().join("bind-password");
    std::fs::write(&password_file, READER_PASSWORD).unwrap();
    let s = TestServer::start_with(|raw| {
        raw.ldap = RawLdap {
            url: Some(slapd.url()),
            ca_file: Some(slapd.ca_file()),
            bind_dn: Some(READER_DN.into()),
            bind_password_file: Some(password_file),
            user_base: Some(format!("ou=people,{BASE}")),
            ..Default::default()
        };
    })
    .await;
    s.integration("app", "restricted", |i| i.password = Some(true)).await;
    // `dir\NAME`: the directory's form, so every one reaches the directory's search.
    let names = ["dir\\*)(uid=*", "dir\\*", "dir\\alice)(|(uid=*", "dir\\al*", "dir\\alice\0", "dir\\*)(objectClass=*", "LDAP+dir:*)(&"];
    let mut answers = Vec::new();
    for n in names {
        let (st, v) = s
            .post_json(
                "/vedauth/authorize/oauth",
                json!({"client_id": "app", "username": n, "password": DIR_PASSWORD, "scope": "restricted"}),
            )
            .await;
        answers.push((st, v["error"].as_str().unwrap_or("").to_owned()));
    }
    let (ok, _) = s
        .post_json(
            "/vedauth/authorize/oauth",
            json!({"client_id": "app", "username": "alice", "password": DIR_PASSWORD, "scope": "restricted"}),
        )
        .await;
    let refused = answers.iter().all(|(st, e)| *st == StatusCode::BAD_REQUEST && e == "invalid_grant");
    let pass = report(
        "L1",
        "LDAP filter injection",
        &format!(
            "{} names of filter syntax ({}) with a valid password: {}; alice herself {}",
            names.len(),
            names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", "),
            if refused { "all 400 invalid_grant".to_owned() } else { format!("{answers:?}") },
            ok.as_u16()
        ),
        refused && ok == StatusCode::OK,
    );
    assert!(pass, "L1");
}

/// L2: 8 tasks call `Verify` with a token whose integration admits its user
/// only through a group while the user is removed from it: no probe sent
/// after the removal returned succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn l2_group_removal_reaches_live_tokens() {
    let s = TestServer::start().await;
    let alice = s.user("alice").await;
    s.admin.create_group("app-users").await.unwrap();
    s.admin.add_member("app-users", "alice").await.unwrap();
    s.integration("app", "restricted", |i| {
        i.allow_all_users = false;
        i.allow_groups = Some(vec!["app-users".into()]);
    })
    .await;
    let t = s.tokens_for(&alice, "app", "restricted").await;
    let token = t["access_token"].as_str().unwrap().to_owned();
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (http, url, token, stop) = (s.http.clone(), s.at("/vedauth/authorize/verify"), token.clone(), stop.clone());
            tokio::spawn(async move {
                let mut seen = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let sent = Instant::now();
                    let st = http.get(&url).bearer_auth(&token).send().await.unwrap().status().as_u16();
                    seen.push((sent, st));
                }
                seen
            })
        })
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    s.admin.remove_member("app-users", "alice").await.unwrap();
    let removed = Instant::now();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let mut before = (0, 0);
    let mut after = (0, 0);
    for t in tasks {
        for (sent, st) in t.await.unwrap() {
            let slot = if sent < removed { &mut before } else { &mut after };
            slot.0 += 1;
            if st == 200 {
                slot.1 += 1;
            }
        }
    }
    let pass = report(
        "L2",
        "group removal reaches live tokens",
        &format!(
            "Verify probed from 8 tasks while the user's only way onto the integration, a group, lost them: before {} probes, {} 200; \
             sent after the removal returned {} probes, {} 200 (the bound is zero: memberships are read in every token check)",
            before.0, before.1, after.0, after.1
        ),
        before.1 > 0 && after.0 > 0 && after.1 == 0,
    );
    assert!(pass, "L2");
}
