//! Group commit for the request path's hot writes on PostgreSQL: a
//! refresh's `advance_pair`, the device-code exchange's `redeem_device`,
//! the JWT grant's `insert_machine_grant` (for an identity that has its row)
//! and the vault's `put_association`.
//!
//! Every event append locks the one `event_head` row until its transaction
//! commits, and a commit waits for its WAL flush (`synchronous_commit=on`),
//! so one write per transaction runs at most one flush's worth of writes a
//! second. One writer task per store takes every waiting job, runs them in
//! one transaction (each job one statement: the conditional write of a
//! grant's row or a value's, and its event, as data-modifying CTEs), moves the
//! event chain once, commits, and only then answers each job. A job that
//! fails aborts the transaction: the batch is rolled back and its jobs run
//! again one per transaction, so one failure is answered to its own caller
//! alone. Durability is unchanged: nobody is answered before the commit.

use deadpool_postgres::{GenericClient, Object, Pool};
use futures_util::future::try_join_all;
use tokio::sync::{mpsc, oneshot};

use strongroom_core::event::{Event, chain_hash};
use strongroom_core::grant::{Grant, GrantId};
use strongroom_core::token::TokenHash;
use strongroom_core::vault::VaultId;

use super::{Pg, checkout, classify, refs, release, spoiled};
use crate::codec::{self, Cols, Value, values};
use crate::ops::{Conn, auth::advance_pair_values};
use crate::schema::GRANTS;
use crate::sql;
use crate::{
    Checked, ErrorKind, MachineIssue, ObserverSlot, PairChange, PutAssociation, Replay, StoreError, StoreResult, StoredAssociation, Writer,
};

/// Jobs per transaction at most.
const MAX_BATCH: usize = 64;
/// Jobs waiting at most (callers wait for room beyond it).
const QUEUE: usize = 1024;

/// The conditional pair change and its event, in one statement. `$1`-`$11`
/// are [`sql::ADVANCE_PAIR`]'s, `$12`-`$21` the event. Answers 1 when the
/// grant moved, else 0 (and writes nothing).
fn advance_pair_sql() -> String {
    format!("WITH g AS ({} RETURNING id), {} SELECT count(*) FROM g", sql::ADVANCE_PAIR.postgres(), event_cte(12, "g"))
}

/// The device code's redemption, its grant and their event, in one
/// statement. `$1` code hash, `$2` version read, `$3`-`$22` the grant's row
/// ([`GRANTS`]; `$3`, its id, is also [`sql::REDEEM_DEVICE`]'s third),
/// `$23`-`$32` the event. Answers 1 when the code was redeemed (and the
/// grant written), else 0 (and writes nothing).
fn redeem_device_sql() -> String {
    format!(
        "WITH d AS ({} RETURNING 1), g AS (INSERT INTO grants ({}) SELECT {} FROM d RETURNING 1), {} SELECT count(*) FROM g",
        sql::REDEEM_DEVICE.postgres(),
        GRANTS.column_list(),
        GRANTS.pg_params(3),
        event_cte(3 + GRANTS.columns.len(), "g")
    )
}

/// The JWT grant's write for a machine identity that has its user row, in
/// one statement: the replay record (only when the row is there), and the
/// grant and its event when the identity is enabled and the JWT is new.
/// `$1` the identity's user id; `$2`-`$4` the replay record (issuer, key,
/// kept until), `$5` now; `$6`-`$25` the grant's row ([`GRANTS`]),
/// `$26`-`$35` the event. Answers: the identity's `disabled` (NULL: no row,
/// nothing written), whether the replay record was written, whether the
/// grant was. The same decisions as [`crate::ops::machine::insert_machine_grant`].
fn machine_grant_sql() -> String {
    format!(
        "WITH u AS (SELECT disabled FROM users WHERE id = $1::TEXT), \
         r AS (INSERT INTO jwt_replay (issuer, replay_key, expires_at) SELECT $2::TEXT, $3::TEXT, $4::BIGINT FROM u \
               ON CONFLICT (issuer, replay_key) DO UPDATE SET expires_at = excluded.expires_at \
               WHERE jwt_replay.expires_at < $5::BIGINT RETURNING 1), \
         g AS (INSERT INTO grants ({}) SELECT {} FROM r, u WHERE NOT u.disabled RETURNING 1), \
         {} \
         SELECT (SELECT disabled FROM u), EXISTS (SELECT 1 FROM r), EXISTS (SELECT 1 FROM g)",
        GRANTS.column_list(),
        GRANTS.pg_params(6),
        event_cte(6 + GRANTS.columns.len(), "g")
    )
}

