//! The PostgreSQL store, for several replicas sharing one database.
//!
//! Same behaviour as the SQLite store, proven by the same conformance suite.
//! Every method is one transaction at READ COMMITTED. Single-use transitions
//! are one conditional `UPDATE` whose row count decides the winner: a second
//! concurrent updater waits for the first, re-evaluates the `WHERE` on the
//! committed row and matches nothing. Every write transaction locks the one
//! `event_head` row first, before the rows it writes: it serialises the
//! hash chain across replicas, and one lock order means no deadlocks.
//!
//! Connections use TLS as `sslmode` says ([`tls`]); a multi-host string with
//! `target_session_attrs=read-write` connects to whichever host accepts
//! writes, so after a failover new connections go to the promoted standby.
//! A connection that saw a database error is not put back in the pool: it
//! may be broken, or on a server that no longer takes writes.

use deadpool_postgres::GenericClient;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use std::time::Duration;
use tokio_postgres::Row;
use tokio_postgres::error::SqlState;

use strongroom_core::event::{Event, EventKind, StoredEvent, chain_hash};
use strongroom_core::grant::device::DeviceAuthorization;
use strongroom_core::grant::{Grant, GrantId, Pair, Standing};
use strongroom_core::identity::{User, UserId};
use strongroom_core::integration::{AllowedUsers, GrantTypes, Integration, TokenOverrides};
use strongroom_core::scope::Scope;
use strongroom_core::throttle::{Counter, ORIGIN_RETENTION_DAYS};
use strongroom_core::time::UnixTime;
use strongroom_core::token::TokenHash;

use crate::sql;
use crate::{EventFilter, EventStore, Migration, NewTokens, StoreError, StoreFuture, StoreResult, device_state_from_parts};

pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration { version: 1, name: "0001_auth", sql: include_str!("../../migrations/postgres/0001_auth.sql") },
    Migration { version: 2, name: "0002_vault", sql: include_str!("../../migrations/postgres/0002_vault.sql") },
    Migration { version: 3, name: "0003_pairs", sql: include_str!("../../migrations/postgres/0003_pairs.sql") },
    Migration { version: 4, name: "0004_named_keys", sql: include_str!("../../migrations/postgres/0004_named_keys.sql") },
    Migration { version: 5, name: "0005_master_key_check", sql: include_str!("../../migrations/postgres/0005_master_key_check.sql") },
    Migration { version: 6, name: "0006_sign_in_limits", sql: include_str!("../../migrations/postgres/0006_sign_in_limits.sql") },
];

/// Connections per replica unless the connection string sets
/// `pool_max_size`: two per core and one (the batch writer keeps one of
/// them), at least 4 and at most 16. More connections than the database can
/// run at once only make its backends take turns: on the 2-core benchmark
/// machine a pool of 4-5 served `Associate` 15% faster than one of 16. All
/// replicas' pools share the server's `max_connections` (100 by default).
fn default_pool_size() -> usize {
    (2 * std::thread::available_parallelism().map_or(2, |n| n.get()) + 1).clamp(4, 16)
}

/// An arbitrary constant naming the migration lock.
const MIGRATION_LOCK: i64 = 0x5354_524f_4e47;

#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    describe: String,
    batch: batch::Batcher,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe)
    }
}

pub(crate) fn pg(e: tokio_postgres::Error) -> StoreError {
    if e.code() == Some(&SqlState::UNIQUE_VIOLATION) { StoreError::Conflict } else { StoreError::Backend(describe_error(&e)) }
}

/// The driver's error with its causes (the TLS or I/O failure behind
/// "error performing TLS handshake"); of a database error only its code and
/// message, never its DETAIL (which can quote row values).
pub(crate) fn describe_error(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{} ({}): {}", db.severity(), db.code().code(), db.message());
    }
    let mut out = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

