//! The vault's SQL for SQLite. Each function runs inside one transaction:
//! the writer's batch transaction (under a savepoint) for writes, a reading
//! connection for reads.

use rusqlite::{Connection, OptionalExtension, Row, params};

use strongroom_core::event::Event;
use strongroom_core::identity::UserId;
use strongroom_core::vault::{FolderPath, Rights, VaultId};

use super::writer::backend;
use super::{append_event_tx, is_unique_violation, time_col};
use crate::{
    AddOwner, DataKeyRecord, OwnerRemoval, PutAssociation, SealedItem, StoreError, StoreResult, StoredAssociation, VaultEntry, VaultFilter,
    deleted_event, stored_folder, stored_hash32, stored_value_type,
};

pub(super) fn create_folders(c: &Connection, lineage: &[FolderPath], event: &Event) -> StoreResult<bool> {
    let mut last_new = false;
    for f in lineage {
        let n = c
            .execute(
                "INSERT INTO folders (path_key, path, created_at) VALUES (?1, ?2, ?3) ON CONFLICT (path_key) DO NOTHING",
                params![f.key(), f.as_str(), event.at.millis()],
            )
            .map_err(backend)?;
        last_new = n == 1;
    }
    if last_new {
        append_event_tx(c, event)?;
    }
    Ok(last_new)
}

pub(super) fn folders(c: &Connection) -> StoreResult<Vec<FolderPath>> {
    let mut st = c.prepare("SELECT path FROM folders ORDER BY path_key").map_err(backend)?;
    let rows = st.query_map([], |r| r.get::<_, String>(0)).map_err(backend)?;
    rows.map(|r| r.map_err(backend).and_then(|p| stored_folder(&p))).collect()
}

pub(super) fn folder_exists(c: &Connection, key: &str) -> StoreResult<bool> {
    c.query_row("SELECT 1 FROM folders WHERE path_key = ?1", [key], |_| Ok(())).optional().map(|o| o.is_some()).map_err(backend)
}

pub(super) fn set_rights(c: &Connection, f: &FolderPath, user: &UserId, rights: Rights, event: &Event) -> StoreResult<()> {
    if rights == Rights::NONE {
        c.execute("DELETE FROM folder_rights WHERE path_key = ?1 AND user_id = ?2", params![f.key(), user.as_str()]).map_err(backend)?;
    } else {
        c.execute(
            "INSERT INTO folder_rights (path_key, user_id, rights) VALUES (?1, ?2, ?3) \
             ON CONFLICT (path_key, user_id) DO UPDATE SET rights = excluded.rights",
            params![f.key(), user.as_str(), i64::from(rights.bits())],
        )
        .map_err(backend)?;
    }
    append_event_tx(c, event).map(drop)
}

fn rights_col(r: &Row<'_>, idx: usize) -> rusqlite::Result<Rights> {
    Ok(Rights::from_bits(u32::try_from(r.get::<_, i64>(idx)?).unwrap_or(0)))
}

pub(super) fn rights_of(c: &Connection, user: &UserId) -> StoreResult<Vec<(String, Rights)>> {
    let mut st = c.prepare_cached("SELECT path_key, rights FROM folder_rights WHERE user_id = ?1").map_err(backend)?;
    let rows = st.query_map([user.as_str()], |r| Ok((r.get::<_, String>(0)?, rights_col(r, 1)?))).map_err(backend)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(backend)
}

pub(super) fn all_rights(c: &Connection) -> StoreResult<Vec<(FolderPath, String, Rights)>> {
    let mut st = c
        .prepare(
            "SELECT f.path, u.name, r.rights FROM folder_rights r JOIN folders f ON f.path_key = r.path_key \
             JOIN users u ON u.id = r.user_id ORDER BY f.path_key, u.name_key",
        )
        .map_err(backend)?;
    let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, rights_col(r, 2)?))).map_err(backend)?;
    rows.map(|r| {
        let (p, u, rights) = r.map_err(backend)?;
        Ok((stored_folder(&p)?, u, rights))
    })
    .collect()
}

