//! VenafiPS's `Teams/*` (`New-VdcTeam`, `Add-VdcTeamMember`): `POST Teams/`,
//! `PUT Teams/AddTeamMembers`, `PUT Teams/RemoveTeamMembers`,
//! `GET`/`DELETE Teams/local/{guid}`. A team is a local group with owners, a
//! description and products (migration 0011); the membership calls are
//! `Identity/AddGroupMembers`' (one implementation), and work on any local
//! group. `GET` of a plain group answers 400 "Failed to read the team
//! identity", as the product (VenafiPS's `Get-VdcTeam -All` skips those).

use axum::extract::{Path, State};
use axum::response::Response;

use strongroom_core::identity::IdentityEntry;
use strongroom_proto::groups::{
    AddGroupResponse, GroupForbidden, GroupMembersResponse, MessageOnly, NewTeamRequest, TeamMembersRequest, TeamResponse,
};
use strongroom_store::Team;

use super::extract::{Caller, Identity, Sdk, scope};
use super::groups::{bad, identity_field, members_call, wire};
use super::respond::{SdkFailure, ok};
use super::responses::{Forbidden, IdentityRefusals, Timeout, Unauthorized, Unavailable};
use crate::state::HttpState;
use strongroom_app::service::Origin;
use strongroom_app::service::groups;

/// The longest team description kept.
const MAX_DESCRIPTION: usize = 1024;

/// `POST Teams/`: scope `configuration:manage`, Master Admin.
#[utoipa::path(
    post,
    path = "/vedsdk/Teams",
    tag = "vedsdk",
    description = "Creates a team: a local group with its members, `Owners` (who may add and remove members), `Products` and \
        `Description`, in one transaction with its events. Members and owners that name no user here are answered in \
        `InvalidMembers` / `InvalidOwners`; `Assets` is accepted and not kept (grant rights with `Permissions/*`). \
        Scope `configuration:manage`; Master Admin.",
    security(("bearer" = [])),
    request_body(content = NewTeamRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The new team.", body = AddGroupResponse),
        IdentityRefusals,
    ),
)]
pub(crate) async fn create(
    State(app): State<HttpState>,
    origin: Origin,
    Sdk { ctx, body, .. }: Sdk<scope::ConfigurationManage, Identity>,
) -> Result<Response, SdkFailure> {
    let name = identity_field(&body, "Name")?;
    let members = body.identity_list(&["Members"]).map_err(bad)?;
    let owners = body.identity_list(&["Owners"]).map_err(bad)?;
    let products = body.string_list(&["Products"]).map_err(bad)?;
    body.string_list(&["Assets"]).map_err(bad)?;
    let description = body.string(&["Description"]).map_err(bad)?.unwrap_or_default();
    if description.len() > MAX_DESCRIPTION || products.iter().any(|p| p.len() > 64 || p.contains('\n')) || products.len() > 16 {
        return Err(groups::GroupError::Invalid("Description is at most 1024 bytes; Products at most 16 names of 64 bytes.".into()).into());
    }
    let team = Team { description, products };
    let (g, invalid_members, invalid_owners) = groups::add_group(&app, &ctx, &origin, &name, &members, &owners, Some(team)).await?;
    let message = Some(format!("Team {} created.", g.name));
    Ok(ok(&AddGroupResponse { id: wire(&IdentityEntry::group(&g)), invalid_members, invalid_owners, message }))
}

/// `PUT Teams/AddTeamMembers`: as `Identity/AddGroupMembers`.
#[utoipa::path(
    put,
    path = "/vedsdk/Teams/AddTeamMembers",
    tag = "vedsdk",
    description = "Adds users to a team (or any local group): `Identity/AddGroupMembers` with `Team` for `Group`. Members may \
        carry `PrefixedName` and `PrefixedUniversal` both (VenafiPS sends both; `PrefixedUniversal` decides). Scope \
        `configuration:manage`; Master Admin or an owner of the team.",
    security(("bearer" = [])),
    request_body(content = TeamMembersRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The team's members now.", body = GroupMembersResponse),
        IdentityRefusals,
    ),
)]
pub(crate) async fn add_members(
    State(app): State<HttpState>,
    origin: Origin,
    call: Sdk<scope::ConfigurationManage, Identity>,
) -> Result<Response, SdkFailure> {
    members_call(app, origin, call, "Team", true).await
}

/// `PUT Teams/RemoveTeamMembers`: as `Identity/RemoveGroupMembers`.
#[utoipa::path(
    put,
    path = "/vedsdk/Teams/RemoveTeamMembers",
    tag = "vedsdk",
    description = "Removes users from a team (or any local group): `Identity/RemoveGroupMembers` with `Team` for `Group`. \
        Scope `configuration:manage`; Master Admin or an owner of the team.",
    security(("bearer" = [])),
    request_body(content = TeamMembersRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The team's members now.", body = GroupMembersResponse),
        IdentityRefusals,
    ),
)]
pub(crate) async fn remove_members(
    State(app): State<HttpState>,
    origin: Origin,
    call: Sdk<scope::ConfigurationManage, Identity>,
) -> Result<Response, SdkFailure> {
    members_call(app, origin, call, "Team", false).await
}

/// `GET Teams/local/{guid}`: scope `configuration`.
#[utoipa::path(
    get,
    path = "/vedsdk/Teams/local/{guid}",
    tag = "vedsdk",
    description = "A team: its identity, members, owners, products and description (`Assets` always empty). A plain group \
        (made by `Identity/AddGroup` or `admin groups add`) answers 400 `Failed to read the team identity`, as the product. \
        The GUID with braces, `%7B…%7D`, or none. Scope `configuration`.",
    params(("guid" = String, Path, description = "`{guid}`")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The team.", body = TeamResponse),
        (status = 400, description = "Refused: only `Message`.", body = MessageOnly),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 408, response = Timeout),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn get_team(
    State(app): State<HttpState>,
    Path(guid): Path<String>,
    Caller(_ctx, _): Caller<scope::Configuration>,
) -> Result<Response, SdkFailure> {
    let t = groups::team(&app, &guid).await?;
    Ok(ok(&TeamResponse {
        id: wire(&IdentityEntry::group(&t.group)),
        members: t.members.iter().map(wire).collect(),
        owners: t.owners.iter().map(wire).collect(),
        assets: Vec::new(),
        products: t.team.products,
        description: t.team.description,
    }))
}

/// `DELETE Teams/local/{guid}`: scope `configuration:delete`, Master Admin.
#[utoipa::path(
    delete,
    path = "/vedsdk/Teams/local/{guid}",
    tag = "vedsdk",
    description = "Deletes a team (or any local group), as `DELETE Identity/Group/local/{guid}`: its members remain. Scope \
        `configuration:delete`; Master Admin.",
    params(("guid" = String, Path, description = "`{guid}`")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Deleted.", body = MessageOnly),
        (status = 400, description = "Refused: only `Message`.", body = MessageOnly),
        (status = 401, response = Unauthorized),
        (status = 403, description = "A missing scope (`insufficient_scope`), or the caller lacks the role (`Message`).", body = GroupForbidden),
        (status = 408, response = Timeout),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn delete_team(
    State(app): State<HttpState>,
    origin: Origin,
    Path(guid): Path<String>,
    Caller(ctx, _): Caller<scope::ConfigurationDelete>,
) -> Result<Response, SdkFailure> {
    let g = groups::delete_group(&app, &ctx, &origin, &guid).await?;
    Ok(ok(&MessageOnly { message: format!("Team {} deleted.", g.name) }))
}
