//! What administrators manage, on PostgreSQL: users, integrations, grants,
//! folders and rights.

use strongroom_core::event::Event;
use strongroom_core::identity::{User, UserId};
use strongroom_core::integration::Integration;
use strongroom_core::time::UnixTime;
use strongroom_core::vault::{FolderPath, Rights};

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::{
    INTEGRATION_COLS, PgStore, USER_COLS, append_event, exec, get, grant_from_row, integration_from_row, integration_values, load_allowed,
    pg, placeholders, query, query_one, query_opt, save_allowed, time, user_from_row,
};
use crate::sql::{self, GRANT_COL_COUNT, GRANT_COLS};
use crate::{AdminStore, Deletion, FolderDeletion, GrantSummary, StoreFuture, StoreResult, stored_folder, stored_hash32};
use strongroom_core::vault::VaultId;

/// Revokes every grant matching `column = value` that is not revoked yet (its
/// access tokens deleted, its refresh tokens kept as tombstones), each with a
/// `grant.revoked` event derived from `deletion`; how many.
async fn end_grants_where(tx: &impl GenericClient, column: &str, value: &str, deletion: &Event) -> StoreResult<u64> {
    let rows =
        query(tx, &format!("SELECT id FROM grants WHERE {column} = $1 AND revoked_at IS NULL ORDER BY created_at, id"), &[&value]).await?;
    for row in &rows {
        let id: String = get(row, 0)?;
        exec(tx, crate::sql::REVOKE_GRANT.postgres(), &[&deletion.at.millis(), &id.as_str()]).await?;
        exec(tx, "DELETE FROM access_tokens WHERE grant_id = $1", &[&id.as_str()]).await?;
        append_event(tx, &crate::ended_grant_event(deletion, &id)).await?;
    }
    Ok(rows.len() as u64)
}

/// `$1`'s folder and every folder below it (`$2` is the key with a trailing backslash).
const SUBTREE: &str = "(path_key = $1 OR substr(path_key, 1, length($2)) = $2)";