/// What a connection string makes of the connection, without connecting
/// and without its password: hosts, database, user, whether a password is
/// set, TLS, `target_session_attrs`, the pool.
pub(crate) fn describe(url: &str) -> StoreResult<String> {
    let connect = tls::parse(url)?;
    Ok(describe_connect(&connect, connect.pool_max_size.unwrap_or_else(default_pool_size)))
}

fn describe_connect(connect: &tls::Connect, pool: usize) -> String {
    let config = &connect.config;
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match h {
                tokio_postgres::config::Host::Tcp(s) => format!("{s}:{port}"),
                #[cfg(unix)]
                tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
            }
        })
        .collect();
    format!(
        "postgres hosts={} dbname={} user={} password={} sslmode={} target_session_attrs={:?} (pool max {pool})",
        hosts.join(","),
        config.get_dbname().unwrap_or(""),
        config.get_user().unwrap_or(""),
        if config.get_password().is_some() { "(set)" } else { "(none)" },
        connect.mode.as_str(),
        config.get_target_session_attrs(),
    )
}

impl PgStore {
    /// Connects, and applies migrations under an advisory lock (replicas may
    /// start together).
    pub async fn connect(url: &str) -> StoreResult<PgStore> {
        Self::with_config(tls::parse(url)?).await
    }

    async fn with_config(connect: tls::Connect) -> StoreResult<PgStore> {
        let size = connect.pool_max_size.unwrap_or_else(default_pool_size);
        let describe = describe_connect(&connect, size);
        let tls::Connect { config, tls, .. } = connect;
        let manager = Manager::from_config(config, tls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(size)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs(10)))
            .create_timeout(Some(Duration::from_secs(10)))
            .build()
            .map_err(|e| StoreError::Backend(format!("connection pool: {e}")))?;
        let store = PgStore { batch: batch::Batcher::spawn(pool.clone()), pool, describe };
        store.migrate().await?;
        Ok(store)
    }

    pub(crate) async fn client(&self) -> StoreResult<Object> {
        checkout(&self.pool).await
    }

    async fn migrate(&self) -> StoreResult<()> {
        let mut c = self.client().await?;
        let tx = c.transaction().await.map_err(pg)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await.map_err(pg)?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
        )
        .await
        .map_err(pg)?;
        for m in MIGRATIONS {
            let done = tx.query_opt("SELECT 1 FROM schema_migrations WHERE version = $1", &[&m.version]).await.map_err(pg)?;
            if done.is_none() {
                tx.batch_execute(m.sql).await.map_err(pg)?;
                tx.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, extract(epoch from now())::bigint)",
                    &[&m.version, &m.name],
                )
                .await
                .map_err(pg)?;
            }
        }
        tx.commit().await.map_err(pg)
    }
}

pub(super) fn get<'a, T: tokio_postgres::types::FromSql<'a>>(row: &'a Row, idx: usize) -> StoreResult<T> {
    row.try_get(idx).map_err(|e| StoreError::Corrupt(e.to_string()))
}

pub(super) fn time(row: &Row, idx: usize) -> StoreResult<UnixTime> {
    Ok(UnixTime::from_millis(get(row, idx)?))
}

pub(super) fn opt_time(row: &Row, idx: usize) -> StoreResult<Option<UnixTime>> {
    Ok(get::<Option<i64>>(row, idx)?.map(UnixTime::from_millis))
}

pub(super) fn hash(row: &Row, idx: usize) -> StoreResult<TokenHash> {
    TokenHash::from_slice(&get::<Vec<u8>>(row, idx)?).ok_or_else(|| StoreError::Corrupt("token hash".into()))
}

pub(super) fn scope(row: &Row, idx: usize) -> StoreResult<Scope> {
    Scope::parse(&get::<String>(row, idx)?).map_err(|e| StoreError::Corrupt(format!("stored scope: {e}")))
}

pub(super) const USER_COLS: &str = "id, name, disabled, master_admin, created_at";

