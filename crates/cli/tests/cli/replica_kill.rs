//! SIGKILL one of three replicas on one PostgreSQL database in the middle of
//! a write load (Associate and refresh, spread over the replicas): every
//! write acknowledged to a client is there afterwards, read back through a
//! surviving replica; the survivors keep answering; the event log verifies.
//!
//! A client whose request fails in transport (the killed replica) sends the
//! same request to the next replica, as a load balancer or the client
//! library would: a refresh whose answer was lost is a retry within the
//! window, an Associate already committed answers 27 (identical value).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use strongroom_testkit::api::string;
use strongroom_testkit::{Api, Fail, TokensExt as _};

use crate::replicas::{Cluster, LENIENT, USER, pg_url};

const CLIENTS: usize = 6;
const REPLICAS: usize = 3;
/// Bounds on one client's load.
const MAX_OPS: usize = 100;
const LOAD_LIMIT: Duration = Duration::from_secs(40);
/// Acknowledged operations per client before the kill.
const WARM: usize = 5;
const FOLDER: &str = "\\VED\\Policy\\Load";

/// One client's acknowledged state.
#[derive(Debug, Default)]
struct Client {
    vault_id: i64,
    access: String,
    refresh: String,
    /// Every refresh token the client was given, oldest first (F3 checks
    /// afterwards how many of them still work).
    refresh_tokens: Vec<String>,
    /// Refreshes answered only on a resend after a transport failure (the
    /// first answer may have been lost with the replica).
    resent_refreshes: usize,
    /// Associations acknowledged (Result 0, or 27 on a resend): (name, value).
    associated: Vec<(String, String)>,
    refreshes: usize,
    /// Operations acknowledged by each replica after the kill.
    after_kill: [usize; REPLICAS],
    transport_failures: usize,
    /// HTTP answers that were not success.
    refused: Vec<String>,
}

/// Alternates Associate and refresh, round-robin over the replicas; a
/// transport failure sends the same request to the next replica.
async fn load(replicas: Vec<Api>, me: usize, mut c: Client, warm: Arc<AtomicUsize>, killed: Arc<AtomicBool>) -> Client {
    let start = Instant::now();
    let mut replica = me % REPLICAS;
    let mut acked = 0;
    for op in 0..MAX_OPS {
        if start.elapsed() > LOAD_LIMIT {
            break;
        }
        // Up to one try per replica for the same request.
        let mut done = false;
        for attempt in 0..REPLICAS {
            let api = &replicas[replica];
            let answer = if op % 2 == 0 {
                let (name, value) = (format!("n{op}"), format!("client {me} op {op}"));
                match api.associate(&c.access, c.vault_id, &name, &string(&value)).await {
                    // 27: identical value, on a resend of an Associate already committed.
                    Ok(_) | Err(Fail::Result { code: 27, .. }) => {
                        c.associated.push((name, value));
                        Ok(Ok(()))
                    }
                    Err(Fail::Transport(e)) => Err(e),
                    Err(f) => Ok(Err(format!("Associate: {f}"))),
                }
            } else {
                match api.refresh(LENIENT, &c.refresh).await {
                    Ok(t) => {
                        c.access = t.access().to_owned();
                        c.refresh = t.refresh().to_owned();
                        c.refresh_tokens.push(c.refresh.clone());
                        c.refreshes += 1;
                        c.resent_refreshes += usize::from(attempt > 0);
                        Ok(Ok(()))
                    }
                    Err(Fail::Transport(e)) => Err(e),
                    Err(f) => Ok(Err(format!("refresh: {f}"))),
                }
            };
            match answer {
                Err(_transport) => {
                    c.transport_failures += 1;
                    replica = (replica + 1) % REPLICAS;
                }
                Ok(Err(refused)) => {
                    c.refused.push(format!("replica {}: {refused}", replica + 1));
                    return c;
                }
                Ok(Ok(())) => {
                    if killed.load(Ordering::SeqCst) {
                        c.after_kill[replica] += 1;
                    }
                    done = true;
                    break;
                }
            }
        }
        if !done {
            c.refused.push("no replica answered".into());
            return c;
        }
        acked += 1;
        if acked == WARM {
            warm.fetch_add(1, Ordering::SeqCst);
        }
        replica = (replica + 1) % REPLICAS;
    }
    c
}

