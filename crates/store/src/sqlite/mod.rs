//! The embedded SQLite store: one file in the data directory, WAL journal,
//! `synchronous=FULL`, one writer thread with group commit ([`writer`]) and
//! a few reader threads, each with its own connection and statement cache
//! ([`readers`]).
//!
//! The store's four parts are implemented in `auth.rs`, `vault.rs`,
//! `admin.rs` and here (events and upkeep).

mod admin;
mod auth;
mod readers;
mod snapshot;
mod transfer;
mod vault;
mod writer;

pub use snapshot::{Snapshot, read_snapshot, restore_file, snapshot};

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::{mpsc, oneshot};

use strongroom_core::event::{Event, EventKind, StoredEvent, chain_hash};
use strongroom_core::grant::device::DeviceAuthorization;
use strongroom_core::grant::{AccessContext, Grant, GrantId, Pair, Standing};
use strongroom_core::identity::{User, UserId};
use strongroom_core::integration::{AllowedUsers, GrantTypes, Integration, TokenOverrides};
use strongroom_core::scope::Scope;
use strongroom_core::throttle::{Counter, ORIGIN_RETENTION_DAYS};
use strongroom_core::time::UnixTime;
use strongroom_core::token::TokenHash;

use crate::sql::{self, GRANT_COL_COUNT};
use crate::{
    EventFilter, EventStore, Migration, NewTokens, PoolStatus, StoreError, StoreFuture, StoreObserver, StoreResult, device_state_from_parts,
};
use writer::{Job, Typed, backend};

pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration { version: 1, name: "0001_auth", sql: include_str!("../../migrations/sqlite/0001_auth.sql") },
    Migration { version: 2, name: "0002_vault", sql: include_str!("../../migrations/sqlite/0002_vault.sql") },
    Migration { version: 3, name: "0003_pairs", sql: include_str!("../../migrations/sqlite/0003_pairs.sql") },
    Migration { version: 4, name: "0004_named_keys", sql: include_str!("../../migrations/sqlite/0004_named_keys.sql") },
    Migration { version: 5, name: "0005_master_key_check", sql: include_str!("../../migrations/sqlite/0005_master_key_check.sql") },
    Migration { version: 6, name: "0006_sign_in_limits", sql: include_str!("../../migrations/sqlite/0006_sign_in_limits.sql") },
];

/// Milliseconds a connection waits for another process's lock (the admin
/// CLI writing while the server runs).
const BUSY_TIMEOUT_MS: u32 = 5000;
/// Reader threads, each with its own connection. Reads are short indexed
/// lookups; more threads than cores only add switching.
const READERS: usize = 2;

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
    .map_err(backend)?;
    for m in MIGRATIONS {
        let done: Option<i64> = conn
            .query_row("SELECT version FROM schema_migrations WHERE version = ?1", [m.version], |r| r.get(0))
            .optional()
            .map_err(backend)?;
        if done.is_some() {
            continue;
        }
        conn.execute_batch("BEGIN IMMEDIATE").map_err(backend)?;
        let applied = conn.execute_batch(m.sql).and_then(|()| {
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, strftime('%s','now'))",
                params![m.version, m.name],
            )
        });
        match applied {
            Ok(_) => conn.execute_batch("COMMIT").map_err(backend)?,
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                // Another process may have applied it in the meantime.
                let done: Option<i64> = conn
                    .query_row("SELECT version FROM schema_migrations WHERE version = ?1", [m.version], |r| r.get(0))
                    .optional()
                    .map_err(backend)?;
                if done.is_none() {
                    return Err(backend(e));
                }
            }
        }
    }
    Ok(())
}

/// Creates `dir` and its missing parents with mode 0700. An existing
/// directory is left as it is.
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        b.mode(0o700);
    }
    b.create(dir)
}

/// Makes the database file private before SQLite opens it: creates it empty
/// with mode 0600 (an empty file is an empty database), or takes group and
/// other permissions away from an existing one.
fn make_private(path: &Path) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.mode(0o600);
    }
    match opts.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => tighten(path),
        Err(e) => Err(e),
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