pub(super) fn user_from_row(row: &Row) -> StoreResult<User> {
    Ok(User {
        id: UserId::from_stored(get(row, 0)?),
        name: get(row, 1)?,
        disabled: get(row, 2)?,
        master_admin: get(row, 3)?,
        created_at: time(row, 4)?,
    })
}

fn opt_hash(row: &Row, idx: usize) -> StoreResult<Option<TokenHash>> {
    match get::<Option<Vec<u8>>>(row, idx)? {
        None => Ok(None),
        Some(v) => TokenHash::from_slice(&v).map(Some).ok_or_else(|| StoreError::Corrupt("token hash".into())),
    }
}

/// Reads the [`sql::GRANT_COLS`] starting at column `o`.
pub(super) fn grant_from_row(row: &Row, o: usize) -> StoreResult<Grant> {
    let rotated_from = match (opt_hash(row, o + 13)?, opt_time(row, o + 14)?) {
        (Some(h), Some(at)) => Some((h, at)),
        _ => None,
    };
    Ok(Grant {
        id: GrantId::from_stored(get(row, o)?),
        client_id: get(row, o + 1)?,
        user_id: UserId::from_stored(get(row, o + 2)?),
        scope: scope(row, o + 3)?,
        created_at: time(row, o + 4)?,
        refresh_until: time(row, o + 5)?,
        refreshable: get(row, o + 6)?,
        access_issued_at: time(row, o + 7)?,
        access_validity: get(row, o + 8)?,
        revoked_at: opt_time(row, o + 9)?,
        pair: Pair { refresh: opt_hash(row, o + 10)?, access: opt_hash(row, o + 11)?, used: get(row, o + 12)?, rotated_from },
        version: get(row, o + 15)?,
    })
}

/// The grant at column `o`, if the (left-joined) row has one.
pub(super) fn opt_grant_from_row(row: &Row, o: usize) -> StoreResult<Option<Grant>> {
    if get::<Option<String>>(row, o)?.is_none() { Ok(None) } else { grant_from_row(row, o).map(Some) }
}

/// Reads the standing columns of `sql` starting at column `o`.
pub(super) fn standing_from_row(row: &Row, o: usize) -> StoreResult<Standing> {
    let max_scope = match get::<Option<String>>(row, o + 2)? {
        Some(s) => Scope::parse(&s).map_err(|e| StoreError::Corrupt(format!("stored scope: {e}")))?,
        None => Scope::default(),
    };
    Ok(Standing {
        integration_found: get(row, o)?,
        integration_disabled: get::<Option<bool>>(row, o + 1)?.unwrap_or(false),
        max_scope,
        user_found: get(row, o + 3)?,
        user_disabled: get::<Option<bool>>(row, o + 4)?.unwrap_or(false),
        user_allowed: get::<Option<bool>>(row, o + 5)?.unwrap_or(false),
    })
}

