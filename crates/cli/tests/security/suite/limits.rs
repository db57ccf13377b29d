//! The limits under concurrency: every limit test of the suite
//! again with its requests sent all at once (B1p, B3p, C1p, C2p), and C7,
//! the locks that must not be turned against the user they protect.
//!
//! A limit that reads its counter, does the work, then writes the counter
//! holds when requests arrive one by one and fails when they arrive
//! together: every request that is read before the first failure is written
//! gets checked. The sequential tests (B1, B3, C1, C2) could not see that;
//! these send the whole burst before any answer comes back.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::suite::page::hidden;
use crate::support::{Fx, PASSWORD, SCOPE, report};

/// Sends `n` requests at once, each made by `make(i)`, and waits for all:
/// their statuses and bodies, in order.
async fn burst<F>(n: usize, make: F) -> Vec<(u16, String)>
where
    F: Fn(usize) -> reqwest::RequestBuilder,
{
    // Every request is built before the first is sent, then all are
    // started together on the runtime's threads.
    let requests: Vec<_> = (0..n).map(&make).collect();
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    let tasks: Vec<_> = requests
        .into_iter()
        .map(|req| {
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                let r = req.send().await.unwrap();
                let status = r.status().as_u16();
                (status, r.text().await.unwrap_or_default())
            })
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

/// A password-grant request for `user`, as if from `addr` (the server
/// trusts 127.0.0.1 as a proxy in these tests).
fn password_grant(fx: &Fx, user: &str, password: &str, addr: &str) -> reqwest::RequestBuilder {
    fx.http
        .post(format!("{}/vedauth/authorize/oauth", fx.base))
        .header("x-forwarded-for", addr)
        .json(&json!({"client_id": "app", "username": user, "password": password, "scope": SCOPE}))
}

/// A server that believes 127.0.0.1's `X-Forwarded-For`, so one test can
/// speak from many addresses.
fn behind_proxy() -> Fx {
    Fx::start(&[], &[("STRONGROOM_TRUSTED_PROXIES", "127.0.0.1")])
}

/// `login.failed` events: one per password actually checked and wrong.
fn checked(fx: &Fx) -> usize {
    fx.events("login.failed")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn c2p_parallel_password_guessing() {
    let fx = behind_proxy();
    // (a) One burst of 200 wrong passwords for one name from one address,
    // then the right password from there, 10 times at once.
    let wrong = burst(200, |i| password_grant(&fx, "alice", &format!("guess-{i}"), "10.1.0.1")).await;
    let per_pair = checked(&fx);
    let right = burst(10, |_| password_grant(&fx, "alice", PASSWORD, "10.1.0.1")).await;
    let tokens_after_lock = right.iter().filter(|(s, _)| *s == 200).count();
    let refused = wrong.iter().filter(|(_, b)| b.contains("Too many")).count();

    // (b) 100 names, one guess each, from one address at once: the address's
    // limit (a name that does not exist is checked like one that does).
    let before = checked(&fx);
    burst(100, |i| password_grant(&fx, &format!("name{i}"), &format!("guess-{i}"), "10.2.0.1")).await;
    let per_address = checked(&fx) - before;

    // (c) 200 guesses for one name from 200 addresses at once: the name's
    // limit for addresses that never signed in as it.
    fx.user("dave", PASSWORD);
    let before = checked(&fx);
    burst(200, |i| password_grant(&fx, "dave", &format!("guess-{i}"), &format!("10.3.{}.{}", i / 200, i % 200 + 1))).await;
    let per_name = checked(&fx) - before;

    let ok = report(
        "C2p",
        "password guessing in parallel bursts",
        &format!(
            "one name from one address, 200 wrong at once: {per_pair} checked (limit 5), {refused} refused unchecked; then the right password 10 times at once: {tokens_after_lock} tokens; \
             100 names from one address at once: {per_address} checked (limit 20); one name from 200 addresses at once: {per_name} checked (limit 10 for addresses that never signed in as it)"
        ),
        per_pair == 5 && tokens_after_lock == 0 && refused == 195 && per_address == 20 && per_name == 10,
    );
    assert!(ok, "C2p");
}

/// A browser session on the approval page as seen from `addr`: its cookie and form token.
async fn session(fx: &Fx, addr: &str) -> (String, String) {
    let r = fx.http.get(format!("{}/vedauth/device", fx.base)).header("x-forwarded-for", addr).send().await.unwrap();
    let cookie = r.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    (cookie, hidden(&r.text().await.unwrap(), "csrf").unwrap())
}

/// A sign-in post of the approval page in `session` as `user` with `password` and `code`.
fn page_post(fx: &Fx, (cookie, csrf): &(String, String), addr: &str, user: &str, password: &str, code: &str) -> reqwest::RequestBuilder {
    fx.http.post(format!("{}/vedauth/device", fx.base)).header("cookie", cookie).header("x-forwarded-for", addr).form(&[
        ("csrf", csrf.as_str()),
        ("user_code", code),
        ("username", user),
        ("password", password),
    ])
}

/// `n` page sessions from `addr`, made one after the other before a burst.
async fn sessions(fx: &Fx, addr: &str, n: usize) -> Vec<(String, String)> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(session(fx, addr).await);
    }
    out
}

