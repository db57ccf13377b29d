//! Groups administered over the API: a group made with its
//! members, owners and team details in one transaction; batches of
//! membership changes, each one conditional write with its own event;
//! renames; owners and teams (migration 0011).

use std::sync::LazyLock;

use strongroom_core::event::Event;
use strongroom_core::identity::{Group, GroupId, User, UserId};

use super::events::append_event;
use super::{Conn, exists};
use crate::codec::{self, values};
use crate::schema::{self, USERS};
use crate::sql::{self, Sql};
use crate::{MemberChange, StoreError, StoreResult, Team};

static INSERT_OWNER: LazyLock<Sql> =
    LazyLock::new(|| Sql::new(format!("{} ON CONFLICT (group_id, user_id) DO NOTHING", schema::GROUP_OWNERS.insert())));

static INSERT_TEAM: LazyLock<Sql> = LazyLock::new(|| Sql::new(schema::GROUP_TEAMS.insert()));

/// `?1` group id → its team row.
static TEAM: LazyLock<Sql> = LazyLock::new(|| Sql::new("SELECT description, products FROM group_teams WHERE group_id = ?1"));

/// The owners of group `?1`, by name.
static OWNERS_OF: LazyLock<Sql> = LazyLock::new(|| {
    Sql::new(format!(
        "SELECT {} FROM group_owners o JOIN users u ON u.id = o.user_id WHERE o.group_id = ?1 ORDER BY u.name_key",
        USERS.cols("u")
    ))
});

static OWNS: LazyLock<Sql> = LazyLock::new(|| Sql::new("SELECT 1 FROM group_owners WHERE group_id = ?1 AND user_id = ?2"));

/// [`OWNS`] in a write: PostgreSQL share-locks the row, so the ownership
/// cannot go before the change that relied on it commits (SQLite's one
/// writer serialises anyway).
static STILL_OWNS: LazyLock<Sql> = LazyLock::new(|| {
    Sql::dialects(
        "SELECT 1 FROM group_owners WHERE group_id = ?1 AND user_id = ?2",
        "SELECT 1 FROM group_owners WHERE group_id = ?1 AND user_id = ?2 FOR SHARE",
    )
});

/// A user's name key `?1` taken?
static USER_NAME_TAKEN: LazyLock<Sql> = LazyLock::new(|| Sql::new("SELECT 1 FROM users WHERE name_key = ?1"));

/// Renames group `?1` to `?2` (key `?3`).
static RENAME_GROUP: LazyLock<Sql> = LazyLock::new(|| Sql::new("UPDATE groups SET name = ?2, name_key = ?3 WHERE id = ?1"));

static GROUP_EXISTS: LazyLock<Sql> = LazyLock::new(|| Sql::new("SELECT 1 FROM groups WHERE id = ?1"));

fn products_text(t: &Team) -> String {
    t.products.join("\n")
}

/// See [`crate::GroupStore::create_group_with`].
pub(crate) async fn create_group_with<C: Conn>(
    c: &C,
    g: &Group,
    owners: &[UserId],
    team: Option<&Team>,
    members: &[MemberChange],
    event: &Event,
) -> StoreResult<()> {
    if exists(c, &USER_NAME_TAKEN, &values![g.name.to_lowercase()]).await? {
        return Err(StoreError::Conflict);
    }
    c.execute(&sql::INSERT_GROUP, &codec::group_row(g)).await?;
    for o in owners {
        c.execute(&INSERT_OWNER, &values![g.id.as_str(), o.as_str()]).await?;
    }
    if let Some(t) = team {
        let products = products_text(t);
        c.execute(&INSERT_TEAM, &values![g.id.as_str(), t.description.as_str(), products.as_str()]).await?;
    }
    append_event(c, event).await?;
    for m in members.iter().filter(|m| m.join) {
        if c.execute(&sql::ADD_MEMBER, &values![g.id.as_str(), m.user.as_str()]).await? == 1 {
            append_event(c, &m.event).await?;
        }
    }
    Ok(())
}

