//! The vault: the context read, and writes that check the writer's rights
//! again inside their own transaction before they change anything.

use strongroom_core::event::Event;
use strongroom_core::identity::UserId;
use strongroom_core::token::Presented;
use strongroom_core::vault::{FolderPath, Rights, VaultId};

use super::auth::access_context;
use super::events::{append_event, deleted_event};
use super::{Conn, exists, flag, int, query_one};
use crate::codec::{self, values};
use crate::sql;
use crate::{
    AddOwner, Checked, DataKeyRecord, OwnerRemoval, PutAssociation, SealedItem, StoreError, StoreResult, StoredAssociation, VaultContext,
    VaultEntry, VaultFilter, Writer,
};

/// Entry `id`'s owners, in key order.
async fn owners<C: Conn>(c: &C, id: VaultId) -> StoreResult<Vec<FolderPath>> {
    c.query(&sql::OWNERS, &values![id], |r| r.folder()).await
}

async fn entry<C: Conn>(c: &C, id: VaultId) -> StoreResult<Option<VaultEntry>> {
    let Some(mut e) = c.query_opt(&sql::ENTRY, &values![id], codec::entry).await? else { return Ok(None) };
    e.owners = owners(c, id).await?;
    Ok(Some(e))
}

async fn entry_exists<C: Conn>(c: &C, id: VaultId) -> StoreResult<bool> {
    exists(c, &sql::ENTRY_EXISTS, &values![id]).await
}

async fn may_write_entry<C: Conn>(c: &C, by: &Writer, id: VaultId) -> StoreResult<bool> {
    flag(c, &sql::MAY_WRITE_ENTRY, &values![by.grant_id.as_str(), by.user_id.as_str(), id]).await
}

async fn may_write_folder<C: Conn>(c: &C, by: &Writer, folder: &FolderPath) -> StoreResult<bool> {
    flag(c, &sql::MAY_WRITE_FOLDER, &values![by.grant_id.as_str(), by.user_id.as_str(), folder.key()]).await
}

/// Whether folder key `key` exists.
pub(crate) async fn folder_exists<C: Conn>(c: &C, key: &str) -> StoreResult<bool> {
    exists(c, &sql::FOLDER_EXISTS, &values![key]).await
}

/// The rights granted directly to `user`: (folder key, rights).
pub(crate) async fn rights_of<C: Conn>(c: &C, user: &UserId) -> StoreResult<Vec<(String, Rights)>> {
    c.query(&sql::RIGHTS_OF, &values![user.as_str()], |r| Ok((r.text()?, r.rights()?))).await
}

/// The vault context in four reads of one snapshot (PostgreSQL's is one statement).
pub(crate) async fn vault_context<C: Conn>(c: &C, access: Presented, id: Option<VaultId>) -> StoreResult<Option<VaultContext>> {
    let Some(access) = access_context(c, access).await? else { return Ok(None) };
    let rights = rights_of(c, &access.grant.user_id).await?;
    let current_keys = c.query(&sql::CURRENT_KEYS, &[], |r| Ok((r.text()?, r.int()?))).await?;
    let entry = match id {
        Some(id) if id.0 > 0 => entry(c, id).await?,
        _ => None,
    };
    Ok(Some(VaultContext { access, rights, current_keys, entry }))
}

pub(crate) async fn data_keys<C: Conn>(c: &C) -> StoreResult<Vec<DataKeyRecord>> {
    c.query(&sql::DATA_KEYS_ALL, &[], codec::data_key).await
}

pub(crate) async fn insert_data_key<C: Conn>(c: &C, k: &DataKeyRecord, event: &Event) -> StoreResult<()> {
    c.execute(&sql::INSERT_DATA_KEY, &codec::data_key_row(k)).await?;
    append_event(c, event).await.map(drop)
}

pub(crate) async fn allocate_vault_id<C: Conn>(c: &C) -> StoreResult<VaultId> {
    Ok(VaultId(int(c, &sql::ALLOCATE_VAULT_ID, &[]).await?))
}

