//! The store's four parts and the copier on PostgreSQL: each method one
//! transaction on a pooled connection (or one statement outside any),
//! running the shared body of [`crate::ops`]; a refresh's `advance_pair`
//! and `put_association` go to the group commit of [`super::batch`], and
//! the vault context is one statement ([`VAULT_CONTEXT`]).

use std::sync::{Arc, LazyLock};

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

use super::{PgStore, classify};
use crate::codec::{self, Cols, rights, stored_folder};
use crate::ops::{admin, auth, events, query_one, transfer as copier, vault};
use crate::schema::VAULT_ENTRIES;
use crate::sql::{self, Sql};
use crate::transfer::{Counters, Row, Table, Transfer};
use crate::{
    AddOwner, AdminStore, AuthStore, Checked, DataKeyRecord, ErrorKind, EventFilter, EventStore, GrantSummary, LoginContext, NewTokens,
    OwnerRemoval, PairChange, PoolStatus, PutAssociation, SealedItem, StoreError, StoreFuture, StoreObserver, StoreResult,
    StoredAssociation, VaultContext, VaultEntry, VaultFilter, VaultStore, Writer,
};

/// `$1` access-token hash, `$2` entry id (or NULL) → [`sql::access_cols`],
/// then the user's rights (folder keys, rights), the newest data key of
/// each key name (names, ids), and the entry's row and owners (NULLs and no
/// owners when there is no such entry). The whole vault context in one
/// statement, one round trip and one snapshot; no row when the token is
/// unknown.
static VAULT_CONTEXT: LazyLock<Sql> = LazyLock::new(|| {
    Sql::new(format!(
        "SELECT {}, \
         ARRAY(SELECT r.path_key FROM folder_rights r WHERE r.user_id = g.user_id ORDER BY r.path_key), \
         ARRAY(SELECT r.rights FROM folder_rights r WHERE r.user_id = g.user_id ORDER BY r.path_key), \
         ARRAY(SELECT key_name FROM data_keys GROUP BY key_name ORDER BY key_name), \
         ARRAY(SELECT max(id) FROM data_keys GROUP BY key_name ORDER BY key_name), \
         {}, \
         ARRAY(SELECT o.owner FROM vault_owners o WHERE o.vault_id = e.vault_id ORDER BY o.owner_key) \
         FROM {} LEFT JOIN vault_entries e ON e.vault_id = ?2::BIGINT WHERE t.hash = ?1",
        sql::access_cols(),
        VAULT_ENTRIES.cols("e"),
        sql::ACCESS_JOINS
    ))
});

/// The columns of [`VAULT_CONTEXT`] after the access context's.
fn vault_context_rest(row: &tokio_postgres::Row, c: &mut Cols<'_>, access: AccessContext) -> StoreResult<VaultContext> {
    let o = c.position();
    let array = |i: usize| -> StoreResult<Vec<String>> { row.try_get(i).map_err(|e| StoreError::corrupt(format!("column {i}: {e}"))) };
    let ints = |i: usize| -> StoreResult<Vec<i64>> { row.try_get(i).map_err(|e| StoreError::corrupt(format!("column {i}: {e}"))) };
    let rights = array(o)?.into_iter().zip(ints(o + 1)?).map(|(k, b)| (k, rights(b))).collect();
    let current_keys = array(o + 2)?.into_iter().zip(ints(o + 3)?).collect();
    c.skip(4);
    let entry = if c.next_is_null()? {
        None
    } else {
        let mut e = codec::entry(c)?;
        e.owners = array(c.position())?.iter().map(|p| stored_folder(p)).collect::<StoreResult<_>>()?;
        Some(e)
    };
    Ok(VaultContext { access, rights, current_keys, entry })
}

/// Readiness: the schema, and whether the server takes writes.
static READY: LazyLock<Sql> = LazyLock::new(|| Sql::new("SELECT max(version), pg_is_in_recovery() FROM schema_migrations"));