pub(super) fn data_keys(c: &Connection) -> StoreResult<Vec<DataKeyRecord>> {
    let mut st = c.prepare_cached("SELECT id, wrapped, created_at FROM data_keys ORDER BY id").map_err(backend)?;
    let rows =
        st.query_map([], |r| Ok(DataKeyRecord { id: r.get(0)?, wrapped: r.get(1)?, created_at: time_col(r, 2)? })).map_err(backend)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(backend)
}

pub(super) fn insert_data_key(c: &Connection, k: &DataKeyRecord, event: &Event) -> StoreResult<()> {
    match c.execute("INSERT INTO data_keys (id, wrapped, created_at) VALUES (?1, ?2, ?3)", params![k.id, k.wrapped, k.created_at.millis()])
    {
        Err(e) if is_unique_violation(&e) => Err(StoreError::Conflict),
        Err(e) => Err(backend(e)),
        Ok(_) => append_event_tx(c, event).map(drop),
    }
}

pub(super) fn allocate_vault_id(c: &Connection) -> StoreResult<VaultId> {
    c.query_row("UPDATE vault_id_seq SET next = next + 1 WHERE id = 1 RETURNING next - 1", [], |r| r.get(0)).map(VaultId).map_err(backend)
}

pub(super) fn insert_entry(c: &Connection, e: &VaultEntry, event: &Event) -> StoreResult<()> {
    c.execute(
        "INSERT INTO vault_entries (vault_id, vault_type, key_name, key_id, sealed, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![e.vault_id.0, e.vault_type, e.key_name, e.key_id, e.sealed, e.created_at.millis()],
    )
    .map_err(|err| if is_unique_violation(&err) { StoreError::Conflict } else { backend(err) })?;
    for o in &e.owners {
        c.execute(
            "INSERT INTO vault_owners (vault_id, owner_key, owner) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
            params![e.vault_id.0, o.key(), o.as_str()],
        )
        .map_err(backend)?;
    }
    append_event_tx(c, event).map(drop)
}

fn owners(c: &Connection, id: VaultId) -> StoreResult<Vec<FolderPath>> {
    let mut st = c.prepare_cached("SELECT owner FROM vault_owners WHERE vault_id = ?1 ORDER BY owner_key").map_err(backend)?;
    let rows = st.query_map([id.0], |r| r.get::<_, String>(0)).map_err(backend)?;
    rows.map(|r| r.map_err(backend).and_then(|p| stored_folder(&p))).collect()
}