pub(crate) async fn allocate_vault_ids<C: Conn>(c: &C, n: usize) -> StoreResult<Vec<VaultId>> {
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        ids.push(allocate_vault_id(c).await?);
    }
    Ok(ids)
}

pub(crate) async fn insert_entry<C: Conn>(c: &C, e: &VaultEntry, by: &Writer, event: &Event) -> StoreResult<Checked<bool>> {
    for o in &e.owners {
        if !folder_exists(c, o.key()).await? {
            return Ok(Checked::Done(false));
        }
        if !may_write_folder(c, by, o).await? {
            return Ok(Checked::Denied);
        }
    }
    c.execute(&sql::INSERT_ENTRY, &codec::entry_row(e)).await?;
    for o in &e.owners {
        c.execute(&sql::INSERT_OWNER, &codec::owner_row(e.vault_id, o)).await?;
    }
    append_event(c, event).await?;
    Ok(Checked::Done(true))
}

pub(crate) async fn vault_ids<C: Conn>(c: &C, f: &VaultFilter) -> StoreResult<Vec<VaultId>> {
    c.query(&sql::VAULT_IDS, &values![f.vault_type, f.owner_key.as_deref(), f.orphans_only], |r| Ok(VaultId(r.int()?))).await
}

pub(crate) async fn owners_of<C: Conn>(c: &C, ids: &[VaultId]) -> StoreResult<Vec<(VaultId, Vec<FolderPath>)>> {
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        if entry_exists(c, *id).await? {
            out.push((*id, owners(c, *id).await?));
        }
    }
    Ok(out)
}

/// See [`crate::VaultStore::entry_details`]: the sealed bytes read stay here.
pub(crate) async fn entry_details<C: Conn>(c: &C, ids: &[VaultId]) -> StoreResult<Vec<crate::EntryDetails>> {
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(e) = entry(c, *id).await? else { continue };
        let associations = associations(c, *id).await?.into_iter().map(|a| (a.name, a.value_type, a.key_id)).collect();
        out.push(crate::EntryDetails {
            vault_id: e.vault_id,
            vault_type: e.vault_type,
            key_name: e.key_name,
            key_id: e.key_id,
            created_at: e.created_at,
            owners: e.owners,
            associations,
        });
    }
    Ok(out)
}

pub(crate) async fn mutate_entry<C: Conn>(c: &C, id: VaultId, vault_type: i32, by: &Writer, event: &Event) -> StoreResult<Checked<bool>> {
    if !flag(c, &sql::IS_MASTER_ADMIN, &values![by.grant_id.as_str(), by.user_id.as_str()]).await? {
        return Ok(Checked::Denied);
    }
    let n = c.execute(&sql::MUTATE_ENTRY, &values![vault_type, id]).await?;
    if n == 1 {
        append_event(c, event).await?;
    }
    Ok(Checked::Done(n == 1))
}

pub(crate) async fn add_owner<C: Conn>(
    c: &C,
    id: VaultId,
    owner: &FolderPath,
    by: &Writer,
    event: &Event,
) -> StoreResult<Checked<AddOwner>> {
    if !entry_exists(c, id).await? {
        return Ok(Checked::Done(AddOwner::NoEntry));
    }
    if !folder_exists(c, owner.key()).await? {
        return Ok(Checked::Done(AddOwner::NoFolder));
    }
    if !may_write_entry(c, by, id).await? || !may_write_folder(c, by, owner).await? {
        return Ok(Checked::Denied);
    }
    // Again after the checks: at PostgreSQL's READ COMMITTED an entry removed meanwhile is NoEntry.
    if !entry_exists(c, id).await? {
        return Ok(Checked::Done(AddOwner::NoEntry));
    }
    if c.execute(&sql::INSERT_OWNER, &codec::owner_row(id, owner)).await? == 0 {
        return Ok(Checked::Done(AddOwner::AlreadyOwner));
    }
    append_event(c, event).await?;
    Ok(Checked::Done(AddOwner::Added))
}

