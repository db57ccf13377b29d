//! Group commit for the rest of the request path's writes on PostgreSQL:
//! a JWT's first grant and the certificate grant, the password grant's
//! sign-in and grant, revocations, the vault's writes and the certificates'
//! (issuances, revocations, objects) — every method the auth, vault and
//! certificate lists run as a write (`in_batch!`).
//!
//! One transaction per request would take the event chain's head lock once
//! per request and hold it through that request's commit (its WAL flush):
//! such writes run one flush after another, about seven times slower than
//! the refreshes of [`super::batch`]. Here one writer task per store takes
//! every waiting job, begins one transaction, locks the head first (the one
//! lock order every write transaction keeps), runs each job's body inside a
//! savepoint of its own, commits once, and only then answers each job. A
//! body that fails rolls back to its savepoint (its caller gets its error;
//! the others go on), exactly as its own transaction would have rolled
//! back; a body that answers `Ok` keeps its writes, as its own transaction
//! would have committed them. The jobs run one after the other, each seeing
//! the ones before it, so the batch is the serial order the head's lock
//! would have imposed anyway; every single-use rule stays one conditional
//! write whose row count decides. Nobody is answered before the commit.

use deadpool_postgres::{Object, Pool};
use futures_util::future::BoxFuture;
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};

use super::{Pg, checkout, classify, release, spoiled};
use crate::codec::{self, Cols, Value, values};
use crate::ops::{Conn, KeptHead};
use crate::sql::{self, Sql};
use crate::{ObserverSlot, StoreError, StoreResult};

/// Jobs per transaction at most.
const MAX_BATCH: usize = 64;
/// Jobs waiting at most (callers wait for room beyond it).
const QUEUE: usize = 1024;

/// The batch's transaction as its jobs' bodies see it: the connection, and
/// the event chain's head, locked at `BEGIN` and kept in memory until the
/// commit moves it once ([`Conn::kept_head`]).
pub(crate) struct Grouped<'c> {
    pg: Pg<'c, Object>,
    head: KeptHead,
}

impl Conn for Grouped<'_> {
    async fn execute(&self, sql: &Sql, params: &[Value<'_>]) -> StoreResult<u64> {
        self.pg.execute(sql, params).await
    }

    async fn rows<F>(&self, sql: &Sql, params: &[Value<'_>], visit: F) -> StoreResult<()>
    where
        F: FnMut(&mut Cols<'_>) -> StoreResult<bool> + Send,
    {
        self.pg.rows(sql, params, visit).await
    }

    fn kept_head(&self) -> Option<&KeptHead> {
        Some(&self.head)
    }
}

/// A job's body: a store method's shared body over the batch's transaction.
pub(crate) trait Body<T>: for<'c> FnOnce(&'c Grouped<'c>) -> BoxFuture<'c, StoreResult<T>> + Send + 'static {}
impl<T, F> Body<T> for F where F: for<'c> FnOnce(&'c Grouped<'c>) -> BoxFuture<'c, StoreResult<T>> + Send + 'static {}

trait Job: Send {
    /// Whether the caller went away (its request ended): its job need not run.
    fn is_closed(&self) -> bool;
    /// Runs the body inside the batch's transaction; whether it answered `Ok`.
    fn run<'c>(&'c mut self, c: &'c Grouped<'c>) -> BoxFuture<'c, bool>;
    /// Answers the caller once the batch committed (or did not).
    fn finish(self: Box<Self>, committed: &StoreResult<()>);
}

struct Typed<T, F> {
    body: Option<F>,
    out: Option<StoreResult<T>>,
    reply: Option<oneshot::Sender<StoreResult<T>>>,
}

impl<T: Send + 'static, F: Body<T>> Job for Typed<T, F> {
    fn is_closed(&self) -> bool {
        self.reply.as_ref().is_none_or(oneshot::Sender::is_closed)
    }

    fn run<'c>(&'c mut self, c: &'c Grouped<'c>) -> BoxFuture<'c, bool> {
        Box::pin(async move {
            let Some(body) = self.body.take() else { return true };
            let out = body(c).await;
            let ok = out.is_ok();
            self.out = Some(out);
            ok
        })
    }

    fn finish(mut self: Box<Self>, committed: &StoreResult<()>) {
        let out = crate::ops::batch_answer(self.out.take(), committed);
        if let Some(reply) = self.reply.take() {
            // A caller that went away needs no answer.
            let _ = reply.send(out);
        }
    }
}