impl SqliteStore {
    /// Opens (creating if needed) the database file and applies migrations.
    pub fn open(path: &Path) -> StoreResult<SqliteStore> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir).map_err(|e| StoreError::Backend(format!("creating {}: {e}", dir.display())))?;
        }
        make_private(path).map_err(|e| StoreError::Backend(format!("securing {}: {e}", path.display())))?;
        let conn = Connection::open(path).map_err(backend)?;
        configure(&conn).map_err(backend)?;
        migrate(&conn)?;
        // The journal files exist now (WAL mode, and migrations wrote).
        // SQLite gives them the database file's mode; make sure anyway.
        for suffix in ["-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            tighten(Path::new(&p)).map_err(|e| StoreError::Backend(format!("securing {}: {e}", Path::new(&p).display())))?;
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
        let (tx, rx) = mpsc::channel::<Box<dyn Job>>(4096);
        let observer = crate::ObserverSlot::default();
        let slot = observer.clone();
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || writer::run(conn, rx, &slot))
            .map_err(|e| StoreError::Backend(format!("starting the writer thread: {e}")))?;
        let readers = readers::Readers::start(path, READERS, BUSY_TIMEOUT_MS)?;
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
        let (reply, rx) = oneshot::channel();
        self.inner.writer.send(Box::new(Typed::new(f, reply))).await.map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// Runs `f` on a reader thread's connection, inside one read transaction
    /// (one consistent snapshot for the whole context).
    pub(super) async fn read<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let _in_flight = InFlight::new(&self.inner.reads);
        self.inner.readers.run(f).await
    }
}

pub(super) fn b(v: bool) -> i64 {
    i64::from(v)
}

pub(super) fn hash_col(row: &Row<'_>, idx: usize) -> rusqlite::Result<TokenHash> {
    let v: Vec<u8> = row.get(idx)?;
    TokenHash::from_slice(&v).ok_or_else(|| rusqlite::Error::IntegralValueOutOfRange(idx, 0))
}

pub(super) fn scope_col(row: &Row<'_>, idx: usize) -> rusqlite::Result<Scope> {
    let s: String = row.get(idx)?;
    Scope::parse(&s).map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e)))
}

pub(super) fn time_col(row: &Row<'_>, idx: usize) -> rusqlite::Result<UnixTime> {
    Ok(UnixTime::from_millis(row.get(idx)?))
}

pub(super) fn opt_time_col(row: &Row<'_>, idx: usize) -> rusqlite::Result<Option<UnixTime>> {
    Ok(row.get::<_, Option<i64>>(idx)?.map(UnixTime::from_millis))
}

pub(super) const USER_COLS: &str = "id, name, disabled, master_admin, created_at";

pub(super) fn user_from_row(row: &Row<'_>) -> rusqlite::Result<User> {
    Ok(User {
        id: UserId::from_stored(row.get(0)?),
        name: row.get(1)?,
        disabled: row.get::<_, i64>(2)? != 0,
        master_admin: row.get::<_, i64>(3)? != 0,
        created_at: time_col(row, 4)?,
    })
}

fn opt_hash_col(row: &Row<'_>, idx: usize) -> rusqlite::Result<Option<TokenHash>> {
    match row.get::<_, Option<Vec<u8>>>(idx)? {
        None => Ok(None),
        Some(v) => TokenHash::from_slice(&v).map(Some).ok_or(rusqlite::Error::IntegralValueOutOfRange(idx, 0)),
    }
}

/// Reads the [`sql::GRANT_COLS`] starting at column `o`.
pub(super) fn grant_from_row(row: &Row<'_>, o: usize) -> rusqlite::Result<Grant> {
    let rotated_from = match (opt_hash_col(row, o + 13)?, opt_time_col(row, o + 14)?) {
        (Some(h), Some(at)) => Some((h, at)),
        _ => None,
    };
    Ok(Grant {
        id: GrantId::from_stored(row.get(o)?),
        client_id: row.get(o + 1)?,
        user_id: UserId::from_stored(row.get(o + 2)?),
        scope: scope_col(row, o + 3)?,
        created_at: time_col(row, o + 4)?,
        refresh_until: time_col(row, o + 5)?,
        refreshable: row.get(o + 6)?,
        access_issued_at: time_col(row, o + 7)?,
        access_validity: row.get(o + 8)?,
        revoked_at: opt_time_col(row, o + 9)?,
        pair: Pair { refresh: opt_hash_col(row, o + 10)?, access: opt_hash_col(row, o + 11)?, used: row.get(o + 12)?, rotated_from },
        version: row.get(o + 15)?,
    })
}

/// Decodes the [`sql::ACCESS_CONTEXT`] row of token `access_hash`.
pub(super) fn access_from_row(r: &Row<'_>, access_hash: TokenHash) -> rusqlite::Result<AccessContext> {
    let o = GRANT_COL_COUNT;
    Ok(AccessContext {
        grant: grant_from_row(r, 0)?,
        token_hash: access_hash,
        token_issued_at: time_col(r, o)?,
        token_expires: time_col(r, o + 1)?,
        user_name: r.get(o + 2)?,
        master_admin: r.get(o + 3)?,
        standing: standing_from_row(r, o + 4)?,
    })
}

