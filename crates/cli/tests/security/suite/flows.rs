//! A (single use, rotation, replay), B3 (the device-start flood) and I
//! (revocation semantics) against the real binary, one test per id. B1,
//! B2 and I3 wait on time, so they run in-process on the manual clock
//! (`crates/server/tests/it/suite`).

use serde_json::{Value, json};

use crate::support::{Fx, PASSWORD, SCOPE, report};

fn s(v: &Value, k: &str) -> String {
    v[k].as_str().unwrap_or_else(|| panic!("no {k} in {v}")).to_owned()
}

async fn concurrently<F, Fut>(n: usize, f: F) -> Vec<(u16, Value)>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = (u16, Value)> + Send + 'static,
{
    let tasks: Vec<_> = (0..n).map(|i| tokio::spawn(f(i))).collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a1_concurrent_device_code_redemption() {
    const TRIALS: usize = 20;
    const RACERS: usize = 16;
    let fx = Fx::start(&[], &[]);
    fx.integration("strict", &["--retry-window", "0"]);
    let mut exactly_one = 0;
    let mut working_pairs_one = 0;
    let mut five_xx = 0;
    let mut loser_errors = std::collections::BTreeMap::<String, usize>::new();
    for _ in 0..TRIALS {
        let d = fx.device("strict").await;
        assert!(fx.approve(&d, "alice", PASSWORD, true).await.contains("Access approved"));
        let code = s(&d, "device_code");
        let (http, base) = (fx.http.clone(), fx.base.clone());
        let answers = concurrently(RACERS, move |_| {
            let (http, base, code) = (http.clone(), base.clone(), code.clone());
            async move {
                let body = json!({"client_id": "strict", "grant_type": crate::support::DEVICE_GRANT, "device_code": code});
                crate::support::post_json(&http, &format!("{base}/vedauth/authorize/token"), &body).await
            }
        })
        .await;
        let wins: Vec<&Value> = answers.iter().filter(|(st, _)| *st == 200).map(|(_, v)| v).collect();
        five_xx += answers.iter().filter(|(st, _)| *st >= 500).count();
        for (st, v) in answers.iter().filter(|(st, _)| *st != 200) {
            *loser_errors.entry(format!("{st} {}", v["error"].as_str().unwrap_or("?"))).or_default() += 1;
        }
        if wins.len() == 1 {
            exactly_one += 1;
        }
        let mut working = 0;
        for w in &wins {
            if fx.verify(&s(w, "access_token")).await == 200 {
                working += 1;
            }
        }
        if working == 1 {
            working_pairs_one += 1;
        }
    }
    // The documented answer of a loser: the code is used, and a used code
    // answers 400 invalid_grant (book/src/reference/api-choices.md); `slow_down` cannot happen
    // here, pacing applies to pending codes only.
    let losers: usize = loser_errors.values().sum();
    let documented = loser_errors.get("400 invalid_grant").copied().unwrap_or(0);
    let a1 = report(
        "A1",
        "concurrent device-code redemption",
        &format!(
            "{TRIALS} trials x {RACERS} concurrent polls (retry window 0): exactly one success in {exactly_one}/{TRIALS}, exactly one working pair in {working_pairs_one}/{TRIALS}, {five_xx} 5xx; losers answered 400 invalid_grant {documented}/{losers} (all answers of losers: {loser_errors:?})"
        ),
        exactly_one == TRIALS && working_pairs_one == TRIALS && five_xx == 0 && losers == TRIALS * (RACERS - 1) && documented == losers,
    );
    assert!(a1, "A1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a5_replay_of_a_redeemed_device_code() {
    let fx = Fx::start(&[], &[]);
    // A5: a redeemed code presented again after its grant was used.
    let mut refused = 0;
    let mut tokens_alive = 0;
    const REPLAYS: usize = 5;
    for _ in 0..REPLAYS {
        let d = fx.device("app").await;
        fx.approve(&d, "alice", PASSWORD, true).await;
        let code = s(&d, "device_code");
        let (st, t) = fx.poll("app", &code).await;
        assert_eq!(st, 200, "{t}");
        assert_eq!(fx.verify(&s(&t, "access_token")).await, 200);
        let (st, v) = fx.poll("app", &code).await;
        if st == 400 && v["error"] == "invalid_grant" {
            refused += 1;
        }
        if fx.verify(&s(&t, "access_token")).await == 200 {
            tokens_alive += 1;
        }
    }
    let a5 = report(
        "A5",
        "replay of a redeemed device code",
        &format!(
            "{REPLAYS} replays after the grant was used: invalid_grant {refused}/{REPLAYS}; the grant's tokens still work in {tokens_alive}/{REPLAYS} (documented choice: a replayed code is refused and recorded, not revoking)"
        ),
        refused == REPLAYS && tokens_alive == REPLAYS,
    );
    assert!(a5, "A5");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a6_cross_client_token_use() {
    let fx = Fx::start(&[], &[]);
    fx.integration("other", &[]);
    // A6: device code and refresh token presented by another client.
    const CROSS: usize = 5;
    let (mut issued_wrong, mut rightful_ok) = (0, 0);
    for _ in 0..CROSS {
        let d = fx.device("app").await;
        fx.approve(&d, "alice", PASSWORD, true).await;
        let code = s(&d, "device_code");
        let (st, _) = fx.poll("other", &code).await;
        if st == 200 {
            issued_wrong += 1;
        }
        let (st, t) = fx.poll("app", &code).await;
        if st == 200 {
            rightful_ok += 1;
            let rt = s(&t, "refresh_token");
            let (st, _) = fx.refresh("other", &rt).await;
            if st == 200 {
                issued_wrong += 1;
            }
            let (st, _) = fx.refresh("app", &rt).await;
            if st == 200 {
                rightful_ok += 1;
            }
        }
    }
    let a6 = report(
        "A6",
        "cross-client token use",
        &format!(
            "{CROSS} device codes + {CROSS} refresh tokens presented by another client: {issued_wrong} issued to the wrong client; rightful client succeeded afterwards {rightful_ok}/{}",
            2 * CROSS
        ),
        issued_wrong == 0 && rightful_ok == 2 * CROSS,
    );
    assert!(a6, "A6");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2_concurrent_refresh_of_one_token() {
    const TRIALS: usize = 20;
    const RACERS: usize = 16;
    let fx = Fx::start(&[], &[]);
    fx.integration("strict", &["--retry-window", "0"]);
    let mut strict_one = 0;
    let mut window_one_pair = 0;
    let mut five_xx = 0;
    for mode in ["strict", "app"] {
        for _ in 0..TRIALS {
            let g = fx.grant(mode).await;
            let rt = s(&g, "refresh_token");
            let (http, base, client) = (fx.http.clone(), fx.base.clone(), mode.to_owned());
            let answers = concurrently(RACERS, move |_| {
                let (http, base, rt, client) = (http.clone(), base.clone(), rt.clone(), client.clone());
                async move {
                    let body = json!({"client_id": client, "refresh_token": rt});
                    crate::support::post_json(&http, &format!("{base}/vedauth/authorize/token"), &body).await
                }
            })
            .await;
            five_xx += answers.iter().filter(|(st, _)| *st >= 500).count();
            let wins: Vec<&Value> = answers.iter().filter(|(st, _)| *st == 200).map(|(_, v)| v).collect();
            let mut working = 0;
            for w in &wins {
                if fx.verify(&s(w, "access_token")).await == 200 {
                    working += 1;
                }
            }
            if mode == "strict" && wins.len() == 1 {
                strict_one += 1;
            }
            if mode == "app" && working == 1 {
                window_one_pair += 1;
            }
        }
    }
    let a2 = report(
        "A2",
        "concurrent refresh of one token",
        &format!(
            "{TRIALS} trials x {RACERS} concurrent refreshes per mode: strict (window 0) exactly one success {strict_one}/{TRIALS}; retry window 30 s exactly one working pair afterwards {window_one_pair}/{TRIALS}; {five_xx} 5xx"
        ),
        strict_one == TRIALS && window_one_pair == TRIALS && five_xx == 0,
    );
    assert!(a2, "A2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a3_rotated_refresh_token_replayed() {
    const TRIALS: usize = 20;
    let fx = Fx::start(&[], &[]);
    let mut caught = 0;
    for _ in 0..TRIALS {
        let g = fx.grant("app").await;
        let rt0 = s(&g, "refresh_token");
        let (_, t1) = fx.refresh("app", &rt0).await;
        let (at1, rt1) = (s(&t1, "access_token"), s(&t1, "refresh_token"));
        assert_eq!(fx.verify(&at1).await, 200);
        let (st, v) = fx.refresh("app", &rt0).await;
        let replay_refused = st == 400 && v["error"] == "invalid_grant";
        let (st1, _) = fx.refresh("app", &rt1).await;
        let at1_dead = fx.verify(&at1).await == 401;
        if replay_refused && st1 != 200 && at1_dead {
            caught += 1;
        }
    }
    let a3 = report(
        "A3",
        "rotated refresh token replayed",
        &format!("{TRIALS} trials: replay refused AND newer refresh token refused AND newer access token 401 in {caught}/{TRIALS}"),
        caught == TRIALS,
    );
    assert!(a3, "A3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b3_device_start_flood_from_one_address() {
    // B3: a flood of device starts from one address.
    let fx = Fx::start(&[], &[]);
    const FLOOD: usize = 80;
    let mut first_429 = None;
    let mut ok = 0;
    for i in 0..FLOOD {
        let (st, _) = fx.post_json("/vedauth/authorize/device", &json!({"client_id": "app", "scope": SCOPE})).await;
        match st {
            200 => ok += 1,
            429 if first_429.is_none() => first_429 = Some(i + 1),
            _ => {}
        }
    }
    let rows = fx.events("device.started");
    let b3 = report(
        "B3",
        "device-start flood from one address",
        &format!(
            "{FLOOD} starts in a burst: {ok} accepted, first 429 at request {first_429:?}, {rows} device codes stored (limit 60 per address per 10 min)"
        ),
        ok == 60 && first_429 == Some(61) && rows == 60,
    );
    assert!(b3, "B3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i1_revocation() {
    let fx = Fx::start(&[], &[]);
    // I1. Bystanders, all issued before any revocation: another grant of
    // alice on the same integration, a grant of ANOTHER integration (the
    // "another client's token" case), and bob's grant.
    fx.integration("other", &[]);
    fx.integration("rtcase", &[]);
    fx.user("carol", PASSWORD);
    let sibling = fx.grant("app").await;
    let foreign = fx.grant("other").await;
    let (_, carols) = fx.password("app", "carol", PASSWORD).await;
    let revoke = |bearer: String| {
        let req = fx.http.get(format!("{}/vedauth/revoke/token", fx.base)).bearer_auth(bearer);
        async move { req.send().await.unwrap().status().as_u16() }
    };

    // (a) The access token: revoking the newest one ends the whole grant,
    // the access token of before the rotation (still valid until then) too.
    let g0 = fx.grant("app").await;
    let (_, g1) = fx.refresh("app", &s(&g0, "refresh_token")).await;
    let both_before = (fx.verify(&s(&g0, "access_token")).await, fx.verify(&s(&g1, "access_token")).await);
    let at_revoke = revoke(s(&g1, "access_token")).await;
    let ats_after = (fx.verify(&s(&g0, "access_token")).await, fx.verify(&s(&g1, "access_token")).await);
    let (rt_after, rt_after_v) = fx.refresh("app", &s(&g1, "refresh_token")).await;

    // (b) The refresh token. The product revokes by access token only
    // (`Revoke/Token` reads the bearer header): a refresh token presented
    // there is no access token, answers 202 "not found" and revokes nothing.
    // A refresh token is revoked with its grant by the operator
    // (`admin grants revoke`); then every access token of the grant is
    // refused, here one of before and one of after a rotation.
    let h0 = fx.grant("rtcase").await;
    let rt_at_endpoint = revoke(s(&h0, "refresh_token")).await;
    let h0_alive = fx.verify(&s(&h0, "access_token")).await;
    let (_, h1) = fx.refresh("rtcase", &s(&h0, "refresh_token")).await;
    let list = fx.server.admin(&["grants", "list", "--json"], "");
    let list: Value = serde_json::from_str(list.lines().find(|l| l.starts_with('[')).unwrap()).unwrap();
    let rtcase: Vec<&str> =
        list.as_array().unwrap().iter().filter(|g| g["client_id"] == "rtcase").map(|g| g["id"].as_str().unwrap()).collect();
    assert_eq!(rtcase.len(), 1, "{list}");
    fx.server.admin(&["grants", "revoke", rtcase[0]], "");
    let (h_rt_after, h_rt_after_v) = fx.refresh("rtcase", &s(&h1, "refresh_token")).await;
    let h_ats_after = (fx.verify(&s(&h0, "access_token")).await, fx.verify(&s(&h1, "access_token")).await);

    // (c) Garbage.
    let garbage = revoke("garbage".into()).await;

    // The bystanders: access tokens still accepted, refresh tokens still refresh.
    let mut alive = Vec::new();
    for (who, client, g) in [("sibling", "app", &sibling), ("other integration", "other", &foreign), ("carol", "app", &carols)] {
        let at = fx.verify(&s(g, "access_token")).await;
        let (rt, _) = fx.refresh(client, &s(g, "refresh_token")).await;
        alive.push((who, at, rt));
    }
    let bystanders_ok = alive.iter().all(|(_, at, rt)| *at == 200 && *rt == 200);
    let i1 = report(
        "I1",
        "revocation",
        &format!(
            "(a) access token: both access tokens of a rotated grant {both_before:?} before, revoke {at_revoke}, then {ats_after:?}, its refresh token {rt_after} {}; \
             (b) refresh token: at Revoke/Token {rt_at_endpoint} (access tokens only; grant untouched: access {h0_alive}), revoked with its grant by `admin grants revoke`: refresh {h_rt_after} {}, access tokens of before and after a rotation {h_ats_after:?}; \
             (c) garbage token: {garbage} (the product's \"Token not found\", nothing revoked); bystanders issued before, (access, refresh): {alive:?}",
            rt_after_v["error"], h_rt_after_v["error"]
        ),
        both_before == (200, 200)
            && at_revoke == 200
            && ats_after == (401, 401)
            && rt_after == 400
            && rt_after_v["error"] == "invalid_grant"
            && rt_at_endpoint == 202
            && h0_alive == 200
            && h_rt_after == 400
            && h_rt_after_v["error"] == "invalid_grant"
            && h_ats_after == (401, 401)
            && garbage == 202
            && bystanders_ok,
    );
    assert!(i1, "I1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i2_identity_integration_and_scope_changes() {
    let fx = Fx::start(&[], &[]);
    // I2: disabled identity, disabled integration, reduced scope, and a
    // refresh asking for more scope than the grant has.
    fx.user("bob", PASSWORD);
    let (_, b) = fx.password("app", "bob", PASSWORD).await;
    fx.server.admin(&["users", "disable", "bob"], "");
    let bob_at = fx.verify(&s(&b, "access_token")).await;
    let (bob_rt, _) = fx.refresh("app", &s(&b, "refresh_token")).await;
    fx.server.admin(&["users", "enable", "bob"], "");

    fx.integration("doomed", &[]);
    let d = fx.grant("doomed").await;
    fx.server.admin(&["integrations", "update", "doomed", "--disable"], "");
    let int_at = fx.verify(&s(&d, "access_token")).await;
    let (int_rt, _) = fx.refresh("doomed", &s(&d, "refresh_token")).await;

    fx.integration("shrinks", &[]);
    let sh = fx.grant("shrinks").await;
    fx.server.admin(&["integrations", "update", "shrinks", "--scope", "restricted"], "");
    let (shrunk_rt, _) = fx.refresh("shrinks", &s(&sh, "refresh_token")).await;

    let g = fx.grant("app").await;
    let (st, wider) = fx
        .post_json(
            "/vedauth/authorize/token",
            &json!({"client_id": "app", "refresh_token": s(&g, "refresh_token"), "scope": "restricted:manage,delete;admin:viewlogs"}),
        )
        .await;
    let wider_scope = if st == 200 { wider["scope"].as_str().unwrap_or("?").to_owned() } else { format!("refused {st}") };
    let escalated = wider_scope.contains("delete") || wider_scope.contains("admin");
    let i2 = report(
        "I2",
        "identity, integration and scope changes, scope escalation at refresh",
        &format!(
            "disabled user: access {bob_at}, refresh {bob_rt}; disabled integration: access {int_at}, refresh {int_rt}; integration scope reduced below the grant: refresh {shrunk_rt}; refresh asking restricted:manage,delete;admin:viewlogs on a {SCOPE} grant got scope {wider_scope}"
        ),
        bob_at == 401 && bob_rt == 400 && int_at == 401 && int_rt == 400 && shrunk_rt == 400 && !escalated,
    );

    assert!(i2, "I2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i4_tokens_in_urls_and_bodies() {
    let fx = Fx::start(&[], &[]);
    // I4: a valid bearer in the query or a form body; the user code of
    // verification_uri_complete in the access log.
    let g = fx.grant("app").await;
    let at = s(&g, "access_token");
    let enc: String = at.bytes().map(|b| format!("%{b:02X}")).collect();
    let q1 = fx.http.get(format!("{}/vedauth/authorize/verify?access_token={enc}", fx.base)).send().await.unwrap().status().as_u16();
    let q2 = fx
        .http
        .post(format!("{}/vedsdk/SecretStore/LookupByOwner?access_token={enc}", fx.base))
        .json(&json!({"Namespace": "config", "Owner": "\\VED\\Policy"}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16();
    let q3 = fx
        .http
        .post(format!("{}/vedsdk/SecretStore/LookupByOwner", fx.base))
        .form(&[("access_token", at.as_str()), ("Owner", "\\VED\\Policy")])
        .send()
        .await
        .unwrap()
        .status()
        .as_u16();
    let d = fx.device("app").await;
    fx.http.get(d["verification_uri_complete"].as_str().unwrap()).send().await.unwrap();
    let user_code = s(&d, "user_code");
    fx.server.wait_for("/vedauth/device");
    let log = fx.server.output.lock().unwrap().clone();
    let in_log = log.contains(&user_code) || log.contains(&user_code.replace('-', "")) || log.contains(&at);
    let i4 = report(
        "I4",
        "tokens in URLs and bodies",
        &format!(
            "bearer as ?access_token= on Verify: {q1}, on /vedsdk: {q2}; as a form field on /vedsdk: {q3}; user code or token in the access log: {}",
            if in_log { "found" } else { "0 hits" }
        ),
        q1 == 401 && q2 == 401 && q3 == 401 && !in_log,
    );
    assert!(i4, "I4");
}