impl AuthStore for PgStore {
    fn access_context(&self, access_hash: TokenHash) -> StoreFuture<'_, Option<AccessContext>> {
        on_client!(self, |c| auth::access_context(c, access_hash))
    }
    fn refresh_context(&self, refresh_hash: TokenHash) -> StoreFuture<'_, Option<RefreshContext>> {
        on_client!(self, |c| auth::refresh_context(c, refresh_hash))
    }
    fn device_context(&self, code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceContext>> {
        on_client!(self, |c| auth::device_context(c, code_hash))
    }
    fn device_by_user_code(&self, user_code_hash: TokenHash) -> StoreFuture<'_, Option<DeviceAuthorization>> {
        on_client!(self, |c| auth::device_by_user_code(c, user_code_hash))
    }
    fn insert_device(&self, d: DeviceAuthorization, event: Event, quota: Option<(String, Rule)>) -> StoreFuture<'_, ()> {
        in_tx!(self, |c| auth::insert_device(c, &d, &event, quota.as_ref()))
    }
    fn record_poll(&self, code_hash: TokenHash, version: i64, record: PollRecord) -> StoreFuture<'_, bool> {
        on_client!(self, |c| auth::record_poll(c, code_hash, version, record))
    }
    fn decide_device(&self, code_hash: TokenHash, version: i64, decision: DeviceState, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |c| auth::decide_device(c, code_hash, version, &decision, &event))
    }
    fn redeem_device(&self, code_hash: TokenHash, version: i64, grant: Grant, tokens: NewTokens, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |c| auth::redeem_device(c, code_hash, version, &grant, &tokens, &event))
    }
    fn insert_grant(&self, grant: Grant, tokens: NewTokens, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |c| auth::insert_grant(c, &grant, &tokens, &event))
    }
    fn advance_pair(&self, grant_id: GrantId, version: i64, change: PairChange, event: Event) -> StoreFuture<'_, bool> {
        // One statement in a group commit (`batch`).
        Box::pin(async move { self.observer.seen(self.batch.advance_pair(grant_id, version, change, event).await) })
    }
    fn mark_pair_used(&self, grant_id: GrantId, access_hash: TokenHash) -> StoreFuture<'_, ()> {
        on_client!(self, |c| auth::mark_pair_used(c, &grant_id, access_hash))
    }
    fn revoke_grant(&self, grant_id: GrantId, at: UnixTime, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |c| auth::revoke_grant(c, &grant_id, at, &event))
    }
    fn user_by_name(&self, name: String) -> StoreFuture<'_, Option<(User, String)>> {
        on_client!(self, |c| auth::user_by_name(c, &name))
    }
    fn login_context(&self, name_key: String, addr: String) -> StoreFuture<'_, LoginContext> {
        on_client!(self, |c| auth::login_context(c, &name_key, &addr))
    }
    fn begin_attempt(&self, slots: Vec<Slot>, now: UnixTime) -> StoreFuture<'_, Admission> {
        in_plain_tx!(self, |c| auth::begin_attempt(c, &slots, now))
    }
    fn attempt_failed(&self, slots: Vec<Slot>, event: Event) -> StoreFuture<'_, usize> {
        in_tx!(self, |c| auth::attempt_failed(c, &slots, &event))
    }
    fn attempt_succeeded(&self, slots: Vec<Slot>, origin: Option<(String, String)>, now: UnixTime) -> StoreFuture<'_, bool> {
        in_plain_tx!(self, |c| auth::attempt_succeeded(c, &slots, origin.as_ref(), now))
    }
}