pub(super) fn entry(c: &Connection, id: VaultId) -> StoreResult<Option<VaultEntry>> {
    let found = c
        .query_row("SELECT vault_type, key_name, key_id, sealed, created_at FROM vault_entries WHERE vault_id = ?1", [id.0], |r| {
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

pub(super) fn owners_of(c: &Connection, ids: &[VaultId]) -> StoreResult<Vec<(VaultId, Vec<FolderPath>)>> {
    let mut out = Vec::with_capacity(ids.len());
    let mut exists = c.prepare_cached("SELECT 1 FROM vault_entries WHERE vault_id = ?1").map_err(backend)?;
    for id in ids {
        if exists.query_row([id.0], |_| Ok(())).optional().map_err(backend)?.is_some() {
            out.push((*id, owners(c, *id)?));
        }
    }
    Ok(out)
}

pub(super) fn vault_ids(c: &Connection, f: &VaultFilter) -> StoreResult<Vec<VaultId>> {
    let mut st = c
        .prepare(
            "SELECT e.vault_id FROM vault_entries e \
             WHERE (?1 IS NULL OR e.vault_type = ?1) \
             AND (?2 IS NULL OR EXISTS (SELECT 1 FROM vault_owners o WHERE o.vault_id = e.vault_id AND o.owner_key = ?2)) \
             AND (NOT ?3 OR NOT EXISTS (SELECT 1 FROM vault_owners o WHERE o.vault_id = e.vault_id)) \
             ORDER BY e.vault_id",
        )
        .map_err(backend)?;
    let rows = st.query_map(params![f.vault_type, f.owner_key, f.orphans_only], |r| r.get(0).map(VaultId)).map_err(backend)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(backend)
}

pub(super) fn mutate_entry(c: &Connection, id: VaultId, vault_type: i32, event: &Event) -> StoreResult<bool> {
    let n = c.execute("UPDATE vault_entries SET vault_type = ?1 WHERE vault_id = ?2", params![vault_type, id.0]).map_err(backend)?;
    if n == 1 {
        append_event_tx(c, event)?;
    }
    Ok(n == 1)
}

pub(super) fn add_owner(c: &Connection, id: VaultId, owner: &FolderPath, event: &Event) -> StoreResult<AddOwner> {
    if c.query_row("SELECT 1 FROM vault_entries WHERE vault_id = ?1", [id.0], |_| Ok(())).optional().map_err(backend)?.is_none() {
        return Ok(AddOwner::NoEntry);
    }
    let n = c
        .execute(
            "INSERT INTO vault_owners (vault_id, owner_key, owner) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
            params![id.0, owner.key(), owner.as_str()],
        )
        .map_err(backend)?;
    if n == 0 {
        return Ok(AddOwner::AlreadyOwner);
    }
    append_event_tx(c, event)?;
    Ok(AddOwner::Added)
}

pub(super) fn remove_owner(c: &Connection, id: Option<VaultId>, owner: &FolderPath, event: &Event) -> StoreResult<OwnerRemoval> {
    let affected: Vec<VaultId> = {
        let mut st = c
            .prepare("SELECT vault_id FROM vault_owners WHERE owner_key = ?1 AND (?2 IS NULL OR vault_id = ?2) ORDER BY vault_id")
            .map_err(backend)?;
        let rows = st.query_map(params![owner.key(), id.map(|v| v.0)], |r| r.get(0).map(VaultId)).map_err(backend)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(backend)?
    };
    let mut out = OwnerRemoval::default();
    for v in affected {
        out.removed += c
            .execute("DELETE FROM vault_owners WHERE vault_id = ?1 AND owner_key = ?2", params![v.0, owner.key()])
            .map_err(backend)? as u64;
        let left: i64 = c.query_row("SELECT count(*) FROM vault_owners WHERE vault_id = ?1", [v.0], |r| r.get(0)).map_err(backend)?;
        if left == 0 {
            c.execute("DELETE FROM vault_entries WHERE vault_id = ?1", [v.0]).map_err(backend)?;
            out.deleted.push(v);
        }
    }
    if out.removed > 0 {
        append_event_tx(c, event)?;
        for v in &out.deleted {
            append_event_tx(c, &deleted_event(event, *v))?;
        }
    }
    Ok(out)
}

pub(super) fn key_names_in_use(c: &Connection) -> StoreResult<Vec<String>> {
    let mut st = c.prepare("SELECT DISTINCT key_name FROM vault_entries ORDER BY key_name").map_err(backend)?;
    let rows = st.query_map([], |r| r.get(0)).map_err(backend)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(backend)
}

pub(super) fn associations(c: &Connection, id: VaultId) -> StoreResult<Vec<StoredAssociation>> {
    let mut st = c
        .prepare_cached("SELECT name, value_type, key_id, sealed, lookup FROM associations WHERE vault_id = ?1 ORDER BY name")
        .map_err(backend)?;
    let rows = st
        .query_map([id.0], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?, r.get::<_, Vec<u8>>(3)?, r.get::<_, Vec<u8>>(4)?))
        })
        .map_err(backend)?;
    rows.map(|r| {
        let (name, t, key_id, sealed, lookup) = r.map_err(backend)?;
        Ok(StoredAssociation { name, value_type: stored_value_type(&t)?, key_id, sealed, lookup: stored_hash32(lookup)? })
    })
    .collect()
}