/// The queue to a store's group-commit task.
#[derive(Clone)]
pub(crate) struct Group {
    jobs: mpsc::Sender<Box<dyn Job>>,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group").finish_non_exhaustive()
    }
}

impl Group {
    /// Starts the writer task on the current tokio runtime; `observer` is told each batch's size and time.
    pub(super) fn spawn(pool: Pool, observer: ObserverSlot) -> Group {
        let (jobs, rx) = mpsc::channel(QUEUE);
        tokio::spawn(writer(pool, rx, observer));
        Group { jobs }
    }

    /// Runs `body` in the next batch's transaction; its answer once that committed.
    pub(crate) async fn run<T: Send + 'static>(&self, body: impl Body<T>) -> StoreResult<T> {
        let (reply, rx) = oneshot::channel();
        let job: Box<dyn Job> = Box::new(Typed { body: Some(body), out: None, reply: Some(reply) });
        self.jobs.send(job).await.map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }
}

async fn writer(pool: Pool, mut rx: mpsc::Receiver<Box<dyn Job>>, observer: ObserverSlot) {
    let mut jobs: Vec<Box<dyn Job>> = Vec::with_capacity(MAX_BATCH);
    // The writer keeps its connection: a batch does not queue behind the
    // requests' reads for one.
    let mut conn: Option<Object> = None;
    while rx.recv_many(&mut jobs, MAX_BATCH).await > 0 {
        jobs.retain(|j| !j.is_closed());
        if jobs.is_empty() {
            continue;
        }
        let started = Instant::now();
        let committed = run_batch(&pool, &mut conn, &mut jobs).await;
        if let Some(o) = observer.get() {
            o.batch(jobs.len(), started.elapsed(), committed.is_ok());
        }
        for job in jobs.drain(..) {
            job.finish(&committed);
        }
    }
}

async fn run_batch(pool: &Pool, conn: &mut Option<Object>, jobs: &mut [Box<dyn Job>]) -> StoreResult<()> {
    let client = match conn.take() {
        Some(c) if !c.is_closed() => c,
        _ => checkout(pool).await?,
    };
    let out = in_one_transaction(&client, jobs).await;
    if out.is_err() && !spoiled(&out) {
        // A failure outside the jobs' own (their savepoints end those):
        // nothing of the batch stays.
        let _ = client.batch_execute("ROLLBACK").await;
    }
    if spoiled(&out) {
        release(client, &out);
    } else {
        *conn = Some(client);
    }
    out
}

/// `BEGIN`, the head's lock, each job in a savepoint, the head's move,
/// `COMMIT`. The savepoint commands travel with the next job's first
/// statement (one pipeline), and the head is read once and written once, so
/// a job costs its own statements' round trips and one per event.
async fn in_one_transaction(client: &Object, jobs: &mut [Box<dyn Job>]) -> StoreResult<()> {
    let lock = client.prepare_cached(sql::EVENT_HEAD.postgres()).await.map_err(classify)?;
    let (begun, locked) = tokio::join!(client.batch_execute("BEGIN"), client.query_one(&lock, &[]));
    begun.map_err(classify)?;
    let start = codec::head(&mut Cols::new(&locked.map_err(classify)?))?;
    let grouped = Grouped { pg: Pg(client), head: KeptHead::new(start) };
    let mut last_ok = None;
    for job in jobs.iter_mut() {
        let before = match last_ok {
            None => "SAVEPOINT job",
            Some(true) => "RELEASE job; SAVEPOINT job",
            Some(false) => "ROLLBACK TO job; RELEASE job; SAVEPOINT job",
        };
        let head = grouped.head.get();
        let (saved, ok) = tokio::join!(client.batch_execute(before), job.run(&grouped));
        saved.map_err(classify)?;
        if !ok {
            // Its savepoint is rolled back: so are its events.
            grouped.head.set(head);
        }
        last_ok = Some(ok);
    }
    let end = match last_ok {
        Some(false) => "ROLLBACK TO job; RELEASE job",
        Some(true) => "RELEASE job",
        None => "",
    };
    let head = grouped.head.get();
    let move_to = values![head.0, &head.1];
    let (ended, moved) = tokio::join!(client.batch_execute(end), async {
        if head == start { Ok(()) } else { grouped.pg.execute(&sql::MOVE_HEAD, &move_to).await.map(drop) }
    });
    ended.map_err(classify)?;
    moved?;
    client.batch_execute("COMMIT").await.map_err(classify)
}
