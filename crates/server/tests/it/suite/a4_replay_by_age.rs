//! A4: a rotated refresh token replayed after an age of 1 s, 1 h, 24 h and
//! `refresh_until` − 60 s (the manual clock moves; nothing sleeps). Spent
//! tokens stay tombstones until the grant's `refresh_until`, so every replay
//! must be detected: `invalid_grant`, and the whole grant revoked.
//!
//! The lost-answer rule makes one exception by design (core::grant::refresh):
//! within the retry window (30 s by default), a replay while the successor
//! pair was never used is a retry. So the legitimate client first uses its
//! new pair (an access token presented to `Verify` marks the pair used), and
//! the unused-successor case is reported on its own. On SQLite, and on
//! PostgreSQL when one is reachable (skipped loudly otherwise).

use reqwest::StatusCode;
use serde_json::Value;

use strongroom_core::time::Clock as _;

use super::report;
use crate::support::TestServer;

const TRIALS: usize = 10;
const CLIENT: &str = "a4";

#[derive(Clone, Copy)]
enum Age {
    Secs(i64),
    /// This many seconds before the grant's `refresh_until`.
    BeforeEnd(i64),
}

const AGES: [(&str, Age); 4] =
    [("1 s", Age::Secs(1)), ("1 h", Age::Secs(3600)), ("24 h", Age::Secs(86_400)), ("refresh_until-60 s", Age::BeforeEnd(60))];

fn tok(v: &Value, k: &str) -> String {
    v[k].as_str().unwrap_or_else(|| panic!("{k} missing: {v}")).to_owned()
}

async fn verify(s: &TestServer, access: &str) -> StatusCode {
    s.get_bearer("/vedauth/authorize/verify", access).await.0
}

fn invalid_grant((st, v): &(StatusCode, Value)) -> bool {
    *st == StatusCode::BAD_REQUEST && v["error"] == "invalid_grant"
}

/// Moves the clock so that the token rotated into `t1` (now) is `age` old.
fn age_to(s: &TestServer, t1: &Value, age: Age) {
    match age {
        Age::Secs(n) => s.clock.advance_secs(n),
        Age::BeforeEnd(n) => {
            let until = t1["refresh_until"].as_i64().unwrap() * 1000;
            s.clock.advance_millis(until - n * 1000 - s.clock.now().millis());
        }
    }
}

/// One trial: a grant, one rotation (rt0 → at1/rt1), the successor used or
/// not, then rt0 replayed at `age`. Returns (replay refused, grant revoked,
/// retried): revoked means the newest refresh token is refused and the newest
/// access token answers 401 afterwards, while it worked just before.
async fn trial(s: &TestServer, user: &strongroom_core::identity::User, age: Age, use_successor: bool) -> (bool, bool, bool) {
    let t0 = s.tokens_for(user, CLIENT, "restricted").await;
    let rt0 = tok(&t0, "refresh_token");
    let (st, t1) = s.refresh(CLIENT, &rt0).await;
    assert_eq!(st, StatusCode::OK, "{t1}");
    let (at1, rt1) = (tok(&t1, "access_token"), tok(&t1, "refresh_token"));
    if use_successor {
        assert_eq!(verify(s, &at1).await, StatusCode::OK, "the client uses its new pair");
    }
    age_to(s, &t1, age);
    // Just before the replay the newest tokens work (checking the access
    // token counts as using the pair, so only when it was used already).
    let worked = !use_successor || verify(s, &at1).await == StatusCode::OK;
    let replay = s.refresh(CLIENT, &rt0).await;
    if replay.0 == StatusCode::OK {
        // A retry: the unused successor is dead, the new pair works, the grant lives.
        let at2 = tok(&replay.1, "access_token");
        let retried = verify(s, &at1).await == StatusCode::UNAUTHORIZED
            && verify(s, &at2).await == StatusCode::OK
            && s.refresh(CLIENT, &tok(&replay.1, "refresh_token")).await.0 == StatusCode::OK;
        return (false, false, retried);
    }
    let refused = invalid_grant(&replay);
    let revoked = worked && invalid_grant(&s.refresh(CLIENT, &rt1).await) && verify(s, &at1).await == StatusCode::UNAUTHORIZED;
    (refused, revoked, false)
}

/// All trials on one server: the figure and whether it passes.
async fn on(s: TestServer) -> (String, bool) {
    let alice = s.user("alice").await;
    // Access tokens as long-lived as the grant (90 days), so the newest one
    // still works at every age until the replay revokes it.
    s.integration(CLIENT, "restricted", |i| i.overrides.access_validity = Some(90 * 86_400)).await;
    let mut by_age = Vec::new();
    let (mut detected, mut revoked) = (0, 0);
    for (name, age) in AGES {
        let (mut d, mut r) = (0, 0);
        for _ in 0..TRIALS {
            let (refused, gone, _) = trial(&s, &alice, age, true).await;
            d += usize::from(refused);
            r += usize::from(gone);
        }
        by_age.push(format!("{name} {d}/{TRIALS}"));
        detected += d;
        revoked += r;
    }
    // The unused successor: a retry inside the window (by design), detected after it.
    let (mut retried, mut unused_detected, mut unused_revoked) = (0, 0, 0);
    for (i, (_, age)) in AGES.into_iter().enumerate() {
        for _ in 0..TRIALS {
            let (refused, gone, retry) = trial(&s, &alice, age, false).await;
            if i == 0 {
                retried += usize::from(retry);
            } else {
                unused_detected += usize::from(refused);
                unused_revoked += usize::from(gone);
            }
        }
    }
    let reuse_events = s.event_kinds().await.iter().filter(|k| *k == "token.refresh_reuse").count();
    s.stop().await;
    let all = AGES.len() * TRIALS;
    let later = (AGES.len() - 1) * TRIALS;
    let pass = detected == all
        && revoked == all
        && retried == TRIALS
        && unused_detected == later
        && unused_revoked == later
        && reuse_events == all + later;
    let figure = format!(
        "successor used: {detected}/{all} detected ({}), grant revoked {revoked}/{all}; successor unused: retried within the window \
         {retried}/{TRIALS}, detected after it {unused_detected}/{later}, revoked {unused_revoked}/{later}; {reuse_events} token.refresh_reuse events",
        by_age.join(", ")
    );
    (figure, pass)
}

#[tokio::test]
async fn a4_replay_detection_by_age() {
    let (sqlite, sqlite_pass) = on(TestServer::start().await).await;
    let (postgres, postgres_pass) = match TestServer::start_on_postgres().await {
        Some(s) => on(s).await,
        None => ("skipped (no PostgreSQL)".to_owned(), true),
    };
    let pass = report(
        "A4",
        "replay detection by age",
        &format!(
            "rt0 rotated, then replayed after 1 s, 1 h, 24 h, refresh_until-60 s, {TRIALS} trials per age; detected means invalid_grant, \
             revoked means the newest refresh token refused and the newest access token 401 (it answered 200 just before); an unused \
             successor within the 30 s retry window is a retry by design (new pair, the unused one dead, grant alive). SQLite: {sqlite}. \
             PostgreSQL: {postgres}"
        ),
        sqlite_pass && postgres_pass,
    );
    assert!(pass);
}
