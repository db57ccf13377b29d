//! The PostgreSQL store, for several replicas sharing one database.
//!
//! Same behaviour as the SQLite store, proven by the same conformance suite.
//! Every method is one transaction at READ COMMITTED. Single-use transitions
//! are one conditional `UPDATE` whose row count decides the winner: a second
//! concurrent updater waits for the first, re-evaluates the `WHERE` on the
//! committed row and matches nothing. Event appends lock the one
//! `event_head` row, which serialises the hash chain across replicas.

mod vault;

use deadpool_postgres::GenericClient;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use std::str::FromStr as _;
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::{NoTls, Row};

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

pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration { version: 1, name: "0001_auth", sql: include_str!("../../migrations/postgres/0001_auth.sql") },
    Migration { version: 2, name: "0002_vault", sql: include_str!("../../migrations/postgres/0002_vault.sql") },
];

/// Connections per replica.
const POOL_SIZE: usize = 16;
/// An arbitrary constant naming the migration lock.
const MIGRATION_LOCK: i64 = 0x5354_524f_4e47;

#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    describe: String,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe)
    }
}

pub(crate) fn pg(e: tokio_postgres::Error) -> StoreError {
    if e.code() == Some(&SqlState::UNIQUE_VIOLATION) { StoreError::Conflict } else { StoreError::Backend(e.to_string()) }
}

impl PgStore {
    /// Connects, and applies migrations under an advisory lock (replicas may
    /// start together).
    pub async fn connect(url: &str) -> StoreResult<PgStore> {
        let config = tokio_postgres::Config::from_str(url).map_err(|e| StoreError::Backend(format!("database url: {e}")))?;
        Self::with_config(config).await
    }

    async fn with_config(config: tokio_postgres::Config) -> StoreResult<PgStore> {
        let hosts: Vec<String> = config
            .get_hosts()
            .iter()
            .map(|h| match h {
                tokio_postgres::config::Host::Tcp(s) => s.clone(),
                #[cfg(unix)]
                tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
            })
            .collect();
        let describe = format!(
            "postgres host={} port={} dbname={} user={} (pool max {POOL_SIZE})",
            hosts.join(","),
            config.get_ports().first().copied().unwrap_or(5432),
            config.get_dbname().unwrap_or(""),
            config.get_user().unwrap_or(""),
        );
        let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs(10)))
            .create_timeout(Some(Duration::from_secs(10)))
            .build()
            .map_err(|e| StoreError::Backend(format!("connection pool: {e}")))?;
        let store = PgStore { pool, describe };
        store.migrate().await?;
        Ok(store)
    }

    pub(crate) async fn client(&self) -> StoreResult<Object> {
        self.pool.get().await.map_err(|e| StoreError::Backend(format!("connecting: {e}")))
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

fn get<'a, T: tokio_postgres::types::FromSql<'a>>(row: &'a Row, idx: usize) -> StoreResult<T> {
    row.try_get(idx).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn time(row: &Row, idx: usize) -> StoreResult<UnixTime> {
    Ok(UnixTime::from_millis(get(row, idx)?))
}

fn opt_time(row: &Row, idx: usize) -> StoreResult<Option<UnixTime>> {
    Ok(get::<Option<i64>>(row, idx)?.map(UnixTime::from_millis))
}

fn hash(row: &Row, idx: usize) -> StoreResult<TokenHash> {
    TokenHash::from_slice(&get::<Vec<u8>>(row, idx)?).ok_or_else(|| StoreError::Corrupt("token hash".into()))
}

fn scope(row: &Row, idx: usize) -> StoreResult<Scope> {
    Scope::parse(&get::<String>(row, idx)?).map_err(|e| StoreError::Corrupt(format!("stored scope: {e}")))
}

const USER_COLS: &str = "id, name, disabled, master_admin, created_at";

fn user_from_row(row: &Row) -> StoreResult<User> {
    Ok(User {
        id: UserId::from_stored(get(row, 0)?),
        name: get(row, 1)?,
        disabled: get(row, 2)?,
        master_admin: get(row, 3)?,
        created_at: time(row, 4)?,
    })
}

const GRANT_COLS: &str = "g.id, g.client_id, g.user_id, g.scope, g.created_at, g.refresh_until, g.refreshable, g.access_issued_at, g.access_validity, g.revoked_at";

fn grant_from_row(row: &Row, o: usize) -> StoreResult<Grant> {
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
    })
}

