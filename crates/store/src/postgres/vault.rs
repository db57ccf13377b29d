//! The vault on PostgreSQL: the context read, and writes that check the
//! writer's rights again inside their own transaction before they change
//! anything. The SQL functions run in the caller's transaction or on a pooled
//! client; the `VaultStore` implementation at the end composes them.

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use strongroom_core::event::Event;
use strongroom_core::identity::UserId;
use strongroom_core::vault::{FolderPath, Rights, VaultId};

use strongroom_core::token::TokenHash;

use super::auth::access_from_row;
use super::{PgStore, append_event, get, pg, query_opt, time};
use crate::sql;
use crate::{
    AddOwner, Checked, DataKeyRecord, OwnerRemoval, PutAssociation, SealedItem, StoreFuture, StoreResult, StoredAssociation, VaultContext,
    VaultEntry, VaultFilter, VaultStore, Writer, deleted_event, group_owners, stored_folder, stored_hash32, stored_value_type,
};

fn rights(row: &Row, idx: usize) -> StoreResult<Rights> {
    Ok(Rights::from_bits(u32::try_from(get::<i64>(row, idx)?).unwrap_or(0)))
}

pub(super) async fn create_folders(c: &impl GenericClient, lineage: &[FolderPath], event: &Event) -> StoreResult<bool> {
    let mut last_new = false;
    for f in lineage {
        let n = c
            .execute(
                "INSERT INTO folders (path_key, path, created_at) VALUES ($1, $2, $3) ON CONFLICT (path_key) DO NOTHING",
                &[&f.key(), &f.as_str(), &event.at.millis()],
            )
            .await
            .map_err(pg)?;
        last_new = n == 1;
    }
    if last_new {
        append_event(c, event).await?;
    }
    Ok(last_new)
}

pub(super) async fn folders(c: &impl GenericClient) -> StoreResult<Vec<FolderPath>> {
    let rows = c.query("SELECT path FROM folders ORDER BY path_key", &[]).await.map_err(pg)?;
    rows.iter().map(|r| stored_folder(&get::<String>(r, 0)?)).collect()
}

pub(super) async fn folder_exists(c: &impl GenericClient, key: &str) -> StoreResult<bool> {
    Ok(c.query_opt("SELECT 1 FROM folders WHERE path_key = $1", &[&key]).await.map_err(pg)?.is_some())
}

pub(super) async fn set_rights(c: &impl GenericClient, f: &FolderPath, user: &UserId, r: Rights, event: &Event) -> StoreResult<()> {
    if r == Rights::NONE {
        c.execute("DELETE FROM folder_rights WHERE path_key = $1 AND user_id = $2", &[&f.key(), &user.as_str()]).await.map_err(pg)?;
    } else {
        c.execute(
            "INSERT INTO folder_rights (path_key, user_id, rights) VALUES ($1, $2, $3) \
             ON CONFLICT (path_key, user_id) DO UPDATE SET rights = excluded.rights",
            &[&f.key(), &user.as_str(), &i64::from(r.bits())],
        )
        .await
        .map_err(pg)?;
    }
    append_event(c, event).await.map(drop)
}

pub(super) async fn rights_of(c: &impl GenericClient, user: &UserId) -> StoreResult<Vec<(String, Rights)>> {
    let rows = c.query("SELECT path_key, rights FROM folder_rights WHERE user_id = $1", &[&user.as_str()]).await.map_err(pg)?;
    rows.iter().map(|r| Ok((get(r, 0)?, rights(r, 1)?))).collect()
}

pub(super) async fn all_rights(c: &impl GenericClient) -> StoreResult<Vec<(FolderPath, String, Rights)>> {
    let rows = c
        .query(
            "SELECT f.path, u.name, r.rights FROM folder_rights r JOIN folders f ON f.path_key = r.path_key \
             JOIN users u ON u.id = r.user_id ORDER BY f.path_key, u.name_key",
            &[],
        )
        .await
        .map_err(pg)?;
    rows.iter().map(|r| Ok((stored_folder(&get::<String>(r, 0)?)?, get(r, 1)?, rights(r, 2)?))).collect()
}

