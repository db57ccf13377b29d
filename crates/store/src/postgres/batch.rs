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

/// A batch's associations in one statement: [`put_association_sql`] over
/// the rows of `unnest`, one per job, so the executor starts once per batch
/// rather than once per job. `$1` the jobs' indexes in the batch, `$2`-`$9`
/// grant, user, entry, name, type, key id, sealed, lookup; `$10`-`$19` the
/// events. Answers a row per job, in index order: index, entry exists, may
/// write, stored. No two jobs may name the same (entry, name): one upsert
/// cannot change a row twice ([`together`] sees to it).
fn put_many_sql() -> String {
    format!(
        "WITH j AS (SELECT * FROM unnest($1::INT[], $2::TEXT[], $3::TEXT[], $4::BIGINT[], $5::TEXT[], $6::TEXT[], $7::BIGINT[], \
                    $8::BYTEA[], $9::BYTEA[], $10::BIGINT[], $11::BIGINT[], $12::TEXT[], $13::TEXT[], $14::TEXT[], $15::TEXT[], \
                    $16::TEXT[], $17::TEXT[], $18::TEXT[], $19::BYTEA[]) \
                    AS j(idx, grant_id, user_id, vault_id, name, value_type, key_id, sealed, lookup, \
                         seq, at, kind, identity, client_id, source, request_id, object, detail, hash)), \
         e AS (SELECT vault_id FROM vault_entries WHERE vault_id IN (SELECT vault_id FROM j) ORDER BY vault_id FOR UPDATE), \
         w AS (SELECT j.*, EXISTS (SELECT 1 FROM e WHERE e.vault_id = j.vault_id) AS found, {} AS allowed FROM j), \
         p AS (INSERT INTO associations (vault_id, name, value_type, key_id, sealed, lookup) \
               SELECT vault_id, name, value_type, key_id, sealed, lookup FROM w WHERE found AND allowed \
               ON CONFLICT (vault_id, name) DO UPDATE SET value_type = excluded.value_type, key_id = excluded.key_id, \
               sealed = excluded.sealed, lookup = excluded.lookup WHERE associations.lookup IS DISTINCT FROM excluded.lookup \
               RETURNING vault_id, name), \
         ev AS (INSERT INTO events (seq, at, kind, identity, client_id, source, request_id, object, detail, hash) \
                SELECT w.seq, w.at, w.kind, w.identity, w.client_id, w.source, w.request_id, w.object, w.detail, w.hash \
                FROM w JOIN p ON p.vault_id = w.vault_id AND p.name = w.name) \
         SELECT w.idx, w.found, w.allowed, EXISTS (SELECT 1 FROM p WHERE p.vault_id = w.vault_id AND p.name = w.name) \
         FROM w ORDER BY w.idx",
        sql::may_write_entry("j.grant_id", "j.user_id", "j.vault_id")
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
    let redeem = redeem_device_sql();
    let machine = machine_grant_sql();
    let sql = Statements { advance: &advance, put: &put, put_many: &put_many, redeem: &redeem, machine: &machine };
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
    redeem: &'a str,
    machine: &'a str,
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
    for s in [sql.advance, sql.put, sql.put_many, sql.redeem, sql.machine] {
        client.prepare_cached(s).await.map_err(classify)?;
    }
    let move_to = values![end.seq, &end.hash];
    let move_to = refs(&move_to);
    // The associations in one statement when they may be, every other job
    // in one of its own.
    let grouped = together(work);
    let singles = work.iter().zip(&places).enumerate().filter(|(i, _)| !grouped.get(*i).copied().unwrap_or(false));
    let (begun, locked, single, many, moved) = tokio::join!(
        client.batch_execute("BEGIN"),
        client.query_one(&lock, &[]),
        try_join_all(singles.map(|(i, (w, at))| async move { run(client, sql, w, at).await.map(|d| (i, d)) })),
        run_puts(client, sql.put_many, work, &places, &grouped),
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

/// Runs one job with its event at `at`; its answer, and whether it moved
/// the chain (wrote its event).
async fn run(c: &impl GenericClient, sql: &Statements<'_>, w: &Work, at: &Chain) -> StoreResult<(Done, bool)> {
    match w {
        Work::AdvancePair { grant_id, version, change, event } => {
            let mut params = advance_pair_values(grant_id, *version, change).to_vec();
            params.extend(codec::event_row(at.seq, event, &at.hash));
            let moved = one(c, sql.advance, &params, |r| r.int()).await? == 1;
            Ok((Done::Moved(moved), moved))
        }
        Work::RedeemDevice { code_hash, version, grant, event } => {
            let mut params = values![code_hash, *version].to_vec();
            params.extend(codec::grant_row(grant));
            params.extend(codec::event_row(at.seq, event, &at.hash));
            let moved = one(c, sql.redeem, &params, |r| r.int()).await? == 1;
            Ok((Done::Moved(moved), moved))
        }
        Work::MachineGrant { grant, replay, event } => {
            let mut params =
                values![grant.user_id.as_str(), replay.issuer.as_str(), replay.key.as_str(), replay.expires, event.at].to_vec();
            params.extend(codec::grant_row(grant));
            params.extend(codec::event_row(at.seq, event, &at.hash));
            let (disabled, recorded, granted) = one(c, sql.machine, &params, |r| Ok((r.opt_bool()?, r.bool()?, r.bool()?))).await?;
            let issue = match (disabled, recorded, granted) {
                (None, ..) => None,
                (Some(_), false, _) => Some(MachineIssue::Replayed),
                (Some(true), true, _) => Some(MachineIssue::Disabled),
                (Some(false), true, true) => Some(MachineIssue::Issued),
                (Some(false), true, false) => return Err(StoreError::other("a new JWT of an enabled identity wrote no grant")),
            };
            Ok((Done::Machine(issue), granted))
        }
        Work::PutAssociation { id, a, by, event } => {
            let mut params = values![by.grant_id.as_str(), by.user_id.as_str(), *id].to_vec();
            params.extend(codec::association_row(*id, a).into_iter().skip(1));
            params.extend(codec::event_row(at.seq, event, &at.hash));
            let (exists, allowed, stored) = one(c, sql.put, &params, |r| Ok((r.bool()?, r.bool()?, r.bool()?))).await?;
            Ok(put_outcome(exists, allowed, stored))
        }
    }
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

/// Which jobs of `work` go into the one statement of [`put_many_sql`]: its
/// associations, when there are at least two and no two name the same
/// (entry, name). Empty (nothing grouped) otherwise.
fn together(work: &[&Work]) -> Vec<bool> {
    let mut names = std::collections::HashSet::new();
    let mut puts = 0;
    for w in work {
        if let Work::PutAssociation { id, a, .. } = w {
            puts += 1;
            if !names.insert((id.0, a.name.as_str())) {
                return Vec::new();
            }
        }
    }
    if puts < 2 {
        return Vec::new();
    }
    work.iter().map(|w| matches!(w, Work::PutAssociation { .. })).collect()
}

/// Runs the grouped associations (none when `grouped` marks none) as one
/// statement, each with its event at its place; (index in `work`, answer,
/// moved) per job.
async fn run_puts(
    c: &impl GenericClient,
    sql: &str,
    work: &[&Work],
    places: &[Chain],
    grouped: &[bool],
) -> StoreResult<Vec<(usize, (Done, bool))>> {
    let jobs: Vec<(usize, &Work, &Chain)> = work
        .iter()
        .zip(places)
        .enumerate()
        .filter(|(i, _)| grouped.get(*i).copied().unwrap_or(false))
        .map(|(i, (w, at))| (i, *w, at))
        .collect();
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    let n = jobs.len();
    let (mut idx, mut grant, mut user, mut entry, mut name, mut vtype, mut key_id, mut sealed, mut lookup) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let (mut seq, mut at, mut kind, mut identity, mut client_id, mut source, mut request_id, mut object, mut detail, mut hash) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for (i, w, place) in &jobs {
        let Work::PutAssociation { id, a, by, event: e } = w else {
            return Err(StoreError::other("a grouped job is not an association"));
        };
        idx.push(i32::try_from(*i).map_err(|_| StoreError::other("batch index"))?);
        grant.push(by.grant_id.as_str());
        user.push(by.user_id.as_str());
        entry.push(id.0);
        name.push(a.name.as_str());
        vtype.push(a.value_type.as_str());
        key_id.push(a.key_id);
        sealed.push(a.sealed.as_slice());
        lookup.push(&a.lookup[..]);
        seq.push(place.seq);
        at.push(e.at.millis());
        kind.push(e.kind.as_str());
        identity.push(e.identity.as_str());
        client_id.push(e.client_id.as_str());
        source.push(e.source.as_str());
        request_id.push(e.request_id.as_str());
        object.push(e.object.as_str());
        detail.push(e.detail.as_str());
        hash.push(&place.hash[..]);
    }
    let st = c.prepare_cached(sql).await.map_err(classify)?;
    let rows = c
        .query(
            &st,
            &[
                &idx,
                &grant,
                &user,
                &entry,
                &name,
                &vtype,
                &key_id,
                &sealed,
                &lookup,
                &seq,
                &at,
                &kind,
                &identity,
                &client_id,
                &source,
                &request_id,
                &object,
                &detail,
                &hash,
            ],
        )
        .await
        .map_err(classify)?;
    if rows.len() != n {
        return Err(StoreError::other(format!("{n} associations in one statement, {} answers", rows.len())));
    }
    rows.iter()
        .map(|r| {
            let mut r = Cols::new(r);
            let i = usize::try_from(r.int()?).map_err(|_| StoreError::other("batch index"))?;
            Ok((i, put_outcome(r.bool()?, r.bool()?, r.bool()?)))
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
