//! Failover: the real server on a two-host connection string
//! (`target_session_attrs=read-write`) follows a promoted standby.
//!
//! The test makes a primary and a hot standby (`pg_basebackup -R`) with
//! synchronous replication, starts `strongroom serve` on a connection
//! string naming both hosts, and runs vault `Associate` writes from several clients, each write a new
//! name. In the middle of the load the primary crashes (`pg_ctl stop -m
//! immediate`) and the standby is promoted. Requests during the switch must
//! fail cleanly (503 `temporarily_unavailable`, or the vault's Result 22 for
//! a failure that is not a passing one; never a 500, never a body naming
//! the database), writes must succeed again
//! within seconds, every write the server acknowledged must be on the
//! new primary, and `admin events verify` must pass there. The tally and the recovery time are printed before any
//! assertion.
//!
//! A server whose one database address comes to lead to a hot standby (a
//! forwarder the test switches) reports not ready and refuses writes
//! cleanly, and is ready and writing again once the standby is promoted.
//!
//! The same load meets a PostgreSQL crash and restart on one host in the
//! security suite's F4 (`suite::`): clean
//! failures while it is down, writes again within 10 s of its return, no
//! acknowledged write lost.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use strongroom_testkit::api::string;
use strongroom_testkit::{Api, Fail, TokensExt as _};

use crate::pg_instance::{PgInstance, server_binaries};
use crate::process::Server;

const WRITERS: usize = 4;
const USER: &str = "fran";
const PASSWORD: &str = "a long passphrase";
const FOLDER: &str = "\\VED\\Policy\\Failover";
/// Bounds: requests per writer, and the whole load.
const MAX_WRITES: usize = 20_000;
const LOAD_LIMIT: Duration = Duration::from_secs(90);
/// Writes before the crash, in all.
const WARM_WRITES: usize = 40;
/// How long writes go on after the first success on the new primary.
const AFTER_RECOVERY: Duration = Duration::from_secs(1);
/// The bound on recovery, from the crash to the first write acknowledged
/// by the new primary: "within seconds" (it takes about half a second here;
/// the bound leaves room for a loaded machine).
const RECOVERY_LIMIT: Duration = Duration::from_secs(10);
/// Words no error body may hold.
const INTERNALS: &[&str] = &["db error", "postgres", "tokio", "SqlState", "connection", "127.0.0.1", "panicked", "pool"];

/// One answer that was not an acknowledged write.
#[derive(Debug)]
struct Failure {
    sent: Duration,
    answered: Duration,
    status: u16,
    body: String,
}

/// What one writer saw.
#[derive(Debug, Default)]
struct Tally {
    /// Names whose write was acknowledged (Result 0).
    acked: Vec<String>,
    /// When each acknowledged write was sent and answered, from the load's epoch.
    acked_at: Vec<(Duration, Duration)>,
    failures: Vec<Failure>,
    /// Transport failures (no HTTP answer).
    transport: Vec<String>,
}

struct Shared {
    epoch: Instant,
    stop: AtomicBool,
    /// When the disruption was over (the standby promoted, or PostgreSQL
    /// started again), from `epoch`.
    settled: Mutex<Option<Duration>>,
    /// When a write sent after the disruption was over was first acknowledged.
    recovered: Mutex<Option<Duration>>,
    acked: std::sync::atomic::AtomicUsize,
}

async fn writer(api: Api, token: String, vault_id: i64, w: usize, shared: Arc<Shared>) -> Tally {
    let mut t = Tally::default();
    for n in 0..MAX_WRITES {
        if shared.stop.load(Ordering::SeqCst) || shared.epoch.elapsed() > LOAD_LIMIT {
            break;
        }
        let name = format!("w{w}-{n}");
        let sent = shared.epoch.elapsed();
        let settled = *shared.settled.lock().unwrap();
        match api.associate(&token, vault_id, &name, &string(&format!("value {name}"))).await {
            Err(Fail::Transport(e)) => t.transport.push(e),
            Ok(_) => {
                let done = shared.epoch.elapsed();
                t.acked.push(name);
                t.acked_at.push((sent, done));
                shared.acked.fetch_add(1, Ordering::SeqCst);
                if settled.is_some_and(|s| sent > s) {
                    shared.recovered.lock().unwrap().get_or_insert(done);
                }
            }
            Err(f) => {
                let status = f.status().unwrap_or_default();
                t.failures.push(Failure { sent, answered: shared.epoch.elapsed(), status, body: f.body().to_owned() });
            }
        }
    }
    t
}

