//! Three `strongroom serve` processes on one PostgreSQL database, as
//! replicas behind a load balancer run: single-use device codes and refresh
//! tokens stay single-use when simultaneous presentations are spread over
//! the replicas, reuse detected on one replica ends the grant on all, poll
//! pacing is shared, and a revocation is refused by every replica on the
//! next request (the documented bound is zero: nothing is cached).
//!
//! Needs PostgreSQL at `STRONGROOM_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`); skips loudly without it and
//! fails under `STRONGROOM_REQUIRE_ALL_TESTS=1` (`pg_url_or_skip`). Each cluster gets a fresh
//! schema. The tally is printed before any assertion.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strongroom_app::OsRandom;
use strongroom_core::event::{Event, EventKind};
use strongroom_core::grant::device::{DeviceAuthorization, DeviceState};
use strongroom_core::random::Random as _;
use strongroom_core::scope::Scope;
use strongroom_core::time::UnixTime;
use strongroom_core::token::{TokenKind, mint_device_code, mint_user_code};
use strongroom_keyring::keys::Keys;
use strongroom_proto::vedauth::{TokenRequest, TokenResponse};
use strongroom_store::Store;
pub use strongroom_testkit::api::{exchange, refresh};
use strongroom_testkit::{Api, Fail, TokensExt as _};

use crate::process::Server;
pub use strongroom_testkit::pg_url_or_skip as pg_url;

pub const USER: &str = "rosa";
pub const PASSWORD: &str = "a long passphrase";
pub const SCOPE: &str = "restricted:manage";
/// The integration with the default retry window (30 s).
pub const LENIENT: &str = "lenient";
/// The integration with `--retry-window 0`: strict single use.
pub const STRICT: &str = "strict";
/// Simultaneous presentations per trial, and trials per race with the
/// retry window 0 (exactly one success) and with the default window (every
/// presentation answered, one pair works: each loser reads and writes again,
/// so a trial costs about RACERS² / 2 transactions).
const RACERS: usize = 64;
const TRIALS: usize = 100;
const WINDOW_TRIALS: usize = 2;
/// Trials run at once.
const PARALLEL: usize = 4;

/// A master key for a test cluster (hex), fresh per cluster.
fn master_key_hex() -> String {
    let mut k = [0u8; 32];
    OsRandom.fill(&mut k);
    k.iter().map(|b| format!("{b:02x}")).collect()
}

/// Three replicas on one fresh PostgreSQL schema, sharing a master key.
pub struct Cluster {
    pub url: String,
    pub key_hex: String,
    pub replicas: Vec<Server>,
    /// The test's own handle on the same database (fixtures, checks).
    pub store: Arc<dyn Store>,
    pub keys: Keys,
    /// The client every replica is reached through ([`http`]).
    pub http: reqwest::Client,
}

impl Cluster {
    pub async fn start(n: usize) -> Cluster {
        let root = pg_url("replicas").unwrap();
        let url = strongroom_store::postgres::testing::fresh_schema_url(&root).await.unwrap();
        let key_hex = master_key_hex();
        let store = strongroom_store::open(&url).await.unwrap();
        // No access log: tens of thousands of requests, and the machine's
        // cores are better spent on them.
        let env = [("STRONGROOM_MASTER_KEY", key_hex.as_str()), ("STRONGROOM_LOG", "warn,strongroom_server::serve=info")];
        let replicas = (0..n).map(|_| Server::start(&["--insecure-http", "--database-url", &url], &env)).collect();
        let mut master = [0u8; 32];
        for (i, b) in master.iter_mut().enumerate() {
            *b = u8::from_str_radix(&key_hex[2 * i..2 * i + 2], 16).unwrap();
        }
        Cluster { url, key_hex: key_hex.clone(), replicas, store, keys: Keys::from_master(&master), http: http() }
    }

    pub fn base(&self, i: usize) -> String {
        self.replicas[i % self.replicas.len()].http_base()
    }

    /// A client of replica `i`, counting round the ring.
    pub fn api(&self, i: usize) -> Api {
        Api::with(self.http.clone(), self.base(i))
    }

    pub fn bases(&self) -> Bases {
        Bases((0..self.replicas.len()).map(|i| self.api(i)).collect())
    }

    /// `strongroom admin ARGS` on the cluster's database.
    pub fn admin(&self, args: &[&str], stdin: &str) -> String {
        admin_on(&self.url, &self.key_hex, args, stdin)
    }

    /// The user and the two integrations.
    pub fn fixtures(&self) {
        self.admin(&["users", "create", USER], &format!("{PASSWORD}\n"));
        self.admin(&["integrations", "create", LENIENT, "--scope", SCOPE, "--allow-all-users", "--password-grant", "true"], "");
        self.admin(&["integrations", "create", STRICT, "--scope", SCOPE, "--allow-all-users", "--retry-window", "0"], "");
    }

