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
use crate::{AdminStore, GrantSummary, StoreFuture, StoreResult, stored_folder, stored_hash32};

impl AdminStore for PgStore {
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