/// Runs one statement, prepared once per connection.
pub(super) async fn exec(c: &impl GenericClient, sql: &str, params: &[Param<'_>]) -> StoreResult<u64> {
    let st = c.prepare_cached(sql).await.map_err(pg)?;
    c.execute(&st, params).await.map_err(pg)
}

/// Queries at most one row with a statement prepared once per connection.
pub(super) async fn query_opt(c: &impl GenericClient, sql: &str, params: &[Param<'_>]) -> StoreResult<Option<Row>> {
    let st = c.prepare_cached(sql).await.map_err(pg)?;
    c.query_opt(&st, params).await.map_err(pg)
}

/// Queries exactly one row with a statement prepared once per connection.
pub(super) async fn query_one(c: &impl GenericClient, sql: &str, params: &[Param<'_>]) -> StoreResult<Row> {
    let st = c.prepare_cached(sql).await.map_err(pg)?;
    c.query_one(&st, params).await.map_err(pg)
}

/// Queries rows with a statement prepared once per connection.
pub(super) async fn query(c: &impl GenericClient, sql: &str, params: &[Param<'_>]) -> StoreResult<Vec<Row>> {
    let st = c.prepare_cached(sql).await.map_err(pg)?;
    c.query(&st, params).await.map_err(pg)
}

pub(super) const INTEGRATION_COLS: &str = "client_id, name, max_scope, allow_all_users, allow_device, allow_password, access_validity, grant_validity, refreshable, device_code_validity, poll_interval, disabled, retry_window";

pub(super) fn integration_from_row(row: &Row) -> StoreResult<Integration> {
    Ok(Integration {
        client_id: get(row, 0)?,
        name: get(row, 1)?,
        max_scope: scope(row, 2)?,
        allowed_users: if get(row, 3)? { AllowedUsers::Everyone } else { AllowedUsers::Only(Vec::new()) },
        grant_types: GrantTypes { device: get(row, 4)?, password: get(row, 5)? },
        overrides: TokenOverrides {
            access_validity: get(row, 6)?,
            grant_validity: get(row, 7)?,
            refreshable: get(row, 8)?,
            device_code_validity: get(row, 9)?,
            poll_interval: get(row, 10)?,
            retry_window: get(row, 12)?,
        },
        disabled: get(row, 11)?,
    })
}

pub(super) type Param<'a> = &'a (dyn tokio_postgres::types::ToSql + Sync);

/// The values of [`INTEGRATION_COLS`], in order: shared by insert and update.
/// `scope` is `i.max_scope` as text, owned by the caller.
pub(super) fn integration_values<'a>(i: &'a Integration, scope: &'a String) -> Vec<Param<'a>> {
    vec![
        &i.client_id,
        &i.name,
        scope,
        if i.allowed_users == AllowedUsers::Everyone { &true } else { &false },
        &i.grant_types.device,
        &i.grant_types.password,
        &i.overrides.access_validity,
        &i.overrides.grant_validity,
        &i.overrides.refreshable,
        &i.overrides.device_code_validity,
        &i.overrides.poll_interval,
        &i.disabled,
        &i.overrides.retry_window,
    ]
}

/// `$1, $2, …, $n`.
pub(super) fn placeholders(n: usize) -> String {
    (1..=n).map(|k| format!("${k}")).collect::<Vec<_>>().join(", ")
}

pub(super) async fn load_allowed(c: &impl GenericClient, i: &mut Integration) -> StoreResult<()> {
    if let AllowedUsers::Only(list) = &mut i.allowed_users {
        for r in
            c.query("SELECT user_id FROM integration_users WHERE client_id = $1 ORDER BY user_id", &[&i.client_id]).await.map_err(pg)?
        {
            list.push(UserId::from_stored(get(&r, 0)?));
        }
    }
    Ok(())
}

pub(super) async fn save_allowed(c: &impl GenericClient, i: &Integration) -> StoreResult<()> {
    c.execute("DELETE FROM integration_users WHERE client_id = $1", &[&i.client_id]).await.map_err(pg)?;
    if let AllowedUsers::Only(list) = &i.allowed_users {
        for u in list {
            c.execute("INSERT INTO integration_users (client_id, user_id) VALUES ($1, $2)", &[&i.client_id, &u.as_str()])
                .await
                .map_err(pg)?;
        }
    }
    Ok(())
}

pub(super) fn device_from_row(row: &Row) -> StoreResult<DeviceAuthorization> {
    let state: String = get(row, 4)?;
    Ok(DeviceAuthorization {
        code_hash: hash(row, 0)?,
        user_code_hash: hash(row, 1)?,
        client_id: get(row, 2)?,
        scope: scope(row, 3)?,
        state: device_state_from_parts(&state, get(row, 5)?)?,
        created_at: time(row, 6)?,
        expires_at: time(row, 7)?,
        interval_secs: get(row, 8)?,
        last_poll_at: opt_time(row, 9)?,
        version: get(row, 10)?,
    })
}

/// The event head row (`seq`, `hash`).
pub(crate) fn event_head(row: &Row) -> StoreResult<(i64, [u8; 32])> {
    Ok((get(row, 0)?, crate::stored_hash32(get(row, 1)?)?))
}

/// Locks the event chain's head row until the transaction ends: the first
/// lock of every write transaction (see `in_tx!`).
pub(crate) async fn lock_event_head(c: &impl GenericClient) -> StoreResult<()> {
    query_one(c, HEAD_FOR_UPDATE, &[]).await.map(drop)
}

/// The event chain's head, locked until the transaction ends.
pub(crate) const HEAD_FOR_UPDATE: &str = "SELECT seq, hash FROM event_head WHERE id = 1 FOR UPDATE";

/// Appends `e` to the chained event log inside the caller's transaction
/// (which holds the head's lock already, or takes it here).
pub(crate) async fn append_event(c: &impl GenericClient, e: &Event) -> StoreResult<i64> {
    let (seq, prev) = event_head(&query_one(c, HEAD_FOR_UPDATE, &[]).await?)?;
    let seq = seq + 1;
    let h = chain_hash(&prev, seq, e);
    exec(
        c,
        "INSERT INTO events (seq, at, kind, identity, client_id, source, request_id, object, detail, hash) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        &EventRow::new(seq, e, &h).params(),
    )
    .await?;
    exec(c, "UPDATE event_head SET seq = $1, hash = $2 WHERE id = 1", &[&seq, &&h[..]]).await?;
    Ok(seq)
}

/// The `events` row of `e` at `seq` with chain hash `hash`: the ten
/// parameters, in column order (seq, at, kind, identity, client_id, source,
/// request_id, object, detail, hash), of every statement that writes one.
pub(crate) struct EventRow<'a> {
    seq: i64,
    at: i64,
    kind: &'static str,
    e: &'a Event,
    hash: &'a [u8],
}

impl<'a> EventRow<'a> {
    pub(crate) fn new(seq: i64, e: &'a Event, hash: &'a [u8; 32]) -> EventRow<'a> {
        EventRow { seq, at: e.at.millis(), kind: e.kind.as_str(), e, hash }
    }

    pub(crate) fn params(&self) -> [Param<'_>; 10] {
        let e = self.e;
        [&self.seq, &self.at, &self.kind, &e.identity, &e.client_id, &e.source, &e.request_id, &e.object, &e.detail, &self.hash]
    }
}

pub(super) async fn insert_tokens(c: &impl GenericClient, grant_id: &str, t: &NewTokens) -> StoreResult<()> {
    exec(c, sql::INSERT_ACCESS.postgres(), &[&t.access_hash.as_bytes(), &grant_id, &t.issued_at.millis(), &t.access_expires.millis()])
        .await?;
    if let Some(rh) = &t.refresh_hash {
        exec(c, sql::INSERT_REFRESH.postgres(), &[&rh.as_bytes(), &grant_id, &t.issued_at.millis()]).await?;
    }
    Ok(())
}

/// Inserts a grant whose first pair is `t`.
pub(super) async fn insert_grant(c: &impl GenericClient, g: &Grant, t: &NewTokens) -> StoreResult<()> {
    exec(
        c,
        sql::INSERT_GRANT.postgres(),
        &[
            &g.id.as_str(),
            &g.client_id,
            &g.user_id.as_str(),
            &g.scope.to_string(),
            &g.created_at.millis(),
            &g.refresh_until.millis(),
            &g.refreshable,
            &g.access_issued_at.millis(),
            &g.access_validity,
            &g.revoked_at.map(UnixTime::millis),
            &t.refresh_hash.as_ref().map(TokenHash::as_bytes),
            &t.access_hash.as_bytes(),
            &false,
            &Option::<&[u8]>::None,
            &Option::<i64>::None,
            &0i64,
        ],
    )
    .await?;
    insert_tokens(c, g.id.as_str(), t).await
}

pub(super) fn counter_from_row(row: &Row) -> StoreResult<Counter> {
    Ok(Counter {
        failures: u32::try_from(get::<i64>(row, 0)?).unwrap_or(u32::MAX),
        window_start: time(row, 1)?,
        locked_until: opt_time(row, 2)?,
    })
}

/// A throttle counter, locked for this transaction (created at zero if
/// absent). A transaction that locks several takes them in key order, so
/// two never wait on each other.
pub(super) async fn counter_for_update(c: &impl GenericClient, key: &str) -> StoreResult<Counter> {
    c.execute(
        "INSERT INTO throttle (key, failures, window_start, locked_until) VALUES ($1, 0, 0, NULL) ON CONFLICT (key) DO NOTHING",
        &[&key],
    )
    .await
    .map_err(pg)?;
    let row =
        c.query_one("SELECT failures, window_start, locked_until FROM throttle WHERE key = $1 FOR UPDATE", &[&key]).await.map_err(pg)?;
    counter_from_row(&row)
}

pub(super) fn event_from_row(row: &Row) -> StoreResult<StoredEvent> {
    let kind: String = get(row, 2)?;
    Ok(StoredEvent {
        seq: get(row, 0)?,
        event: Event {
            at: time(row, 1)?,
            kind: EventKind::parse(&kind).ok_or_else(|| StoreError::Corrupt(format!("event kind {kind:?}")))?,
            identity: get(row, 3)?,
            client_id: get(row, 4)?,
            source: get(row, 5)?,
            request_id: get(row, 6)?,
            object: get(row, 7)?,
            detail: get(row, 8)?,
        },
        hash: get::<Vec<u8>>(row, 9)?.try_into().map_err(|_| StoreError::Corrupt("event hash".into()))?,
    })
}

/// How the error of a connection that could not be had begins.
pub(crate) const CONNECTING: &str = "connecting: ";

/// A pooled connection.
pub(crate) async fn checkout(pool: &Pool) -> StoreResult<Object> {
    pool.get().await.map_err(|e| match e {
        deadpool_postgres::PoolError::Backend(e) => StoreError::Backend(format!("{CONNECTING}{}", describe_error(&e))),
        other => StoreError::Backend(format!("{CONNECTING}{other}")),
    })
}

/// Gives a connection back to the pool, unless its work failed in the
/// database: a closed connection, a server shutting down or turned read-only
/// (a demoted primary) must not serve the next request. Unique violations
/// (`Conflict`) and the other expected outcomes keep it.
pub(crate) fn release<T>(client: Object, out: &StoreResult<T>) {
    if matches!(out, Err(StoreError::Backend(_))) {
        drop(Object::take(client));
    }
}

/// Runs `$body` in a transaction on a pooled client bound to `$tx`, and
/// commits when it returns `Ok`.
///
/// The transaction's first lock is the event chain's head
/// ([`lock_event_head`]), before any row it writes: every transaction that
/// may append an event takes its locks in that one order, as the batch
/// writer does, so a revocation racing a refresh of the same grant (or an
/// entry update racing an `Associate`) waits its turn instead of
/// deadlocking. The head is held until the commit in any case, so this
/// costs no concurrency that the chain had not already taken.
macro_rules! in_tx {
    ($self:ident, |$tx:ident| $body:block) => {
        Box::pin(async move {
            let mut client = $self.client().await?;
            let out = async {
                let $tx = client.transaction().await.map_err(pg)?;
                $crate::postgres::lock_event_head(&$tx).await?;
                let out = $body;
                if out.is_ok() {
                    $tx.commit().await.map_err(pg)?;
                }
                out
            }
            .await;
            $crate::postgres::release(client, &out);
            out
        })
    };
}

/// Runs `$body` in a transaction on a pooled client bound to `$tx`, and
/// commits when it returns `Ok`; unlike [`in_tx`] it takes no chain lock, so
/// it must append no event: the throttle counters' slots, taken and given
/// back around a check.
macro_rules! in_plain_tx {
    ($self:ident, |$tx:ident| $body:block) => {
        Box::pin(async move {
            let mut client = $self.client().await?;
            let out = async {
                let $tx = client.transaction().await.map_err(pg)?;
                let out = $body;
                if out.is_ok() {
                    $tx.commit().await.map_err(pg)?;
                }
                out
            }
            .await;
            $crate::postgres::release(client, &out);
            out
        })
    };
}

/// Runs `$body` on a pooled client bound to `$c`.
macro_rules! on_client {
    ($self:ident, |$c:ident| $body:block) => {
        Box::pin(async move {
            let $c = $self.client().await?;
            let out = async { $body }.await;
            $crate::postgres::release($c, &out);
            out
        })
    };
}

// The store's parts, after the macros they use.
mod admin;
mod auth;
mod batch;
mod tls;
mod transfer;
mod vault;

impl EventStore for PgStore {
    fn describe(&self) -> String {
        self.describe.clone()
    }
    fn ready(&self) -> StoreFuture<'_, ()> {
        on_client!(self, |c| {
            // Prepared once per connection: load balancers ask often. A
            // server in recovery (a standby, or a primary demoted under a
            // connection the pool still holds) takes no writes: not ready.
            let r = query_one(&c, "SELECT max(version), pg_is_in_recovery() FROM schema_migrations", &[]).await?;
            if get::<bool>(&r, 1)? {
                return Err(StoreError::Backend("the database is in recovery (a standby): it takes no writes".into()));
            }
            crate::check_schema(get::<Option<i64>>(&r, 0)?)
        })
    }
    fn observe(&self, observer: std::sync::Arc<dyn crate::StoreObserver>) {
        self.batch.observer.set(observer);
    }
    fn pool_status(&self) -> crate::PoolStatus {
        let s = self.pool.status();
        crate::PoolStatus { max: s.max_size, in_use: s.size.saturating_sub(s.available), waiting: s.waiting }
    }
    fn append_event(&self, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| { append_event(&tx, &event).await.map(drop) })
    }
    fn events(&self, f: EventFilter) -> StoreFuture<'_, Vec<StoredEvent>> {
        on_client!(self, |c| {
            let rows = c
                .query(
                    &format!(
                        "SELECT seq, at, kind, identity, client_id, source, request_id, object, detail, hash FROM events \
                         WHERE ($1::BIGINT IS NULL OR at >= $1) AND ($2::BIGINT IS NULL OR at < $2) AND ($3::TEXT IS NULL OR kind = $3) \
                         AND ($4::TEXT IS NULL OR identity = $4) AND ($5::TEXT IS NULL OR object = $5) AND seq > coalesce($6::BIGINT, 0) \
                         AND {} ORDER BY seq LIMIT $7",
                        // A VaultID is at most 19 digits; anything else is no entry.
                        sql::visible_to(
                            "$8::TEXT",
                            "$9::TEXT",
                            "(CASE WHEN events.object ~ '^[0-9]{1,18}$' THEN events.object::BIGINT END)"
                        )
                    ),
                    &[
                        &f.since.map(UnixTime::millis),
                        &f.until.map(UnixTime::millis),
                        &f.kind,
                        &f.identity,
                        &f.object,
                        &f.after_seq,
                        &i64::from(f.limit),
                        &f.viewer.as_ref().map(|v| v.identity.as_str()),
                        &f.viewer.as_ref().map(|v| v.user_id.as_str()),
                    ],
                )
                .await
                .map_err(pg)?;
            rows.iter().map(event_from_row).collect()
        })
    }
    fn event_head(&self) -> StoreFuture<'_, (i64, [u8; 32])> {
        on_client!(self, |c| { event_head(&query_one(&c, "SELECT seq, hash FROM event_head WHERE id = 1", &[]).await?) })
    }
    fn purge(&self, before: UnixTime) -> StoreFuture<'_, u64> {
        in_tx!(self, |tx| {
            async {
                let t = before.millis();
                let mut n = 0u64;
                for sql in [
                    "DELETE FROM device_codes WHERE expires_at < $1",
                    "DELETE FROM grants WHERE refresh_until < $1",
                    "DELETE FROM access_tokens WHERE expires_at < $1",
                    "DELETE FROM throttle WHERE window_start < $1 AND (locked_until IS NULL OR locked_until < $1)",
                ] {
                    n += tx.execute(sql, &[&t]).await.map_err(pg)?;
                }
                let forgotten = before.plus_secs(-ORIGIN_RETENTION_DAYS * 86_400).millis();
                n += tx.execute("DELETE FROM sign_in_origins WHERE last_success < $1", &[&forgotten]).await.map_err(pg)?;
                Ok(n)
            }
            .await
        })
    }
}

