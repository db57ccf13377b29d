//! The WAL checkpoint, off the request path.
//!
//! SQLite's automatic checkpoint runs inside the commit that takes the WAL
//! past 1,000 pages: that commit copies the WAL into the database file and
//! `fsync`s it before it returns, and the writer's whole batch (every request
//! in it) waits. Here the writer's connection has it off
//! (`wal_autocheckpoint=0`), and a thread of its own with a connection of its
//! own runs `PASSIVE` checkpoints a little after commits: they copy what the
//! readers allow and never block the writer or a reader.
//!
//! A WAL file starts again from its beginning only when a write transaction
//! begins with the whole WAL copied; under a steady stream of batches the
//! background checkpoint never ends between two of them, so once the WAL
//! holds [`RESTART_FRAMES`] pages the checkpointer asks the writer to finish
//! the copy itself between two batches ([`Want::Finish`]): a `PASSIVE`
//! checkpoint of the few pages committed since the background one, after
//! which the writer's next transaction writes from the WAL's start. Should
//! the WAL still reach [`LIMIT_FRAMES`] (a reader holding an old snapshot,
//! a disk slower than the writes), the writer runs a `TRUNCATE` checkpoint,
//! which waits for the readers and blocks writes until the WAL is copied and
//! emptied: the bound on the WAL's size, at the price of one stall.

use rusqlite::Connection;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::{Duration, Instant};

use super::classify;
use crate::{StoreError, StoreResult};

/// Pages in the WAL past which the writer finishes a checkpoint between two
/// batches so that the WAL starts again: 32 MiB with 4 KiB pages (SQLite's
/// automatic point is 1,000 pages). Each finish is a short wait for the
/// batch after it (the pages of the last 100 ms and one `fsync` of the
/// database file); a larger WAL makes them rarer and costs readers nothing,
/// since they look up only the pages not yet copied.
pub(crate) const RESTART_FRAMES: i64 = 8 * 1024;
/// Pages in the WAL past which the writer empties it with a blocking
/// `TRUNCATE` checkpoint: 256 MiB with 4 KiB pages, the bound on the WAL's
/// size (give or take what 100 ms of writes add).
pub(crate) const LIMIT_FRAMES: i64 = 64 * 1024;
/// The least time between two background checkpoints: each copies what the
/// commits of this time wrote, once, however many commits wrote a page.
const PAUSE: Duration = Duration::from_millis(100);

/// What the checkpointer asks of the writer, between two batches.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(crate) enum Want {
    Nothing = 0,
    /// A `PASSIVE` checkpoint of what the background one left, so the WAL starts again.
    Finish = 1,
    /// The WAL is past [`LIMIT_FRAMES`]: a `TRUNCATE` checkpoint.
    Truncate = 2,
}

/// The writer's side: tells the checkpointer of commits, and does what it asks.
pub(crate) struct Writer {
    commits: SyncSender<()>,
    want: Arc<AtomicU8>,
}

/// A checkpoint's answer: whether it was kept from finishing, the WAL's pages, and how many of them are in the database file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Progress {
    pub(crate) busy: bool,
    pub(crate) log: i64,
    pub(crate) copied: i64,
}

/// Runs `PRAGMA wal_checkpoint(mode)` on `conn`.
pub(crate) fn checkpoint(conn: &Connection, mode: &str) -> rusqlite::Result<Progress> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| {
        Ok(Progress { busy: r.get::<_, i64>(0)? != 0, log: r.get(1)?, copied: r.get(2)? })
    })
}

impl Writer {
    /// A commit happened (never blocks: one pending notice is enough).
    pub(crate) fn committed(&self) {
        match self.commits.try_send(()) {
            Ok(()) | Err(TrySendError::Full(())) | Err(TrySendError::Disconnected(())) => {}
        }
    }

    /// Between two batches (no transaction open on `conn`): what the
    /// checkpointer asked for, if anything.
    pub(crate) fn between_batches(&self, conn: &Connection) {
        let want = match self.want.swap(Want::Nothing as u8, Ordering::AcqRel) {
            1 => Want::Finish,
            2 => Want::Truncate,
            _ => return,
        };
        let started = Instant::now();
        let mode = if want == Want::Truncate { "TRUNCATE" } else { "PASSIVE" };
        match checkpoint(conn, mode) {
            Ok(p) if want == Want::Truncate => tracing::warn!(
                pages = p.log,
                copied = p.copied,
                busy = p.busy,
                ms = started.elapsed().as_millis() as u64,
                limit = LIMIT_FRAMES,
                "the SQLite WAL reached its bound: writes waited for a blocking checkpoint"
            ),
            Ok(p) => tracing::debug!(
                pages = p.log,
                copied = p.copied,
                busy = p.busy,
                us = started.elapsed().as_micros() as u64,
                "the writer finished a WAL checkpoint"
            ),
            Err(e) => tracing::warn!(error = %classify(e), mode, "a WAL checkpoint on the writer failed"),
        }
    }
}

/// Starts the checkpointer thread on its own connection to `path`; it ends
/// when the writer's side is dropped.
pub(crate) fn start(path: &Path, busy_timeout: Duration) -> StoreResult<Writer> {
    let conn = Connection::open(path).map_err(classify)?;
    conn.busy_timeout(busy_timeout).map_err(classify)?;
    // Its checkpoints sync the database file as the writer's commits sync the WAL.
    conn.execute_batch("PRAGMA synchronous=FULL; PRAGMA wal_autocheckpoint=0;").map_err(classify)?;
    let (commits, rx) = sync_channel(1);
    let want = Arc::new(AtomicU8::new(Want::Nothing as u8));
    let asked = want.clone();
    std::thread::Builder::new()
        .name("sqlite-checkpoint".into())
        .spawn(move || run(&conn, &rx, &asked))
        .map_err(|e| StoreError::other(format!("starting the checkpoint thread: {e}")))?;
    Ok(Writer { commits, want })
}

