//! The group and password calls of `/vedsdk/Identity`:
//! `AddGroup`, `AddGroupMembers`, `RemoveGroupMembers`, `RenameGroup`,
//! `DELETE Identity/Group/{prefix}/{universal}`, `SetPassword`,
//! `ReadAttribute`. pyvenafi's `Group` and `User` features drive them. A
//! failure is HTTP 400 with only `Message`, as
//! the product answers; a caller without the role (Master Admin, the
//! group's owner) gets 403 with `Message`; a missing scope 403
//! `insufficient_scope`; a bad token 401.

use axum::extract::{Path, State};
use axum::response::Response;

use strongroom_core::identity::{IdentityEntry, LOCAL_PREFIX};
use strongroom_core::secret::Secret;
use strongroom_proto::groups::{
    AddGroupRequest, AddGroupResponse, AttributesResponse, GroupForbidden, GroupMembersRequest, GroupMembersResponse, IdResponse,
    MessageOnly, ReadAttributeRequest, RenameGroupRequest, SetPasswordRequest,
};
use strongroom_proto::vedsdk::IdentityEntry as WireEntry;

use super::extract::{Caller, Identity, Sdk, scope};
use super::respond::{SdkFailure, ok};
use super::responses::{Forbidden, IdentityRefusals, SdkTooLarge, Timeout, Unauthorized, Unavailable};
use crate::state::HttpState;
use strongroom_app::service::Origin;
use strongroom_app::service::groups::{self, GroupError};
use strongroom_proto::read::{FieldError, SdkBody};

pub(crate) fn wire(e: &IdentityEntry) -> WireEntry {
    WireEntry {
        full_name: e.full_name.clone(),
        name: e.name.clone(),
        prefix: e.prefix.clone(),
        prefixed_name: e.prefixed_name(),
        prefixed_universal: e.prefixed_universal(),
        kind: e.kind,
        universal: e.universal.clone(),
    }
}

pub(crate) fn bad(e: FieldError) -> SdkFailure {
    GroupError::Invalid(e.0).into()
}

/// An identity field (`Group`, `ID`, `Name`) as given: required.
pub(crate) fn identity_field(body: &SdkBody, name: &'static str) -> Result<strongroom_proto::vedsdk::IdentityName, SdkFailure> {
    let given = body.identity(&[name]).map_err(bad)?;
    let given =
        given.ok_or_else(|| GroupError::Invalid(format!("{name} is required: an object with PrefixedName or PrefixedUniversal.")))?;
    Ok(strongroom_proto::vedsdk::IdentityName { prefixed_universal: Some(given), ..Default::default() })
}

/// `POST Identity/AddGroup`: scope `configuration:manage`, Master Admin.
#[utoipa::path(
    post,
    path = "/vedsdk/Identity/AddGroup",
    tag = "vedsdk",
    description = "Creates a local group with its members (users; a group or an unknown identity is answered in \
        `InvalidMembers` and not added) and, optionally, `Owners` (users who may then add and remove its members), in one \
        transaction with its events. `Products` is accepted and not kept for a plain group (see `POST Teams/`). A name taken by \
        a user or a group, in any case, is 400. Scope `configuration:manage`; the caller must be a Master Admin (403 with \
        `Message` otherwise).",
    security(("bearer" = [])),
    request_body(content = AddGroupRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The new group.", body = AddGroupResponse),
        IdentityRefusals,
    ),
)]
pub(crate) async fn add_group(
    State(app): State<HttpState>,
    origin: Origin,
    Sdk { ctx, body, .. }: Sdk<scope::ConfigurationManage, Identity>,
) -> Result<Response, SdkFailure> {
    let name = identity_field(&body, "Name")?;
    let members = body.identity_list(&["Members"]).map_err(bad)?;
    let owners = body.identity_list(&["Owners"]).map_err(bad)?;
    body.string_list(&["Products"]).map_err(bad)?;
    let (g, invalid_members, invalid_owners) = groups::add_group(&app, &ctx, &origin, &name, &members, &owners, None).await?;
    Ok(ok(&AddGroupResponse { id: wire(&IdentityEntry::group(&g)), invalid_members, invalid_owners, message: None }))
}

