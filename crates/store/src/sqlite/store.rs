//! The store's four parts and the copier on SQLite: each method one job,
//! on the writer thread (in its batch's transaction) or on a reader thread
//! (in one read transaction), running the shared body of [`crate::ops`].

use std::sync::Arc;
use std::sync::atomic::Ordering;

use strongroom_core::event::{Event, StoredEvent};
use strongroom_core::grant::device::{DeviceAuthorization, DeviceContext, DeviceState, PollRecord};
use strongroom_core::grant::refresh::RefreshContext;
use strongroom_core::grant::{AccessContext, Grant, GrantId};
use strongroom_core::identity::{User, UserId};
use strongroom_core::integration::Integration;
use strongroom_core::throttle::{Admission, Rule, Slot};
use strongroom_core::time::UnixTime;
use strongroom_core::token::TokenHash;
use strongroom_core::vault::{FolderPath, Rights, VaultId};

use super::{Lite, READERS, SqliteStore};
use crate::ops::{Conn, admin, at_once, auth, events, transfer as copier, vault};
use crate::transfer::{Counters, Row, Table, Transfer};
use crate::{
    AddOwner, AdminStore, AuthStore, Checked, DataKeyRecord, EventFilter, EventStore, GrantSummary, LoginContext, NewTokens, OwnerRemoval,
    PairChange, PoolStatus, PutAssociation, SealedItem, StoreFuture, StoreObserver, StoredAssociation, VaultContext, VaultEntry,
    VaultFilter, VaultStore, Writer,
};

/// A job on the writer thread: `$body` over the connection `$c`.
macro_rules! on_writer {
    ($self:ident, |$c:ident| $body:expr) => {
        Box::pin($self.write(move |conn| {
            let $c = &Lite(conn);
            at_once($body)
        }))
    };
}

/// A job on a reader thread: `$body` over the connection `$c`.
macro_rules! on_reader {
    ($self:ident, |$c:ident| $body:expr) => {
        Box::pin($self.read(move |conn| {
            let $c = &Lite(conn);
            at_once($body)
        }))
    };
}

impl AuthStore for SqliteStore {
    fn access_context(&self, access_hash: TokenHash) -> StoreFuture<'_, Option<AccessContext>> {
        on_reader!(self, |c| auth::access_context(c, access_hash))
    }
    fn refresh_context(&self, refresh_hash: TokenHash) -> StoreFuture<'_, Option<RefreshContext>> {
        on_reader!(self, |c| auth::refresh_context(c, refresh_hash))
    }
    fn device_context(&self, code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceContext>> {
        on_reader!(self, |c| auth::device_context(c, code_hash))
    }
    fn device_by_user_code(&self, user_code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceAuthorization>> {
        on_reader!(self, |c| auth::device_by_user_code(c, user_code_hash))
    }
    fn insert_device(&self, d: DeviceAuthorization, event: Event, quota: Option<(String, Rule)>) -> StoreFuture<'_, ()> {
        on_writer!(self, |c| auth::insert_device(c, &d, &event, quota.as_ref()))
    }
    fn record_poll(&self, code_hash: TokenHash, version: i64, record: PollRecord) -> StoreFuture<'_, bool> {
        on_writer!(self, |c| auth::record_poll(c, code_hash, version, record))
    }
    fn decide_device(&self, code_hash: TokenHash, version: i64, decision: DeviceState, event: Event) -> StoreFuture<'_, bool> {
        on_writer!(self, |c| auth::decide_device(c, code_hash, version, &decision, &event))
    }
    fn redeem_device(&self, code_hash: TokenHash, version: i64, grant: Grant, tokens: NewTokens, event: Event) -> StoreFuture<'_, bool> {
        on_writer!(self, |c| auth::redeem_device(c, code_hash, version, &grant, &tokens, &event))
    }
    fn insert_grant(&self, grant: Grant, tokens: NewTokens, event: Event) -> StoreFuture<'_, ()> {
        on_writer!(self, |c| auth::insert_grant(c, &grant, &tokens, &event))
    }
    fn advance_pair(&self, grant_id: GrantId, version: i64, change: PairChange, event: Event) -> StoreFuture<'_, bool> {
        on_writer!(self, |c| auth::advance_pair(c, &grant_id, version, &change, &event))
    }
    fn mark_pair_used(&self, grant_id: GrantId, access_hash: TokenHash) -> StoreFuture<'_, ()> {
        on_writer!(self, |c| auth::mark_pair_used(c, &grant_id, access_hash))
    }
    fn revoke_grant(&self, grant_id: GrantId, at: UnixTime, event: Event) -> StoreFuture<'_, bool> {
        on_writer!(self, |c| auth::revoke_grant(c, &grant_id, at, &event))
    }
    fn user_by_name(&self, name: String) -> StoreFuture<'_, Option<(User, String)>> {
        on_reader!(self, |c| auth::user_by_name(c, &name))
    }
    fn login_context(&self, name_key: String, addr: String) -> StoreFuture<'_, LoginContext> {
        on_reader!(self, |c| auth::login_context(c, &name_key, &addr))
    }
    fn begin_attempt(&self, slots: Vec<Slot>, now: UnixTime) -> StoreFuture<'_, Admission> {
        on_writer!(self, |c| auth::begin_attempt(c, &slots, now))
    }
    fn attempt_failed(&self, slots: Vec<Slot>, event: Event) -> StoreFuture<'_, usize> {
        on_writer!(self, |c| auth::attempt_failed(c, &slots, &event))
    }
    fn attempt_succeeded(&self, slots: Vec<Slot>, origin: Option<(String, String)>, now: UnixTime) -> StoreFuture<'_, bool> {
        on_writer!(self, |c| auth::attempt_succeeded(c, &slots, origin.as_ref(), now))
    }
}

