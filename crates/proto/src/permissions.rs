//! `/vedsdk/Permissions/Object/{guid}/…`: explicit, implicit and effective
//! permissions on an object of the `\VED` tree.
//! These calls answer with HTTP statuses (201, 404, 409, 400), errors as
//! `{"Error":"…"}`. `GET Permissions/Object/{guid}` answers a bare JSON
//! array of the `PrefixedUniversal`s of the principals with an explicit entry.

use serde::{Deserialize, Serialize};

/// A POST or PUT body: up to twelve flags (VenafiPS sends all of them,
/// pyvenafi only those it sets; a flag not given is false).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PermissionsRequest {
    #[serde(rename = "IsViewAllowed", skip_serializing_if = "Option::is_none", default)]
    pub is_view_allowed: Option<bool>,
    #[serde(rename = "IsReadAllowed", skip_serializing_if = "Option::is_none", default)]
    pub is_read_allowed: Option<bool>,
    #[serde(rename = "IsWriteAllowed", skip_serializing_if = "Option::is_none", default)]
    pub is_write_allowed: Option<bool>,
    #[serde(rename = "IsCreateAllowed", skip_serializing_if = "Option::is_none", default)]
    pub is_create_allowed: Option<bool>,
    #[serde(rename = "IsDeleteAllowed", skip_serializing_if = "Option::is_none", default)]
    pub is_delete_allowed: Option<bool>,
    #[serde(rename = "IsRenameAllowed", skip_serializing_if = "Option::is_none", default)]
    pub is_rename_allowed: Option<bool>,
    #[serde(rename = "IsRevokeAllowed", skip_serializing_if = "Option::is_none", default)]
    pub is_revoke_allowed: Option<bool>,
    #[serde(rename = "IsAssociateAllowed", skip_serializing_if = "Option::is_none", default)]
    pub is_associate_allowed: Option<bool>,
    #[serde(rename = "IsPolicyWriteAllowed", skip_serializing_if = "Option::is_none", default)]
    pub is_policy_write_allowed: Option<bool>,
    #[serde(rename = "IsPrivateKeyReadAllowed", skip_serializing_if = "Option::is_none", default)]
    pub is_private_key_read_allowed: Option<bool>,
    #[serde(rename = "IsPrivateKeyWriteAllowed", skip_serializing_if = "Option::is_none", default)]
    pub is_private_key_write_allowed: Option<bool>,
    #[serde(rename = "IsManagePermissionsAllowed", skip_serializing_if = "Option::is_none", default)]
    pub is_manage_permissions_allowed: Option<bool>,
}

impl PermissionsRequest {
    /// Each flag's name and value, as given.
    pub fn flags(&self) -> [(&'static str, Option<bool>); 12] {
        [
            ("IsViewAllowed", self.is_view_allowed),
            ("IsReadAllowed", self.is_read_allowed),
            ("IsWriteAllowed", self.is_write_allowed),
            ("IsCreateAllowed", self.is_create_allowed),
            ("IsDeleteAllowed", self.is_delete_allowed),
            ("IsRenameAllowed", self.is_rename_allowed),
            ("IsRevokeAllowed", self.is_revoke_allowed),
            ("IsAssociateAllowed", self.is_associate_allowed),
            ("IsPolicyWriteAllowed", self.is_policy_write_allowed),
            ("IsPrivateKeyReadAllowed", self.is_private_key_read_allowed),
            ("IsPrivateKeyWriteAllowed", self.is_private_key_write_allowed),
            ("IsManagePermissionsAllowed", self.is_manage_permissions_allowed),
        ]
    }
}

/// The twelve flags of an answer, every one present.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Permissions {
    #[serde(rename = "IsViewAllowed")]
    pub is_view_allowed: bool,
    #[serde(rename = "IsReadAllowed")]
    pub is_read_allowed: bool,
    #[serde(rename = "IsWriteAllowed")]
    pub is_write_allowed: bool,
    #[serde(rename = "IsCreateAllowed")]
    pub is_create_allowed: bool,
    #[serde(rename = "IsDeleteAllowed")]
    pub is_delete_allowed: bool,
    #[serde(rename = "IsRenameAllowed")]
    pub is_rename_allowed: bool,
    #[serde(rename = "IsRevokeAllowed")]
    pub is_revoke_allowed: bool,
    #[serde(rename = "IsAssociateAllowed")]
    pub is_associate_allowed: bool,
    #[serde(rename = "IsPolicyWriteAllowed")]
    pub is_policy_write_allowed: bool,
    #[serde(rename = "IsPrivateKeyReadAllowed")]
    pub is_private_key_read_allowed: bool,
    #[serde(rename = "IsPrivateKeyWriteAllowed")]
    pub is_private_key_write_allowed: bool,
    #[serde(rename = "IsManagePermissionsAllowed")]
    pub is_manage_permissions_allowed: bool,
}

impl Permissions {
    /// Each flag's name and value.
    pub fn flags(&self) -> [(&'static str, bool); 12] {
        [
            ("IsViewAllowed", self.is_view_allowed),
            ("IsReadAllowed", self.is_read_allowed),
            ("IsWriteAllowed", self.is_write_allowed),
            ("IsCreateAllowed", self.is_create_allowed),
            ("IsDeleteAllowed", self.is_delete_allowed),
            ("IsRenameAllowed", self.is_rename_allowed),
            ("IsRevokeAllowed", self.is_revoke_allowed),
            ("IsAssociateAllowed", self.is_associate_allowed),
            ("IsPolicyWriteAllowed", self.is_policy_write_allowed),
            ("IsPrivateKeyReadAllowed", self.is_private_key_read_allowed),
            ("IsPrivateKeyWriteAllowed", self.is_private_key_write_allowed),
            ("IsManagePermissionsAllowed", self.is_manage_permissions_allowed),
        ]
    }

    /// The flags named true in `set` (unknown names are ignored).
    pub fn from_flags(set: impl IntoIterator<Item = (&'static str, bool)>) -> Permissions {
        let mut out = Permissions::default();
        for (name, on) in set {
            match name {
                "IsViewAllowed" => out.is_view_allowed = on,
                "IsReadAllowed" => out.is_read_allowed = on,
                "IsWriteAllowed" => out.is_write_allowed = on,
                "IsCreateAllowed" => out.is_create_allowed = on,
                "IsDeleteAllowed" => out.is_delete_allowed = on,
                "IsRenameAllowed" => out.is_rename_allowed = on,
                "IsRevokeAllowed" => out.is_revoke_allowed = on,
                "IsAssociateAllowed" => out.is_associate_allowed = on,
                "IsPolicyWriteAllowed" => out.is_policy_write_allowed = on,
                "IsPrivateKeyReadAllowed" => out.is_private_key_read_allowed = on,
                "IsPrivateKeyWriteAllowed" => out.is_private_key_write_allowed = on,
                "IsManagePermissionsAllowed" => out.is_manage_permissions_allowed = on,
                _ => {}
            }
        }
        out
    }
}

/// `GET …/{ptype}/{principal}`: the principal's explicit entry on the
/// object and what it holds there by inheritance (folders above, groups).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PrincipalPermissions {
    #[serde(rename = "ExplicitPermissions")]
    pub explicit: Permissions,
    #[serde(rename = "ImplicitPermissions")]
    pub implicit: Permissions,
}

/// `GET …/{ptype}/{principal}/Effective`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EffectivePermissions {
    #[serde(rename = "EffectivePermissions")]
    pub effective: Permissions,
}