const INTEGRATION_COLS: &str = "client_id, name, max_scope, allow_all_users, allow_device, allow_password, access_validity, grant_validity, refreshable, device_code_validity, poll_interval, disabled";

fn integration_from_row(row: &Row) -> StoreResult<Integration> {
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
        },
        disabled: get(row, 11)?,
    })
}

type Param<'a> = &'a (dyn tokio_postgres::types::ToSql + Sync);

/// The values of [`INTEGRATION_COLS`], in order: shared by insert and update.
/// `scope` is `i.max_scope` as text, owned by the caller.
fn integration_values<'a>(i: &'a Integration, scope: &'a String) -> Vec<Param<'a>> {
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
    ]
}

/// `$1, $2, …, $n`.
fn placeholders(n: usize) -> String {
    (1..=n).map(|k| format!("${k}")).collect::<Vec<_>>().join(", ")
}

async fn load_allowed(c: &impl GenericClient, i: &mut Integration) -> StoreResult<()> {
    if let AllowedUsers::Only(list) = &mut i.allowed_users {
        for r in
            c.query("SELECT user_id FROM integration_users WHERE client_id = $1 ORDER BY user_id", &[&i.client_id]).await.map_err(pg)?
        {
            list.push(UserId::from_stored(get(&r, 0)?));
        }
    }
    Ok(())
}

