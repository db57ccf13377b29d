//! The group and password calls of the API: who may do
//! what, and which identities a request names. Every change is one act of
//! [`crate::admin::Admin`], acting as the caller ([`admin_for`]), so its
//! event names them.
//!
//! Who may: `AddGroup`, `RenameGroup`, deleting a group and `POST Teams/`
//! need a Master Admin; adding and removing members needs a Master Admin
//! or an owner of the group; setting another user's password needs a
//! Master Admin, and a user may set their own with their old password,
//! checked like a sign-in (the guessing limits count it).

use strongroom_core::grant::AccessContext;
use strongroom_core::identity::{Group, IdentityEntry, IdentityRef, LOCAL_PREFIX, User, login_name};
use strongroom_core::secret::Secret;
use strongroom_proto::vedsdk::IdentityName;
use strongroom_store::{StoreError, Team};

use super::Origin;
use super::identity::{Found, resolve};
use super::login::{LoginError, Surface, authenticate};
use crate::App;
use crate::admin::{Actor, Admin, AdminError};

/// Why a group or password call did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum GroupError {
    /// The request cannot be done (bad or unknown input): the product's 400 with `Message`.
    #[error("{0}")]
    Invalid(String),
    /// The caller lacks the role (Master Admin, or the group's owner).
    #[error("{0}")]
    NotAllowed(String),
    /// A team was asked for and the group is no team (VenafiPS's text).
    #[error("Failed to read the team identity")]
    NotATeam,
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Hashing a new password failed.
    #[error("{0}")]
    Internal(String),
}

impl From<AdminError> for GroupError {
    fn from(e: AdminError) -> Self {
        match e {
            AdminError::Invalid(m) => GroupError::Invalid(m),
            AdminError::NotFound(m) => GroupError::Invalid(format!("{m} not found")),
            AdminError::Exists(m) => GroupError::Invalid(format!("{m} already exists")),
            AdminError::Store(e) => GroupError::Store(e),
            AdminError::Forbidden(m) | AdminError::OwnAccount(m) => GroupError::NotAllowed(m),
            e @ (AdminError::Hashing(_) | AdminError::Chain(_) | AdminError::Keys(_)) => GroupError::Internal(e.to_string()),
        }
    }
}

/// The administrator's handle acting as the caller of `ctx`: its events
/// name them, their address and the request.
pub fn admin_for(app: &App, ctx: &AccessContext, origin: &Origin) -> Admin {
    let admin = Admin {
        store: app.store.clone(),
        clock: app.clock.clone(),
        rng: app.rng.clone(),
        keyring: app.keyring.clone(),
        actor: Actor::cli(),
        on_behalf_of: None,
    };
    admin.acting_as(Actor { identity: ctx.grant.user_id.identity(), source: origin.addr.clone(), request_id: origin.request_id.clone() })
}

/// The text an `IdentityName` names it by: `PrefixedUniversal`, else
/// `PrefixedName`, else `Universal`, else `Name`.
pub fn chosen(n: &IdentityName) -> Option<&str> {
    [&n.prefixed_universal, &n.prefixed_name, &n.universal, &n.name].into_iter().flatten().map(|s| s.trim()).find(|s| !s.is_empty())
}

/// The identity `n` names, if any.
pub async fn find(app: &App, n: &IdentityName) -> Result<Option<Found>, StoreError> {
    match chosen(n).and_then(IdentityRef::parse) {
        Some(r) => resolve(app, &r).await,
        None => Ok(None),
    }
}

/// The users `names` name, and those that name none (a group, an unknown
/// identity, a malformed one), as given. A user named twice counts once.
pub async fn users_of(app: &App, names: &[IdentityName]) -> Result<(Vec<User>, Vec<IdentityName>), StoreError> {
    let (mut users, mut invalid): (Vec<User>, Vec<IdentityName>) = (Vec::new(), Vec::new());
    for n in names {
        match find(app, n).await? {
            Some(Found::User(u)) => {
                if !users.iter().any(|x| x.id == u.id) {
                    users.push(u);
                }
            }
            _ => invalid.push(n.clone()),
        }
    }
    Ok((users, invalid))
}

/// The local group `n` names: 400 when it names none, a user, or a directory's group.
pub async fn local_group(app: &App, n: &IdentityName) -> Result<Group, GroupError> {
    match find(app, n).await? {
        Some(Found::Group(g)) if g.prefix() == LOCAL_PREFIX => Ok(g),
        Some(Found::Group(_)) => Err(GroupError::Invalid("A directory's group: its members come from the directory.".into())),
        Some(Found::User(_)) => Err(GroupError::Invalid("The identity is a user, not a group.".into())),
        None => Err(GroupError::Invalid("No such group.".into())),
    }
}

