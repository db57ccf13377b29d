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
//! A connection that saw a database failure is not put back in the pool: it
//! may be broken, or on a server that no longer takes writes.
//!
//! Here: the pool, migrations under an advisory lock, the connection trait
//! of [`crate::ops`] over a pooled connection or transaction ([`Pg`]), the
//! binding of the codec's values as the types the server inferred, and the
//! classification of tokio-postgres's errors ([`classify`]); the store's
//! four parts and the copier are `store.rs`, the group commits `batch.rs`
//! (refresh and `Associate`, one statement each) and `group.rs` (every other
//! write of the request path).

use deadpool_postgres::GenericClient;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime};
use std::borrow::Cow;
use std::error::Error as _;
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use crate::codec::{Cols, Row, Value};
use crate::ops::Conn;
use crate::sql::Sql;
use crate::{ErrorKind, Migration, ObserverSlot, StoreError, StoreResult};

pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration { version: 1, name: "0001_auth", sql: include_str!("../../migrations/postgres/0001_auth.sql") },
    Migration { version: 2, name: "0002_vault", sql: include_str!("../../migrations/postgres/0002_vault.sql") },
    Migration { version: 3, name: "0003_pairs", sql: include_str!("../../migrations/postgres/0003_pairs.sql") },
    Migration { version: 4, name: "0004_named_keys", sql: include_str!("../../migrations/postgres/0004_named_keys.sql") },
    Migration { version: 5, name: "0005_master_key_check", sql: include_str!("../../migrations/postgres/0005_master_key_check.sql") },
    Migration { version: 6, name: "0006_sign_in_limits", sql: include_str!("../../migrations/postgres/0006_sign_in_limits.sql") },
    Migration { version: 7, name: "0007_grant_keyed_tokens", sql: include_str!("../../migrations/postgres/0007_grant_keyed_tokens.sql") },
    Migration { version: 8, name: "0008_machine_grants", sql: include_str!("../../migrations/postgres/0008_machine_grants.sql") },
    Migration { version: 9, name: "0009_people", sql: include_str!("../../migrations/postgres/0009_people.sql") },
    Migration { version: 10, name: "0010_tree", sql: include_str!("../../migrations/postgres/0010_tree.sql") },
    Migration { version: 11, name: "0011_group_owners", sql: include_str!("../../migrations/postgres/0011_group_owners.sql") },
    Migration {
        version: 12,
        name: "0012_integration_version",
        sql: include_str!("../../migrations/postgres/0012_integration_version.sql"),
    },
    Migration { version: 13, name: "0013_console_epochs", sql: include_str!("../../migrations/postgres/0013_console_epochs.sql") },
    Migration { version: 14, name: "0014_one_token_layout", sql: include_str!("../../migrations/postgres/0014_one_token_layout.sql") },
    Migration { version: 15, name: "0015_certificates", sql: include_str!("../../migrations/postgres/0015_certificates.sql") },
    Migration {
        version: 16,
        name: "0016_certificate_templates",
        sql: include_str!("../../migrations/postgres/0016_certificate_templates.sql"),
    },
    Migration { version: 17, name: "0017_certificate_fields", sql: include_str!("../../migrations/postgres/0017_certificate_fields.sql") },
    Migration {
        version: 18,
        name: "0018_certificate_approval",
        sql: include_str!("../../migrations/postgres/0018_certificate_approval.sql"),
    },
];

/// Connections per replica unless the connection string sets
/// `pool_max_size`: two per core and two (the batch writer and the reader
/// of coalesced context reads keep one each), at least 4 and at most 16. More connections than the database can
/// run at once only make its backends take turns: on the 2-core benchmark
/// machine a pool of 4-5 served `Associate` 15% faster than one of 16. All
/// replicas' pools share the server's `max_connections` (100 by default).
fn default_pool_size() -> usize {
    (2 * std::thread::available_parallelism().map_or(2, |n| n.get()) + 2).clamp(4, 16)
}

/// An arbitrary constant naming the migration lock.
const MIGRATION_LOCK: i64 = 0x5354_524f_4e47;

