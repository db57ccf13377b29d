//! The store's four parts and the copier on PostgreSQL: each method one
//! transaction on a pooled connection (or one statement outside any),
//! running the shared body of [`crate::ops`]; a refresh's `advance_pair`,
//! the device-code exchange's `redeem_device`, a JWT grant's
//! `insert_machine_grant` and `put_association` go to the group commit of
//! [`super::batch`], the other writes of the token flows, the vault and the
//! certificates to that of [`super::group`], and the vault context is one
//! statement ([`VAULT_CONTEXT`]).

use std::sync::{Arc, LazyLock};

use crate::ops::certs;
use crate::ops::tree::{self, FolderObject, Holder, RightsChange};
use crate::{
    CaRecord, CertField, CertRecord, FieldValues, Found, Issuance, NewObject, ObjectContext, Parking, PendingChange, PendingRecord,
    RequestContext, Revocation,
};
use strongroom_core::event::{Event, StoredEvent};
use strongroom_core::grant::device::{DeviceAuthorization, DeviceContext, DeviceState, PollRecord};
use strongroom_core::grant::refresh::RefreshContext;
use strongroom_core::grant::{AccessContext, Grant, GrantId};
use strongroom_core::identity::{Group, GroupId, User, UserId};
use strongroom_core::integration::Integration;
use strongroom_core::machine::{JwtIssuer, Mapping};
use strongroom_core::throttle::{Admission, Rule, Slot};
use strongroom_core::time::UnixTime;
use strongroom_core::token::{Presented, TokenHash};
use strongroom_core::tree::ObjectGuid;
use strongroom_core::vault::{FolderPath, Rights, VaultId};

use super::PgStore;
use super::read::{Coalescing, Reader};
use crate::codec::{self, Cols, rights, stored_folder, values};
use crate::ops::{admin, auth, events, groups, machine, query_one, transfer as copier, vault};
use crate::schema::VAULT_ENTRIES;
use crate::sql::{self, Sql};
use crate::transfer::{Counters, Row, Table, Transfer};
use crate::{
    AddOwner, AdminStore, AuthStore, Checked, DataKeyRecord, Deletion, ErrorKind, EventFilter, EventStore, FolderDeletion, GrantSummary,
    IssuerRemoval, LoginContext, MachineGrant, MachineIssue, OwnerRemoval, PairChange, PoolStatus, PutAssociation, SealedItem, StoreError,
    StoreFuture, StoreObserver, StoreResult, StoredAssociation, VaultContext, VaultEntry, VaultFilter, VaultStore, Writer,
};
use crate::{GroupStore, MemberChange, Team};

