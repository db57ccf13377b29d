//! The embedded SQLite store: one file in the data directory, WAL journal,
//! `synchronous=FULL`, one writer thread with group commit ([`writer`]), a
//! few reader threads, each with its own connection and statement cache
//! ([`readers`]), and a thread that checkpoints the WAL outside the writer's
//! commits ([`checkpoint`]).
//!
//! Here: opening the file privately, migrations, the connection trait of
//! [`crate::ops`] over a `rusqlite::Connection` ([`Lite`]) and the
//! classification of rusqlite's errors ([`classify`]); the store's four
//! parts and the copier are `store.rs`, each method a job on the writer or a
//! reader running its shared body.

mod checkpoint;
mod readers;
mod snapshot;
mod store;
mod writer;

pub use snapshot::{Snapshot, read_snapshot, restore_file, snapshot};

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, params, params_from_iter};
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::{mpsc, oneshot};

use crate::codec::{Cols, Row, Value};
use crate::ops::Conn;
use crate::sql::Sql;
use crate::{ErrorKind, Migration, StoreError, StoreResult};
use writer::{Job, Typed};

pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration { version: 1, name: "0001_auth", sql: include_str!("../../migrations/sqlite/0001_auth.sql") },
    Migration { version: 2, name: "0002_vault", sql: include_str!("../../migrations/sqlite/0002_vault.sql") },
    Migration { version: 3, name: "0003_pairs", sql: include_str!("../../migrations/sqlite/0003_pairs.sql") },
    Migration { version: 4, name: "0004_named_keys", sql: include_str!("../../migrations/sqlite/0004_named_keys.sql") },
    Migration { version: 5, name: "0005_master_key_check", sql: include_str!("../../migrations/sqlite/0005_master_key_check.sql") },
    Migration { version: 6, name: "0006_sign_in_limits", sql: include_str!("../../migrations/sqlite/0006_sign_in_limits.sql") },
    Migration { version: 7, name: "0007_grant_keyed_tokens", sql: include_str!("../../migrations/sqlite/0007_grant_keyed_tokens.sql") },
    Migration { version: 8, name: "0008_machine_grants", sql: include_str!("../../migrations/sqlite/0008_machine_grants.sql") },
    Migration { version: 9, name: "0009_people", sql: include_str!("../../migrations/sqlite/0009_people.sql") },
    Migration { version: 10, name: "0010_tree", sql: include_str!("../../migrations/sqlite/0010_tree.sql") },
    Migration { version: 11, name: "0011_group_owners", sql: include_str!("../../migrations/sqlite/0011_group_owners.sql") },
    Migration { version: 12, name: "0012_integration_version", sql: include_str!("../../migrations/sqlite/0012_integration_version.sql") },
    Migration { version: 13, name: "0013_console_epochs", sql: include_str!("../../migrations/sqlite/0013_console_epochs.sql") },
    Migration { version: 14, name: "0014_one_token_layout", sql: include_str!("../../migrations/sqlite/0014_one_token_layout.sql") },
    Migration { version: 15, name: "0015_certificates", sql: include_str!("../../migrations/sqlite/0015_certificates.sql") },
    Migration {
        version: 16,
        name: "0016_certificate_templates",
        sql: include_str!("../../migrations/sqlite/0016_certificate_templates.sql"),
    },
    Migration { version: 17, name: "0017_certificate_fields", sql: include_str!("../../migrations/sqlite/0017_certificate_fields.sql") },
    Migration {
        version: 18,
        name: "0018_certificate_approval",
        sql: include_str!("../../migrations/sqlite/0018_certificate_approval.sql"),
    },
];

/// Milliseconds a connection waits for another process's lock (the admin
/// CLI writing while the server runs).
const BUSY_TIMEOUT_MS: u32 = 5000;
/// Reader threads, each with its own connection. Reads are short indexed
/// lookups; more threads than cores only add switching.
const READERS: usize = 2;
/// Prepared statements kept per connection: every statement of the store
/// fits, so none is parsed twice.
const STATEMENT_CACHE: usize = 128;