fn run(conn: &Connection, commits: &Receiver<()>, want: &AtomicU8) {
    // Each round: wait for a commit, copy what is in the WAL, then rest a
    // little so that a page many commits wrote is copied once.
    while commits.recv().is_ok() {
        let started = Instant::now();
        match pass(conn, want) {
            Ok(p) => tracing::trace!(
                pages = p.log,
                copied = p.copied,
                busy = p.busy,
                us = started.elapsed().as_micros() as u64,
                "WAL checkpoint"
            ),
            Err(e) => tracing::warn!(error = %classify(e), "a background WAL checkpoint failed"),
        }
        #[allow(clippy::disallowed_methods)] // Paces a background thread; nothing waits on it.
        std::thread::sleep(PAUSE);
    }
}

/// One background checkpoint, and what it asks of the writer.
fn pass(conn: &Connection, want: &AtomicU8) -> rusqlite::Result<Progress> {
    let p = checkpoint(conn, "PASSIVE")?;
    let ask = if p.log >= LIMIT_FRAMES {
        Want::Truncate
    } else if p.log >= RESTART_FRAMES {
        Want::Finish
    } else {
        Want::Nothing
    };
    if ask != Want::Nothing {
        // Never lower a stronger request the writer has not seen yet.
        want.fetch_max(ask as u8, Ordering::AcqRel);
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store-like database: the writer's connection without automatic
    /// checkpoints, and the checkpointer's; no `fsync` (the test is about
    /// where pages go, not durability).
    fn open(dir: &Path) -> (Connection, Connection, std::path::PathBuf) {
        let path = dir.join("t.db");
        let writer = Connection::open(&path).unwrap();
        writer
            .execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; PRAGMA wal_autocheckpoint=0; CREATE TABLE t (b BLOB)")
            .unwrap();
        let background = Connection::open(&path).unwrap();
        background.execute_batch("PRAGMA synchronous=OFF; PRAGMA wal_autocheckpoint=0").unwrap();
        (writer, background, path)
    }

    /// `n` transactions of a page-sized row each.
    fn write(c: &Connection, n: usize) {
        for _ in 0..n {
            c.execute("INSERT INTO t (b) VALUES (zeroblob(4000))", []).unwrap();
        }
    }

    fn size(p: &Path) -> u64 {
        std::fs::metadata(p).map_or(0, |m| m.len())
    }

    fn wal(path: &Path) -> std::path::PathBuf {
        let mut p = path.as_os_str().to_owned();
        p.push("-wal");
        p.into()
    }

    #[test]
    fn commits_leave_the_wal_alone_and_the_writer_finishes_a_checkpoint_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, background, path) = open(dir.path());
        let db_before = size(&path);
        let half = RESTART_FRAMES as usize / 2 + 100;
        write(&writer, half);
        // A reader's snapshot keeps the pages after it in the WAL, as the
        // writer's next batches do while a background checkpoint runs.
        let reader = Connection::open(&path).unwrap();
        reader.execute_batch("BEGIN").unwrap();
        let _: i64 = reader.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
        write(&writer, half);
        // No commit copied anything: the database file did not grow.
        assert_eq!(size(&path), db_before, "a commit ran a checkpoint");
        let want = AtomicU8::new(0);
        let p = pass(&background, &want).unwrap();
        assert!(p.log >= 2 * half as i64 && p.copied >= half as i64 && p.copied < p.log, "{p:?}");
        assert!(size(&path) > db_before + 4096 * half as u64 / 2, "the background checkpoint copied what it could");
        assert_eq!(want.load(Ordering::Acquire), Want::Finish as u8, "past RESTART_FRAMES the writer is asked to finish");
        reader.execute_batch("COMMIT").unwrap();

        // Commits alone never start the WAL again while pages are left in
        // it: the file grows.
        let grown = size(&wal(&path));
        write(&writer, 20);
        assert!(size(&wal(&path)) > grown, "the WAL went on growing");
        let grown = size(&wal(&path));
        let (commits, _rx) = sync_channel(1);
        let w = Writer { commits, want: Arc::new(AtomicU8::new(Want::Finish as u8)) };
        w.between_batches(&writer);
        assert_eq!(w.want.load(Ordering::Acquire), Want::Nothing as u8, "the request was taken");
        // The writer's checkpoint copied the rest: the next transaction writes from the WAL's start.
        write(&writer, 1);
        let p = checkpoint(&background, "PASSIVE").unwrap();
        assert!(p.log < 10, "the WAL started again: {p:?}");
        assert_eq!(size(&wal(&path)), grown, "the WAL file is written again from its start");

        // Past the bound: TRUNCATE empties the WAL file.
        w.want.store(Want::Truncate as u8, Ordering::Release);
        write(&writer, 5);
        w.between_batches(&writer);
        assert_eq!(size(&wal(&path)), 0, "TRUNCATE left the WAL empty");
        let n: i64 = writer.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 2 * half as i64 + 26, "every row is there");
    }

    #[test]
    fn the_background_asks_for_truncation_past_the_bound_and_never_lowers_a_request() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, background, _) = open(dir.path());
        write(&writer, 10);
        let want = AtomicU8::new(Want::Truncate as u8);
        pass(&background, &want).unwrap();
        assert_eq!(want.load(Ordering::Acquire), Want::Truncate as u8);
        let want = AtomicU8::new(0);
        pass(&background, &want).unwrap();
        assert_eq!(want.load(Ordering::Acquire), Want::Nothing as u8, "a small WAL asks nothing");
    }
}
