//! Persistence for Strongroom.
//!
//! [`Store`] has one method per domain action, in four parts, each a screen:
//! [`AuthStore`] (the token service's request path: the context reads and
//! the conditional writes, device codes, the guessing limits' counters, the
//! machine grants' context and their one write with the JWT replay record),
//! [`VaultStore`] (the vault context, and writes that re-check the writer's
//! rights: [`Writer`] in, [`Checked`] out), [`AdminStore`] (users,
//! integrations, grants, folders, rights, JWT issuers and mappings; deleting a user, an integration
//! or a folder ends what hangs on it, each grant with its own event) and
//! [`EventStore`] (the chained log, read oldest or newest first, readiness,
//! purging, pool status, and the [`StoreObserver`] hook the server's
//! metrics implement). Each method is one database transaction, and
//! every method that changes state also writes its event in that
//! transaction: if the event cannot be written, the change does not happen.
//! Single-use transitions (redeeming a device code, spending a refresh
//! token) are one conditional `UPDATE` whose row count says who won; the
//! methods return `false` to the loser.
//!
//! What a method does is written once, for both backends:
//!
//! - `schema`: every table's columns, once, in migration order;
//! - `codec`: every row encoder (a type's whole table row) and decoder;
//! - `sql`: every statement, in both dialects' parameter syntax;
//! - `ops`: every method's body, an `async fn` over a connection trait
//!   (`ops::Conn`) that both backends implement, and (`ops::methods`) the
//!   trait methods themselves, listed once by how they run, which each
//!   backend expands with its own way of running a read or a write.
//!
//! The backends hold only their connections, transactions and threads:
//! [`sqlite::SqliteStore`] (embedded, the default: a writer thread with
//! group commit, which reports each batch to the observer; reader threads
//! with their own connections and statement caches; `VACUUM INTO`
//! snapshots and their restore) and [`postgres::PgStore`] (shared by
//! several replicas: a deadpool pool, statements prepared once per
//! connection, TLS as `sslmode` says; the group commit of the two hot writes,
//! `advance_pair` and `put_association`, one pipeline per batch; the vault
//! context in one statement; a connection that saw a database failure leaves
//! the pool). Migrations per dialect live in `migrations/{sqlite,postgres}`,
//! same names. [`open`] makes a store where there is none (`serve`, `admin
//! init`); [`open_existing`] and [`probe`] create nothing (every other admin
//! command, `config check --online`); [`sqlite::lock_for_serving`] keeps a
//! SQLite store to one server. [`transfer`] copies a store to another backend (`admin
//! migrate-store`). Errors carry an [`ErrorKind`], classified once where
//! each driver hands them over; their messages never quote stored values
//! (nor a PostgreSQL error's DETAIL). One conformance suite
//! (`tests/conformance`) runs against both backends.
#![forbid(unsafe_code)]

mod codec;
mod ops;
pub mod postgres;
mod schema;
mod sql;
pub mod sqlite;
pub mod transfer;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use strongroom_core::event::{Event, StoredEvent};
use strongroom_core::grant::device::{DeviceAuthorization, DeviceContext, DeviceState, PollRecord};
use strongroom_core::grant::refresh::RefreshContext;
use strongroom_core::grant::{AccessContext, Grant, GrantId, IssuedTokens, PairState};
use strongroom_core::identity::{Group, GroupId, User, UserId};
use strongroom_core::integration::Integration;
use strongroom_core::machine::{JwtIssuer, Mapping};
use strongroom_core::throttle::{Admission, Rule, Slot};
use strongroom_core::time::UnixTime;
use strongroom_core::token::{Presented, TokenHash};
use strongroom_core::tree::ObjectGuid;
use strongroom_core::vault::value::ValueType;
use strongroom_core::vault::{FolderPath, Rights, VaultId};

/// What kind of failure a [`StoreError`] is: what a caller may do about it.
/// Each backend classifies its driver's errors into these once, where the
/// driver hands them over (`sqlite::classify`, `postgres::classify`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The database cannot be reached now: connection refused, lost or
    /// closed, a server shutting down or starting up, the store closing.
    Unavailable,
    /// The database is there but could not do it now: a lock held too long
    /// (`SQLITE_BUSY`), a serialization failure, a deadlock, no connection
    /// free in time.
    Busy,
    /// A unique key already exists.
    Conflict,
    /// The database takes no writes: a standby, or a primary demoted under
    /// the connection.
    ReadOnly,
    /// What is stored cannot be read back into a domain type.
    Corrupt,
    /// Anything else: a bug, a configuration the database refuses, a schema
    /// this binary does not know.
    Other,
}

impl ErrorKind {
    /// A bounded label (metrics, logs).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Busy => "busy",
            ErrorKind::Conflict => "conflict",
            ErrorKind::ReadOnly => "read_only",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Other => "other",
        }
    }

    /// The same request may succeed in a moment, on this replica or another:
    /// answered `503 temporarily_unavailable` with `Retry-After`.
    pub fn is_transient(self) -> bool {
        matches!(self, ErrorKind::Unavailable | ErrorKind::Busy | ErrorKind::ReadOnly)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Errors of the store. Messages never carry stored values, tokens or a
/// database error's DETAIL (which can quote row values).
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A unique key already exists (user name, client id, user code).
    #[error("already exists")]
    Conflict,
    /// A per-key quota is used up for now.
    #[error("quota exceeded")]
    QuotaExceeded,
    /// The store is shutting down.
    #[error("the store is closed")]
    Closed,
    /// The configuration names no store this build knows.
    #[error("unsupported database url (expected a path, sqlite://PATH or postgres://...)")]
    UnsupportedUrl,
    /// The database failed, or what it holds could not be read.
    #[error("database {kind}: {message}")]
    Failed { kind: ErrorKind, message: String },
    /// A URL with a scheme no store has (`mysql://`, a typo such as `postgress://`).
    #[error(
        "unknown scheme {0:?} in the database URL: expected a SQLite path, sqlite://PATH, postgres://… (or postgresql://…), \
         or libpq's key=value form{hint}",
        hint = scheme_hint(.0)
    )]
    UnknownScheme(String),
    /// [`open_existing`] found no store where the URL points (nothing was created).
    #[error("{0}")]
    NoStore(String),
    /// Another process holds what this one needs to itself (a SQLite store another `serve` serves).
    #[error("{0}")]
    InUse(String),
    /// [`open_existing`] found a store at another schema than this binary's:
    /// older ([`upgrade`] migrates it) or newer (a newer binary upgraded it).
    #[error("the store is at schema {found}, this binary's is {needed}")]
    Schema { found: i64, needed: i64 },
}

impl StoreError {
    /// A failure of `kind`; a `Conflict` is [`StoreError::Conflict`].
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> StoreError {
        match kind {
            ErrorKind::Conflict => StoreError::Conflict,
            kind => StoreError::Failed { kind, message: message.into() },
        }
    }

