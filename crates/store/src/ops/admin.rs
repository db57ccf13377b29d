//! What administrators manage: users, integrations, grants, folders and rights.
//!
//! Two ways of ending a user's grants, each written once: a change of the
//! user (disabled, a new password, `grants revoke`) ends them all in one
//! statement and notes how many in its one event ([`end_grants`]); a
//! deletion of a user or an integration ends them one by one, each with its
//! own `grant.revoked` event, before the rows go ([`end_grants_where`]).

use strongroom_core::event::Event;
use strongroom_core::identity::{Group, GroupId, User, UserId};
use strongroom_core::integration::{AllowedUsers, Integration};
use strongroom_core::time::UnixTime;
use strongroom_core::tree::ObjectGuid;
use strongroom_core::vault::{FolderPath, Rights, VaultId};

use super::events::{append_event, ended_grant_event, orphaned_event, with_grants_ended};
use super::{Conn, exists, int, query_one};
use crate::codec::{self, values};
use crate::sql::{self, Sql};
use crate::{Deletion, FolderDeletion, GrantSummary, StoreResult};

pub(crate) async fn record_key_check<C: Conn>(c: &C, check: &[u8; 32], event: &Event) -> StoreResult<Option<[u8; 32]>> {
    if c.execute(&sql::RECORD_KEY_CHECK, &values![check, event.at]).await? == 1 {
        append_event(c, event).await?;
        return Ok(None);
    }
    query_one(c, &sql::KEY_CHECK, &[], |r| r.hash32()).await.map(Some)
}

pub(crate) async fn create_user<C: Conn>(c: &C, user: &User, password_hash: &str, event: &Event) -> StoreResult<()> {
    c.execute(&sql::INSERT_USER, &codec::user_row(user, password_hash)).await?;
    append_event(c, event).await.map(drop)
}

pub(crate) async fn user_by_id<C: Conn>(c: &C, id: &UserId) -> StoreResult<Option<User>> {
    c.query_opt(&sql::USER_BY_ID, &values![id.as_str()], codec::user).await
}

pub(crate) async fn list_users<C: Conn>(c: &C) -> StoreResult<Vec<User>> {
    c.query(&sql::LIST_USERS, &[], codec::user).await
}

/// The id of the user named `name` (any case), its row locked for the transaction.
async fn user_id_of<C: Conn>(c: &C, name: &str) -> StoreResult<Option<String>> {
    c.query_opt(&sql::USER_ID_OF, &values![name.to_lowercase()], |r| r.text()).await
}

/// Revokes every live grant of `user_id` at `at` (their tokens stop with
/// them), and, when `approvals`, denies the device codes the user approved
/// that were not redeemed. The grants revoked.
async fn end_grants<C: Conn>(c: &C, user_id: &str, at: UnixTime, approvals: bool) -> StoreResult<u64> {
    let n = c.execute(&sql::REVOKE_USER_GRANTS, &values![at, user_id]).await?;
    if approvals {
        c.execute(&sql::DENY_USER_APPROVALS, &values![user_id]).await?;
    }
    Ok(n)
}

/// Revokes, one by one, the grants `live` (a statement over `?1` = `key`)
/// selects, each with its own `grant.revoked` event derived from the
/// deletion `cause`. The grants revoked.
async fn end_grants_where<C: Conn>(c: &C, live: &Sql, key: &str, cause: &Event) -> StoreResult<u64> {
    let mut ended = 0;
    for id in c.query(live, &values![key], |r| r.text()).await? {
        if c.execute(&sql::REVOKE_GRANT, &values![cause.at, id.as_str()]).await? == 1 {
            append_event(c, &ended_grant_event(cause, &id)).await?;
            ended += 1;
        }
    }
    Ok(ended)
}

/// The counts of a deletion, for its event's detail.
fn deletion_detail(d: &Deletion) -> String {
    format!("grants_ended={} codes_dropped={} rights_removed={}", d.grants_ended, d.codes_dropped, d.rights_removed)
}