pub(super) async fn data_keys(c: &impl GenericClient) -> StoreResult<Vec<DataKeyRecord>> {
    let rows = c.query("SELECT id, wrapped, created_at FROM data_keys ORDER BY id", &[]).await.map_err(pg)?;
    rows.iter().map(|r| Ok(DataKeyRecord { id: get(r, 0)?, wrapped: get(r, 1)?, created_at: time(r, 2)? })).collect()
}

pub(super) async fn insert_data_key(c: &impl GenericClient, k: &DataKeyRecord, event: &Event) -> StoreResult<()> {
    c.execute("INSERT INTO data_keys (id, wrapped, created_at) VALUES ($1, $2, $3)", &[&k.id, &k.wrapped, &k.created_at.millis()])
        .await
        .map_err(pg)?;
    append_event(c, event).await.map(drop)
}

pub(super) async fn allocate_vault_id(c: &impl GenericClient) -> StoreResult<VaultId> {
    let r = c.query_one("SELECT nextval('vault_id_seq')", &[]).await.map_err(pg)?;
    Ok(VaultId(get(&r, 0)?))
}

pub(super) async fn insert_entry(c: &impl GenericClient, e: &VaultEntry, event: &Event) -> StoreResult<()> {
    c.execute(
        "INSERT INTO vault_entries (vault_id, vault_type, key_name, key_id, sealed, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        &[&e.vault_id.0, &e.vault_type, &e.key_name, &e.key_id, &e.sealed, &e.created_at.millis()],
    )
    .await
    .map_err(pg)?;
    for o in &e.owners {
        c.execute(
            "INSERT INTO vault_owners (vault_id, owner_key, owner) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            &[&e.vault_id.0, &o.key(), &o.as_str()],
        )
        .await
        .map_err(pg)?;
    }
    append_event(c, event).await.map(drop)
}

async fn owners(c: &impl GenericClient, id: VaultId) -> StoreResult<Vec<FolderPath>> {
    let rows = c.query("SELECT owner FROM vault_owners WHERE vault_id = $1 ORDER BY owner_key", &[&id.0]).await.map_err(pg)?;
    rows.iter().map(|r| stored_folder(&get::<String>(r, 0)?)).collect()
}

async fn exists(c: &impl GenericClient, id: VaultId) -> StoreResult<bool> {
    Ok(c.query_opt("SELECT 1 FROM vault_entries WHERE vault_id = $1", &[&id.0]).await.map_err(pg)?.is_some())
}

pub(super) async fn entry(c: &impl GenericClient, id: VaultId) -> StoreResult<Option<VaultEntry>> {
    let Some(r) = c
        .query_opt("SELECT vault_type, key_name, key_id, sealed, created_at FROM vault_entries WHERE vault_id = $1", &[&id.0])
        .await
        .map_err(pg)?
    else {
        return Ok(None);
    };
    Ok(Some(VaultEntry {
        vault_id: id,
        vault_type: get(&r, 0)?,
        key_name: get(&r, 1)?,
        key_id: get(&r, 2)?,
        sealed: get(&r, 3)?,
        owners: owners(c, id).await?,
        created_at: time(&r, 4)?,
    }))
}

pub(super) async fn owners_of(c: &impl GenericClient, ids: &[VaultId]) -> StoreResult<Vec<(VaultId, Vec<FolderPath>)>> {
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        if exists(c, *id).await? {
            out.push((*id, owners(c, *id).await?));
        }
    }
    Ok(out)
}

pub(super) async fn vault_ids(c: &impl GenericClient, f: &VaultFilter) -> StoreResult<Vec<VaultId>> {
    let rows = c
        .query(
            "SELECT e.vault_id FROM vault_entries e \
             WHERE ($1::INTEGER IS NULL OR e.vault_type = $1) \
             AND ($2::TEXT IS NULL OR EXISTS (SELECT 1 FROM vault_owners o WHERE o.vault_id = e.vault_id AND o.owner_key = $2)) \
             AND (NOT $3 OR NOT EXISTS (SELECT 1 FROM vault_owners o WHERE o.vault_id = e.vault_id)) \
             ORDER BY e.vault_id",
            &[&f.vault_type, &f.owner_key, &f.orphans_only],
        )
        .await
        .map_err(pg)?;
    rows.iter().map(|r| Ok(VaultId(get(r, 0)?))).collect()
}

