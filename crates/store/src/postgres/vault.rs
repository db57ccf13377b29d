//! The vault on PostgreSQL: the context read, and writes that check the
//! writer's rights again inside their own transaction before they change
//! anything.

use deadpool_postgres::GenericClient;

use std::sync::LazyLock;
use strongroom_core::event::Event;
use strongroom_core::token::TokenHash;

use strongroom_core::vault::{FolderPath, Rights, VaultId};

use super::admin::folder_exists;
use super::auth::access_from_row;
use super::{Param, PgStore, append_event, exec, get, pg, query, query_one, query_opt, time};
use crate::sql;
use crate::{
    AddOwner, Checked, DataKeyRecord, OwnerRemoval, PutAssociation, SealedItem, StoreError, StoreFuture, StoreResult, StoredAssociation,
    VaultContext, VaultEntry, VaultFilter, VaultStore, Writer, deleted_event, group_owners, stored_folder, stored_hash32,
    stored_value_type,
};

/// `$1` access-token hash, `$2` entry id (or NULL) → [`sql::access_cols`],
/// then the user's rights (folder keys, rights), the newest data key of
/// each key name (names, ids), and the entry's type, key name, data key,
/// sealed data, created at and owners (NULLs and no owners when there is no
/// such entry). The whole vault context in one statement, one round trip
/// and one snapshot; no row when the token is unknown.
static VAULT_CONTEXT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {}, \
         ARRAY(SELECT r.path_key FROM folder_rights r WHERE r.user_id = g.user_id ORDER BY r.path_key), \
         ARRAY(SELECT r.rights FROM folder_rights r WHERE r.user_id = g.user_id ORDER BY r.path_key), \
         ARRAY(SELECT key_name FROM data_keys GROUP BY key_name ORDER BY key_name), \
         ARRAY(SELECT max(id) FROM data_keys GROUP BY key_name ORDER BY key_name), \
         e.vault_type, e.key_name, e.key_id, e.sealed, e.created_at, \
         ARRAY(SELECT o.owner FROM vault_owners o WHERE o.vault_id = e.vault_id ORDER BY o.owner_key) \
         FROM {} LEFT JOIN vault_entries e ON e.vault_id = $2::BIGINT WHERE t.hash = $1",
        sql::access_cols(),
        sql::ACCESS_JOINS
    )
});

fn rights(bits: i64) -> Rights {
    Rights::from_bits(u32::try_from(bits).unwrap_or(0))
}

async fn owners(c: &impl GenericClient, id: VaultId) -> StoreResult<Vec<FolderPath>> {
    let rows = query(c, sql::OWNERS.postgres(), &[&id.0]).await?;
    rows.iter().map(|r| stored_folder(&get::<String>(r, 0)?)).collect()
}