pub mod testing {
    //! Helpers for tests against a shared PostgreSQL server.

    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::{PgStore, pg};
    use crate::{Store, StoreResult};

    static COUNTER: AtomicU32 = AtomicU32::new(0);

    /// A store in a new, empty schema of its own on the server at `url`.
    pub async fn fresh_schema(url: &str) -> StoreResult<Arc<dyn Store>> {
        Ok(fresh_schema_named(url).await?.0)
    }

    /// [`fresh_schema`], and the schema's name (for tests that reach underneath).
    pub async fn fresh_schema_named(url: &str) -> StoreResult<(Arc<dyn Store>, String)> {
        let mut connect = super::tls::parse(url)?;
        let nanos = std::time::SystemTime::UNIX_EPOCH.elapsed().map(|d| d.subsec_nanos()).unwrap_or(0);
        let schema = format!("t_{}_{}_{}", std::process::id(), nanos, COUNTER.fetch_add(1, Ordering::Relaxed));
        let (client, conn) = connect.config.connect(connect.tls.clone()).await.map_err(pg)?;
        let driver = tokio::spawn(conn);
        client.batch_execute(&format!("CREATE SCHEMA {schema}")).await.map_err(pg)?;
        drop(client);
        let _ = driver.await;
        connect.config.options(format!("-c search_path={schema}"));
        Ok((Arc::new(PgStore::with_config(connect).await?), schema))
    }