/// The grant at column `o`, if the (left-joined) row has one.
pub(super) fn opt_grant_from_row(row: &Row<'_>, o: usize) -> rusqlite::Result<Option<Grant>> {
    if row.get::<_, Option<String>>(o)?.is_none() { Ok(None) } else { grant_from_row(row, o).map(Some) }
}

/// Reads the standing columns of `sql` starting at column `o`.
pub(super) fn standing_from_row(row: &Row<'_>, o: usize) -> rusqlite::Result<Standing> {
    let max_scope = match row.get::<_, Option<String>>(o + 2)? {
        Some(s) => {
            Scope::parse(&s).map_err(|e| rusqlite::Error::FromSqlConversionFailure(o + 2, rusqlite::types::Type::Text, Box::new(e)))?
        }
        None => Scope::default(),
    };
    Ok(Standing {
        integration_found: row.get(o)?,
        integration_disabled: row.get::<_, Option<bool>>(o + 1)?.unwrap_or(false),
        max_scope,
        user_found: row.get(o + 3)?,
        user_disabled: row.get::<_, Option<bool>>(o + 4)?.unwrap_or(false),
        user_allowed: row.get::<_, Option<bool>>(o + 5)?.unwrap_or(false),
    })
}

/// Runs one cached statement; the rows it changed.
pub(super) fn exec(c: &Connection, sql: &str, p: impl rusqlite::Params) -> StoreResult<usize> {
    c.prepare_cached(sql).and_then(|mut st| st.execute(p)).map_err(backend)
}

pub(super) const INTEGRATION_COLS: &str = "client_id, name, max_scope, allow_all_users, allow_device, allow_password, access_validity, grant_validity, refreshable, device_code_validity, poll_interval, disabled, retry_window";

pub(super) fn integration_from_row(row: &Row<'_>) -> rusqlite::Result<Integration> {
    Ok(Integration {
        client_id: row.get(0)?,
        name: row.get(1)?,
        max_scope: scope_col(row, 2)?,
        allowed_users: if row.get::<_, i64>(3)? != 0 { AllowedUsers::Everyone } else { AllowedUsers::Only(Vec::new()) },
        grant_types: GrantTypes { device: row.get::<_, i64>(4)? != 0, password: row.get::<_, i64>(5)? != 0 },
        overrides: TokenOverrides {
            access_validity: row.get(6)?,
            grant_validity: row.get(7)?,
            refreshable: row.get::<_, Option<i64>>(8)?.map(|v| v != 0),
            device_code_validity: row.get(9)?,
            poll_interval: row.get(10)?,
            retry_window: row.get(12)?,
        },
        disabled: row.get::<_, i64>(11)? != 0,
    })
}

/// The values of [`INTEGRATION_COLS`], in order: shared by insert and update.
pub(super) fn integration_values(i: &Integration) -> Vec<Value> {
    let int = |v: Option<i64>| v.map_or(Value::Null, Value::Integer);
    vec![
        Value::Text(i.client_id.clone()),
        Value::Text(i.name.clone()),
        Value::Text(i.max_scope.to_string()),
        Value::Integer(b(i.allowed_users == AllowedUsers::Everyone)),
        Value::Integer(b(i.grant_types.device)),
        Value::Integer(b(i.grant_types.password)),
        int(i.overrides.access_validity),
        int(i.overrides.grant_validity),
        int(i.overrides.refreshable.map(b)),
        int(i.overrides.device_code_validity),
        int(i.overrides.poll_interval),
        Value::Integer(b(i.disabled)),
        int(i.overrides.retry_window),
    ]
}

/// `?1, ?2, …, ?n`.
pub(super) fn placeholders(n: usize) -> String {
    (1..=n).map(|k| format!("?{k}")).collect::<Vec<_>>().join(", ")
}

pub(super) fn load_allowed(conn: &Connection, i: &mut Integration) -> StoreResult<()> {
    if let AllowedUsers::Only(list) = &mut i.allowed_users {
        let mut st = conn.prepare_cached("SELECT user_id FROM integration_users WHERE client_id = ?1 ORDER BY user_id").map_err(backend)?;
        let rows = st.query_map([&i.client_id], |r| r.get::<_, String>(0)).map_err(backend)?;
        for r in rows {
            list.push(UserId::from_stored(r.map_err(backend)?));
        }
    }
    Ok(())
}