pub(crate) async fn remove_owner<C: Conn>(
    c: &C,
    id: Option<VaultId>,
    owner: &FolderPath,
    by: &Writer,
    event: &Event,
) -> StoreResult<Checked<OwnerRemoval>> {
    if !may_write_folder(c, by, owner).await? {
        return Ok(Checked::Denied);
    }
    let affected = c.query(&sql::OWNED_BY, &values![owner.key(), id], |r| Ok(VaultId(r.int()?))).await?;
    let mut out = OwnerRemoval::default();
    for v in affected {
        out.removed += c.execute(&sql::DELETE_OWNER, &values![v, owner.key()]).await?;
        if int(c, &sql::OWNER_COUNT, &values![v]).await? == 0 {
            c.execute(&sql::DELETE_ENTRY, &values![v]).await?;
            out.deleted.push(v);
        }
    }
    if out.removed > 0 {
        append_event(c, event).await?;
        for v in &out.deleted {
            append_event(c, &deleted_event(event, *v, "last owner removed".to_owned())).await?;
        }
    }
    Ok(Checked::Done(out))
}

pub(crate) async fn key_names_in_use<C: Conn>(c: &C) -> StoreResult<Vec<(String, u64)>> {
    c.query(&sql::KEY_NAMES_IN_USE, &[], |r| Ok((r.text()?, r.int()?.unsigned_abs()))).await
}

pub(crate) async fn associations<C: Conn>(c: &C, id: VaultId) -> StoreResult<Vec<StoredAssociation>> {
    c.query(&sql::ASSOCIATIONS_OF, &values![id], |r| codec::association(r).map(|(_, a)| a)).await
}

/// See [`crate::VaultStore::put_association`] (PostgreSQL's is one statement in `postgres::batch`).
pub(crate) async fn put_association<C: Conn>(
    c: &C,
    id: VaultId,
    a: &StoredAssociation,
    by: &Writer,
    event: &Event,
) -> StoreResult<Checked<PutAssociation>> {
    if !entry_exists(c, id).await? {
        return Ok(Checked::Done(PutAssociation::NoEntry));
    }
    if !may_write_entry(c, by, id).await? {
        return Ok(Checked::Denied);
    }
    let existing = c.query_opt(&sql::ASSOCIATION_LOOKUP, &values![id, a.name.as_str()], |r| r.hash32()).await?;
    if existing == Some(a.lookup) {
        return Ok(Checked::Done(PutAssociation::Identical));
    }
    c.execute(&sql::PUT_ASSOCIATION, &codec::association_row(id, a)).await?;
    append_event(c, event).await?;
    Ok(Checked::Done(PutAssociation::Stored))
}

pub(crate) async fn dissociate<C: Conn>(
    c: &C,
    id: VaultId,
    name: Option<&str>,
    lookup: Option<&[u8; 32]>,
    by: &Writer,
    event: &Event,
) -> StoreResult<Checked<u64>> {
    if !may_write_entry(c, by, id).await? {
        return Ok(Checked::Denied);
    }
    let n = c.execute(&sql::DISSOCIATE, &values![id, name, lookup]).await?;
    if n > 0 {
        append_event(c, event).await?;
    }
    Ok(Checked::Done(n))
}

/// See [`crate::VaultStore::vault_lookup`]: one snapshot on SQLite's reader.
pub(crate) async fn vault_lookup<C: Conn>(
    c: &C,
    access: Presented,
    name: &str,
    lookup: Option<&[u8; 32]>,
) -> StoreResult<Option<(VaultContext, crate::Found)>> {
    let Some(ctx) = vault_context(c, access, None).await? else { return Ok(None) };
    Ok(Some((ctx, lookup_by_association(c, name, lookup).await?)))
}

pub(crate) async fn lookup_by_association<C: Conn>(
    c: &C,
    name: &str,
    lookup: Option<&[u8; 32]>,
) -> StoreResult<Vec<(VaultId, Vec<FolderPath>)>> {
    let row = |r: &mut crate::codec::Cols<'_>| Ok((VaultId(r.int()?), r.opt_text()?));
    // Two statements, not one with `?2 IS NULL OR …`: PostgreSQL's generic
    // plan of that one (after five runs of the prepared statement) used
    // the index on the name alone and filtered every entry of that name.
    let rows = match lookup {
        Some(lookup) => c.query(&sql::LOOKUP_BY_ASSOCIATION_VALUE, &values![name, lookup], row).await?,
        None => c.query(&sql::LOOKUP_BY_ASSOCIATION, &values![name], row).await?,
    };
    codec::group_owners(rows)
}