#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    writer: mpsc::Sender<Box<dyn Job>>,
    readers: readers::Readers,
    settings: String,
    observer: crate::ObserverSlot,
    /// Reads and writes asked for and not yet answered (for [`PoolStatus`]).
    reads: AtomicUsize,
    writes: AtomicUsize,
}

/// Counts one job in flight while alive (a cancelled request still counts down).
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn new(n: &'a AtomicUsize) -> Self {
        n.fetch_add(1, Ordering::Relaxed);
        InFlight(n)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.inner.path).finish()
    }
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_millis(u64::from(BUSY_TIMEOUT_MS)))?;
    conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")
}

fn migrate(conn: &Connection) -> StoreResult<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
    )
    .map_err(classify)?;
    for m in MIGRATIONS {
        let done: Option<i64> = conn
            .query_row("SELECT version FROM schema_migrations WHERE version = ?1", [m.version], |r| r.get(0))
            .optional()
            .map_err(classify)?;
        if done.is_some() {
            continue;
        }
        conn.execute_batch("BEGIN IMMEDIATE").map_err(classify)?;
        let applied = conn.execute_batch(m.sql).and_then(|()| {
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, strftime('%s','now'))",
                params![m.version, m.name],
            )
        });
        match applied {
            Ok(_) => conn.execute_batch("COMMIT").map_err(classify)?,
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                // Another process may have applied it in the meantime.
                let done: Option<i64> = conn
                    .query_row("SELECT version FROM schema_migrations WHERE version = ?1", [m.version], |r| r.get(0))
                    .optional()
                    .map_err(classify)?;
                if done.is_none() {
                    return Err(classify(e));
                }
            }
        }
    }
    Ok(())
}

pub(crate) use strongroom_proto::files::create_private_dir;

/// Makes the database file private before SQLite opens it: creates it empty
/// with mode 0600 (an empty file is an empty database), or takes group and
/// other permissions away from an existing one.
fn make_private(path: &Path) -> std::io::Result<()> {
    match strongroom_proto::files::write_private(path, b"") {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => tighten(path),
        other => other,
    }
}