/// `$1` the access token's grant slot (from its locator), `$2` entry id (or
/// NULL) → [`sql::located_cols`], then the user's rights (folder keys,
/// rights), the newest data key of each key name (names, ids), and the
/// entry's row and owners (NULLs and no owners when there is no such
/// entry). The whole vault context in one statement, one round trip and one
/// snapshot; no row when no grant has the slot.
pub(super) static VAULT_CONTEXT: LazyLock<Sql> = LazyLock::new(|| {
    Sql::new(format!(
        "SELECT {}, \
         ARRAY(SELECT r.path_key FROM {held} r ORDER BY r.path_key, r.rights), \
         ARRAY(SELECT r.rights FROM {held} r ORDER BY r.path_key, r.rights), \
         ARRAY(SELECT key_name FROM data_keys GROUP BY key_name ORDER BY key_name), \
         ARRAY(SELECT max(id) FROM data_keys GROUP BY key_name ORDER BY key_name), \
         {}, \
         ARRAY(SELECT o.owner FROM vault_owners o WHERE o.vault_id = e.vault_id ORDER BY o.owner_key) \
         FROM {} LEFT JOIN vault_entries e ON e.vault_id = ?2::BIGINT WHERE g.slot = ?1",
        sql::located_cols(),
        VAULT_ENTRIES.cols("e"),
        sql::LOCATED_JOINS,
        held = sql::held_rights("g.user_id"),
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

/// [`VAULT_CONTEXT`] on the store's reader: the caller behind `access`,
/// and entry `id` if asked.
async fn vault_context_on(reader: &Reader, access: Presented, id: Option<VaultId>) -> StoreResult<Option<VaultContext>> {
    let read = reader.rows(&VAULT_CONTEXT, &values![access.at.slot, entry_key(id)]).await?;
    vault_context_of(read.rows.first(), read.first, access)
}

/// The entry id [`VAULT_CONTEXT`] is asked for (NULL: none).
fn entry_key(id: Option<VaultId>) -> Option<i64> {
    id.filter(|id| id.0 > 0).map(|id| id.0)
}

/// The vault context in `row` (its columns from `first` on), if a grant has the token's slot.
fn vault_context_of(row: Option<&tokio_postgres::Row>, first: usize, access: Presented) -> StoreResult<Option<VaultContext>> {
    let Some(row) = row else { return Ok(None) };
    let mut c = Cols::new(row);
    c.skip(first);
    // A token the grant does not keep is unknown.
    let Some(found) = codec::located_access(&mut c, access.hash, access.at.generation)? else { return Ok(None) };
    vault_context_rest(row, &mut c, found).map(Some)
}

/// Readiness: the schema, and whether the server takes writes.
static READY: LazyLock<Sql> = LazyLock::new(|| Sql::new("SELECT max(version), pg_is_in_recovery() FROM schema_migrations"));

impl AuthStore for PgStore {
    crate::ops::methods::auth_methods!(on_client, in_batch, on_client, in_plain_tx, coalesced);

    fn advance_pair(&self, grant_id: GrantId, version: i64, change: PairChange, event: Event) -> StoreFuture<'_, bool> {
        // One statement in a group commit (`batch`).
        Box::pin(async move { self.observer.seen(self.batch.advance_pair(grant_id, version, change, event).await) })
    }
    fn redeem_device(&self, code_hash: TokenHash, version: i64, grant: Grant, event: Event) -> StoreFuture<'_, bool> {
        // One statement in a group commit (`batch`), as a refresh.
        Box::pin(async move { self.observer.seen(self.batch.redeem_device(code_hash, version, grant, event).await) })
    }
    fn insert_machine_grant(&self, grant: MachineGrant, event: Event) -> StoreFuture<'_, MachineIssue> {
        Box::pin(async move {
            // A JWT grant for an identity that has its row: one statement in
            // a group commit (`batch`). A certificate grant, or the first
            // grant of an identity, runs the whole body (`group`).
            if let Some(replay) = &grant.replay {
                match self.batch.machine_grant(grant.grant.clone(), replay.clone(), event.clone()).await {
                    Ok(Some(issue)) => return self.observer.seen(Ok(issue)),
                    Ok(None) => {}
                    Err(e) => return self.observer.seen(Err(e)),
                }
            }
            let out = self.group.run(move |c| Box::pin(async move { machine::insert_machine_grant(c, &grant, &event).await })).await;
            self.observer.seen(out)
        })
    }
}

impl VaultStore for PgStore {
    crate::ops::methods::vault_methods!(on_client, in_batch, on_client, in_plain_tx);

    fn vault_context(&self, access: Presented, id: Option<VaultId>) -> StoreFuture<'_, Option<VaultContext>> {
        Box::pin(async move { self.observer.seen(vault_context_on(&self.reader, access, id).await) })
    }
    fn vault_lookup(&self, access: Presented, name: String, lookup: Option<[u8; 32]>) -> StoreFuture<'_, Option<(VaultContext, Found)>> {
        Box::pin(async move {
            // Both on the reader at once, each coalesced with the others of
            // its statement: the lookup does not wait for the context.
            let reader = Coalescing(&self.reader);
            let (ctx, found) =
                tokio::join!(vault_context_on(&self.reader, access, None), vault::lookup_by_association(&reader, &name, lookup.as_ref()));
            let out = match ctx {
                Ok(Some(ctx)) => found.map(|found| Some((ctx, found))),
                other => other.map(|_| None),
            };
            self.observer.seen(out)
        })
    }
    fn put_association(&self, id: VaultId, a: StoredAssociation, by: Writer, event: Event) -> StoreFuture<'_, Checked<PutAssociation>> {
        // One statement in a group commit (`batch`).
        Box::pin(async move { self.observer.seen(self.batch.put_association(id, a, by, event).await) })
    }
}

impl AdminStore for PgStore {
    crate::ops::methods::admin_methods!(on_client, in_tx, on_client, in_plain_tx, coalesced);
}

impl GroupStore for PgStore {
    crate::ops::groups::group_methods!(on_client, in_tx, on_client, in_plain_tx);
}

impl crate::CertStore for PgStore {
    // Writes in the group commit (`group`): issuances, revocations and the
    // rest share one transaction and one commit per batch, each in its own
    // savepoint, rather than one head lock and one flush each.
    crate::ops::certs::cert_methods!(on_client, in_batch);
}

impl crate::TreeStore for PgStore {
    crate::ops::tree::tree_methods!(on_client, in_tx);
}

impl EventStore for PgStore {
    crate::ops::methods::event_methods!(on_client, in_tx, on_client, in_plain_tx);

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
        PoolStatus { max: s.max_size, in_use: s.size.saturating_sub(s.available), waiting: s.waiting, calls: self.observer.calls() }
    }
}

impl Transfer for PgStore {
    crate::ops::methods::transfer_methods!(on_client, in_tx, on_client, in_plain_tx);
}