pub(super) async fn mutate_entry(c: &impl GenericClient, id: VaultId, vault_type: i32, event: &Event) -> StoreResult<bool> {
    let n = c.execute("UPDATE vault_entries SET vault_type = $1 WHERE vault_id = $2", &[&vault_type, &id.0]).await.map_err(pg)?;
    if n == 1 {
        append_event(c, event).await?;
    }
    Ok(n == 1)
}

pub(super) async fn add_owner(c: &impl GenericClient, id: VaultId, owner: &FolderPath, event: &Event) -> StoreResult<AddOwner> {
    if !exists(c, id).await? {
        return Ok(AddOwner::NoEntry);
    }
    let n = c
        .execute(
            "INSERT INTO vault_owners (vault_id, owner_key, owner) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            &[&id.0, &owner.key(), &owner.as_str()],
        )
        .await
        .map_err(pg)?;
    if n == 0 {
        return Ok(AddOwner::AlreadyOwner);
    }
    append_event(c, event).await?;
    Ok(AddOwner::Added)
}

pub(super) async fn remove_owner(
    c: &impl GenericClient,
    id: Option<VaultId>,
    owner: &FolderPath,
    event: &Event,
) -> StoreResult<OwnerRemoval> {
    let affected = c
        .query(
            "SELECT vault_id FROM vault_owners WHERE owner_key = $1 AND ($2::BIGINT IS NULL OR vault_id = $2) ORDER BY vault_id FOR UPDATE",
            &[&owner.key(), &id.map(|v| v.0)],
        )
        .await
        .map_err(pg)?;
    let mut out = OwnerRemoval::default();
    for r in &affected {
        let v = VaultId(get(r, 0)?);
        out.removed +=
            c.execute("DELETE FROM vault_owners WHERE vault_id = $1 AND owner_key = $2", &[&v.0, &owner.key()]).await.map_err(pg)?;
        let left: i64 = get(&c.query_one("SELECT count(*) FROM vault_owners WHERE vault_id = $1", &[&v.0]).await.map_err(pg)?, 0)?;
        if left == 0 {
            c.execute("DELETE FROM vault_entries WHERE vault_id = $1", &[&v.0]).await.map_err(pg)?;
            out.deleted.push(v);
        }
    }
    if out.removed > 0 {
        append_event(c, event).await?;
        for v in &out.deleted {
            append_event(c, &deleted_event(event, *v)).await?;
        }
    }
    Ok(out)
}

pub(super) async fn key_names_in_use(c: &impl GenericClient) -> StoreResult<Vec<String>> {
    let rows = c.query("SELECT DISTINCT key_name FROM vault_entries ORDER BY key_name", &[]).await.map_err(pg)?;
    rows.iter().map(|r| get(r, 0)).collect()
}

pub(super) async fn associations(c: &impl GenericClient, id: VaultId) -> StoreResult<Vec<StoredAssociation>> {
    let rows = c
        .query("SELECT name, value_type, key_id, sealed, lookup FROM associations WHERE vault_id = $1 ORDER BY name", &[&id.0])
        .await
        .map_err(pg)?;
    rows.iter()
        .map(|r| {
            Ok(StoredAssociation {
                name: get(r, 0)?,
                value_type: stored_value_type(&get::<String>(r, 1)?)?,
                key_id: get(r, 2)?,
                sealed: get(r, 3)?,
                lookup: stored_hash32(get(r, 4)?)?,
            })
        })
        .collect()
}

