//! The `\VED` tree as objects: folders with their GUIDs, and the
//! explicit permission entries on a folder, each changed by one
//! conditional write with its event (`Permissions/Object/…`: a POST
//! inserts only where there is no entry, a PUT replaces only an entry that
//! is there, a DELETE deletes only one that is there; the row count says
//! which happened, and only a write that happened appends its event).

use std::fmt;

use strongroom_core::event::Event;
use strongroom_core::identity::{GroupId, UserId};
use strongroom_core::time::UnixTime;
use strongroom_core::tree::ObjectGuid;
use strongroom_core::vault::{FolderPath, Rights};

use super::Conn;
use super::events::append_event;
use crate::codec::{Cols, values};
use crate::sql;
use crate::{StoreFuture, StoreResult};

/// A folder as an object of the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FolderObject {
    pub path: FolderPath,
    pub guid: ObjectGuid,
    pub created_at: UnixTime,
}

/// Who holds an explicit entry: a user (`folder_rights`) or a group (`group_rights`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Holder {
    User(UserId),
    Group(GroupId),
}

/// One change of an explicit entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RightsChange {
    /// Only where the holder has no entry on the folder.
    Create(Rights),
    /// Only where the holder has one.
    Replace(Rights),
    /// Only where the holder has one.
    Delete,
    /// Whatever is there (an entry, or none): `Rights::NONE` removes it.
    Set(Rights),
}

/// What `change_rights` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RightsOutcome {
    /// Written, with its event.
    Changed,
    /// Nothing to change: a create found an entry, a replace or delete none.
    Unchanged,
    /// The user the change was made for may no longer make it (disabled,
    /// or neither a Master Admin nor holding ManagePermissions on the
    /// folder or above it): nothing written.
    Denied,
    /// No such folder (deleted before the change): nothing written.
    NoFolder,
}

impl fmt::Display for RightsChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RightsChange::Create(r) => write!(f, "created rights={r}"),
            RightsChange::Replace(r) => write!(f, "replaced rights={r}"),
            RightsChange::Delete => f.write_str("deleted"),
            RightsChange::Set(r) => write!(f, "rights={r}"),
        }
    }
}

/// What `rename_folder` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Renamed {
    /// The folders moved (the folder and those below it).
    Moved(u64),
    NotFound,
    /// The new path is taken, or lies inside the folder itself.
    Exists,
}

/// The store's side of the tree.
pub trait TreeStore: Send + Sync + fmt::Debug {
    /// Every folder, by key.
    fn folder_objects(&self) -> StoreFuture<'_, Vec<FolderObject>>;
    /// The folder of key `key`, if any.
    fn folder_object(&self, key: String) -> StoreFuture<'_, Option<FolderObject>>;
    fn folder_object_by_guid(&self, guid: ObjectGuid) -> StoreFuture<'_, Option<FolderObject>>;
    /// The explicit entries on folder `key`: users' first, then groups', each by id.
    fn explicit_rights(&self, key: String) -> StoreFuture<'_, Vec<(Holder, Rights)>>;
    /// Changes `holder`'s explicit entry on `folder` as `change` says, in one
    /// conditional statement; `event` is appended only when it changed a
    /// row (a `Set` always appends it). In the same transaction, first:
    /// the folder must exist (`NoFolder`), and when the change is made for
    /// user `by` (a delegated caller; `None`: the CLI on the store), `by`
    /// must still be enabled and a Master Admin or hold ManagePermissions
    /// on the folder or above it (`Denied`): a right removed before this
    /// transaction is never bypassed.
    fn change_rights(
        &self,
        folder: FolderPath,
        holder: Holder,
        change: RightsChange,
        by: Option<UserId>,
        event: Event,
    ) -> StoreFuture<'_, RightsOutcome>;
    /// Renames or moves folder `from` (and everything below it) to `to`,
    /// in one transaction with its event: each folder keeps its GUID and
    /// creation, its rights (users' and groups') and the vault entries it
    /// owns follow it. `to`'s parent is the caller's to check.
    fn rename_folder(&self, from: FolderPath, to: FolderPath, event: Event) -> StoreFuture<'_, Renamed>;
}

