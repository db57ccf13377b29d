//! A refresh whose answer is lost must not end the grant: the real server is
//! killed with SIGKILL in the middle of a stream of refreshes by several
//! clients, started again on the same data directory, and every client
//! carries on with the last refresh token it holds.
//!
//! A client whose last refresh was committed but never answered holds the
//! token that refresh spent. Presenting it again after the restart must get
//! a new pair (the retry window), not be taken for reuse and revoke the
//! grant. Nothing the server acknowledged may be lost, the event log must
//! verify, and no `token.refresh_reuse` event may be written.
//!
//! The tally is printed before any assertion, so the figures of a failing
//! run can be quoted.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use strongroom_proto::vedauth::TokenResponse;
use strongroom_testkit::Fail;

use crate::process::{Api, Server, TokensExt as _};

const CLIENTS: usize = 8;
const TRIALS: u64 = 10;
const USER: &str = "kim";
const PASSWORD: &str = "a long passphrase";
const SCOPE: &str = "restricted";
/// Bounds on one client's stream within a trial.
const MAX_REFRESHES: usize = 5_000;
const STREAM_LIMIT: Duration = Duration::from_secs(30);
/// How long to wait for every client to have one refresh acknowledged.
const WARM_UP_LIMIT: Duration = Duration::from_secs(10);

fn client_id(i: usize) -> String {
    format!("kill-{i}")
}

/// The kill moment of trial `t`: 20 to 60 ms after every client has had a
/// refresh acknowledged, spread over that range from trial to trial
/// (20, 43, 25, 48, 30, 53, 35, 58, 40, 22 ms for the ten trials).
fn kill_after(trial: u64) -> Duration {
    Duration::from_millis(20 + (trial * 23) % 41)
}

/// Why a client's stream ended.
#[derive(Debug)]
enum Stop {
    /// No answer: the server was gone (the expected end).
    Transport,
    /// An answer other than 200 while the server was up.
    Refused(String),
    /// The count or time bound.
    Bound,
}

/// What a client holds: its last refresh token and the last access token
/// the server acknowledged, and how many refreshes were acknowledged.
#[derive(Debug)]
struct Held {
    refresh: String,
    access: String,
    acked: usize,
    stop: Option<Stop>,
}

fn held_from(t: &TokenResponse) -> Held {
    Held { refresh: t.refresh().to_owned(), access: t.access().to_owned(), acked: 0, stop: None }
}

/// A client with a bound on each request.
fn api(base: &str) -> Api {
    Api::with(reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap(), base)
}

/// One client: refreshes until the server goes away (or a bound is hit).
async fn stream(api: Api, client_id: String, mut held: Held, warm: Arc<AtomicUsize>) -> Held {
    let start = Instant::now();
    while held.acked < MAX_REFRESHES && start.elapsed() < STREAM_LIMIT {
        match api.refresh(&client_id, &held.refresh).await {
            Err(Fail::Transport(_)) => {
                held.stop = Some(Stop::Transport);
                return held;
            }
            Ok(t) => {
                let next = held_from(&t);
                held.refresh = next.refresh;
                held.access = next.access;
                held.acked += 1;
                if held.acked == 1 {
                    warm.fetch_add(1, Ordering::SeqCst);
                }
            }
            Err(refused) => {
                held.stop = Some(Stop::Refused(refused.to_string()));
                return held;
            }
        }
    }
    held.stop = Some(Stop::Bound);
    held
}

/// One line of `strongroom admin events list`.
#[derive(Debug)]
struct Ev {
    seq: i64,
    client: String,
}

/// Every event after `after` (of `kind`, when given), page by page.
fn events_after(server: &Server, mut after: i64, kind: Option<&str>) -> Vec<Ev> {
    let mut all = Vec::new();
    loop {
        let after_s = after.to_string();
        let mut args = vec!["events", "list", "--after", &after_s, "--limit", "10000", "--json"];
        if let Some(k) = kind {
            args.extend(["--kind", k]);
        }
        let out = server.admin(&args, "");
        let list: serde_json::Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("events list --json ({e}): {out}"));
        let page: Vec<Ev> = list
            .as_array()
            .unwrap_or_else(|| panic!("not an array: {out}"))
            .iter()
            .map(|e| Ev { seq: e["seq"].as_i64().unwrap(), client: e["client_id"].as_str().unwrap().to_owned() })
            .collect();
        let n = page.len();
        if let Some(last) = page.last() {
            after = last.seq;
        }
        all.extend(page);
        if n < 10_000 {
            return all;
        }
    }
}

fn last_seq(server: &Server) -> i64 {
    events_after(server, 0, None).last().map_or(0, |e| e.seq)
}

