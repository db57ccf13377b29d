//! E1 (audit events match writes) and E2 (a failing audit insert fails the
//! write).

use serde_json::{Value, json};

use crate::support::{Fx, report};

const MINE: &str = "\\VED\\Policy\\Audit";
const NOT_MINE: &str = "\\VED\\Policy\\Closed";

async fn add(fx: &Fx, at: &str, owner: &str) -> Value {
    fx.sdk(at, "Add", &json!({"VaultType": 32, "Keyname": "Software:Default", "Namespace": "config", "Owner": owner, "Base64Data": "AA=="}))
        .await
        .1
}

/// A server with a folder alice may write to, alice's access token, and an
/// entry of hers.
async fn fixture() -> (Fx, String, i64) {
    let fx = Fx::start(&[], &[]);
    fx.folder(MINE);
    let at = fx.grant("app").await["access_token"].as_str().unwrap().to_owned();
    let entry = add(&fx, &at, MINE).await["VaultID"].as_i64().unwrap();
    (fx, at, entry)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e1_audit_events_match_writes() {
    let fx = Fx::start(&[], &[]);
    fx.folder(MINE);
    fx.server.admin(&["folders", "create", NOT_MINE], "");
    let at = fx.grant("app").await["access_token"].as_str().unwrap().to_owned();
    let before = fx.events("vault.added") + fx.events("vault.associated");
    let entry = add(&fx, &at, MINE).await["VaultID"].as_i64().unwrap();
    let mut ok = 1; // the Add above
    let mut failed = 0;
    let mut canaries = Vec::new();
    const WRITES: usize = 400;
    for i in 0..WRITES {
        let r = match i % 5 {
            // success
            0 | 1 => {
                let v = format!("audit-canary-{}", crate::support::rand_hex(12));
                canaries.push(v.clone());
                fx.sdk(&at, "Associate", &json!({"VaultID": entry, "Name": format!("a{i}"), "StringValue": v})).await.1
            }
            // forbidden: no rights on the owner
            2 => add(&fx, &at, NOT_MINE).await,
            // invalid: no value
            3 => fx.sdk(&at, "Associate", &json!({"VaultID": entry, "Name": "x"})).await.1,
            // identical association (an earlier success again), or no such entry
            _ => {
                if i % 10 == 4 {
                    fx.sdk(
                        &at,
                        "Associate",
                        &json!({"VaultID": entry, "Name": format!("a{}", i - 4), "StringValue": canaries[canaries.len() - 2]}),
                    )
                    .await
                    .1
                } else {
                    fx.sdk(&at, "Associate", &json!({"VaultID": 999_999, "Name": "x", "StringValue": "y"})).await.1
                }
            }
        };
        if r["Result"] == 0 {
            ok += 1;
        } else {
            failed += 1;
        }
    }
    let events = fx.events("vault.added") + fx.events("vault.associated") - before;
    let log = fx.server.admin(&["events", "list", "--limit", "100000"], "");
    let canary_hits = canaries.iter().filter(|c| log.contains(c.as_str())).count();
    let e1 = report(
        "E1",
        "audit events match writes",
        &format!(
            "{} vault writes ({ok} succeeded, {failed} refused: forbidden, invalid, identical, unknown entry): {events} success events; {canary_hits} of {} values found in the event log",
            WRITES + 1,
            canaries.len()
        ),
        events == ok && canary_hits == 0,
    );
    assert!(e1, "E1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2_a_failing_audit_insert_fails_the_write() {
    let (fx, at, entry) = fixture().await;
    // E2: the events table refuses inserts; every write must fail and leave nothing.
    let db = rusqlite::Connection::open(fx.server.dir.join("strongroom.db")).unwrap();
    db.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
    db.execute_batch("CREATE TRIGGER sec_audit_down BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'audit down'); END;").unwrap();
    const BLOCKED: usize = 100;
    let mut answered_ok = 0;
    let mut codes = std::collections::BTreeMap::<String, usize>::new();
    for i in 0..BLOCKED {
        let (st, r) = fx.sdk(&at, "Associate", &json!({"VaultID": entry, "Name": format!("blocked{i}"), "StringValue": "v"})).await;
        if r["Result"] == 0 {
            answered_ok += 1;
        }
        *codes.entry(format!("{st}/{}", r["Result"])).or_default() += 1;
    }
    db.execute_batch("DROP TRIGGER sec_audit_down;").unwrap();
    let mut persisted = 0;
    for i in 0..BLOCKED {
        let (_, r) = fx.sdk(&at, "LookupAssociationbyVaultID", &json!({"VaultID": entry, "Name": format!("blocked{i}")})).await;
        if r["Result"] == 0 {
            persisted += 1;
        }
    }
    let e2 = report(
        "E2",
        "audit insert failing",
        &format!(
            "{BLOCKED} Associates while inserts into events fail: {answered_ok} answered success, {persisted} persisted; answers (HTTP/Result): {codes:?}"
        ),
        answered_ok == 0 && persisted == 0,
    );
    assert!(fx.events_verify(), "the chain still verifies afterwards");
    assert!(e2, "E2");
}