/// The rights check, the identical-value check and the upsert with its
/// event, in one statement. `$1` grant, `$2` user, `$3` entry (as
/// [`sql::MAY_WRITE_ENTRY`]); `$4` name, `$5` type, `$6` key id, `$7`
/// sealed, `$8` lookup; `$9`-`$18` the event. Answers: entry exists, may
/// write, stored. The entry row is locked first, so writers to one entry
/// take turns; an identical value (same lookup hash as the newest committed
/// row) is left alone.
fn put_association_sql() -> String {
    format!(
        "WITH e AS (SELECT vault_id FROM vault_entries WHERE vault_id = $3 FOR UPDATE), \
         w AS (SELECT ({}) AS allowed), \
         p AS (INSERT INTO associations (vault_id, name, value_type, key_id, sealed, lookup) \
               SELECT e.vault_id, $4::TEXT, $5::TEXT, $6::BIGINT, $7::BYTEA, $8::BYTEA FROM e, w WHERE w.allowed \
               ON CONFLICT (vault_id, name) DO UPDATE SET value_type = excluded.value_type, key_id = excluded.key_id, \
               sealed = excluded.sealed, lookup = excluded.lookup WHERE associations.lookup IS DISTINCT FROM excluded.lookup \
               RETURNING 1), \
         {} \
         SELECT EXISTS (SELECT 1 FROM e), coalesce((SELECT allowed FROM w), false), EXISTS (SELECT 1 FROM p)",
        sql::MAY_WRITE_ENTRY.postgres(),
        event_cte(9, "p")
    )
}

/// The event's columns after a job's own in an [`unnest`] row, with their types.
const EVENT_COLUMNS: [(&str, &str); 10] = [
    ("seq", "BIGINT"),
    ("at", "BIGINT"),
    ("kind", "TEXT"),
    ("identity", "TEXT"),
    ("client_id", "TEXT"),
    ("source", "TEXT"),
    ("request_id", "TEXT"),
    ("object", "TEXT"),
    ("detail", "TEXT"),
    ("hash", "BYTEA"),
];

/// `j AS (SELECT * FROM unnest($1::INT[], …) AS j(idx, …))`: a batch's jobs
/// of one kind as rows, a parameter (an array, one element per job) per
/// column: the job's index in the batch, then `columns`, then its event's
/// ([`EVENT_COLUMNS`]). The arrays are the parameters of that job's own
/// statement, in the same order ([`params`]), one per job ([`run_many`]).
fn unnest<N: AsRef<str>>(columns: &[(N, &str)]) -> String {
    let all: Vec<(&str, &str)> =
        [("idx", "INT")].into_iter().chain(columns.iter().map(|(name, ty)| (name.as_ref(), *ty))).chain(EVENT_COLUMNS).collect();
    let arrays: Vec<String> = all.iter().enumerate().map(|(i, (_, ty))| format!("${}::{ty}[]", i + 1)).collect();
    let names: Vec<&str> = all.iter().map(|(name, _)| *name).collect();
    format!("j AS (SELECT * FROM unnest({}) AS j({}))", arrays.join(", "), names.join(", "))
}

/// `ev AS (…)`: the events of the rows of `rel` (which has [`unnest`]'s
/// columns) that `from` lets through (the jobs whose write was made).
fn events_of(rel: &str, from: &str) -> String {
    let cols: Vec<&str> = EVENT_COLUMNS.iter().map(|(name, _)| *name).collect();
    let of_rel: Vec<String> = cols.iter().map(|c| format!("{rel}.{c}")).collect();
    format!("ev AS (INSERT INTO events ({}) SELECT {} FROM {from})", cols.join(", "), of_rel.join(", "))
}

/// A batch's associations in one statement: [`put_association_sql`] over
/// the rows of [`unnest`], one per job, so the executor starts once per
/// batch rather than once per job. Answers a row per job, in index order:
/// index, entry exists, may write, stored. No two jobs may name the same
/// (entry, name): one upsert cannot change a row twice ([`lanes`] sees to
/// it).
fn put_many_sql() -> String {
    format!(
        "WITH {}, \
         e AS (SELECT vault_id FROM vault_entries WHERE vault_id IN (SELECT vault_id FROM j) ORDER BY vault_id FOR UPDATE), \
         w AS (SELECT j.*, EXISTS (SELECT 1 FROM e WHERE e.vault_id = j.vault_id) AS found, {} AS allowed FROM j), \
         p AS (INSERT INTO associations (vault_id, name, value_type, key_id, sealed, lookup) \
               SELECT vault_id, name, value_type, key_id, sealed, lookup FROM w WHERE found AND allowed \
               ON CONFLICT (vault_id, name) DO UPDATE SET value_type = excluded.value_type, key_id = excluded.key_id, \
               sealed = excluded.sealed, lookup = excluded.lookup WHERE associations.lookup IS DISTINCT FROM excluded.lookup \
               RETURNING vault_id, name), \
         {} \
         SELECT w.idx, w.found, w.allowed, EXISTS (SELECT 1 FROM p WHERE p.vault_id = w.vault_id AND p.name = w.name) \
         FROM w ORDER BY w.idx",
        unnest(&[
            ("grant_id", "TEXT"),
            ("user_id", "TEXT"),
            ("vault_id", "BIGINT"),
            ("name", "TEXT"),
            ("value_type", "TEXT"),
            ("key_id", "BIGINT"),
            ("sealed", "BYTEA"),
            ("lookup", "BYTEA"),
        ]),
        sql::may_write_entry("j.grant_id", "j.user_id", "j.vault_id"),
        events_of("w", "w JOIN p ON p.vault_id = w.vault_id AND p.name = w.name")
    )
}

