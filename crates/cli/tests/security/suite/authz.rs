//! Authorization that follows every change at once: I5, live
//! tokens after a change of the integration or the user, probed while the
//! change is made; E5, the event log read through `GET /vedsdk/Log`; C8,
//! whether `Result` codes tell a caller without rights which VaultIDs exist.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde_json::{Value, json};

use crate::support::{Fx, PASSWORD, report};

fn s(v: &Value, k: &str) -> String {
    v[k].as_str().unwrap_or_else(|| panic!("no {k} in {v}")).to_owned()
}

/// A password grant for `user` on `client` with `scope`.
async fn grant_with(fx: &Fx, client: &str, user: &str, scope: &str) -> Value {
    let (st, v) = fx
        .post_json("/vedauth/authorize/oauth", &json!({"client_id": client, "username": user, "password": PASSWORD, "scope": scope}))
        .await;
    assert_eq!(st, 200, "password grant for {user} with {scope}: {v}");
    v
}

/// Probes `Verify` with `token` from 8 tasks until told to stop: each
/// probe's send time and status.
fn probe(fx: &Fx, token: &str, stop: Arc<AtomicBool>) -> Vec<tokio::task::JoinHandle<Vec<(Instant, u16)>>> {
    (0..8)
        .map(|_| {
            let (http, url, token, stop) =
                (fx.http.clone(), format!("{}/vedauth/authorize/verify", fx.base), token.to_owned(), stop.clone());
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
        .collect()
}

/// Runs `change` while `token` is probed from 8 tasks; returns the
/// statuses of the probes sent before the change began and of those sent
/// after it returned.
async fn during(fx: &Fx, token: &str, change: impl FnOnce()) -> (Vec<u16>, Vec<u16>) {
    let stop = Arc::new(AtomicBool::new(false));
    let tasks = probe(fx, token, stop.clone());
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let began = Instant::now();
    change();
    let done = Instant::now();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for t in tasks {
        for (sent, st) in t.await.unwrap() {
            if sent < began {
                before.push(st);
            } else if sent > done {
                after.push(st);
            }
        }
    }
    (before, after)
}

/// Whether every status is `want` (and there is at least one).
fn all(v: &[u16], want: u16) -> bool {
    !v.is_empty() && v.iter().all(|s| *s == want)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn i5_live_tokens_follow_authorization_changes() {
    let fx = Fx::start(&[], &[]);
    fx.folder("\\VED\\Policy\\Payroll");
    // (a) The integration's maximum scope loses restricted:delete while a token that has it is in use.
    let g = grant_with(&fx, "app", "alice", "restricted:manage,delete").await;
    let at = s(&g, "access_token");
    let add = json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": "\\VED\\Policy\\Payroll", "Base64Data": "eA=="});
    let (_, v) = fx.sdk(&at, "Add", &add).await;
    let id = v["VaultID"].as_i64().unwrap();
    let (scope_before, scope_after) = during(&fx, &at, || {
        fx.server.admin(&["integrations", "update", "app", "--scope", "restricted:manage"], "");
    })
    .await;
    let (st, v) = fx.sdk(&at, "OwnerDelete", &json!({"Namespace": "config", "Owner": "\\VED\\Policy\\Payroll", "VaultID": id})).await;
    let owner_delete = format!("{st} {}", v["Result"]);
    let deleted = fx.events("vault.deleted");
    // (b) Taken off the allow-list while the token is in use.
    fx.integration("listed", &[]);
    fx.server.admin(&["integrations", "update", "listed", "--allow-user", "alice"], "");
    let g = fx.grant("listed").await;
    let at = s(&g, "access_token");
    let (list_before, list_after) = during(&fx, &at, || {
        fx.server.admin(&["integrations", "update", "listed", "--allow-no-users"], "");
    })
    .await;
    let (st, v) = fx.sdk(&at, "Associate", &json!({"VaultID": id, "Name": "n", "StringValue": "v"})).await;
    let associate = format!("{st} {}", v["Result"]);
    // (c) A password reset ends the user's grants (by default); --keep-grants keeps them.
    fx.user("bob", PASSWORD);
    let kept = fx.password("app", "bob", PASSWORD).await.1;
    fx.server.admin(&["users", "set-password", "bob", "--keep-grants"], "another long passphrase\n");
    let kept_works = fx.verify(&s(&kept, "access_token")).await;
    let (reset_before, reset_after) = during(&fx, &s(&kept, "access_token"), || {
        fx.server.admin(&["users", "set-password", "bob"], "a third long passphrase\n");
    })
    .await;
    let (reset_refresh, _) = fx.refresh("app", &s(&kept, "refresh_token")).await;
    // (d) Disabled, then enabled: the old grant stays dead.
    fx.user("carol", PASSWORD);
    let c = fx.password("app", "carol", PASSWORD).await.1;
    fx.server.admin(&["users", "disable", "carol"], "");
    fx.server.admin(&["users", "enable", "carol"], "");
    let revived = (fx.verify(&s(&c, "access_token")).await, fx.refresh("app", &s(&c, "refresh_token")).await.0);
    let n = |v: &[u16]| v.len();
    let ok = report(
        "I5",
        "live tokens follow authorization changes at once",
        &format!(
            "Verify probed from 8 tasks during each change, (probes before: status; probes sent after the change returned: status): \
             integration scope reduced below the token's ({} ok; {} all 401: {}), then OwnerDelete with the token: {owner_delete} (entries deleted: {deleted}); \
             user taken off the allow-list ({} ok; {} all 401: {}), then Associate: {associate}; \
             password reset ({} ok; {} all 401: {}), refresh afterwards {reset_refresh}; with --keep-grants the token still works: {kept_works}; \
             disabled then enabled: access {}, refresh {} (the revocation bound is zero: no probe sent after a change returned succeeded)",
            n(&scope_before),
            n(&scope_after),
            all(&scope_after, 401),
            n(&list_before),
            n(&list_after),
            all(&list_after, 401),
            n(&reset_before),
            n(&reset_after),
            all(&reset_after, 401),
            revived.0,
            revived.1
        ),
        all(&scope_before, 200)
            && all(&scope_after, 401)
            && owner_delete == "401 null"
            && deleted == 0
            && all(&list_before, 200)
            && all(&list_after, 401)
            && associate == "401 null"
            && kept_works == 200
            && all(&reset_before, 200)
            && all(&reset_after, 401)
            && reset_refresh == 400
            && revived == (401, 400),
    );
    assert!(ok, "I5");
}

/// `GET /vedsdk/Log` with `token`: the events.
async fn log(fx: &Fx, token: &str) -> Vec<Value> {
    let r = fx.http.get(format!("{}/vedsdk/Log?Limit=1000", fx.base)).bearer_auth(token).send().await.unwrap();
    let v: Value = r.json().await.unwrap();
    v["LogEvents"].as_array().unwrap_or_else(|| panic!("no LogEvents: {v}")).clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e5_the_event_log_follows_rights() {
    let fx = Fx::start(&[], &[]);
    fx.server.admin(&["integrations", "update", "app", "--scope", "restricted:manage,delete;admin:viewlogs"], "");
    fx.folder("\\VED\\Policy\\Payroll");
    let alice = grant_with(&fx, "app", "alice", "restricted:manage;admin:viewlogs").await;
    let at = s(&alice, "access_token");
    let add = json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": "\\VED\\Policy\\Payroll", "Base64Data": "eA=="});
    let id = fx.sdk(&at, "Add", &add).await.1["VaultID"].as_i64().unwrap();
    fx.sdk(&at, "Associate", &json!({"VaultID": id, "Name": "Database password for payroll", "StringValue": "s3cret"})).await;
    // A user with no rights at all, whose token has admin:viewlogs.
    fx.user("mallory", PASSWORD);
    let m = grant_with(&fx, "app", "mallory", "restricted;admin:viewlogs").await;
    let mallory_identity = s(&m, "identity");
    let seen = log(&fx, &s(&m, "access_token")).await;
    let others: Vec<&Value> = seen.iter().filter(|e| e["Text1"] != mallory_identity.as_str()).collect();
    let alice_identity = s(&alice, "identity");
    let leaks = seen
        .iter()
        .filter(|e| e["Value1"] == id || e["Text1"] == alice_identity.as_str() || e.to_string().to_lowercase().contains("payroll"))
        .count();
    // A Master Admin sees every event.
    fx.server.admin(&["users", "create", "root", "--master-admin"], &format!("{PASSWORD}\n"));
    let root = grant_with(&fx, "app", "root", "restricted;admin:viewlogs").await;
    let all_events = log(&fx, &s(&root, "access_token")).await;
    let root_sees_payroll = serde_json::to_string(&all_events).unwrap().contains("Database password for payroll");
    // Alice sees her own entry's events.
    let hers = log(&fx, &at).await;
    let alice_sees_entry = hers.iter().any(|e| e["Value1"] == id);
    let ok = report(
        "E5",
        "the event log follows rights",
        &format!(
            "a user with no rights and admin:viewlogs read {} events, {} of them not their own, {leaks} naming another user's entry, identity or folder; \
             a Master Admin read {} (sees the association's name: {root_sees_payroll}); the entry's owner sees its events: {alice_sees_entry}",
            seen.len(),
            others.len(),
            all_events.len()
        ),
        !seen.is_empty() && others.is_empty() && leaks == 0 && root_sees_payroll && alice_sees_entry && all_events.len() > seen.len(),
    );
    assert!(ok, "E5");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c8_no_existence_oracle() {
    let fx = Fx::start(&[], &[]);
    fx.server.admin(&["integrations", "update", "app", "--scope", "restricted:manage,delete;admin:rotate"], "");
    fx.folder("\\VED\\Policy\\Payroll");
    let alice = fx.grant("app").await;
    let add = json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": "\\VED\\Policy\\Payroll", "Base64Data": "eA=="});
    let id = fx.sdk(&s(&alice, "access_token"), "Add", &add).await.1["VaultID"].as_i64().unwrap();
    let missing = id + 1000;
    fx.user("mallory", PASSWORD);
    let m = grant_with(&fx, "app", "mallory", "restricted:manage,delete;admin:rotate").await;
    let at = s(&m, "access_token");
    let mut differing = Vec::new();
    let mut answers = Vec::new();
    for op in [
        "Associate",
        "Dissociate",
        "LookupAllAssociationsbyVaultid",
        "LookupAssociationbyVaultID",
        "OwnerAdd",
        "OwnerDelete",
        "Retrieve",
        "OwnerLookup",
        "Mutate",
        "RotateKey",
    ] {
        let mut results = Vec::new();
        for vid in [id, missing] {
            let body = json!({"VaultID": vid, "Name": "n", "StringValue": "v", "Namespace": "config", "Owner": "\\VED\\Policy\\Payroll", "VaultType": 32});
            let (st, v) = if op == "RotateKey" {
                let r = fx
                    .http
                    .get(format!("{}/vedsdk/SecretStore/RotateKey/{vid}?newkeyname=Software:Default", fx.base))
                    .bearer_auth(&at)
                    .send()
                    .await
                    .unwrap();
                (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null))
            } else {
                fx.sdk(&at, op, &body).await
            };
            results.push(format!("{st} {}", v["Result"]));
        }
        if results[0] != results[1] {
            differing.push(format!("{op}: {} vs {}", results[0], results[1]));
        }
        answers.push(format!("{op} {}", results[0]));
    }
    let ok = report(
        "C8",
        "no existence oracle",
        &format!(
            "a caller without rights, an entry that exists vs one that does not, 10 operations: {} differ{}; answers: {}",
            differing.len(),
            if differing.is_empty() { String::new() } else { format!(" ({})", differing.join("; ")) },
            answers.join(", ")
        ),
        differing.is_empty(),
    );
    assert!(ok, "C8");
}