pub(super) fn put_association(c: &Connection, id: VaultId, a: &StoredAssociation, event: &Event) -> StoreResult<PutAssociation> {
    if c.query_row("SELECT 1 FROM vault_entries WHERE vault_id = ?1", [id.0], |_| Ok(())).optional().map_err(backend)?.is_none() {
        return Ok(PutAssociation::NoEntry);
    }
    let existing: Option<Vec<u8>> = c
        .query_row("SELECT lookup FROM associations WHERE vault_id = ?1 AND name = ?2", params![id.0, a.name], |r| r.get(0))
        .optional()
        .map_err(backend)?;
    if existing.as_deref() == Some(a.lookup.as_slice()) {
        return Ok(PutAssociation::Identical);
    }
    c.execute(
        "INSERT INTO associations (vault_id, name, value_type, key_id, sealed, lookup) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
         ON CONFLICT (vault_id, name) DO UPDATE SET value_type = excluded.value_type, key_id = excluded.key_id, \
         sealed = excluded.sealed, lookup = excluded.lookup",
        params![id.0, a.name, a.value_type.as_str(), a.key_id, a.sealed, &a.lookup[..]],
    )
    .map_err(backend)?;
    append_event_tx(c, event)?;
    Ok(PutAssociation::Stored)
}

pub(super) fn dissociate(c: &Connection, id: VaultId, name: Option<&str>, lookup: Option<&[u8; 32]>, event: &Event) -> StoreResult<u64> {
    let n = c
        .execute(
            "DELETE FROM associations WHERE vault_id = ?1 AND (?2 IS NULL OR name = ?2) AND (?3 IS NULL OR lookup = ?3)",
            params![id.0, name, lookup.map(|l| &l[..])],
        )
        .map_err(backend)? as u64;
    if n > 0 {
        append_event_tx(c, event)?;
    }
    Ok(n)
}

pub(super) fn lookup_by_association(c: &Connection, name: &str, lookup: Option<&[u8; 32]>) -> StoreResult<Vec<VaultId>> {
    let mut st = c
        .prepare_cached("SELECT vault_id FROM associations WHERE name = ?1 AND (?2 IS NULL OR lookup = ?2) ORDER BY vault_id")
        .map_err(backend)?;
    let rows = st.query_map(params![name, lookup.map(|l| &l[..])], |r| r.get(0).map(VaultId)).map_err(backend)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(backend)
}

pub(super) fn sealed_on_old_keys(c: &Connection, current: i64, limit: u32) -> StoreResult<Vec<SealedItem>> {
    let mut out = Vec::new();
    let mut st =
        c.prepare("SELECT vault_id, key_id, sealed FROM vault_entries WHERE key_id <> ?1 ORDER BY vault_id LIMIT ?2").map_err(backend)?;
    let rows = st
        .query_map(params![current, limit], |r| Ok(SealedItem::Data { vault_id: VaultId(r.get(0)?), key_id: r.get(1)?, sealed: r.get(2)? }))
        .map_err(backend)?;
    for r in rows {
        out.push(r.map_err(backend)?);
    }
    let left = i64::from(limit) - out.len() as i64;
    if left > 0 {
        let mut st = c
            .prepare(
                "SELECT vault_id, name, value_type, key_id, sealed FROM associations WHERE key_id <> ?1 ORDER BY vault_id, name LIMIT ?2",
            )
            .map_err(backend)?;
        let rows = st
            .query_map(params![current, left], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, i64>(3)?, r.get::<_, Vec<u8>>(4)?))
            })
            .map_err(backend)?;
        for r in rows {
            let (v, name, t, key_id, sealed) = r.map_err(backend)?;
            out.push(SealedItem::Association { vault_id: VaultId(v), name, value_type: stored_value_type(&t)?, key_id, sealed });
        }
    }
    Ok(out)
}

pub(super) fn reseal(c: &Connection, items: &[(SealedItem, i64, Vec<u8>)], event: &Event) -> StoreResult<u64> {
    let mut n = 0u64;
    for (item, new_key, new_sealed) in items {
        n += match item {
            SealedItem::Data { vault_id, key_id, .. } => c.execute(
                "UPDATE vault_entries SET key_id = ?1, sealed = ?2 WHERE vault_id = ?3 AND key_id = ?4",
                params![new_key, new_sealed, vault_id.0, key_id],
            ),
            SealedItem::Association { vault_id, name, key_id, .. } => c.execute(
                "UPDATE associations SET key_id = ?1, sealed = ?2 WHERE vault_id = ?3 AND name = ?4 AND key_id = ?5",
                params![new_key, new_sealed, vault_id.0, name, key_id],
            ),
        }
        .map_err(backend)? as u64;
    }
    if n > 0 {
        append_event_tx(c, event)?;
    }
    Ok(n)
}
