//! The embedded SQLite store: one file in the data directory, WAL journal,
//! `synchronous=FULL`, one writer thread with group commit ([`writer`]) and
//! a small pool of reading connections.

mod vault;
mod writer;

use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, params, params_from_iter};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

use strongroom_core::event::{Event, EventKind, StoredEvent, chain_hash};
use strongroom_core::grant::device::{DeviceAuthorization, DeviceState, PollRecord};
use strongroom_core::grant::refresh::RefreshToken;
use strongroom_core::grant::{AccessContext, Grant, GrantId};
use strongroom_core::identity::{User, UserId};
use strongroom_core::integration::{AllowedUsers, GrantTypes, Integration, TokenOverrides};
use strongroom_core::scope::Scope;
use strongroom_core::throttle::{Counter, Rule};
use strongroom_core::time::UnixTime;
use strongroom_core::token::TokenHash;
use strongroom_core::vault::{FolderPath, Rights, VaultId};

use crate::{
    AddOwner, DataKeyRecord, EventFilter, GrantSummary, Migration, NewTokens, OwnerRemoval, PutAssociation, SealedItem, Store, StoreError,
    StoreFuture, StoreResult, StoredAssociation, VaultEntry, VaultFilter, device_state_from_parts, device_state_parts, lockout_event,
};
use writer::{Job, Typed, backend};

pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration { version: 1, name: "0001_auth", sql: include_str!("../../migrations/sqlite/0001_auth.sql") },
    Migration { version: 2, name: "0002_vault", sql: include_str!("../../migrations/sqlite/0002_vault.sql") },
];

/// Milliseconds a connection waits for another process's lock (the admin
/// CLI writing while the server runs).
const BUSY_TIMEOUT_MS: u32 = 5000;
/// Reading connections kept open between requests.
const MAX_IDLE_READERS: usize = 8;

#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    writer: mpsc::Sender<Box<dyn Job>>,
    readers: Mutex<Vec<Connection>>,
    settings: String,
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

impl SqliteStore {
    /// Opens (creating if needed) the database file and applies migrations.
    pub fn open(path: &Path) -> StoreResult<SqliteStore> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Backend(format!("creating {}: {e}", dir.display())))?;
        }
        let conn = Connection::open(path).map_err(backend)?;
        configure(&conn).map_err(backend)?;
        migrate(&conn)?;
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
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || writer::run(conn, rx))
            .map_err(|e| StoreError::Backend(format!("starting the writer thread: {e}")))?;
        Ok(SqliteStore { inner: Arc::new(Inner { path: path.to_owned(), writer: tx, readers: Mutex::new(Vec::new()), settings }) })
    }

    /// Runs `f` in the writer's next batch transaction.
    pub(super) async fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        self.inner.writer.send(Box::new(Typed::new(f, reply))).await.map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// Runs `f` on a reading connection, off the async threads.
    pub(super) async fn read<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let pooled = inner.readers.lock().map_err(|_| StoreError::Closed)?.pop();
            let conn = match pooled {
                Some(c) => c,
                None => {
                    let c = Connection::open_with_flags(&inner.path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
                        .map_err(backend)?;
                    c.busy_timeout(std::time::Duration::from_millis(u64::from(BUSY_TIMEOUT_MS))).map_err(backend)?;
                    c
                }
            };
            let out = f(&conn);
            if let Ok(mut pool) = inner.readers.lock()
                && pool.len() < MAX_IDLE_READERS
            {
                pool.push(conn);
            }
            out
        })
        .await
        .map_err(|_| StoreError::Backend("reader task failed".into()))?
    }
}

fn b(v: bool) -> i64 {
    i64::from(v)
}

fn hash_col(row: &Row<'_>, idx: usize) -> rusqlite::Result<TokenHash> {
    let v: Vec<u8> = row.get(idx)?;
    TokenHash::from_slice(&v).ok_or_else(|| rusqlite::Error::IntegralValueOutOfRange(idx, 0))
}