#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    describe: String,
    batch: batch::Batcher,
    /// The coalesced context reads (`coalesced!`).
    reader: read::Reader,
    /// The group commit of every other request-path write (`in_batch!`).
    group: group::Group,
    /// Told each batch's size and time, and every failure's kind.
    observer: ObserverSlot,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe)
    }
}

/// Classifies a driver error, once, where tokio-postgres hands it over. Of
/// a database error only its severity, code and message are kept, never its
/// DETAIL (which can quote row values).
pub(crate) fn classify(e: tokio_postgres::Error) -> StoreError {
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let kind = if *code == SqlState::UNIQUE_VIOLATION {
            ErrorKind::Conflict
        } else if [
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::T_R_DEADLOCK_DETECTED,
            SqlState::LOCK_NOT_AVAILABLE,
            SqlState::QUERY_CANCELED,
            SqlState::TOO_MANY_CONNECTIONS,
        ]
        .contains(code)
        {
            ErrorKind::Busy
        } else if *code == SqlState::READ_ONLY_SQL_TRANSACTION {
            ErrorKind::ReadOnly
        } else if [SqlState::ADMIN_SHUTDOWN, SqlState::CRASH_SHUTDOWN, SqlState::CANNOT_CONNECT_NOW].contains(code)
            || code.code().starts_with("08")
        {
            // A server shutting down, starting up or in recovery, or a connection exception.
            ErrorKind::Unavailable
        } else if [SqlState::DATA_CORRUPTED, SqlState::INDEX_CORRUPTED].contains(code) {
            ErrorKind::Corrupt
        } else {
            ErrorKind::Other
        };
        return StoreError::new(kind, format!("{} ({}): {}", db.severity(), code.code(), db.message()));
    }
    let kind = match io_cause(&e) {
        // tokio-postgres's refusal of a server that takes no writes
        // (`target_session_attrs=read-write` against a standby).
        Some(io) if io.kind() == std::io::ErrorKind::PermissionDenied => ErrorKind::ReadOnly,
        Some(_) => ErrorKind::Unavailable,
        None if e.is_closed() => ErrorKind::Unavailable,
        None => ErrorKind::Other,
    };
    StoreError::new(kind, describe_error(&e))
}

/// The I/O failure behind a driver error, if one is.
fn io_cause(e: &tokio_postgres::Error) -> Option<&std::io::Error> {
    let mut cause = e.source();
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        cause = c.source();
    }
    None
}