/// A batch's refreshes in one statement: [`sql::ADVANCE_PAIR`] over the
/// rows of [`unnest`], one per job. Answers a row per job, in index order:
/// index, whether its grant moved. No two jobs may name the same grant: an
/// `UPDATE … FROM` changes a row once whichever rows of `j` match it
/// ([`lanes`] sees to it).
fn advance_many_sql() -> String {
    format!(
        "WITH {}, \
         g AS (UPDATE grants SET version = grants.version + 1, refresh_hash = j.refresh_hash, access_hash = j.access_hash, \
               pair_used = j.pair_used, rotated_from = j.rotated_from, rotated_at = j.rotated_at, \
               access_issued_at = j.access_issued_at, generation = j.generation, older_access = j.older_access, \
               last_addr = COALESCE(j.last_addr, grants.last_addr) \
               FROM j WHERE grants.id = j.grant_id AND grants.version = j.version AND grants.revoked_at IS NULL \
               AND grants.refresh_until > j.access_issued_at RETURNING grants.id), \
         {} \
         SELECT j.idx, EXISTS (SELECT 1 FROM g WHERE g.id = j.grant_id) FROM j ORDER BY j.idx",
        unnest(&[
            ("grant_id", "TEXT"),
            ("version", "BIGINT"),
            ("refresh_hash", "BYTEA"),
            ("access_hash", "BYTEA"),
            ("pair_used", "BOOL"),
            ("rotated_from", "BYTEA"),
            ("rotated_at", "BIGINT"),
            ("access_issued_at", "BIGINT"),
            ("generation", "BIGINT"),
            ("older_access", "BYTEA"),
            ("last_addr", "TEXT"),
        ]),
        events_of("j", "j JOIN g ON g.id = j.grant_id")
    )
}

/// A batch's JWT grants in one statement: [`machine_grant_sql`] over the
/// rows of [`unnest`], one per job (the grant's columns named `g_…`).
/// Answers a row per job, in index order: index, the identity's `disabled`
/// (NULL: no row, nothing written), whether the replay record was written,
/// whether the grant was. A replay record is taken over when it expired
/// before the batch's earliest `now` (the statement of one job: before its
/// own). No two jobs may carry the same replay record: one upsert cannot
/// change a row twice ([`lanes`] sees to it).
fn machine_many_sql() -> String {
    let grant = GRANTS.pg_columns("g_");
    let grant_cols: Vec<&str> = grant.iter().map(|(name, _)| name.as_str()).collect();
    let columns: Vec<(String, &str)> =
        [("uid", "TEXT"), ("issuer", "TEXT"), ("replay_key", "TEXT"), ("expires", "BIGINT"), ("now_at", "BIGINT")]
            .into_iter()
            .map(|(name, ty)| (name.to_owned(), ty))
            .chain(grant.iter().cloned())
            .collect();
    format!(
        "WITH {}, \
         u AS (SELECT j.idx, users.disabled FROM j JOIN users ON users.id = j.uid), \
         r AS (INSERT INTO jwt_replay (issuer, replay_key, expires_at) SELECT j.issuer, j.replay_key, j.expires FROM j JOIN u ON u.idx = j.idx \
               ON CONFLICT (issuer, replay_key) DO UPDATE SET expires_at = excluded.expires_at \
               WHERE jwt_replay.expires_at < (SELECT min(now_at) FROM j) RETURNING issuer, replay_key), \
         g AS (INSERT INTO grants ({}) SELECT {} FROM j JOIN u ON u.idx = j.idx \
               JOIN r ON r.issuer = j.issuer AND r.replay_key = j.replay_key WHERE NOT u.disabled RETURNING id), \
         {} \
         SELECT j.idx, u.disabled, EXISTS (SELECT 1 FROM r WHERE r.issuer = j.issuer AND r.replay_key = j.replay_key), \
         EXISTS (SELECT 1 FROM g WHERE g.id = j.g_id) FROM j LEFT JOIN u ON u.idx = j.idx ORDER BY j.idx",
        unnest(&columns),
        GRANTS.column_list(),
        grant_cols.join(", "),
        events_of("j", "j JOIN g ON g.id = j.g_id")
    )
}