    /// `n` device codes of `client_id`, approved by [`USER`], stored as the
    /// approval page leaves them.
    pub async fn approved_codes(&self, client_id: &str, n: usize) -> Vec<String> {
        let (user, _) = self.store.user_by_name(USER.into()).await.unwrap().unwrap();
        let now = UnixTime::from_millis(i64::try_from(std::time::SystemTime::UNIX_EPOCH.elapsed().unwrap().as_millis()).unwrap());
        let mut codes = Vec::with_capacity(n);
        for _ in 0..n {
            let code = mint_device_code(&OsRandom);
            let user_code = mint_user_code(&OsRandom);
            let d = DeviceAuthorization {
                code_hash: self.keys.token.hash(TokenKind::DeviceCode, code.expose()),
                user_code_hash: self.keys.token.hash(TokenKind::UserCode, user_code.expose()),
                client_id: client_id.to_owned(),
                scope: Scope::parse(SCOPE).unwrap(),
                state: DeviceState::Approved { user_id: user.id.clone() },
                created_at: now,
                expires_at: UnixTime::from_millis(now.millis() + 3_600_000),
                interval_secs: 5,
                last_poll_at: None,
                version: 0,
            };
            let event = Event::new(EventKind::DeviceApproved, now).identity("test").origin("test", "");
            self.store.insert_device(d, event, None).await.unwrap();
            codes.push(code.expose().to_owned());
        }
        codes
    }
}

/// The replicas' clients.
#[derive(Clone, Debug)]
pub struct Bases(Vec<Api>);

impl Bases {
    /// Replica `i`, counting round the ring.
    pub fn api(&self, i: usize) -> &Api {
        &self.0[i % self.0.len()]
    }
}

/// `strongroom admin ARGS` against database `url` with master key `key_hex`.
pub fn admin_on(url: &str, key_hex: &str, args: &[&str], stdin: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let all: Vec<&str> = ["--database-url", url].iter().chain(args).copied().collect();
    crate::process::admin(dir.path(), &all, &[("STRONGROOM_MASTER_KEY", key_hex)], stdin)
}

