//! The product's Identity calls: who an identity is, which groups a user is
//! in, who is in a group, and a search by name. Local users and groups only:
//! an identity of another provider is unknown here.

use strongroom_core::identity::{Group, GroupId, IdentityEntry, IdentityRef, User, UserId, browse_kinds, browse_matches};
use strongroom_store::StoreError;

use crate::App;

/// A local identity found by its name or universal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    User(User),
    Group(Group),
}

impl Found {
    pub fn entry(&self) -> IdentityEntry {
        match self {
            Found::User(u) => IdentityEntry::user(&u.id, &u.name),
            Found::Group(g) => IdentityEntry::group(g),
        }
    }
}

/// The most a `Browse` answers, whatever its `Limit`.
pub const BROWSE_MAX: usize = 1000;
/// What a `Browse` answers without a `Limit` (the product's default for local identities).
pub const BROWSE_DEFAULT: usize = 50;

/// The identity `r` names, if this server has it. A name is a user's first
/// (users and groups share names; `admin groups add` refuses a user's).
pub async fn resolve(app: &App, r: &IdentityRef) -> Result<Option<Found>, StoreError> {
    Ok(match r {
        IdentityRef::Universal(id) => {
            if let Some(u) = app.store.user_by_id(UserId::from_stored(id.clone())).await? {
                Some(Found::User(u))
            } else {
                app.store.group_by_id(GroupId::from_stored(id.clone())).await?.map(Found::Group)
            }
        }
        IdentityRef::Name(name) => {
            if let Some((u, _)) = app.store.user_by_name(name.clone()).await? {
                Some(Found::User(u))
            } else {
                app.store.group_by_name(name.clone()).await?.map(Found::Group)
            }
        }
        IdentityRef::DirectoryUniversal(prefix, id) => {
            if let Some(u) = app.store.user_by_id(UserId::directory(prefix, id)).await? {
                Some(Found::User(u))
            } else {
                app.store.group_by_id(GroupId::from_stored(id.clone())).await?.map(Found::Group).filter(|f| match f {
                    Found::Group(g) => g.prefix().eq_ignore_ascii_case(prefix),
                    Found::User(_) => false,
                })
            }
        }
        IdentityRef::Foreign => None,
    })
}

/// `Identity/Self`: the caller, then the groups they are in now, then
/// their provider (local, or their directory).
pub async fn self_entries(app: &App, id: &UserId, name: &str) -> Result<Vec<IdentityEntry>, StoreError> {
    let mut out = vec![IdentityEntry::user(id, name)];
    out.extend(app.store.groups_of(id.clone()).await?.iter().map(IdentityEntry::group));
    out.push(IdentityEntry::provider(id.prefix()));
    Ok(out)
}

/// `Identity/GetMemberships`: the groups a user is in (none for a group).
pub async fn memberships(app: &App, found: &Found) -> Result<Vec<IdentityEntry>, StoreError> {
    Ok(match found {
        Found::User(u) => app.store.groups_of(u.id.clone()).await?.iter().map(IdentityEntry::group).collect(),
        Found::Group(_) => Vec::new(),
    })
}

/// `Identity/GetMembers`: a group's members; `None` for a user.
pub async fn members(app: &App, found: &Found) -> Result<Option<Vec<IdentityEntry>>, StoreError> {
    Ok(match found {
        Found::Group(g) => Some(app.store.members_of(g.id.clone()).await?.iter().map(|u| IdentityEntry::user(&u.id, &u.name)).collect()),
        Found::User(_) => None,
    })
}

/// `Identity/Browse`: users, then groups, whose name matches `filter`, by
/// name, at most `limit`.
pub async fn browse(app: &App, filter: &str, limit: usize, identity_type: i32) -> Result<Vec<IdentityEntry>, StoreError> {
    let (users, groups) = browse_kinds(identity_type);
    let mut out = Vec::new();
    // Matched on the name as shown (`alice` of `LDAP+dir:alice`), or the prefixed name.
    let matches = |e: &IdentityEntry| browse_matches(filter, &e.name) || browse_matches(filter, &e.prefixed_name());
    if users {
        out.extend(app.store.list_users().await?.iter().map(|u| IdentityEntry::user(&u.id, &u.name)).filter(|e| matches(e)));
    }
    if groups && out.len() < limit {
        out.extend(app.store.list_groups().await?.iter().map(|(g, _)| IdentityEntry::group(g)).filter(|e| matches(e)));
    }
    out.truncate(limit);
    Ok(out)
}