fn folder_object(r: &mut Cols<'_>) -> StoreResult<FolderObject> {
    Ok(FolderObject { path: r.folder()?, guid: ObjectGuid::from_stored(r.text()?), created_at: r.time()? })
}

pub(crate) async fn folder_objects<C: Conn>(c: &C) -> StoreResult<Vec<FolderObject>> {
    c.query(&sql::TREE_FOLDERS, &[], folder_object).await
}

pub(crate) async fn folder_object_by_key<C: Conn>(c: &C, key: &str) -> StoreResult<Option<FolderObject>> {
    c.query_opt(&sql::TREE_FOLDER, &values![key], folder_object).await
}

pub(crate) async fn folder_object_by_guid<C: Conn>(c: &C, guid: &ObjectGuid) -> StoreResult<Option<FolderObject>> {
    c.query_opt(&sql::TREE_FOLDER_BY_GUID, &values![guid.as_str()], folder_object).await
}

pub(crate) async fn explicit_rights<C: Conn>(c: &C, key: &str) -> StoreResult<Vec<(Holder, Rights)>> {
    c.query(&sql::EXPLICIT_RIGHTS, &values![key], |r| {
        let kind = r.int()?;
        let id = r.text()?;
        let holder = if kind == 1 { Holder::User(UserId::from_stored(id)) } else { Holder::Group(GroupId::from_stored(id)) };
        Ok((holder, r.rights()?))
    })
    .await
}

/// See [`TreeStore::change_rights`].
pub(crate) async fn change_rights<C: Conn>(
    c: &C,
    f: &FolderPath,
    holder: &Holder,
    change: RightsChange,
    by: Option<&UserId>,
    event: &Event,
) -> StoreResult<RightsOutcome> {
    if !super::exists(c, &sql::FOLDER_EXISTS, &values![f.key()]).await? {
        return Ok(RightsOutcome::NoFolder);
    }
    if let Some(by) = by
        && !super::flag(c, &sql::MAY_MANAGE_FOLDER, &values![by.as_str(), f.key()]).await?
    {
        return Ok(RightsOutcome::Denied);
    }
    let (id, user) = match holder {
        Holder::User(u) => (u.as_str(), true),
        Holder::Group(g) => (g.as_str(), false),
    };
    let n = match (change, user) {
        (RightsChange::Create(r), true) => c.execute(&sql::CREATE_USER_ENTRY, &values![f.key(), id, r.bits()]).await?,
        (RightsChange::Create(r), false) => c.execute(&sql::CREATE_GROUP_ENTRY, &values![f.key(), id, r.bits()]).await?,
        (RightsChange::Replace(r), true) => c.execute(&sql::REPLACE_USER_ENTRY, &values![f.key(), id, r.bits()]).await?,
        (RightsChange::Replace(r), false) => c.execute(&sql::REPLACE_GROUP_ENTRY, &values![f.key(), id, r.bits()]).await?,
        (RightsChange::Delete, true) => c.execute(&sql::DELETE_RIGHTS, &values![f.key(), id]).await?,
        (RightsChange::Delete, false) => c.execute(&sql::DELETE_GROUP_RIGHTS, &values![f.key(), id]).await?,
        (RightsChange::Set(Rights::NONE), true) => c.execute(&sql::DELETE_RIGHTS, &values![f.key(), id]).await?.max(1),
        (RightsChange::Set(Rights::NONE), false) => c.execute(&sql::DELETE_GROUP_RIGHTS, &values![f.key(), id]).await?.max(1),
        (RightsChange::Set(r), true) => c.execute(&sql::SET_RIGHTS, &values![f.key(), id, r.bits()]).await?.max(1),
        (RightsChange::Set(r), false) => c.execute(&sql::SET_GROUP_RIGHTS, &values![f.key(), id, r.bits()]).await?.max(1),
    };
    if n == 1 {
        append_event(c, event).await?;
        return Ok(RightsOutcome::Changed);
    }
    Ok(RightsOutcome::Unchanged)
}

