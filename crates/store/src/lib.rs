//! Persistence for Strongroom.
//!
//! [`Store`] has one method per domain action. Each method is one database
//! transaction, and every method that changes state also writes its event in
//! that transaction: if the event cannot be written, the change does not
//! happen. Single-use transitions (redeeming a device code, spending a
//! refresh token) are one conditional `UPDATE` whose row count says who won;
//! the methods return `false` to the loser.
//!
//! Two implementations: [`sqlite::SqliteStore`] (embedded, the default) and
//! [`postgres::PgStore`] (shared by several replicas). One conformance suite
//! (`tests/conformance.rs`) runs against both.
#![forbid(unsafe_code)]

pub mod postgres;
pub mod sqlite;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use strongroom_core::event::{Event, StoredEvent};
use strongroom_core::grant::device::{DeviceAuthorization, DeviceState, PollRecord};
use strongroom_core::grant::refresh::RefreshToken;
use strongroom_core::grant::{AccessContext, Grant, GrantId};
use strongroom_core::identity::{User, UserId};
use strongroom_core::integration::Integration;
use strongroom_core::throttle::{Counter, Rule};
use strongroom_core::time::UnixTime;
use strongroom_core::token::TokenHash;

/// Errors of the store. Messages never carry stored values or tokens.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A unique key already exists (user name, client id, user code).
    #[error("already exists")]
    Conflict,
    /// The database failed or is unreachable.
    #[error("database error: {0}")]
    Backend(String),
    /// A stored row could not be read back into a domain type.
    #[error("stored data is not valid: {0}")]
    Corrupt(String),
    /// The store is shutting down.
    #[error("the store is closed")]
    Closed,
    /// The configuration names no store this build knows.
    #[error("unsupported database url (expected a path, sqlite://PATH or postgres://...)")]
    UnsupportedUrl,
}

pub type StoreResult<T> = Result<T, StoreError>;
/// The future every store method returns.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = StoreResult<T>> + Send + 'a>>;

/// The hashes of a newly issued token pair, as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewTokens {
    pub access_hash: TokenHash,
    pub access_expires: UnixTime,
    pub refresh_hash: Option<TokenHash>,
    pub issued_at: UnixTime,
}

impl From<&strongroom_core::grant::IssuedTokens> for NewTokens {
    fn from(t: &strongroom_core::grant::IssuedTokens) -> Self {
        NewTokens {
            access_hash: t.access_hash,
            access_expires: t.access_expires,
            refresh_hash: t.refresh_hash(),
            issued_at: t.issued_at,
        }
    }
}

/// A grant as admins see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantSummary {
    pub grant: Grant,
    pub user_name: String,
}

/// Which events to read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventFilter {
    pub since: Option<UnixTime>,
    pub until: Option<UnixTime>,
    pub kind: Option<String>,
    pub identity: Option<String>,
    pub object: Option<String>,
    /// Only events with a sequence number above this one.
    pub after_seq: Option<i64>,
    pub limit: u32,
}

/// The store: one method per domain action, each one transaction.
pub trait Store: Send + Sync + fmt::Debug {
    /// A line for the start-up log: backend, location and settings.
    fn describe(&self) -> String;
    /// Cheap liveness check.
    fn ping(&self) -> StoreFuture<'_, ()>;

    // Users.
    /// `Conflict` if the name is taken (names are case-insensitive).
    fn create_user(&self, user: User, password_hash: String, event: Event) -> StoreFuture<'_, ()>;
    /// The user and their password hash.
    fn user_by_name(&self, name: String) -> StoreFuture<'_, Option<(User, String)>>;
    fn user_by_id(&self, id: UserId) -> StoreFuture<'_, Option<User>>;
    fn list_users(&self) -> StoreFuture<'_, Vec<User>>;
    /// Returns false if no such user.
    fn set_user_disabled(&self, name: String, disabled: bool, event: Event) -> StoreFuture<'_, bool>;
    fn set_user_password(&self, name: String, password_hash: String, event: Event) -> StoreFuture<'_, bool>;

    // API integrations.
    /// `Conflict` if the client id is taken.
    fn create_integration(&self, integration: Integration, event: Event) -> StoreFuture<'_, ()>;
    /// Replaces every field but the client id. Returns false if no such integration.
    fn update_integration(&self, integration: Integration, event: Event) -> StoreFuture<'_, bool>;
    fn integration(&self, client_id: String) -> StoreFuture<'_, Option<Integration>>;
    fn list_integrations(&self) -> StoreFuture<'_, Vec<Integration>>;

