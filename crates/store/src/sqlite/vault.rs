//! The vault on SQLite: the context read, and writes that check the
//! writer's rights again inside the writer's transaction (the writer thread
//! is the only writer, so the check and the write see the same state).

use rusqlite::{Connection, OptionalExtension, params};

use strongroom_core::event::Event;
use strongroom_core::token::TokenHash;
use strongroom_core::vault::{FolderPath, VaultId};

use super::admin::{folder_exists, rights_of};
use super::writer::backend;
use super::{SqliteStore, access_from_row, append_event_tx, exec, is_unique_violation, time_col};
use crate::sql;
use crate::{
    AddOwner, Checked, DataKeyRecord, OwnerRemoval, PutAssociation, SealedItem, StoreError, StoreFuture, StoreResult, StoredAssociation,
    VaultContext, VaultEntry, VaultFilter, VaultStore, Writer, deleted_event, group_owners, stored_folder, stored_hash32,
    stored_value_type,
};

fn owners(c: &Connection, id: VaultId) -> StoreResult<Vec<FolderPath>> {
    let mut st = c.prepare_cached(sql::OWNERS.sqlite()).map_err(backend)?;
    let rows = st.query_map([id.0], |r| r.get::<_, String>(0)).map_err(backend)?;
    rows.map(|r| r.map_err(backend).and_then(|p| stored_folder(&p))).collect()
}

fn entry(c: &Connection, id: VaultId) -> StoreResult<Option<VaultEntry>> {
    let mut st = c.prepare_cached(sql::ENTRY.sqlite()).map_err(backend)?;
    let found = st
        .query_row([id.0], |r| {
            Ok(VaultEntry {
                vault_id: id,
                vault_type: r.get(0)?,
                key_name: r.get(1)?,
                key_id: r.get(2)?,
                sealed: r.get(3)?,
                owners: Vec::new(),
                created_at: time_col(r, 4)?,
            })
        })
        .optional()
        .map_err(backend)?;
    match found {
        None => Ok(None),
        Some(mut e) => {
            e.owners = owners(c, id)?;
            Ok(Some(e))
        }
    }
}

fn entry_exists(c: &Connection, id: VaultId) -> StoreResult<bool> {
    let mut st = c.prepare_cached("SELECT 1 FROM vault_entries WHERE vault_id = ?1").map_err(backend)?;
    Ok(st.query_row([id.0], |_| Ok(())).optional().map_err(backend)?.is_some())
}

/// One boolean query of the shared rights checks.
fn check(c: &Connection, sql: &str, p: impl rusqlite::Params) -> StoreResult<bool> {
    let mut st = c.prepare_cached(sql).map_err(backend)?;
    st.query_row(p, |r| r.get::<_, bool>(0)).map_err(backend)
}

fn may_write_entry(c: &Connection, by: &Writer, id: VaultId) -> StoreResult<bool> {
    check(c, sql::MAY_WRITE_ENTRY.sqlite(), params![by.grant_id.as_str(), by.user_id.as_str(), id.0])
}

fn may_write_folder(c: &Connection, by: &Writer, folder: &FolderPath) -> StoreResult<bool> {
    check(c, sql::MAY_WRITE_FOLDER.sqlite(), params![by.grant_id.as_str(), by.user_id.as_str(), folder.key()])
}

/// The newest data key of each named key.
const CURRENT_KEYS: &str = "SELECT key_name, max(id) FROM data_keys GROUP BY key_name ORDER BY key_name";