pub(super) async fn put_association(
    c: &impl GenericClient,
    id: VaultId,
    a: &StoredAssociation,
    event: &Event,
) -> StoreResult<PutAssociation> {
    // Lock the entry row: concurrent writers to one entry take turns.
    if c.query_opt("SELECT 1 FROM vault_entries WHERE vault_id = $1 FOR UPDATE", &[&id.0]).await.map_err(pg)?.is_none() {
        return Ok(PutAssociation::NoEntry);
    }
    let existing = c.query_opt("SELECT lookup FROM associations WHERE vault_id = $1 AND name = $2", &[&id.0, &a.name]).await.map_err(pg)?;
    if let Some(r) = existing
        && get::<Vec<u8>>(&r, 0)? == a.lookup
    {
        return Ok(PutAssociation::Identical);
    }
    c.execute(
        "INSERT INTO associations (vault_id, name, value_type, key_id, sealed, lookup) VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (vault_id, name) DO UPDATE SET value_type = excluded.value_type, key_id = excluded.key_id, \
         sealed = excluded.sealed, lookup = excluded.lookup",
        &[&id.0, &a.name, &a.value_type.as_str(), &a.key_id, &a.sealed, &&a.lookup[..]],
    )
    .await
    .map_err(pg)?;
    append_event(c, event).await?;
    Ok(PutAssociation::Stored)
}

pub(super) async fn dissociate(
    c: &impl GenericClient,
    id: VaultId,
    name: Option<&str>,
    lookup: Option<&[u8; 32]>,
    event: &Event,
) -> StoreResult<u64> {
    let n = c
        .execute(
            "DELETE FROM associations WHERE vault_id = $1 AND ($2::TEXT IS NULL OR name = $2) AND ($3::BYTEA IS NULL OR lookup = $3)",
            &[&id.0, &name, &lookup.map(|l| &l[..])],
        )
        .await
        .map_err(pg)?;
    if n > 0 {
        append_event(c, event).await?;
    }
    Ok(n)
}

pub(super) async fn lookup_by_association(
    c: &impl GenericClient,
    name: &str,
    lookup: Option<&[u8; 32]>,
) -> StoreResult<Vec<(VaultId, Vec<FolderPath>)>> {
    let rows = super::query(
        c,
        "SELECT a.vault_id, o.owner FROM associations a LEFT JOIN vault_owners o ON o.vault_id = a.vault_id \
         WHERE a.name = $1 AND ($2::BYTEA IS NULL OR a.lookup = $2) ORDER BY a.vault_id, o.owner_key",
        &[&name, &lookup.map(|l| &l[..])],
    )
    .await?;
    group_owners(rows.iter().map(|r| Ok((VaultId(get(r, 0)?), get::<Option<String>>(r, 1)?))))
}

pub(super) async fn sealed_on_old_keys(c: &impl GenericClient, current: i64, limit: u32) -> StoreResult<Vec<SealedItem>> {
    let mut out = Vec::new();
    let rows = c
        .query(
            "SELECT vault_id, key_id, sealed FROM vault_entries WHERE key_id <> $1 ORDER BY vault_id LIMIT $2",
            &[&current, &i64::from(limit)],
        )
        .await
        .map_err(pg)?;
    for r in &rows {
        out.push(SealedItem::Data { vault_id: VaultId(get(r, 0)?), key_id: get(r, 1)?, sealed: get(r, 2)? });
    }
    let left = i64::from(limit) - out.len() as i64;
    if left > 0 {
        let rows = c
            .query(
                "SELECT vault_id, name, value_type, key_id, sealed FROM associations WHERE key_id <> $1 ORDER BY vault_id, name LIMIT $2",
                &[&current, &left],
            )
            .await
            .map_err(pg)?;
        for r in &rows {
            out.push(SealedItem::Association {
                vault_id: VaultId(get(r, 0)?),
                name: get(r, 1)?,
                value_type: stored_value_type(&get::<String>(r, 2)?)?,
                key_id: get(r, 3)?,
                sealed: get(r, 4)?,
            });
        }
    }
    Ok(out)
}