/// The security suite's F3 (its figure printed by `scripts/test`).
mod suite {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn f3_sigkill_one_replica_under_write_load_loses_no_acknowledged_write() {
        super::sigkill_one_replica_under_write_load().await;
    }
}

async fn sigkill_one_replica_under_write_load() {
    if pg_url("replica kill").is_none() {
        return;
    }
    let started = Instant::now();
    let mut cluster = Cluster::start(REPLICAS).await;
    cluster.fixtures();
    cluster.admin(&["folders", "create", FOLDER], "");
    cluster.admin(&["rights", "grant", FOLDER, USER, "--rights", "read,write"], "");
    let codes = cluster.approved_codes(LENIENT, CLIENTS).await;
    let mut clients = Vec::new();
    for (i, code) in codes.iter().enumerate() {
        let g = cluster.api(i).poll(LENIENT, code).await.unwrap();
        let added = cluster.api(i).add(g.access(), FOLDER, "Software:Default", b"secret").await.unwrap();
        clients.push(Client {
            vault_id: added.vault_id,
            access: g.access().to_owned(),
            refresh_tokens: vec![g.refresh().to_owned()],
            refresh: g.refresh().to_owned(),
            ..Client::default()
        });
    }

    let replicas: Vec<Api> = (0..REPLICAS).map(|r| cluster.api(r)).collect();
    let warm = Arc::new(AtomicUsize::new(0));
    let killed = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> =
        clients.into_iter().enumerate().map(|(i, c)| tokio::spawn(load(replicas.clone(), i, c, warm.clone(), killed.clone()))).collect();
    let warm_start = Instant::now();
    while warm.load(Ordering::SeqCst) < CLIENTS && warm_start.elapsed() < LOAD_LIMIT {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    tokio::time::sleep(Duration::from_millis(30)).await;
    cluster.replicas[0].kill();
    killed.store(true, Ordering::SeqCst);
    let mut clients = Vec::new();
    for t in tasks {
        clients.push(t.await.unwrap());
    }

    // Double issue: every refresh token each client was given, judged by
    // the server's own rule on the database's state, before anything else
    // presents one. A grant records one working refresh token, so if the one
    // that works is the client's newest, no other token of the grant works,
    // including one whose answer died with the replica.
    let tally = working_refresh_tokens(&cluster, &clients).await;

    // Read everything back through a survivor.
    let survivor = cluster.api(1);
    let mut missing = Vec::new();
    let mut last_access_ok = 0;
    let mut last_refresh_ok = 0;
    for (i, c) in clients.iter().enumerate() {
        if survivor.verify(&c.access).await == 200 {
            last_access_ok += 1;
        }
        let stored = match survivor.associations(&c.access, c.vault_id).await {
            Ok(stored) => stored,
            Err(Fail::Transport(e)) => panic!("the survivor did not answer: {e}"),
            Err(_) => Vec::new(),
        };
        for a in &c.associated {
            if !stored.contains(a) {
                missing.push(format!("client {i}: {} = {}", a.0, a.1));
            }
        }
        if cluster.api(2).refresh(LENIENT, &c.refresh).await.is_ok() {
            last_refresh_ok += 1;
        }
    }
    let verified = cluster.admin(&["events", "verify"], "");

    let associated: usize = clients.iter().map(|c| c.associated.len()).sum();
    let refreshes: usize = clients.iter().map(|c| c.refreshes).sum();
    let transport: usize = clients.iter().map(|c| c.transport_failures).sum();
    let after_kill: Vec<usize> = (0..REPLICAS).map(|r| clients.iter().map(|c| c.after_kill[r]).sum()).collect();
    let refused: Vec<&String> = clients.iter().flat_map(|c| &c.refused).collect();
    eprintln!(
        "replica kill: {CLIENTS} clients over {REPLICAS} replicas, replica 1 SIGKILLed after {WARM} acknowledged operations each: \
         {associated} Associates and {refreshes} refreshes acknowledged, {} missing afterwards; {transport} requests failed in transport \
         and were sent again; acknowledged after the kill by replica 1, 2, 3: {after_kill:?}; last access token verifies for \
         {last_access_ok} of {CLIENTS} clients, last refresh token refreshes for {last_refresh_ok}; refused: {refused:?}; {}; {:.1} s",
        missing.len(),
        verified.trim(),
        started.elapsed().as_secs_f64()
    );
    let pass = tally.double_issued == 0
        && tally.newest_works == CLIENTS
        && missing.is_empty()
        && refused.is_empty()
        && after_kill[1] > 0
        && after_kill[2] > 0
        && last_access_ok == CLIENTS
        && last_refresh_ok == CLIENTS
        && verified.contains("event log intact")
        && transport > 0;
    eprintln!(
        "SECURITY F3 kill -9 of one of three replicas: {CLIENTS} clients on {REPLICAS} replicas, one SIGKILL mid-load (the anchors' \
         one every 30 s for 5 min scaled down to one): {} of {associated} acknowledged Associates lost, {refused_n} refused; \
         double-issued tokens: of the {} refresh tokens the clients were given ({resent} answered on a resend), {} would still \
         rotate, {} grants with more than one working refresh token, the newest works for {}/{CLIENTS} grants, {} older \
         ones would get a lost-answer retry (the unused newest then dies); survivors answered {after_kill:?} after the kill; \
         {transport} requests retried on another replica; {last_refresh_ok}/{CLIENTS} grants refresh afterwards; {} — {}",
        missing.len(),
        tally.given,
        tally.working,
        tally.double_issued,
        tally.newest_works,
        tally.retry,
        verified.trim(),
        if pass { "pass" } else { "FAIL" },
        refused_n = refused.len(),
        resent = clients.iter().map(|c| c.resent_refreshes).sum::<usize>(),
    );
    assert_eq!(tally.double_issued, 0, "grants with more than one working refresh token: {tally:?}");
    assert_eq!(tally.newest_works, CLIENTS, "{tally:?}");
    assert!(missing.is_empty(), "acknowledged writes lost: {missing:?}");
    assert!(refused.is_empty(), "answers other than success: {refused:?}");
    assert!(after_kill[1] > 0 && after_kill[2] > 0, "both survivors kept answering: {after_kill:?}");
    assert_eq!(last_access_ok, CLIENTS);
    assert_eq!(last_refresh_ok, CLIENTS);
    assert!(verified.contains("event log intact"), "{verified}");
    assert!(transport > 0, "the kill came after the load: no request met the dead replica");
}

/// What the refresh tokens the clients were given would do now.
#[derive(Debug, Default)]
struct Tally {
    given: usize,
    /// Tokens a refresh would rotate (the grant's working token).
    working: usize,
    /// Grants with more than one such token.
    double_issued: usize,
    /// Grants whose working token is the client's newest.
    newest_works: usize,
    /// Spent tokens that would get a lost-answer retry.
    retry: usize,
}

/// Each refresh token the clients hold, looked up in the database and
/// judged by the rule the server applies (`RefreshContext::decide`), which
/// changes nothing: presenting them would (a spent token revokes its grant).
async fn working_refresh_tokens(cluster: &Cluster, clients: &[Client]) -> Tally {
    use strongroom_app::SystemClock;
    use strongroom_core::grant::refresh::{Refresh, window};
    use strongroom_core::time::Clock as _;
    use strongroom_core::token::TokenKind;
    let now = SystemClock.now();
    let mut t = Tally::default();
    for c in clients {
        let mut working = Vec::new();
        for (i, rt) in c.refresh_tokens.iter().enumerate() {
            t.given += 1;
            let token = cluster.keys.token.presented(TokenKind::Refresh, rt).expect("the server's refresh tokens carry its locator");
            let Some(ctx) = cluster.store.refresh_context(token).await.unwrap() else { continue };
            // The server's default window (30 s): it only tells a retry from reuse.
            match ctx.decide(LENIENT, now, window(ctx.retry_window, 30)) {
                Refresh::Rotate => working.push(i),
                Refresh::Retry => t.retry += 1,
                _ => {}
            }
        }
        t.working += working.len();
        t.double_issued += usize::from(working.len() > 1);
        t.newest_works += usize::from(working == [c.refresh_tokens.len() - 1]);
    }
    t
}