pub(super) fn save_allowed(conn: &Connection, i: &Integration) -> StoreResult<()> {
    conn.execute("DELETE FROM integration_users WHERE client_id = ?1", [&i.client_id]).map_err(backend)?;
    if let AllowedUsers::Only(list) = &i.allowed_users {
        for u in list {
            conn.execute("INSERT INTO integration_users (client_id, user_id) VALUES (?1, ?2)", params![i.client_id, u.as_str()])
                .map_err(backend)?;
        }
    }
    Ok(())
}

/// Reads the [`sql::DEVICE_COLS`] starting at column 0.
pub(super) fn device_from_row(row: &Row<'_>) -> rusqlite::Result<DeviceAuthorization> {
    let state = device_state_from_parts(&row.get::<_, String>(4)?, row.get(5)?)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(4, rusqlite::types::Type::Text, Box::new(e)))?;
    Ok(DeviceAuthorization {
        code_hash: hash_col(row, 0)?,
        user_code_hash: hash_col(row, 1)?,
        client_id: row.get(2)?,
        scope: scope_col(row, 3)?,
        state,
        created_at: time_col(row, 6)?,
        expires_at: time_col(row, 7)?,
        interval_secs: row.get(8)?,
        last_poll_at: opt_time_col(row, 9)?,
        version: row.get(10)?,
    })
}

/// Appends `e` to the chained event log inside the current transaction.
pub(super) fn append_event_tx(conn: &Connection, e: &Event) -> StoreResult<i64> {
    let (seq, prev): (i64, Vec<u8>) =
        conn.query_row("SELECT seq, hash FROM event_head WHERE id = 1", [], |r| Ok((r.get(0)?, r.get(1)?))).map_err(backend)?;
    let prev: [u8; 32] = prev.try_into().map_err(|_| StoreError::Corrupt("event head hash".into()))?;
    let seq = seq + 1;
    let hash = chain_hash(&prev, seq, e);
    conn.prepare_cached(
        "INSERT INTO events (seq, at, kind, identity, client_id, source, request_id, object, detail, hash) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )
    .and_then(|mut st| {
        st.execute(params![
            seq,
            e.at.millis(),
            e.kind.as_str(),
            e.identity,
            e.client_id,
            e.source,
            e.request_id,
            e.object,
            e.detail,
            &hash[..]
        ])
    })
    .map_err(backend)?;
    conn.execute("UPDATE event_head SET seq = ?1, hash = ?2 WHERE id = 1", params![seq, &hash[..]]).map_err(backend)?;
    Ok(seq)
}

pub(super) fn insert_tokens(conn: &Connection, grant_id: &str, t: &NewTokens) -> StoreResult<()> {
    exec(conn, sql::INSERT_ACCESS.sqlite(), params![t.access_hash.as_bytes(), grant_id, t.issued_at.millis(), t.access_expires.millis()])?;
    if let Some(rh) = &t.refresh_hash {
        exec(conn, sql::INSERT_REFRESH.sqlite(), params![rh.as_bytes(), grant_id, t.issued_at.millis()])?;
    }
    Ok(())
}

/// Inserts a grant whose first pair is `t`.
pub(super) fn insert_grant_tx(conn: &Connection, g: &Grant, t: &NewTokens) -> StoreResult<()> {
    exec(
        conn,
        sql::INSERT_GRANT.sqlite(),
        params![
            g.id.as_str(),
            g.client_id,
            g.user_id.as_str(),
            g.scope.to_string(),
            g.created_at.millis(),
            g.refresh_until.millis(),
            g.refreshable,
            g.access_issued_at.millis(),
            g.access_validity,
            g.revoked_at.map(UnixTime::millis),
            t.refresh_hash.as_ref().map(TokenHash::as_bytes),
            t.access_hash.as_bytes(),
            false,
            Option::<&[u8]>::None,
            Option::<i64>::None,
            0i64
        ],
    )?;
    insert_tokens(conn, g.id.as_str(), t)
}

pub(super) fn is_unique_violation(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation)
}

pub(super) fn counter_from_row(row: &Row<'_>) -> rusqlite::Result<Counter> {
    Ok(Counter {
        failures: u32::try_from(row.get::<_, i64>(0)?).unwrap_or(u32::MAX),
        window_start: time_col(row, 1)?,
        locked_until: opt_time_col(row, 2)?,
    })
}

/// A throttle counter inside the current transaction (zero if absent).
pub(super) fn counter_of(c: &Connection, key: &str) -> StoreResult<Counter> {
    let mut st = c.prepare_cached(sql::COUNTER.sqlite()).map_err(backend)?;
    Ok(st.query_row([key], counter_from_row).optional().map_err(backend)?.unwrap_or_default())
}