/// Adds (`join`) or removes the body's `Members` to or from the group the
/// body's `field` names (`Group`, or `Team` for the Teams calls).
pub(crate) async fn members_call(
    app: HttpState,
    origin: Origin,
    call: Sdk<scope::ConfigurationManage, Identity>,
    field: &'static str,
    join: bool,
) -> Result<Response, SdkFailure> {
    let Sdk { ctx, body, .. } = call;
    let group = identity_field(&body, field)?;
    let members = body.identity_list(&["Members"]).map_err(bad)?;
    let (now, invalid_members, changed) = groups::change_members(&app, &ctx, &origin, &group, &members, join).await?;
    let message = format!("{changed} member(s) {}.", if join { "added" } else { "removed" });
    Ok(ok(&GroupMembersResponse { members: now.iter().map(wire).collect(), invalid_members, message }))
}

/// `PUT Identity/AddGroupMembers`: scope `configuration:manage`, Master Admin or an owner of the group.
#[utoipa::path(
    put,
    path = "/vedsdk/Identity/AddGroupMembers",
    tag = "vedsdk",
    description = "Adds users to a local group (`Group` by `PrefixedName` or `PrefixedUniversal`), in one transaction, an \
        event per member added. `InvalidMembers` lists, as given, the members that name no user here (an unknown identity, \
        a group: local groups hold users only); the others are added. A member already in the group is no error. `Members` \
        is the group's members afterwards (whatever `ShowMembers`). Scope `configuration:manage`; the caller must be a \
        Master Admin or an owner of the group (403 with `Message` otherwise).",
    security(("bearer" = [])),
    request_body(content = GroupMembersRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The group's members now.", body = GroupMembersResponse),
        IdentityRefusals,
    ),
)]
pub(crate) async fn add_members(
    State(app): State<HttpState>,
    origin: Origin,
    call: Sdk<scope::ConfigurationManage, Identity>,
) -> Result<Response, SdkFailure> {
    members_call(app, origin, call, "Group", true).await
}

/// `PUT Identity/RemoveGroupMembers`: as `AddGroupMembers`.
#[utoipa::path(
    put,
    path = "/vedsdk/Identity/RemoveGroupMembers",
    tag = "vedsdk",
    description = "Removes users from a local group, in one transaction, an event per member removed; the group's rights \
        and places on integrations stop for them at their next request. `InvalidMembers` as `AddGroupMembers`; a user who \
        is no member is no error. Scope `configuration:manage`; Master Admin or an owner of the group.",
    security(("bearer" = [])),
    request_body(content = GroupMembersRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The group's members now.", body = GroupMembersResponse),
        IdentityRefusals,
    ),
)]
pub(crate) async fn remove_members(
    State(app): State<HttpState>,
    origin: Origin,
    call: Sdk<scope::ConfigurationManage, Identity>,
) -> Result<Response, SdkFailure> {
    members_call(app, origin, call, "Group", false).await
}

/// `PUT Identity/RenameGroup`: scope `configuration:manage`, Master Admin.
#[utoipa::path(
    put,
    path = "/vedsdk/Identity/RenameGroup",
    tag = "vedsdk",
    description = "Renames a local group; its identity (`PrefixedUniversal`), members and rights stay. Scope \
        `configuration:manage`; Master Admin.",
    security(("bearer" = [])),
    request_body(content = RenameGroupRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The group, renamed.", body = IdResponse),
        IdentityRefusals,
    ),
)]
pub(crate) async fn rename_group(
    State(app): State<HttpState>,
    origin: Origin,
    Sdk { ctx, body, .. }: Sdk<scope::ConfigurationManage, Identity>,
) -> Result<Response, SdkFailure> {
    let group = identity_field(&body, "Group")?;
    let new_name = body.string(&["NewGroupName"]).map_err(bad)?.ok_or_else(|| GroupError::Invalid("NewGroupName is required.".into()))?;
    let g = groups::rename_group(&app, &ctx, &origin, &group, &new_name).await?;
    Ok(ok(&IdResponse { id: wire(&IdentityEntry::group(&g)) }))
}