async fn count(tx: &impl GenericClient, sql: &str, params: &[super::Param<'_>]) -> StoreResult<u64> {
    let n: i64 = get(&query_one(tx, sql, params).await?, 0)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

impl AdminStore for PgStore {
    fn delete_user(&self, name: String, mut event: Event) -> StoreFuture<'_, Option<Deletion>> {
        in_tx!(self, |tx| {
            async {
                let Some(row) = query_opt(&tx, "SELECT id FROM users WHERE name_key = $1", &[&name.to_lowercase()]).await? else {
                    return Ok(None);
                };
                let id: String = get(&row, 0)?;
                let grants_ended = end_grants_where(&tx, "user_id", &id, &event).await?;
                let codes_dropped =
                    exec(&tx, "DELETE FROM device_codes WHERE user_id = $1 AND state = 'approved'", &[&id.as_str()]).await?;
                let rights_removed = count(&tx, "SELECT count(*) FROM folder_rights WHERE user_id = $1", &[&id.as_str()]).await?;
                exec(&tx, "DELETE FROM users WHERE id = $1", &[&id.as_str()]).await?;
                // A later user of the name inherits no lock and no known address.
                exec(&tx, sql::UNLOCK.postgres(), &[&name.to_lowercase()]).await?;
                exec(&tx, sql::FORGET_ORIGINS.postgres(), &[&name.to_lowercase()]).await?;
                let d = Deletion { grants_ended, codes_dropped, rights_removed };
                event.detail = d.detail();
                append_event(&tx, &event).await?;
                Ok(Some(d))
            }
            .await
        })
    }
    fn delete_integration(&self, client_id: String, mut event: Event) -> StoreFuture<'_, Option<Deletion>> {
        in_tx!(self, |tx| {
            async {
                if count(&tx, "SELECT count(*) FROM integrations WHERE client_id = $1", &[&client_id.as_str()]).await? == 0 {
                    return Ok(None);
                }
                let grants_ended = end_grants_where(&tx, "client_id", &client_id, &event).await?;
                let codes_dropped =
                    exec(&tx, "DELETE FROM device_codes WHERE client_id = $1 AND state IN ('pending', 'approved')", &[&client_id.as_str()])
                        .await?;
                exec(&tx, "DELETE FROM integrations WHERE client_id = $1", &[&client_id.as_str()]).await?;
                let d = Deletion { grants_ended, codes_dropped, rights_removed: 0 };
                event.detail = d.detail();
                append_event(&tx, &event).await?;
                Ok(Some(d))
            }
            .await
        })
    }
    fn delete_folder(&self, folder: FolderPath, recursive: bool, mut event: Event) -> StoreFuture<'_, FolderDeletion> {
        in_tx!(self, |tx| {
            async {
                let key = folder.key().to_owned();
                let below = format!("{key}\\");
                let (k, b) = (key.as_str(), below.as_str());
                if count(&tx, "SELECT count(*) FROM folders WHERE path_key = $1", &[&k]).await? == 0 {
                    return Ok(FolderDeletion::NotFound);
                }
                let folders = count(&tx, &format!("SELECT count(*) FROM folders WHERE {SUBTREE}"), &[&k, &b]).await?;
                let owned: Vec<i64> = query(
                    &tx,
                    &format!(
                        "SELECT DISTINCT vault_id FROM vault_owners WHERE owner_key IN (SELECT path_key FROM folders WHERE {SUBTREE}) ORDER BY vault_id"
                    ),
                    &[&k, &b],
                )
                .await?
                .iter()
                .map(|r| get(r, 0))
                .collect::<StoreResult<_>>()?;
                if !recursive && (folders > 1 || !owned.is_empty()) {
                    return Ok(FolderDeletion::NotEmpty { subfolders: folders - 1, entries: owned.len() as u64 });
                }
                let owners_removed = exec(
                    &tx,
                    &format!("DELETE FROM vault_owners WHERE owner_key IN (SELECT path_key FROM folders WHERE {SUBTREE})"),
                    &[&k, &b],
                )
                .await?;
                let mut entries_deleted = Vec::new();
                for id in owned {
                    if count(&tx, "SELECT count(*) FROM vault_owners WHERE vault_id = $1", &[&id]).await? == 0 {
                        exec(&tx, "DELETE FROM vault_entries WHERE vault_id = $1", &[&id]).await?;
                        append_event(&tx, &crate::orphaned_entry_event(&event, VaultId(id))).await?;
                        entries_deleted.push(VaultId(id));
                    }
                }
                let rights_removed = count(
                    &tx,
                    &format!("SELECT count(*) FROM folder_rights WHERE path_key IN (SELECT path_key FROM folders WHERE {SUBTREE})"),
                    &[&k, &b],
                )
                .await?;
                exec(&tx, &format!("DELETE FROM folders WHERE {SUBTREE}"), &[&k, &b]).await?;
                let done = FolderDeletion::Deleted { folders, owners_removed, entries_deleted, rights_removed };
                event.detail = crate::folder_deletion_detail(recursive, &done);
                append_event(&tx, &event).await?;
                Ok(done)
            }
            .await
        })
    }

    fn record_key_check(&self, check: [u8; 32], event: Event) -> StoreFuture<'_, Option<[u8; 32]>> {
        in_tx!(self, |tx| {
            async {
                let n = tx
                    .execute(
                        "INSERT INTO master_key_check (id, digest, recorded_at) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING",
                        &[&check.as_slice(), &event.at.millis()],
                    )
                    .await
                    .map_err(pg)?;
                if n == 1 {
                    append_event(&tx, &event).await?;
                    return Ok(None);
                }
                let row = query_one(&tx, "SELECT digest FROM master_key_check WHERE id = 1", &[]).await?;
                stored_hash32(get(&row, 0)?).map(Some)
            }
            .await
        })
    }
    fn create_user(&self, user: User, password_hash: String, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| {
            async {
                tx.execute(
                    "INSERT INTO users (id, name, name_key, password_hash, disabled, master_admin, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    &[
                        &user.id.as_str(),
                        &user.name,
                        &user.name.to_lowercase(),
                        &password_hash,
                        &user.disabled,
                        &user.master_admin,
                        &user.created_at.millis(),
                    ],
                )
                .await
                .map_err(pg)?;
                append_event(&tx, &event).await.map(drop)
            }
            .await
        })
    }
    fn user_by_id(&self, id: UserId) -> StoreFuture<'_, Option<User>> {
        on_client!(self, |c| {
            let row = c.query_opt(&format!("SELECT {USER_COLS} FROM users WHERE id = $1"), &[&id.as_str()]).await.map_err(pg)?;
            row.map(|r| user_from_row(&r)).transpose()
        })
    }
    fn list_users(&self) -> StoreFuture<'_, Vec<User>> {
        on_client!(self, |c| {
            let rows = c.query(&format!("SELECT {USER_COLS} FROM users ORDER BY name_key"), &[]).await.map_err(pg)?;
            rows.iter().map(user_from_row).collect()
        })
    }
    fn set_user_disabled(&self, name: String, disabled: bool, event: Event) -> StoreFuture<'_, Option<u64>> {
        in_tx!(self, |tx| {
            async {
                let Some(user_id) = user_id_of(&tx, &name).await? else { return Ok(None) };
                exec(&tx, "UPDATE users SET disabled = $1 WHERE id = $2", &[&disabled, &user_id]).await?;
                let ended = if disabled { end_grants(&tx, &user_id, event.at, true).await? } else { 0 };
                append_event(&tx, &crate::with_grants_ended(event, ended)).await?;
                Ok(Some(ended))
            }
            .await
        })
    }
    fn set_user_password(&self, name: String, password_hash: String, end: bool, event: Event) -> StoreFuture<'_, Option<u64>> {
        in_tx!(self, |tx| {
            async {
                let Some(user_id) = user_id_of(&tx, &name).await? else { return Ok(None) };
                exec(&tx, "UPDATE users SET password_hash = $1 WHERE id = $2", &[&password_hash, &user_id]).await?;
                let ended = if end { end_grants(&tx, &user_id, event.at, false).await? } else { 0 };
                append_event(&tx, &crate::with_grants_ended(event, ended)).await?;
                Ok(Some(ended))
            }
            .await
        })
    }
    fn revoke_user_grants(&self, name: String, event: Event) -> StoreFuture<'_, Option<u64>> {
        in_tx!(self, |tx| {
            async {
                let Some(user_id) = user_id_of(&tx, &name).await? else { return Ok(None) };
                let ended = end_grants(&tx, &user_id, event.at, false).await?;
                append_event(&tx, &crate::with_grants_ended(event, ended)).await?;
                Ok(Some(ended))
            }
            .await
        })
    }
    fn locks(&self, now: UnixTime) -> StoreFuture<'_, Vec<(String, UnixTime)>> {
        on_client!(self, |c| {
            let rows = query(&c, sql::LOCKS.postgres(), &[&now.millis()]).await?;
            rows.iter().map(|r| Ok((get(r, 0)?, time(r, 1)?))).collect()
        })
    }
    fn unlock(&self, name_key: String, event: Event) -> StoreFuture<'_, u64> {
        in_tx!(self, |tx| {
            async {
                let n = exec(&tx, sql::UNLOCK.postgres(), &[&name_key]).await?;
                append_event(&tx, &event).await?;
                Ok(n)
            }
            .await
        })
    }
    fn create_integration(&self, i: Integration, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| {
            async {
                let (created_at, scope) = (event.at.millis(), i.max_scope.to_string());
                let mut values = integration_values(&i, &scope);
                values.push(&created_at);
                tx.execute(
                    &format!("INSERT INTO integrations ({INTEGRATION_COLS}, created_at) VALUES ({})", placeholders(values.len())),
                    &values,
                )
                .await
                .map_err(pg)?;
                save_allowed(&tx, &i).await?;
                append_event(&tx, &event).await.map(drop)
            }
            .await
        })
    }
    fn update_integration(&self, i: Integration, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |tx| {
            async {
                let n = tx
                    .execute(
                        "UPDATE integrations SET name = $2, max_scope = $3, allow_all_users = $4, allow_device = $5, allow_password = $6, \
                         access_validity = $7, grant_validity = $8, refreshable = $9, device_code_validity = $10, poll_interval = $11, disabled = $12, retry_window = $13 \
                         WHERE client_id = $1",
                        &integration_values(&i, &i.max_scope.to_string()),
                    )
                    .await
                    .map_err(pg)?;
                if n == 1 {
                    save_allowed(&tx, &i).await?;
                    append_event(&tx, &event).await?;
                }
                Ok(n == 1)
            }
            .await
        })
    }
    fn integration(&self, client_id: String) -> StoreFuture<'_, Option<Integration>> {
        on_client!(self, |c| {
            let row = c
                .query_opt(&format!("SELECT {INTEGRATION_COLS} FROM integrations WHERE client_id = $1"), &[&client_id])
                .await
                .map_err(pg)?;
            match row {
                None => Ok(None),
                Some(r) => {
                    let mut i = integration_from_row(&r)?;
                    load_allowed(&c, &mut i).await?;
                    Ok(Some(i))
                }
            }
        })
    }
    fn list_integrations(&self) -> StoreFuture<'_, Vec<Integration>> {
        on_client!(self, |c| {
            let rows = c.query(&format!("SELECT {INTEGRATION_COLS} FROM integrations ORDER BY client_id"), &[]).await.map_err(pg)?;
            let mut out = Vec::with_capacity(rows.len());
            for r in &rows {
                let mut i = integration_from_row(r)?;
                load_allowed(&c, &mut i).await?;
                out.push(i);
            }
            Ok(out)
        })
    }
    fn list_grants(&self, include_ended: bool, now: UnixTime) -> StoreFuture<'_, Vec<GrantSummary>> {
        on_client!(self, |c| {
            let rows = c
                .query(
                    &format!(
                        "SELECT {GRANT_COLS}, coalesce(u.name, '') FROM grants g LEFT JOIN users u ON u.id = g.user_id \
                         WHERE $1 OR (g.revoked_at IS NULL AND g.refresh_until > $2) ORDER BY g.created_at, g.id"
                    ),
                    &[&include_ended, &now.millis()],
                )
                .await
                .map_err(pg)?;
            rows.iter().map(|r| Ok(GrantSummary { grant: grant_from_row(r, 0)?, user_name: get(r, GRANT_COL_COUNT)? })).collect()
        })
    }
    fn create_folders(&self, lineage: Vec<FolderPath>, event: Event) -> StoreFuture<'_, bool> {
        in_tx!(self, |tx| {
            async {
                let mut last_new = false;
                for f in &lineage {
                    let n = exec(
                        &tx,
                        "INSERT INTO folders (path_key, path, created_at) VALUES ($1, $2, $3) ON CONFLICT (path_key) DO NOTHING",
                        &[&f.key(), &f.as_str(), &event.at.millis()],
                    )
                    .await?;
                    last_new = n == 1;
                }
                if last_new {
                    append_event(&tx, &event).await?;
                }
                Ok(last_new)
            }
            .await
        })
    }
    fn folders(&self) -> StoreFuture<'_, Vec<FolderPath>> {
        on_client!(self, |c| {
            let rows = query(&c, "SELECT path FROM folders ORDER BY path_key", &[]).await?;
            rows.iter().map(|r| stored_folder(&get::<String>(r, 0)?)).collect()
        })
    }
    fn folder_exists(&self, key: String) -> StoreFuture<'_, bool> {
        on_client!(self, |c| { folder_exists(&c, &key).await })
    }
    fn set_rights(&self, folder: FolderPath, user: UserId, rights: Rights, event: Event) -> StoreFuture<'_, ()> {
        in_tx!(self, |tx| {
            async {
                if rights == Rights::NONE {
                    exec(&tx, "DELETE FROM folder_rights WHERE path_key = $1 AND user_id = $2", &[&folder.key(), &user.as_str()]).await?;
                } else {
                    exec(
                        &tx,
                        "INSERT INTO folder_rights (path_key, user_id, rights) VALUES ($1, $2, $3) \
                         ON CONFLICT (path_key, user_id) DO UPDATE SET rights = excluded.rights",
                        &[&folder.key(), &user.as_str(), &i64::from(rights.bits())],
                    )
                    .await?;
                }
                append_event(&tx, &event).await.map(drop)
            }
            .await
        })
    }
    fn rights_of(&self, user: UserId) -> StoreFuture<'_, Vec<(String, Rights)>> {
        on_client!(self, |c| { rights_of(&c, &user).await })
    }
    fn all_rights(&self) -> StoreFuture<'_, Vec<(FolderPath, String, Rights)>> {
        on_client!(self, |c| {
            let rows = query(
                &c,
                "SELECT f.path, u.name, r.rights FROM folder_rights r JOIN folders f ON f.path_key = r.path_key \
                 JOIN users u ON u.id = r.user_id ORDER BY f.path_key, u.name_key",
                &[],
            )
            .await?;
            rows.iter().map(|r| Ok((stored_folder(&get::<String>(r, 0)?)?, get(r, 1)?, rights(r, 2)?))).collect()
        })
    }
}