    /// Stored data that cannot be read back.
    pub fn corrupt(message: impl Into<String>) -> StoreError {
        StoreError::new(ErrorKind::Corrupt, message)
    }

    /// A failure that is neither transient nor the data's.
    pub fn other(message: impl Into<String>) -> StoreError {
        StoreError::new(ErrorKind::Other, message)
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            StoreError::Conflict => ErrorKind::Conflict,
            StoreError::Closed => ErrorKind::Unavailable,
            StoreError::QuotaExceeded
            | StoreError::UnsupportedUrl
            | StoreError::UnknownScheme(_)
            | StoreError::NoStore(_)
            | StoreError::InUse(_)
            | StoreError::Schema { .. } => ErrorKind::Other,
            StoreError::Failed { kind, .. } => *kind,
        }
    }

    /// See [`ErrorKind::is_transient`].
    pub fn is_transient(&self) -> bool {
        self.kind().is_transient()
    }

    /// Worth reading and trying again at once (the token service's loops):
    /// `Busy` or `Unavailable`.
    pub fn is_retryable(&self) -> bool {
        matches!(self.kind(), ErrorKind::Busy | ErrorKind::Unavailable)
    }

    /// A failure of the database rather than an answer the caller expects
    /// (`Conflict`, `QuotaExceeded`): what [`StoreObserver::failed`] counts.
    pub fn is_failure(&self) -> bool {
        !matches!(self, StoreError::Conflict | StoreError::QuotaExceeded)
    }
}

/// "did you mean" for a scheme one edit away from a known one.
fn scheme_hint(scheme: &str) -> String {
    let s = scheme.trim_end_matches("://").to_ascii_lowercase();
    ["postgres", "postgresql", "sqlite"]
        .iter()
        .find(|k| s != **k && strsim::levenshtein(&s, k) <= 2)
        .map_or_else(String::new, |k| format!(" (did you mean {k}://?)"))
}

pub type StoreResult<T> = Result<T, StoreError>;
/// The future every store method returns.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = StoreResult<T>> + Send + 'a>>;

/// A change of a grant's token pair, written in one conditional write: the
/// grant's new pair and the earlier access tokens it keeps. The refresh
/// token the old pair held stops working by the change itself
/// (`grants.refresh_hash` names the one that works); nothing else is
/// written for it, since a spent token names its grant and generation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairChange {
    pub state: PairState,
    /// The client's address, written to the grant's `last_addr` in the same
    /// statement (`None`: the stored one is kept).
    pub last_addr: Option<String>,
}

impl PairChange {
    /// `presented` (the working refresh token of `grant`) is spent and `tokens` become the pair.
    pub fn rotation(grant: &Grant, presented: TokenHash, tokens: &IssuedTokens) -> PairChange {
        PairChange { state: grant.after_rotation(presented, tokens), last_addr: None }
    }

    /// The unused pair of `grant` is replaced by `tokens` (a retry of a lost
    /// answer): its refresh token and its access token stop working.
    pub fn replacing(grant: &Grant, tokens: &IssuedTokens) -> PairChange {
        PairChange { state: grant.after_retry(tokens), last_addr: None }
    }

    /// The change also records `addr` (the client's, if known) as the
    /// grant's `last_addr`, in the same statement.
    pub fn from_addr(mut self, addr: &str) -> PairChange {
        self.last_addr = Some(addr.to_owned()).filter(|a| !a.is_empty());
        self
    }
}

/// Who writes to the vault, for the check the write repeats: the grant must
/// still be live, the user enabled, and their rights sufficient at the moment
/// of the write, whatever the context read said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Writer {
    pub grant_id: GrantId,
    pub user_id: UserId,
}

/// The outcome of a vault write that re-checks the writer's rights.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Checked<T> {
    Done(T),
    /// The writer no longer holds the rights (or the grant ended) at write time: nothing written.
    Denied,
}

/// What one read brings back for a vault request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VaultContext {
    pub access: AccessContext,
    /// Rights granted directly to the user: (folder key, rights).
    pub rights: Vec<(String, Rights)>,
    /// The newest data key's id of each named key that has one.
    pub current_keys: Vec<(String, i64)>,
    /// The entry asked for, with its owners, if it exists.
    pub entry: Option<VaultEntry>,
}

/// Entries found by an association, each with its owners.
pub type Found = Vec<(VaultId, Vec<FolderPath>)>;

/// A grant as admins see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantSummary {
    pub grant: Grant,
    pub user_name: String,
}

/// What a sign-in needs to know, from one read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoginContext {
    /// The user of that name and their password hash (PHC string), if any.
    pub user: Option<(User, String)>,
    /// Whether the client address has signed in as that name before.
    pub known_origin: bool,
}

/// Whose events a reader may see: their own (acting as `identity`), and
/// those on vault entries on whose owners `user_id` holds Read (inherited).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Viewer {
    pub identity: String,
    pub user_id: UserId,
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
    /// Only events with a sequence number below this one.
    pub before_seq: Option<i64>,
    /// The newest `limit` events, newest first (default: the oldest, oldest first).
    pub newest_first: bool,
    pub limit: u32,
    /// Only what this reader may see; `None`: everything (a Master Admin, the admin CLI).
    pub viewer: Option<Viewer>,
    /// Only events at or below this folder (its [`FolderPath::key`]): a
    /// `vault.*` event whose entry has an owner there, or another event whose
    /// object is that folder's path or one below it (compared lower-cased).
    pub component: Option<String>,
    /// Only events of one of these kinds (as stored).
    pub kinds: Option<Vec<String>>,
    /// Only events whose detail is exactly this.
    pub detail: Option<String>,
    /// Skip this many events of the result first.
    pub offset: u32,
}

/// A vault entry as stored: its data sealed under data key `key_id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VaultEntry {
    pub vault_id: VaultId,
    pub vault_type: i32,
    pub key_name: String,
    pub key_id: i64,
    pub sealed: Vec<u8>,
    pub owners: Vec<FolderPath>,
    pub created_at: UnixTime,
}

/// An entry as an administrator sees it (the console's vault page): what
/// it is, under which key, its owners and its associations' names and
/// types; never its data nor an association's value, sealed or not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryDetails {
    pub vault_id: VaultId,
    pub vault_type: i32,
    pub key_name: String,
    /// The data key its data is sealed under now.
    pub key_id: i64,
    pub created_at: UnixTime,
    pub owners: Vec<FolderPath>,
    /// (name, type, data key) of each association, by name.
    pub associations: Vec<(String, ValueType, i64)>,
}

/// An association as stored: the value sealed, and the keyed hash it is
/// looked up by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredAssociation {
    pub name: String,
    pub value_type: ValueType,
    pub key_id: i64,
    pub sealed: Vec<u8>,
    pub lookup: [u8; 32],
}

/// What `put_association` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutAssociation {
    /// Inserted, or replaced the name's previous value.
    Stored,
    /// The same value was already there: nothing written.
    Identical,
    NoEntry,
}

