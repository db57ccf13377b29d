//! Groups as the API administers them: a local group
//! made with its members (and, for a team, its owners, description and
//! products) in one transaction; members added or removed in batches;
//! renames. Each act once, here, naming whoever did it ([`Admin::acting_as`]).

use strongroom_core::event::EventKind;
use strongroom_core::identity::{Group, GroupId, User, UserId, valid_user_name};
use strongroom_store::{MemberChange, StoreError, Team};

use super::{Admin, AdminError};

impl Admin {
    fn member_change(&self, group: &Group, user: &User, join: bool) -> MemberChange {
        let kind = if join { EventKind::GroupMemberAdded } else { EventKind::GroupMemberRemoved };
        MemberChange {
            user: user.id.clone(),
            join,
            event: self.event(kind).object(group.name.as_str()).detail(format!("user={}", user.name)),
        }
    }

    /// Creates local group `name` with `members` (users) and `owners`, a
    /// team when `team` is given: one transaction, the group's event
    /// (naming its owners) and one event per member.
    pub async fn create_group_with(&self, name: &str, owners: &[User], team: Option<Team>, members: &[User]) -> Result<Group, AdminError> {
        if !valid_user_name(name) {
            return Err(AdminError::Invalid("group names are 1-64 letters, digits or .-_@".into()));
        }
        let group = Group { id: GroupId::generate(&*self.rng), name: name.to_owned(), created_at: self.clock.now() };
        let owner_names: Vec<&str> = owners.iter().map(|u| u.name.as_str()).collect();
        let mut detail = group.identity();
        if !owner_names.is_empty() {
            detail.push_str(&format!(" owners=[{}]", owner_names.join(",")));
        }
        if team.is_some() {
            detail.push_str(" team");
        }
        let event = self.event(EventKind::GroupCreated).object(name).detail(detail);
        let changes = members.iter().map(|u| self.member_change(&group, u, true)).collect();
        let owner_ids: Vec<UserId> = owners.iter().map(|u| u.id.clone()).collect();
        match self.store.create_group_with(group.clone(), owner_ids, team, changes, event).await {
            Ok(()) => Ok(group),
            Err(StoreError::Conflict) => Err(AdminError::Exists(format!("{name} (users and groups share names)"))),
            Err(e) => Err(e.into()),
        }
    }

    /// Adds (`join`) or removes `users` to or from `group` in one
    /// transaction, each one conditional write with its own event when it
    /// changes anything: whether each changed anything. A removal reaches
    /// the member's tokens at their next request (memberships are read
    /// live by every rights and allow-list check). With `as_owner`, only
    /// while that user owns the group (checked in the same transaction).
    pub async fn change_members(
        &self,
        group: &Group,
        users: &[User],
        join: bool,
        as_owner: Option<&UserId>,
    ) -> Result<Vec<bool>, AdminError> {
        let changes = users.iter().map(|u| self.member_change(group, u, join)).collect();
        let done = self.store.change_members(group.id.clone(), changes, as_owner.cloned()).await?;
        done.ok_or_else(|| {
            AdminError::NotFound(format!("group {}{}", group.name, if as_owner.is_some() { " (or its ownership)" } else { "" }))
        })
    }

    /// Renames local group `group` to `name` (not a user's or another group's name).
    pub async fn rename_group(&self, group: &Group, name: &str) -> Result<Group, AdminError> {
        if !valid_user_name(name) {
            return Err(AdminError::Invalid("group names are 1-64 letters, digits or .-_@".into()));
        }
        let event = self.event(EventKind::GroupRenamed).object(group.name.as_str()).detail(format!("new_name={name}"));
        match self.store.rename_group(group.id.clone(), name.to_owned(), event).await {
            Ok(true) => Ok(Group { name: name.to_owned(), ..group.clone() }),
            Ok(false) => Err(AdminError::NotFound(format!("group {}", group.name))),
            Err(StoreError::Conflict) => Err(AdminError::Exists(format!("{name} (users and groups share names)"))),
            Err(e) => Err(e.into()),
        }
    }
}

/// Whether `p` may be a password (its length), before anything else is checked.
pub fn check_new_password(p: &strongroom_core::secret::Secret) -> Result<(), AdminError> {
    super::check_password(p)
}