    // Device authorization.
    /// `Conflict` if the user code hash collides with a live one.
    fn insert_device(&self, device: DeviceAuthorization, event: Event) -> StoreFuture<'_, ()>;
    fn device_by_code(&self, code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceAuthorization>>;
    fn device_by_user_code(&self, user_code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceAuthorization>>;
    /// Records a poll if the code is still at `version` and pending.
    fn record_poll(&self, code_hash: TokenHash, version: i64, record: PollRecord) -> StoreFuture<'_, bool>;
    /// Pending → `decision` (approved or denied) if still at `version`.
    fn decide_device(
        &self,
        code_hash: TokenHash,
        version: i64,
        decision: DeviceState,
        event: Event,
    ) -> StoreFuture<'_, bool>;
    /// Approved → redeemed, creating the grant and its tokens, if still at
    /// `version`. Exactly one concurrent caller gets `true`.
    fn redeem_device(
        &self,
        code_hash: TokenHash,
        version: i64,
        grant: Grant,
        tokens: NewTokens,
        event: Event,
    ) -> StoreFuture<'_, bool>;

    // Grants and tokens.
    /// A grant issued without a device code (password grant).
    fn insert_grant(&self, grant: Grant, tokens: NewTokens, event: Event) -> StoreFuture<'_, ()>;
    fn access_context(&self, access_hash: TokenHash) -> StoreFuture<'_, Option<AccessContext>>;
    fn refresh_token(&self, refresh_hash: TokenHash) -> StoreFuture<'_, Option<(RefreshToken, Grant)>>;
    /// Spends `old` and stores the new pair, if `old` is unspent and the grant
    /// live. Exactly one concurrent caller gets `true`.
    fn rotate_refresh(
        &self,
        old: TokenHash,
        grant_id: GrantId,
        tokens: NewTokens,
        event: Event,
    ) -> StoreFuture<'_, bool>;
    /// Revokes a live grant and with it all its tokens. False if it was
    /// already revoked or does not exist (and then no event is written).
    fn revoke_grant(&self, grant_id: GrantId, at: UnixTime, event: Event) -> StoreFuture<'_, bool>;
    fn list_grants(&self, include_ended: bool, now: UnixTime) -> StoreFuture<'_, Vec<GrantSummary>>;

    // Throttling.
    fn counters(&self, keys: Vec<String>) -> StoreFuture<'_, Vec<Counter>>;
    /// Counts one failure against each key (with its rule), writes `event`,
    /// and a lockout event for each key this failure locks. Returns the new
    /// counters in the order of `keys`.
    fn record_failure(&self, keys: Vec<(String, Rule)>, event: Event) -> StoreFuture<'_, Vec<Counter>>;
    fn clear_counters(&self, keys: Vec<String>) -> StoreFuture<'_, ()>;

    // Events.
    /// An event that goes with no other change (failed logins and the like).
    fn append_event(&self, event: Event) -> StoreFuture<'_, ()>;
    fn events(&self, filter: EventFilter) -> StoreFuture<'_, Vec<StoredEvent>>;
    /// The newest sequence number and hash: what `events verify` checks against.
    fn event_head(&self) -> StoreFuture<'_, (i64, [u8; 32])>;

    // Maintenance.
    /// Deletes device codes, grants and tokens that ended before `before`,
    /// and idle throttle counters. Events are kept. Returns rows deleted.
    fn purge(&self, before: UnixTime) -> StoreFuture<'_, u64>;
}

/// Opens the store a database URL names: `postgres://...` or
/// `postgresql://...` for PostgreSQL, otherwise a SQLite file path
/// (optionally `sqlite://PATH`).
pub async fn open(url: &str) -> StoreResult<Arc<dyn Store>> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        postgres::PgStore::connect(url).await.map(|_| unreachable_store())
    } else {
        let path = url.strip_prefix("sqlite://").unwrap_or(url);
        if path.is_empty() {
            return Err(StoreError::UnsupportedUrl);
        }
        Ok(Arc::new(sqlite::SqliteStore::open(std::path::Path::new(path))?))
    }
}

/// The lockout event that goes with a failure `event` when `key` locks.
pub(crate) fn lockout_event(failure: &Event, key: &str) -> Event {
    let mut e = failure.clone();
    e.kind = strongroom_core::event::EventKind::Lockout;
    e.object = key.to_owned();
    e.detail = "too many failures: locked".to_owned();
    e
}

/// Device states as stored: (state name, user id).
pub(crate) fn device_state_parts(s: &DeviceState) -> (&'static str, Option<&str>) {
    (s.name(), s.user().map(UserId::as_str))
}

pub(crate) fn device_state_from_parts(state: &str, user: Option<String>) -> StoreResult<DeviceState> {
    let user_id = |u: Option<String>| {
        u.map(UserId::from_stored).ok_or_else(|| StoreError::Corrupt("device code without user".into()))
    };
    Ok(match state {
        "pending" => DeviceState::Pending,
        "approved" => DeviceState::Approved { user_id: user_id(user)? },
        "denied" => DeviceState::Denied { user_id: user_id(user)? },
        "redeemed" => DeviceState::Redeemed { user_id: user_id(user)? },
        other => return Err(StoreError::Corrupt(format!("unknown device state {other:?}"))),
    })
}

/// The migrations of each dialect, in order: (version, name, SQL).
pub(crate) struct Migration {
    pub(crate) version: i64,
    pub(crate) name: &'static str,
    pub(crate) sql: &'static str,
}

/// Every migration name, per dialect, for the parity test.
pub fn migration_names() -> (Vec<&'static str>, Vec<&'static str>) {
    (
        sqlite::MIGRATIONS.iter().map(|m| m.name).collect(),
        postgres::MIGRATIONS.iter().map(|m| m.name).collect(),
    )
}

fn unreachable_store() -> Arc<dyn Store> {
    unimplemented_store()
}
#[allow(clippy::panic)]
fn unimplemented_store() -> Arc<dyn Store> {
    panic!("postgres store not yet implemented")
}