/// What `add_owner` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddOwner {
    Added,
    AlreadyOwner,
    NoEntry,
    /// The new owner is not an existing folder.
    NoFolder,
}

/// What `remove_owner` did: owner rows removed, and the entries deleted
/// because they lost their last owner.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnerRemoval {
    pub removed: u64,
    pub deleted: Vec<VaultId>,
}

/// A data key, wrapped by the named key `key_name` (`Driver:Name`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataKeyRecord {
    pub id: i64,
    pub key_name: String,
    pub wrapped: Vec<u8>,
    pub created_at: UnixTime,
}

/// Which entries `vault_ids` lists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VaultFilter {
    pub vault_type: Option<i32>,
    /// Only entries owned by this folder (its key).
    pub owner_key: Option<String>,
    /// Only entries with no owner at all.
    pub orphans_only: bool,
}

/// Something sealed under a data key, for re-encryption after rotation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SealedItem {
    Data { vault_id: VaultId, key_id: i64, sealed: Vec<u8> },
    Association { vault_id: VaultId, name: String, value_type: ValueType, key_id: i64, sealed: Vec<u8> },
}

/// What deleting a user or an integration ended and removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Deletion {
    /// Grants that were not revoked yet: revoked now, each with its `grant.revoked` event.
    pub grants_ended: u64,
    /// Device codes approved but not yet exchanged (or, for an integration, still pending) that were dropped.
    pub codes_dropped: u64,
    /// Rights the user held on folders (a user's deletion only).
    pub rights_removed: u64,
}

/// What `delete_folder` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FolderDeletion {
    NotFound,
    /// The folder has folders below it or owns entries, and the deletion was
    /// not recursive: nothing was deleted.
    NotEmpty {
        subfolders: u64,
        entries: u64,
    },
    Deleted {
        /// The folder and, when recursive, every folder below it.
        folders: u64,
        /// Owner links of entries to the deleted folders, removed.
        owners_removed: u64,
        /// Entries left without any owner: kept as orphans (each with its `vault.orphaned` event),
        /// found by `OrphanLookup`, re-owned or deleted by a Master Admin.
        entries_orphaned: Vec<VaultId>,
        /// Rights granted on the deleted folders, removed with them.
        rights_removed: u64,
    },
}

/// A grant for a machine (the JWT or certificate grant), written by
/// [`AuthStore::insert_machine_grant`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineGrant {
    /// The grant, its `user_id` the machine identity (`jwt+<mapping>:<subject>`).
    pub grant: Grant,
    /// The mapping that gave the identity.
    pub mapping: String,
    /// What makes the presented JWT single-use; `None` for a certificate.
    pub replay: Option<Replay>,
}

/// A JWT's replay record: issuer name, key (`jti:…`, or `in:…` the digest of the signing input), kept until `expires`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replay {
    pub issuer: String,
    pub key: String,
    pub expires: UnixTime,
}

/// What [`AuthStore::insert_machine_grant`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MachineIssue {
    Issued,
    /// The JWT was presented before (on any replica): nothing written.
    Replayed,
    /// The machine identity is disabled: no grant (the JWT is spent).
    Disabled,
    /// The identity's name is another user's (subjects that differ only in case): no grant.
    IdentityTaken,
}

/// What [`AdminStore::remove_jwt_issuer`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IssuerRemoval {
    Removed,
    NotFound,
    /// Mappings use it: nothing removed.
    InUse(u64),
}