/// A code of the user-code alphabet that is not live (almost surely).
fn wrong_code(i: usize) -> String {
    const A: &[u8] = b"BCDFGHJKLMNPQRSTVWXZ";
    let c: String = (0..8).map(|j| char::from(A[(i * 7 + j * 3 + 11) % 20])).collect();
    format!("{}-{}", &c[..4], &c[4..])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn c1p_parallel_user_code_guessing() {
    let fx = behind_proxy();
    let live = fx.device("app").await;
    let live_code = live["user_code"].as_str().unwrap().to_owned();
    // (a) One signed-in user, 40 wrong codes at once (each a full sign-in:
    // password, then code), then the live code. Each from an address alice
    // signed in from before, so the password step admits all 40 at once (one
    // user signs in at most 5 times at once from one address, 10 from
    // addresses new to it) and the code limit alone is tried.
    let addr = |i: usize| format!("10.5.0.{}", i + 1);
    for i in 0..40 {
        assert_eq!(password_grant(&fx, "alice", PASSWORD, &addr(i)).send().await.unwrap().status(), 200);
    }
    let mut a = Vec::new();
    for i in 0..40 {
        a.push(session(&fx, &addr(i)).await);
    }
    let pages = burst(40, |i| page_post(&fx, &a[i], &addr(i), "alice", PASSWORD, &wrong_code(i))).await;
    let per_user = fx.events("device.user_code_failed");
    // Refused unchecked: locked, or every slot taken by codes still being compared.
    let locked_pages =
        pages.iter().filter(|(_, p)| p.contains("Too many wrong codes") || p.contains("Too many sign-ins at this moment")).count();
    let live_refused = page_post(&fx, &a[0], &addr(0), "alice", PASSWORD, &live_code)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .contains("Too many wrong codes");
    // (b) 12 users, 1 wrong code each, from one address at once (an
    // address admits 20 sign-ins at once).
    for i in 0..12 {
        fx.user(&format!("c{i}"), PASSWORD);
    }
    let b = sessions(&fx, "10.6.0.1", 12).await;
    burst(12, |i| page_post(&fx, &b[i], "10.6.0.1", &format!("c{i}"), PASSWORD, &wrong_code(100 + i))).await;
    let per_address = fx.events("device.user_code_failed") - per_user;
    let ok = report(
        "C1p",
        "user-code guessing in parallel bursts",
        &format!(
            "one signed-in user, 40 wrong codes at once: {per_user} compared (limit 5), {locked_pages} refused unchecked, the live code afterwards refused: {live_refused}; \
             12 users, one wrong code each, from one address at once: {per_address} compared (limit 10)"
        ),
        per_user == 5 && locked_pages == 35 && live_refused && per_address == 10,
    );
    assert!(ok, "C1p");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn b1p_parallel_polls_and_b3p_parallel_starts() {
    let fx = Fx::start(&[], &[]);
    // B1p: 20 polls of one pending code at once: one is on time, the rest too fast.
    let d = fx.device("app").await;
    let code = d["device_code"].as_str().unwrap().to_owned();
    let polls = burst(20, |_| {
        fx.http.post(format!("{}/vedauth/authorize/token", fx.base)).json(&json!({
            "client_id": "app", "grant_type": crate::support::DEVICE_GRANT, "device_code": code
        }))
    })
    .await;
    let error = |b: &str| serde_json::from_str::<Value>(b).map(|v| v["error"].as_str().unwrap_or("?").to_owned()).unwrap_or_default();
    let pending = polls.iter().filter(|(_, b)| error(b) == "authorization_pending").count();
    let slow = polls.iter().filter(|(_, b)| error(b) == "slow_down").count();
    // B3p: 100 device authorizations at once from one address: the quota is
    // 60 per 10 minutes, one of them taken by B1p's code.
    let starts =
        burst(100, |_| fx.http.post(format!("{}/vedauth/authorize/device", fx.base)).json(&json!({"client_id": "app", "scope": SCOPE})))
            .await;
    let accepted = starts.iter().filter(|(s, _)| *s == 200).count();
    let limited = starts.iter().filter(|(s, _)| *s == 429).count();
    let b1 = report(
        "B1p",
        "device-code polling in a parallel burst",
        &format!("20 polls of one pending code at once: {pending} authorization_pending, {slow} slow_down"),
        pending == 1 && slow == 19,
    );
    let b3 = report(
        "B3p",
        "device authorizations started in a parallel burst",
        &format!(
            "100 starts at once from one address that had started 1: {accepted} accepted, {limited} refused with 429 (quota 60 per 10 minutes)"
        ),
        accepted == 59 && limited == 41,
    );
    assert!(b1 && b3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn c7_locks_cannot_be_turned_against_users() {
    let fx = behind_proxy();
    let home = "10.7.0.1";
    // Alice signs in from her address once (a grant her integration runs on).
    let (st, g) = {
        let r = password_grant(&fx, "alice", PASSWORD, home).send().await.unwrap();
        let st = r.status().as_u16();
        (st, r.json::<Value>().await.unwrap())
    };
    assert_eq!(st, 200, "{g}");
    let mut refresh_token = g["refresh_token"].as_str().unwrap().to_owned();

    // The attacker knows her name: 4 rounds of 60 wrong passwords at once,
    // on the page and the password grant, from 60 rotating addresses each;
    // between rounds alice signs in from home and her integration refreshes.
    let (mut home_ok, mut home_tries, mut refresh_ok, mut refreshes) = (0, 0, 0, 0);
    for round in 0..4 {
        let addr = |i: usize| format!("10.8.{round}.{}", i + 1);
        // Anti-forgery cookies come from plain GETs: the page's sign-in is open to anyone.
        let mut page = Vec::new();
        for i in (1..60).step_by(2) {
            page.push(session(&fx, &addr(i)).await);
        }
        burst(60, |i| {
            if i % 2 == 0 {
                password_grant(&fx, "alice", &format!("guess-{round}-{i}"), &addr(i))
            } else {
                page_post(&fx, &page[i / 2], &addr(i), "alice", &format!("guess-{round}-{i}"), "BCDF-GHJK")
            }
        })
        .await;
        home_tries += 1;
        if password_grant(&fx, "alice", PASSWORD, home).send().await.unwrap().status() == 200 {
            home_ok += 1;
        }
        refreshes += 1;
        let (st, t) = fx.refresh("app", &refresh_token).await;
        if st == 200 {
            refresh_ok += 1;
            refresh_token = t["refresh_token"].as_str().unwrap().to_owned();
        }
    }
    let checked = fx.events("login.failed");
    // A new address (a laptop she never used) is refused while the attack lasts...
    let new_address = password_grant(&fx, "alice", PASSWORD, "10.9.9.9").send().await.unwrap().status().as_u16();
    let listed = fx.server.admin(&["users", "list"], "");
    let shown_locked = listed.lines().any(|l| l.starts_with("alice") && l.contains("locked until"));
    // ...until an administrator unlocks her.
    fx.server.admin(&["users", "unlock", "alice"], "");
    let after_unlock = password_grant(&fx, "alice", PASSWORD, "10.9.9.9").send().await.unwrap().status().as_u16();
    let ok = report(
        "C7",
        "locks cannot be turned against users",
        &format!(
            "240 wrong passwords for alice from 240 addresses (page and password grant, 4 bursts): {checked} checked; between the bursts \
             alice signed in from her usual address {home_ok}/{home_tries} times (kept out 0% of the time) and her integration refreshed \
             {refresh_ok}/{refreshes} times; from an address she never used: {new_address} while locked (shown in users list: {shown_locked}), \
             {after_unlock} after `admin users unlock`"
        ),
        home_ok == home_tries && refresh_ok == refreshes && checked <= 10 && new_address == 400 && shown_locked && after_unlock == 200,
    );
    assert!(ok, "C7");
}

/// A counter of `/metrics` (`name{labels} value`), 0 when absent.
async fn metric(fx: &Fx, series: &str) -> u64 {
    let text = fx.http.get(format!("{}/metrics", fx.base)).send().await.unwrap().text().await.unwrap();
    text.lines().find_map(|l| l.strip_prefix(series).and_then(|v| v.trim().parse().ok())).unwrap_or(0)
}

async fn key_generations(fx: &Fx, outcome: &str) -> u64 {
    metric(fx, &format!("strongroom_certificate_key_generations_total{{outcome=\"{outcome}\"}}")).await
}

/// N6: server-made RSA keys (each a core for 0.1 s to seconds) under one caller's flood. With one
/// key made at once and two in progress per caller: requests gone while they wait make no key;
/// a flood of 32 requests at once, each sent again once answered (after the `Retry-After` of a
/// 429), holds two places and gets 429 for the rest, before any work, while another caller's
/// keys are made. RSA-2048 for the flood and 3072 for the long keys keep the test short on two
/// cores; the bounds are the same for every size.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn n6_key_generation_is_bounded_per_caller_and_in_all() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::{Duration, Instant};
    let env = [
        ("STRONGROOM_KEY_GENERATION_CONCURRENCY", "1"),
        ("STRONGROOM_KEY_GENERATION_PER_IDENTITY", "2"),
        ("STRONGROOM_KEY_GENERATION_WAITING", "8"),
        // Long keys wait behind each other here: the server's own timeout is not what is tested.
        ("STRONGROOM_REQUEST_TIMEOUT_SECS", "120"),
    ];
    let fx = Arc::new(Fx::start(&[], &env));
    let folder = "\\VED\\Policy\\Keys";
    let scope = "certificate:manage";
    fx.server.admin(&["ca", "create", "Keys CA"], "");
    fx.server.admin(&["folders", "create", folder], "");
    fx.server.admin(&["policy", "set", folder, "--issuing-ca", "Keys CA"], "");
    fx.server.admin(&["integrations", "create", "certs", "--scope", scope, "--allow-all-users", "--password-grant", "true"], "");
    let mut tokens = Vec::new();
    for user in ["alice", "bob", "carol"] {
        if user != "alice" {
            fx.user(user, PASSWORD);
        }
        fx.server.admin(&["rights", "grant", folder, user, "--rights", "view,read,create"], "");
        let body = json!({"client_id": "certs", "username": user, "password": PASSWORD, "scope": scope});
        let (st, t) = fx.post_json("/vedauth/authorize/oauth", &body).await;
        assert_eq!(st, 200, "{t}");
        tokens.push(t["access_token"].as_str().unwrap().to_owned());
    }
    let [alice, bob, carol] = [tokens[0].clone(), tokens[1].clone(), tokens[2].clone()];
    let http = reqwest::Client::builder().timeout(Duration::from_secs(150)).build().unwrap();
    let base = fx.base.clone();
    let request = move |token: &str, cn: &str, bits: u32| {
        http.post(format!("{base}/vedsdk/certificates/request")).bearer_auth(token).json(&json!({
            "PolicyDN": "\\VED\\Policy\\Keys", "Subject": cn, "KeyAlgorithm": "RSA", "KeyBitSize": bits,
        }))
    };
    let settled = async |fx: &Fx| {
        for _ in 0..1500 {
            if metric(fx, "strongroom_certificate_keys_in_progress").await == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("keys still in progress after 150 s");
    };

    // Gone while waiting: bob's two RSA-3072 keys hold the one turn; carol's two, asked behind
    // them by a client that gives up after 300 ms, are never made.
    let bobs: Vec<_> = (0..2).map(|i| tokio::spawn(request(&bob, &format!("long-{i}.example.com"), 3072).send())).collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let carols: Vec<_> =
        (0..2).map(|i| request(&carol, &format!("gone-{i}.example.com"), 4096).timeout(Duration::from_millis(300)).send()).collect();
    let mut carol_gave_up = 0;
    for c in carols {
        carol_gave_up += usize::from(c.await.is_err_and(|e| e.is_timeout()));
    }
    let mut bob_long = Vec::new();
    for b in bobs {
        bob_long.push(b.await.unwrap().unwrap().status().as_u16());
    }
    settled(&fx).await;
    let (made_long, orphaned, abandoned) =
        (key_generations(&fx, "generated").await, key_generations(&fx, "orphaned").await, key_generations(&fx, "abandoned").await);

    // The flood: 32 of alice's at once, each sent again once answered, until bob's two keys are
    // made; the keys in progress are sampled meanwhile.
    let stop = Arc::new(AtomicBool::new(false));
    let most = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, most, fx) = (stop.clone(), most.clone(), fx.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                most.fetch_max(metric(&fx, "strongroom_certificate_keys_in_progress").await, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let barrier = Arc::new(tokio::sync::Barrier::new(32));
    let mut flood = Vec::new();
    for w in 0..32 {
        let (stop, request, alice, barrier) = (stop.clone(), request.clone(), alice.clone(), barrier.clone());
        flood.push(tokio::spawn(async move {
            let (mut made, mut refused, mut with_retry_after, mut other) = (0, 0, 0, Vec::new());
            barrier.wait().await;
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                i += 1;
                let r = request(&alice, &format!("flood-{w}-{i}.example.com"), 2048).send().await.unwrap();
                match r.status().as_u16() {
                    200 => made += 1,
                    429 => {
                        refused += 1;
                        let secs = r.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
                        with_retry_after += usize::from(secs.is_some_and(|s| s >= 1));
                        tokio::time::sleep(Duration::from_secs(secs.unwrap_or(1).min(5))).await;
                    }
                    s => other.push(s),
                }
            }
            (made, refused, with_retry_after, other)
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut bob_statuses = Vec::new();
    let started = Instant::now();
    for i in 0..2 {
        bob_statuses.push(request(&bob, &format!("bob-{i}.example.com"), 2048).send().await.unwrap().status().as_u16());
    }
    let bob_secs = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::SeqCst);
    let (mut made, mut refused, mut with_retry_after, mut other) = (0, 0, 0, Vec::new());
    for f in flood {
        let (m, r, w, o) = f.await.unwrap();
        (made, refused, with_retry_after) = (made + m, refused + r, with_retry_after + w);
        other.extend(o);
    }
    sampler.await.unwrap();
    settled(&fx).await;
    let most = most.load(Ordering::SeqCst);
    let generated = key_generations(&fx, "generated").await - made_long;
    let refused_metric = key_generations(&fx, "refused_identity").await;
    let ok = report(
        "N6",
        "server-side key generation under a flood",
        &format!(
            "one key made at once, two in progress per caller: two requests given up by their client after 300 ms while \
             waiting behind two RSA-3072 keys: {carol_gave_up}/2 gave up, 0 keys made for them ({abandoned} left the queue, \
             {orphaned} made for nobody; the two keys ahead {bob_long:?}); a flood of RSA-2048 requests (32 at once, each sent \
             again once answered): {made} × 200, {refused} × 429 ({with_retry_after} with Retry-After ≥ 1 s; other statuses \
             {other:?}), at most {most} keys in progress (bound: alice's 2 + bob's 1), while another caller's two requests were \
             answered {bob_statuses:?} in {bob_secs:.1} s; {generated} keys made (the 200s), {refused_metric} refusals counted"
        ),
        carol_gave_up == 2
            && bob_long == [200, 200]
            && made_long == 2
            && orphaned == 0
            && bob_statuses == [200, 200]
            && refused >= 16
            && with_retry_after == refused
            && other.is_empty()
            && (2..=3).contains(&most)
            && generated == (made + 2) as u64
            && refused_metric == refused as u64,
    );
    assert!(ok, "N6");
}
