//! The vault on PostgreSQL: the context read, and writes that check the
//! writer's rights again inside their own transaction before they change
//! anything.

use deadpool_postgres::GenericClient;

use strongroom_core::event::Event;
use strongroom_core::token::TokenHash;
use strongroom_core::vault::{FolderPath, VaultId};

use super::admin::{folder_exists, rights_of};
use super::auth::access_from_row;
use super::{Param, PgStore, append_event, exec, get, pg, query, query_one, query_opt, time};
use crate::sql;
use crate::{
    AddOwner, Checked, DataKeyRecord, OwnerRemoval, PutAssociation, SealedItem, StoreFuture, StoreResult, StoredAssociation, VaultContext,
    VaultEntry, VaultFilter, VaultStore, Writer, deleted_event, group_owners, stored_folder, stored_hash32, stored_value_type,
};

async fn owners(c: &impl GenericClient, id: VaultId) -> StoreResult<Vec<FolderPath>> {
    let rows = query(c, sql::OWNERS.postgres(), &[&id.0]).await?;
    rows.iter().map(|r| stored_folder(&get::<String>(r, 0)?)).collect()
}

async fn exists(c: &impl GenericClient, id: VaultId) -> StoreResult<bool> {
    Ok(query_opt(c, "SELECT 1 FROM vault_entries WHERE vault_id = $1", &[&id.0]).await?.is_some())
}