/// The driver's error with its causes (the TLS or I/O failure behind
/// "error performing TLS handshake").
fn describe_error(e: &tokio_postgres::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

/// A connection that could not be had from the pool.
fn pool_error(e: PoolError) -> StoreError {
    let connecting = |e: StoreError| match e {
        StoreError::Failed { kind, message } => StoreError::new(kind, format!("connecting: {message}")),
        other => other,
    };
    match e {
        PoolError::Backend(e) => connecting(classify(e)),
        PoolError::Timeout(deadpool_postgres::TimeoutType::Wait) => {
            StoreError::new(ErrorKind::Busy, "no database connection came free in time")
        }
        PoolError::Timeout(_) => StoreError::new(ErrorKind::Unavailable, "connecting: timed out"),
        PoolError::Closed => StoreError::Closed,
        other => StoreError::other(format!("connecting: {other}")),
    }
}

/// Binds a value as the type the server inferred for the parameter: an
/// integer as `BIGINT`, `INTEGER` or `SMALLINT` (checked), text, bytes,
/// booleans as themselves; NULL as anything.
impl ToSql for Value<'_> {
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(v) => match *ty {
                Type::INT4 => i32::try_from(*v)?.to_sql_checked(ty, out),
                Type::INT2 => i16::try_from(*v)?.to_sql_checked(ty, out),
                _ => v.to_sql_checked(ty, out),
            },
            Value::Bool(b) => b.to_sql_checked(ty, out),
            Value::Text(t) => t.as_ref().to_sql_checked(ty, out),
            Value::Bytes(b) => b.as_ref().to_sql_checked(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl Row for tokio_postgres::Row {
    fn value(&self, i: usize) -> StoreResult<Value<'_>> {
        let ty = self.columns().get(i).ok_or_else(|| StoreError::corrupt(format!("no column {i}")))?.type_();
        let v = match *ty {
            Type::INT8 => self.try_get::<_, Option<i64>>(i).map(|v| v.map(Value::Int)),
            Type::INT4 => self.try_get::<_, Option<i32>>(i).map(|v| v.map(Value::from)),
            Type::INT2 => self.try_get::<_, Option<i16>>(i).map(|v| v.map(|v| Value::Int(i64::from(v)))),
            Type::BOOL => self.try_get::<_, Option<bool>>(i).map(|v| v.map(Value::Bool)),
            Type::BYTEA => self.try_get::<_, Option<&[u8]>>(i).map(|v| v.map(|b| Value::Bytes(Cow::Borrowed(b)))),
            _ => self.try_get::<_, Option<&str>>(i).map(|v| v.map(|t| Value::Text(Cow::Borrowed(t)))),
        };
        v.map(|v| v.unwrap_or(Value::Null)).map_err(|e| StoreError::corrupt(format!("column {i}: {e}")))
    }
}

fn refs<'a>(params: &'a [Value<'_>]) -> Vec<&'a (dyn ToSql + Sync)> {
    params.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

/// A pooled connection or a transaction on one, running the store's shared
/// bodies. Statements are prepared once per connection.
pub(crate) struct Pg<'a, C>(pub(crate) &'a C);

impl<C: GenericClient> Conn for Pg<'_, C> {
    async fn execute(&self, sql: &Sql, params: &[Value<'_>]) -> StoreResult<u64> {
        let st = self.0.prepare_cached(sql.postgres()).await.map_err(classify)?;
        self.0.execute(&st, &refs(params)).await.map_err(classify)
    }

    async fn rows<F>(&self, sql: &Sql, params: &[Value<'_>], mut visit: F) -> StoreResult<()>
    where
        F: FnMut(&mut Cols<'_>) -> StoreResult<bool> + Send,
    {
        let st = self.0.prepare_cached(sql.postgres()).await.map_err(classify)?;
        for r in self.0.query(&st, &refs(params)).await.map_err(classify)? {
            if !visit(&mut Cols::new(&r))? {
                break;
            }
        }
        Ok(())
    }
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
        Self::with_config(tls::parse(url)?, false, crate::Schema::Migrate).await
    }

    /// Like [`PgStore::connect`], for a database that holds a store
    /// already: one without Strongroom's tables is [`StoreError::NoStore`]
    /// and gets none; `schema` says whether it is migrated or must be at
    /// this binary's schema.
    pub(crate) async fn connect_existing(url: &str, schema: crate::Schema) -> StoreResult<PgStore> {
        Self::with_config(tls::parse(url)?, true, schema).await
    }

    async fn with_config(connect: tls::Connect, existing: bool, schema: crate::Schema) -> StoreResult<PgStore> {
        let size = connect.pool_max_size.unwrap_or_else(default_pool_size);
        let describe = describe_connect(&connect, size);
        let pool = pool_of(connect, size)?;
        if existing && !has_store(&checkout(&pool).await?).await? {
            return Err(StoreError::NoStore(format!("no Strongroom tables in the database ({describe})")));
        }
        let observer = ObserverSlot::default();
        let store = PgStore {
            batch: batch::Batcher::spawn(pool.clone(), observer.clone()),
            reader: read::Reader::spawn(pool.clone()),
            group: group::Group::spawn(pool.clone(), observer.clone()),
            pool,
            describe,
            observer,
        };
        match schema {
            crate::Schema::Require => {
                let c = store.client().await?;
                crate::require_schema(crate::ops::query_one(&Pg(&c), &crate::sql::SCHEMA_VERSION, &[], |r| r.opt_int()).await?)?;
            }
            crate::Schema::Migrate => store.migrate().await?,
        }
        Ok(store)
    }

    pub(crate) async fn client(&self) -> StoreResult<Object> {
        checkout(&self.pool).await
    }

    async fn migrate(&self) -> StoreResult<()> {
        let mut c = self.client().await?;
        let tx = c.transaction().await.map_err(classify)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await.map_err(classify)?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
        )
        .await
        .map_err(classify)?;
        let before: Option<i64> =
            tx.query_one("SELECT max(version) FROM schema_migrations", &[]).await.map_err(classify)?.try_get(0).map_err(classify)?;
        for m in MIGRATIONS {
            let done = tx.query_opt("SELECT 1 FROM schema_migrations WHERE version = $1", &[&m.version]).await.map_err(classify)?;
            if done.is_none() {
                tx.batch_execute(m.sql).await.map_err(classify)?;
                tx.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, extract(epoch from now())::bigint)",
                    &[&m.version, &m.name],
                )
                .await
                .map_err(classify)?;
            }
        }
        tx.commit().await.map_err(classify)?;
        crate::log_migration(before);
        Ok(())
    }
}

/// A pool of at most `size` connections as `connect` says.
fn pool_of(connect: tls::Connect, size: usize) -> StoreResult<Pool> {
    let tls::Connect { config, tls, .. } = connect;
    let manager = Manager::from_config(config, tls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
    Pool::builder(manager)
        .max_size(size)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(10)))
        .create_timeout(Some(Duration::from_secs(10)))
        .build()
        .map_err(|e| StoreError::other(format!("connection pool: {e}")))
}

