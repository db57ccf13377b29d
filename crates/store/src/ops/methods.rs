//! Every store method whose body runs the same way on both backends, listed
//! once, by how it runs. Each backend implements four macros and expands
//! these lists inside its trait impls, writing by hand only the methods it
//! runs its own way (PostgreSQL's group-committed writes and one-statement
//! vault context, readiness, the pool's status):
//!
//! - `$read`: a read, in one snapshot (SQLite: a reader thread's
//!   transaction; PostgreSQL: one statement on a pooled connection);
//! - `$write`: a write transaction that may append events (SQLite: a job on
//!   the writer; PostgreSQL: a transaction that takes the chain's head first);
//! - `$single`: one statement that appends no event (PostgreSQL: no
//!   transaction);
//! - `$plain`: a write transaction that appends no event (PostgreSQL: one
//!   that leaves the chain's head alone).
//!
//! `auth_methods!` and `admin_methods!` take a fifth, `$context`, for the
//! reads many requests make at once with another key each: the access and
//! refresh contexts (the read every request with a token starts with), a
//! device code's, an integration (every grant's) and a JWT issuer with its
//! mappings (PostgreSQL: coalesced with the others waiting, see
//! `postgres::read`); `$read` when it is left out.
//!
//! Each macro is called as `$kind!(self, |c| body)`, `body` a future over
//! the connection `c`. The names in the signatures and bodies resolve where
//! the lists are expanded: each backend's `store.rs` imports them.

/// The methods of [`crate::AuthStore`] that run alike on both backends.
macro_rules! auth_methods {
    ($read:ident, $write:ident, $single:ident, $plain:ident) => {
        $crate::ops::methods::auth_methods!($read, $write, $single, $plain, $read);
    };
    ($read:ident, $write:ident, $single:ident, $plain:ident, $context:ident) => {
        fn access_context(&self, token: Presented) -> StoreFuture<'_, Option<AccessContext>> {
            $context!(self, |c| auth::access_context(c, token))
        }
        fn refresh_context(&self, token: Presented) -> StoreFuture<'_, Option<RefreshContext>> {
            $context!(self, |c| auth::refresh_context(c, token))
        }
        fn device_context(&self, code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceContext>> {
            $context!(self, |c| auth::device_context(c, code_hash))
        }
        fn device_by_user_code(&self, user_code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceAuthorization>> {
            $read!(self, |c| auth::device_by_user_code(c, user_code_hash))
        }
        fn insert_device(&self, d: DeviceAuthorization, event: Event, quota: Option<(String, Rule)>) -> StoreFuture<'_, ()> {
            $write!(self, |c| auth::insert_device(c, &d, &event, quota.as_ref()))
        }
        fn record_poll(&self, code_hash: TokenHash, version: i64, record: PollRecord) -> StoreFuture<'_, bool> {
            $single!(self, |c| auth::record_poll(c, code_hash, version, record))
        }
        fn decide_device(&self, code_hash: TokenHash, version: i64, decision: DeviceState, event: Event) -> StoreFuture<'_, bool> {
            $write!(self, |c| auth::decide_device(c, code_hash, version, &decision, &event))
        }
        fn insert_grant(&self, grant: Grant, event: Event) -> StoreFuture<'_, ()> {
            $write!(self, |c| auth::insert_grant(c, &grant, &event))
        }
        fn mark_pair_used(&self, grant_id: GrantId, access_hash: TokenHash) -> StoreFuture<'_, ()> {
            $single!(self, |c| auth::mark_pair_used(c, &grant_id, access_hash))
        }
        fn revoke_grant(&self, grant_id: GrantId, at: UnixTime, event: Event) -> StoreFuture<'_, bool> {
            $write!(self, |c| auth::revoke_grant(c, &grant_id, at, &event))
        }
        fn user_by_name(&self, name: String) -> StoreFuture<'_, Option<(User, String)>> {
            $read!(self, |c| auth::user_by_name(c, &name))
        }
        fn login_context(&self, name_key: String, addr: String) -> StoreFuture<'_, LoginContext> {
            $read!(self, |c| auth::login_context(c, &name_key, &addr))
        }
        fn begin_attempt(&self, slots: Vec<Slot>, now: UnixTime) -> StoreFuture<'_, Admission> {
            $plain!(self, |c| auth::begin_attempt(c, &slots, now))
        }
        fn attempt_failed(&self, slots: Vec<Slot>, event: Event) -> StoreFuture<'_, usize> {
            $write!(self, |c| auth::attempt_failed(c, &slots, &event))
        }
        fn attempt_succeeded(
            &self,
            slots: Vec<Slot>,
            origin: Option<(String, String)>,
            signed_in: Option<(UserId, Event)>,
            now: UnixTime,
        ) -> StoreFuture<'_, bool> {
            $write!(self, |c| auth::attempt_succeeded(c, &slots, origin.as_ref(), signed_in.as_ref(), now))
        }
        fn jwt_context(&self, iss: String) -> StoreFuture<'_, Option<(JwtIssuer, Vec<Mapping>)>> {
            $context!(self, |c| machine::jwt_context(c, &iss))
        }
        fn mappings(&self) -> StoreFuture<'_, Vec<Mapping>> {
            $read!(self, |c| machine::mappings(c))
        }
    };
}
pub(crate) use auth_methods;