/// Chmods `path` to 0600 if group or others have any permission on it
/// (logged); nothing if it does not exist.
fn tighten(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = match std::fs::metadata(path) {
            Ok(m) => m.permissions().mode() & 0o777,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        if mode & 0o077 != 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
            tracing::info!(path = %path.display(), was = format!("{mode:o}"), "database file was open to other users: now mode 600");
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// The file `strongroom serve` locks beside a SQLite database while it
/// serves it: `<database>-serve.lock`, holding the server's process id.
pub fn serve_lock_path(db: &Path) -> PathBuf {
    let mut p = db.as_os_str().to_owned();
    p.push("-serve.lock");
    p.into()
}

/// Held while a `strongroom serve` process serves a SQLite store: a second
/// one is refused ([`lock_for_serving`]), and `admin migrate-store` sees
/// that its source is being served ([`served_by`]). The lock is the
/// operating system's (`flock`), so it ends with the process however that
/// ends; the file stays.
#[derive(Debug)]
pub struct ServeLock {
    _file: std::fs::File,
}

/// Takes the serve lock of the database at `db` (creating its file, mode
/// 0600). Held by another process: [`StoreError::InUse`] naming its
/// process id.
pub fn lock_for_serving(db: &Path) -> StoreResult<ServeLock> {
    use std::io::Write as _;
    let path = serve_lock_path(db);
    let mut file = strongroom_proto::files::open_private(&path).map_err(|e| file_error("opening", &path, &e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Err(StoreError::InUse(in_use_message(db, &path))),
        Err(std::fs::TryLockError::Error(e)) => return Err(file_error("locking", &path, &e)),
    }
    file.set_len(0)
        .and_then(|()| file.write_all(format!("{}\n", std::process::id()).as_bytes()))
        .map_err(|e| file_error("writing", &path, &e))?;
    Ok(ServeLock { _file: file })
}

/// Says who serves `db`, from the process id its lock file at `lock` holds.
fn in_use_message(db: &Path, lock: &Path) -> String {
    let holder = std::fs::read_to_string(lock).ok().map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
    let who = holder.map_or_else(|| "another process".to_owned(), |pid| format!("process {pid}"));
    format!(
        "{} is being served by {who} (strongroom serve): a SQLite store has one server; stop that one first \
         (several servers share a PostgreSQL database instead)",
        db.display()
    )
}

/// Whether a `strongroom serve` holds the serve lock of the database at
/// `db` now: what to tell people, or `None`. Creates nothing.
pub fn served_by(db: &Path) -> Option<String> {
    let path = serve_lock_path(db);
    let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).ok()?;
    match file.try_lock() {
        Ok(()) => None,
        Err(std::fs::TryLockError::WouldBlock) => Some(in_use_message(db, &path)),
        Err(std::fs::TryLockError::Error(_)) => None,
    }
}

/// Whether `conn`'s database has Strongroom's migrations table.
fn has_store(conn: &Connection) -> StoreResult<bool> {
    crate::ops::at_once(crate::ops::flag(&Lite(conn), &crate::sql::HAS_STORE, &[]))
}

fn not_a_store(path: &Path) -> StoreError {
    StoreError::NoStore(format!("{} is not a Strongroom database (it has no schema_migrations table)", path.display()))
}

/// What is at `path`, changing nothing: no file is [`crate::Probe::Absent`],
/// a file without Strongroom's tables is an error, a store says its schema
/// version.
pub(crate) fn probe(path: &Path) -> StoreResult<crate::Probe> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(crate::Probe::Absent);
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(classify)?;
    conn.busy_timeout(std::time::Duration::from_millis(u64::from(BUSY_TIMEOUT_MS))).map_err(classify)?;
    if !has_store(&conn)? {
        return Err(not_a_store(path));
    }
    let version = crate::ops::at_once(crate::ops::query_one(&Lite(&conn), &crate::sql::SCHEMA_VERSION, &[], |r| r.opt_int()))?;
    Ok(crate::Probe::Present { version })
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and applies migrations.
    pub fn open(path: &Path) -> StoreResult<SqliteStore> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir).map_err(|e| file_error("creating", dir, &e))?;
        }
        make_private(path).map_err(|e| file_error("securing", path, &e))?;
        let conn = Connection::open(path).map_err(classify)?;
        Self::start(path, conn, crate::Schema::Migrate)
    }

    /// Opens a database file that holds a store already, applying newer
    /// migrations or requiring none (`schema`); creates no file or
    /// directory. No file there, or a file without Strongroom's tables:
    /// [`StoreError::NoStore`].
    pub(crate) fn open_existing(path: &Path, schema: crate::Schema) -> StoreResult<SqliteStore> {
        if std::fs::symlink_metadata(path).is_err() {
            return Err(StoreError::NoStore(format!("no database at {}", path.display())));
        }
        tighten(path).map_err(|e| file_error("securing", path, &e))?;
        let conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(classify)?;
        conn.busy_timeout(std::time::Duration::from_millis(u64::from(BUSY_TIMEOUT_MS))).map_err(classify)?;
        if !has_store(&conn)? {
            return Err(not_a_store(path));
        }
        Self::start(path, conn, schema)
    }

    /// Configures the writer's connection and migrates it (or checks its
    /// schema), then starts the writer and the readers.
    fn start(path: &Path, conn: Connection, schema: crate::Schema) -> StoreResult<SqliteStore> {
        configure(&conn).map_err(classify)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        let before = if has_store(&conn)? {
            crate::ops::at_once(crate::ops::query_one(&Lite(&conn), &crate::sql::SCHEMA_VERSION, &[], |r| r.opt_int()))?
        } else {
            None
        };
        match schema {
            crate::Schema::Require => crate::require_schema(before)?,
            crate::Schema::Migrate => {
                migrate(&conn)?;
                crate::log_migration(before);
            }
        }
        // The journal files exist now (WAL mode, and migrations wrote).
        // SQLite gives them the database file's mode; make sure anyway.
        for suffix in ["-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            tighten(Path::new(&p)).map_err(|e| file_error("securing", Path::new(&p), &e))?;
        }
        let settings = {
            let q = |p: &str| -> String {
                conn.query_row(&format!("PRAGMA {p}"), [], |r| r.get::<_, rusqlite::types::Value>(0))
                    .map(|v| match v {
                        rusqlite::types::Value::Integer(i) => i.to_string(),
                        rusqlite::types::Value::Text(t) => t,
                        other => format!("{other:?}"),
                    })
                    .unwrap_or_else(|e| format!("? ({e})"))
            };
            format!(
                "sqlite {} (journal_mode={}, synchronous={}, foreign_keys={}, busy_timeout={}ms)",
                path.display(),
                q("journal_mode"),
                match q("synchronous").as_str() {
                    "0" => "off".to_owned(),
                    "1" => "normal".to_owned(),
                    "2" => "full".to_owned(),
                    "3" => "extra".to_owned(),
                    o => o.to_owned(),
                },
                if q("foreign_keys") == "1" { "on" } else { "off" },
                BUSY_TIMEOUT_MS
            )
        };
        // The WAL's checkpoints run on a thread of their own, not inside the writer's commits ([`checkpoint`]).
        conn.execute_batch("PRAGMA wal_autocheckpoint=0").map_err(classify)?;
        let checkpoints = checkpoint::start(path, std::time::Duration::from_millis(u64::from(BUSY_TIMEOUT_MS)))?;
        let (tx, rx) = mpsc::channel::<Box<dyn Job>>(4096);
        let observer = crate::ObserverSlot::default();
        let slot = observer.clone();
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || writer::run(conn, rx, &slot, &checkpoints))
            .map_err(|e| StoreError::other(format!("starting the writer thread: {e}")))?;
        let readers = readers::Readers::start(path, READERS, BUSY_TIMEOUT_MS, STATEMENT_CACHE)?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                path: path.to_owned(),
                writer: tx,
                readers,
                settings,
                observer,
                reads: AtomicUsize::new(0),
                writes: AtomicUsize::new(0),
            }),
        })
    }

    /// Runs `f` in the writer's next batch transaction.
    pub(super) async fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let _in_flight = InFlight::new(&self.inner.writes);
        let out = async {
            let (reply, rx) = oneshot::channel();
            self.inner.writer.send(Box::new(Typed::new(f, reply))).await.map_err(|_| StoreError::Closed)?;
            rx.await.map_err(|_| StoreError::Closed)?
        }
        .await;
        self.inner.observer.seen(out)
    }

    /// Runs `f` on a reader thread's connection, inside one read transaction
    /// (one consistent snapshot for the whole context).
    pub(super) async fn read<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let _in_flight = InFlight::new(&self.inner.reads);
        let out = self.inner.readers.run(f).await;
        self.inner.observer.seen(out)
    }
}