impl VaultStore for SqliteStore {
    fn vault_context(&self, access_hash: TokenHash, id: Option<VaultId>) -> StoreFuture<'_, Option<VaultContext>> {
        Box::pin(self.read(move |c| {
            let mut st = c.prepare_cached(sql::ACCESS_CONTEXT.sqlite()).map_err(backend)?;
            let access = st.query_row([access_hash.as_bytes()], |r| access_from_row(r, access_hash)).optional().map_err(backend)?;
            let Some(access) = access else { return Ok(None) };
            let rights = rights_of(c, &access.grant.user_id)?;
            let current_keys = c
                .prepare_cached(CURRENT_KEYS)
                .and_then(|mut st| st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<Vec<_>, _>>())
                .map_err(backend)?;
            let entry = match id {
                Some(id) if id.0 > 0 => entry(c, id)?,
                _ => None,
            };
            Ok(Some(VaultContext { access, rights, current_keys, entry }))
        }))
    }

    fn data_keys(&self) -> StoreFuture<'_, Vec<DataKeyRecord>> {
        Box::pin(self.read(|c| {
            let mut st = c.prepare_cached(sql::DATA_KEYS.sqlite()).map_err(backend)?;
            let rows = st
                .query_map([], |r| {
                    Ok(DataKeyRecord { id: r.get(0)?, key_name: r.get(1)?, wrapped: r.get(2)?, created_at: time_col(r, 3)? })
                })
                .map_err(backend)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(backend)
        }))
    }

    fn insert_data_key(&self, k: DataKeyRecord, event: Event) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| {
            match c.execute(
                "INSERT INTO data_keys (id, key_name, wrapped, created_at) VALUES (?1, ?2, ?3, ?4)",
                params![k.id, k.key_name, k.wrapped, k.created_at.millis()],
            ) {
                Err(e) if is_unique_violation(&e) => Err(StoreError::Conflict),
                Err(e) => Err(backend(e)),
                Ok(_) => append_event_tx(c, &event).map(drop),
            }
        }))
    }

    fn allocate_vault_id(&self) -> StoreFuture<'_, VaultId> {
        Box::pin(self.write(|c| {
            c.query_row("UPDATE vault_id_seq SET next = next + 1 WHERE id = 1 RETURNING next - 1", [], |r| r.get(0))
                .map(VaultId)
                .map_err(backend)
        }))
    }

    fn insert_entry(&self, e: VaultEntry, by: Writer, event: Event) -> StoreFuture<'_, Checked<bool>> {
        Box::pin(self.write(move |c| {
            for o in &e.owners {
                if !folder_exists(c, o.key())? {
                    return Ok(Checked::Done(false));
                }
                if !may_write_folder(c, &by, o)? {
                    return Ok(Checked::Denied);
                }
            }
            c.prepare_cached(sql::INSERT_ENTRY.sqlite())
                .and_then(|mut st| st.execute(params![e.vault_id.0, e.vault_type, e.key_name, e.key_id, e.sealed, e.created_at.millis()]))
                .map_err(|err| if is_unique_violation(&err) { StoreError::Conflict } else { backend(err) })?;
            for o in &e.owners {
                exec(c, sql::INSERT_OWNER.sqlite(), params![e.vault_id.0, o.key(), o.as_str()])?;
            }
            append_event_tx(c, &event)?;
            Ok(Checked::Done(true))
        }))
    }

    fn vault_ids(&self, f: VaultFilter) -> StoreFuture<'_, Vec<VaultId>> {
        Box::pin(self.read(move |c| {
            let mut st = c
                .prepare_cached(
                    "SELECT e.vault_id FROM vault_entries e \
                     WHERE (?1 IS NULL OR e.vault_type = ?1) \
                     AND (?2 IS NULL OR EXISTS (SELECT 1 FROM vault_owners o WHERE o.vault_id = e.vault_id AND o.owner_key = ?2)) \
                     AND (NOT ?3 OR NOT EXISTS (SELECT 1 FROM vault_owners o WHERE o.vault_id = e.vault_id)) \
                     ORDER BY e.vault_id",
                )
                .map_err(backend)?;
            let rows = st.query_map(params![f.vault_type, f.owner_key, f.orphans_only], |r| r.get(0).map(VaultId)).map_err(backend)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(backend)
        }))
    }

    fn owners_of(&self, ids: Vec<VaultId>) -> StoreFuture<'_, Vec<(VaultId, Vec<FolderPath>)>> {
        Box::pin(self.read(move |c| {
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                if entry_exists(c, id)? {
                    out.push((id, owners(c, id)?));
                }
            }
            Ok(out)
        }))
    }

    fn mutate_entry(&self, id: VaultId, vault_type: i32, by: Writer, event: Event) -> StoreFuture<'_, Checked<bool>> {
        Box::pin(self.write(move |c| {
            if !check(c, sql::IS_MASTER_ADMIN.sqlite(), params![by.grant_id.as_str(), by.user_id.as_str()])? {
                return Ok(Checked::Denied);
            }
            let n = exec(c, "UPDATE vault_entries SET vault_type = ?1 WHERE vault_id = ?2", params![vault_type, id.0])?;
            if n == 1 {
                append_event_tx(c, &event)?;
            }
            Ok(Checked::Done(n == 1))
        }))
    }

    fn add_owner(&self, id: VaultId, owner: FolderPath, by: Writer, event: Event) -> StoreFuture<'_, Checked<AddOwner>> {
        Box::pin(self.write(move |c| {
            if !entry_exists(c, id)? {
                return Ok(Checked::Done(AddOwner::NoEntry));
            }
            if !folder_exists(c, owner.key())? {
                return Ok(Checked::Done(AddOwner::NoFolder));
            }
            if !may_write_entry(c, &by, id)? || !may_write_folder(c, &by, &owner)? {
                return Ok(Checked::Denied);
            }
            let n = exec(c, sql::INSERT_OWNER.sqlite(), params![id.0, owner.key(), owner.as_str()])?;
            if n == 0 {
                return Ok(Checked::Done(AddOwner::AlreadyOwner));
            }
            append_event_tx(c, &event)?;
            Ok(Checked::Done(AddOwner::Added))
        }))
    }

    fn remove_owner(&self, id: Option<VaultId>, owner: FolderPath, by: Writer, event: Event) -> StoreFuture<'_, Checked<OwnerRemoval>> {
        Box::pin(self.write(move |c| {
            if !may_write_folder(c, &by, &owner)? {
                return Ok(Checked::Denied);
            }
            let affected: Vec<VaultId> = {
                let mut st = c
                    .prepare_cached(
                        "SELECT vault_id FROM vault_owners WHERE owner_key = ?1 AND (?2 IS NULL OR vault_id = ?2) ORDER BY vault_id",
                    )
                    .map_err(backend)?;
                let rows = st.query_map(params![owner.key(), id.map(|v| v.0)], |r| r.get(0).map(VaultId)).map_err(backend)?;
                rows.collect::<Result<Vec<_>, _>>().map_err(backend)?
            };
            let mut out = OwnerRemoval::default();
            for v in affected {
                out.removed += exec(c, sql::DELETE_OWNER.sqlite(), params![v.0, owner.key()])? as u64;
                let left: i64 = c
                    .prepare_cached("SELECT count(*) FROM vault_owners WHERE vault_id = ?1")
                    .and_then(|mut st| st.query_row([v.0], |r| r.get(0)))
                    .map_err(backend)?;
                if left == 0 {
                    exec(c, "DELETE FROM vault_entries WHERE vault_id = ?1", [v.0])?;
                    out.deleted.push(v);
                }
            }
            if out.removed > 0 {
                append_event_tx(c, &event)?;
                for v in &out.deleted {
                    append_event_tx(c, &deleted_event(&event, *v))?;
                }
            }
            Ok(Checked::Done(out))
        }))
    }

    fn key_names_in_use(&self) -> StoreFuture<'_, Vec<(String, u64)>> {
        Box::pin(self.read(|c| {
            let mut st =
                c.prepare_cached("SELECT key_name, count(*) FROM vault_entries GROUP BY key_name ORDER BY key_name").map_err(backend)?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)?.unsigned_abs()))).map_err(backend)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(backend)
        }))
    }

    fn associations(&self, id: VaultId) -> StoreFuture<'_, Vec<StoredAssociation>> {
        Box::pin(self.read(move |c| {
            let mut st = c
                .prepare_cached("SELECT name, value_type, key_id, sealed, lookup FROM associations WHERE vault_id = ?1 ORDER BY name")
                .map_err(backend)?;
            let rows = st
                .query_map([id.0], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, Vec<u8>>(3)?,
                        r.get::<_, Vec<u8>>(4)?,
                    ))
                })
                .map_err(backend)?;
            rows.map(|r| {
                let (name, t, key_id, sealed, lookup) = r.map_err(backend)?;
                Ok(StoredAssociation { name, value_type: stored_value_type(&t)?, key_id, sealed, lookup: stored_hash32(lookup)? })
            })
            .collect()
        }))
    }

    fn put_association(&self, id: VaultId, a: StoredAssociation, by: Writer, event: Event) -> StoreFuture<'_, Checked<PutAssociation>> {
        Box::pin(self.write(move |c| {
            if !entry_exists(c, id)? {
                return Ok(Checked::Done(PutAssociation::NoEntry));
            }
            if !may_write_entry(c, &by, id)? {
                return Ok(Checked::Denied);
            }
            let existing: Option<Vec<u8>> = c
                .prepare_cached("SELECT lookup FROM associations WHERE vault_id = ?1 AND name = ?2")
                .and_then(|mut st| st.query_row(params![id.0, a.name], |r| r.get(0)).optional())
                .map_err(backend)?;
            if existing.as_deref() == Some(a.lookup.as_slice()) {
                return Ok(Checked::Done(PutAssociation::Identical));
            }
            exec(c, sql::PUT_ASSOCIATION.sqlite(), params![id.0, a.name, a.value_type.as_str(), a.key_id, a.sealed, &a.lookup[..]])?;
            append_event_tx(c, &event)?;
            Ok(Checked::Done(PutAssociation::Stored))
        }))
    }

    fn dissociate(
        &self,
        id: VaultId,
        name: Option<String>,
        lookup: Option<[u8; 32]>,
        by: Writer,
        event: Event,
    ) -> StoreFuture<'_, Checked<u64>> {
        Box::pin(self.write(move |c| {
            if !may_write_entry(c, &by, id)? {
                return Ok(Checked::Denied);
            }
            let n = exec(
                c,
                "DELETE FROM associations WHERE vault_id = ?1 AND (?2 IS NULL OR name = ?2) AND (?3 IS NULL OR lookup = ?3)",
                params![id.0, name, lookup.as_ref().map(|l| &l[..])],
            )? as u64;
            if n > 0 {
                append_event_tx(c, &event)?;
            }
            Ok(Checked::Done(n))
        }))
    }

    fn lookup_by_association(&self, name: String, lookup: Option<[u8; 32]>) -> StoreFuture<'_, Vec<(VaultId, Vec<FolderPath>)>> {
        Box::pin(self.read(move |c| {
            let mut st = c
                .prepare_cached(
                    "SELECT a.vault_id, o.owner FROM associations a LEFT JOIN vault_owners o ON o.vault_id = a.vault_id \
                     WHERE a.name = ?1 AND (?2 IS NULL OR a.lookup = ?2) ORDER BY a.vault_id, o.owner_key",
                )
                .map_err(backend)?;
            let rows = st
                .query_map(params![name, lookup.as_ref().map(|l| &l[..])], |r| Ok((VaultId(r.get(0)?), r.get::<_, Option<String>>(1)?)))
                .map_err(backend)?;
            group_owners(rows.map(|r| r.map_err(backend)))
        }))
    }

    fn sealed_on_old_keys(&self, key_name: String, current: i64, limit: u32) -> StoreFuture<'_, Vec<SealedItem>> {
        Box::pin(self.read(move |c| {
            let mut out = Vec::new();
            let mut st = c
                .prepare(
                    "SELECT vault_id, key_id, sealed FROM vault_entries WHERE key_id <> ?1 AND lower(key_name) = lower(?3) ORDER BY vault_id LIMIT ?2",
                )
                .map_err(backend)?;
            let rows = st
                .query_map(params![current, limit, key_name], |r| {
                    Ok(SealedItem::Data { vault_id: VaultId(r.get(0)?), key_id: r.get(1)?, sealed: r.get(2)? })
                })
                .map_err(backend)?;
            for r in rows {
                out.push(r.map_err(backend)?);
            }
            let left = i64::from(limit) - out.len() as i64;
            if left > 0 {
                let mut st = c
                    .prepare(
                        "SELECT a.vault_id, a.name, a.value_type, a.key_id, a.sealed FROM associations a \
                         JOIN vault_entries e ON e.vault_id = a.vault_id \
                         WHERE a.key_id <> ?1 AND lower(e.key_name) = lower(?3) ORDER BY a.vault_id, a.name LIMIT ?2",
                    )
                    .map_err(backend)?;
                let rows = st
                    .query_map(params![current, left, key_name], |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, String>(2)?,
                            r.get::<_, i64>(3)?,
                            r.get::<_, Vec<u8>>(4)?,
                        ))
                    })
                    .map_err(backend)?;
                for r in rows {
                    let (v, name, t, key_id, sealed) = r.map_err(backend)?;
                    out.push(SealedItem::Association { vault_id: VaultId(v), name, value_type: stored_value_type(&t)?, key_id, sealed });
                }
            }
            Ok(out)
        }))
    }

    fn entries_under_key(&self, key_name: String, after: VaultId, limit: u32) -> StoreFuture<'_, Vec<SealedItem>> {
        Box::pin(self.read(move |c| {
            let mut st = c
                .prepare_cached(
                    "SELECT vault_id, key_id, sealed FROM vault_entries WHERE lower(key_name) = lower(?1) AND vault_id > ?2 ORDER BY vault_id LIMIT ?3",
                )
                .map_err(backend)?;
            let rows = st
                .query_map(params![key_name, after.0, limit], |r| {
                    Ok(SealedItem::Data { vault_id: VaultId(r.get(0)?), key_id: r.get(1)?, sealed: r.get(2)? })
                })
                .map_err(backend)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(backend)
        }))
    }

    fn reseal(&self, items: Vec<(SealedItem, i64, Vec<u8>)>, event: Event) -> StoreFuture<'_, u64> {
        Box::pin(self.write(move |c| {
            let mut n = 0u64;
            for (item, new_key, new_sealed) in &items {
                n += match item {
                    SealedItem::Data { vault_id, key_id, sealed } => {
                        exec(c, sql::RESEAL_DATA.sqlite(), params![new_key, new_sealed, vault_id.0, key_id, sealed])?
                    }
                    SealedItem::Association { vault_id, name, key_id, sealed, .. } => {
                        exec(c, sql::RESEAL_ASSOCIATION.sqlite(), params![new_key, new_sealed, vault_id.0, name, key_id, sealed])?
                    }
                } as u64;
            }
            if n > 0 {
                append_event_tx(c, &event)?;
            }
            Ok(n)
        }))
    }

    fn rekey_entry(
        &self,
        id: VaultId,
        key_name: String,
        items: Vec<(SealedItem, i64, Vec<u8>)>,
        by: Option<Writer>,
        event: Event,
    ) -> StoreFuture<'_, Checked<bool>> {
        Box::pin(self.write(move |c| {
            if let Some(by) = &by
                && !may_write_entry(c, by, id)?
            {
                return Ok(Checked::Denied);
            }
            // Everything read is checked before anything is written (the
            // writer thread is the only writer), so a value written since it
            // was read is never overwritten, nor one added left behind.
            let (mut data, mut associations) = (None, 0i64);
            for (item, new_key, new_sealed) in &items {
                match item {
                    SealedItem::Data { vault_id, key_id, sealed } if *vault_id == id => data = Some((key_id, sealed, new_key, new_sealed)),
                    SealedItem::Association { vault_id, name, key_id, sealed, .. } if *vault_id == id => {
                        if !check(c, sql::ASSOCIATION_UNCHANGED.sqlite(), params![id.0, name, key_id, sealed])? {
                            return Ok(Checked::Done(false));
                        }
                        associations += 1;
                    }
                    _ => return Err(StoreError::Corrupt("an item of another entry in a key move".into())),
                }
            }
            let Some((key_id, sealed, new_key, new_sealed)) = data else { return Ok(Checked::Done(false)) };
            let count: i64 = c.query_row(sql::ASSOCIATION_COUNT.sqlite(), params![id.0], |r| r.get(0)).map_err(backend)?;
            if count != associations
                || exec(c, sql::REKEY_DATA.sqlite(), params![key_name, new_key, new_sealed, id.0, key_id, sealed])? != 1
            {
                return Ok(Checked::Done(false));
            }
            for (item, new_key, new_sealed) in &items {
                if let SealedItem::Association { name, key_id, sealed, .. } = item {
                    exec(c, sql::RESEAL_ASSOCIATION.sqlite(), params![new_key, new_sealed, id.0, name, key_id, sealed])?;
                }
            }
            append_event_tx(c, &event)?;
            Ok(Checked::Done(true))
        }))
    }
}