/// See [`crate::AdminStore::delete_user`].
pub(crate) async fn delete_user<C: Conn>(c: &C, name: &str, event: &Event) -> StoreResult<Option<Deletion>> {
    let Some(user_id) = user_id_of(c, name).await? else { return Ok(None) };
    let grants_ended = end_grants_where(c, &sql::USER_LIVE_GRANTS, &user_id, event).await?;
    let codes_dropped = c.execute(&sql::DROP_USER_APPROVALS, &values![user_id.as_str()]).await?;
    let rights_removed = int(c, &sql::USER_RIGHTS_COUNT, &values![user_id.as_str()]).await?.unsigned_abs();
    c.execute(&sql::DELETE_USER, &values![user_id.as_str()]).await?;
    // A later user of the name inherits no lock and no known address.
    let name_key = name.to_lowercase();
    c.execute(&sql::UNLOCK, &values![name_key.as_str()]).await?;
    c.execute(&sql::FORGET_NAME_ORIGINS, &values![name_key.as_str()]).await?;
    let done = Deletion { grants_ended, codes_dropped, rights_removed };
    append_event(c, &Event { detail: deletion_detail(&done), ..event.clone() }).await?;
    Ok(Some(done))
}

/// See [`crate::AdminStore::delete_integration`].
pub(crate) async fn delete_integration<C: Conn>(c: &C, client_id: &str, event: &Event) -> StoreResult<Option<Deletion>> {
    if !exists(c, &sql::INTEGRATION, &values![client_id]).await? {
        return Ok(None);
    }
    let grants_ended = end_grants_where(c, &sql::CLIENT_LIVE_GRANTS, client_id, event).await?;
    let codes_dropped = c.execute(&sql::DROP_CLIENT_CODES, &values![client_id]).await?;
    c.execute(&sql::DELETE_INTEGRATION, &values![client_id]).await?;
    let done = Deletion { grants_ended, codes_dropped, rights_removed: 0 };
    append_event(c, &Event { detail: deletion_detail(&done), ..event.clone() }).await?;
    Ok(Some(done))
}

/// See [`crate::AdminStore::delete_folder`].
pub(crate) async fn delete_folder<C: Conn>(c: &C, folder: &FolderPath, recursive: bool, event: &Event) -> StoreResult<FolderDeletion> {
    let key = folder.key();
    if !super::vault::folder_exists(c, key).await? {
        return Ok(FolderDeletion::NotFound);
    }
    let below = format!("{key}\\");
    let subtree = values![key, below.as_str()];
    let folders = int(c, &sql::SUBTREE_FOLDERS, &subtree).await?.unsigned_abs();
    let owned = c.query(&sql::SUBTREE_ENTRIES, &subtree, |r| Ok(VaultId(r.int()?))).await?;
    if !recursive && (folders > 1 || !owned.is_empty()) {
        return Ok(FolderDeletion::NotEmpty { subfolders: folders - 1, entries: owned.len() as u64 });
    }
    let owners_removed = c.execute(&sql::DELETE_SUBTREE_OWNERS, &subtree).await?;
    // An entry left without an owner is kept as an orphan, never deleted:
    // deleting folders needs only Delete on them, while deleting an entry
    // needs Write on its owner through the vault. `SecretStore/OrphanLookup`
    // finds it; a Master Admin re-owns it (`OwnerAdd`) or deletes it.
    let mut entries_orphaned = Vec::new();
    for id in owned {
        if int(c, &sql::OWNER_COUNT, &values![id]).await? == 0 {
            let why = format!("its last owner folder was deleted ({}): kept as an orphan", event.object);
            append_event(c, &orphaned_event(event, id, why)).await?;
            entries_orphaned.push(id);
        }
    }
    let rights_removed = int(c, &sql::SUBTREE_RIGHTS_COUNT, &subtree).await?.unsigned_abs();
    c.execute(&sql::DELETE_SUBTREE, &subtree).await?;
    let detail = format!(
        "recursive={recursive} folders={folders} owners_removed={owners_removed} entries_orphaned={} rights_removed={rights_removed}",
        entries_orphaned.len()
    );
    append_event(c, &Event { detail, ..event.clone() }).await?;
    Ok(FolderDeletion::Deleted { folders, owners_removed, entries_orphaned, rights_removed })
}