/// Classifies a driver error, once, where rusqlite hands it over.
pub(crate) fn classify(e: rusqlite::Error) -> StoreError {
    let kind = match &e {
        rusqlite::Error::SqliteFailure(f, _) => match f.code {
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => ErrorKind::Busy,
            ErrorCode::ReadOnly => ErrorKind::ReadOnly,
            ErrorCode::ConstraintViolation
                if matches!(f.extended_code, rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE | rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY) =>
            {
                ErrorKind::Conflict
            }
            ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase => ErrorKind::Corrupt,
            ErrorCode::CannotOpen | ErrorCode::SystemIoFailure | ErrorCode::DiskFull | ErrorCode::PermissionDenied => {
                ErrorKind::Unavailable
            }
            _ => ErrorKind::Other,
        },
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::Utf8Error(_) => ErrorKind::Corrupt,
        _ => ErrorKind::Other,
    };
    // rusqlite's text names the constraint or the failure, never a value.
    StoreError::new(kind, e.to_string())
}

/// An I/O failure around the database file (creating, securing it).
fn file_error(what: &str, path: &Path, e: &std::io::Error) -> StoreError {
    StoreError::new(ErrorKind::Unavailable, format!("{what} {}: {e}", path.display()))
}

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Int(i) => ValueRef::Integer(*i),
            Value::Bool(b) => ValueRef::Integer(i64::from(*b)),
            Value::Text(t) => ValueRef::Text(t.as_bytes()),
            Value::Bytes(b) => ValueRef::Blob(b),
        }))
    }
}