/// The request path of the token service: one context read per request,
/// then at most one write, conditional on what the read saw.
pub trait AuthStore: Send + Sync + fmt::Debug {
    /// The grant, user and integration behind an access token: one read, by the grant's slot.
    /// `None` for a token the grant does not keep.
    fn access_context(&self, token: Presented) -> StoreFuture<'_, Option<AccessContext>>;
    /// The token's grant (with its version), the user's standing on the integration, its retry
    /// window: one read, by the grant's slot.
    fn refresh_context(&self, token: Presented) -> StoreFuture<'_, Option<RefreshContext>>;
    /// The device code, its integration, the deciding user's standing, the grant it was redeemed into.
    fn device_context(&self, code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceContext>>;
    fn device_by_user_code(&self, user_code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceAuthorization>>;
    /// `Conflict` if the user code collides with a live one. With a `quota`, one start counts against that
    /// key in the same transaction; past the rule's limit: `QuotaExceeded`, nothing written.
    fn insert_device(&self, device: DeviceAuthorization, event: Event, quota: Option<(String, Rule)>) -> StoreFuture<'_, ()>;
    /// Records a poll if the code is still at `version` and pending.
    fn record_poll(&self, code_hash: TokenHash, version: i64, record: PollRecord) -> StoreFuture<'_, bool>;
    /// Pending → `decision` (approved or denied) if still at `version`.
    fn decide_device(&self, code_hash: TokenHash, version: i64, decision: DeviceState, event: Event) -> StoreFuture<'_, bool>;
    /// Approved → redeemed, creating the grant and its first pair, if still at `version`: one winner.
    fn redeem_device(&self, code_hash: TokenHash, version: i64, grant: Grant, event: Event) -> StoreFuture<'_, bool>;
    /// A grant issued without a device code (password grant), with its first pair.
    fn insert_grant(&self, grant: Grant, event: Event) -> StoreFuture<'_, ()>;
    /// Replaces the grant's pair if the grant is still at `version` and live: one winner.
    fn advance_pair(&self, grant_id: GrantId, version: i64, change: PairChange, event: Event) -> StoreFuture<'_, bool>;
    /// Records the first use of the grant's newest access token.
    fn mark_pair_used(&self, grant_id: GrantId, access_hash: TokenHash) -> StoreFuture<'_, ()>;
    /// Revokes a live grant, and with it its tokens. False (and no event) if already revoked or unknown.
    fn revoke_grant(&self, grant_id: GrantId, at: UnixTime, event: Event) -> StoreFuture<'_, bool>;
    /// The user and their password hash.
    fn user_by_name(&self, name: String) -> StoreFuture<'_, Option<(User, String)>>;
    /// The user named `name_key` (lower-cased) with their password hash, and whether `addr` has
    /// signed in as that name before: one read.
    fn login_context(&self, name_key: String, addr: String) -> StoreFuture<'_, LoginContext>;
    /// Takes a slot in every counter of `slots` at `now`, before the work they limit: one
    /// transaction, all or none. Nothing is written unless it answers `Admitted`.
    fn begin_attempt(&self, slots: Vec<Slot>, now: UnixTime) -> StoreFuture<'_, Admission>;
    /// The attempt that took `slots` failed: its slots stay taken, a counter that is full locks
    /// (with a lockout event each), and `event` is written. Returns how many counters locked.
    fn attempt_failed(&self, slots: Vec<Slot>, event: Event) -> StoreFuture<'_, usize>;
    /// The attempt that took `slots` succeeded at `now`: its slots are given back (a counter with
    /// `reset_on_success` is reset), `origin` (user name, address) is remembered as one that
    /// signed in, and `signed_in` (the user and their `login.succeeded` event) stamps the user's
    /// last sign-in and appends the event, in the same transaction. False, and nothing written,
    /// if a counter locked meanwhile: the attempt is refused.
    fn attempt_succeeded(
        &self,
        slots: Vec<Slot>,
        origin: Option<(String, String)>,
        signed_in: Option<(UserId, Event)>,
        now: UnixTime,
    ) -> StoreFuture<'_, bool>;
    /// The trusted JWT issuer whose `iss` is `iss`, with its mappings: one read.
    fn jwt_context(&self, iss: String) -> StoreFuture<'_, Option<(JwtIssuer, Vec<Mapping>)>>;
    /// Every mapping, with its client ids (the certificate grant's context).
    fn mappings(&self) -> StoreFuture<'_, Vec<Mapping>>;
    /// A machine's grant in one transaction: the JWT's replay record first (one conditional insert:
    /// a JWT recorded before and not yet expired answers `Replayed`, nothing written), the machine
    /// identity's user row on its first grant (with a `machine.identity_added` event), the grant
    /// and `event`.
    fn insert_machine_grant(&self, grant: MachineGrant, event: Event) -> StoreFuture<'_, MachineIssue>;
}

/// The vault's request path: one context read, then one write that checks
/// the caller's rights again in its own statement.
pub trait VaultStore: Send + Sync + fmt::Debug {
    /// The caller behind an access token, their rights, the current data key, and entry `id` if asked.
    fn vault_context(&self, access: Presented, id: Option<VaultId>) -> StoreFuture<'_, Option<VaultContext>>;
    /// `SecretStore/LookupByAssociation`'s one read: the caller's context (no
    /// entry) and the entries with association `name` (and value `lookup`,
    /// when given) with their owners, as [`VaultStore::lookup_by_association`].
    fn vault_lookup(&self, access: Presented, name: String, lookup: Option<[u8; 32]>) -> StoreFuture<'_, Option<(VaultContext, Found)>>;
    fn data_keys(&self) -> StoreFuture<'_, Vec<DataKeyRecord>>;
    /// `Conflict` if the id is taken (two rotations at once).
    fn insert_data_key(&self, key: DataKeyRecord, event: Event) -> StoreFuture<'_, ()>;
    fn allocate_vault_id(&self) -> StoreFuture<'_, VaultId>;
    /// `n` new VaultIDs in one call (an issuance's certificate, key and CSR entries).
    fn allocate_vault_ids(&self, n: usize) -> StoreFuture<'_, Vec<VaultId>>;
    /// Inserts the entry if `by` holds Write on its owners now; `Done(false)` if an owner folder does not exist.
    fn insert_entry(&self, entry: VaultEntry, by: Writer, event: Event) -> StoreFuture<'_, Checked<bool>>;
    fn vault_ids(&self, filter: VaultFilter) -> StoreFuture<'_, Vec<VaultId>>;
    /// The owners of each listed entry that exists.
    fn owners_of(&self, ids: Vec<VaultId>) -> StoreFuture<'_, Vec<(VaultId, Vec<FolderPath>)>>;
    fn mutate_entry(&self, id: VaultId, vault_type: i32, by: Writer, event: Event) -> StoreFuture<'_, Checked<bool>>;
    /// Adds `owner` if `by` holds Write on it and on a current owner.
    fn add_owner(&self, id: VaultId, owner: FolderPath, by: Writer, event: Event) -> StoreFuture<'_, Checked<AddOwner>>;
    /// Removes `owner` from entry `id` (or from every entry it owns); entries left without owner are deleted.
    fn remove_owner(&self, id: Option<VaultId>, owner: FolderPath, by: Writer, event: Event) -> StoreFuture<'_, Checked<OwnerRemoval>>;
    /// The key names entries are sealed under, each with its number of entries, by name.
    fn key_names_in_use(&self) -> StoreFuture<'_, Vec<(String, u64)>>;
    fn associations(&self, id: VaultId) -> StoreFuture<'_, Vec<StoredAssociation>>;
    /// The details of each listed entry that exists ([`EntryDetails`]: no data, no value).
    fn entry_details(&self, ids: Vec<VaultId>) -> StoreFuture<'_, Vec<EntryDetails>>;
    /// One value per (entry, name): replaces a different one, reports an identical one; if `by` may write.
    fn put_association(
        &self,
        id: VaultId,
        association: StoredAssociation,
        by: Writer,
        event: Event,
    ) -> StoreFuture<'_, Checked<PutAssociation>>;
    /// Removes all of `id`'s associations, those named `name`, or the one with hash `lookup`; rows removed.
    fn dissociate(
        &self,
        id: VaultId,
        name: Option<String>,
        lookup: Option<[u8; 32]>,
        by: Writer,
        event: Event,
    ) -> StoreFuture<'_, Checked<u64>>;
    /// Entries with an association `name` (of value hash `lookup`, if given), with their owners.
    fn lookup_by_association(&self, name: String, lookup: Option<[u8; 32]>) -> StoreFuture<'_, Vec<(VaultId, Vec<FolderPath>)>>;
    /// Up to `limit` items of entries under named key `key_name` sealed under a data key other
    /// than `current`, for re-encryption. Key names match in any ASCII case, as the key ring
    /// compares them.
    fn sealed_on_old_keys(&self, key_name: String, current: i64, limit: u32) -> StoreFuture<'_, Vec<SealedItem>>;
    /// The data of up to `limit` entries under named key `key_name` (in any ASCII case) whose
    /// VaultID is above `after`, by VaultID (one page of `admin keys move`).
    fn entries_under_key(&self, key_name: String, after: VaultId, limit: u32) -> StoreFuture<'_, Vec<SealedItem>>;
    /// Replaces each item's ciphertext if still under the key it was read with; items replaced.
    fn reseal(&self, items: Vec<(SealedItem, i64, Vec<u8>)>, event: Event) -> StoreFuture<'_, u64>;
    /// Moves entry `id` under named key `key_name`: `items` are its data (first) and its associations,
    /// re-sealed, each replaced only if still under the key it was read with, if `by` may write
    /// (`None`: the administrator on the server's machine, `admin keys move`: no rights to check).
    /// `Done(false)` (nothing written) if the entry is gone or its data changed key meanwhile.
    fn rekey_entry(
        &self,
        id: VaultId,
        key_name: String,
        items: Vec<(SealedItem, i64, Vec<u8>)>,
        by: Option<Writer>,
        event: Event,
    ) -> StoreFuture<'_, Checked<bool>>;
}

/// What administrators manage: users, integrations, grants, folders and rights.
pub trait AdminStore: Send + Sync + fmt::Debug {
    /// `Conflict` if the name is taken (names are case-insensitive).
    fn create_user(&self, user: User, password_hash: String, event: Event) -> StoreFuture<'_, ()>;
    fn user_by_id(&self, id: UserId) -> StoreFuture<'_, Option<User>>;
    fn list_users(&self) -> StoreFuture<'_, Vec<User>>;
    /// Disables or enables user `name`. Disabling revokes every live grant of the user at
    /// `event.at` and denies the device codes they approved that were not redeemed, so enabling
    /// the user again revives none of them. `None` if no such user, else the grants revoked.
    fn set_user_disabled(&self, name: String, disabled: bool, event: Event) -> StoreFuture<'_, Option<u64>>;
    /// Makes user `name` a Master Admin (`on`) or not, with `event` (its detail set to
    /// `master_admin=true|false`) only when that changed anything. `None` if no such user, else
    /// whether it changed. Their next request reads it (nothing is cached).
    fn set_user_master_admin(&self, name: String, on: bool, event: Event) -> StoreFuture<'_, Option<bool>>;
    /// Replaces user `name`'s password hash; with `end_grants`, revokes their live grants as
    /// disabling does. `None` if no such user, else the grants revoked.
    /// Also ends every console session of the user ([`AdminStore::end_console_sessions`], without
    /// its event), as disabling them does.
    fn set_user_password(&self, name: String, password_hash: String, end_grants: bool, event: Event) -> StoreFuture<'_, Option<u64>>;
    /// User `user`'s console epoch: a console session is good only while the epoch it was issued
    /// under is still the user's. 0 until it first moves.
    fn console_epoch(&self, user: UserId) -> StoreFuture<'_, i64>;
    /// Moves user `user`'s console epoch on by one, so every console session of theirs, every
    /// copy of its cookie, on every replica, ends; with `event`. False if there is no such user.
    fn end_console_sessions(&self, user: UserId, event: Event) -> StoreFuture<'_, bool>;
    /// Revokes every live grant of user `name` at `event.at`. `None` if no such user, else the
    /// grants revoked (the event is written either way).
    fn revoke_user_grants(&self, name: String, event: Event) -> StoreFuture<'_, Option<u64>>;
    /// Guessing locks in force at `now`: (user name, lower-cased; until), by name.
    fn locks(&self, now: UnixTime) -> StoreFuture<'_, Vec<(String, UnixTime)>>;
    /// Clears every counter limiting guesses against user name `name_key` (lower-cased), with
    /// `event`; the counters cleared.
    fn unlock(&self, name_key: String, event: Event) -> StoreFuture<'_, u64>;
    /// `Conflict` if the client id is taken.
    fn create_integration(&self, integration: Integration, event: Event) -> StoreFuture<'_, ()>;
    /// Replaces every field but the client id, in one conditional write: only if the row is still
    /// at `integration.version` (which then moves on by one). False, and nothing written, if there
    /// is no such integration or it changed since it was read (read it again and re-apply).
    fn update_integration(&self, integration: Integration, event: Event) -> StoreFuture<'_, bool>;
    fn integration(&self, client_id: String) -> StoreFuture<'_, Option<Integration>>;
    fn list_integrations(&self) -> StoreFuture<'_, Vec<Integration>>;
    fn list_grants(&self, include_ended: bool, now: UnixTime) -> StoreFuture<'_, Vec<GrantSummary>>;
    /// Creates the folders of `lineage` (top first, each with the GUID it gets
    /// if new: `core::tree::lineage_with_guids`) that are new; whether the
    /// last was; its event if so.
    fn create_folders(&self, lineage: Vec<(FolderPath, ObjectGuid)>, event: Event) -> StoreFuture<'_, bool>;
    fn folders(&self) -> StoreFuture<'_, Vec<FolderPath>>;
    fn folder_exists(&self, key: String) -> StoreFuture<'_, bool>;
    /// The rights a user holds: granted to them or to a group they are a member of now (folder key, rights; a key may repeat).
    fn rights_of(&self, user: UserId) -> StoreFuture<'_, Vec<(String, Rights)>>;
    /// Every grant of rights: (folder, user or group name, rights, whether a group's).
    fn all_rights(&self) -> StoreFuture<'_, Vec<(FolderPath, String, Rights, bool)>>;
    /// Creates a group (`Conflict` when its name, in any case, is taken).
    fn create_group(&self, group: Group, event: Event) -> StoreFuture<'_, ()>;
    /// The group named `name`, in any case.
    fn group_by_name(&self, name: String) -> StoreFuture<'_, Option<Group>>;
    fn group_by_id(&self, id: GroupId) -> StoreFuture<'_, Option<Group>>;
    /// Every group, by name, with its member count.
    fn list_groups(&self) -> StoreFuture<'_, Vec<(Group, u64)>>;
    /// Deletes a group: its members, rights and places on integrations go
    /// with it. The folder rights it held; `None` when there is no such group.
    fn delete_group(&self, name: String, event: Event) -> StoreFuture<'_, Option<u64>>;
    /// Adds a member (the event only when they were not one): whether added.
    fn add_member(&self, group: GroupId, user: UserId, event: Event) -> StoreFuture<'_, bool>;
    /// Removes a member (the event only when they were one): whether removed.
    /// Every check of rights and of allowed users reads memberships in its
    /// own statement, so the group's rights stop for them at the next request.
    fn remove_member(&self, group: GroupId, user: UserId, event: Event) -> StoreFuture<'_, bool>;
    fn members_of(&self, group: GroupId) -> StoreFuture<'_, Vec<User>>;
    fn groups_of(&self, user: UserId) -> StoreFuture<'_, Vec<Group>>;
    /// The rights granted to a group: (folder key, rights).
    fn group_rights_of(&self, group: GroupId) -> StoreFuture<'_, Vec<(String, Rights)>>;
    /// A directory person as their directory describes them now, in one
    /// transaction: their user row (made at the first sign-in; renamed when
    /// the directory renamed them; a stale row of another id holding the
    /// name renamed `name~id`; `disabled` and `master_admin` stay the
    /// administrator's), their directory's groups (made when new, by name),
    /// and their memberships of the groups whose prefix is `prefix` set to
    /// exactly `groups` (local groups untouched), and `signed_in_at` the
    /// event's time. One event when anything changed. The user as stored.
    fn sync_directory_user(&self, user: User, prefix: String, groups: Vec<Group>, event: Event) -> StoreFuture<'_, User>;
    /// A user's live grants at `now` (not revoked, refreshable until after
    /// it), oldest first, each with its application's name: what the person
    /// has approved.
    fn approved_grants(&self, user: UserId, now: UnixTime) -> StoreFuture<'_, Vec<(Grant, String)>>;
    /// Records an OpenID Connect sign-in started for a device's user code
    /// (the state's hash, the browser binding's hash), forgetting expired ones.
    fn insert_oidc_state(
        &self,
        state: [u8; 32],
        binding: [u8; 32],
        user_code: String,
        expires: UnixTime,
        now: UnixTime,
    ) -> StoreFuture<'_, ()>;
    /// Takes a started sign-in: one conditional write, so of any number of
    /// callbacks with one state at most one gets its user code; an unknown,
    /// used, expired or other browser's state gets `None`.
    fn take_oidc_state(&self, state: [u8; 32], binding: [u8; 32], now: UnixTime) -> StoreFuture<'_, Option<String>>;
    /// Deletes user `name` (any case) in one transaction: every grant of theirs not yet revoked is
    /// revoked (one `grant.revoked` event each), device codes they approved
    /// and that were not exchanged are dropped, their rights and integration allow-list entries go
    /// with them, and `event` (its detail completed with the counts) is written. `None`: no such user.
    fn delete_user(&self, name: String, event: Event) -> StoreFuture<'_, Option<Deletion>>;
    /// Deletes integration `client_id` in one transaction: its grants not yet revoked are revoked
    /// (one `grant.revoked` event each), its pending and approved device codes dropped, and `event`
    /// written. `None`: no such integration.
    fn delete_integration(&self, client_id: String, event: Event) -> StoreFuture<'_, Option<Deletion>>;
    /// Deletes a folder in one transaction: only an empty one (no folder below it, owning no entry)
    /// unless `recursive`, which deletes every folder below it too, removes those folders from the
    /// owners of entries and keeps the entries left without an owner as orphans (one `vault.orphaned` event
    /// each). Rights granted on deleted folders go with them. `event` gets the counts in its detail.
    fn delete_folder(&self, folder: FolderPath, recursive: bool, event: Event) -> StoreFuture<'_, FolderDeletion>;
    /// The check value of the master key the store was first opened with.
    /// The first caller records its `check` (with `event`, in one
    /// transaction) and gets `None`; every later one gets the recorded value.
    fn record_key_check(&self, check: [u8; 32], event: Event) -> StoreFuture<'_, Option<[u8; 32]>>;
    /// Creates or replaces a trusted JWT issuer (by name).
    fn save_jwt_issuer(&self, issuer: JwtIssuer, event: Event) -> StoreFuture<'_, ()>;
    fn jwt_issuers(&self) -> StoreFuture<'_, Vec<JwtIssuer>>;
    /// Removes an issuer no mapping uses.
    fn remove_jwt_issuer(&self, name: String, event: Event) -> StoreFuture<'_, IssuerRemoval>;
    /// Creates or replaces a mapping (by name) with its client ids.
    fn save_mapping(&self, mapping: Mapping, event: Event) -> StoreFuture<'_, ()>;
    /// Removes a mapping; the live grants of its identities are revoked. `None`: no such mapping.
    fn remove_mapping(&self, name: String, event: Event) -> StoreFuture<'_, Option<u64>>;
    /// Gives machine identity `user` of mapping `mapping` its row, if it has none (with `event`).
    /// False: the name is another user's.
    fn add_machine_identity(&self, user: User, mapping: String, event: Event) -> StoreFuture<'_, bool>;
}

/// Told about the store's work, for metrics. The store crate knows no
/// metrics library: the server implements this and hands it to
/// [`EventStore::observe`].
pub trait StoreObserver: Send + Sync + fmt::Debug {
    /// A group commit ended: SQLite's writer (every write) or PostgreSQL's
    /// batch writer (refreshes and `Associate`) committed, or failed to
    /// commit, one batch of `jobs` writes; `elapsed` runs from `BEGIN` to the
    /// end of `COMMIT`.
    fn batch(&self, jobs: usize, elapsed: Duration, committed: bool);
    /// A store call failed with a [failure](StoreError::is_failure) of
    /// `kind`, classified where the driver handed it over.
    fn failed(&self, kind: ErrorKind) {
        let _ = kind;
    }
}

/// Where a store keeps its observer (a writer reads it once per batch), and the count of the
/// calls it answered, which every call passes through ([`ObserverSlot::seen`]).
#[derive(Clone, Default)]
pub(crate) struct ObserverSlot(Arc<std::sync::RwLock<Option<Arc<dyn StoreObserver>>>>, Arc<std::sync::atomic::AtomicU64>);

impl ObserverSlot {
    pub(crate) fn set(&self, o: Arc<dyn StoreObserver>) {
        if let Ok(mut slot) = self.0.write() {
            *slot = Some(o);
        }
    }

    pub(crate) fn get(&self) -> Option<Arc<dyn StoreObserver>> {
        self.0.read().ok().and_then(|o| o.clone())
    }

    /// Counts the call and tells the observer about `out` if it is a failure; `out` unchanged.
    pub(crate) fn seen<T>(&self, out: StoreResult<T>) -> StoreResult<T> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Err(e) = &out
            && e.is_failure()
            && let Some(o) = self.get()
        {
            o.failed(e.kind());
        }
        out
    }

    /// The calls answered so far.
    pub(crate) fn calls(&self) -> u64 {
        self.1.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// How busy the store's connections are right now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStatus {
    /// Connections the store may use at most.
    pub max: usize,
    /// Connections working on a request.
    pub in_use: usize,
    /// Requests waiting for a connection.
    pub waiting: usize,
    /// Calls answered since the store was opened: each a round trip to a reader, the writer or
    /// the database (a context read, a write, however many statements it runs).
    pub calls: u64,
}

/// The event log and the store's own upkeep.
pub trait EventStore: Send + Sync + fmt::Debug {
    /// A line for the start-up log: backend, location and settings.
    fn describe(&self) -> String;
    /// Readiness: the database answers and its schema is at this binary's
    /// newest migration (`Backend` with the reason otherwise).
    fn ready(&self) -> StoreFuture<'_, ()>;
    /// Installs the observer told about the store's work (the last one wins).
    fn observe(&self, observer: Arc<dyn StoreObserver>);
    /// Connection usage now.
    fn pool_status(&self) -> PoolStatus;
    /// An event that goes with no other change (failed logins and the like).
    fn append_event(&self, event: Event) -> StoreFuture<'_, ()>;
    fn events(&self, filter: EventFilter) -> StoreFuture<'_, Vec<StoredEvent>>;
    /// The newest sequence number and hash: what `events verify` checks against.
    fn event_head(&self) -> StoreFuture<'_, (i64, [u8; 32])>;
    /// Where the stored log starts: the sequence number and hash of the last event archived
    /// away, `None` before any archive (the log starts at event 1).
    fn event_checkpoint(&self) -> StoreFuture<'_, Option<(i64, [u8; 32])>>;
    /// The newest event written before `before` (sequence number and hash): where an archive
    /// of the events before then cuts.
    fn event_cut(&self, before: UnixTime) -> StoreFuture<'_, Option<(i64, [u8; 32])>>;
    /// Deletes the events after sequence number `from` (the checkpoint now, 0 before any
    /// archive) up to and including `through` (sequence number and hash), which becomes the
    /// checkpoint: one transaction, and only if the checkpoint is still `from` and event
    /// `through` is stored with that hash. False, and nothing changed, otherwise.
    fn archive_events(&self, from: i64, through: (i64, [u8; 32])) -> StoreFuture<'_, bool>;
    /// Deletes device codes and grants (with their tokens) that ended before `before`, idle throttle counters,
    /// and sign-in origins not seen for [`strongroom_core::throttle::ORIGIN_RETENTION_DAYS`] days.
    /// Events are kept (see [`EventStore::archive_events`]). Returns rows deleted.
    fn purge(&self, before: UnixTime) -> StoreFuture<'_, u64>;
    /// Deletes the JWT replay records of tokens expired before `now` (an expired token is
    /// refused by its claims, so its record stops nothing any more). Returns rows deleted.
    fn purge_replays(&self, now: UnixTime) -> StoreFuture<'_, u64>;
    /// A client's event (`POST /vedsdk/Log`) under a quota: one slot of counter `key` under `rule`
    /// and the event, in one transaction. `Err(until)`, and nothing written, when the counter is
    /// full: there is room again at `until`.
    fn append_client_event(&self, event: Event, key: String, rule: Rule) -> StoreFuture<'_, Result<(), UnixTime>>;
}

/// A local group's team details (VenafiPS's `Teams/*`): a group with them is a team.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Team {
    pub description: String,
    /// `TLS`, `SSH`, `Code Signing`, as given.
    pub products: Vec<String>,
}

/// A membership change asked of [`GroupStore::change_members`]: the user,
/// whether they join (or leave), and the event written when that changes anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberChange {
    pub user: UserId,
    pub join: bool,
    pub event: Event,
}