async fn entry(c: &impl GenericClient, id: VaultId) -> StoreResult<Option<VaultEntry>> {
    let Some(r) = query_opt(c, sql::ENTRY.postgres(), &[&id.0]).await? else {
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

/// One boolean query of the shared rights checks.
async fn check(c: &impl GenericClient, sql: &str, params: &[Param<'_>]) -> StoreResult<bool> {
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
            let current_key = get::<Option<i64>>(&query_one(&c, "SELECT max(id) FROM data_keys", &[]).await?, 0)?;
            let entry = match id {
                Some(id) if id.0 > 0 => entry(&c, id).await?,
                _ => None,
            };
            Ok(Some(VaultContext { access, rights, current_key, entry }))
        })
    }

    fn data_keys(&self) -> StoreFuture<'_, Vec<DataKeyRecord>> {
        on_client!(self, |c| {
            let rows = query(&c, sql::DATA_KEYS.postgres(), &[]).await?;
            rows.iter().map(|r| Ok(DataKeyRecord { id: get(r, 0)?, wrapped: get(r, 1)?, created_at: time(r, 2)? })).collect()
        })
    }

    fn insert_data_key(&self, k: DataKeyRecord, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| {
            async {
                exec(
                    &tx,
                    "INSERT INTO data_keys (id, wrapped, created_at) VALUES ($1, $2, $3)",
                    &[&k.id, &k.wrapped, &k.created_at.millis()],
                )
                .await?;
                append_event(&tx, &event).await.map(drop)
            }
            .await
        })
    }

    fn allocate_vault_id(&self) -> StoreFuture<'_, VaultId> {
        on_client!(self, |c| { Ok(VaultId(get(&query_one(&c, "SELECT nextval('vault_id_seq')", &[]).await?, 0)?)) })
    }

    fn insert_entry(&self, e: VaultEntry, by: Writer, event: Event) -> StoreFuture<'_, Checked<bool>> {
        in_tx!(self, |tx| {
            async {
                for o in &e.owners {
                    if !folder_exists(&tx, o.key()).await? {
                        return Ok(Checked::Done(false));
                    }
                    if !may_write_folder(&tx, &by, o).await? {
                        return Ok(Checked::Denied);
                    }
                }
                exec(
                    &tx,
                    sql::INSERT_ENTRY.postgres(),
                    &[&e.vault_id.0, &e.vault_type, &e.key_name, &e.key_id, &e.sealed, &e.created_at.millis()],
                )
                .await?;
                for o in &e.owners {
                    exec(&tx, sql::INSERT_OWNER.postgres(), &[&e.vault_id.0, &o.key(), &o.as_str()]).await?;
                }
                append_event(&tx, &event).await?;
                Ok(Checked::Done(true))
            }
            .await
        })
    }

    fn vault_ids(&self, f: VaultFilter) -> StoreFuture<'_, Vec<VaultId>> {
        on_client!(self, |c| {
            let rows = query(
                &c,
                "SELECT e.vault_id FROM vault_entries e \
                 WHERE ($1::INTEGER IS NULL OR e.vault_type = $1) \
                 AND ($2::TEXT IS NULL OR EXISTS (SELECT 1 FROM vault_owners o WHERE o.vault_id = e.vault_id AND o.owner_key = $2)) \
                 AND (NOT $3 OR NOT EXISTS (SELECT 1 FROM vault_owners o WHERE o.vault_id = e.vault_id)) \
                 ORDER BY e.vault_id",
                &[&f.vault_type, &f.owner_key, &f.orphans_only],
            )
            .await?;
            rows.iter().map(|r| Ok(VaultId(get(r, 0)?))).collect()
        })
    }

    fn owners_of(&self, ids: Vec<VaultId>) -> StoreFuture<'_, Vec<(VaultId, Vec<FolderPath>)>> {
        on_client!(self, |c| {
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                if exists(&c, id).await? {
                    out.push((id, owners(&c, id).await?));
                }
            }
            Ok(out)
        })
    }

    fn mutate_entry(&self, id: VaultId, vault_type: i32, by: Writer, event: Event) -> StoreFuture<'_, Checked<bool>> {
        in_tx!(self, |tx| {
            async {
                if !check(&tx, sql::IS_MASTER_ADMIN.postgres(), &[&by.grant_id.as_str(), &by.user_id.as_str()]).await? {
                    return Ok(Checked::Denied);
                }
                let n = exec(&tx, "UPDATE vault_entries SET vault_type = $1 WHERE vault_id = $2", &[&vault_type, &id.0]).await?;
                if n == 1 {
                    append_event(&tx, &event).await?;
                }
                Ok(Checked::Done(n == 1))
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
                // Again after the checks: at READ COMMITTED an entry removed meanwhile is NoEntry.
                if !exists(&tx, id).await? {
                    return Ok(Checked::Done(AddOwner::NoEntry));
                }
                let n = exec(&tx, sql::INSERT_OWNER.postgres(), &[&id.0, &owner.key(), &owner.as_str()]).await?;
                if n == 0 {
                    return Ok(Checked::Done(AddOwner::AlreadyOwner));
                }
                append_event(&tx, &event).await?;
                Ok(Checked::Done(AddOwner::Added))
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
                let affected = query(
                    &tx,
                    "SELECT vault_id FROM vault_owners WHERE owner_key = $1 AND ($2::BIGINT IS NULL OR vault_id = $2) ORDER BY vault_id FOR UPDATE",
                    &[&owner.key(), &id.map(|v| v.0)],
                )
                .await?;
                let mut out = OwnerRemoval::default();
                for r in &affected {
                    let v = VaultId(get(r, 0)?);
                    out.removed += exec(&tx, sql::DELETE_OWNER.postgres(), &[&v.0, &owner.key()]).await?;
                    let left: i64 = get(&query_one(&tx, "SELECT count(*) FROM vault_owners WHERE vault_id = $1", &[&v.0]).await?, 0)?;
                    if left == 0 {
                        exec(&tx, "DELETE FROM vault_entries WHERE vault_id = $1", &[&v.0]).await?;
                        out.deleted.push(v);
                    }
                }
                if out.removed > 0 {
                    append_event(&tx, &event).await?;
                    for v in &out.deleted {
                        append_event(&tx, &deleted_event(&event, *v)).await?;
                    }
                }
                Ok(Checked::Done(out))
            }
            .await
        })
    }

    fn key_names_in_use(&self) -> StoreFuture<'_, Vec<String>> {
        on_client!(self, |c| {
            let rows = query(&c, "SELECT DISTINCT key_name FROM vault_entries ORDER BY key_name", &[]).await?;
            rows.iter().map(|r| get(r, 0)).collect()
        })
    }

    fn associations(&self, id: VaultId) -> StoreFuture<'_, Vec<StoredAssociation>> {
        on_client!(self, |c| {
            let rows =
                query(&c, "SELECT name, value_type, key_id, sealed, lookup FROM associations WHERE vault_id = $1 ORDER BY name", &[&id.0])
                    .await?;
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
                // Lock the entry row: concurrent writers to one entry take turns.
                if query_opt(&tx, "SELECT 1 FROM vault_entries WHERE vault_id = $1 FOR UPDATE", &[&id.0]).await?.is_none() {
                    return Ok(Checked::Done(PutAssociation::NoEntry));
                }
                let existing =
                    query_opt(&tx, "SELECT lookup FROM associations WHERE vault_id = $1 AND name = $2", &[&id.0, &a.name]).await?;
                if let Some(r) = existing
                    && get::<Vec<u8>>(&r, 0)? == a.lookup
                {
                    return Ok(Checked::Done(PutAssociation::Identical));
                }
                exec(&tx, sql::PUT_ASSOCIATION.postgres(), &[&id.0, &a.name, &a.value_type.as_str(), &a.key_id, &a.sealed, &&a.lookup[..]])
                    .await?;
                append_event(&tx, &event).await?;
                Ok(Checked::Done(PutAssociation::Stored))
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
                let n = exec(
                    &tx,
                    "DELETE FROM associations WHERE vault_id = $1 AND ($2::TEXT IS NULL OR name = $2) AND ($3::BYTEA IS NULL OR lookup = $3)",
                    &[&id.0, &name, &lookup.as_ref().map(|l| &l[..])],
                )
                .await?;
                if n > 0 {
                    append_event(&tx, &event).await?;
                }
                Ok(Checked::Done(n))
            }
            .await
        })
    }

    fn lookup_by_association(&self, name: String, lookup: Option<[u8; 32]>) -> StoreFuture<'_, Vec<(VaultId, Vec<FolderPath>)>> {
        on_client!(self, |c| {
            let rows = query(
                &c,
                "SELECT a.vault_id, o.owner FROM associations a LEFT JOIN vault_owners o ON o.vault_id = a.vault_id \
                 WHERE a.name = $1 AND ($2::BYTEA IS NULL OR a.lookup = $2) ORDER BY a.vault_id, o.owner_key",
                &[&name, &lookup.as_ref().map(|l| &l[..])],
            )
            .await?;
            group_owners(rows.iter().map(|r| Ok((VaultId(get(r, 0)?), get::<Option<String>>(r, 1)?))))
        })
    }

    fn sealed_on_old_keys(&self, current: i64, limit: u32) -> StoreFuture<'_, Vec<SealedItem>> {
        on_client!(self, |c| {
            let mut out = Vec::new();
            let rows = query(
                &c,
                "SELECT vault_id, key_id, sealed FROM vault_entries WHERE key_id <> $1 ORDER BY vault_id LIMIT $2",
                &[&current, &i64::from(limit)],
            )
            .await?;
            for r in &rows {
                out.push(SealedItem::Data { vault_id: VaultId(get(r, 0)?), key_id: get(r, 1)?, sealed: get(r, 2)? });
            }
            let left = i64::from(limit) - out.len() as i64;
            if left > 0 {
                let rows = query(
                    &c,
                    "SELECT vault_id, name, value_type, key_id, sealed FROM associations WHERE key_id <> $1 ORDER BY vault_id, name LIMIT $2",
                    &[&current, &left],
                )
                .await?;
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
        })
    }

    fn reseal(&self, items: Vec<(SealedItem, i64, Vec<u8>)>, event: Event) -> StoreFuture<'_, u64> {
        in_tx!(self, |tx| {
            async {
                let mut n = 0u64;
                for (item, new_key, new_sealed) in &items {
                    n += match item {
                        SealedItem::Data { vault_id, key_id, .. } => {
                            exec(
                                &tx,
                                "UPDATE vault_entries SET key_id = $1, sealed = $2 WHERE vault_id = $3 AND key_id = $4",
                                &[new_key, new_sealed, &vault_id.0, key_id],
                            )
                            .await?
                        }
                        SealedItem::Association { vault_id, name, key_id, .. } => {
                            exec(
                                &tx,
                                "UPDATE associations SET key_id = $1, sealed = $2 WHERE vault_id = $3 AND name = $4 AND key_id = $5",
                                &[new_key, new_sealed, &vault_id.0, name, key_id],
                            )
                            .await?
                        }
                    };
                }
                if n > 0 {
                    append_event(&tx, &event).await?;
                }
                Ok(n)
            }
            .await
        })
    }
}