pub(crate) async fn set_user_disabled<C: Conn>(c: &C, name: &str, disabled: bool, event: &Event) -> StoreResult<Option<u64>> {
    let Some(user_id) = user_id_of(c, name).await? else { return Ok(None) };
    c.execute(&sql::SET_USER_DISABLED, &values![disabled, user_id.as_str()]).await?;
    if disabled {
        c.execute(&sql::END_CONSOLE_SESSIONS, &values![user_id.as_str()]).await?;
    }
    let ended = if disabled { end_grants(c, &user_id, event.at, true).await? } else { 0 };
    append_event(c, &with_grants_ended(event.clone(), ended)).await?;
    Ok(Some(ended))
}

/// See [`crate::AdminStore::set_user_master_admin`].
pub(crate) async fn set_user_master_admin<C: Conn>(c: &C, name: &str, on: bool, event: &Event) -> StoreResult<Option<bool>> {
    let Some(user_id) = user_id_of(c, name).await? else { return Ok(None) };
    let changed = c.execute(&sql::SET_USER_MASTER_ADMIN, &values![on, user_id.as_str()]).await? == 1;
    if changed {
        append_event(c, &Event { detail: format!("master_admin={on}"), ..event.clone() }).await?;
    }
    Ok(Some(changed))
}

pub(crate) async fn set_user_password<C: Conn>(
    c: &C,
    name: &str,
    password_hash: &str,
    end: bool,
    event: &Event,
) -> StoreResult<Option<u64>> {
    let Some(user_id) = user_id_of(c, name).await? else { return Ok(None) };
    c.execute(&sql::SET_USER_PASSWORD, &values![password_hash, user_id.as_str()]).await?;
    // A new password ends every console session, whatever `end` says of grants.
    c.execute(&sql::END_CONSOLE_SESSIONS, &values![user_id.as_str()]).await?;
    let ended = if end { end_grants(c, &user_id, event.at, false).await? } else { 0 };
    append_event(c, &with_grants_ended(event.clone(), ended)).await?;
    Ok(Some(ended))
}

/// See [`crate::AdminStore::console_epoch`].
pub(crate) async fn console_epoch<C: Conn>(c: &C, user: &UserId) -> StoreResult<i64> {
    Ok(c.query_opt(&sql::CONSOLE_EPOCH, &values![user.as_str()], |r| r.int()).await?.unwrap_or(0))
}

/// See [`crate::AdminStore::end_console_sessions`].
pub(crate) async fn end_console_sessions<C: Conn>(c: &C, user: &UserId, event: &Event) -> StoreResult<bool> {
    if !exists(c, &sql::USER_EXISTS, &values![user.as_str()]).await? {
        return Ok(false);
    }
    c.execute(&sql::END_CONSOLE_SESSIONS, &values![user.as_str()]).await?;
    append_event(c, event).await?;
    Ok(true)
}

pub(crate) async fn revoke_user_grants<C: Conn>(c: &C, name: &str, event: &Event) -> StoreResult<Option<u64>> {
    let Some(user_id) = user_id_of(c, name).await? else { return Ok(None) };
    let ended = end_grants(c, &user_id, event.at, false).await?;
    append_event(c, &with_grants_ended(event.clone(), ended)).await?;
    Ok(Some(ended))
}

pub(crate) async fn locks<C: Conn>(c: &C, now: UnixTime) -> StoreResult<Vec<(String, UnixTime)>> {
    c.query(&sql::LOCKS, &values![now], |r| Ok((r.text()?, r.time()?))).await
}

pub(crate) async fn unlock<C: Conn>(c: &C, name_key: &str, event: &Event) -> StoreResult<u64> {
    let n = c.execute(&sql::UNLOCK, &values![name_key]).await?;
    append_event(c, event).await?;
    Ok(n)
}