/// See [`TreeStore::rename_folder`].
pub(crate) async fn rename_folder<C: Conn>(c: &C, from: &FolderPath, to: &FolderPath, event: &Event) -> StoreResult<Renamed> {
    let below = format!("{}\\", from.key());
    if to.key() == from.key() || to.key().starts_with(&below) {
        return Ok(Renamed::Exists);
    }
    if folder_object_by_key(c, to.key()).await?.is_some() {
        return Ok(Renamed::Exists);
    }
    let subtree = c.query(&sql::TREE_SUBTREE, &values![from.key(), below.as_str()], folder_object).await?;
    if subtree.is_empty() {
        return Ok(Renamed::NotFound);
    }
    let mut moved = Vec::with_capacity(subtree.len());
    for o in &subtree {
        let rest = &o.path.as_str()[from.as_str().len()..];
        let path =
            FolderPath::parse(&format!("{}{rest}", to.as_str())).map_err(|e| crate::StoreError::other(format!("renamed path: {e}")))?;
        // Keys below the new path are free: the new path itself is, and nothing lies below a free key.
        let placeholder = format!("moving:{}", o.guid.as_str());
        c.execute(&sql::INSERT_MOVED_FOLDER, &values![path.key(), path.as_str(), o.created_at, placeholder.as_str()]).await?;
        c.execute(&sql::MOVE_USER_RIGHTS, &values![o.path.key(), path.key()]).await?;
        c.execute(&sql::MOVE_GROUP_RIGHTS, &values![o.path.key(), path.key()]).await?;
        c.execute(&sql::MOVE_OWNERS, &values![o.path.key(), path.key(), path.as_str()]).await?;
        moved.push((o, path));
    }
    for (o, path) in &moved {
        c.execute(&sql::DELETE_FOLDER_ROW, &values![o.path.key()]).await?;
        c.execute(&sql::SET_FOLDER_GUID, &values![path.key(), o.guid.as_str()]).await?;
    }
    let n = moved.len() as u64;
    append_event(c, &Event { detail: format!("renamed from {from} folders={n}"), ..event.clone() }).await?;
    Ok(Renamed::Moved(n))
}

/// The methods of [`TreeStore`], alike on both backends (see [`super::methods`]).
macro_rules! tree_methods {
    ($read:ident, $write:ident) => {
        fn folder_objects(&self) -> StoreFuture<'_, Vec<FolderObject>> {
            $read!(self, |c| tree::folder_objects(c))
        }
        fn folder_object(&self, key: String) -> StoreFuture<'_, Option<FolderObject>> {
            $read!(self, |c| tree::folder_object_by_key(c, &key))
        }
        fn folder_object_by_guid(&self, guid: ObjectGuid) -> StoreFuture<'_, Option<FolderObject>> {
            $read!(self, |c| tree::folder_object_by_guid(c, &guid))
        }
        fn explicit_rights(&self, key: String) -> StoreFuture<'_, Vec<(Holder, Rights)>> {
            $read!(self, |c| tree::explicit_rights(c, &key))
        }
        fn change_rights(
            &self,
            f: FolderPath,
            holder: Holder,
            change: RightsChange,
            by: Option<UserId>,
            event: Event,
        ) -> StoreFuture<'_, tree::RightsOutcome> {
            $write!(self, |c| tree::change_rights(c, &f, &holder, change, by.as_ref(), &event))
        }
        fn rename_folder(&self, from: FolderPath, to: FolderPath, event: Event) -> StoreFuture<'_, tree::Renamed> {
            $write!(self, |c| tree::rename_folder(c, &from, &to, &event))
        }
    };
}
pub(crate) use tree_methods;