fn scope_col(row: &Row<'_>, idx: usize) -> rusqlite::Result<Scope> {
    let s: String = row.get(idx)?;
    Scope::parse(&s).map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e)))
}

pub(super) fn time_col(row: &Row<'_>, idx: usize) -> rusqlite::Result<UnixTime> {
    Ok(UnixTime::from_millis(row.get(idx)?))
}

fn opt_time_col(row: &Row<'_>, idx: usize) -> rusqlite::Result<Option<UnixTime>> {
    Ok(row.get::<_, Option<i64>>(idx)?.map(UnixTime::from_millis))
}

const USER_COLS: &str = "id, name, disabled, master_admin, created_at";

fn user_from_row(row: &Row<'_>) -> rusqlite::Result<User> {
    Ok(User {
        id: UserId::from_stored(row.get(0)?),
        name: row.get(1)?,
        disabled: row.get::<_, i64>(2)? != 0,
        master_admin: row.get::<_, i64>(3)? != 0,
        created_at: time_col(row, 4)?,
    })
}

const GRANT_COLS: &str = "g.id, g.client_id, g.user_id, g.scope, g.created_at, g.refresh_until, g.refreshable, g.access_issued_at, g.access_validity, g.revoked_at";

/// Reads the ten [`GRANT_COLS`] starting at column `o`.
fn grant_from_row(row: &Row<'_>, o: usize) -> rusqlite::Result<Grant> {
    Ok(Grant {
        id: GrantId::from_stored(row.get(o)?),
        client_id: row.get(o + 1)?,
        user_id: UserId::from_stored(row.get(o + 2)?),
        scope: scope_col(row, o + 3)?,
        created_at: time_col(row, o + 4)?,
        refresh_until: time_col(row, o + 5)?,
        refreshable: row.get::<_, i64>(o + 6)? != 0,
        access_issued_at: time_col(row, o + 7)?,
        access_validity: row.get(o + 8)?,
        revoked_at: opt_time_col(row, o + 9)?,
    })
}

const INTEGRATION_COLS: &str = "client_id, name, max_scope, allow_all_users, allow_device, allow_password, access_validity, grant_validity, refreshable, device_code_validity, poll_interval, disabled";

fn integration_from_row(row: &Row<'_>) -> rusqlite::Result<Integration> {
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
        },
        disabled: row.get::<_, i64>(11)? != 0,
    })
}

/// The values of [`INTEGRATION_COLS`], in order: shared by insert and update.
fn integration_values(i: &Integration) -> Vec<Value> {
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
    ]
}

/// `?1, ?2, …, ?n`.
fn placeholders(n: usize) -> String {
    (1..=n).map(|k| format!("?{k}")).collect::<Vec<_>>().join(", ")
}

fn load_allowed(conn: &Connection, i: &mut Integration) -> StoreResult<()> {
    if let AllowedUsers::Only(list) = &mut i.allowed_users {
        let mut st = conn.prepare_cached("SELECT user_id FROM integration_users WHERE client_id = ?1 ORDER BY user_id").map_err(backend)?;
        let rows = st.query_map([&i.client_id], |r| r.get::<_, String>(0)).map_err(backend)?;
        for r in rows {
            list.push(UserId::from_stored(r.map_err(backend)?));
        }
    }
    Ok(())
}

fn save_allowed(conn: &Connection, i: &Integration) -> StoreResult<()> {
    conn.execute("DELETE FROM integration_users WHERE client_id = ?1", [&i.client_id]).map_err(backend)?;
    if let AllowedUsers::Only(list) = &i.allowed_users {
        for u in list {
            conn.execute("INSERT INTO integration_users (client_id, user_id) VALUES (?1, ?2)", params![i.client_id, u.as_str()])
                .map_err(backend)?;
        }
    }
    Ok(())
}

const DEVICE_COLS: &str =
    "code_hash, user_code_hash, client_id, scope, state, user_id, created_at, expires_at, interval_secs, last_poll_at, version";