pub fn http() -> reqwest::Client {
    // The server closes a connection idle for 10 s (its header read timeout):
    // never reuse one that old.
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(RACERS * PARALLEL)
        .pool_idle_timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

/// A token endpoint's answer.
pub type Answer = Result<TokenResponse, Fail>;

/// The answer's HTTP status (0 when none arrived).
pub fn status(a: &Answer) -> u16 {
    match a {
        Ok(_) => 200,
        Err(f) => f.status().unwrap_or(0),
    }
}

/// Whether the answer is 400 `invalid_grant`.
pub fn invalid_grant(a: &Answer) -> bool {
    matches!(a, Err(f) if f.status() == Some(400) && f.error().as_deref() == Some("invalid_grant"))
}

/// `"200"`, or the status and `error` of a refusal (`"400 invalid_grant"`).
fn label(a: &Answer) -> String {
    match a {
        Ok(_) => "200".to_owned(),
        Err(f) => format!("{} {}", status(a), f.error().as_deref().unwrap_or("?")),
    }
}

/// `RACERS` simultaneous requests with `body`, round-robin over the
/// replicas, released together.
async fn race(c: &Bases, body: &TokenRequest) -> Vec<Answer> {
    let barrier = Arc::new(tokio::sync::Barrier::new(RACERS));
    let tasks: Vec<_> = (0..RACERS)
        .map(|i| {
            let (api, body, barrier) = (c.api(i).clone(), body.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                api.token(&body).await
            })
        })
        .collect();
    let mut out = Vec::with_capacity(RACERS);
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

/// How the answers of one race fell: `"200"` or `"400 invalid_grant"` and so on, counted.
fn outcome(answers: &[Answer]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for a in answers {
        *m.entry(label(a)).or_insert(0) += 1;
    }
    m
}

/// Of the pairs answered, how many access tokens verify (on rotating replicas),
/// and the refresh token of the one that does.
async fn working(c: &Bases, answers: &[Answer]) -> (usize, Option<String>, Vec<u16>) {
    let mut n = 0;
    let mut refresh = None;
    let mut statuses = Vec::new();
    for (i, t) in answers.iter().enumerate().filter_map(|(i, a)| Some((i, a.as_ref().ok()?))) {
        // A store that is busy for a moment (503, or the timeout layer's 408)
        // says nothing of the pair: ask again, a few times, before judging.
        let mut status = c.api(i).verify(t.access()).await;
        for _ in 0..10 {
            if status != 503 && status != 408 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            status = c.api(i).verify(t.access()).await;
        }
        statuses.push(status);
        if status == 200 {
            n += 1;
            refresh = Some(t.refresh().to_owned());
        }
    }
    (n, refresh, statuses)
}

/// Per race kind: trials, trials that held, outcome histogram, notes.
#[derive(Debug, Default)]
struct Tally {
    trials: usize,
    held: usize,
    outcomes: BTreeMap<String, usize>,
    notes: Vec<String>,
}

impl Tally {
    fn record(&mut self, trial: usize, ok: bool, answers: &[Answer], what: impl FnOnce() -> String) {
        self.trials += 1;
        for (k, v) in outcome(answers) {
            *self.outcomes.entry(k).or_insert(0) += v;
        }
        if ok {
            self.held += 1;
        } else if self.notes.len() < 10 {
            self.notes.push(format!("trial {trial}: {:?} {}", outcome(answers), what()));
        }
    }
}

/// The approved device codes one trial uses: two of the strict integration,
/// and two of the lenient one in the trials that race it too.
#[derive(Clone)]
struct TrialCodes {
    strict: (String, String),
    lenient: Option<(String, String)>,
}

/// One trial of every race: (race, held, answers, what went wrong).
async fn trial(b: Bases, trial: usize, codes: TrialCodes) -> Vec<(&'static str, bool, Vec<Answer>, String)> {
    let mut out = Vec::new();
    // Device code, window 0: exactly one 200, the rest invalid_grant,
    // and the winner's grant lives (a replayed code does not revoke).
    let answers = race(&b, &exchange(STRICT, &codes.strict.0)).await;
    let ok_count = answers.iter().filter(|a| a.is_ok()).count();
    let refused = answers.iter().filter(|a| invalid_grant(a)).count();
    let (works, _, verified) = working(&b, &answers).await;
    out.push((
        "device code, retry window 0",
        ok_count == 1 && refused == RACERS - 1 && works == 1,
        answers.clone(),
        format!("{works} pairs work (Verify answered {verified:?})"),
    ));

    // Refresh, window 0: exactly one 200; the losers' reuse revokes the grant.
    let first = b.api(trial).token(&exchange(STRICT, &codes.strict.1)).await.unwrap();
    let answers = race(&b, &refresh(STRICT, first.refresh())).await;
    let winners: Vec<&TokenResponse> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
    let refused = answers.iter().filter(|a| invalid_grant(a)).count();
    let mut revoked_everywhere = true;
    if let Some(w) = winners.first() {
        for r in 0..3 {
            revoked_everywhere &= b.api(r).verify(w.access()).await == 401;
        }
        revoked_everywhere &= status(&b.api(trial + 1).token(&refresh(STRICT, w.refresh())).await) == 400;
    }
    out.push((
        "refresh, retry window 0",
        winners.len() == 1 && refused == RACERS - 1 && revoked_everywhere,
        answers.clone(),
        format!("grant revoked on every replica afterwards: {revoked_everywhere}"),
    ));

    let Some(lenient) = &codes.lenient else { return out };
    // Device code, default window: every presentation answered, exactly one pair works.
    let answers = race(&b, &exchange(LENIENT, &lenient.0)).await;
    let all_ok = answers.iter().all(Result::is_ok);
    let (works, working_refresh, verified) = working(&b, &answers).await;
    let lives = match &working_refresh {
        Some(r) => b.api(trial + 2).token(&refresh(LENIENT, r)).await.is_ok(),
        None => false,
    };
    out.push((
        "device code, retry window 30 s",
        all_ok && works == 1 && lives,
        answers.clone(),
        format!("{works} pairs work (Verify answered {verified:?}), the working pair refreshes: {lives}"),
    ));

    // Refresh, default window: every presentation answered, exactly one pair works.
    let first = b.api(trial).token(&exchange(LENIENT, &lenient.1)).await.unwrap();
    let answers = race(&b, &refresh(LENIENT, first.refresh())).await;
    let all_ok = answers.iter().all(Result::is_ok);
    let (works, working_refresh, verified) = working(&b, &answers).await;
    let lives = match &working_refresh {
        Some(r) => b.api(trial + 1).token(&refresh(LENIENT, r)).await.is_ok(),
        None => false,
    };
    out.push((
        "refresh, retry window 30 s",
        all_ok && works == 1 && lives,
        answers,
        format!("{works} pairs work (Verify answered {verified:?}), the working pair refreshes: {lives}"),
    ));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_on_one_database_keep_single_use_and_share_revocation() {
    if pg_url("replicas").is_none() {
        return;
    }
    let started = Instant::now();
    let c = Cluster::start(3).await;
    c.fixtures();
    let strict_codes = c.approved_codes(STRICT, 2 * TRIALS).await;
    let lenient_codes = c.approved_codes(LENIENT, 2 * WINDOW_TRIALS).await;
    let mut tallies: BTreeMap<&str, Tally> = BTreeMap::new();

    // PARALLEL trials at a time, each on its own codes and grants, so the
    // replicas have work while one trial waits on row locks and commits.
    for first in (0..TRIALS).step_by(PARALLEL) {
        let tasks: Vec<_> = (first..(first + PARALLEL).min(TRIALS))
            .map(|t| {
                let codes = TrialCodes {
                    strict: (strict_codes[2 * t].clone(), strict_codes[2 * t + 1].clone()),
                    lenient: (t < WINDOW_TRIALS).then(|| (lenient_codes[2 * t].clone(), lenient_codes[2 * t + 1].clone())),
                };
                (t, tokio::spawn(trial(c.bases(), t, codes)))
            })
            .collect();
        for (t, task) in tasks {
            for (what, held, answers, note) in task.await.unwrap() {
                tallies.entry(what).or_default().record(t, held, &answers, || note);
            }
        }
    }
    let races_done = started.elapsed();

    // A spent refresh token replayed on another replica revokes the grant everywhere.
    let code = c.approved_codes(LENIENT, 1).await.remove(0);
    let g = c.api(0).token(&exchange(LENIENT, &code)).await.unwrap();
    let next = c.api(0).token(&refresh(LENIENT, g.refresh())).await.unwrap();
    // The new pair is used, so the spent token is no retry of a lost answer.
    assert_eq!(c.api(0).verify(next.access()).await, 200);
    let replay = c.api(1).token(&refresh(LENIENT, g.refresh())).await;
    assert!(invalid_grant(&replay), "{replay:?}");
    let after_replay: Vec<u16> = futures_verify(&c, next.access()).await;
    let st_next = status(&c.api(2).token(&refresh(LENIENT, next.refresh())).await);

    // Polling too fast while switching replicas still gets slow_down.
    let started_code = c.api(0).device(LENIENT, SCOPE).await.device_code.0;
    let mut polls = Vec::new();
    for i in 0..3 {
        let answer = c.api(i).token(&exchange(LENIENT, &started_code)).await;
        polls.push(label(&answer));
    }

    // A revoke on replica 1 is refused on replicas 2 and 3 at once.
    let code = c.approved_codes(LENIENT, 1).await.remove(0);
    let g = c.api(0).token(&exchange(LENIENT, &code)).await.unwrap();
    let access = g.access();
    let before_revoke = futures_verify(&c, access).await;
    assert_eq!(c.api(0).revoke(access).await, 200);
    let after_revoke = vec![c.api(1).verify(access).await, c.api(2).verify(access).await];
    let st_revoked_refresh = status(&c.api(2).token(&refresh(LENIENT, g.refresh())).await);

    let verified = c.admin(&["events", "verify"], "");
    eprintln!(
        "replicas: 3 replicas on one PostgreSQL schema, {RACERS} simultaneous presentations per trial, round-robin; races took {:.1} s",
        races_done.as_secs_f64()
    );
    for (what, t) in &tallies {
        eprintln!("replicas: {what}: {} of {} trials held; answers {:?}", t.held, t.trials, t.outcomes);
        for n in &t.notes {
            eprintln!("replicas:   {n}");
        }
    }
    eprintln!(
        "replicas: replay on replica 2 -> {}; the new access token on replicas 1-3 -> {after_replay:?}; its refresh token on replica 3 -> {st_next}",
        label(&replay)
    );
    eprintln!("replicas: poll on replica 1, 2, 3 at once -> {polls:?}");
    eprintln!(
        "replicas: before revoke {before_revoke:?}; revoked on replica 1, then verify on replicas 2 and 3 -> {after_revoke:?}, refresh on replica 3 -> {st_revoked_refresh}"
    );
    eprintln!("replicas: {}", verified.trim());

    for (what, t) in &tallies {
        assert_eq!(t.trials, if what.contains("window 0") { TRIALS } else { WINDOW_TRIALS }, "{what}");
        assert_eq!(t.held, t.trials, "{what}: trials where single use broke");
    }
    assert_eq!(after_replay, vec![401, 401, 401], "reuse detected on replica 2 revokes the grant on every replica");
    assert_eq!(st_next, 400, "the revoked grant's refresh token is refused");
    assert_eq!(polls[0], "400 authorization_pending");
    assert_eq!(polls[1..], ["400 slow_down".to_owned(), "400 slow_down".to_owned()], "poll pacing is shared by the replicas");
    assert_eq!(before_revoke, vec![200, 200, 200]);
    assert_eq!(after_revoke, vec![401, 401], "a revocation is refused on the other replicas on the next request");
    assert_eq!(st_revoked_refresh, 400);
    assert!(verified.contains("event log intact"), "{verified}");
}

/// Verify on every replica in turn.
async fn futures_verify(c: &Cluster, access: &str) -> Vec<u16> {
    let mut out = Vec::new();
    for r in 0..c.replicas.len() {
        out.push(c.api(r).verify(access).await);
    }
    out
}