fn rights(row: &Row, idx: usize) -> StoreResult<Rights> {
    Ok(Rights::from_bits(u32::try_from(get::<i64>(row, idx)?).unwrap_or(0)))
}

/// The folder keys `user` holds rights on; also read by the vault context.
pub(super) async fn rights_of(c: &impl GenericClient, user: &UserId) -> StoreResult<Vec<(String, Rights)>> {
    let rows = query(c, "SELECT path_key, rights FROM folder_rights WHERE user_id = $1", &[&user.as_str()]).await?;
    rows.iter().map(|r| Ok((get(r, 0)?, rights(r, 1)?))).collect()
}

/// Whether folder key `key` exists; also checked by the vault's writes.
pub(super) async fn folder_exists(c: &impl GenericClient, key: &str) -> StoreResult<bool> {
    Ok(query_opt(c, "SELECT 1 FROM folders WHERE path_key = $1", &[&key]).await?.is_some())
}

/// The id of the user named `name` (any case), its row locked for the transaction.
async fn user_id_of(c: &impl GenericClient, name: &str) -> StoreResult<Option<String>> {
    query_opt(c, "SELECT id FROM users WHERE name_key = $1 FOR UPDATE", &[&name.to_lowercase()]).await?.map(|r| get(&r, 0)).transpose()
}

/// Revokes every live grant of `user_id` at `at` with their access tokens
/// (refresh tokens stay as tombstones), and, when `approvals`, denies the
/// device codes the user approved that were not redeemed. The grants revoked.
async fn end_grants(c: &impl GenericClient, user_id: &str, at: UnixTime, approvals: bool) -> StoreResult<u64> {
    let n = exec(c, sql::REVOKE_USER_GRANTS.postgres(), &[&at.millis(), &user_id]).await?;
    exec(c, sql::DELETE_USER_ACCESS.postgres(), &[&user_id]).await?;
    if approvals {
        exec(c, sql::DENY_USER_APPROVALS.postgres(), &[&user_id]).await?;
    }
    Ok(n)
}