pub(super) async fn reseal(c: &impl GenericClient, items: &[(SealedItem, i64, Vec<u8>)], event: &Event) -> StoreResult<u64> {
    let mut n = 0u64;
    for (item, new_key, new_sealed) in items {
        n += match item {
            SealedItem::Data { vault_id, key_id, .. } => {
                c.execute(
                    "UPDATE vault_entries SET key_id = $1, sealed = $2 WHERE vault_id = $3 AND key_id = $4",
                    &[new_key, new_sealed, &vault_id.0, key_id],
                )
                .await
            }
            SealedItem::Association { vault_id, name, key_id, .. } => {
                c.execute(
                    "UPDATE associations SET key_id = $1, sealed = $2 WHERE vault_id = $3 AND name = $4 AND key_id = $5",
                    &[new_key, new_sealed, &vault_id.0, name, key_id],
                )
                .await
            }
        }
        .map_err(pg)?;
    }
    if n > 0 {
        append_event(c, event).await?;
    }
    Ok(n)
}

/// One boolean query of the shared rights checks.
async fn check(c: &impl GenericClient, sql: &str, params: &[super::Param<'_>]) -> StoreResult<bool> {
    let row = query_opt(c, sql, params).await?;
    row.map_or(Ok(false), |r| get::<bool>(&r, 0))
}

async fn may_write_entry(c: &impl GenericClient, by: &Writer, id: VaultId) -> StoreResult<bool> {
    check(c, sql::MAY_WRITE_ENTRY.postgres(), &[&by.grant_id.as_str(), &by.user_id.as_str(), &id.0]).await
}

async fn may_write_folder(c: &impl GenericClient, by: &Writer, folder: &FolderPath) -> StoreResult<bool> {
    check(c, sql::MAY_WRITE_FOLDER.postgres(), &[&by.grant_id.as_str(), &by.user_id.as_str(), &folder.key()]).await
}

impl VaultStore for PgStore {
    fn vault_context(&self, access_hash: TokenHash, id: Option<VaultId>) -> StoreFuture<'_, Option<VaultContext>> {
        on_client!(self, |c| {
            let Some(row) = query_opt(&c, sql::ACCESS_CONTEXT.postgres(), &[&access_hash.as_bytes()]).await? else {
                return Ok(None);
            };
            let access = access_from_row(&row, access_hash)?;
            let rights = rights_of(&c, &access.grant.user_id).await?;
            let current_key = get::<Option<i64>>(&c.query_one("SELECT max(id) FROM data_keys", &[]).await.map_err(pg)?, 0)?;
            let entry = match id {
                Some(id) if id.0 > 0 => entry(&c, id).await?,
                _ => None,
            };
            Ok(Some(VaultContext { access, rights, current_key, entry }))
        })
    }

    fn insert_entry(&self, entry: VaultEntry, by: Writer, event: Event) -> StoreFuture<'_, Checked<bool>> {
        in_tx!(self, |tx| {
            async {
                for o in &entry.owners {
                    if !folder_exists(&tx, o.key()).await? {
                        return Ok(Checked::Done(false));
                    }
                    if !may_write_folder(&tx, &by, o).await? {
                        return Ok(Checked::Denied);
                    }
                }
                insert_entry(&tx, &entry, &event).await?;
                Ok(Checked::Done(true))
            }
            .await
        })
    }

    fn mutate_entry(&self, id: VaultId, vault_type: i32, by: Writer, event: Event) -> StoreFuture<'_, Checked<bool>> {
        in_tx!(self, |tx| {
            async {
                if !check(&tx, sql::IS_MASTER_ADMIN.postgres(), &[&by.grant_id.as_str(), &by.user_id.as_str()]).await? {
                    return Ok(Checked::Denied);
                }
                Ok(Checked::Done(mutate_entry(&tx, id, vault_type, &event).await?))
            }
            .await
        })
    }

    fn add_owner(&self, id: VaultId, owner: FolderPath, by: Writer, event: Event) -> StoreFuture<'_, Checked<AddOwner>> {
        in_tx!(self, |tx| {
            async {
                if !exists(&tx, id).await? {
                    return Ok(Checked::Done(AddOwner::NoEntry));
                }
                if !folder_exists(&tx, owner.key()).await? {
                    return Ok(Checked::Done(AddOwner::NoFolder));
                }
                if !may_write_entry(&tx, &by, id).await? || !may_write_folder(&tx, &by, &owner).await? {
                    return Ok(Checked::Denied);
                }
                Ok(Checked::Done(add_owner(&tx, id, &owner, &event).await?))
            }
            .await
        })
    }

    fn remove_owner(&self, id: Option<VaultId>, owner: FolderPath, by: Writer, event: Event) -> StoreFuture<'_, Checked<OwnerRemoval>> {
        in_tx!(self, |tx| {
            async {
                if !may_write_folder(&tx, &by, &owner).await? {
                    return Ok(Checked::Denied);
                }
                Ok(Checked::Done(remove_owner(&tx, id, &owner, &event).await?))
            }
            .await
        })
    }

    fn put_association(&self, id: VaultId, a: StoredAssociation, by: Writer, event: Event) -> StoreFuture<'_, Checked<PutAssociation>> {
        in_tx!(self, |tx| {
            async {
                if !exists(&tx, id).await? {
                    return Ok(Checked::Done(PutAssociation::NoEntry));
                }
                if !may_write_entry(&tx, &by, id).await? {
                    return Ok(Checked::Denied);
                }
                Ok(Checked::Done(put_association(&tx, id, &a, &event).await?))
            }
            .await
        })
    }

    fn dissociate(
        &self,
        id: VaultId,
        name: Option<String>,
        lookup: Option<[u8; 32]>,
        by: Writer,
        event: Event,
    ) -> StoreFuture<'_, Checked<u64>> {
        in_tx!(self, |tx| {
            async {
                if !may_write_entry(&tx, &by, id).await? {
                    return Ok(Checked::Denied);
                }
                Ok(Checked::Done(dissociate(&tx, id, name.as_deref(), lookup.as_ref(), &event).await?))
            }
            .await
        })
    }
    fn data_keys(&self) -> StoreFuture<'_, Vec<DataKeyRecord>> {
        on_client!(self, |c| { data_keys(&c).await })
    }
    fn insert_data_key(&self, key: DataKeyRecord, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| { insert_data_key(&tx, &key, &event).await })
    }
    fn allocate_vault_id(&self) -> StoreFuture<'_, VaultId> {
        on_client!(self, |c| { allocate_vault_id(&c).await })
    }
    fn vault_ids(&self, filter: VaultFilter) -> StoreFuture<'_, Vec<VaultId>> {
        on_client!(self, |c| { vault_ids(&c, &filter).await })
    }
    fn owners_of(&self, ids: Vec<VaultId>) -> StoreFuture<'_, Vec<(VaultId, Vec<FolderPath>)>> {
        on_client!(self, |c| { owners_of(&c, &ids).await })
    }
    fn key_names_in_use(&self) -> StoreFuture<'_, Vec<String>> {
        on_client!(self, |c| { key_names_in_use(&c).await })
    }
    fn associations(&self, id: VaultId) -> StoreFuture<'_, Vec<StoredAssociation>> {
        on_client!(self, |c| { associations(&c, id).await })
    }
    fn lookup_by_association(&self, name: String, lookup: Option<[u8; 32]>) -> StoreFuture<'_, Vec<(VaultId, Vec<FolderPath>)>> {
        on_client!(self, |c| { lookup_by_association(&c, &name, lookup.as_ref()).await })
    }
    fn sealed_on_old_keys(&self, current: i64, limit: u32) -> StoreFuture<'_, Vec<SealedItem>> {
        on_client!(self, |c| { sealed_on_old_keys(&c, current, limit).await })
    }
    fn reseal(&self, items: Vec<(SealedItem, i64, Vec<u8>)>, event: Event) -> StoreFuture<'_, u64> {
        in_tx!(self, |tx| { reseal(&tx, &items, &event).await })
    }
}