async fn exists(c: &impl GenericClient, id: VaultId) -> StoreResult<bool> {
    Ok(query_opt(c, "SELECT 1 FROM vault_entries WHERE vault_id = $1", &[&id.0]).await?.is_some())
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
            let id = id.filter(|id| id.0 > 0).map(|id| id.0);
            let Some(r) = query_opt(&c, &VAULT_CONTEXT, &[&access_hash.as_bytes(), &id]).await? else {
                return Ok(None);
            };
            let access = access_from_row(&r, access_hash)?;
            let o = sql::GRANT_COL_COUNT + sql::ACCESS_EXTRA_COLS;
            let rights = get::<Vec<String>>(&r, o)?.into_iter().zip(get::<Vec<i64>>(&r, o + 1)?).map(|(k, b)| (k, rights(b))).collect();
            let current_keys = get::<Vec<String>>(&r, o + 2)?.into_iter().zip(get::<Vec<i64>>(&r, o + 3)?).collect();
            let entry = match (id, get::<Option<i32>>(&r, o + 4)?) {
                (Some(id), Some(vault_type)) => Some(VaultEntry {
                    vault_id: VaultId(id),
                    vault_type,
                    key_name: get(&r, o + 5)?,
                    key_id: get(&r, o + 6)?,
                    sealed: get(&r, o + 7)?,
                    owners: get::<Vec<String>>(&r, o + 9)?.iter().map(|p| stored_folder(p)).collect::<StoreResult<_>>()?,
                    created_at: time(&r, o + 8)?,
                }),
                _ => None,
            };
            Ok(Some(VaultContext { access, rights, current_keys, entry }))
        })
    }

    fn data_keys(&self) -> StoreFuture<'_, Vec<DataKeyRecord>> {
        on_client!(self, |c| {
            let rows = query(&c, sql::DATA_KEYS.postgres(), &[]).await?;
            rows.iter()
                .map(|r| Ok(DataKeyRecord { id: get(r, 0)?, key_name: get(r, 1)?, wrapped: get(r, 2)?, created_at: time(r, 3)? }))
                .collect()
        })
    }

    fn insert_data_key(&self, k: DataKeyRecord, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| {
            async {
                exec(
                    &tx,
                    "INSERT INTO data_keys (id, key_name, wrapped, created_at) VALUES ($1, $2, $3, $4)",
                    &[&k.id, &k.key_name, &k.wrapped, &k.created_at.millis()],
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

    fn key_names_in_use(&self) -> StoreFuture<'_, Vec<(String, u64)>> {
        on_client!(self, |c| {
            let rows = query(&c, "SELECT key_name, count(*) FROM vault_entries GROUP BY key_name ORDER BY key_name", &[]).await?;
            rows.iter().map(|r| Ok((get(r, 0)?, get::<i64>(r, 1)?.unsigned_abs()))).collect()
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
        // One statement in a group commit (`batch`).
        Box::pin(self.batch.put_association(id, a, by, event))
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

    fn entries_under_key(&self, key_name: String, after: VaultId, limit: u32) -> StoreFuture<'_, Vec<SealedItem>> {
        on_client!(self, |c| {
            let rows = query(
                &c,
                "SELECT vault_id, key_id, sealed FROM vault_entries WHERE lower(key_name) = lower($1) AND vault_id > $2 ORDER BY vault_id LIMIT $3",
                &[&key_name, &after.0, &i64::from(limit)],
            )
            .await?;
            rows.iter().map(|r| Ok(SealedItem::Data { vault_id: VaultId(get(r, 0)?), key_id: get(r, 1)?, sealed: get(r, 2)? })).collect()
        })
    }

    fn sealed_on_old_keys(&self, key_name: String, current: i64, limit: u32) -> StoreFuture<'_, Vec<SealedItem>> {
        on_client!(self, |c| {
            let mut out = Vec::new();
            let rows = query(
                &c,
                "SELECT vault_id, key_id, sealed FROM vault_entries WHERE key_id <> $1 AND lower(key_name) = lower($3) ORDER BY vault_id LIMIT $2",
                &[&current, &i64::from(limit), &key_name],
            )
            .await?;
            for r in &rows {
                out.push(SealedItem::Data { vault_id: VaultId(get(r, 0)?), key_id: get(r, 1)?, sealed: get(r, 2)? });
            }
            let left = i64::from(limit) - out.len() as i64;
            if left > 0 {
                let rows = query(
                    &c,
                    "SELECT a.vault_id, a.name, a.value_type, a.key_id, a.sealed FROM associations a \
                     JOIN vault_entries e ON e.vault_id = a.vault_id \
                     WHERE a.key_id <> $1 AND lower(e.key_name) = lower($3) ORDER BY a.vault_id, a.name LIMIT $2",
                    &[&current, &left, &key_name],
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
                        SealedItem::Data { vault_id, key_id, sealed } => {
                            exec(&tx, sql::RESEAL_DATA.postgres(), &[new_key, new_sealed, &vault_id.0, key_id, sealed]).await?
                        }
                        SealedItem::Association { vault_id, name, key_id, sealed, .. } => {
                            exec(&tx, sql::RESEAL_ASSOCIATION.postgres(), &[new_key, new_sealed, &vault_id.0, name, key_id, sealed]).await?
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

    fn rekey_entry(
        &self,
        id: VaultId,
        key_name: String,
        items: Vec<(SealedItem, i64, Vec<u8>)>,
        by: Option<Writer>,
        event: Event,
    ) -> StoreFuture<'_, Checked<bool>> {
        in_tx!(self, |tx| {
            async {
                if let Some(by) = &by
                    && !may_write_entry(&tx, by, id).await?
                {
                    return Ok(Checked::Denied);
                }
                // Everything read is checked before anything is written: the
                // transaction holds the event head, which every writer of an
                // entry or its associations takes first, so nothing changes
                // between the check and the writes.
                let (mut data, mut associations) = (None, 0i64);
                for (item, new_key, new_sealed) in &items {
                    match item {
                        SealedItem::Data { vault_id, key_id, sealed } if *vault_id == id => {
                            data = Some((key_id, sealed, new_key, new_sealed))
                        }
                        SealedItem::Association { vault_id, name, key_id, sealed, .. } if *vault_id == id => {
                            let row = query_one(&tx, sql::ASSOCIATION_UNCHANGED.postgres(), &[&id.0, name, key_id, sealed]).await?;
                            if !get::<bool>(&row, 0)? {
                                return Ok(Checked::Done(false));
                            }
                            associations += 1;
                        }
                        _ => return Err(StoreError::Corrupt("an item of another entry in a key move".into())),
                    }
                }
                let Some((key_id, sealed, new_key, new_sealed)) = data else { return Ok(Checked::Done(false)) };
                if get::<i64>(&query_one(&tx, sql::ASSOCIATION_COUNT.postgres(), &[&id.0]).await?, 0)? != associations {
                    return Ok(Checked::Done(false));
                }
                if exec(&tx, sql::REKEY_DATA.postgres(), &[&key_name, new_key, new_sealed, &id.0, key_id, sealed]).await? != 1 {
                    return Ok(Checked::Done(false));
                }
                for (item, new_key, new_sealed) in &items {
                    if let SealedItem::Association { name, key_id, sealed, .. } = item {
                        exec(&tx, sql::RESEAL_ASSOCIATION.postgres(), &[new_key, new_sealed, &id.0, name, key_id, sealed]).await?;
                    }
                }
                append_event(&tx, &event).await?;
                Ok(Checked::Done(true))
            }
            .await
        })
    }
}