/// Groups administered over the API: creation with members and
/// owners in one transaction, batches of membership changes, renames,
/// owners and teams.
pub trait GroupStore: Send + Sync + fmt::Debug {
    /// Creates `group` with its `owners`, its team details (a team when
    /// `Some`) and its members, each member with the event of its change,
    /// in one transaction with `event` (`Conflict` when the name, in any case, is taken).
    fn create_group_with(
        &self,
        group: Group,
        owners: Vec<UserId>,
        team: Option<Team>,
        members: Vec<MemberChange>,
        event: Event,
    ) -> StoreFuture<'_, ()>;
    /// Applies `changes` to group `group` in one transaction, each one
    /// conditional write (a join of a member or a leave of a non-member
    /// changes nothing and writes no event): whether each changed anything.
    /// With `owner`, only while that user owns the group, checked in the
    /// same transaction (PostgreSQL: the ownership row share-locked until
    /// the commit). `None` (nothing written) when the group is gone or
    /// `owner` does not own it.
    fn change_members(&self, group: GroupId, changes: Vec<MemberChange>, owner: Option<UserId>) -> StoreFuture<'_, Option<Vec<bool>>>;
    /// Renames group `group` (`Conflict` when the new name, in any case, is
    /// a group's or a user's): whether there was such a group.
    fn rename_group(&self, group: GroupId, name: String, event: Event) -> StoreFuture<'_, bool>;
    /// The owners of group `group`, by name.
    fn group_owners(&self, group: GroupId) -> StoreFuture<'_, Vec<User>>;
    /// Whether user `user` owns group `group`.
    fn owns_group(&self, group: GroupId, user: UserId) -> StoreFuture<'_, bool>;
    /// Group `group`'s team details, when it is a team.
    fn team(&self, group: GroupId) -> StoreFuture<'_, Option<Team>>;
}