/// Reads integration `i`'s user list, when it has one.
async fn load_allowed<C: Conn>(c: &C, i: &mut Integration) -> StoreResult<()> {
    if let AllowedUsers::Only(list) = &mut i.allowed_users {
        *list = c.query(&sql::ALLOWED_USERS, &values![i.client_id.as_str()], |r| Ok(UserId::from_stored(r.text()?))).await?;
    }
    i.allowed_groups = c.query(&sql::ALLOWED_GROUPS, &values![i.client_id.as_str()], |r| Ok(GroupId::from_stored(r.text()?))).await?;
    Ok(())
}

/// Writes integration `i`'s user list (none when everyone is allowed).
async fn save_allowed<C: Conn>(c: &C, i: &Integration) -> StoreResult<()> {
    c.execute(&sql::CLEAR_ALLOWED_USERS, &values![i.client_id.as_str()]).await?;
    if let AllowedUsers::Only(list) = &i.allowed_users {
        for u in list {
            c.execute(&sql::ALLOW_USER, &values![i.client_id.as_str(), u.as_str()]).await?;
        }
    }
    c.execute(&sql::CLEAR_ALLOWED_GROUPS, &values![i.client_id.as_str()]).await?;
    for g in &i.allowed_groups {
        c.execute(&sql::ALLOW_GROUP, &values![i.client_id.as_str(), g.as_str()]).await?;
    }
    Ok(())
}

pub(crate) async fn create_integration<C: Conn>(c: &C, i: &Integration, event: &Event) -> StoreResult<()> {
    c.execute(&sql::INSERT_INTEGRATION, &codec::integration_row(i, event.at)).await?;
    save_allowed(c, i).await?;
    append_event(c, event).await.map(drop)
}

pub(crate) async fn update_integration<C: Conn>(c: &C, i: &Integration, event: &Event) -> StoreResult<bool> {
    let n = c.execute(&sql::UPDATE_INTEGRATION, &codec::integration_row(i, event.at)).await?;
    if n == 1 {
        save_allowed(c, i).await?;
        // What the change stops is revoked, not paused: disabled, every
        // grant of the integration; a user off its allow-list, theirs. Put
        // back or enabled again, nothing of before comes back to life.
        let ended = end_grants_where(c, &sql::CLIENT_STOPPED_GRANTS, &i.client_id, event).await?;
        append_event(c, &with_grants_ended(event.clone(), ended)).await?;
    }
    Ok(n == 1)
}

pub(crate) async fn integration<C: Conn>(c: &C, client_id: &str) -> StoreResult<Option<Integration>> {
    // The row and its two lists do not depend on each other's answers: on
    // PostgreSQL the three statements travel together, one round trip.
    let key = values![client_id];
    let (row, users, groups) = tokio::join!(
        c.query_opt(&sql::INTEGRATION, &key, codec::integration),
        c.query(&sql::ALLOWED_USERS, &key, |r| Ok(UserId::from_stored(r.text()?))),
        c.query(&sql::ALLOWED_GROUPS, &key, |r| Ok(GroupId::from_stored(r.text()?))),
    );
    let Some(mut i) = row? else { return Ok(None) };
    let (users, groups) = (users?, groups?);
    if let AllowedUsers::Only(list) = &mut i.allowed_users {
        *list = users;
    }
    i.allowed_groups = groups;
    Ok(Some(i))
}

pub(crate) async fn list_integrations<C: Conn>(c: &C) -> StoreResult<Vec<Integration>> {
    let mut list = c.query(&sql::LIST_INTEGRATIONS, &[], codec::integration).await?;
    for i in &mut list {
        load_allowed(c, i).await?;
    }
    Ok(list)
}

pub(crate) async fn list_grants<C: Conn>(c: &C, include_ended: bool, now: UnixTime) -> StoreResult<Vec<GrantSummary>> {
    c.query(&sql::LIST_GRANTS, &values![include_ended, now], |r| Ok(GrantSummary { grant: codec::grant(r)?, user_name: r.text()? })).await
}

pub(crate) async fn approved_grants<C: Conn>(
    c: &C,
    user: &UserId,
    now: UnixTime,
) -> StoreResult<Vec<(strongroom_core::grant::Grant, String)>> {
    c.query(&sql::APPROVED_GRANTS, &values![user.as_str(), now], |r| Ok((codec::grant(r)?, r.text()?))).await
}

