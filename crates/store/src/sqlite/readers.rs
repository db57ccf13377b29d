//! Reader threads: a fixed few threads, each owning one read-only
//! connection whose prepared statements stay cached for its lifetime.
//!
//! Reads used to run on tokio's blocking pool with a pool of connections:
//! under 32 concurrent requests that kept over a hundred threads alive,
//! opened connections (and re-parsed the schema) about 1,300 times a second
//! and re-prepared every statement. Here a read is one hop to a thread that
//! already has everything warm.

use rusqlite::{Connection, OpenFlags};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::{Arc, Mutex, mpsc};
use tokio::sync::oneshot;

use super::classify;
use crate::{StoreError, StoreResult};

type ReadJob = Box<dyn FnOnce(&Connection) + Send>;

pub(super) struct Readers {
    jobs: mpsc::Sender<ReadJob>,
}

impl Readers {
    /// Opens `n` connections and starts a thread for each. The threads end
    /// when the store is dropped.
    pub(super) fn start(path: &Path, n: usize, busy_timeout_ms: u32, statements: usize) -> StoreResult<Readers> {
        let (tx, rx) = mpsc::channel::<ReadJob>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..n.max(1) {
            let conn =
                Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(classify)?;
            conn.busy_timeout(std::time::Duration::from_millis(u64::from(busy_timeout_ms))).map_err(classify)?;
            conn.set_prepared_statement_cache_capacity(statements);
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("sqlite-reader-{i}"))
                .spawn(move || {
                    loop {
                        let job = match rx.lock() {
                            Ok(guard) => guard.recv(),
                            Err(_) => return,
                        };
                        match job {
                            Ok(job) => job(&conn),
                            Err(_) => return,
                        }
                    }
                })
                .map_err(|e| StoreError::other(format!("starting a reader thread: {e}")))?;
        }
        Ok(Readers { jobs: tx })
    }

    /// Runs `f` on a reader connection inside a read transaction.
    pub(super) async fn run<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        let job: ReadJob = Box::new(move |conn| {
            let out = catch_unwind(AssertUnwindSafe(|| in_read_transaction(conn, f)))
                .unwrap_or_else(|_| Err(StoreError::other("store read panicked")));
            // The caller may have gone away (request cancelled).
            let _ = reply.send(out);
        });
        self.jobs.send(job).map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }
}

fn in_read_transaction<T>(conn: &Connection, f: impl FnOnce(&Connection) -> StoreResult<T>) -> StoreResult<T> {
    let begin = |c: &Connection| c.prepare_cached("BEGIN").and_then(|mut s| s.execute([]));
    if begin(conn).is_err() {
        // A transaction left open by a failed COMMIT would fail every later
        // read on this thread: end it and start again.
        let _ = conn.execute_batch("ROLLBACK");
        begin(conn).map_err(classify)?;
    }
    let out = f(conn);
    // A read-only transaction: ending it cannot lose anything.
    let _ = conn.prepare_cached("COMMIT").and_then(|mut s| s.execute([]));
    out
}
