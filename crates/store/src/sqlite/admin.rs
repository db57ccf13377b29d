//! What administrators manage, on SQLite: users, integrations, grants,
//! folders and rights.

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use strongroom_core::event::Event;
use strongroom_core::identity::{User, UserId};
use strongroom_core::integration::Integration;
use strongroom_core::time::UnixTime;
use strongroom_core::vault::{FolderPath, Rights};

use super::writer::backend;
use super::{
    INTEGRATION_COLS, SqliteStore, USER_COLS, append_event_tx, b, exec, grant_from_row, integration_from_row, integration_values,
    is_unique_violation, load_allowed, placeholders, save_allowed, time_col, user_from_row,
};
use crate::sql::{self, GRANT_COLS};
use crate::{AdminStore, GrantSummary, StoreError, StoreFuture, StoreResult, stored_folder, stored_hash32};

fn rights_col(r: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<Rights> {
    Ok(Rights::from_bits(u32::try_from(r.get::<_, i64>(idx)?).unwrap_or(0)))
}

/// The rights granted directly to `user`: also part of every vault context.
pub(super) fn rights_of(c: &Connection, user: &UserId) -> StoreResult<Vec<(String, Rights)>> {
    let mut st = c.prepare_cached("SELECT path_key, rights FROM folder_rights WHERE user_id = ?1").map_err(backend)?;
    let rows = st.query_map([user.as_str()], |r| Ok((r.get::<_, String>(0)?, rights_col(r, 1)?))).map_err(backend)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(backend)
}

/// Whether folder key `key` exists: also checked by the vault writes that name owners.
pub(super) fn folder_exists(c: &Connection, key: &str) -> StoreResult<bool> {
    let mut st = c.prepare_cached("SELECT 1 FROM folders WHERE path_key = ?1").map_err(backend)?;
    Ok(st.query_row([key], |_| Ok(())).optional().map_err(backend)?.is_some())
}

impl AdminStore for SqliteStore {
    fn record_key_check(&self, check: [u8; 32], event: Event) -> StoreFuture<'_, Option<[u8; 32]>> {
        Box::pin(self.write(move |c| {
            let n = c
                .execute(
                    "INSERT INTO master_key_check (id, digest, recorded_at) VALUES (1, ?1, ?2) ON CONFLICT (id) DO NOTHING",
                    params![check.as_slice(), event.at.millis()],
                )
                .map_err(backend)?;
            if n == 1 {
                append_event_tx(c, &event)?;
                return Ok(None);
            }
            let digest: Vec<u8> = c.query_row("SELECT digest FROM master_key_check WHERE id = 1", [], |r| r.get(0)).map_err(backend)?;
            stored_hash32(digest).map(Some)
        }))
    }
    fn create_user(&self, user: User, password_hash: String, event: Event) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| {
            let r = c.execute(
                "INSERT INTO users (id, name, name_key, password_hash, disabled, master_admin, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    user.id.as_str(),
                    user.name,
                    user.name.to_lowercase(),
                    password_hash,
                    b(user.disabled),
                    b(user.master_admin),
                    user.created_at.millis()
                ],
            );
            match r {
                Err(e) if is_unique_violation(&e) => Err(StoreError::Conflict),
                Err(e) => Err(backend(e)),
                Ok(_) => append_event_tx(c, &event).map(drop),
            }
        }))
    }
    fn user_by_id(&self, id: UserId) -> StoreFuture<'_, Option<User>> {
        Box::pin(self.read(move |c| {
            c.query_row(&format!("SELECT {USER_COLS} FROM users WHERE id = ?1"), [id.as_str()], user_from_row).optional().map_err(backend)
        }))
    }
    fn list_users(&self) -> StoreFuture<'_, Vec<User>> {
        Box::pin(self.read(|c| {
            let mut st = c.prepare(&format!("SELECT {USER_COLS} FROM users ORDER BY name_key")).map_err(backend)?;
            let rows = st.query_map([], user_from_row).map_err(backend)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(backend)
        }))
    }
    fn set_user_disabled(&self, name: String, disabled: bool, event: Event) -> StoreFuture<'_, Option<u64>> {
        Box::pin(self.write(move |c| {
            let Some(user_id) = user_id_of(c, &name)? else { return Ok(None) };
            exec(c, "UPDATE users SET disabled = ?1 WHERE id = ?2", params![b(disabled), user_id])?;
            let ended = if disabled { end_grants(c, &user_id, event.at, true)? } else { 0 };
            append_event_tx(c, &crate::with_grants_ended(event, ended))?;
            Ok(Some(ended))
        }))
    }
    fn set_user_password(&self, name: String, password_hash: String, end: bool, event: Event) -> StoreFuture<'_, Option<u64>> {
        Box::pin(self.write(move |c| {
            let Some(user_id) = user_id_of(c, &name)? else { return Ok(None) };
            exec(c, "UPDATE users SET password_hash = ?1 WHERE id = ?2", params![password_hash, user_id])?;
            let ended = if end { end_grants(c, &user_id, event.at, false)? } else { 0 };
            append_event_tx(c, &crate::with_grants_ended(event, ended))?;
            Ok(Some(ended))
        }))
    }
    fn revoke_user_grants(&self, name: String, event: Event) -> StoreFuture<'_, Option<u64>> {
        Box::pin(self.write(move |c| {
            let Some(user_id) = user_id_of(c, &name)? else { return Ok(None) };
            let ended = end_grants(c, &user_id, event.at, false)?;
            append_event_tx(c, &crate::with_grants_ended(event, ended))?;
            Ok(Some(ended))
        }))
    }
    fn locks(&self, now: UnixTime) -> StoreFuture<'_, Vec<(String, UnixTime)>> {
        Box::pin(self.read(move |c| {
            let mut st = c.prepare_cached(sql::LOCKS.sqlite()).map_err(backend)?;
            let rows = st.query_map([now.millis()], |r| Ok((r.get(0)?, time_col(r, 1)?))).map_err(backend)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(backend)
        }))
    }
    fn unlock(&self, name_key: String, event: Event) -> StoreFuture<'_, u64> {
        Box::pin(self.write(move |c| {
            let n = exec(c, sql::UNLOCK.sqlite(), [&name_key])?;
            append_event_tx(c, &event)?;
            Ok(n as u64)
        }))
    }
    fn create_integration(&self, i: Integration, event: Event) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| {
            let mut values = integration_values(&i);
            values.push(Value::Integer(event.at.millis()));
            let r = c.execute(
                &format!("INSERT INTO integrations ({INTEGRATION_COLS}, created_at) VALUES ({})", placeholders(values.len())),
                params_from_iter(values),
            );
            match r {
                Err(e) if is_unique_violation(&e) => Err(StoreError::Conflict),
                Err(e) => Err(backend(e)),
                Ok(_) => {
                    save_allowed(c, &i)?;
                    append_event_tx(c, &event).map(drop)
                }
            }
        }))
    }
    fn update_integration(&self, i: Integration, event: Event) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| {
            let n = c
                .execute(
                    "UPDATE integrations SET name = ?2, max_scope = ?3, allow_all_users = ?4, allow_device = ?5, allow_password = ?6, \
                     access_validity = ?7, grant_validity = ?8, refreshable = ?9, device_code_validity = ?10, poll_interval = ?11, disabled = ?12, retry_window = ?13 \
                     WHERE client_id = ?1",
                    params_from_iter(integration_values(&i)),
                )
                .map_err(backend)?;
            if n == 1 {
                save_allowed(c, &i)?;
                append_event_tx(c, &event)?;
            }
            Ok(n == 1)
        }))
    }
    fn integration(&self, client_id: String) -> StoreFuture<'_, Option<Integration>> {
        Box::pin(self.read(move |c| {
            let found = c
                .query_row(&format!("SELECT {INTEGRATION_COLS} FROM integrations WHERE client_id = ?1"), [&client_id], integration_from_row)
                .optional()
                .map_err(backend)?;
            match found {
                None => Ok(None),
                Some(mut i) => {
                    load_allowed(c, &mut i)?;
                    Ok(Some(i))
                }
            }
        }))
    }
    fn list_integrations(&self) -> StoreFuture<'_, Vec<Integration>> {
        Box::pin(self.read(|c| {
            let mut st = c.prepare(&format!("SELECT {INTEGRATION_COLS} FROM integrations ORDER BY client_id")).map_err(backend)?;
            let mut list = st.query_map([], integration_from_row).map_err(backend)?.collect::<Result<Vec<_>, _>>().map_err(backend)?;
            for i in &mut list {
                load_allowed(c, i)?;
            }
            Ok(list)
        }))
    }
    fn list_grants(&self, include_ended: bool, now: UnixTime) -> StoreFuture<'_, Vec<GrantSummary>> {
        Box::pin(self.read(move |c| {
            let mut st = c
                .prepare(&format!(
                    "SELECT {GRANT_COLS}, coalesce(u.name, '') FROM grants g LEFT JOIN users u ON u.id = g.user_id \
                     WHERE ?1 OR (g.revoked_at IS NULL AND g.refresh_until > ?2) ORDER BY g.created_at, g.id"
                ))
                .map_err(backend)?;
            let rows = st
                .query_map(params![include_ended, now.millis()], |r| {
                    Ok(GrantSummary { grant: grant_from_row(r, 0)?, user_name: r.get(crate::sql::GRANT_COL_COUNT)? })
                })
                .map_err(backend)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(backend)
        }))
    }

    fn create_folders(&self, lineage: Vec<FolderPath>, event: Event) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| {
            let mut last_new = false;
            for f in &lineage {
                let n = exec(
                    c,
                    "INSERT INTO folders (path_key, path, created_at) VALUES (?1, ?2, ?3) ON CONFLICT (path_key) DO NOTHING",
                    params![f.key(), f.as_str(), event.at.millis()],
                )?;
                last_new = n == 1;
            }
            if last_new {
                append_event_tx(c, &event)?;
            }
            Ok(last_new)
        }))
    }

    fn folders(&self) -> StoreFuture<'_, Vec<FolderPath>> {
        Box::pin(self.read(|c| {
            let mut st = c.prepare_cached("SELECT path FROM folders ORDER BY path_key").map_err(backend)?;
            let rows = st.query_map([], |r| r.get::<_, String>(0)).map_err(backend)?;
            rows.map(|r| r.map_err(backend).and_then(|p| stored_folder(&p))).collect()
        }))
    }

    fn folder_exists(&self, key: String) -> StoreFuture<'_, bool> {
        Box::pin(self.read(move |c| folder_exists(c, &key)))
    }

    fn set_rights(&self, f: FolderPath, user: UserId, rights: Rights, event: Event) -> StoreFuture<'_, ()> {
        Box::pin(self.write(move |c| {
            if rights == Rights::NONE {
                exec(c, "DELETE FROM folder_rights WHERE path_key = ?1 AND user_id = ?2", params![f.key(), user.as_str()])?;
            } else {
                exec(
                    c,
                    "INSERT INTO folder_rights (path_key, user_id, rights) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (path_key, user_id) DO UPDATE SET rights = excluded.rights",
                    params![f.key(), user.as_str(), i64::from(rights.bits())],
                )?;
            }
            append_event_tx(c, &event).map(drop)
        }))
    }

    fn rights_of(&self, user: UserId) -> StoreFuture<'_, Vec<(String, Rights)>> {
        Box::pin(self.read(move |c| rights_of(c, &user)))
    }

    fn all_rights(&self) -> StoreFuture<'_, Vec<(FolderPath, String, Rights)>> {
        Box::pin(self.read(|c| {
            let mut st = c
                .prepare_cached(
                    "SELECT f.path, u.name, r.rights FROM folder_rights r JOIN folders f ON f.path_key = r.path_key \
                     JOIN users u ON u.id = r.user_id ORDER BY f.path_key, u.name_key",
                )
                .map_err(backend)?;
            let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, rights_col(r, 2)?))).map_err(backend)?;
            rows.map(|r| -> StoreResult<_> {
                let (p, u, rights) = r.map_err(backend)?;
                Ok((stored_folder(&p)?, u, rights))
            })
            .collect()
        }))
    }
}

/// The id of the user named `name` (any case).
fn user_id_of(c: &Connection, name: &str) -> StoreResult<Option<String>> {
    c.query_row("SELECT id FROM users WHERE name_key = ?1", [name.to_lowercase()], |r| r.get(0)).optional().map_err(backend)
}

/// Revokes every live grant of `user_id` at `at` with their access tokens
/// (refresh tokens stay as tombstones), and, when `approvals`, denies the
/// device codes the user approved that were not redeemed. The grants revoked.
fn end_grants(c: &Connection, user_id: &str, at: UnixTime, approvals: bool) -> StoreResult<u64> {
    let n = exec(c, sql::REVOKE_USER_GRANTS.sqlite(), params![at.millis(), user_id])?;
    exec(c, sql::DELETE_USER_ACCESS.sqlite(), [user_id])?;
    if approvals {
        exec(c, sql::DENY_USER_APPROVALS.sqlite(), [user_id])?;
    }
    Ok(n as u64)
}