/// Whether the connection's database (on its `search_path`) has Strongroom's migrations table.
async fn has_store(c: &Object) -> StoreResult<bool> {
    crate::ops::flag(&Pg(c), &crate::sql::HAS_STORE, &[]).await
}

/// What the database holds, changing nothing (`config check --online`).
pub(crate) async fn probe(url: &str) -> StoreResult<crate::Probe> {
    let pool = pool_of(tls::parse(url)?, 1)?;
    let c = checkout(&pool).await?;
    if !has_store(&c).await? {
        return Ok(crate::Probe::Absent);
    }
    let version = crate::ops::query_one(&Pg(&c), &crate::sql::SCHEMA_VERSION, &[], |r| r.opt_int()).await?;
    Ok(crate::Probe::Present { version })
}

/// A pooled connection.
pub(crate) async fn checkout(pool: &Pool) -> StoreResult<Object> {
    pool.get().await.map_err(pool_error)
}

/// Whether a connection whose work ended with `out` must leave the pool: a
/// failure in the database (a closed connection, a server shutting down or
/// turned read-only, a demoted primary) must not serve the next request.
/// Unique violations (`Conflict`), unreadable rows (`Corrupt`) and the other
/// expected outcomes keep it.
pub(crate) fn spoiled<T>(out: &StoreResult<T>) -> bool {
    matches!(out, Err(StoreError::Failed { kind, .. }) if *kind != ErrorKind::Corrupt)
}

/// Gives a connection back to the pool, unless it is [`spoiled`].
pub(crate) fn release<T>(client: Object, out: &StoreResult<T>) {
    if spoiled(out) {
        drop(Object::take(client));
    }
}

/// Locks the event chain's head row until the transaction ends: the first
/// lock of every write transaction (see `in_tx!`).
pub(crate) async fn lock_event_head<C: GenericClient>(c: &C) -> StoreResult<()> {
    crate::ops::query_one(&Pg(c), &crate::sql::EVENT_HEAD, &[], |_| Ok(())).await
}

/// Runs `$body` (a future over the transaction `$c`, a [`Pg`]) in a
/// transaction on a pooled connection, and commits when it returns `Ok`.
///
/// The transaction's first lock is the event chain's head
/// ([`lock_event_head`]), before any row it writes: every transaction that
/// may append an event takes its locks in that one order, as the batch
/// writer does, so a revocation racing a refresh of the same grant (or an
/// entry update racing an `Associate`) waits its turn instead of
/// deadlocking. The head is held until the commit in any case, so this
/// costs no concurrency that the chain had not already taken.
macro_rules! in_tx {
    ($self:ident, |$c:ident| $body:expr) => {
        in_tx!(@ $self, true, |$c| $body)
    };
    (@ $self:ident, $lock:expr, |$c:ident| $body:expr) => {
        Box::pin(async move {
            let out = async {
                let mut client = $self.client().await?;
                let out = async {
                    let tx = client.transaction().await.map_err($crate::postgres::classify)?;
                    if $lock {
                        $crate::postgres::lock_event_head(&tx).await?;
                    }
                    let out = {
                        let $c = &$crate::postgres::Pg(&tx);
                        $body.await
                    };
                    if out.is_ok() {
                        tx.commit().await.map_err($crate::postgres::classify)?;
                    }
                    out
                }
                .await;
                $crate::postgres::release(client, &out);
                out
            }
            .await;
            $self.observer.seen(out)
        })
    };
}

