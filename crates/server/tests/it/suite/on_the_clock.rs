//! B1 (slow_down), B2 (expiry and denial) and I3 (`refresh_until`): the
//! security list's checks that wait on time, on the in-process server and
//! its manual clock, so the clock moves and nothing sleeps. The same
//! requests as against the binary; the only difference is whose clock
//! passes the seconds.

use reqwest::StatusCode;
use serde_json::{Value, json};

use strongroom_testkit::page::Page;

use super::report;
use crate::support::{PASSWORD, PageClient, TestServer};

fn s(v: &Value, k: &str) -> String {
    v[k].as_str().unwrap_or_else(|| panic!("no {k} in {v}")).to_owned()
}

fn answer((st, v): &(StatusCode, Value)) -> String {
    format!("{} {}", st.as_u16(), v["error"].as_str().unwrap_or("?"))
}

/// B1: a client polling at half the interval (every 2.5 s) and one at the
/// interval (every 5 s), side by side on one clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b1_slow_down_enforcement() {
    let s = TestServer::start().await;
    s.user("alice").await;
    s.integration("paced", "restricted:manage", |i| i.overrides.poll_interval = Some(5)).await;
    const FAST: usize = 6;
    const COMPLIANT: usize = 3;
    let fast = self::s(&s.start_device("paced", "restricted:manage").await, "device_code");
    let compliant = self::s(&s.start_device("paced", "restricted:manage").await, "device_code");
    let (mut slowed, mut wrongly) = (0, 0);
    // Step k at 2.5 k s: the fast client polls at every step, the compliant
    // one at every other (0, 5, 10, 15 s).
    for k in 0..=FAST {
        if k > 0 {
            s.clock.advance_millis(2500);
        }
        let (_, v) = s.poll("paced", &fast).await;
        if k > 0 && v["error"] == "slow_down" {
            slowed += 1;
        }
        if k % 2 == 0 {
            let (_, v) = s.poll("paced", &compliant).await;
            if k > 0 && v["error"] == "slow_down" {
                wrongly += 1;
            }
        }
    }
    let b1 = report(
        "B1",
        "slow_down enforcement",
        &format!(
            "interval 5 s: {slowed}/{FAST} polls at 2.5 s answered slow_down (each adds 5 s, so later polls stay slowed); {wrongly}/{COMPLIANT} polls at 5 s wrongly slowed (manual clock)"
        ),
        slowed == FAST && wrongly == 0,
    );
    assert!(b1, "B1");
    s.stop().await;
}

/// B2: expiry (validity 10 s, the shortest allowed), approval after expiry,
/// deny then poll. The project's answers: a denied code answers 400
/// access_denied on every poll while it lives; an expired one, denied or
/// not, 400 invalid_grant (as for unknown or used codes, where RFC 8628
/// says expired_token).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b2_expiry_and_denial() {
    let s = TestServer::start().await;
    s.user("alice").await;
    s.integration("fast", "restricted:manage", |i| {
        i.overrides.poll_interval = Some(5);
        i.overrides.device_code_validity = Some(10);
    })
    .await;
    let expired = s.start_device("fast", "restricted:manage").await;
    let denied = s.start_device("fast", "restricted:manage").await;
    let page = PageClient::open(&s, &self::s(&denied, "verification_uri_complete")).await;
    let (_, deny_page) = page.sign_in_and_decide(&self::s(&denied, "user_code"), "alice", PASSWORD, false).await;
    let after_deny = s.poll("fast", &self::s(&denied, "device_code")).await;
    let after_deny_again = s.poll("fast", &self::s(&denied, "device_code")).await;

    s.clock.advance_millis(10_500);
    let after_expiry = s.poll("fast", &self::s(&expired, "device_code")).await;
    // Approval after expiry, through the page: its alert (or heading).
    let late_page = Page::open(&s.http, &self::s(&expired, "verification_uri_complete")).await.with_origin(&s.url);
    let (_, html) = late_page.sign_in(&self::s(&expired, "user_code"), "alice", PASSWORD).await;
    let alert = html.split("role=\"alert\">").nth(1).and_then(|t| t.split('<').next());
    let heading = html.split("<h1>").nth(1).and_then(|h| h.split("</h1>").next());
    let late = alert.or(heading).unwrap_or("?").to_owned();
    let denied_expired = s.poll("fast", &self::s(&denied, "device_code")).await;
    let b2 = report(
        "B2",
        "expiry and denial",
        &format!(
            "poll after expires_in: {}; approval after expiry: page {late:?}; deny then poll: {}, again {}, after its expiry {} (documented: 400 access_denied while the code lives, 400 invalid_grant once expired; manual clock)",
            answer(&after_expiry),
            answer(&after_deny),
            answer(&after_deny_again),
            answer(&denied_expired)
        ),
        answer(&after_expiry) == "400 invalid_grant"
            && late.contains("not recognised, or it has expired")
            && deny_page.contains("Access denied")
            && answer(&after_deny) == "400 access_denied"
            && answer(&after_deny_again) == "400 access_denied"
            && answer(&denied_expired) == "400 invalid_grant",
    );
    assert!(b2, "B2");
    s.stop().await;
}

/// I3: refresh just before and just after `refresh_until` (grant validity 3 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i3_refresh_until() {
    let s = TestServer::start().await;
    s.user("alice").await;
    s.integration("brief", "restricted:manage", |i| {
        i.password = Some(true);
        i.overrides.grant_validity = Some(3);
        i.overrides.access_validity = Some(2);
    })
    .await;
    let (st, g) = s
        .post_json(
            "/vedauth/authorize/oauth",
            json!({"client_id": "brief", "username": "alice", "password": PASSWORD, "scope": "restricted:manage"}),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{g}");
    let (before, t) = s.refresh("brief", &self::s(&g, "refresh_token")).await;
    s.clock.advance_millis(3600);
    let (after, _) = s.refresh("brief", &self::s(&t, "refresh_token")).await;
    let i3 = report(
        "I3",
        "refresh_until",
        &format!("grant validity 3 s: refresh at ~0 s {}, at 3.6 s {} (manual clock)", before.as_u16(), after.as_u16()),
        before == StatusCode::OK && after == StatusCode::BAD_REQUEST,
    );
    assert!(i3, "I3");
    s.stop().await;
}