impl VaultStore for PgStore {
    fn vault_context(&self, access_hash: TokenHash, id: Option<VaultId>) -> StoreFuture<'_, Option<VaultContext>> {
        Box::pin(async move {
            let out = async {
                let client = self.client().await?;
                let out = async {
                    let id = id.filter(|id| id.0 > 0);
                    let st = client.prepare_cached(VAULT_CONTEXT.postgres()).await.map_err(classify)?;
                    let rows = client.query(&st, &[&access_hash.as_bytes(), &id.map(|id| id.0)]).await.map_err(classify)?;
                    let Some(row) = rows.first() else { return Ok(None) };
                    let mut c = Cols::new(row);
                    let access = codec::access(&mut c, access_hash)?;
                    vault_context_rest(row, &mut c, access).map(Some)
                }
                .await;
                super::release(client, &out);
                out
            }
            .await;
            self.observer.seen(out)
        })
    }
    fn data_keys(&self) -> StoreFuture<'_, Vec<DataKeyRecord>> {
        on_client!(self, |c| vault::data_keys(c))
    }
    fn insert_data_key(&self, k: DataKeyRecord, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |c| vault::insert_data_key(c, &k, &event))
    }
    fn allocate_vault_id(&self) -> StoreFuture<'_, VaultId> {
        on_client!(self, |c| vault::allocate_vault_id(c))
    }
    fn insert_entry(&self, e: VaultEntry, by: Writer, event: Event) -> StoreFuture<'_, Checked<bool>> {
        in_tx!(self, |c| vault::insert_entry(c, &e, &by, &event))
    }
    fn vault_ids(&self, f: VaultFilter) -> StoreFuture<'_, Vec<VaultId>> {
        on_client!(self, |c| vault::vault_ids(c, &f))
    }
    fn owners_of(&self, ids: Vec<VaultId>) -> StoreFuture<'_, Vec<(VaultId, Vec<FolderPath>)>> {
        on_client!(self, |c| vault::owners_of(c, &ids))
    }
    fn mutate_entry(&self, id: VaultId, vault_type: i32, by: Writer, event: Event) -> StoreFuture<'_, Checked<bool>> {
        in_tx!(self, |c| vault::mutate_entry(c, id, vault_type, &by, &event))
    }
    fn add_owner(&self, id: VaultId, owner: FolderPath, by: Writer, event: Event) -> StoreFuture<'_, Checked<AddOwner>> {
        in_tx!(self, |c| vault::add_owner(c, id, &owner, &by, &event))
    }
    fn remove_owner(&self, id: Option<VaultId>, owner: FolderPath, by: Writer, event: Event) -> StoreFuture<'_, Checked<OwnerRemoval>> {
        in_tx!(self, |c| vault::remove_owner(c, id, &owner, &by, &event))
    }
    fn key_names_in_use(&self) -> StoreFuture<'_, Vec<(String, u64)>> {
        on_client!(self, |c| vault::key_names_in_use(c))
    }
    fn associations(&self, id: VaultId) -> StoreFuture<'_, Vec<StoredAssociation>> {
        on_client!(self, |c| vault::associations(c, id))
    }
    fn put_association(&self, id: VaultId, a: StoredAssociation, by: Writer, event: Event) -> StoreFuture<'_, Checked<PutAssociation>> {
        // One statement in a group commit (`batch`).
        Box::pin(async move { self.observer.seen(self.batch.put_association(id, a, by, event).await) })
    }
    fn dissociate(
        &self,
        id: VaultId,
        name: Option<String>,
        lookup: Option<[u8; 32]>,
        by: Writer,
        event: Event,
    ) -> StoreFuture<'_, Checked<u64>> {
        in_tx!(self, |c| vault::dissociate(c, id, name.as_deref(), lookup.as_ref(), &by, &event))
    }
    fn lookup_by_association(&self, name: String, lookup: Option<[u8; 32]>) -> StoreFuture<'_, Vec<(VaultId, Vec<FolderPath>)>> {
        on_client!(self, |c| vault::lookup_by_association(c, &name, lookup.as_ref()))
    }
    fn sealed_on_old_keys(&self, key_name: String, current: i64, limit: u32) -> StoreFuture<'_, Vec<SealedItem>> {
        on_client!(self, |c| vault::sealed_on_old_keys(c, &key_name, current, limit))
    }
    fn entries_under_key(&self, key_name: String, after: VaultId, limit: u32) -> StoreFuture<'_, Vec<SealedItem>> {
        on_client!(self, |c| vault::entries_under_key(c, &key_name, after, limit))
    }
    fn reseal(&self, items: Vec<(SealedItem, i64, Vec<u8>)>, event: Event) -> StoreFuture<'_, u64> {
        in_tx!(self, |c| vault::reseal(c, &items, &event))
    }
    fn rekey_entry(
        &self,
        id: VaultId,
        key_name: String,
        items: Vec<(SealedItem, i64, Vec<u8>)>,
        by: Option<Writer>,
        event: Event,
    ) -> StoreFuture<'_, Checked<bool>> {
        in_tx!(self, |c| vault::rekey_entry(c, id, &key_name, &items, by.as_ref(), &event))
    }
}