/// The local group whose GUID (`{guid}`, braces or none) a path names.
async fn by_universal(app: &App, universal: &str) -> Result<Group, GroupError> {
    match IdentityRef::parse(universal) {
        Some(IdentityRef::Universal(id)) => {
            local_group(app, &IdentityName { prefixed_universal: Some(format!("{LOCAL_PREFIX}:{{{id}}}")), ..Default::default() }).await
        }
        _ => Err(GroupError::Invalid("The group must be named by its GUID: {guid}.".into())),
    }
}

/// A new group's name as given (`local:NAME` or `NAME`).
pub fn new_group_name(n: &IdentityName) -> Result<String, GroupError> {
    let bad = || GroupError::Invalid("Name must be a local group's name: local:NAME.".into());
    match chosen(n).and_then(IdentityRef::parse) {
        Some(IdentityRef::Name(name)) if !name.contains(':') => Ok(name),
        _ => Err(bad()),
    }
}

fn master_admin(ctx: &AccessContext, what: &str) -> Result<(), GroupError> {
    if ctx.master_admin { Ok(()) } else { Err(GroupError::NotAllowed(format!("Only a Master Admin may {what}."))) }
}

/// `Identity/AddGroup` and `POST Teams/`: a new local group (a team when
/// `team` is given) with its valid members and owners; the invalid ones
/// are answered, as given.
pub async fn add_group(
    app: &App,
    ctx: &AccessContext,
    origin: &Origin,
    name: &IdentityName,
    members: &[IdentityName],
    owners: &[IdentityName],
    team: Option<Team>,
) -> Result<(Group, Vec<IdentityName>, Vec<IdentityName>), GroupError> {
    master_admin(ctx, "create groups")?;
    let name = new_group_name(name)?;
    let (members, invalid_members) = users_of(app, members).await?;
    let (owners, invalid_owners) = users_of(app, owners).await?;
    let g = admin_for(app, ctx, origin).create_group_with(&name, &owners, team, &members).await?;
    Ok((g, invalid_members, invalid_owners))
}

/// Adds (`join`) or removes members of the local group `group` names: the
/// caller is a Master Admin or one of its owners. The group's members
/// afterwards, the members asked for that name no user, and how many changed.
pub async fn change_members(
    app: &App,
    ctx: &AccessContext,
    origin: &Origin,
    group: &IdentityName,
    members: &[IdentityName],
    join: bool,
) -> Result<(Vec<IdentityEntry>, Vec<IdentityName>, usize), GroupError> {
    let g = local_group(app, group).await?;
    if !ctx.master_admin && !app.store.owns_group(g.id.clone(), ctx.grant.user_id.clone()).await? {
        return Err(GroupError::NotAllowed("Only a Master Admin or an owner of the group may change its members.".into()));
    }
    let (users, invalid) = users_of(app, members).await?;
    // An owner's change holds only while they own the group, checked again in its transaction.
    let as_owner = (!ctx.master_admin).then_some(&ctx.grant.user_id);
    let changed = match admin_for(app, ctx, origin).change_members(&g, &users, join, as_owner).await {
        Err(AdminError::NotFound(_)) if as_owner.is_some() => {
            return Err(GroupError::NotAllowed("Only a Master Admin or an owner of the group may change its members.".into()));
        }
        other => other?,
    };
    let now = app.store.members_of(g.id.clone()).await?;
    Ok((now.iter().map(|u| IdentityEntry::user(&u.id, &u.name)).collect(), invalid, changed.iter().filter(|c| **c).count()))
}

/// `Identity/RenameGroup`: a Master Admin renames a local group.
pub async fn rename_group(
    app: &App,
    ctx: &AccessContext,
    origin: &Origin,
    group: &IdentityName,
    new_name: &str,
) -> Result<Group, GroupError> {
    master_admin(ctx, "rename groups")?;
    let g = local_group(app, group).await?;
    let name = login_name(new_name);
    Ok(admin_for(app, ctx, origin).rename_group(&g, name).await?)
}

/// `DELETE Identity/Group/local/{guid}`, `DELETE Teams/local/{guid}`: a
/// Master Admin deletes a local group; its members remain.
pub async fn delete_group(app: &App, ctx: &AccessContext, origin: &Origin, universal: &str) -> Result<Group, GroupError> {
    master_admin(ctx, "delete groups")?;
    let g = by_universal(app, universal).await?;
    admin_for(app, ctx, origin).delete_group(&g.name).await?;
    Ok(g)
}