/// The methods of [`crate::VaultStore`] that run alike on both backends.
macro_rules! vault_methods {
    ($read:ident, $write:ident, $single:ident, $plain:ident) => {
        fn data_keys(&self) -> StoreFuture<'_, Vec<DataKeyRecord>> {
            $read!(self, |c| vault::data_keys(c))
        }
        fn insert_data_key(&self, k: DataKeyRecord, event: Event) -> StoreFuture<'_, ()> {
            $write!(self, |c| vault::insert_data_key(c, &k, &event))
        }
        fn allocate_vault_id(&self) -> StoreFuture<'_, VaultId> {
            $single!(self, |c| vault::allocate_vault_id(c))
        }
        fn allocate_vault_ids(&self, n: usize) -> StoreFuture<'_, Vec<VaultId>> {
            $single!(self, |c| vault::allocate_vault_ids(c, n))
        }
        fn insert_entry(&self, e: VaultEntry, by: Writer, event: Event) -> StoreFuture<'_, Checked<bool>> {
            $write!(self, |c| vault::insert_entry(c, &e, &by, &event))
        }
        fn vault_ids(&self, f: VaultFilter) -> StoreFuture<'_, Vec<VaultId>> {
            $read!(self, |c| vault::vault_ids(c, &f))
        }
        fn owners_of(&self, ids: Vec<VaultId>) -> StoreFuture<'_, Vec<(VaultId, Vec<FolderPath>)>> {
            $read!(self, |c| vault::owners_of(c, &ids))
        }
        fn mutate_entry(&self, id: VaultId, vault_type: i32, by: Writer, event: Event) -> StoreFuture<'_, Checked<bool>> {
            $write!(self, |c| vault::mutate_entry(c, id, vault_type, &by, &event))
        }
        fn add_owner(&self, id: VaultId, owner: FolderPath, by: Writer, event: Event) -> StoreFuture<'_, Checked<AddOwner>> {
            $write!(self, |c| vault::add_owner(c, id, &owner, &by, &event))
        }
        fn remove_owner(&self, id: Option<VaultId>, owner: FolderPath, by: Writer, event: Event) -> StoreFuture<'_, Checked<OwnerRemoval>> {
            $write!(self, |c| vault::remove_owner(c, id, &owner, &by, &event))
        }
        fn key_names_in_use(&self) -> StoreFuture<'_, Vec<(String, u64)>> {
            $read!(self, |c| vault::key_names_in_use(c))
        }
        fn associations(&self, id: VaultId) -> StoreFuture<'_, Vec<StoredAssociation>> {
            $read!(self, |c| vault::associations(c, id))
        }
        fn entry_details(&self, ids: Vec<VaultId>) -> StoreFuture<'_, Vec<crate::EntryDetails>> {
            $read!(self, |c| vault::entry_details(c, &ids))
        }
        fn dissociate(
            &self,
            id: VaultId,
            name: Option<String>,
            lookup: Option<[u8; 32]>,
            by: Writer,
            event: Event,
        ) -> StoreFuture<'_, Checked<u64>> {
            $write!(self, |c| vault::dissociate(c, id, name.as_deref(), lookup.as_ref(), &by, &event))
        }
        fn lookup_by_association(&self, name: String, lookup: Option<[u8; 32]>) -> StoreFuture<'_, Vec<(VaultId, Vec<FolderPath>)>> {
            $read!(self, |c| vault::lookup_by_association(c, &name, lookup.as_ref()))
        }
        fn sealed_on_old_keys(&self, key_name: String, current: i64, limit: u32) -> StoreFuture<'_, Vec<SealedItem>> {
            $read!(self, |c| vault::sealed_on_old_keys(c, &key_name, current, limit))
        }
        fn entries_under_key(&self, key_name: String, after: VaultId, limit: u32) -> StoreFuture<'_, Vec<SealedItem>> {
            $read!(self, |c| vault::entries_under_key(c, &key_name, after, limit))
        }
        fn reseal(&self, items: Vec<(SealedItem, i64, Vec<u8>)>, event: Event) -> StoreFuture<'_, u64> {
            $write!(self, |c| vault::reseal(c, &items, &event))
        }
        fn rekey_entry(
            &self,
            id: VaultId,
            key_name: String,
            items: Vec<(SealedItem, i64, Vec<u8>)>,
            by: Option<Writer>,
            event: Event,
        ) -> StoreFuture<'_, Checked<bool>> {
            $write!(self, |c| vault::rekey_entry(c, id, &key_name, &items, by.as_ref(), &event))
        }
    };
}
pub(crate) use vault_methods;