impl Row for rusqlite::Row<'_> {
    fn value(&self, i: usize) -> StoreResult<Value<'_>> {
        Ok(match self.get_ref(i).map_err(classify)? {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(v) => Value::Int(v),
            ValueRef::Real(_) => return Err(StoreError::corrupt(format!("column {i}: a real number"))),
            ValueRef::Text(t) => {
                Value::Text(Cow::Borrowed(std::str::from_utf8(t).map_err(|_| StoreError::corrupt(format!("column {i}: not UTF-8")))?))
            }
            ValueRef::Blob(b) => Value::Bytes(Cow::Borrowed(b)),
        })
    }
}

/// A connection (on the thread that owns it) running the store's shared
/// bodies: every call completes at once (see [`crate::ops::at_once`]).
/// Statements are prepared once per connection and cached.
pub(crate) struct Lite<'c>(pub(crate) &'c Connection);

impl Conn for Lite<'_> {
    async fn execute(&self, sql: &Sql, params: &[Value<'_>]) -> StoreResult<u64> {
        let mut st = self.0.prepare_cached(sql.sqlite()).map_err(classify)?;
        st.execute(params_from_iter(params)).map(|n| n as u64).map_err(classify)
    }

    async fn rows<F>(&self, sql: &Sql, params: &[Value<'_>], mut visit: F) -> StoreResult<()>
    where
        F: FnMut(&mut Cols<'_>) -> StoreResult<bool> + Send,
    {
        let mut st = self.0.prepare_cached(sql.sqlite()).map_err(classify)?;
        let mut rows = st.query(params_from_iter(params)).map_err(classify)?;
        while let Some(r) = rows.next().map_err(classify)? {
            if !visit(&mut Cols::new(r))? {
                break;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod upgrade_tests;

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    fn sibling(p: &Path, suffix: &str) -> PathBuf {
        let mut s = p.as_os_str().to_owned();
        s.push(suffix);
        s.into()
    }

    #[test]
    fn a_new_database_is_private_and_so_are_its_directories_and_journal() {
        let root = tempfile::tempdir().unwrap();
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let db = root.path().join("data").join("sub").join("strongroom.db");
        let store = SqliteStore::open(&db).unwrap();
        assert_eq!(mode(&root.path().join("data")), 0o700);
        assert_eq!(mode(&root.path().join("data").join("sub")), 0o700);
        assert_eq!(mode(root.path()), 0o755, "an existing directory is left alone");
        for p in [db.clone(), sibling(&db, "-wal"), sibling(&db, "-shm")] {
            assert!(p.exists(), "{} exists while the store is open (migrations wrote)", p.display());
            assert_eq!(mode(&p), 0o600, "{}", p.display());
        }
        drop(store);
    }

    #[test]
    fn one_server_per_database() {
        let root = tempfile::tempdir().unwrap();
        let db = root.path().join("strongroom.db");
        assert_eq!(served_by(&db), None);
        assert!(!serve_lock_path(&db).exists(), "asking creates nothing");
        let held = lock_for_serving(&db).unwrap();
        assert_eq!(mode(&serve_lock_path(&db)), 0o600);
        let err = lock_for_serving(&db).unwrap_err().to_string();
        assert!(err.contains(&format!("process {}", std::process::id())) && err.contains("stop that one first"), "{err}");
        assert!(served_by(&db).is_some_and(|m| m.contains("is being served")));
        drop(held);
        assert_eq!(served_by(&db), None);
        drop(lock_for_serving(&db).unwrap());
    }

    #[test]
    fn an_existing_readable_database_and_journal_are_tightened() {
        let root = tempfile::tempdir().unwrap();
        let db = root.path().join("strongroom.db");
        drop(SqliteStore::open(&db).unwrap());
        // As an older version left them: world-readable, group-writable.
        for p in [db.clone(), sibling(&db, "-wal")] {
            if !p.exists() {
                std::fs::write(&p, b"").unwrap();
            }
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o664)).unwrap();
        }
        let store = SqliteStore::open(&db).unwrap();
        for p in [db.clone(), sibling(&db, "-wal"), sibling(&db, "-shm")] {
            assert_eq!(mode(&p), 0o600, "{}", p.display());
        }
        drop(store);
    }
}