/// A whole store: every backend implements all six parts.
pub trait Store: AuthStore + VaultStore + AdminStore + EventStore + GroupStore + TreeStore + CertStore {}
impl<T: AuthStore + VaultStore + AdminStore + EventStore + GroupStore + TreeStore + CertStore> Store for T {}

pub use ops::certs::{
    CaRecord, CertField, CertRecord, CertStore, FieldValues, Issuance, NewObject, ObjectContext, Parking, PendingChange, PendingRecord,
    RequestContext, Revocation,
};

pub use ops::tree::{FolderObject, Holder, Renamed, RightsChange, RightsOutcome, TreeStore};

/// What opening a store does about its schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Schema {
    /// Applies the migrations it lacks, and says so in the log (`serve`,
    /// `admin init`, [`upgrade`]).
    Migrate,
    /// Changes nothing: a store at another schema than this binary's is
    /// [`StoreError::Schema`] (the `admin` commands).
    Require,
}

/// Opens the store a database URL names, creating it if need be and
/// applying the migrations it lacks (logged: from which schema to which):
/// `postgres://...`, `postgresql://...` or a libpq `key=value` string
/// (`host=db1 dbname=x`) for PostgreSQL, otherwise a SQLite file path
/// (optionally `sqlite://PATH`).
pub async fn open(url: &str) -> StoreResult<Arc<dyn Store>> {
    match sqlite_path(url)? {
        None => Ok(Arc::new(postgres::PgStore::connect(url).await?)),
        Some(path) => Ok(Arc::new(sqlite::SqliteStore::open(path)?)),
    }
}