/// The methods of [`crate::AdminStore`] that run alike on both backends.
macro_rules! admin_methods {
    ($read:ident, $write:ident, $single:ident, $plain:ident) => {
        $crate::ops::methods::admin_methods!($read, $write, $single, $plain, $read);
    };
    ($read:ident, $write:ident, $single:ident, $plain:ident, $context:ident) => {
        fn create_user(&self, user: User, password_hash: String, event: Event) -> StoreFuture<'_, ()> {
            $write!(self, |c| admin::create_user(c, &user, &password_hash, &event))
        }
        fn user_by_id(&self, id: UserId) -> StoreFuture<'_, Option<User>> {
            $read!(self, |c| admin::user_by_id(c, &id))
        }
        fn list_users(&self) -> StoreFuture<'_, Vec<User>> {
            $read!(self, |c| admin::list_users(c))
        }
        fn set_user_disabled(&self, name: String, disabled: bool, event: Event) -> StoreFuture<'_, Option<u64>> {
            $write!(self, |c| admin::set_user_disabled(c, &name, disabled, &event))
        }
        fn set_user_master_admin(&self, name: String, on: bool, event: Event) -> StoreFuture<'_, Option<bool>> {
            $write!(self, |c| admin::set_user_master_admin(c, &name, on, &event))
        }
        fn set_user_password(&self, name: String, password_hash: String, end: bool, event: Event) -> StoreFuture<'_, Option<u64>> {
            $write!(self, |c| admin::set_user_password(c, &name, &password_hash, end, &event))
        }
        fn console_epoch(&self, user: UserId) -> StoreFuture<'_, i64> {
            $read!(self, |c| admin::console_epoch(c, &user))
        }
        fn end_console_sessions(&self, user: UserId, event: Event) -> StoreFuture<'_, bool> {
            $write!(self, |c| admin::end_console_sessions(c, &user, &event))
        }
        fn revoke_user_grants(&self, name: String, event: Event) -> StoreFuture<'_, Option<u64>> {
            $write!(self, |c| admin::revoke_user_grants(c, &name, &event))
        }
        fn locks(&self, now: UnixTime) -> StoreFuture<'_, Vec<(String, UnixTime)>> {
            $read!(self, |c| admin::locks(c, now))
        }
        fn unlock(&self, name_key: String, event: Event) -> StoreFuture<'_, u64> {
            $write!(self, |c| admin::unlock(c, &name_key, &event))
        }
        fn create_integration(&self, i: Integration, event: Event) -> StoreFuture<'_, ()> {
            $write!(self, |c| admin::create_integration(c, &i, &event))
        }
        fn update_integration(&self, i: Integration, event: Event) -> StoreFuture<'_, bool> {
            $write!(self, |c| admin::update_integration(c, &i, &event))
        }
        fn integration(&self, client_id: String) -> StoreFuture<'_, Option<Integration>> {
            $context!(self, |c| admin::integration(c, &client_id))
        }
        fn list_integrations(&self) -> StoreFuture<'_, Vec<Integration>> {
            $read!(self, |c| admin::list_integrations(c))
        }
        fn list_grants(&self, include_ended: bool, now: UnixTime) -> StoreFuture<'_, Vec<GrantSummary>> {
            $read!(self, |c| admin::list_grants(c, include_ended, now))
        }
        fn create_folders(&self, lineage: Vec<(FolderPath, ObjectGuid)>, event: Event) -> StoreFuture<'_, bool> {
            $write!(self, |c| admin::create_folders(c, &lineage, &event))
        }
        fn folders(&self) -> StoreFuture<'_, Vec<FolderPath>> {
            $read!(self, |c| admin::folders(c))
        }
        fn folder_exists(&self, key: String) -> StoreFuture<'_, bool> {
            $read!(self, |c| vault::folder_exists(c, &key))
        }
        fn rights_of(&self, user: UserId) -> StoreFuture<'_, Vec<(String, Rights)>> {
            $read!(self, |c| vault::rights_of(c, &user))
        }
        fn all_rights(&self) -> StoreFuture<'_, Vec<(FolderPath, String, Rights, bool)>> {
            $read!(self, |c| admin::all_rights(c))
        }
        fn create_group(&self, g: Group, event: Event) -> StoreFuture<'_, ()> {
            $write!(self, |c| admin::create_group(c, &g, &event))
        }
        fn group_by_name(&self, name: String) -> StoreFuture<'_, Option<Group>> {
            $read!(self, |c| admin::group_by_name(c, &name))
        }
        fn group_by_id(&self, id: GroupId) -> StoreFuture<'_, Option<Group>> {
            $read!(self, |c| admin::group_by_id(c, &id))
        }
        fn list_groups(&self) -> StoreFuture<'_, Vec<(Group, u64)>> {
            $read!(self, |c| admin::list_groups(c))
        }
        fn delete_group(&self, name: String, event: Event) -> StoreFuture<'_, Option<u64>> {
            $write!(self, |c| admin::delete_group(c, &name, &event))
        }
        fn add_member(&self, group: GroupId, user: UserId, event: Event) -> StoreFuture<'_, bool> {
            $write!(self, |c| admin::add_member(c, &group, &user, &event))
        }
        fn remove_member(&self, group: GroupId, user: UserId, event: Event) -> StoreFuture<'_, bool> {
            $write!(self, |c| admin::remove_member(c, &group, &user, &event))
        }
        fn members_of(&self, group: GroupId) -> StoreFuture<'_, Vec<User>> {
            $read!(self, |c| admin::members_of(c, &group))
        }
        fn groups_of(&self, user: UserId) -> StoreFuture<'_, Vec<Group>> {
            $read!(self, |c| admin::groups_of(c, &user))
        }
        fn group_rights_of(&self, group: GroupId) -> StoreFuture<'_, Vec<(String, Rights)>> {
            $read!(self, |c| admin::group_rights_of(c, &group))
        }
        fn insert_oidc_state(
            &self,
            state: [u8; 32],
            binding: [u8; 32],
            user_code: String,
            expires: UnixTime,
            now: UnixTime,
        ) -> StoreFuture<'_, ()> {
            $plain!(self, |c| admin::insert_oidc_state(c, &state, &binding, &user_code, expires, now))
        }
        fn take_oidc_state(&self, state: [u8; 32], binding: [u8; 32], now: UnixTime) -> StoreFuture<'_, Option<String>> {
            $plain!(self, |c| admin::take_oidc_state(c, &state, &binding, now))
        }
        fn approved_grants(&self, user: UserId, now: UnixTime) -> StoreFuture<'_, Vec<(Grant, String)>> {
            $read!(self, |c| admin::approved_grants(c, &user, now))
        }
        fn sync_directory_user(&self, user: User, prefix: String, groups: Vec<Group>, event: Event) -> StoreFuture<'_, User> {
            $write!(self, |c| admin::sync_directory_user(c, &user, &prefix, &groups, &event))
        }
        fn delete_user(&self, name: String, event: Event) -> StoreFuture<'_, Option<Deletion>> {
            $write!(self, |c| admin::delete_user(c, &name, &event))
        }
        fn delete_integration(&self, client_id: String, event: Event) -> StoreFuture<'_, Option<Deletion>> {
            $write!(self, |c| admin::delete_integration(c, &client_id, &event))
        }
        fn delete_folder(&self, folder: FolderPath, recursive: bool, event: Event) -> StoreFuture<'_, FolderDeletion> {
            $write!(self, |c| admin::delete_folder(c, &folder, recursive, &event))
        }
        fn record_key_check(&self, check: [u8; 32], event: Event) -> StoreFuture<'_, Option<[u8; 32]>> {
            $write!(self, |c| admin::record_key_check(c, &check, &event))
        }
        fn save_jwt_issuer(&self, issuer: JwtIssuer, event: Event) -> StoreFuture<'_, ()> {
            $write!(self, |c| machine::save_jwt_issuer(c, &issuer, &event))
        }
        fn jwt_issuers(&self) -> StoreFuture<'_, Vec<JwtIssuer>> {
            $read!(self, |c| machine::jwt_issuers(c))
        }
        fn remove_jwt_issuer(&self, name: String, event: Event) -> StoreFuture<'_, IssuerRemoval> {
            $write!(self, |c| machine::remove_jwt_issuer(c, &name, &event))
        }
        fn save_mapping(&self, mapping: Mapping, event: Event) -> StoreFuture<'_, ()> {
            $write!(self, |c| machine::save_mapping(c, &mapping, &event))
        }
        fn remove_mapping(&self, name: String, event: Event) -> StoreFuture<'_, Option<u64>> {
            $write!(self, |c| machine::remove_mapping(c, &name, &event))
        }
        fn add_machine_identity(&self, user: User, mapping: String, event: Event) -> StoreFuture<'_, bool> {
            $write!(self, |c| machine::add_machine_identity(c, &user, &mapping, &event))
        }
    };
}
pub(crate) use admin_methods;