async fn save_allowed(c: &impl GenericClient, i: &Integration) -> StoreResult<()> {
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

const DEVICE_COLS: &str =
    "code_hash, user_code_hash, client_id, scope, state, user_id, created_at, expires_at, interval_secs, last_poll_at, version";

fn device_from_row(row: &Row) -> StoreResult<DeviceAuthorization> {
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

/// Appends `e` to the chained event log inside the caller's transaction.
pub(crate) async fn append_event(c: &impl GenericClient, e: &Event) -> StoreResult<i64> {
    let head = c.query_one("SELECT seq, hash FROM event_head WHERE id = 1 FOR UPDATE", &[]).await.map_err(pg)?;
    let prev: [u8; 32] = get::<Vec<u8>>(&head, 1)?.try_into().map_err(|_| StoreError::Corrupt("event head hash".into()))?;
    let seq = get::<i64>(&head, 0)? + 1;
    let h = chain_hash(&prev, seq, e);
    c.execute(
        "INSERT INTO events (seq, at, kind, identity, client_id, source, request_id, object, detail, hash) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        &[&seq, &e.at.millis(), &e.kind.as_str(), &e.identity, &e.client_id, &e.source, &e.request_id, &e.object, &e.detail, &&h[..]],
    )
    .await
    .map_err(pg)?;
    c.execute("UPDATE event_head SET seq = $1, hash = $2 WHERE id = 1", &[&seq, &&h[..]]).await.map_err(pg)?;
    Ok(seq)
}

async fn insert_tokens(c: &impl GenericClient, grant_id: &str, t: &NewTokens) -> StoreResult<()> {
    c.execute(
        "INSERT INTO access_tokens (hash, grant_id, issued_at, expires_at) VALUES ($1, $2, $3, $4)",
        &[&t.access_hash.as_bytes(), &grant_id, &t.issued_at.millis(), &t.access_expires.millis()],
    )
    .await
    .map_err(pg)?;
    if let Some(rh) = &t.refresh_hash {
        c.execute(
            "INSERT INTO refresh_tokens (hash, grant_id, issued_at) VALUES ($1, $2, $3)",
            &[&rh.as_bytes(), &grant_id, &t.issued_at.millis()],
        )
        .await
        .map_err(pg)?;
    }
    Ok(())
}

async fn insert_grant(c: &impl GenericClient, g: &Grant) -> StoreResult<()> {
    c.execute(
        "INSERT INTO grants (id, client_id, user_id, scope, created_at, refresh_until, refreshable, access_issued_at, access_validity, revoked_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
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
        ],
    )
    .await
    .map_err(pg)?;
    Ok(())
}

fn counter_from_row(row: &Row) -> StoreResult<Counter> {
    Ok(Counter {
        failures: u32::try_from(get::<i64>(row, 0)?).unwrap_or(u32::MAX),
        window_start: time(row, 1)?,
        locked_until: opt_time(row, 2)?,
    })
}

/// A throttle counter, locked for this transaction (created at zero if absent).
async fn counter_for_update(c: &impl GenericClient, key: &str) -> StoreResult<Counter> {
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

fn event_from_row(row: &Row) -> StoreResult<StoredEvent> {
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

/// Runs `$body` in a transaction on a pooled client bound to `$tx`, and
/// commits when it returns `Ok`.
macro_rules! in_tx {
    ($self:ident, |$tx:ident| $body:block) => {
        Box::pin(async move {
            let mut client = $self.client().await?;
            let $tx = client.transaction().await.map_err(pg)?;
            let out = $body;
            if out.is_ok() {
                $tx.commit().await.map_err(pg)?;
            }
            out
        })
    };
}

/// Runs `$body` on a pooled client bound to `$c`.
macro_rules! on_client {
    ($self:ident, |$c:ident| $body:block) => {
        Box::pin(async move {
            let $c = $self.client().await?;
            $body
        })
    };
}

impl Store for PgStore {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn ping(&self) -> StoreFuture<'_, ()> {
        on_client!(self, |c| { c.query_one("SELECT 1", &[]).await.map(drop).map_err(pg) })
    }

    fn create_user(&self, user: User, password_hash: String, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| {
            async {
                tx.execute(
                    "INSERT INTO users (id, name, name_key, password_hash, disabled, master_admin, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    &[
                        &user.id.as_str(),
                        &user.name,
                        &user.name.to_lowercase(),
                        &password_hash,
                        &user.disabled,
                        &user.master_admin,
                        &user.created_at.millis(),
                    ],
                )
                .await
                .map_err(pg)?;
                append_event(&tx, &event).await.map(drop)
            }
            .await
        })
    }

    fn user_by_name(&self, name: String) -> StoreFuture<'_, Option<(User, String)>> {
        on_client!(self, |c| {
            let row = c
                .query_opt(&format!("SELECT {USER_COLS}, password_hash FROM users WHERE name_key = $1"), &[&name.to_lowercase()])
                .await
                .map_err(pg)?;
            row.map(|r| Ok((user_from_row(&r)?, get(&r, 5)?))).transpose()
        })
    }

    fn user_by_id(&self, id: UserId) -> StoreFuture<'_, Option<User>> {
        on_client!(self, |c| {
            let row = c.query_opt(&format!("SELECT {USER_COLS} FROM users WHERE id = $1"), &[&id.as_str()]).await.map_err(pg)?;
            row.map(|r| user_from_row(&r)).transpose()
        })
    }

    fn list_users(&self) -> StoreFuture<'_, Vec<User>> {
        on_client!(self, |c| {
            let rows = c.query(&format!("SELECT {USER_COLS} FROM users ORDER BY name_key"), &[]).await.map_err(pg)?;
            rows.iter().map(user_from_row).collect()
        })
    }

    fn set_user_disabled(&self, name: String, disabled: bool, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |tx| {
            async {
                let n = tx
                    .execute("UPDATE users SET disabled = $1 WHERE name_key = $2", &[&disabled, &name.to_lowercase()])
                    .await
                    .map_err(pg)?;
                if n == 1 {
                    append_event(&tx, &event).await?;
                }
                Ok(n == 1)
            }
            .await
        })
    }

    fn set_user_password(&self, name: String, password_hash: String, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |tx| {
            async {
                let n = tx
                    .execute("UPDATE users SET password_hash = $1 WHERE name_key = $2", &[&password_hash, &name.to_lowercase()])
                    .await
                    .map_err(pg)?;
                if n == 1 {
                    append_event(&tx, &event).await?;
                }
                Ok(n == 1)
            }
            .await
        })
    }

    fn create_integration(&self, i: Integration, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| {
            async {
                let (created_at, scope) = (event.at.millis(), i.max_scope.to_string());
                let mut values = integration_values(&i, &scope);
                values.push(&created_at);
                tx.execute(
                    &format!("INSERT INTO integrations ({INTEGRATION_COLS}, created_at) VALUES ({})", placeholders(values.len())),
                    &values,
                )
                .await
                .map_err(pg)?;
                save_allowed(&tx, &i).await?;
                append_event(&tx, &event).await.map(drop)
            }
            .await
        })
    }

    fn update_integration(&self, i: Integration, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |tx| {
            async {
                let n = tx
                    .execute(
                        "UPDATE integrations SET name = $2, max_scope = $3, allow_all_users = $4, allow_device = $5, allow_password = $6, \
                         access_validity = $7, grant_validity = $8, refreshable = $9, device_code_validity = $10, poll_interval = $11, disabled = $12 \
                         WHERE client_id = $1",
                        &integration_values(&i, &i.max_scope.to_string()),
                    )
                    .await
                    .map_err(pg)?;
                if n == 1 {
                    save_allowed(&tx, &i).await?;
                    append_event(&tx, &event).await?;
                }
                Ok(n == 1)
            }
            .await
        })
    }

    fn integration(&self, client_id: String) -> StoreFuture<'_, Option<Integration>> {
        on_client!(self, |c| {
            let row = c
                .query_opt(&format!("SELECT {INTEGRATION_COLS} FROM integrations WHERE client_id = $1"), &[&client_id])
                .await
                .map_err(pg)?;
            match row {
                None => Ok(None),
                Some(r) => {
                    let mut i = integration_from_row(&r)?;
                    load_allowed(&c, &mut i).await?;
                    Ok(Some(i))
                }
            }
        })
    }

    fn list_integrations(&self) -> StoreFuture<'_, Vec<Integration>> {
        on_client!(self, |c| {
            let rows = c.query(&format!("SELECT {INTEGRATION_COLS} FROM integrations ORDER BY client_id"), &[]).await.map_err(pg)?;
            let mut out = Vec::with_capacity(rows.len());
            for r in &rows {
                let mut i = integration_from_row(r)?;
                load_allowed(&c, &mut i).await?;
                out.push(i);
            }
            Ok(out)
        })
    }

    fn insert_device(&self, d: DeviceAuthorization, event: Event, quota: Option<(String, Rule)>) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| {
            async {
                if let Some((key, rule)) = &quota {
                    let after = counter_for_update(&tx, key).await?.after_failure(*rule, event.at);
                    if after.failures > rule.limit {
                        return Err(StoreError::QuotaExceeded);
                    }
                    tx.execute(
                        "UPDATE throttle SET failures = $2, window_start = $3 WHERE key = $1",
                        &[key, &i64::from(after.failures), &after.window_start.millis()],
                    )
                    .await
                    .map_err(pg)?;
                }
                let (state, user) = device_state_parts(&d.state);
                tx.execute(
                    "DELETE FROM device_codes WHERE user_code_hash = $1 AND expires_at <= $2",
                    &[&d.user_code_hash.as_bytes(), &d.created_at.millis()],
                )
                .await
                .map_err(pg)?;
                tx.execute(
                    &format!("INSERT INTO device_codes ({DEVICE_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"),
                    &[
                        &d.code_hash.as_bytes(),
                        &d.user_code_hash.as_bytes(),
                        &d.client_id,
                        &d.scope.to_string(),
                        &state,
                        &user,
                        &d.created_at.millis(),
                        &d.expires_at.millis(),
                        &d.interval_secs,
                        &d.last_poll_at.map(UnixTime::millis),
                        &d.version,
                    ],
                )
                .await
                .map_err(pg)?;
                append_event(&tx, &event).await.map(drop)
            }
            .await
        })
    }

    fn device_by_code(&self, code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceAuthorization>> {
        on_client!(self, |c| {
            let row = c
                .query_opt(&format!("SELECT {DEVICE_COLS} FROM device_codes WHERE code_hash = $1"), &[&code_hash.as_bytes()])
                .await
                .map_err(pg)?;
            row.map(|r| device_from_row(&r)).transpose()
        })
    }

    fn device_by_user_code(&self, user_code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceAuthorization>> {
        on_client!(self, |c| {
            let row = c
                .query_opt(&format!("SELECT {DEVICE_COLS} FROM device_codes WHERE user_code_hash = $1"), &[&user_code_hash.as_bytes()])
                .await
                .map_err(pg)?;
            row.map(|r| device_from_row(&r)).transpose()
        })
    }

    fn record_poll(&self, code_hash: TokenHash, version: i64, record: PollRecord) -> StoreFuture<'_, bool> {
        on_client!(self, |c| {
            let n = c
                .execute(
                    "UPDATE device_codes SET last_poll_at = $1, interval_secs = $2, version = version + 1 \
                     WHERE code_hash = $3 AND version = $4 AND state = 'pending'",
                    &[&record.last_poll_at.millis(), &record.interval_secs, &code_hash.as_bytes(), &version],
                )
                .await
                .map_err(pg)?;
            Ok(n == 1)
        })
    }

    fn decide_device(&self, code_hash: TokenHash, version: i64, decision: DeviceState, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |tx| {
            async {
                let (state, user) = device_state_parts(&decision);
                if !matches!(decision, DeviceState::Approved { .. } | DeviceState::Denied { .. }) {
                    return Err(StoreError::Corrupt(format!("a user cannot move a device code to {state}")));
                }
                let n = tx
                    .execute(
                        "UPDATE device_codes SET state = $1, user_id = $2, version = version + 1 \
                         WHERE code_hash = $3 AND version = $4 AND state = 'pending'",
                        &[&state, &user, &code_hash.as_bytes(), &version],
                    )
                    .await
                    .map_err(pg)?;
                if n == 1 {
                    append_event(&tx, &event).await?;
                }
                Ok(n == 1)
            }
            .await
        })
    }

    fn redeem_device(&self, code_hash: TokenHash, version: i64, grant: Grant, tokens: NewTokens, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |tx| {
            async {
                let n = tx
                    .execute(
                        "UPDATE device_codes SET state = 'redeemed', version = version + 1 \
                         WHERE code_hash = $1 AND version = $2 AND state = 'approved'",
                        &[&code_hash.as_bytes(), &version],
                    )
                    .await
                    .map_err(pg)?;
                if n != 1 {
                    return Ok(false);
                }
                insert_grant(&tx, &grant).await?;
                insert_tokens(&tx, grant.id.as_str(), &tokens).await?;
                append_event(&tx, &event).await?;
                Ok(true)
            }
            .await
        })
    }

    fn insert_grant(&self, grant: Grant, tokens: NewTokens, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| {
            async {
                insert_grant(&tx, &grant).await?;
                insert_tokens(&tx, grant.id.as_str(), &tokens).await?;
                append_event(&tx, &event).await.map(drop)
            }
            .await
        })
    }

    fn access_context(&self, access_hash: TokenHash) -> StoreFuture<'_, Option<AccessContext>> {
        on_client!(self, |c| {
            let row = c
                .query_opt(
                    &format!(
                        "SELECT {GRANT_COLS}, t.issued_at, t.expires_at, u.name, u.disabled, coalesce(i.disabled, TRUE) \
                         FROM access_tokens t JOIN grants g ON g.id = t.grant_id JOIN users u ON u.id = g.user_id \
                         LEFT JOIN integrations i ON i.client_id = g.client_id WHERE t.hash = $1"
                    ),
                    &[&access_hash.as_bytes()],
                )
                .await
                .map_err(pg)?;
            row.map(|r| {
                Ok(AccessContext {
                    grant: grant_from_row(&r, 0)?,
                    token_issued_at: time(&r, 10)?,
                    token_expires: time(&r, 11)?,
                    user_name: get(&r, 12)?,
                    user_disabled: get(&r, 13)?,
                    integration_disabled: get(&r, 14)?,
                })
            })
            .transpose()
        })
    }

    fn refresh_token(&self, refresh_hash: TokenHash) -> StoreFuture<'_, Option<(RefreshToken, Grant)>> {
        on_client!(self, |c| {
            let row = c
                .query_opt(
                    &format!(
                        "SELECT {GRANT_COLS}, t.issued_at, t.spent_at FROM refresh_tokens t JOIN grants g ON g.id = t.grant_id WHERE t.hash = $1"
                    ),
                    &[&refresh_hash.as_bytes()],
                )
                .await
                .map_err(pg)?;
            row.map(|r| Ok((RefreshToken { issued_at: time(&r, 10)?, spent_at: opt_time(&r, 11)? }, grant_from_row(&r, 0)?))).transpose()
        })
    }

    fn rotate_refresh(&self, old: TokenHash, grant_id: GrantId, tokens: NewTokens, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |tx| {
            async {
                let n = tx
                    .execute(
                        "UPDATE refresh_tokens SET spent_at = $1 WHERE hash = $2 AND grant_id = $3 AND spent_at IS NULL \
                         AND EXISTS (SELECT 1 FROM grants WHERE id = $3 AND revoked_at IS NULL AND refresh_until > $1)",
                        &[&tokens.issued_at.millis(), &old.as_bytes(), &grant_id.as_str()],
                    )
                    .await
                    .map_err(pg)?;
                if n != 1 {
                    return Ok(false);
                }
                tx.execute("UPDATE grants SET access_issued_at = $1 WHERE id = $2", &[&tokens.issued_at.millis(), &grant_id.as_str()])
                    .await
                    .map_err(pg)?;
                insert_tokens(&tx, grant_id.as_str(), &tokens).await?;
                append_event(&tx, &event).await?;
                Ok(true)
            }
            .await
        })
    }

    fn revoke_grant(&self, grant_id: GrantId, at: UnixTime, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |tx| {
            async {
                let n = tx
                    .execute("UPDATE grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL", &[&at.millis(), &grant_id.as_str()])
                    .await
                    .map_err(pg)?;
                if n != 1 {
                    return Ok(false);
                }
                tx.execute("DELETE FROM access_tokens WHERE grant_id = $1", &[&grant_id.as_str()]).await.map_err(pg)?;
                append_event(&tx, &event).await?;
                Ok(true)
            }
            .await
        })
    }

    fn list_grants(&self, include_ended: bool, now: UnixTime) -> StoreFuture<'_, Vec<GrantSummary>> {
        on_client!(self, |c| {
            let rows = c
                .query(
                    &format!(
                        "SELECT {GRANT_COLS}, coalesce(u.name, '') FROM grants g LEFT JOIN users u ON u.id = g.user_id \
                         WHERE $1 OR (g.revoked_at IS NULL AND g.refresh_until > $2) ORDER BY g.created_at, g.id"
                    ),
                    &[&include_ended, &now.millis()],
                )
                .await
                .map_err(pg)?;
            rows.iter().map(|r| Ok(GrantSummary { grant: grant_from_row(r, 0)?, user_name: get(r, 10)? })).collect()
        })
    }

    fn counters(&self, keys: Vec<String>) -> StoreFuture<'_, Vec<Counter>> {
        on_client!(self, |c| {
            let mut out = Vec::with_capacity(keys.len());
            for k in &keys {
                let row =
                    c.query_opt("SELECT failures, window_start, locked_until FROM throttle WHERE key = $1", &[k]).await.map_err(pg)?;
                out.push(row.map(|r| counter_from_row(&r)).transpose()?.unwrap_or_default());
            }
            Ok(out)
        })
    }

    fn record_failure(&self, keys: Vec<(String, Rule)>, event: Event) -> StoreFuture<'_, Vec<Counter>> {
        in_tx!(self, |tx| {
            async {
                let mut out = Vec::with_capacity(keys.len());
                append_event(&tx, &event).await?;
                for (key, rule) in &keys {
                    let before = counter_for_update(&tx, key).await?;
                    let after = before.after_failure(*rule, event.at);
                    tx.execute(
                        "UPDATE throttle SET failures = $2, window_start = $3, locked_until = $4 WHERE key = $1",
                        &[key, &i64::from(after.failures), &after.window_start.millis(), &after.locked_until.map(UnixTime::millis)],
                    )
                    .await
                    .map_err(pg)?;
                    if after.is_locked(event.at) && !before.is_locked(event.at) {
                        append_event(&tx, &lockout_event(&event, key)).await?;
                    }
                    out.push(after);
                }
                Ok(out)
            }
            .await
        })
    }

    fn clear_counters(&self, keys: Vec<String>) -> StoreFuture<'_, ()> {
        on_client!(self, |c| {
            for k in &keys {
                c.execute("UPDATE throttle SET failures = 0 WHERE key = $1", &[k]).await.map_err(pg)?;
            }
            Ok(())
        })
    }

    fn append_event(&self, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| { append_event(&tx, &event).await.map(drop) })
    }

    fn events(&self, f: EventFilter) -> StoreFuture<'_, Vec<StoredEvent>> {
        on_client!(self, |c| {
            let rows = c
                .query(
                    "SELECT seq, at, kind, identity, client_id, source, request_id, object, detail, hash FROM events \
                     WHERE ($1::BIGINT IS NULL OR at >= $1) AND ($2::BIGINT IS NULL OR at < $2) AND ($3::TEXT IS NULL OR kind = $3) \
                     AND ($4::TEXT IS NULL OR identity = $4) AND ($5::TEXT IS NULL OR object = $5) AND seq > coalesce($6::BIGINT, 0) \
                     ORDER BY seq LIMIT $7",
                    &[
                        &f.since.map(UnixTime::millis),
                        &f.until.map(UnixTime::millis),
                        &f.kind,
                        &f.identity,
                        &f.object,
                        &f.after_seq,
                        &i64::from(f.limit),
                    ],
                )
                .await
                .map_err(pg)?;
            rows.iter().map(event_from_row).collect()
        })
    }

    fn event_head(&self) -> StoreFuture<'_, (i64, [u8; 32])> {
        on_client!(self, |c| {
            let r = c.query_one("SELECT seq, hash FROM event_head WHERE id = 1", &[]).await.map_err(pg)?;
            Ok((get(&r, 0)?, get::<Vec<u8>>(&r, 1)?.try_into().map_err(|_| StoreError::Corrupt("event head hash".into()))?))
        })
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
                Ok(n)
            }
            .await
        })
    }

    fn create_folders(&self, lineage: Vec<FolderPath>, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |tx| { vault::create_folders(&tx, &lineage, &event).await })
    }
    fn folders(&self) -> StoreFuture<'_, Vec<FolderPath>> {
        on_client!(self, |c| { vault::folders(&c).await })
    }
    fn folder_exists(&self, key: String) -> StoreFuture<'_, bool> {
        on_client!(self, |c| { vault::folder_exists(&c, &key).await })
    }
    fn set_rights(&self, folder: FolderPath, user: UserId, rights: Rights, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| { vault::set_rights(&tx, &folder, &user, rights, &event).await })
    }
    fn rights_of(&self, user: UserId) -> StoreFuture<'_, Vec<(String, Rights)>> {
        on_client!(self, |c| { vault::rights_of(&c, &user).await })
    }
    fn all_rights(&self) -> StoreFuture<'_, Vec<(FolderPath, String, Rights)>> {
        on_client!(self, |c| { vault::all_rights(&c).await })
    }
    fn data_keys(&self) -> StoreFuture<'_, Vec<DataKeyRecord>> {
        on_client!(self, |c| { vault::data_keys(&c).await })
    }
    fn insert_data_key(&self, key: DataKeyRecord, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| { vault::insert_data_key(&tx, &key, &event).await })
    }
    fn allocate_vault_id(&self) -> StoreFuture<'_, VaultId> {
        on_client!(self, |c| { vault::allocate_vault_id(&c).await })
    }
    fn insert_entry(&self, entry: VaultEntry, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| { vault::insert_entry(&tx, &entry, &event).await })
    }
    fn entry(&self, id: VaultId) -> StoreFuture<'_, Option<VaultEntry>> {
        on_client!(self, |c| { vault::entry(&c, id).await })
    }
    fn owners_of(&self, ids: Vec<VaultId>) -> StoreFuture<'_, Vec<(VaultId, Vec<FolderPath>)>> {
        on_client!(self, |c| { vault::owners_of(&c, &ids).await })
    }
    fn vault_ids(&self, filter: VaultFilter) -> StoreFuture<'_, Vec<VaultId>> {
        on_client!(self, |c| { vault::vault_ids(&c, &filter).await })
    }
    fn mutate_entry(&self, id: VaultId, vault_type: i32, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |tx| { vault::mutate_entry(&tx, id, vault_type, &event).await })
    }
    fn add_owner(&self, id: VaultId, owner: FolderPath, event: Event) -> StoreFuture<'_, AddOwner> {
        in_tx!(self, |tx| { vault::add_owner(&tx, id, &owner, &event).await })
    }
    fn remove_owner(&self, id: Option<VaultId>, owner: FolderPath, event: Event) -> StoreFuture<'_, OwnerRemoval> {
        in_tx!(self, |tx| { vault::remove_owner(&tx, id, &owner, &event).await })
    }
    fn key_names_in_use(&self) -> StoreFuture<'_, Vec<String>> {
        on_client!(self, |c| { vault::key_names_in_use(&c).await })
    }
    fn associations(&self, id: VaultId) -> StoreFuture<'_, Vec<StoredAssociation>> {
        on_client!(self, |c| { vault::associations(&c, id).await })
    }
    fn put_association(&self, id: VaultId, association: StoredAssociation, event: Event) -> StoreFuture<'_, PutAssociation> {
        in_tx!(self, |tx| { vault::put_association(&tx, id, &association, &event).await })
    }
    fn dissociate(&self, id: VaultId, name: Option<String>, lookup: Option<[u8; 32]>, event: Event) -> StoreFuture<'_, u64> {
        in_tx!(self, |tx| { vault::dissociate(&tx, id, name.as_deref(), lookup.as_ref(), &event).await })
    }
    fn lookup_by_association(&self, name: String, lookup: Option<[u8; 32]>) -> StoreFuture<'_, Vec<VaultId>> {
        on_client!(self, |c| { vault::lookup_by_association(&c, &name, lookup.as_ref()).await })
    }
    fn sealed_on_old_keys(&self, current: i64, limit: u32) -> StoreFuture<'_, Vec<SealedItem>> {
        on_client!(self, |c| { vault::sealed_on_old_keys(&c, current, limit).await })
    }
    fn reseal(&self, items: Vec<(SealedItem, i64, Vec<u8>)>, event: Event) -> StoreFuture<'_, u64> {
        in_tx!(self, |tx| { vault::reseal(&tx, &items, &event).await })
    }
}

pub mod testing {
    //! Helpers for tests against a shared PostgreSQL server.

    use std::str::FromStr as _;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::{PgStore, pg};
    use crate::{Store, StoreError, StoreResult};

    static COUNTER: AtomicU32 = AtomicU32::new(0);

    /// A store in a new, empty schema of its own on the server at `url`.
    pub async fn fresh_schema(url: &str) -> StoreResult<Arc<dyn Store>> {
        let mut config = tokio_postgres::Config::from_str(url).map_err(|e| StoreError::Backend(e.to_string()))?;
        let nanos = std::time::SystemTime::UNIX_EPOCH.elapsed().map(|d| d.subsec_nanos()).unwrap_or(0);
        let schema = format!("t_{}_{}_{}", std::process::id(), nanos, COUNTER.fetch_add(1, Ordering::Relaxed));
        let (client, conn) = config.connect(tokio_postgres::NoTls).await.map_err(pg)?;
        let driver = tokio::spawn(conn);
        client.batch_execute(&format!("CREATE SCHEMA {schema}")).await.map_err(pg)?;
        drop(client);
        let _ = driver.await;
        config.options(format!("-c search_path={schema}"));
        Ok(Arc::new(PgStore::with_config(config).await?))
    }
}