impl AdminStore for PgStore {
    fn create_user(&self, user: User, password_hash: String, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |c| admin::create_user(c, &user, &password_hash, &event))
    }
    fn user_by_id(&self, id: UserId) -> StoreFuture<'_, Option<User>> {
        on_client!(self, |c| admin::user_by_id(c, &id))
    }
    fn list_users(&self) -> StoreFuture<'_, Vec<User>> {
        on_client!(self, |c| admin::list_users(c))
    }
    fn set_user_disabled(&self, name: String, disabled: bool, event: Event) -> StoreFuture<'_, Option<u64>> {
        in_tx!(self, |c| admin::set_user_disabled(c, &name, disabled, &event))
    }
    fn set_user_password(&self, name: String, password_hash: String, end: bool, event: Event) -> StoreFuture<'_, Option<u64>> {
        in_tx!(self, |c| admin::set_user_password(c, &name, &password_hash, end, &event))
    }
    fn revoke_user_grants(&self, name: String, event: Event) -> StoreFuture<'_, Option<u64>> {
        in_tx!(self, |c| admin::revoke_user_grants(c, &name, &event))
    }
    fn locks(&self, now: UnixTime) -> StoreFuture<'_, Vec<(String, UnixTime)>> {
        on_client!(self, |c| admin::locks(c, now))
    }
    fn unlock(&self, name_key: String, event: Event) -> StoreFuture<'_, u64> {
        in_tx!(self, |c| admin::unlock(c, &name_key, &event))
    }
    fn create_integration(&self, i: Integration, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |c| admin::create_integration(c, &i, &event))
    }
    fn update_integration(&self, i: Integration, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |c| admin::update_integration(c, &i, &event))
    }
    fn integration(&self, client_id: String) -> StoreFuture<'_, Option<Integration>> {
        on_client!(self, |c| admin::integration(c, &client_id))
    }
    fn list_integrations(&self) -> StoreFuture<'_, Vec<Integration>> {
        on_client!(self, |c| admin::list_integrations(c))
    }
    fn list_grants(&self, include_ended: bool, now: UnixTime) -> StoreFuture<'_, Vec<GrantSummary>> {
        on_client!(self, |c| admin::list_grants(c, include_ended, now))
    }
    fn create_folders(&self, lineage: Vec<FolderPath>, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |c| admin::create_folders(c, &lineage, &event))
    }
    fn folders(&self) -> StoreFuture<'_, Vec<FolderPath>> {
        on_client!(self, |c| admin::folders(c))
    }
    fn folder_exists(&self, key: String) -> StoreFuture<'_, bool> {
        on_client!(self, |c| vault::folder_exists(c, &key))
    }
    fn set_rights(&self, folder: FolderPath, user: UserId, rights: Rights, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |c| admin::set_rights(c, &folder, &user, rights, &event))
    }
    fn rights_of(&self, user: UserId) -> StoreFuture<'_, Vec<(String, Rights)>> {
        on_client!(self, |c| vault::rights_of(c, &user))
    }
    fn all_rights(&self) -> StoreFuture<'_, Vec<(FolderPath, String, Rights)>> {
        on_client!(self, |c| admin::all_rights(c))
    }
    fn record_key_check(&self, check: [u8; 32], event: Event) -> StoreFuture<'_, Option<[u8; 32]>> {
        in_tx!(self, |c| admin::record_key_check(c, &check, &event))
    }
}

impl EventStore for PgStore {
    fn describe(&self) -> String {
        self.describe.clone()
    }
    fn ready(&self) -> StoreFuture<'_, ()> {
        on_client!(self, |c| async {
            // Prepared once per connection: load balancers ask often. A
            // server in recovery (a standby, or a primary demoted under a
            // connection the pool still holds) takes no writes: not ready.
            let (version, in_recovery) = query_one(c, &READY, &[], |r| Ok((r.opt_int()?, r.bool()?))).await?;
            if in_recovery {
                return Err(StoreError::new(ErrorKind::ReadOnly, "the database is in recovery (a standby): it takes no writes"));
            }
            crate::check_schema(version)
        })
    }
    fn observe(&self, observer: Arc<dyn StoreObserver>) {
        self.observer.set(observer);
    }
    fn pool_status(&self) -> PoolStatus {
        let s = self.pool.status();
        PoolStatus { max: s.max_size, in_use: s.size.saturating_sub(s.available), waiting: s.waiting }
    }
    fn append_event(&self, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |c| async { events::append_event(c, &event).await.map(drop) })
    }
    fn events(&self, f: EventFilter) -> StoreFuture<'_, Vec<StoredEvent>> {
        on_client!(self, |c| events::events(c, &f))
    }
    fn event_head(&self) -> StoreFuture<'_, (i64, [u8; 32])> {
        on_client!(self, |c| events::event_head(c))
    }
    fn purge(&self, before: UnixTime) -> StoreFuture<'_, u64> {
        in_tx!(self, |c| events::purge(c, before))
    }
}

impl Transfer for PgStore {
    fn count(&self, table: &'static Table) -> StoreFuture<'_, u64> {
        on_client!(self, |c| copier::count(c, table))
    }
    fn dump(&self, table: &'static Table, after: Option<Row>, limit: u32) -> StoreFuture<'_, Vec<Row>> {
        on_client!(self, |c| copier::dump(c, table, after.as_deref(), limit))
    }
    fn load(&self, table: &'static Table, rows: Vec<Row>) -> StoreFuture<'_, ()> {
        in_tx!(self, |c| copier::load(c, table, &rows))
    }
    fn counters(&self) -> StoreFuture<'_, Counters> {
        on_client!(self, |c| copier::counters(c))
    }
    fn set_counters(&self, counters: Counters) -> StoreFuture<'_, ()> {
        in_tx!(self, |c| copier::set_counters(c, &counters))
    }
}