/// The methods of [`crate::EventStore`] that run alike on both backends.
macro_rules! event_methods {
    ($read:ident, $write:ident, $single:ident, $plain:ident) => {
        fn append_event(&self, event: Event) -> StoreFuture<'_, ()> {
            $write!(self, |c| async { events::append_event(c, &event).await.map(drop) })
        }
        fn events(&self, f: EventFilter) -> StoreFuture<'_, Vec<StoredEvent>> {
            $read!(self, |c| events::events(c, &f))
        }
        fn event_head(&self) -> StoreFuture<'_, (i64, [u8; 32])> {
            $read!(self, |c| events::event_head(c))
        }
        fn event_checkpoint(&self) -> StoreFuture<'_, Option<(i64, [u8; 32])>> {
            $read!(self, |c| events::event_checkpoint(c))
        }
        fn event_cut(&self, before: UnixTime) -> StoreFuture<'_, Option<(i64, [u8; 32])>> {
            $read!(self, |c| events::event_cut(c, before))
        }
        fn archive_events(&self, from: i64, through: (i64, [u8; 32])) -> StoreFuture<'_, bool> {
            $plain!(self, |c| events::archive_events(c, from, through))
        }
        fn purge(&self, before: UnixTime) -> StoreFuture<'_, u64> {
            $write!(self, |c| events::purge(c, before))
        }
        fn purge_replays(&self, now: UnixTime) -> StoreFuture<'_, u64> {
            $single!(self, |c| events::purge_replays(c, now))
        }
        fn append_client_event(&self, event: Event, key: String, rule: Rule) -> StoreFuture<'_, Result<(), UnixTime>> {
            $write!(self, |c| events::append_client_event(c, &event, &key, rule))
        }
    };
}
pub(crate) use event_methods;

/// The methods of [`crate::transfer::Transfer`] that run alike on both backends.
macro_rules! transfer_methods {
    ($read:ident, $write:ident, $single:ident, $plain:ident) => {
        fn count(&self, table: &'static Table) -> StoreFuture<'_, u64> {
            $read!(self, |c| copier::count(c, table))
        }
        fn dump(&self, table: &'static Table, after: Option<Row>, limit: u32) -> StoreFuture<'_, Vec<Row>> {
            $read!(self, |c| copier::dump(c, table, after.as_deref(), limit))
        }
        fn load(&self, table: &'static Table, rows: Vec<Row>) -> StoreFuture<'_, ()> {
            $write!(self, |c| copier::load(c, table, &rows))
        }
        fn counters(&self) -> StoreFuture<'_, Counters> {
            $read!(self, |c| copier::counters(c))
        }
        fn set_counters(&self, counters: Counters) -> StoreFuture<'_, ()> {
            $write!(self, |c| copier::set_counters(c, &counters))
        }
    };
}
pub(crate) use transfer_methods;