/// Like [`open`], for a store that must exist already, at this binary's
/// schema: creates no file, directory or table and migrates nothing. A
/// SQLite file that does not exist, or holds no Strongroom tables, and a
/// PostgreSQL database without them are [`StoreError::NoStore`]; a store at
/// another schema is [`StoreError::Schema`] ([`upgrade`] migrates an older one).
pub async fn open_existing(url: &str) -> StoreResult<Arc<dyn Store>> {
    match sqlite_path(url)? {
        None => Ok(Arc::new(postgres::PgStore::connect_existing(url, Schema::Require).await?)),
        Some(path) => Ok(Arc::new(sqlite::SqliteStore::open_existing(path, Schema::Require)?)),
    }
}

/// Migrates an existing store to this binary's schema: the schema it was
/// at, and the store. Nothing there is [`StoreError::NoStore`]; a store of a
/// newer binary is [`StoreError::Schema`], unchanged.
pub async fn upgrade(url: &str) -> StoreResult<(Option<i64>, Arc<dyn Store>)> {
    let before = match probe(url).await? {
        Probe::Absent => return Err(StoreError::NoStore(format!("no store at {}", describe_database(url)?))),
        Probe::Present { version } => version,
    };
    if let Some(found) = before.filter(|v| *v > schema_version()) {
        return Err(StoreError::Schema { found, needed: schema_version() });
    }
    let store: Arc<dyn Store> = match sqlite_path(url)? {
        None => Arc::new(postgres::PgStore::connect_existing(url, Schema::Migrate).await?),
        Some(path) => Arc::new(sqlite::SqliteStore::open_existing(path, Schema::Migrate)?),
    };
    Ok((before, store))
}

/// What [`probe`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// No store there yet (`serve` or `admin init` creates it).
    Absent,
    /// A store at schema version `version` (this binary's is [`schema_version`]).
    Present { version: Option<i64> },
}

/// Reaches the database a URL names, changing nothing: whether it answers,
/// and whether a store is there at which schema version. For `config check
/// --online`.
pub async fn probe(url: &str) -> StoreResult<Probe> {
    match sqlite_path(url)? {
        None => postgres::probe(url).await,
        Some(path) => sqlite::probe(path),
    }
}