impl VaultStore for SqliteStore {
    fn vault_context(&self, access_hash: TokenHash, id: Option<VaultId>) -> StoreFuture<'_, Option<VaultContext>> {
        on_reader!(self, |c| vault::vault_context(c, access_hash, id))
    }
    fn data_keys(&self) -> StoreFuture<'_, Vec<DataKeyRecord>> {
        on_reader!(self, |c| vault::data_keys(c))
    }
    fn insert_data_key(&self, k: DataKeyRecord, event: Event) -> StoreFuture<'_, ()> {
        on_writer!(self, |c| vault::insert_data_key(c, &k, &event))
    }
    fn allocate_vault_id(&self) -> StoreFuture<'_, VaultId> {
        on_writer!(self, |c| vault::allocate_vault_id(c))
    }
    fn insert_entry(&self, e: VaultEntry, by: Writer, event: Event) -> StoreFuture<'_, Checked<bool>> {
        on_writer!(self, |c| vault::insert_entry(c, &e, &by, &event))
    }
    fn vault_ids(&self, f: VaultFilter) -> StoreFuture<'_, Vec<VaultId>> {
        on_reader!(self, |c| vault::vault_ids(c, &f))
    }
    fn owners_of(&self, ids: Vec<VaultId>) -> StoreFuture<'_, Vec<(VaultId, Vec<FolderPath>)>> {
        on_reader!(self, |c| vault::owners_of(c, &ids))
    }
    fn mutate_entry(&self, id: VaultId, vault_type: i32, by: Writer, event: Event) -> StoreFuture<'_, Checked<bool>> {
        on_writer!(self, |c| vault::mutate_entry(c, id, vault_type, &by, &event))
    }
    fn add_owner(&self, id: VaultId, owner: FolderPath, by: Writer, event: Event) -> StoreFuture<'_, Checked<AddOwner>> {
        on_writer!(self, |c| vault::add_owner(c, id, &owner, &by, &event))
    }
    fn remove_owner(&self, id: Option<VaultId>, owner: FolderPath, by: Writer, event: Event) -> StoreFuture<'_, Checked<OwnerRemoval>> {
        on_writer!(self, |c| vault::remove_owner(c, id, &owner, &by, &event))
    }
    fn key_names_in_use(&self) -> StoreFuture<'_, Vec<(String, u64)>> {
        on_reader!(self, |c| vault::key_names_in_use(c))
    }
    fn associations(&self, id: VaultId) -> StoreFuture<'_, Vec<StoredAssociation>> {
        on_reader!(self, |c| vault::associations(c, id))
    }
    fn put_association(&self, id: VaultId, a: StoredAssociation, by: Writer, event: Event) -> StoreFuture<'_, Checked<PutAssociation>> {
        on_writer!(self, |c| vault::put_association(c, id, &a, &by, &event))
    }
    fn dissociate(
        &self,
        id: VaultId,
        name: Option<String>,
        lookup: Option<[u8; 32]>,
        by: Writer,
        event: Event,
    ) -> StoreFuture<'_, Checked<u64>> {
        on_writer!(self, |c| vault::dissociate(c, id, name.as_deref(), lookup.as_ref(), &by, &event))
    }
    fn lookup_by_association(&self, name: String, lookup: Option<[u8; 32]>) -> StoreFuture<'_, Vec<(VaultId, Vec<FolderPath>)>> {
        on_reader!(self, |c| vault::lookup_by_association(c, &name, lookup.as_ref()))
    }
    fn sealed_on_old_keys(&self, key_name: String, current: i64, limit: u32) -> StoreFuture<'_, Vec<SealedItem>> {
        on_reader!(self, |c| vault::sealed_on_old_keys(c, &key_name, current, limit))
    }
    fn entries_under_key(&self, key_name: String, after: VaultId, limit: u32) -> StoreFuture<'_, Vec<SealedItem>> {
        on_reader!(self, |c| vault::entries_under_key(c, &key_name, after, limit))
    }
    fn reseal(&self, items: Vec<(SealedItem, i64, Vec<u8>)>, event: Event) -> StoreFuture<'_, u64> {
        on_writer!(self, |c| vault::reseal(c, &items, &event))
    }
    fn rekey_entry(
        &self,
        id: VaultId,
        key_name: String,
        items: Vec<(SealedItem, i64, Vec<u8>)>,
        by: Option<Writer>,
        event: Event,
    ) -> StoreFuture<'_, Checked<bool>> {
        on_writer!(self, |c| vault::rekey_entry(c, id, &key_name, &items, by.as_ref(), &event))
    }
}