/// See [`crate::GroupStore::change_members`].
pub(crate) async fn change_members<C: Conn>(
    c: &C,
    group: &GroupId,
    changes: &[MemberChange],
    owner: Option<&UserId>,
) -> StoreResult<Option<Vec<bool>>> {
    if !exists(c, &GROUP_EXISTS, &values![group.as_str()]).await? {
        return Ok(None);
    }
    if let Some(o) = owner
        && !exists(c, &STILL_OWNS, &values![group.as_str(), o.as_str()]).await?
    {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(changes.len());
    for m in changes {
        let statement = if m.join { &*sql::ADD_MEMBER } else { &*sql::REMOVE_MEMBER };
        let changed = c.execute(statement, &values![group.as_str(), m.user.as_str()]).await? == 1;
        if changed {
            append_event(c, &m.event).await?;
        }
        out.push(changed);
    }
    Ok(Some(out))
}

/// See [`crate::GroupStore::rename_group`].
pub(crate) async fn rename_group<C: Conn>(c: &C, group: &GroupId, name: &str, event: &Event) -> StoreResult<bool> {
    let key = name.to_lowercase();
    if exists(c, &USER_NAME_TAKEN, &values![key.as_str()]).await? {
        return Err(StoreError::Conflict);
    }
    let renamed = c.execute(&RENAME_GROUP, &values![group.as_str(), name, key.as_str()]).await? == 1;
    if renamed {
        append_event(c, event).await?;
    }
    Ok(renamed)
}

pub(crate) async fn group_owners<C: Conn>(c: &C, group: &GroupId) -> StoreResult<Vec<User>> {
    c.query(&OWNERS_OF, &values![group.as_str()], codec::user).await
}

pub(crate) async fn owns_group<C: Conn>(c: &C, group: &GroupId, user: &UserId) -> StoreResult<bool> {
    exists(c, &OWNS, &values![group.as_str(), user.as_str()]).await
}

pub(crate) async fn team<C: Conn>(c: &C, group: &GroupId) -> StoreResult<Option<Team>> {
    c.query_opt(&TEAM, &values![group.as_str()], |r| {
        let description = r.text()?;
        let products = r.text()?;
        Ok(Team { description, products: products.split('\n').filter(|p| !p.is_empty()).map(str::to_owned).collect() })
    })
    .await
}

/// The methods of [`crate::GroupStore`], alike on both backends (see [`super::methods`]).
macro_rules! group_methods {
    ($read:ident, $write:ident, $single:ident, $plain:ident) => {
        fn create_group_with(
            &self,
            group: Group,
            owners: Vec<UserId>,
            team: Option<Team>,
            members: Vec<MemberChange>,
            event: Event,
        ) -> StoreFuture<'_, ()> {
            $write!(self, |c| groups::create_group_with(c, &group, &owners, team.as_ref(), &members, &event))
        }
        fn change_members(&self, group: GroupId, changes: Vec<MemberChange>, owner: Option<UserId>) -> StoreFuture<'_, Option<Vec<bool>>> {
            $write!(self, |c| groups::change_members(c, &group, &changes, owner.as_ref()))
        }
        fn rename_group(&self, group: GroupId, name: String, event: Event) -> StoreFuture<'_, bool> {
            $write!(self, |c| groups::rename_group(c, &group, &name, &event))
        }
        fn group_owners(&self, group: GroupId) -> StoreFuture<'_, Vec<User>> {
            $read!(self, |c| groups::group_owners(c, &group))
        }
        fn owns_group(&self, group: GroupId, user: UserId) -> StoreFuture<'_, bool> {
            $read!(self, |c| groups::owns_group(c, &group, &user))
        }
        fn team(&self, group: GroupId) -> StoreFuture<'_, Option<Team>> {
            $read!(self, |c| groups::team(c, &group))
        }
    };
}
pub(crate) use group_methods;