/// `DELETE Identity/Group/{prefix}/{universal}`: scope `configuration:delete`, Master Admin.
#[utoipa::path(
    delete,
    path = "/vedsdk/Identity/Group/{prefix}/{universal}",
    tag = "vedsdk",
    description = "Deletes a local group (`prefix` `local`; `universal` its GUID, with braces, `%7B…%7D`, or none). Its \
        members remain; its rights and places on integrations go with it, at once. Scope `configuration:delete`; Master Admin.",
    params(("prefix" = String, Path, description = "`local`"), ("universal" = String, Path, description = "`{guid}`")),
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
pub(crate) async fn delete_group(
    State(app): State<HttpState>,
    origin: Origin,
    Path((prefix, universal)): Path<(String, String)>,
    Caller(ctx, _): Caller<scope::ConfigurationDelete>,
) -> Result<Response, SdkFailure> {
    if !prefix.eq_ignore_ascii_case(LOCAL_PREFIX) {
        return Err(GroupError::Invalid("Only a local group can be deleted here.".into()).into());
    }
    let g = groups::delete_group(&app, &ctx, &origin, &universal).await?;
    Ok(ok(&MessageOnly { message: format!("Group {} deleted.", g.name) }))
}

/// `POST Identity/SetPassword`: scope `security:manage`.
#[utoipa::path(
    post,
    path = "/vedsdk/Identity/SetPassword",
    tag = "vedsdk",
    description = "Sets a local user's password (8 to 1024 characters). A Master Admin sets anyone's; a user without the role \
        sets only their own, with `OldPassword`, which is checked like a sign-in (a wrong one counts towards the guessing \
        limits and may lock). Every grant of the user ends with it (sign in again). Passwords never reach a log, an event or \
        an answer. Scope `security:manage`.",
    security(("bearer" = [])),
    request_body(content = SetPasswordRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The user.", body = IdResponse),
        IdentityRefusals,
    ),
)]
pub(crate) async fn set_password(
    State(app): State<HttpState>,
    origin: Origin,
    Sdk { ctx, body, .. }: Sdk<scope::SecurityManage, Identity>,
) -> Result<Response, SdkFailure> {
    let id = identity_field(&body, "ID")?;
    let password = body.string(&["Password"]).map_err(bad)?.ok_or_else(|| GroupError::Invalid("Password is required.".into()))?;
    let old = body.string(&["OldPassword"]).map_err(bad)?.map(Secret::new);
    drop(body);
    let entry = groups::set_password(&app, &ctx, &origin, &id, &Secret::new(password), old.as_ref()).await?;
    Ok(ok(&IdResponse { id: wire(&entry) }))
}

/// `POST Identity/ReadAttribute`: scope `configuration`.
#[utoipa::path(
    post,
    path = "/vedsdk/Identity/ReadAttribute",
    tag = "vedsdk",
    description = "An attribute of an identity, as Strongroom keeps it: `Name` and `Full Name` (the name) of a user or group, \
        `Group Membership` (the members' prefixed names) and `Owner` (the owners') of a group. Any other attribute \
        (`Internet EMail Address`, `Given Name`…) has no values here: `Attributes` is empty. An unknown identity is 400. \
        Scope `configuration`.",
    security(("bearer" = [])),
    request_body(content = ReadAttributeRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The values.", body = AttributesResponse),
        (status = 400, description = "Refused: only `Message`.", body = MessageOnly),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 408, response = Timeout),
        (status = 413, response = SdkTooLarge),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn read_attribute(
    State(app): State<HttpState>,
    Sdk { ctx: _, body, .. }: Sdk<scope::Configuration, Identity>,
) -> Result<Response, SdkFailure> {
    let id = identity_field(&body, "ID")?;
    let name = body.string(&["AttributeName"]).map_err(bad)?.ok_or_else(|| GroupError::Invalid("AttributeName is required.".into()))?;
    let attributes = groups::read_attribute(&app, &id, &name).await?;
    Ok(ok(&AttributesResponse { attributes }))
}
