//! Online snapshots of the SQLite store, for `strongroom admin backup`.
//!
//! `VACUUM INTO` copies the database as one read transaction sees it: a
//! consistent snapshot taken while the server keeps writing (WAL readers
//! never block the writer). The event-chain head is then read from the
//! snapshot itself, so it names exactly the events the file holds.

use rusqlite::{Connection, OpenFlags};
use std::path::Path;

use super::{BUSY_TIMEOUT_MS, classify, create_private_dir, file_error};
use crate::{ErrorKind, StoreError, StoreResult};

/// What a snapshot holds: its event-chain head and schema version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub event_seq: i64,
    pub event_hash: [u8; 32],
    pub schema_version: i64,
    pub bytes: u64,
}

/// Writes a snapshot of the database at `db` to `dest`, a new file created
/// with mode 0600 (an existing `dest` is refused), synced to disk.
pub fn snapshot(db: &Path, dest: &Path) -> StoreResult<Snapshot> {
    if !db.exists() {
        return Err(StoreError::new(ErrorKind::Unavailable, format!("{} does not exist", db.display())));
    }
    if let Some(dir) = dest.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_private_dir(dir).map_err(|e| file_error("creating", dir, &e))?;
    }
    create_empty_private(dest)?;
    let made = copy_into(db, dest).and_then(|()| read_snapshot(dest));
    if made.is_err() {
        let _ = std::fs::remove_file(dest);
    }
    made
}

/// Creates `path` empty with mode 0600; an existing file is an error.
fn create_empty_private(path: &Path) -> StoreResult<()> {
    strongroom_proto::files::write_private(path, b"").map_err(|e| file_error("creating", path, &e))
}

fn copy_into(db: &Path, dest: &Path) -> StoreResult<()> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(classify)?;
    conn.busy_timeout(std::time::Duration::from_millis(u64::from(BUSY_TIMEOUT_MS))).map_err(classify)?;
    let target = dest.to_str().ok_or_else(|| StoreError::other("the snapshot path is not UTF-8"))?;
    conn.execute("VACUUM INTO ?1", [target]).map_err(classify)?;
    std::fs::File::open(dest).and_then(|f| f.sync_all()).map_err(|e| file_error("syncing", dest, &e))
}

/// Checks a snapshot file and reads its event-chain head and schema version.
pub fn read_snapshot(path: &Path) -> StoreResult<Snapshot> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(classify)?;
    let check: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0)).map_err(classify)?;
    if check != "ok" {
        return Err(StoreError::corrupt(format!("{}: {check}", path.display())));
    }
    let (event_seq, hash): (i64, Vec<u8>) =
        conn.query_row("SELECT seq, hash FROM event_head WHERE id = 1", [], |r| Ok((r.get(0)?, r.get(1)?))).map_err(classify)?;
    let event_hash = hash.try_into().map_err(|_| StoreError::corrupt("event head hash"))?;
    let schema_version: i64 =
        conn.query_row("SELECT coalesce(max(version), 0) FROM schema_migrations", [], |r| r.get(0)).map_err(classify)?;
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    Ok(Snapshot { event_seq, event_hash, schema_version, bytes })
}

/// Copies snapshot `file` to `db` (which must not exist), mode 0600, synced.
pub fn restore_file(file: &Path, db: &Path) -> StoreResult<Snapshot> {
    let snap = read_snapshot(file)?;
    if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_private_dir(dir).map_err(|e| file_error("creating", dir, &e))?;
    }
    create_empty_private(db)?;
    let copy = || -> std::io::Result<()> {
        let mut from = std::fs::File::open(file)?;
        let mut to = std::fs::OpenOptions::new().write(true).truncate(true).open(db)?;
        std::io::copy(&mut from, &mut to)?;
        to.sync_all()
    };
    let copied = copy().map_err(|e| StoreError::other(format!("copying {} to {}: {e}", file.display(), db.display())));
    if copied.is_err() {
        let _ = std::fs::remove_file(db);
    }
    copied.map(|()| snap)
}