/// What a database URL opens, without opening it and without any secret:
/// `sqlite PATH`, or PostgreSQL's hosts, database, user, whether a password
/// is set, TLS mode and pool, as the driver reads the string (a string it
/// cannot read, or a CA file that cannot be loaded, is an error).
pub fn describe_database(url: &str) -> StoreResult<String> {
    match sqlite_path(url)? {
        Some(path) => Ok(format!("sqlite {}", path.display())),
        None => postgres::describe(url),
    }
}

/// The SQLite file a database URL names, or `None` for PostgreSQL (see
/// [`names_postgres`]).
pub fn sqlite_path(url: &str) -> StoreResult<Option<&std::path::Path>> {
    if names_postgres(url) {
        return Ok(None);
    }
    if let Some(at) = url.find("://")
        && !url.starts_with("sqlite://")
    {
        return Err(StoreError::UnknownScheme(url[..at + 3].to_owned()));
    }
    let path = url.strip_prefix("sqlite://").unwrap_or(url);
    if path.is_empty() {
        return Err(StoreError::UnsupportedUrl);
    }
    Ok(Some(std::path::Path::new(path)))
}

/// Whether a database URL names PostgreSQL: a `postgres://` or
/// `postgresql://` URL, or a libpq keyword string (its first word is
/// `keyword=`). A SQLite path of that shape must be written `sqlite://PATH`
/// (or `./PATH`); sent to PostgreSQL it fails on the unknown keyword
/// instead of quietly opening a file of its own on each replica.
pub fn names_postgres(url: &str) -> bool {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return true;
    }
    if url.contains("://") {
        return false;
    }
    let first = url.trim_start().split('=').next().unwrap_or("");
    url.contains('=') && !first.trim_end().is_empty() && first.trim_end().chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The migrations of each dialect, in order: (version, name, SQL).
pub(crate) struct Migration {
    pub(crate) version: i64,
    pub(crate) name: &'static str,
    pub(crate) sql: &'static str,
}

/// The schema version a database must be at for this binary: its newest migration.
pub fn schema_version() -> i64 {
    sqlite::MIGRATIONS.last().map_or(0, |m| m.version)
}

/// For [`Schema::Require`]: the store's schema must be this binary's.
pub(crate) fn require_schema(found: Option<i64>) -> StoreResult<()> {
    let needed = schema_version();
    match found {
        Some(v) if v == needed => Ok(()),
        found => Err(StoreError::Schema { found: found.unwrap_or(0), needed }),
    }
}

/// Says in the log what migrating did: the schema a store was at (`None`:
/// a new store) and the one it is at now.
pub(crate) fn log_migration(before: Option<i64>) {
    let to = schema_version();
    match before {
        None => tracing::info!(schema = to, "store created"),
        Some(from) if from < to => tracing::info!(from, to, "store schema migrated"),
        Some(_) => {}
    }
}

/// Checks a database's schema version against [`schema_version`].
pub(crate) fn check_schema(found: Option<i64>) -> StoreResult<()> {
    let want = schema_version();
    match found {
        Some(v) if v == want => Ok(()),
        Some(v) => Err(StoreError::other(format!("schema at migration {v}, this binary needs {want}"))),
        None => Err(StoreError::other(format!("no migrations applied, this binary needs {want}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_match_across_dialects() {
        let names = |m: &[Migration]| m.iter().map(|m| (m.version, m.name)).collect::<Vec<_>>();
        let (sqlite, postgres) = (names(sqlite::MIGRATIONS), names(postgres::MIGRATIONS));
        assert!(!sqlite.is_empty());
        assert_eq!(sqlite, postgres, "every migration exists for both dialects, in the same order");
    }

    #[test]
    fn database_urls_name_their_backend() {
        for pg in [
            "postgres://u@h/db",
            "postgresql://h1,h2/db?target_session_attrs=read-write",
            "host=db1 dbname=strongroom user=s",
            "  dbname = strongroom",
            "sslmode=verify-full host=db",
        ] {
            assert!(names_postgres(pg), "{pg}");
            assert_eq!(sqlite_path(pg).unwrap(), None, "{pg}");
        }
        for (url, path) in [
            ("strongroom-data/strongroom.db", "strongroom-data/strongroom.db"),
            ("/var/lib/strongroom/s.db", "/var/lib/strongroom/s.db"),
            ("sqlite:///tmp/a=b.db", "/tmp/a=b.db"),
            ("./a=b.db", "./a=b.db"),
            ("dir with space/x.db", "dir with space/x.db"),
        ] {
            assert!(!names_postgres(url), "{url}");
            assert_eq!(sqlite_path(url).unwrap(), Some(std::path::Path::new(path)), "{url}");
        }
        assert!(matches!(sqlite_path("sqlite://"), Err(StoreError::UnsupportedUrl)));
        for (url, hint) in [
            ("mysql://x@127.0.0.1/db", ""),
            ("postgress://postgres@127.0.0.1/strongroom", "did you mean postgres://?"),
            ("sqlit:///tmp/x.db", "did you mean sqlite://?"),
            ("file:///var/x.db", ""),
        ] {
            let err = sqlite_path(url).unwrap_err();
            assert!(matches!(err, StoreError::UnknownScheme(_)), "{url}");
            let text = err.to_string();
            assert!(text.contains("unknown scheme") && text.contains(hint) && !text.contains("@127"), "{url}: {text}");
            assert_eq!(hint.is_empty(), !text.contains("did you mean"), "{url}: {text}");
        }
    }

    #[test]
    fn a_description_shows_what_the_driver_reads_and_no_password() {
        for (url, user) in [
            // The driver ends the userinfo at the first `@`, wherever it stands.
            ("postgres://sr:ab/cd@db:6432/vault?sslmode=disable", "sr"),
            ("postgres://sr:s3cr%2Ft@db:6432/vault?sslmode=disable&password=other", "sr"),
            ("host=db port=6432 dbname=vault user=sr password='s3 cr' sslmode=disable", "sr"),
        ] {
            let d = describe_database(url).unwrap();
            assert!(d.contains("hosts=db:6432") && d.contains("dbname=vault") && d.contains(&format!("user={user}")), "{d}");
            assert!(d.contains("password=(set)") && d.contains("sslmode=disable"), "{d}");
            for secret in ["ab/cd", "cd", "s3cr", "other", "s3 cr", "sslpassword"] {
                assert!(!d.contains(secret), "{url}: {secret:?} in {d}");
            }
        }
        assert!(describe_database("postgres://sr@db/vault?sslmode=disable").unwrap().contains("password=(none)"));
        assert_eq!(describe_database("/var/lib/strongroom/s.db").unwrap(), "sqlite /var/lib/strongroom/s.db");
        assert!(describe_database("postgres://db/v?sslmode=sometimes").is_err(), "a string the driver cannot use is an error");
    }
}