    /// A new, empty schema on the server at `url`; the URL that selects it,
    /// for a server started as another process. Nothing is migrated yet.
    pub async fn fresh_schema_url(url: &str) -> StoreResult<String> {
        let connect = super::tls::parse(url)?;
        let nanos = std::time::SystemTime::UNIX_EPOCH.elapsed().map(|d| d.subsec_nanos()).unwrap_or(0);
        let schema = format!("u_{}_{}_{}", std::process::id(), nanos, COUNTER.fetch_add(1, Ordering::Relaxed));
        let (client, conn) = connect.config.connect(connect.tls).await.map_err(pg)?;
        let driver = tokio::spawn(conn);
        client.batch_execute(&format!("CREATE SCHEMA {schema}")).await.map_err(pg)?;
        drop(client);
        let _ = driver.await;
        let sep = if url.contains('?') { '&' } else { '?' };
        Ok(format!("{url}{sep}options=-c%20search_path%3D{schema}"))
    }

    /// Connects once to `url` as the store would and answers whether that
    /// connection is encrypted (`pg_stat_ssl`) and, when it is, with which
    /// TLS version.
    pub async fn tls_in_use(url: &str) -> StoreResult<Option<String>> {
        let connect = super::tls::parse(url)?;
        let (client, conn) = connect.config.connect(connect.tls).await.map_err(pg)?;
        let driver = tokio::spawn(conn);
        let row = client.query_one("SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[]).await.map_err(pg)?;
        let ssl: bool = super::get(&row, 0)?;
        let version: Option<String> = super::get(&row, 1)?;
        drop(client);
        let _ = driver.await;
        Ok(if ssl { Some(version.unwrap_or_default()) } else { None })
    }
}