/// `ev AS (INSERT INTO events … SELECT … FROM {from})` with the event's ten
/// values from parameter `$first` on.
fn event_cte(first: usize, from: &str) -> String {
    let p = |k: usize, ty: &str| format!("${}::{ty}", first + k);
    format!(
        "ev AS (INSERT INTO events (seq, at, kind, identity, client_id, source, request_id, object, detail, hash) \
         SELECT {}, {}, {}, {}, {}, {}, {}, {}, {}, {} FROM {from})",
        p(0, "BIGINT"),
        p(1, "BIGINT"),
        p(2, "TEXT"),
        p(3, "TEXT"),
        p(4, "TEXT"),
        p(5, "TEXT"),
        p(6, "TEXT"),
        p(7, "TEXT"),
        p(8, "TEXT"),
        p(9, "BYTEA")
    )
}

/// One write, as the caller asked for it.
#[derive(Debug)]
pub(super) enum Work {
    AdvancePair { grant_id: GrantId, version: i64, change: PairChange, event: Event },
    PutAssociation { id: VaultId, a: StoredAssociation, by: Writer, event: Event },
    RedeemDevice { code_hash: TokenHash, version: i64, grant: Grant, event: Event },
    MachineGrant { grant: Grant, replay: Replay, event: Event },
}

impl Work {
    fn event(&self) -> &Event {
        match self {
            Work::AdvancePair { event, .. }
            | Work::PutAssociation { event, .. }
            | Work::RedeemDevice { event, .. }
            | Work::MachineGrant { event, .. } => event,
        }
    }
}

#[derive(Debug)]
enum Done {
    Moved(bool),
    Put(Checked<PutAssociation>),
    /// `None`: the identity has no user row yet (nothing was written).
    Machine(Option<MachineIssue>),
}

#[derive(Debug)]
enum Reply {
    Moved(oneshot::Sender<StoreResult<bool>>),
    Put(oneshot::Sender<StoreResult<Checked<PutAssociation>>>),
    Machine(oneshot::Sender<StoreResult<Option<MachineIssue>>>),
}

impl Reply {
    /// Whether the caller went away (its request ended): its job need not run.
    fn is_closed(&self) -> bool {
        match self {
            Reply::Moved(tx) => tx.is_closed(),
            Reply::Put(tx) => tx.is_closed(),
            Reply::Machine(tx) => tx.is_closed(),
        }
    }

    fn send(self, r: StoreResult<Done>) {
        // A caller that went away (its request was cancelled) needs no answer.
        match (self, r) {
            (Reply::Moved(tx), Ok(Done::Moved(b))) => drop(tx.send(Ok(b))),
            (Reply::Put(tx), Ok(Done::Put(p))) => drop(tx.send(Ok(p))),
            (Reply::Machine(tx), Ok(Done::Machine(m))) => drop(tx.send(Ok(m))),
            (Reply::Moved(tx), Err(e)) => drop(tx.send(Err(e))),
            (Reply::Put(tx), Err(e)) => drop(tx.send(Err(e))),
            (Reply::Machine(tx), Err(e)) => drop(tx.send(Err(e))),
            (Reply::Moved(tx), Ok(_)) => drop(tx.send(Err(StoreError::other("batch answered another job")))),
            (Reply::Put(tx), Ok(_)) => drop(tx.send(Err(StoreError::other("batch answered another job")))),
            (Reply::Machine(tx), Ok(_)) => drop(tx.send(Err(StoreError::other("batch answered another job")))),
        }
    }
}

#[derive(Debug)]
struct Job {
    work: Work,
    reply: Reply,
}

/// A place in the event chain: an event's sequence number and hash.
#[derive(Clone)]
struct Chain {
    seq: i64,
    hash: [u8; 32],
}

impl Chain {
    /// The place of `e` right after this one.
    fn next(&self, e: &Event) -> Chain {
        let seq = self.seq + 1;
        Chain { seq, hash: chain_hash(&self.hash, seq, e) }
    }
}

/// The queue to a store's writer task.
#[derive(Clone)]
pub(super) struct Batcher {
    jobs: mpsc::Sender<Job>,
}

impl std::fmt::Debug for Batcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher").finish_non_exhaustive()
    }
}

impl Batcher {
    /// Starts the writer task on the current tokio runtime; `observer` is told each batch's size and time.
    pub(super) fn spawn(pool: Pool, observer: ObserverSlot) -> Batcher {
        let (jobs, rx) = mpsc::channel(QUEUE);
        tokio::spawn(writer(pool, rx, observer));
        Batcher { jobs }
    }

