//! Wire shapes of the group and password calls:
//! `Identity/AddGroup`, `AddGroupMembers`, `RemoveGroupMembers`,
//! `RenameGroup`, `DELETE Identity/Group/…`, `SetPassword`,
//! `ReadAttribute`, and VenafiPS's `Teams/*`.
//! Requests are read leniently by the server (any key case); these types
//! describe them.

use serde::{Deserialize, Serialize};

use crate::SecretString;
use crate::vedsdk::{IdentityEntry, IdentityName};

/// A failure of these calls: HTTP 400 (or 403 without the role) with only `Message`, as the product answers.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MessageOnly {
    #[serde(rename = "Message")]
    pub message: String,
}

/// `POST Identity/AddGroup`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"Name": {"PrefixedName": "local:Ops"}, "Members": [{"PrefixedName": "local:alice"}], "Products": []})))]
pub struct AddGroupRequest {
    /// The new group's name: `local:NAME`.
    #[serde(rename = "Name")]
    pub name: IdentityName,
    /// Users to add (a group, or an unknown identity, is reported in `InvalidMembers`).
    #[serde(rename = "Members", default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<IdentityName>,
    /// Users who may add and remove members without being Master Admins.
    #[serde(rename = "Owners", default, skip_serializing_if = "Vec::is_empty")]
    pub owners: Vec<IdentityName>,
    /// Accepted and not stored for a plain group (a team keeps them: `POST Teams/`).
    #[serde(rename = "Products", default, skip_serializing_if = "Vec::is_empty")]
    pub products: Vec<String>,
}

/// `POST Identity/AddGroup` and `POST Teams/` → the new group.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AddGroupResponse {
    #[serde(rename = "ID")]
    pub id: IdentityEntry,
    /// Members that name no user here, as given.
    #[serde(rename = "InvalidMembers")]
    pub invalid_members: Vec<IdentityName>,
    /// Owners that name no user here, as given.
    #[serde(rename = "InvalidOwners")]
    pub invalid_owners: Vec<IdentityName>,
    #[serde(rename = "Message", default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `PUT Identity/AddGroupMembers`, `PUT Identity/RemoveGroupMembers`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"Group": {"PrefixedName": "local:Ops"}, "Members": [{"PrefixedName": "local:alice"}], "ShowMembers": true})))]
pub struct GroupMembersRequest {
    #[serde(rename = "Group")]
    pub group: IdentityName,
    #[serde(rename = "Members")]
    pub members: Vec<IdentityName>,
    /// Accepted; `Members` is always answered.
    #[serde(rename = "ShowMembers", default, skip_serializing_if = "Option::is_none")]
    pub show_members: Option<bool>,
}

/// `PUT Teams/AddTeamMembers`, `PUT Teams/RemoveTeamMembers`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"Team": {"PrefixedName": "local:Platform"}, "Members": [{"PrefixedName": "local:alice", "PrefixedUniversal": "local:{0b8f7f8e-1111-4222-8333-444455556666}"}]})))]
pub struct TeamMembersRequest {
    #[serde(rename = "Team")]
    pub team: IdentityName,
    #[serde(rename = "Members")]
    pub members: Vec<IdentityName>,
}

/// The answer of a membership change: the group's members now, and the
/// members asked for that name no user here (a group, an unknown name).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GroupMembersResponse {
    #[serde(rename = "Members")]
    pub members: Vec<IdentityEntry>,
    #[serde(rename = "InvalidMembers")]
    pub invalid_members: Vec<IdentityName>,
    #[serde(rename = "Message")]
    pub message: String,
}

/// `PUT Identity/RenameGroup`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"Group": {"PrefixedName": "local:Ops"}, "NewGroupName": "Operations"})))]
pub struct RenameGroupRequest {
    #[serde(rename = "Group")]
    pub group: IdentityName,
    /// The new name, without a prefix (`local:` is accepted).
    #[serde(rename = "NewGroupName")]
    pub new_group_name: String,
}

/// `PUT Identity/RenameGroup`, `POST Identity/SetPassword` → `{"ID":{…}}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IdResponse {
    #[serde(rename = "ID")]
    pub id: IdentityEntry,
}

/// `POST Identity/SetPassword`. The passwords never reach a log, an event or an error.
#[derive(Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"ID": {"PrefixedName": "local:alice"}, "Password": "a new passphrase"})))]
pub struct SetPasswordRequest {
    #[serde(rename = "ID")]
    pub id: IdentityName,
    #[serde(rename = "Password")]
    pub password: SecretString,
    /// Required when a user who is no Master Admin sets their own password.
    #[serde(rename = "OldPassword", default, skip_serializing_if = "Option::is_none")]
    pub old_password: Option<SecretString>,
}

impl std::fmt::Debug for SetPasswordRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetPasswordRequest").field("id", &self.id).finish_non_exhaustive()
    }
}

/// `POST Identity/ReadAttribute`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"ID": {"PrefixedName": "local:Ops"}, "AttributeName": "Group Membership"})))]
pub struct ReadAttributeRequest {
    #[serde(rename = "ID")]
    pub id: IdentityName,
    #[serde(rename = "AttributeName")]
    pub attribute_name: String,
}

/// `POST Identity/ReadAttribute` → the attribute's values (none for an attribute Strongroom does not keep).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AttributesResponse {
    #[serde(rename = "Attributes")]
    pub attributes: Vec<String>,
}

/// `POST Teams/`: a team is a local group with owners, a description and products.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"Name": {"PrefixedName": "local:Platform"}, "Members": [{"PrefixedName": "local:alice"}], "Owners": [{"PrefixedName": "local:bob"}], "Products": ["TLS"], "Description": "The platform team"})))]
pub struct NewTeamRequest {
    #[serde(rename = "Name")]
    pub name: IdentityName,
    #[serde(rename = "Members", default)]
    pub members: Vec<IdentityName>,
    #[serde(rename = "Owners", default)]
    pub owners: Vec<IdentityName>,
    /// `TLS`, `SSH`, `Code Signing`.
    #[serde(rename = "Products", default)]
    pub products: Vec<String>,
    /// Folder DNs: accepted and not stored (rights are granted with `Permissions/*`).
    #[serde(rename = "Assets", default, skip_serializing_if = "Vec::is_empty")]
    pub assets: Vec<String>,
    #[serde(rename = "Description", default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `GET Teams/local/{guid}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TeamResponse {
    #[serde(rename = "ID")]
    pub id: IdentityEntry,
    #[serde(rename = "Members")]
    pub members: Vec<IdentityEntry>,
    #[serde(rename = "Owners")]
    pub owners: Vec<IdentityEntry>,
    /// Always empty: Strongroom keeps no assets on a team.
    #[serde(rename = "Assets")]
    pub assets: Vec<String>,
    #[serde(rename = "Products")]
    pub products: Vec<String>,
    #[serde(rename = "Description")]
    pub description: String,
}

/// HTTP 403 of the calls that need a role: a missing scope
/// (`insufficient_scope`, as every call), or the caller is no Master Admin
/// (or, for membership changes, no owner of the group): `Message`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum GroupForbidden {
    Scope(crate::vedsdk::BearerErrorResponse),
    Role(MessageOnly),
}