impl AdminStore for SqliteStore {
    fn create_user(&self, user: User, password_hash: String, event: Event) -> StoreFuture<'_, ()> {
        on_writer!(self, |c| admin::create_user(c, &user, &password_hash, &event))
    }
    fn user_by_id(&self, id: UserId) -> StoreFuture<'_, Option<User>> {
        on_reader!(self, |c| admin::user_by_id(c, &id))
    }
    fn list_users(&self) -> StoreFuture<'_, Vec<User>> {
        on_reader!(self, |c| admin::list_users(c))
    }
    fn set_user_disabled(&self, name: String, disabled: bool, event: Event) -> StoreFuture<'_, Option<u64>> {
        on_writer!(self, |c| admin::set_user_disabled(c, &name, disabled, &event))
    }
    fn set_user_password(&self, name: String, password_hash: String, end: bool, event: Event) -> StoreFuture<'_, Option<u64>> {
        on_writer!(self, |c| admin::set_user_password(c, &name, &password_hash, end, &event))
    }
    fn revoke_user_grants(&self, name: String, event: Event) -> StoreFuture<'_, Option<u64>> {
        on_writer!(self, |c| admin::revoke_user_grants(c, &name, &event))
    }
    fn locks(&self, now: UnixTime) -> StoreFuture<'_, Vec<(String, UnixTime)>> {
        on_reader!(self, |c| admin::locks(c, now))
    }
    fn unlock(&self, name_key: String, event: Event) -> StoreFuture<'_, u64> {
        on_writer!(self, |c| admin::unlock(c, &name_key, &event))
    }
    fn create_integration(&self, i: Integration, event: Event) -> StoreFuture<'_, ()> {
        on_writer!(self, |c| admin::create_integration(c, &i, &event))
    }
    fn update_integration(&self, i: Integration, event: Event) -> StoreFuture<'_, bool> {
        on_writer!(self, |c| admin::update_integration(c, &i, &event))
    }
    fn integration(&self, client_id: String) -> StoreFuture<'_, Option<Integration>> {
        on_reader!(self, |c| admin::integration(c, &client_id))
    }
    fn list_integrations(&self) -> StoreFuture<'_, Vec<Integration>> {
        on_reader!(self, |c| admin::list_integrations(c))
    }
    fn list_grants(&self, include_ended: bool, now: UnixTime) -> StoreFuture<'_, Vec<GrantSummary>> {
        on_reader!(self, |c| admin::list_grants(c, include_ended, now))
    }
    fn create_folders(&self, lineage: Vec<FolderPath>, event: Event) -> StoreFuture<'_, bool> {
        on_writer!(self, |c| admin::create_folders(c, &lineage, &event))
    }
    fn folders(&self) -> StoreFuture<'_, Vec<FolderPath>> {
        on_reader!(self, |c| admin::folders(c))
    }
    fn folder_exists(&self, key: String) -> StoreFuture<'_, bool> {
        on_reader!(self, |c| vault::folder_exists(c, &key))
    }
    fn set_rights(&self, f: FolderPath, user: UserId, rights: Rights, event: Event) -> StoreFuture<'_, ()> {
        on_writer!(self, |c| admin::set_rights(c, &f, &user, rights, &event))
    }
    fn rights_of(&self, user: UserId) -> StoreFuture<'_, Vec<(String, Rights)>> {
        on_reader!(self, |c| vault::rights_of(c, &user))
    }
    fn all_rights(&self) -> StoreFuture<'_, Vec<(FolderPath, String, Rights)>> {
        on_reader!(self, |c| admin::all_rights(c))
    }
    fn record_key_check(&self, check: [u8; 32], event: Event) -> StoreFuture<'_, Option<[u8; 32]>> {
        on_writer!(self, |c| admin::record_key_check(c, &check, &event))
    }
}