pub(super) fn event_from_row(row: &Row<'_>) -> rusqlite::Result<StoredEvent> {
    let kind: String = row.get(2)?;
    let hash: Vec<u8> = row.get(9)?;
    Ok(StoredEvent {
        seq: row.get(0)?,
        event: Event {
            at: time_col(row, 1)?,
            kind: EventKind::parse(&kind).ok_or(rusqlite::Error::InvalidColumnType(2, kind, rusqlite::types::Type::Text))?,
            identity: row.get(3)?,
            client_id: row.get(4)?,
            source: row.get(5)?,
            request_id: row.get(6)?,
            object: row.get(7)?,
            detail: row.get(8)?,
        },
        hash: hash.try_into().map_err(|_| rusqlite::Error::InvalidColumnType(9, "hash".into(), rusqlite::types::Type::Blob))?,
    })
}

impl EventStore for SqliteStore {
    fn describe(&self) -> String {
        self.inner.settings.clone()
    }
    /// A job on the writer: ready means writes can take the database's
    /// write lock (one held elsewhere makes the request path fail too).
    fn ready(&self) -> StoreFuture<'_, ()> {
        Box::pin(self.write(|c| {
            let v: Option<i64> = c.query_row("SELECT max(version) FROM schema_migrations", [], |r| r.get(0)).map_err(backend)?;
            crate::check_schema(v)
        }))
    }
    fn observe(&self, observer: Arc<dyn StoreObserver>) {
        self.inner.observer.set(observer);
    }
    fn pool_status(&self) -> PoolStatus {
        // One writer connection and READERS reader connections, each doing one job at a time.
        let (r, w) = (self.inner.reads.load(Ordering::Relaxed), self.inner.writes.load(Ordering::Relaxed));
        let in_use = r.min(READERS) + w.min(1);
        PoolStatus { max: READERS + 1, in_use, waiting: r + w - in_use }
    }
    fn append_event(&self, event: Event) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| append_event_tx(c, &event).map(drop)))
    }
    fn events(&self, f: EventFilter) -> StoreFuture<'_, Vec<StoredEvent>> {
        Box::pin(self.read(move |c| {
            let mut st = c
                .prepare(&format!(
                    "SELECT seq, at, kind, identity, client_id, source, request_id, object, detail, hash FROM events \
                         WHERE (?1 IS NULL OR at >= ?1) AND (?2 IS NULL OR at < ?2) AND (?3 IS NULL OR kind = ?3) \
                         AND (?4 IS NULL OR identity = ?4) AND (?5 IS NULL OR object = ?5) AND seq > coalesce(?6, 0) \
                         AND {} ORDER BY seq LIMIT ?7",
                    sql::visible_to("?8", "?9", "CAST(events.object AS INTEGER)")
                ))
                .map_err(backend)?;
            let rows = st
                .query_map(
                    params![
                        f.since.map(UnixTime::millis),
                        f.until.map(UnixTime::millis),
                        f.kind,
                        f.identity,
                        f.object,
                        f.after_seq,
                        i64::from(f.limit),
                        f.viewer.as_ref().map(|v| v.identity.as_str()),
                        f.viewer.as_ref().map(|v| v.user_id.as_str())
                    ],
                    event_from_row,
                )
                .map_err(backend)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(backend)
        }))
    }
    fn event_head(&self) -> StoreFuture<'_, (i64, [u8; 32])> {
        Box::pin(self.read(|c| {
            let (seq, hash): (i64, Vec<u8>) =
                c.query_row("SELECT seq, hash FROM event_head WHERE id = 1", [], |r| Ok((r.get(0)?, r.get(1)?))).map_err(backend)?;
            Ok((seq, hash.try_into().map_err(|_| StoreError::Corrupt("event head hash".into()))?))
        }))
    }
    fn purge(&self, before: UnixTime) -> StoreFuture<'_, u64> {
        Box::pin(self.write(move |c| {
            let t = before.millis();
            let mut n = 0u64;
            for sql in [
                "DELETE FROM device_codes WHERE expires_at < ?1",
                "DELETE FROM grants WHERE refresh_until < ?1",
                "DELETE FROM access_tokens WHERE expires_at < ?1",
                "DELETE FROM throttle WHERE window_start < ?1 AND (locked_until IS NULL OR locked_until < ?1)",
            ] {
                n += c.execute(sql, [t]).map_err(backend)? as u64;
            }
            let forgotten = before.plus_secs(-ORIGIN_RETENTION_DAYS * 86_400).millis();
            n += c.execute("DELETE FROM sign_in_origins WHERE last_success < ?1", [forgotten]).map_err(backend)? as u64;
            Ok(n)
        }))
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