/// What the load saw around a disruption.
struct Outcome {
    tallies: Vec<Tally>,
    /// Writes acknowledged before the disruption began.
    before: usize,
    /// When the disruption began, from the load's epoch.
    disrupted_at: Duration,
    /// How long the disruption itself took (crash and promotion, or crash and restart).
    disruption: Duration,
    /// From the disruption's start until writes succeed again for good: to
    /// the answer of the first acknowledged write sent after the last
    /// failed one.
    recovery: Option<Duration>,
    /// Acknowledged writes not stored afterwards.
    lost: Vec<String>,
    /// The server's log.
    log: String,
}

impl Outcome {
    fn failures(&self) -> Vec<&Failure> {
        self.tallies.iter().flat_map(|t| &t.failures).collect()
    }

    /// The tally, printed before any assertion.
    fn print(&self, what: &str) {
        let acked: usize = self.tallies.iter().map(|t| t.acked.len()).sum();
        let mut by_answer: BTreeMap<String, usize> = BTreeMap::new();
        for f in self.failures() {
            *by_answer.entry(format!("{} {}", f.status, f.body)).or_default() += 1;
        }
        let last_failure = self.failures().iter().map(|f| f.sent).max();
        eprintln!(
            "{what}: {acked} writes acknowledged ({} before the disruption), {} failed cleanly, {} without an answer, {} lost; \
             disruption took {:?}; writes succeed again for good {:?} after it began \
             (the first acknowledged write sent after the last failed one, sent {:?} after it began)",
            self.before,
            self.failures().len(),
            self.tallies.iter().map(|t| t.transport.len()).sum::<usize>(),
            self.lost.len(),
            self.disruption,
            self.recovery,
            last_failure.map(|l| l.saturating_sub(self.disrupted_at)),
        );
        for (answer, n) in &by_answer {
            eprintln!("  {n} × {answer}");
        }
    }

    /// Failures that are not clean: before the disruption, not 200 (Result
    /// 22) or 503, or naming internals.
    fn unclean(&self) -> Vec<&Failure> {
        self.failures()
            .into_iter()
            .filter(|f| {
                f.answered < self.disrupted_at
                    || !(f.status == 200 || f.status == 503)
                    || INTERNALS.iter().any(|w| f.body.to_lowercase().contains(&w.to_lowercase()))
            })
            .collect()
    }

    /// The assertions both scenarios share.
    fn check(&self) -> Duration {
        assert!(
            self.tallies.iter().all(|t| t.transport.is_empty()),
            "requests without an answer: {:?}",
            self.tallies.iter().map(|t| &t.transport).collect::<Vec<_>>()
        );
        let unclean = self.unclean();
        assert!(unclean.is_empty(), "not clean failures: {unclean:?}");
        assert!(!self.failures().is_empty(), "no request failed: the disruption did not reach the load");
        let recovery = self.recovery.expect("no write succeeded after the disruption");
        assert!(recovery < RECOVERY_LIMIT, "writes succeeded again only after {recovery:?}");
        assert!(self.lost.is_empty(), "acknowledged writes lost: {:?}", self.lost);
        assert!(!self.log.contains("panicked"), "{}", self.log);
        recovery
    }
}

/// A server on `url` with a user who may write to [`FOLDER`], an access
/// token of theirs, and one vault entry per writer.
struct Prepared {
    server: Server,
    api: Api,
    token: String,
    entries: Vec<i64>,
}

async fn prepare(url: &str) -> Prepared {
    let server = Server::start(&["--insecure-http", "--database-url", url], &[]);
    let admin = |args: &[&str], stdin: &str| {
        let mut all = vec!["--database-url", url];
        all.extend_from_slice(args);
        server.admin(&all, stdin)
    };
    admin(&["users", "create", USER], &format!("{PASSWORD}\n"));
    admin(&["integrations", "create", "failover", "--scope", "restricted:manage", "--allow-all-users", "--password-grant", "true"], "");
    admin(&["folders", "create", FOLDER], "");
    admin(&["rights", "grant", FOLDER, USER, "--rights", "read,write"], "");

    let api = Api::with(reqwest::Client::builder().timeout(Duration::from_secs(20)).build().unwrap(), server.http_base());
    let token = api.password_grant("failover", USER, PASSWORD, "restricted:manage").await.access().to_owned();
    let mut entries = Vec::new();
    for _ in 0..WRITERS {
        entries.push(api.add(&token, FOLDER, "Software:Default", b"secret").await.unwrap().vault_id);
    }
    Prepared { server, api, token, entries }
}