fn device_from_row(row: &Row<'_>) -> rusqlite::Result<(DeviceAuthorization, String, Option<String>)> {
    Ok((
        DeviceAuthorization {
            code_hash: hash_col(row, 0)?,
            user_code_hash: hash_col(row, 1)?,
            client_id: row.get(2)?,
            scope: scope_col(row, 3)?,
            state: DeviceState::Pending,
            created_at: time_col(row, 6)?,
            expires_at: time_col(row, 7)?,
            interval_secs: row.get(8)?,
            last_poll_at: opt_time_col(row, 9)?,
            version: row.get(10)?,
        },
        row.get(4)?,
        row.get(5)?,
    ))
}

fn device_where(conn: &Connection, column: &str, hash: &TokenHash) -> StoreResult<Option<DeviceAuthorization>> {
    let sql = format!("SELECT {DEVICE_COLS} FROM device_codes WHERE {column} = ?1");
    let found = conn.query_row(&sql, [hash.as_bytes()], device_from_row).optional().map_err(backend)?;
    match found {
        None => Ok(None),
        Some((mut d, state, user)) => {
            d.state = device_state_from_parts(&state, user)?;
            Ok(Some(d))
        }
    }
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

fn insert_tokens(conn: &Connection, grant_id: &str, t: &NewTokens) -> StoreResult<()> {
    conn.execute(
        "INSERT INTO access_tokens (hash, grant_id, issued_at, expires_at) VALUES (?1, ?2, ?3, ?4)",
        params![t.access_hash.as_bytes(), grant_id, t.issued_at.millis(), t.access_expires.millis()],
    )
    .map_err(backend)?;
    if let Some(rh) = &t.refresh_hash {
        conn.execute(
            "INSERT INTO refresh_tokens (hash, grant_id, issued_at) VALUES (?1, ?2, ?3)",
            params![rh.as_bytes(), grant_id, t.issued_at.millis()],
        )
        .map_err(backend)?;
    }
    Ok(())
}

fn insert_grant_tx(conn: &Connection, g: &Grant) -> StoreResult<()> {
    conn.execute(
        "INSERT INTO grants (id, client_id, user_id, scope, created_at, refresh_until, refreshable, access_issued_at, access_validity, revoked_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            g.id.as_str(),
            g.client_id,
            g.user_id.as_str(),
            g.scope.to_string(),
            g.created_at.millis(),
            g.refresh_until.millis(),
            b(g.refreshable),
            g.access_issued_at.millis(),
            g.access_validity,
            g.revoked_at.map(UnixTime::millis)
        ],
    )
    .map_err(backend)?;
    Ok(())
}

pub(super) fn is_unique_violation(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation)
}

fn counter_from_row(row: &Row<'_>) -> rusqlite::Result<Counter> {
    Ok(Counter {
        failures: u32::try_from(row.get::<_, i64>(0)?).unwrap_or(u32::MAX),
        window_start: time_col(row, 1)?,
        locked_until: opt_time_col(row, 2)?,
    })
}

/// A throttle counter inside the current transaction (zero if absent).
fn counter_of(c: &Connection, key: &str) -> StoreResult<Counter> {
    Ok(c.query_row("SELECT failures, window_start, locked_until FROM throttle WHERE key = ?1", [key], counter_from_row)
        .optional()
        .map_err(backend)?
        .unwrap_or_default())
}