/// See [`crate::AdminStore::create_folders`].
pub(crate) async fn create_folders<C: Conn>(c: &C, lineage: &[(FolderPath, ObjectGuid)], event: &Event) -> StoreResult<bool> {
    let mut last_new = false;
    for (f, guid) in lineage {
        last_new = c.execute(&sql::CREATE_FOLDER, &codec::folder_row(f, event.at, guid)).await? == 1;
    }
    if last_new {
        append_event(c, event).await?;
    }
    Ok(last_new)
}

pub(crate) async fn folders<C: Conn>(c: &C) -> StoreResult<Vec<FolderPath>> {
    c.query(&sql::FOLDERS, &[], |r| r.folder()).await
}

pub(crate) async fn all_rights<C: Conn>(c: &C) -> StoreResult<Vec<(FolderPath, String, Rights, bool)>> {
    c.query(&sql::ALL_RIGHTS, &[], |r| Ok((r.folder()?, r.text()?, r.rights()?, r.bool()?))).await
}

// ------------------------------------------------------------------ groups

pub(crate) async fn create_group<C: Conn>(c: &C, g: &Group, event: &Event) -> StoreResult<()> {
    c.execute(&sql::INSERT_GROUP, &codec::group_row(g)).await?;
    append_event(c, event).await.map(drop)
}

pub(crate) async fn group_by_name<C: Conn>(c: &C, name: &str) -> StoreResult<Option<Group>> {
    c.query_opt(&sql::GROUP_BY_NAME, &values![name.to_lowercase()], codec::group).await
}

pub(crate) async fn group_by_id<C: Conn>(c: &C, id: &GroupId) -> StoreResult<Option<Group>> {
    c.query_opt(&sql::GROUP_BY_ID, &values![id.as_str()], codec::group).await
}

pub(crate) async fn list_groups<C: Conn>(c: &C) -> StoreResult<Vec<(Group, u64)>> {
    c.query(&sql::LIST_GROUPS, &[], |r| Ok((codec::group(r)?, r.int()?.unsigned_abs()))).await
}

/// Deletes group `name`: its members, rights and places on integrations go
/// with it. The rights it held on folders, or `None` when there is no such group.
pub(crate) async fn delete_group<C: Conn>(c: &C, name: &str, event: &Event) -> StoreResult<Option<u64>> {
    let Some(g) = group_by_name(c, name).await? else { return Ok(None) };
    let rights = int(c, &sql::GROUP_RIGHTS_COUNT, &values![g.id.as_str()]).await?.unsigned_abs();
    c.execute(&sql::DELETE_GROUP, &values![g.id.as_str()]).await?;
    append_event(c, &Event { detail: format!("{rights} folder rights removed"), ..event.clone() }).await?;
    Ok(Some(rights))
}

/// User `user` joins group `group`; `false` (and no event) when a member already.
pub(crate) async fn add_member<C: Conn>(c: &C, group: &GroupId, user: &UserId, event: &Event) -> StoreResult<bool> {
    let added = c.execute(&sql::ADD_MEMBER, &values![group.as_str(), user.as_str()]).await? == 1;
    if added {
        append_event(c, event).await?;
    }
    Ok(added)
}

/// User `user` leaves group `group`; `false` (and no event) when not a member.
pub(crate) async fn remove_member<C: Conn>(c: &C, group: &GroupId, user: &UserId, event: &Event) -> StoreResult<bool> {
    let removed = c.execute(&sql::REMOVE_MEMBER, &values![group.as_str(), user.as_str()]).await? == 1;
    if removed {
        append_event(c, event).await?;
    }
    Ok(removed)
}

pub(crate) async fn members_of<C: Conn>(c: &C, group: &GroupId) -> StoreResult<Vec<User>> {
    c.query(&sql::MEMBERS_OF, &values![group.as_str()], codec::user).await
}