/// Starts `strongroom serve` on `url`, makes its fixtures, runs the write
/// load, calls `disrupt` (on a blocking thread) once the load is warm, waits
/// until writes succeed again (bounded) and a little longer, then reads every
/// acknowledged write back.
async fn load_through<D>(url: &str, disrupt: impl FnOnce() -> D + Send + 'static) -> (Outcome, D)
where
    D: Send + 'static,
{
    let Prepared { server, api, token, entries } = prepare(url).await;

    let shared = Arc::new(Shared {
        epoch: Instant::now(),
        stop: AtomicBool::new(false),
        settled: Mutex::new(None),
        recovered: Mutex::new(None),
        acked: std::sync::atomic::AtomicUsize::new(0),
    });
    let writers: Vec<_> =
        entries.iter().enumerate().map(|(w, &id)| tokio::spawn(writer(api.clone(), token.clone(), id, w, shared.clone()))).collect();

    // Load, then the disruption.
    let warm_start = Instant::now();
    while shared.acked.load(Ordering::SeqCst) < WARM_WRITES && warm_start.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let before = shared.acked.load(Ordering::SeqCst);
    let disrupted_at = shared.epoch.elapsed();
    let crash_at = Instant::now();
    let kept = tokio::task::spawn_blocking(disrupt).await.unwrap();
    let disruption = crash_at.elapsed();
    *shared.settled.lock().unwrap() = Some(shared.epoch.elapsed());

    // Until a write sent after the disruption was over succeeds (bounded), and a little longer.
    while crash_at.elapsed() < RECOVERY_LIMIT + Duration::from_secs(5) {
        let recovered = *shared.recovered.lock().unwrap();
        if recovered.is_some_and(|r| shared.epoch.elapsed() > r + AFTER_RECOVERY) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    shared.stop.store(true, Ordering::SeqCst);
    let mut tallies = Vec::new();
    for w in writers {
        tallies.push(w.await.unwrap());
    }

    // Every acknowledged write, read back through the API.
    let mut lost = Vec::new();
    for (t, &id) in tallies.iter().zip(&entries) {
        let stored = api.associations(&token, id).await.unwrap();
        let stored: Vec<&str> = stored.iter().map(|(name, _)| name.as_str()).collect();
        lost.extend(t.acked.iter().filter(|n| !stored.contains(&n.as_str())).map(|n| format!("entry {id}: {n}")));
    }
    // The event chain on the surviving database, every event of the
    // switch included.
    let verified = server.admin(&["--database-url", url, "events", "verify"], "");
    assert!(verified.contains("event log intact"), "events verify after the disruption: {verified}");
    let last_failure = tallies.iter().flat_map(|t| &t.failures).map(|f| f.sent).max().unwrap_or(disrupted_at);
    let recovery = tallies
        .iter()
        .flat_map(|t| &t.acked_at)
        .filter(|(sent, _)| *sent > last_failure)
        .map(|(_, answered)| answered.saturating_sub(disrupted_at))
        .min();
    let log = server.stop();
    (Outcome { tallies, before, disrupted_at, disruption, recovery, lost, log }, kept)
}

/// A primary and a hot standby streaming from it (`pg_basebackup -R`),
/// both started, each on a Unix socket in its own directory, with trust
/// authentication.
fn primary_and_standby(bin: &std::path::Path) -> (PgInstance, PgInstance) {
    let mut primary = PgInstance::init(bin, &["wal_level = replica", "max_wal_senders = 4"], &[]);
    primary.start("");
    let mut standby = PgInstance::standby_of(&primary, &[]);
    standby.start("");
    primary.wait_for("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'", "1");
    (primary, standby)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promoted_standby_takes_over_without_losing_acknowledged_writes() {
    let Some(bin) = server_binaries("a_promoted_standby_takes_over_without_losing_acknowledged_writes") else { return };
    let (primary, standby) = tokio::task::spawn_blocking(move || {
        let (primary, standby) = primary_and_standby(&bin);
        // Synchronous replication, on the primary only (after the copy): a
        // commit is acknowledged once the standby has it.
        primary.psql("ALTER SYSTEM SET synchronous_standby_names = '*'");
        primary.psql("SELECT pg_reload_conf()");
        primary.wait_for("SELECT sync_state FROM pg_stat_replication", "sync");
        (primary, standby)
    })
    .await
    .unwrap();
    assert_eq!(standby.psql("SELECT pg_is_in_recovery()"), "t");

    // Two hosts (the servers' sockets), in libpq's key=value form.
    let url = format!(
        "host={},{} port={},{} user=postgres dbname=postgres target_session_attrs=read-write connect_timeout=5",
        primary.socket_dir(),
        standby.socket_dir(),
        primary.socket_port(),
        standby.socket_port()
    );
    // The primary crashes (`immediate`) and the standby is promoted.
    let (outcome, (_primary, standby)) = load_through(&url, move || {
        let mut primary = primary;
        primary.stop("immediate");
        standby.promote();
        (primary, standby)
    })
    .await;
    outcome.print("failover");
    outcome.check();
    assert_eq!(standby.psql("SELECT pg_is_in_recovery()"), "f");
}

/// A TCP forwarder on 127.0.0.1 (on a port it holds from the start) to the
/// Unix socket in `target`, read at each new connection: one database
/// address whose server the test can swap.
fn forwarder(target: Arc<Mutex<PathBuf>>) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for inbound in listener.incoming().flatten() {
            let socket = target.lock().unwrap().clone();
            let Ok(outbound) = std::os::unix::net::UnixStream::connect(socket) else { continue };
            let (Ok(mut a), Ok(mut b)) = (inbound.try_clone(), outbound.try_clone()) else { continue };
            let (mut inbound, mut outbound) = (inbound, outbound);
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut inbound, &mut b);
                let _ = b.shutdown(std::net::Shutdown::Both);
                let _ = inbound.shutdown(std::net::Shutdown::Both);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut outbound, &mut a);
                let _ = a.shutdown(std::net::Shutdown::Both);
                let _ = outbound.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    port
}

/// Polls `/health/ready` until it answers `want` (bounded); the time it took.
async fn ready_becomes(http: &reqwest::Client, base: &str, want: u16) -> (Duration, String) {
    let start = Instant::now();
    loop {
        let r = http.get(format!("{base}/health/ready")).send().await.unwrap();
        let status = r.status().as_u16();
        let body = r.text().await.unwrap();
        if status == want {
            return (start.elapsed(), body);
        }
        assert!(start.elapsed() < RECOVERY_LIMIT, "/health/ready still {status} {body} after {RECOVERY_LIMIT:?}, waiting for {want}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Readiness follows the database into recovery and out of it: when the one
/// address a server has comes to lead to a hot standby (as when a
/// switchover demotes its primary), `/health/ready` answers 503 (a load
/// balancer takes the replica out) and writes fail cleanly; once that
/// standby is promoted the server is ready and writes again, no restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_is_false_while_the_database_is_a_standby() {
    let Some(bin) = server_binaries("readiness_is_false_while_the_database_is_a_standby") else { return };
    let (primary, standby) = tokio::task::spawn_blocking(move || primary_and_standby(&bin)).await.unwrap();
    let target = Arc::new(Mutex::new(primary.socket_path()));
    let url = format!("postgres://postgres@127.0.0.1:{}/postgres?connect_timeout=5", forwarder(target.clone()));
    // One address, no `target_session_attrs`: the server cannot tell where it leads.
    let Prepared { server, api, token, entries } = prepare(&url).await;
    let entry = entries[0];
    let associate = |name: &str| {
        let (api, token, name) = (api.clone(), token.clone(), name.to_owned());
        async move { api.associate(&token, entry, &name, &string("v")).await }
    };
    let (http, base) = (api.http.clone(), api.base.clone());
    let r = http.get(format!("{base}/health/ready")).send().await.unwrap();
    assert_eq!(r.status(), 200, "ready on the primary");

    // Everything the server wrote is on the standby; then its address leads
    // there, and the primary's connections end.
    let (_primary, standby) = tokio::task::spawn_blocking(move || {
        let mut primary = primary;
        let lsn = primary.psql("SELECT pg_current_wal_lsn()");
        standby.wait_for(&format!("SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn"), "t");
        *target.lock().unwrap() = standby.socket_path();
        primary.stop("immediate");
        (primary, standby)
    })
    .await
    .unwrap();
    let (took, body) = ready_becomes(&http, &base, 503).await;
    eprintln!("readiness: 503 {took:?} after the address came to lead to a standby: {body}");
    assert!(!INTERNALS.iter().any(|w| body.contains(w)), "the 503 names internals: {body}");
    let live = http.get(format!("{base}/health/live")).send().await.unwrap();
    assert_eq!(live.status(), 200, "the process itself is alive");
    let answer = associate("on-standby").await;
    // A database taking no writes is a passing condition (`read_only_sql_transaction`):
    // 503 `temporarily_unavailable`, where the vault answered Result 22 before.
    let unavailable = matches!(&answer, Err(f) if f.status() == Some(503) && f.error().as_deref() == Some("temporarily_unavailable"));
    assert!(unavailable, "a write on a standby fails cleanly: {answer:?}");
    let body = answer.err().map(|f| f.body().to_owned()).unwrap_or_default();
    assert!(!INTERNALS.iter().any(|w| body.contains(w)), "{body}");

    // Promoted: ready again, writes again, on the same server process.
    let standby = tokio::task::spawn_blocking(move || {
        standby.promote();
        standby
    })
    .await
    .unwrap();
    let (took, _) = ready_becomes(&http, &base, 200).await;
    eprintln!("readiness: 200 again {took:?} after the promotion");
    associate("after-promotion").await.unwrap();
    let stored = tokio::task::spawn_blocking(move || standby.psql("SELECT count(*) FROM associations WHERE name = 'after-promotion'"))
        .await
        .unwrap();
    assert_eq!(stored, "1", "the write is on the promoted standby");
    drop(server.stop());
}

/// The security suite's F4 (its figure printed by `scripts/test`).
mod suite {
    use super::*;

    /// How long PostgreSQL stays down.
    const DOWN: Duration = Duration::from_secs(2);
    /// F4's bound: writes succeed again within this of PostgreSQL's return.
    const BACK_WITHIN: Duration = Duration::from_secs(10);

    /// F4: PostgreSQL crashes (`immediate`) in the middle of a write load and
    /// comes back two seconds later on the same host and port.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn f4_postgres_restart_mid_load() {
        let Some(bin) = server_binaries("f4_postgres_restart_mid_load") else { return };
        let mut pg = tokio::task::spawn_blocking(move || {
            let mut pg = PgInstance::init(&bin, &[], &[]);
            pg.start("");
            pg
        })
        .await
        .unwrap();
        let url = pg.socket_url("connect_timeout=5");
        let (outcome, mut pg) = load_through(&url, move || {
            pg.stop("immediate");
            // A real outage of a real process: wall time, not a test clock.
            #[allow(clippy::disallowed_methods)]
            std::thread::sleep(DOWN);
            pg.start("");
            pg
        })
        .await;
        outcome.print("PostgreSQL restart");
        // From PostgreSQL's return (the end of the disruption) to the first write acknowledged after it began.
        let after_back = outcome.recovery.map(|r| r.saturating_sub(outcome.disruption));
        let shown = after_back.map_or_else(|| "never".to_owned(), |b| format!("{} ms", b.as_millis()));
        let unclean = outcome.unclean();
        let internals = outcome.failures().iter().filter(|f| f.status >= 500 && f.status != 503).count();
        let pass = unclean.is_empty()
            && outcome.lost.is_empty()
            && after_back.is_some_and(|b| b <= BACK_WITHIN)
            && outcome.tallies.iter().all(|t| t.transport.is_empty());
        eprintln!(
            "SECURITY F4 PostgreSQL restart mid-load: {WRITERS} writers, crash (immediate) and restart after {DOWN:?} (down to up: {} ms); \
             {} writes acknowledged, {} lost; {} failed cleanly (503 or Result 22), {} not clean, {internals} 5xx other than 503; \
             writes succeed again {shown} after `pg_ctl start` returned (bound {BACK_WITHIN:?}) — {}",
            outcome.disruption.as_millis(),
            outcome.tallies.iter().map(|t| t.acked.len()).sum::<usize>(),
            outcome.lost.len(),
            outcome.failures().len() - unclean.len(),
            unclean.len(),
            if pass { "pass" } else { "FAIL" },
        );
        outcome.check();
        assert!(after_back.is_some_and(|b| b <= BACK_WITHIN), "writes succeed again only {after_back:?} after PostgreSQL is back");
        pg.stop("fast");
    }
}