    pub(super) async fn advance_pair(&self, grant_id: GrantId, version: i64, change: PairChange, event: Event) -> StoreResult<bool> {
        let (tx, rx) = oneshot::channel();
        self.submit(Job { work: Work::AdvancePair { grant_id, version, change, event }, reply: Reply::Moved(tx) }).await?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    pub(super) async fn redeem_device(&self, code_hash: TokenHash, version: i64, grant: Grant, event: Event) -> StoreResult<bool> {
        let (tx, rx) = oneshot::channel();
        self.submit(Job { work: Work::RedeemDevice { code_hash, version, grant, event }, reply: Reply::Moved(tx) }).await?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// The JWT grant's write when the identity has its user row; `None`
    /// (and nothing written) when it has none yet.
    pub(super) async fn machine_grant(&self, grant: Grant, replay: Replay, event: Event) -> StoreResult<Option<MachineIssue>> {
        let (tx, rx) = oneshot::channel();
        self.submit(Job { work: Work::MachineGrant { grant, replay, event }, reply: Reply::Machine(tx) }).await?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    pub(super) async fn put_association(
        &self,
        id: VaultId,
        a: StoredAssociation,
        by: Writer,
        event: Event,
    ) -> StoreResult<Checked<PutAssociation>> {
        let (tx, rx) = oneshot::channel();
        self.submit(Job { work: Work::PutAssociation { id, a, by, event }, reply: Reply::Put(tx) }).await?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    async fn submit(&self, job: Job) -> StoreResult<()> {
        self.jobs.send(job).await.map_err(|_| StoreError::Closed)
    }
}

async fn writer(pool: Pool, mut rx: mpsc::Receiver<Job>, observer: ObserverSlot) {
    let advance = advance_pair_sql();
    let put = put_association_sql();
    let put_many = put_many_sql();
    let advance_many = advance_many_sql();
    let redeem = redeem_device_sql();
    let machine = machine_grant_sql();
    let machine_many = machine_many_sql();
    let sql = Statements {
        advance: &advance,
        put: &put,
        put_many: &put_many,
        advance_many: &advance_many,
        redeem: &redeem,
        machine: &machine,
        machine_many: &machine_many,
    };
    let mut jobs = Vec::with_capacity(MAX_BATCH);
    // The writer keeps its connection: a batch does not queue behind the
    // requests' reads for one.
    let mut conn = None;
    let mut known = None;
    while rx.recv_many(&mut jobs, MAX_BATCH).await > 0 {
        // A caller that went away (its request timed out or was dropped)
        // was answered nothing: its write is not made either.
        jobs.retain(|j| !j.reply.is_closed());
        if jobs.is_empty() {
            continue;
        }
        let work: Vec<&Work> = jobs.iter().map(|j| &j.work).collect();
        let started = std::time::Instant::now();
        let out = run_batch(&pool, &mut conn, &sql, &work, &mut known).await;
        if let Some(o) = observer.get() {
            o.batch(work.len(), started.elapsed(), out.is_ok());
        }
        match out {
            Ok(done) => {
                for (job, d) in jobs.drain(..).zip(done) {
                    job.reply.send(Ok(d));
                }
            }
            Err(e) if jobs.len() == 1 => {
                if let Some(job) = jobs.pop() {
                    job.reply.send(Err(e));
                }
            }
            Err(_) => {
                // One job failed and took the batch with it: each on its own,
                // but for callers gone meanwhile. A database that cannot be
                // reached fails them all alike: answered at once rather than
                // each after its own wait for a connection.
                let mut unreachable: Option<StoreError> = None;
                for job in jobs.drain(..) {
                    if job.reply.is_closed() {
                        continue;
                    }
                    if let Some(why) = &unreachable {
                        job.reply.send(Err(why.clone()));
                        continue;
                    }
                    let r = run_batch(&pool, &mut conn, &sql, &[&job.work], &mut known)
                        .await
                        .and_then(|mut d| d.pop().ok_or(StoreError::Closed));
                    if let Err(e) = &r
                        && e.kind() == ErrorKind::Unavailable
                    {
                        unreachable = Some(e.clone());
                    }
                    job.reply.send(r);
                }
            }
        }
    }
}

struct Statements<'a> {
    advance: &'a str,
    put: &'a str,
    put_many: &'a str,
    advance_many: &'a str,
    redeem: &'a str,
    machine: &'a str,
    machine_many: &'a str,
}

/// Runs `work` in one transaction; every result, or the first failure.
/// `known` is the event head as this writer last saw it.
///
/// First optimistically: the head is taken to be `known`, and each job to
/// move the chain, so every event gets its place before any job runs, and
/// the transaction's start, the head's lock, the jobs and the head's move
/// go to the server as one pipeline: one round trip and the commit for the
/// whole batch. The locked head and every answer are checked before the
/// commit. If the head was not `known` (another replica, or another write
/// of this one, appended meanwhile), the events were placed wrongly: the
/// transaction is rolled back and tried once more from the head as read. If
/// a job did not move the chain (a lost conditional write, a refusal, an
/// identical value), the events after it were chained onto one that is not
/// there: rolled back, and the batch runs again one job after the other,
/// each event placed on the one before it.
async fn run_batch(
    pool: &Pool,
    conn: &mut Option<Object>,
    sql: &Statements<'_>,
    work: &[&Work],
    known: &mut Option<Chain>,
) -> StoreResult<Vec<Done>> {
    let mut client = match conn.take() {
        Some(c) if !c.is_closed() => c,
        _ => checkout(pool).await?,
    };
    let out = async {
        for _ in 0..2 {
            match pipelined(&client, sql, work, known).await? {
                Pipelined::Committed(done) => return Ok(done),
                Pipelined::HeadMoved => {}
                Pipelined::NotAllMoved => break,
            }
        }
        sequential(&mut client, sql, work, known).await
    }
    .await;
    if out.is_err() {
        // The head is uncertain after a failed commit: read it next time.
        *known = None;
    }
    if spoiled(&out) {
        release(client, &out);
    } else {
        *conn = Some(client);
    }
    out
}

enum Pipelined {
    Committed(Vec<Done>),
    /// The head was not where the events were placed; `known` is now the head as read.
    HeadMoved,
    /// A job did not move the chain.
    NotAllMoved,
}

/// One pipelined attempt (see [`run_batch`]); nothing is written unless it
/// answers `Committed`.
async fn pipelined(client: &Object, sql: &Statements<'_>, work: &[&Work], known: &mut Option<Chain>) -> StoreResult<Pipelined> {
    let start = match known {
        Some(k) => k.clone(),
        None => head(&Pg(client)).await?,
    };
    let mut places = Vec::with_capacity(work.len());
    let mut end = start.clone();
    for w in work {
        end = end.next(w.event());
        places.push(end.clone());
    }
    // Every statement prepared first, so that each request below is sent
    // when it is first polled: in order, BEGIN before all.
    let lock = client.prepare_cached(sql::EVENT_HEAD.postgres()).await.map_err(classify)?;
    let move_head = client.prepare_cached(sql::MOVE_HEAD.postgres()).await.map_err(classify)?;
    for s in [sql.advance, sql.put, sql.put_many, sql.advance_many, sql.redeem, sql.machine, sql.machine_many] {
        client.prepare_cached(s).await.map_err(classify)?;
    }
    let move_to = values![end.seq, &end.hash];
    let move_to = refs(&move_to);
    // The associations in one statement when they may be, the refreshes in
    // another, the JWT grants in a third, every other job in one of its own.
    let lanes = lanes(work);
    let jobs = work.iter().zip(&places).zip(&lanes).enumerate();
    let singles = jobs.clone().filter(|(_, (_, lane))| **lane == Lane::Single).map(|(i, ((w, at), _))| (i, *w, at));
    let in_lane = |l: Lane| jobs.clone().filter(move |(_, (_, lane))| **lane == l).map(|(i, ((w, at), _))| (i, *w, at)).collect();
    let (puts, advances, machines): (Vec<_>, Vec<_>, Vec<_>) = (in_lane(Lane::Puts), in_lane(Lane::Advances), in_lane(Lane::Machines));
    let (begun, locked, single, many, moved) = tokio::join!(
        client.batch_execute("BEGIN"),
        client.query_one(&lock, &[]),
        try_join_all(singles.map(|(i, w, at)| async move { run(client, sql, w, at).await.map(|d| (i, d)) })),
        async {
            let (p, a, m) = tokio::join!(
                run_many(client, sql.put_many, &puts, |r| Ok(put_outcome(r.bool()?, r.bool()?, r.bool()?))),
                run_many(client, sql.advance_many, &advances, |r| r.bool().map(|moved| (Done::Moved(moved), moved))),
                run_many(client, sql.machine_many, &machines, |r| machine_outcome(r.opt_bool()?, r.bool()?, r.bool()?)),
            );
            Ok::<_, StoreError>(p?.into_iter().chain(a?).chain(m?).collect::<Vec<_>>())
        },
        client.execute(&move_head, &move_to),
    );
    let outcome = async {
        begun.map_err(classify)?;
        let found = chain(&mut Cols::new(&locked.map_err(classify)?))?;
        if found.seq != start.seq || found.hash != start.hash {
            *known = Some(found);
            return Ok(Pipelined::HeadMoved);
        }
        let ran = in_order(work.len(), single?, many?)?;
        moved.map_err(classify)?;
        if !ran.iter().all(|(_, moved)| *moved) {
            return Ok(Pipelined::NotAllMoved);
        }
        Ok(Pipelined::Committed(ran.into_iter().map(|(d, _)| d).collect()))
    }
    .await;
    match outcome {
        Ok(Pipelined::Committed(done)) => {
            client.batch_execute("COMMIT").await.map_err(classify)?;
            *known = Some(end);
            Ok(Pipelined::Committed(done))
        }
        other => {
            client.batch_execute("ROLLBACK").await.map_err(classify)?;
            other
        }
    }
}

/// The batch one job after the other in one transaction, each event placed
/// on the one committed before it.
async fn sequential(client: &mut Object, sql: &Statements<'_>, work: &[&Work], known: &mut Option<Chain>) -> StoreResult<Vec<Done>> {
    let tx = client.transaction().await.map_err(classify)?;
    let start = crate::ops::query_one(&Pg(&tx), &sql::EVENT_HEAD, &[], chain).await?;
    let mut done = Vec::with_capacity(work.len());
    let mut chain = start.clone();
    for w in work {
        let at = chain.next(w.event());
        let (d, moved) = run(&tx, sql, w, &at).await?;
        if moved {
            chain = at;
        }
        done.push(d);
    }
    if chain.seq != start.seq {
        Pg(&tx).execute(&sql::MOVE_HEAD, &values![chain.seq, &chain.hash]).await?;
    }
    tx.commit().await.map_err(classify)?;
    *known = Some(chain);
    Ok(done)
}

/// The event head row (`seq`, `hash`).
fn chain(c: &mut Cols<'_>) -> StoreResult<Chain> {
    let (seq, hash) = codec::head(c)?;
    Ok(Chain { seq, hash })
}

/// The event head as committed now, unlocked.
async fn head<C: GenericClient>(c: &Pg<'_, C>) -> StoreResult<Chain> {
    crate::ops::query_one(c, &sql::READ_EVENT_HEAD, &[], chain).await
}

/// The one row a statement of this module answers.
async fn one<T>(
    c: &impl GenericClient,
    sql: &str,
    params: &[Value<'_>],
    f: impl FnOnce(&mut Cols<'_>) -> StoreResult<T>,
) -> StoreResult<T> {
    let st = c.prepare_cached(sql).await.map_err(classify)?;
    let row = c.query_one(&st, &refs(params)).await.map_err(classify)?;
    f(&mut Cols::new(&row))
}

/// The parameters of `w`'s own statement with its event at `at`; also a
/// row of its kind's [`unnest`] (same values, same order).
fn params<'a>(w: &'a Work, at: &'a Chain) -> Vec<Value<'a>> {
    let mut params = match w {
        Work::AdvancePair { grant_id, version, change, .. } => advance_pair_values(grant_id, *version, change).to_vec(),
        Work::RedeemDevice { code_hash, version, grant, .. } => {
            let mut p = values![code_hash, *version].to_vec();
            p.extend(codec::grant_row(grant));
            p
        }
        Work::MachineGrant { grant, replay, event } => {
            let mut p = values![grant.user_id.as_str(), replay.issuer.as_str(), replay.key.as_str(), replay.expires, event.at].to_vec();
            p.extend(codec::grant_row(grant));
            p
        }
        Work::PutAssociation { id, a, by, .. } => {
            let mut p = values![by.grant_id.as_str(), by.user_id.as_str(), *id].to_vec();
            p.extend(codec::association_row(*id, a).into_iter().skip(1));
            p
        }
    };
    params.extend(codec::event_row(at.seq, w.event(), &at.hash));
    params
}

/// Runs one job with its event at `at`; its answer, and whether it moved
/// the chain (wrote its event).
async fn run(c: &impl GenericClient, sql: &Statements<'_>, w: &Work, at: &Chain) -> StoreResult<(Done, bool)> {
    let params = params(w, at);
    match w {
        Work::AdvancePair { .. } => {
            let moved = one(c, sql.advance, &params, |r| r.int()).await? == 1;
            Ok((Done::Moved(moved), moved))
        }
        Work::RedeemDevice { .. } => {
            let moved = one(c, sql.redeem, &params, |r| r.int()).await? == 1;
            Ok((Done::Moved(moved), moved))
        }
        Work::MachineGrant { .. } => {
            let (disabled, recorded, granted) = one(c, sql.machine, &params, |r| Ok((r.opt_bool()?, r.bool()?, r.bool()?))).await?;
            machine_outcome(disabled, recorded, granted)
        }
        Work::PutAssociation { .. } => {
            let (exists, allowed, stored) = one(c, sql.put, &params, |r| Ok((r.bool()?, r.bool()?, r.bool()?))).await?;
            Ok(put_outcome(exists, allowed, stored))
        }
    }
}

/// A JWT grant's answer from what its statement saw (the identity's
/// `disabled`, NULL when it has no row; whether the replay record and the
/// grant were written), and whether it moved the chain.
fn machine_outcome(disabled: Option<bool>, recorded: bool, granted: bool) -> StoreResult<(Done, bool)> {
    let issue = match (disabled, recorded, granted) {
        (None, ..) => None,
        (Some(_), false, _) => Some(MachineIssue::Replayed),
        (Some(true), true, _) => Some(MachineIssue::Disabled),
        (Some(false), true, true) => Some(MachineIssue::Issued),
        (Some(false), true, false) => return Err(StoreError::other("a new JWT of an enabled identity wrote no grant")),
    };
    Ok((Done::Machine(issue), granted))
}

/// An association's answer from what its statement saw, and whether it
/// moved the chain.
fn put_outcome(exists: bool, allowed: bool, stored: bool) -> (Done, bool) {
    let put = if !exists {
        Checked::Done(PutAssociation::NoEntry)
    } else if !allowed {
        Checked::Denied
    } else if stored {
        Checked::Done(PutAssociation::Stored)
    } else {
        Checked::Done(PutAssociation::Identical)
    };
    (Done::Put(put), stored)
}

/// Where a batch's job runs: in a statement of its own, or with the other
/// jobs of its kind in one ([`put_many_sql`], [`advance_many_sql`],
/// [`machine_many_sql`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Lane {
    Single,
    Puts,
    Advances,
    Machines,
}

/// The lane of each job of `work`. Associations go together when there are
/// at least two and no two name the same (entry, name); refreshes when
/// there are at least two and no two name the same grant (a retried
/// refresh and its first attempt: one of them must lose, alone); JWT grants
/// when there are at least two and no two carry the same replay record (a
/// JWT presented twice at once: one of them must lose, alone). Otherwise
/// the jobs of that kind run singly.
fn lanes(work: &[&Work]) -> Vec<Lane> {
    let mut names = std::collections::HashSet::new();
    let mut grants = std::collections::HashSet::new();
    let mut replays = std::collections::HashSet::new();
    let (mut puts, mut advances, mut machines) = ((0, true), (0, true), (0, true));
    for w in work {
        match w {
            Work::PutAssociation { id, a, .. } => {
                puts.0 += 1;
                puts.1 &= names.insert((id.0, a.name.as_str()));
            }
            Work::AdvancePair { grant_id, .. } => {
                advances.0 += 1;
                advances.1 &= grants.insert(grant_id.as_str());
            }
            Work::MachineGrant { replay, .. } => {
                machines.0 += 1;
                machines.1 &= replays.insert((replay.issuer.as_str(), replay.key.as_str()));
            }
            Work::RedeemDevice { .. } => {}
        }
    }
    let together = |(n, distinct): (usize, bool)| n >= 2 && distinct;
    let (puts, advances, machines) = (together(puts), together(advances), together(machines));
    work.iter()
        .map(|w| match w {
            Work::PutAssociation { .. } if puts => Lane::Puts,
            Work::AdvancePair { .. } if advances => Lane::Advances,
            Work::MachineGrant { .. } if machines => Lane::Machines,
            _ => Lane::Single,
        })
        .collect()
}

/// Runs `jobs` (index in the batch, job, its event's place; all of one
/// kind) as one statement `sql` over [`unnest`]'s rows, each row the job's
/// [`params`]; (index, answer, moved) per job, `answer` reading a row after
/// its index.
async fn run_many(
    c: &impl GenericClient,
    sql: &str,
    jobs: &[(usize, &Work, &Chain)],
    answer: impl Fn(&mut Cols<'_>) -> StoreResult<(Done, bool)>,
) -> StoreResult<Vec<(usize, (Done, bool))>> {
    let Some((_, first, at)) = jobs.first() else {
        return Ok(Vec::new());
    };
    let width = params(first, at).len();
    let mut columns: Vec<Vec<Value<'_>>> = std::iter::repeat_with(|| Vec::with_capacity(jobs.len())).take(width + 1).collect();
    for (i, w, at) in jobs {
        let row = std::iter::once(Value::from(i64::try_from(*i).map_err(|_| StoreError::other("batch index"))?)).chain(params(w, at));
        for (column, v) in columns.iter_mut().zip(row) {
            column.push(v);
        }
    }
    let st = c.prepare_cached(sql).await.map_err(classify)?;
    let arrays: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = columns.iter().map(|c| c as _).collect();
    let rows = c.query(&st, &arrays).await.map_err(classify)?;
    if rows.len() != jobs.len() {
        return Err(StoreError::other(format!("{} jobs in one statement, {} answers", jobs.len(), rows.len())));
    }
    rows.iter()
        .map(|r| {
            let mut r = Cols::new(r);
            let i = usize::try_from(r.int()?).map_err(|_| StoreError::other("batch index"))?;
            Ok((i, answer(&mut r)?))
        })
        .collect()
}

/// The answers of one batch, from its single and grouped jobs, in job order.
fn in_order(n: usize, single: Vec<(usize, (Done, bool))>, many: Vec<(usize, (Done, bool))>) -> StoreResult<Vec<(Done, bool)>> {
    let mut all: Vec<Option<(Done, bool)>> = std::iter::repeat_with(|| None).take(n).collect();
    for (i, d) in single.into_iter().chain(many) {
        match all.get_mut(i) {
            Some(slot @ None) => *slot = Some(d),
            _ => return Err(StoreError::other(format!("batch job {i} answered twice or out of range"))),
        }
    }
    all.into_iter().map(|d| d.ok_or_else(|| StoreError::other("a batch job went unanswered"))).collect()
}