pub(crate) async fn sealed_on_old_keys<C: Conn>(c: &C, key_name: &str, current: i64, limit: u32) -> StoreResult<Vec<SealedItem>> {
    let mut out = c.query(&sql::DATA_ON_OLD_KEYS, &values![current, limit, key_name], codec::sealed_data).await?;
    let left = i64::from(limit) - out.len() as i64;
    if left > 0 {
        out.extend(c.query(&sql::ASSOCIATIONS_ON_OLD_KEYS, &values![current, left, key_name], codec::sealed_association).await?);
    }
    Ok(out)
}

pub(crate) async fn entries_under_key<C: Conn>(c: &C, key_name: &str, after: VaultId, limit: u32) -> StoreResult<Vec<SealedItem>> {
    c.query(&sql::ENTRIES_UNDER_KEY, &values![key_name, after, limit], codec::sealed_data).await
}

pub(crate) async fn reseal<C: Conn>(c: &C, items: &[(SealedItem, i64, Vec<u8>)], event: &Event) -> StoreResult<u64> {
    let mut n = 0;
    for (item, new_key, new_sealed) in items {
        n += match item {
            SealedItem::Data { vault_id, key_id, sealed } => {
                c.execute(&sql::RESEAL_DATA, &values![*new_key, new_sealed, *vault_id, *key_id, sealed]).await?
            }
            SealedItem::Association { vault_id, name, key_id, sealed, .. } => {
                c.execute(&sql::RESEAL_ASSOCIATION, &values![*new_key, new_sealed, *vault_id, name, *key_id, sealed]).await?
            }
        };
    }
    if n > 0 {
        append_event(c, event).await?;
    }
    Ok(n)
}

/// See [`crate::VaultStore::rekey_entry`].
pub(crate) async fn rekey_entry<C: Conn>(
    c: &C,
    id: VaultId,
    key_name: &str,
    items: &[(SealedItem, i64, Vec<u8>)],
    by: Option<&Writer>,
    event: &Event,
) -> StoreResult<Checked<bool>> {
    if let Some(by) = by
        && !may_write_entry(c, by, id).await?
    {
        return Ok(Checked::Denied);
    }
    // Everything read is checked before anything is written. SQLite's writer
    // thread is the only writer; on PostgreSQL the transaction holds the
    // event head, which every writer of an entry or its associations takes
    // first. So a value written since it was read is never overwritten, nor
    // one added left behind.
    let (mut data, mut associations) = (None, 0i64);
    for (item, new_key, new_sealed) in items {
        match item {
            SealedItem::Data { vault_id, key_id, sealed } if *vault_id == id => data = Some((*key_id, sealed, *new_key, new_sealed)),
            SealedItem::Association { vault_id, name, key_id, sealed, .. } if *vault_id == id => {
                if !flag(c, &sql::ASSOCIATION_UNCHANGED, &values![id, name, *key_id, sealed]).await? {
                    return Ok(Checked::Done(false));
                }
                associations += 1;
            }
            _ => return Err(StoreError::other("an item of another entry in a key move")),
        }
    }
    let Some((key_id, sealed, new_key, new_sealed)) = data else { return Ok(Checked::Done(false)) };
    if query_one(c, &sql::ASSOCIATION_COUNT, &values![id], |r| r.int()).await? != associations
        || c.execute(&sql::REKEY_DATA, &values![key_name, new_key, new_sealed, id, key_id, sealed]).await? != 1
    {
        return Ok(Checked::Done(false));
    }
    for (item, new_key, new_sealed) in items {
        if let SealedItem::Association { name, key_id, sealed, .. } = item {
            c.execute(&sql::RESEAL_ASSOCIATION, &values![*new_key, new_sealed, id, name, *key_id, sealed]).await?;
        }
    }
    append_event(c, event).await?;
    Ok(Checked::Done(true))
}