pub(crate) async fn groups_of<C: Conn>(c: &C, user: &UserId) -> StoreResult<Vec<Group>> {
    c.query(&sql::GROUPS_OF, &values![user.as_str()], codec::group).await
}

pub(crate) async fn group_rights_of<C: Conn>(c: &C, group: &GroupId) -> StoreResult<Vec<(String, Rights)>> {
    c.query(&sql::GROUP_RIGHTS_OF, &values![group.as_str()], |r| Ok((r.text()?, r.rights()?))).await
}

/// See [`crate::AdminStore::sync_directory_user`].
pub(crate) async fn sync_directory_user<C: Conn>(c: &C, u: &User, prefix: &str, groups: &[Group], event: &Event) -> StoreResult<User> {
    let name_key = u.name.to_lowercase();
    c.execute(&sql::FREE_USER_NAME, &values![name_key.as_str(), u.id.as_str()]).await?;
    let existing = user_by_id(c, &u.id).await?;
    // When the directory or provider vouched for them: this sync's.
    let signed_in_at = Some(event.at);
    let user = match existing.clone() {
        Some(mut e) => {
            c.execute(&sql::SYNC_USER, &values![u.name.as_str(), name_key.as_str(), u.id.as_str(), signed_in_at]).await?;
            e.name = u.name.clone();
            e.signed_in_at = signed_in_at;
            e
        }
        // No password of ours: `!` is no PHC string, and directory users never take the local path.
        None => {
            let u = User { signed_in_at, ..u.clone() };
            c.execute(&sql::INSERT_USER, &codec::user_row(&u, "!")).await?;
            u
        }
    };
    let mut now_in = Vec::with_capacity(groups.len());
    for g in groups {
        c.execute(&sql::INSERT_GROUP_IF_NEW, &codec::group_row(g)).await?;
        if let Some(found) = group_by_name(c, &g.name).await? {
            now_in.push(found);
        }
    }
    let before: Vec<Group> = groups_of(c, &user.id).await?.into_iter().filter(|g| g.prefix().eq_ignore_ascii_case(prefix)).collect();
    let left: Vec<&Group> = before.iter().filter(|b| !now_in.iter().any(|n| n.id == b.id)).collect();
    let joined: Vec<&Group> = now_in.iter().filter(|n| !before.iter().any(|b| b.id == n.id)).collect();
    for g in &left {
        c.execute(&sql::REMOVE_MEMBER, &values![g.id.as_str(), user.id.as_str()]).await?;
    }
    for g in &joined {
        c.execute(&sql::ADD_MEMBER, &values![g.id.as_str(), user.id.as_str()]).await?;
    }
    if existing.is_none() || !left.is_empty() || !joined.is_empty() {
        let names = |gs: &[&Group]| gs.iter().map(|g| g.name.as_str()).collect::<Vec<_>>().join(",");
        let detail =
            format!("{}joined=[{}] left=[{}]", if existing.is_none() { "first sign-in " } else { "" }, names(&joined), names(&left));
        append_event(c, &Event { detail, ..event.clone() }).await?;
    }
    Ok(user)
}

/// See [`crate::AdminStore::insert_oidc_state`].
pub(crate) async fn insert_oidc_state<C: Conn>(
    c: &C,
    state: &[u8; 32],
    binding: &[u8; 32],
    user_code: &str,
    expires: UnixTime,
    now: UnixTime,
) -> StoreResult<()> {
    c.execute(&sql::FORGET_OIDC_STATES, &values![now]).await?;
    c.execute(&sql::INSERT_OIDC_STATE, &values![state, binding, user_code, expires]).await.map(drop)
}

/// See [`crate::AdminStore::take_oidc_state`].
pub(crate) async fn take_oidc_state<C: Conn>(c: &C, state: &[u8; 32], binding: &[u8; 32], now: UnixTime) -> StoreResult<Option<String>> {
    if c.execute(&sql::TAKE_OIDC_STATE, &values![state, binding, now]).await? != 1 {
        return Ok(None);
    }
    c.query_opt(&sql::OIDC_STATE_CODE, &values![state], |r| r.text()).await
}