/// `Identity/SetPassword`. A Master Admin sets any local user's password;
/// a user may set their own with `old` right, checked through the hashing
/// pool under the guessing limits of a sign-in (a wrong one counts as a
/// failed sign-in and may lock). Every grant of the user ends with it
/// (`Admin::set_password` without `keep_grants`, as `admin users
/// set-password`): a reset after a compromise leaves nothing behind, and a
/// user setting their own password signs in again.
pub async fn set_password(
    app: &App,
    ctx: &AccessContext,
    origin: &Origin,
    id: &IdentityName,
    password: &Secret,
    old: Option<&Secret>,
) -> Result<IdentityEntry, GroupError> {
    let user = match find(app, id).await? {
        Some(Found::User(u)) if !u.id.is_directory() && !u.id.is_machine() => u,
        Some(Found::User(_)) => return Err(GroupError::Invalid("Only a local user has a password here.".into())),
        Some(Found::Group(_)) => return Err(GroupError::Invalid("The identity is a group, not a user.".into())),
        None => return Err(GroupError::Invalid("No such user.".into())),
    };
    if !ctx.master_admin {
        if user.id != ctx.grant.user_id {
            return Err(GroupError::NotAllowed("Only a Master Admin may set another user's password.".into()));
        }
        crate::admin::groups::check_new_password(password)?;
        let old = old.ok_or_else(|| GroupError::Invalid("OldPassword is required to change your own password.".into()))?;
        match authenticate(app, &format!("{LOCAL_PREFIX}:{}", user.name), old, Surface::OldPasswordCheck, origin).await {
            Ok(u) if u.id == user.id => {}
            Ok(_) | Err(LoginError::Invalid) => return Err(GroupError::Invalid("The old password is wrong.".into())),
            Err(LoginError::Locked | LoginError::Busy) => {
                return Err(GroupError::Invalid("Too many failed attempts: try again later.".into()));
            }
            Err(LoginError::Unavailable) => return Err(GroupError::Invalid("The password could not be checked now.".into())),
            Err(LoginError::Store(e)) => return Err(e.into()),
        }
    }
    admin_for(app, ctx, origin).set_password(&user.name, password, false).await?;
    Ok(IdentityEntry::user(&user.id, &user.name))
}

/// `Identity/ReadAttribute`: what Strongroom keeps of an identity. A user's
/// `Name` and `Full Name` (their name); a group's `Name`, `Full Name`,
/// `Group Membership` (its members' prefixed names) and `Owner` (its
/// owners'); any other attribute has no values here.
pub async fn read_attribute(app: &App, id: &IdentityName, attribute: &str) -> Result<Vec<String>, GroupError> {
    let found = find(app, id).await?.ok_or_else(|| GroupError::Invalid("No such identity.".into()))?;
    let entry = found.entry();
    let a = attribute.trim().to_lowercase();
    Ok(match (&found, a.as_str()) {
        (_, "name" | "full name") => vec![entry.name],
        (Found::Group(g), "group membership" | "member") => {
            app.store.members_of(g.id.clone()).await?.iter().map(|u| IdentityEntry::user(&u.id, &u.name).prefixed_name()).collect()
        }
        (Found::Group(g), "owner" | "owners") => {
            app.store.group_owners(g.id.clone()).await?.iter().map(|u| IdentityEntry::user(&u.id, &u.name).prefixed_name()).collect()
        }
        _ => Vec::new(),
    })
}

/// A team: the group, its members, owners and details.
#[derive(Debug, Clone)]
pub struct TeamView {
    pub group: Group,
    pub members: Vec<IdentityEntry>,
    pub owners: Vec<IdentityEntry>,
    pub team: Team,
}

/// `GET Teams/local/{guid}`: a plain group is [`GroupError::NotATeam`].
pub async fn team(app: &App, universal: &str) -> Result<TeamView, GroupError> {
    let g = by_universal(app, universal).await?;
    let team = app.store.team(g.id.clone()).await?.ok_or(GroupError::NotATeam)?;
    let entries = |us: Vec<User>| us.iter().map(|u| IdentityEntry::user(&u.id, &u.name)).collect();
    let members = entries(app.store.members_of(g.id.clone()).await?);
    let owners = entries(app.store.group_owners(g.id.clone()).await?);
    Ok(TeamView { group: g, members, owners, team })
}
