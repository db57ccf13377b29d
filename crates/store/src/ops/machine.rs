//! Machines without a stored secret: JWT issuers, mappings, machine
//! identities, and the JWT grant's one write (the replay record, the
//! machine's user row on its first grant, the grant and its events).

use strongroom_core::event::{Event, EventKind};
use strongroom_core::identity::{User, UserId};
use strongroom_core::machine::{JwtIssuer, Mapping};

use super::events::{append_event, with_event};
use super::{Conn, int};
use crate::codec::{self, values};
use crate::sql;
use crate::{IssuerRemoval, MachineGrant, MachineIssue, StoreResult};

/// What a machine identity's password hash is: no PHC string, so no password ever matches.
pub(crate) const NO_PASSWORD: &str = "!machine";

pub(crate) async fn save_jwt_issuer<C: Conn>(c: &C, j: &JwtIssuer, event: &Event) -> StoreResult<()> {
    c.execute(&sql::SAVE_JWT_ISSUER, &codec::jwt_issuer_row(j)).await?;
    append_event(c, event).await.map(drop)
}

pub(crate) async fn jwt_issuers<C: Conn>(c: &C) -> StoreResult<Vec<JwtIssuer>> {
    c.query(&sql::LIST_JWT_ISSUERS, &[], codec::jwt_issuer).await
}

pub(crate) async fn remove_jwt_issuer<C: Conn>(c: &C, name: &str, event: &Event) -> StoreResult<IssuerRemoval> {
    let used = int(c, &sql::ISSUER_MAPPINGS, &values![name]).await?;
    if used > 0 {
        return Ok(IssuerRemoval::InUse(u64::try_from(used).unwrap_or(0)));
    }
    if c.execute(&sql::DELETE_JWT_ISSUER, &values![name]).await? == 0 {
        return Ok(IssuerRemoval::NotFound);
    }
    append_event(c, event).await?;
    Ok(IssuerRemoval::Removed)
}

pub(crate) async fn save_mapping<C: Conn>(c: &C, m: &Mapping, event: &Event) -> StoreResult<()> {
    c.execute(&sql::SAVE_MAPPING, &codec::mapping_row(m)).await?;
    c.execute(&sql::CLEAR_MAPPING_CLIENTS, &values![m.name.as_str()]).await?;
    for client in &m.client_ids {
        c.execute(&sql::INSERT_MAPPING_CLIENT, &values![m.name.as_str(), client.as_str()]).await?;
    }
    append_event(c, event).await.map(drop)
}

pub(crate) async fn mappings<C: Conn>(c: &C) -> StoreResult<Vec<Mapping>> {
    Ok(codec::mappings(c.query(&sql::LIST_MAPPINGS, &[], codec::mapping_and_client).await?))
}

/// Removes mapping `name`; the live grants of its identities are revoked.
/// `None`: no such mapping; else the grants revoked.
pub(crate) async fn remove_mapping<C: Conn>(c: &C, name: &str, event: &Event) -> StoreResult<Option<u64>> {
    let revoked = c.execute(&sql::REVOKE_MAPPING_GRANTS, &values![event.at, name]).await?;
    if c.execute(&sql::DELETE_MAPPING, &values![name]).await? == 0 {
        return Ok(None);
    }
    let mut event = event.clone();
    event.detail = format!("grants_ended={revoked}");
    append_event(c, &event).await?;
    Ok(Some(revoked))
}

/// The issuer whose `iss` is `iss`, with its mappings.
pub(crate) async fn jwt_context<C: Conn>(c: &C, iss: &str) -> StoreResult<Option<(JwtIssuer, Vec<Mapping>)>> {
    // Both by `iss`: on PostgreSQL the two statements travel together, one round trip.
    let key = values![iss];
    let (issuer, rows) = tokio::join!(
        c.query_opt(&sql::JWT_ISSUER_BY_ISS, &key, codec::jwt_issuer),
        c.query(&sql::ISSUER_MAPPINGS_ROWS, &key, codec::mapping_and_client),
    );
    let Some(issuer) = issuer? else { return Ok(None) };
    Ok(Some((issuer, codec::mappings(rows?))))
}

/// Makes sure machine identity `user` (of mapping `mapping`) has its row:
/// `Some(disabled)` when it has one (made now, with `event`, or before);
/// `None` when its name is another user's (two subjects that differ only in case).
pub(crate) async fn ensure_machine_user<C: Conn>(c: &C, user: &User, mapping: &str, event: &Event) -> StoreResult<Option<bool>> {
    if let Some(disabled) = machine_user_disabled(c, &user.id).await? {
        return Ok(Some(disabled));
    }
    if c.execute(&sql::INSERT_MACHINE_USER, &codec::user_row(user, NO_PASSWORD)).await? == 1 {
        c.execute(&sql::INSERT_MACHINE_LINK, &values![user.id.as_str(), mapping]).await?;
        append_event(c, event).await?;
        return Ok(Some(false));
    }
    // Made by a simultaneous first grant (committed meanwhile), or the name is taken.
    machine_user_disabled(c, &user.id).await
}

/// The JWT (certificate) grant's write: the JWT's replay record (one
/// conditional insert: a JWT seen before answers `Replayed` and writes
/// nothing), the machine identity's row on its first grant, the grant.
pub(crate) async fn insert_machine_grant<C: Conn>(c: &C, m: &MachineGrant, event: &Event) -> StoreResult<MachineIssue> {
    // The replay record and the identity's standing do not depend on each
    // other: they travel together (one round trip on PostgreSQL). A replay
    // writes nothing else.
    let record = async {
        match &m.replay {
            Some(r) => Ok(c.execute(&sql::RECORD_JWT, &values![r.issuer.as_str(), r.key.as_str(), r.expires, event.at]).await? == 1),
            None => Ok(true),
        }
    };
    let (fresh, standing) = tokio::join!(record, machine_user_disabled(c, &m.grant.user_id));
    if !fresh? {
        return Ok(MachineIssue::Replayed);
    }
    let user = User {
        id: m.grant.user_id.clone(),
        name: m.grant.user_id.identity(),
        disabled: false,
        master_admin: false,
        created_at: event.at,
        signed_in_at: None,
    };
    let mut added = event.clone();
    added.kind = EventKind::MachineIdentityAdded;
    added.object = user.name.clone();
    added.detail = format!("mapping={}", m.mapping);
    let disabled = match standing? {
        Some(disabled) => Some(disabled),
        None => ensure_machine_user(c, &user, &m.mapping, &added).await?,
    };
    match disabled {
        None => return Ok(MachineIssue::IdentityTaken),
        Some(true) => return Ok(MachineIssue::Disabled),
        Some(false) => {}
    }
    with_event(c, c.execute(&sql::INSERT_GRANT, &codec::grant_row(&m.grant)), event).await?;
    Ok(MachineIssue::Issued)
}

/// Whether user `id` is disabled; `None` when there is no such user.
async fn machine_user_disabled<C: Conn>(c: &C, id: &UserId) -> StoreResult<Option<bool>> {
    c.query_opt(&sql::MACHINE_USER_DISABLED, &values![id.as_str()], |r| r.bool()).await
}

/// The user row of a machine identity an administrator names before its first grant.
pub(crate) async fn add_machine_identity<C: Conn>(c: &C, user: &User, mapping: &str, event: &Event) -> StoreResult<bool> {
    Ok(ensure_machine_user(c, user, mapping, event).await?.is_some())
}