#[derive(Debug, Default)]
struct Tally {
    kept: usize,
    lost: usize,
    trials_with_loss: usize,
    acked: usize,
    /// Acknowledged refreshes the restarted server does not know.
    acked_missing: usize,
    reuse_events: usize,
    refused_while_up: usize,
    bounded: usize,
    notes: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_during_refresh_stream_keeps_every_grant() {
    let mut server = Server::start(&["--insecure-http"], &[]);
    server.admin(&["users", "create", USER], &format!("{PASSWORD}\n"));
    for i in 0..CLIENTS {
        server.admin(&["integrations", "create", &client_id(i), "--scope", SCOPE, "--allow-all-users", "--password-grant", "true"], "");
    }
    let started = Instant::now();
    let mut t = Tally::default();
    for trial in 0..TRIALS {
        let base = server.http_base();
        let from = last_seq(&server);

        // A fresh grant per client, through the password grant: four at a
        // time (one user may sign in at most five times at once from one address).
        let shared = api(&base);
        let mut held = Vec::new();
        for first in (0..CLIENTS).step_by(4) {
            let grants: Vec<_> = (first..(first + 4).min(CLIENTS))
                .map(|i| {
                    let api = shared.clone();
                    tokio::spawn(async move { held_from(&api.password_grant(&client_id(i), USER, PASSWORD, SCOPE).await) })
                })
                .collect();
            for g in grants {
                held.push(g.await.unwrap());
            }
        }

        // The stream: each client on its own connection pool.
        let warm = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> =
            held.into_iter().enumerate().map(|(i, h)| tokio::spawn(stream(api(&base), client_id(i), h, warm.clone()))).collect();
        let warm_start = Instant::now();
        while warm.load(Ordering::SeqCst) < CLIENTS && warm_start.elapsed() < WARM_UP_LIMIT {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(kill_after(trial)).await;
        server.kill();
        let mut held = Vec::new();
        for task in tasks {
            held.push(task.await.unwrap());
        }
        server.restart();
        let api = api(&server.http_base());

        // Nothing acknowledged is lost: the last acknowledged access token
        // is still known, and each acknowledged refresh has its event.
        let refreshed = events_after(&server, from, Some("token.refreshed"));
        for (i, h) in held.iter().enumerate() {
            t.acked += h.acked;
            match &h.stop {
                Some(Stop::Transport) => {}
                Some(Stop::Refused(why)) => {
                    t.refused_while_up += 1;
                    t.notes.push(format!("trial {trial}: {} refused while the server was up: {why}", client_id(i)));
                }
                Some(Stop::Bound) | None => t.bounded += 1,
            }
            let status = api.verify(&h.access).await;
            if status != 200 {
                t.acked_missing += 1;
                t.notes.push(format!("trial {trial}: {}'s last acknowledged access token answers {status}", client_id(i)));
            }
            let events = refreshed.iter().filter(|e| e.client == client_id(i)).count();
            if events < h.acked {
                t.acked_missing += h.acked - events;
                t.notes.push(format!("trial {trial}: {} had {} refreshes acknowledged, {events} recorded", client_id(i), h.acked));
            }
        }

        // Every client carries on with the refresh token it holds, twice.
        let mut lost_here = 0;
        for (i, h) in held.iter().enumerate() {
            let second = match api.refresh(&client_id(i), &h.refresh).await {
                Ok(next) => api.refresh(&client_id(i), next.refresh()).await,
                refused => refused,
            };
            match second {
                Ok(_) => t.kept += 1,
                Err(Fail::Transport(e)) => panic!("trial {trial}: the restarted server did not answer: {e}"),
                Err(refused) => {
                    lost_here += 1;
                    t.notes.push(format!(
                        "trial {trial}: {} lost its grant after {} acknowledged refreshes: {refused}",
                        client_id(i),
                        h.acked
                    ));
                }
            }
        }
        t.lost += lost_here;
        if lost_here > 0 {
            t.trials_with_loss += 1;
        }
        t.reuse_events += events_after(&server, from, Some("token.refresh_reuse")).len();
        let verified = server.admin(&["events", "verify"], "");
        assert!(verified.contains("event log intact"), "trial {trial}: {verified}");
    }

    eprintln!(
        "kill-during-refresh: {TRIALS} trials x {CLIENTS} clients: {} clients kept their grant, {} lost it \
         (in {} of {TRIALS} trials); {} refreshes acknowledged, {} of them missing after restart; \
         {} token.refresh_reuse events; {:.1} s",
        t.kept,
        t.lost,
        t.trials_with_loss,
        t.acked,
        t.acked_missing,
        t.reuse_events,
        started.elapsed().as_secs_f64()
    );
    for n in &t.notes {
        eprintln!("kill-during-refresh: {n}");
    }
    assert_eq!(t.refused_while_up, 0, "refreshes refused while the server was up");
    assert_eq!(t.bounded, 0, "streams that ran into their bound: the kill came too late");
    assert_eq!(t.acked_missing, 0, "acknowledged refreshes lost");
    assert_eq!(t.lost, 0, "clients lost their grant to a refresh whose answer was lost");
    assert_eq!(t.reuse_events, 0, "token.refresh_reuse events written");
    assert_eq!(t.kept, CLIENTS * TRIALS as usize);
    server.stop();
}