impl EventStore for SqliteStore {
    fn describe(&self) -> String {
        self.inner.settings.clone()
    }
    /// A job on the writer: ready means writes can take the database's
    /// write lock (one held elsewhere makes the request path fail too).
    fn ready(&self) -> StoreFuture<'_, ()> {
        on_writer!(self, |c| async {
            let v = c.query_opt(&crate::sql::SCHEMA_VERSION, &[], |r| r.opt_int()).await?.flatten();
            crate::check_schema(v)
        })
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
        on_writer!(self, |c| async { events::append_event(c, &event).await.map(drop) })
    }
    fn events(&self, f: EventFilter) -> StoreFuture<'_, Vec<StoredEvent>> {
        on_reader!(self, |c| events::events(c, &f))
    }
    fn event_head(&self) -> StoreFuture<'_, (i64, [u8; 32])> {
        on_reader!(self, |c| events::event_head(c))
    }
    fn purge(&self, before: UnixTime) -> StoreFuture<'_, u64> {
        on_writer!(self, |c| events::purge(c, before))
    }
}

impl Transfer for SqliteStore {
    fn count(&self, table: &'static Table) -> StoreFuture<'_, u64> {
        on_reader!(self, |c| copier::count(c, table))
    }
    fn dump(&self, table: &'static Table, after: Option<Row>, limit: u32) -> StoreFuture<'_, Vec<Row>> {
        on_reader!(self, |c| copier::dump(c, table, after.as_deref(), limit))
    }
    fn load(&self, table: &'static Table, rows: Vec<Row>) -> StoreFuture<'_, ()> {
        on_writer!(self, |c| copier::load(c, table, &rows))
    }
    fn counters(&self) -> StoreFuture<'_, Counters> {
        on_reader!(self, |c| copier::counters(c))
    }
    fn set_counters(&self, counters: Counters) -> StoreFuture<'_, ()> {
        on_writer!(self, |c| copier::set_counters(c, &counters))
    }
}