/// Runs `$body` (a future over `$c`, a [`Pg`]) as a job of the store's
/// group commit ([`group`]): in a savepoint of a transaction shared with
/// the other writes waiting, which took the chain's head lock first and
/// commits once for all of them. As [`in_tx`], the body's writes are kept
/// when it answers `Ok` and undone when it fails.
macro_rules! in_batch {
    ($self:ident, |$c:ident| $body:expr) => {
        Box::pin(async move {
            let out = $self.group.run(move |$c| Box::pin(async move { $body.await })).await;
            $self.observer.seen(out)
        })
    };
}

/// [`in_tx`] without the chain lock, so `$body` must append no event: the
/// throttle counters' slots, taken and given back around a check.
macro_rules! in_plain_tx {
    ($self:ident, |$c:ident| $body:expr) => {
        in_tx!(@ $self, false, |$c| $body)
    };
}

/// Runs `$body` (a future over `$c`, a [`read::Coalescing`]) on the
/// store's reader: a context read, coalesced with the others waiting.
macro_rules! coalesced {
    ($self:ident, |$c:ident| $body:expr) => {
        Box::pin(async move {
            let out = {
                let $c = &$crate::postgres::read::Coalescing(&$self.reader);
                $body.await
            };
            $self.observer.seen(out)
        })
    };
}

/// Runs `$body` (a future over `$c`, a [`Pg`]) on a pooled connection,
/// outside any transaction.
macro_rules! on_client {
    ($self:ident, |$c:ident| $body:expr) => {
        Box::pin(async move {
            let out = async {
                let client = $self.client().await?;
                let out = {
                    let $c = &$crate::postgres::Pg(&client);
                    $body.await
                };
                $crate::postgres::release(client, &out);
                out
            }
            .await;
            $self.observer.seen(out)
        })
    };
}

// The store's parts, after the macros they use.
mod batch;
mod group;
mod read;
mod store;
mod tls;

pub mod testing {
    //! Helpers for tests against a shared PostgreSQL server.

    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::{PgStore, classify};
    use crate::codec::Cols;
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
        let (client, conn) = connect.config.connect(connect.tls.clone()).await.map_err(classify)?;
        let driver = tokio::spawn(conn);
        client.batch_execute(&format!("CREATE SCHEMA {schema}")).await.map_err(classify)?;
        drop(client);
        let _ = driver.await;
        connect.config.options(format!("-c search_path={schema}"));
        Ok((Arc::new(PgStore::with_config(connect, false, crate::Schema::Migrate).await?), schema))
    }

    /// A new, empty schema on the server at `url`; the URL that selects it,
    /// for a server started as another process. Nothing is migrated yet.
    pub async fn fresh_schema_url(url: &str) -> StoreResult<String> {
        let connect = super::tls::parse(url)?;
        let nanos = std::time::SystemTime::UNIX_EPOCH.elapsed().map(|d| d.subsec_nanos()).unwrap_or(0);
        let schema = format!("u_{}_{}_{}", std::process::id(), nanos, COUNTER.fetch_add(1, Ordering::Relaxed));
        let (client, conn) = connect.config.connect(connect.tls).await.map_err(classify)?;
        let driver = tokio::spawn(conn);
        client.batch_execute(&format!("CREATE SCHEMA {schema}")).await.map_err(classify)?;
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
        let (client, conn) = connect.config.connect(connect.tls).await.map_err(classify)?;
        let driver = tokio::spawn(conn);
        let row = client.query_one("SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[]).await.map_err(classify)?;
        let mut cols = Cols::new(&row);
        let (ssl, version) = (cols.bool()?, cols.opt_text()?);
        drop(client);
        let _ = driver.await;
        Ok(if ssl { Some(version.unwrap_or_default()) } else { None })
    }
}
