//! The SQLite writer thread and its group commit.
//!
//! All writes go through one thread that owns the one writing connection.
//! It takes every job waiting in its queue (up to [`MAX_BATCH`]), runs each
//! inside its own savepoint in one `BEGIN IMMEDIATE` transaction, commits
//! once, and only then answers each job. A job that fails rolls back to its
//! savepoint and does not disturb the others; a failed commit fails them all.
//! One `fsync` thus serves many requests, which is how durable writes
//! (`synchronous=FULL`) stay fast under load. The WAL is checkpointed
//! elsewhere ([`super::checkpoint`]): SQLite's own automatic checkpoint
//! would run inside the commit, and the batch would wait for it.

use rusqlite::Connection;
use std::panic::{AssertUnwindSafe, catch_unwind};

use std::time::Instant;
use tokio::sync::{mpsc, oneshot};

use super::{checkpoint, classify};
use crate::{ObserverSlot, StoreError, StoreResult};

/// Most jobs committed together.
pub(crate) const MAX_BATCH: usize = 128;

/// One unit of work for the writer.
pub(crate) trait Job: Send {
    /// Runs inside the batch transaction.
    fn run(&mut self, conn: &Connection) -> Outcome;
    /// Delivers the result once the batch is committed (or not).
    fn finish(self: Box<Self>, committed: &StoreResult<()>);
}

pub(crate) enum Outcome {
    /// The job's savepoint was released or rolled back cleanly.
    Clean,
    /// The transaction is in an unknown state: roll the batch back.
    Poisoned,
}

pub(crate) struct Typed<T, F> {
    f: Option<F>,
    out: Option<StoreResult<T>>,
    reply: Option<oneshot::Sender<StoreResult<T>>>,
}

impl<T, F> Typed<T, F> {
    pub(crate) fn new(f: F, reply: oneshot::Sender<StoreResult<T>>) -> Self {
        Typed { f: Some(f), out: None, reply: Some(reply) }
    }
}

impl<T, F> Job for Typed<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> StoreResult<T> + Send,
{
    fn run(&mut self, conn: &Connection) -> Outcome {
        let Some(f) = self.f.take() else { return Outcome::Clean };
        if let Err(e) = run_cached(conn, "SAVEPOINT job") {
            self.out = Some(Err(classify(e)));
            return Outcome::Poisoned;
        }
        let result = catch_unwind(AssertUnwindSafe(|| f(conn))).unwrap_or_else(|_| Err(StoreError::other("store job panicked")));
        let end = if result.is_ok() {
            run_cached(conn, "RELEASE job")
        } else {
            run_cached(conn, "ROLLBACK TO job").and_then(|()| run_cached(conn, "RELEASE job"))
        };
        match end {
            Ok(()) => {
                self.out = Some(result);
                Outcome::Clean
            }
            Err(e) => {
                self.out = Some(Err(classify(e)));
                Outcome::Poisoned
            }
        }
    }

    fn finish(mut self: Box<Self>, committed: &StoreResult<()>) {
        let out = crate::ops::batch_answer(self.out.take(), committed);
        if let Some(reply) = self.reply.take() {
            // The caller may have gone away (request cancelled): nothing to do.
            let _ = reply.send(out);
        }
    }
}

/// A statement without results, prepared once: the writer runs these around
/// every job and batch, and parsing them each time showed in the profile.
fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

/// The writer loop; returns when every sender is gone.
pub(crate) fn run(conn: Connection, mut rx: mpsc::Receiver<Box<dyn Job>>, observer: &ObserverSlot, checkpoints: &checkpoint::Writer) {
    let mut batch: Vec<Box<dyn Job>> = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = rx.blocking_recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let started = Instant::now();
        let committed = commit_batch(&conn, &mut batch);
        if let Some(o) = observer.get() {
            o.batch(batch.len(), started.elapsed(), committed.is_ok());
        }
        tracing::trace!(jobs = batch.len(), ok = committed.is_ok(), "sqlite batch committed");
        if let Err(e) = &committed {
            tracing::error!(error = %e, jobs = batch.len(), "sqlite batch failed");
        }
        for job in batch.drain(..) {
            job.finish(&committed);
        }
        if committed.is_ok() {
            checkpoints.committed();
        }
        // Outside any transaction, after the batch was answered: what the
        // checkpointer asked for, if anything (rarely; see `checkpoint`).
        checkpoints.between_batches(&conn);
    }
}

fn commit_batch(conn: &Connection, batch: &mut [Box<dyn Job>]) -> StoreResult<()> {
    run_cached(conn, "BEGIN IMMEDIATE").map_err(classify)?;
    for job in batch.iter_mut() {
        if let Outcome::Poisoned = job.run(conn) {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(StoreError::other("a job left the transaction unusable: the batch was rolled back"));
        }
    }
    run_cached(conn, "COMMIT").map_err(|e| {
        let _ = conn.execute_batch("ROLLBACK");
        classify(e)
    })
}