fn event_from_row(row: &Row<'_>) -> rusqlite::Result<StoredEvent> {
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

impl Store for SqliteStore {
    fn describe(&self) -> String {
        self.inner.settings.clone()
    }

    fn ping(&self) -> StoreFuture<'_, ()> {
        Box::pin(self.read(|c| c.query_row("SELECT 1", [], |_| Ok(())).map_err(backend)))
    }

    fn create_user(&self, user: User, password_hash: String, event: Event) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| {
            let r = c.execute(
                "INSERT INTO users (id, name, name_key, password_hash, disabled, master_admin, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    user.id.as_str(),
                    user.name,
                    user.name.to_lowercase(),
                    password_hash,
                    b(user.disabled),
                    b(user.master_admin),
                    user.created_at.millis()
                ],
            );
            match r {
                Err(e) if is_unique_violation(&e) => Err(StoreError::Conflict),
                Err(e) => Err(backend(e)),
                Ok(_) => append_event_tx(c, &event).map(drop),
            }
        }))
    }

    fn user_by_name(&self, name: String) -> StoreFuture<'_, Option<(User, String)>> {
        Box::pin(self.read(move |c| {
            c.query_row(&format!("SELECT {USER_COLS}, password_hash FROM users WHERE name_key = ?1"), [name.to_lowercase()], |r| {
                Ok((user_from_row(r)?, r.get::<_, String>(5)?))
            })
            .optional()
            .map_err(backend)
        }))
    }

    fn user_by_id(&self, id: UserId) -> StoreFuture<'_, Option<User>> {
        Box::pin(self.read(move |c| {
            c.query_row(&format!("SELECT {USER_COLS} FROM users WHERE id = ?1"), [id.as_str()], user_from_row).optional().map_err(backend)
        }))
    }

    fn list_users(&self) -> StoreFuture<'_, Vec<User>> {
        Box::pin(self.read(|c| {
            let mut st = c.prepare(&format!("SELECT {USER_COLS} FROM users ORDER BY name_key")).map_err(backend)?;
            let rows = st.query_map([], user_from_row).map_err(backend)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(backend)
        }))
    }

    fn set_user_disabled(&self, name: String, disabled: bool, event: Event) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| {
            let n = c
                .execute("UPDATE users SET disabled = ?1 WHERE name_key = ?2", params![b(disabled), name.to_lowercase()])
                .map_err(backend)?;
            if n == 1 {
                append_event_tx(c, &event)?;
            }
            Ok(n == 1)
        }))
    }

    fn set_user_password(&self, name: String, password_hash: String, event: Event) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| {
            let n = c
                .execute("UPDATE users SET password_hash = ?1 WHERE name_key = ?2", params![password_hash, name.to_lowercase()])
                .map_err(backend)?;
            if n == 1 {
                append_event_tx(c, &event)?;
            }
            Ok(n == 1)
        }))
    }

    fn create_integration(&self, i: Integration, event: Event) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| {
            let mut values = integration_values(&i);
            values.push(Value::Integer(event.at.millis()));
            let r = c.execute(
                &format!("INSERT INTO integrations ({INTEGRATION_COLS}, created_at) VALUES ({})", placeholders(values.len())),
                params_from_iter(values),
            );
            match r {
                Err(e) if is_unique_violation(&e) => Err(StoreError::Conflict),
                Err(e) => Err(backend(e)),
                Ok(_) => {
                    save_allowed(c, &i)?;
                    append_event_tx(c, &event).map(drop)
                }
            }
        }))
    }

    fn update_integration(&self, i: Integration, event: Event) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| {
            let n = c
                .execute(
                    "UPDATE integrations SET name = ?2, max_scope = ?3, allow_all_users = ?4, allow_device = ?5, allow_password = ?6, \
                     access_validity = ?7, grant_validity = ?8, refreshable = ?9, device_code_validity = ?10, poll_interval = ?11, disabled = ?12 \
                     WHERE client_id = ?1",
                    params_from_iter(integration_values(&i)),
                )
                .map_err(backend)?;
            if n == 1 {
                save_allowed(c, &i)?;
                append_event_tx(c, &event)?;
            }
            Ok(n == 1)
        }))
    }

    fn integration(&self, client_id: String) -> StoreFuture<'_, Option<Integration>> {
        Box::pin(self.read(move |c| {
            let found = c
                .query_row(&format!("SELECT {INTEGRATION_COLS} FROM integrations WHERE client_id = ?1"), [&client_id], integration_from_row)
                .optional()
                .map_err(backend)?;
            match found {
                None => Ok(None),
                Some(mut i) => {
                    load_allowed(c, &mut i)?;
                    Ok(Some(i))
                }
            }
        }))
    }

    fn list_integrations(&self) -> StoreFuture<'_, Vec<Integration>> {
        Box::pin(self.read(|c| {
            let mut st = c.prepare(&format!("SELECT {INTEGRATION_COLS} FROM integrations ORDER BY client_id")).map_err(backend)?;
            let mut list = st.query_map([], integration_from_row).map_err(backend)?.collect::<Result<Vec<_>, _>>().map_err(backend)?;
            for i in &mut list {
                load_allowed(c, i)?;
            }
            Ok(list)
        }))
    }

    fn insert_device(&self, d: DeviceAuthorization, event: Event, quota: Option<(String, Rule)>) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| {
            if let Some((key, rule)) = &quota {
                let before = counter_of(c, key)?;
                let after = before.after_failure(*rule, event.at);
                if after.failures > rule.limit {
                    return Err(StoreError::QuotaExceeded);
                }
                c.execute(
                    "INSERT INTO throttle (key, failures, window_start, locked_until) VALUES (?1, ?2, ?3, NULL) \
                     ON CONFLICT (key) DO UPDATE SET failures = excluded.failures, window_start = excluded.window_start",
                    params![key, i64::from(after.failures), after.window_start.millis()],
                )
                .map_err(backend)?;
            }
            let (state, user) = device_state_parts(&d.state);
            // A user code of a code that has expired may be reused.
            c.execute(
                "DELETE FROM device_codes WHERE user_code_hash = ?1 AND expires_at <= ?2",
                params![d.user_code_hash.as_bytes(), d.created_at.millis()],
            )
            .map_err(backend)?;
            let r = c.execute(
                &format!("INSERT INTO device_codes ({DEVICE_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"),
                params![
                    d.code_hash.as_bytes(),
                    d.user_code_hash.as_bytes(),
                    d.client_id,
                    d.scope.to_string(),
                    state,
                    user,
                    d.created_at.millis(),
                    d.expires_at.millis(),
                    d.interval_secs,
                    d.last_poll_at.map(UnixTime::millis),
                    d.version
                ],
            );
            match r {
                Err(e) if is_unique_violation(&e) => Err(StoreError::Conflict),
                Err(e) => Err(backend(e)),
                Ok(_) => append_event_tx(c, &event).map(drop),
            }
        }))
    }

    fn device_by_code(&self, code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceAuthorization>> {
        Box::pin(self.read(move |c| device_where(c, "code_hash", &code_hash)))
    }

    fn device_by_user_code(&self, user_code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceAuthorization>> {
        Box::pin(self.read(move |c| device_where(c, "user_code_hash", &user_code_hash)))
    }

    fn record_poll(&self, code_hash: TokenHash, version: i64, record: PollRecord) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| {
            let n = c
                .execute(
                    "UPDATE device_codes SET last_poll_at = ?1, interval_secs = ?2, version = version + 1 \
                     WHERE code_hash = ?3 AND version = ?4 AND state = 'pending'",
                    params![record.last_poll_at.millis(), record.interval_secs, code_hash.as_bytes(), version],
                )
                .map_err(backend)?;
            Ok(n == 1)
        }))
    }

    fn decide_device(&self, code_hash: TokenHash, version: i64, decision: DeviceState, event: Event) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| {
            let (state, user) = device_state_parts(&decision);
            if !matches!(decision, DeviceState::Approved { .. } | DeviceState::Denied { .. }) {
                return Err(StoreError::Corrupt(format!("a user cannot move a device code to {state}")));
            }
            let n = c
                .execute(
                    "UPDATE device_codes SET state = ?1, user_id = ?2, version = version + 1 \
                     WHERE code_hash = ?3 AND version = ?4 AND state = 'pending'",
                    params![state, user, code_hash.as_bytes(), version],
                )
                .map_err(backend)?;
            if n == 1 {
                append_event_tx(c, &event)?;
            }
            Ok(n == 1)
        }))
    }

    fn redeem_device(&self, code_hash: TokenHash, version: i64, grant: Grant, tokens: NewTokens, event: Event) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| {
            let n = c
                .execute(
                    "UPDATE device_codes SET state = 'redeemed', version = version + 1 \
                     WHERE code_hash = ?1 AND version = ?2 AND state = 'approved'",
                    params![code_hash.as_bytes(), version],
                )
                .map_err(backend)?;
            if n != 1 {
                return Ok(false);
            }
            insert_grant_tx(c, &grant)?;
            insert_tokens(c, grant.id.as_str(), &tokens)?;
            append_event_tx(c, &event)?;
            Ok(true)
        }))
    }

    fn insert_grant(&self, grant: Grant, tokens: NewTokens, event: Event) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| {
            insert_grant_tx(c, &grant)?;
            insert_tokens(c, grant.id.as_str(), &tokens)?;
            append_event_tx(c, &event).map(drop)
        }))
    }

    fn access_context(&self, access_hash: TokenHash) -> StoreFuture<'_, Option<AccessContext>> {
        Box::pin(self.read(move |c| {
            c.query_row(
                &format!(
                    "SELECT {GRANT_COLS}, t.issued_at, t.expires_at, u.name, u.disabled, coalesce(i.disabled, 1) \
                     FROM access_tokens t JOIN grants g ON g.id = t.grant_id JOIN users u ON u.id = g.user_id \
                     LEFT JOIN integrations i ON i.client_id = g.client_id WHERE t.hash = ?1"
                ),
                [access_hash.as_bytes()],
                |r| {
                    Ok(AccessContext {
                        grant: grant_from_row(r, 0)?,
                        token_issued_at: time_col(r, 10)?,
                        token_expires: time_col(r, 11)?,
                        user_name: r.get(12)?,
                        user_disabled: r.get::<_, i64>(13)? != 0,
                        integration_disabled: r.get::<_, i64>(14)? != 0,
                    })
                },
            )
            .optional()
            .map_err(backend)
        }))
    }

    fn refresh_token(&self, refresh_hash: TokenHash) -> StoreFuture<'_, Option<(RefreshToken, Grant)>> {
        Box::pin(self.read(move |c| {
            c.query_row(
                &format!(
                    "SELECT {GRANT_COLS}, t.issued_at, t.spent_at FROM refresh_tokens t JOIN grants g ON g.id = t.grant_id WHERE t.hash = ?1"
                ),
                [refresh_hash.as_bytes()],
                |r| Ok((RefreshToken { issued_at: time_col(r, 10)?, spent_at: opt_time_col(r, 11)? }, grant_from_row(r, 0)?)),
            )
            .optional()
            .map_err(backend)
        }))
    }

    fn rotate_refresh(&self, old: TokenHash, grant_id: GrantId, tokens: NewTokens, event: Event) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| {
            let n = c
                .execute(
                    "UPDATE refresh_tokens SET spent_at = ?1 WHERE hash = ?2 AND grant_id = ?3 AND spent_at IS NULL \
                     AND EXISTS (SELECT 1 FROM grants WHERE id = ?3 AND revoked_at IS NULL AND refresh_until > ?1)",
                    params![tokens.issued_at.millis(), old.as_bytes(), grant_id.as_str()],
                )
                .map_err(backend)?;
            if n != 1 {
                return Ok(false);
            }
            c.execute("UPDATE grants SET access_issued_at = ?1 WHERE id = ?2", params![tokens.issued_at.millis(), grant_id.as_str()])
                .map_err(backend)?;
            insert_tokens(c, grant_id.as_str(), &tokens)?;
            append_event_tx(c, &event)?;
            Ok(true)
        }))
    }

    fn revoke_grant(&self, grant_id: GrantId, at: UnixTime, event: Event) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| {
            let n = c
                .execute("UPDATE grants SET revoked_at = ?1 WHERE id = ?2 AND revoked_at IS NULL", params![at.millis(), grant_id.as_str()])
                .map_err(backend)?;
            if n != 1 {
                return Ok(false);
            }
            // The access tokens die with the grant; refresh tokens stay as
            // tombstones so a late replay is still recognised.
            c.execute("DELETE FROM access_tokens WHERE grant_id = ?1", [grant_id.as_str()]).map_err(backend)?;
            append_event_tx(c, &event)?;
            Ok(true)
        }))
    }

    fn list_grants(&self, include_ended: bool, now: UnixTime) -> StoreFuture<'_, Vec<GrantSummary>> {
        Box::pin(self.read(move |c| {
            let mut st = c
                .prepare(&format!(
                    "SELECT {GRANT_COLS}, coalesce(u.name, '') FROM grants g LEFT JOIN users u ON u.id = g.user_id \
                     WHERE ?1 OR (g.revoked_at IS NULL AND g.refresh_until > ?2) ORDER BY g.created_at, g.id"
                ))
                .map_err(backend)?;
            let rows = st
                .query_map(params![include_ended, now.millis()], |r| {
                    Ok(GrantSummary { grant: grant_from_row(r, 0)?, user_name: r.get(10)? })
                })
                .map_err(backend)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(backend)
        }))
    }

    fn counters(&self, keys: Vec<String>) -> StoreFuture<'_, Vec<Counter>> {
        Box::pin(self.read(move |c| {
            let mut out = Vec::with_capacity(keys.len());
            let mut st = c.prepare_cached("SELECT failures, window_start, locked_until FROM throttle WHERE key = ?1").map_err(backend)?;
            for k in &keys {
                out.push(st.query_row([k], counter_from_row).optional().map_err(backend)?.unwrap_or_default());
            }
            Ok(out)
        }))
    }

    fn record_failure(&self, keys: Vec<(String, Rule)>, event: Event) -> StoreFuture<'_, Vec<Counter>> {
        Box::pin(self.write(move |c| {
            let mut out = Vec::with_capacity(keys.len());
            append_event_tx(c, &event)?;
            for (key, rule) in &keys {
                let before = counter_of(c, key)?;
                let after = before.after_failure(*rule, event.at);
                c.execute(
                    "INSERT INTO throttle (key, failures, window_start, locked_until) VALUES (?1, ?2, ?3, ?4) \
                     ON CONFLICT (key) DO UPDATE SET failures = excluded.failures, window_start = excluded.window_start, locked_until = excluded.locked_until",
                    params![key, i64::from(after.failures), after.window_start.millis(), after.locked_until.map(UnixTime::millis)],
                )
                .map_err(backend)?;
                if after.is_locked(event.at) && !before.is_locked(event.at) {
                    append_event_tx(c, &lockout_event(&event, key))?;
                }
                out.push(after);
            }
            Ok(out)
        }))
    }

    fn clear_counters(&self, keys: Vec<String>) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| {
            for k in &keys {
                // A lockout in force stays until it ends.
                c.execute("UPDATE throttle SET failures = 0 WHERE key = ?1", [k]).map_err(backend)?;
            }
            Ok(())
        }))
    }

    fn append_event(&self, event: Event) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| append_event_tx(c, &event).map(drop)))
    }

    fn events(&self, f: EventFilter) -> StoreFuture<'_, Vec<StoredEvent>> {
        Box::pin(self.read(move |c| {
            let mut st = c
                .prepare(
                    "SELECT seq, at, kind, identity, client_id, source, request_id, object, detail, hash FROM events \
                     WHERE (?1 IS NULL OR at >= ?1) AND (?2 IS NULL OR at < ?2) AND (?3 IS NULL OR kind = ?3) \
                     AND (?4 IS NULL OR identity = ?4) AND (?5 IS NULL OR object = ?5) AND seq > coalesce(?6, 0) \
                     ORDER BY seq LIMIT ?7",
                )
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
                        i64::from(f.limit)
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
            Ok(n)
        }))
    }
    fn create_folders(&self, lineage: Vec<FolderPath>, event: Event) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| vault::create_folders(c, &lineage, &event)))
    }
    fn folders(&self) -> StoreFuture<'_, Vec<FolderPath>> {
        Box::pin(self.read(vault::folders))
    }
    fn folder_exists(&self, key: String) -> StoreFuture<'_, bool> {
        Box::pin(self.read(move |c| vault::folder_exists(c, &key)))
    }
    fn set_rights(&self, folder: FolderPath, user: UserId, rights: Rights, event: Event) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| vault::set_rights(c, &folder, &user, rights, &event)))
    }
    fn rights_of(&self, user: UserId) -> StoreFuture<'_, Vec<(String, Rights)>> {
        Box::pin(self.read(move |c| vault::rights_of(c, &user)))
    }
    fn all_rights(&self) -> StoreFuture<'_, Vec<(FolderPath, String, Rights)>> {
        Box::pin(self.read(vault::all_rights))
    }
    fn data_keys(&self) -> StoreFuture<'_, Vec<DataKeyRecord>> {
        Box::pin(self.read(vault::data_keys))
    }
    fn insert_data_key(&self, key: DataKeyRecord, event: Event) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| vault::insert_data_key(c, &key, &event)))
    }
    fn allocate_vault_id(&self) -> StoreFuture<'_, VaultId> {
        Box::pin(self.write(vault::allocate_vault_id))
    }
    fn insert_entry(&self, entry: VaultEntry, event: Event) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| vault::insert_entry(c, &entry, &event)))
    }
    fn entry(&self, id: VaultId) -> StoreFuture<'_, Option<VaultEntry>> {
        Box::pin(self.read(move |c| vault::entry(c, id)))
    }
    fn owners_of(&self, ids: Vec<VaultId>) -> StoreFuture<'_, Vec<(VaultId, Vec<FolderPath>)>> {
        Box::pin(self.read(move |c| vault::owners_of(c, &ids)))
    }
    fn vault_ids(&self, filter: VaultFilter) -> StoreFuture<'_, Vec<VaultId>> {
        Box::pin(self.read(move |c| vault::vault_ids(c, &filter)))
    }
    fn mutate_entry(&self, id: VaultId, vault_type: i32, event: Event) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| vault::mutate_entry(c, id, vault_type, &event)))
    }
    fn add_owner(&self, id: VaultId, owner: FolderPath, event: Event) -> StoreFuture<'_, AddOwner> {
        Box::pin(self.write(move |c| vault::add_owner(c, id, &owner, &event)))
    }
    fn remove_owner(&self, id: Option<VaultId>, owner: FolderPath, event: Event) -> StoreFuture<'_, OwnerRemoval> {
        Box::pin(self.write(move |c| vault::remove_owner(c, id, &owner, &event)))
    }
    fn key_names_in_use(&self) -> StoreFuture<'_, Vec<String>> {
        Box::pin(self.read(vault::key_names_in_use))
    }
    fn associations(&self, id: VaultId) -> StoreFuture<'_, Vec<StoredAssociation>> {
        Box::pin(self.read(move |c| vault::associations(c, id)))
    }
    fn put_association(&self, id: VaultId, association: StoredAssociation, event: Event) -> StoreFuture<'_, PutAssociation> {
        Box::pin(self.write(move |c| vault::put_association(c, id, &association, &event)))
    }
    fn dissociate(&self, id: VaultId, name: Option<String>, lookup: Option<[u8; 32]>, event: Event) -> StoreFuture<'_, u64> {
        Box::pin(self.write(move |c| vault::dissociate(c, id, name.as_deref(), lookup.as_ref(), &event)))
    }
    fn lookup_by_association(&self, name: String, lookup: Option<[u8; 32]>) -> StoreFuture<'_, Vec<VaultId>> {
        Box::pin(self.read(move |c| vault::lookup_by_association(c, &name, lookup.as_ref())))
    }
    fn sealed_on_old_keys(&self, current: i64, limit: u32) -> StoreFuture<'_, Vec<SealedItem>> {
        Box::pin(self.read(move |c| vault::sealed_on_old_keys(c, current, limit)))
    }
    fn reseal(&self, items: Vec<(SealedItem, i64, Vec<u8>)>, event: Event) -> StoreFuture<'_, u64> {
        Box::pin(self.write(move |c| vault::reseal(c, &items, &event)))
    }
}
