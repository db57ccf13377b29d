//! `POST /vedsdk/oauth/*`: API integrations ("applications"), the rules
//! saying who may use them, and their grants, as the product's admin calls
//! answer them (pyvenafi's `models/oauth.py` names the fields). Every answer is one object with `Result` (an [`OAuthResult`]
//! code), `Success`, `error_description` on failure, and the field the call
//! returns.

use serde::{Deserialize, Serialize};

/// The product's `OAuthResult` codes that Strongroom answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OAuthResult {
    Success = 0,
    Failure = 1,
    ApplicationNotFound = 2,
    GrantNotFound = 3,
    RuleNotFound = 4,
    InvalidParameters = 6,
    InvalidScope = 17,
    ApplicationAlreadyExists = 19,
    RuleAlreadyExists = 20,
}

impl OAuthResult {
    pub fn code(self) -> i32 {
        self as i32
    }
}

/// An API integration as the product shows an application. Validities are
/// seconds, the integration's own or the server's default.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OAuthApplication {
    /// The client id (`ApplicationId` in requests).
    #[serde(rename = "ID")]
    pub id: String,
    #[serde(rename = "Name")]
    pub name: String,
    /// The scope an authorization asks at most: Strongroom keeps one, the maximum.
    #[serde(rename = "Scope")]
    pub scope: String,
    #[serde(rename = "MaximumScope")]
    pub maximum_scope: String,
    #[serde(rename = "AccessValidity")]
    pub access_validity: i64,
    #[serde(rename = "GrantValidity")]
    pub grant_validity: i64,
    /// Whether grants get refresh tokens.
    #[serde(rename = "Renewable")]
    pub renewable: bool,
    /// Live grants.
    #[serde(rename = "GrantCount")]
    pub grant_count: i64,
    /// People (and machines) holding a live grant.
    #[serde(rename = "UserCount")]
    pub user_count: i64,
    /// Strongroom's own: a disabled integration issues nothing and its tokens stop working.
    #[serde(rename = "Disabled")]
    pub disabled: bool,
}

/// Who may use an application: a user or a group on the integration's allow-list.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OAuthRule {
    #[serde(rename = "ApplicationId")]
    pub application_id: String,
    /// `local:{guid}` of a user or a group.
    #[serde(rename = "TrusteePrefixedUniversal")]
    pub trustee_prefixed_universal: String,
    /// The application's: a rule has no settings of its own in Strongroom.
    #[serde(rename = "MaximumScope")]
    pub maximum_scope: String,
    #[serde(rename = "AccessValidity")]
    pub access_validity: i64,
    #[serde(rename = "GrantValidity")]
    pub grant_validity: i64,
    #[serde(rename = "Renewable")]
    pub renewable: bool,
    #[serde(rename = "Description")]
    pub description: String,
}

/// A live grant. Times in the product's three forms: `/Date(ms)/`, Unix
/// seconds, ISO 8601. `Expires…` is the newest access token's expiry,
/// `ValidFor` its lifetime in seconds (as `Authorize/Verify` answers).
#[allow(non_snake_case)]
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OAuthGrant {
    #[serde(rename = "Scope")]
    pub scope: String,
    /// The application's client id.
    #[serde(rename = "Application")]
    pub application: String,
    #[serde(rename = "GranteePrefixedUniversal")]
    pub grantee_prefixed_universal: String,
    #[serde(rename = "GrantedToPrefixedUniversal")]
    pub granted_to_prefixed_universal: String,
    #[serde(rename = "AccessIssuedOn")]
    pub access_issued_on: String,
    #[serde(rename = "AccessIssuedOnUnixTime")]
    pub access_issued_on_unix_time: i64,
    #[serde(rename = "AccessIssuedOnISO8601")]
    pub access_issued_on_ISO8601: String,
    #[serde(rename = "GrantIssuedOn")]
    pub grant_issued_on: String,
    #[serde(rename = "GrantIssuedOnUnixTime")]
    pub grant_issued_on_unix_time: i64,
    #[serde(rename = "GrantIssuedOnISO8601")]
    pub grant_issued_on_ISO8601: String,
    #[serde(rename = "Expires")]
    pub expires: String,
    #[serde(rename = "ExpiresUnixTime")]
    pub expires_unix_time: i64,
    #[serde(rename = "ExpiresISO8601")]
    pub expires_ISO8601: String,
    #[serde(rename = "ValidFor")]
    pub valid_for: i64,
    /// Strongroom's own: the grant's id (`strongroom admin grants revoke ID`).
    #[serde(rename = "GrantId")]
    pub grant_id: String,
}

/// The answer of every `oauth/*` call: `Result`, `Success`, and what the call returns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OAuthResponse {
    #[serde(rename = "Application", skip_serializing_if = "Option::is_none", default)]
    pub application: Option<OAuthApplication>,
    #[serde(rename = "Applications", skip_serializing_if = "Option::is_none", default)]
    pub applications: Option<Vec<OAuthApplication>>,
    #[serde(rename = "Rule", skip_serializing_if = "Option::is_none", default)]
    pub rule: Option<OAuthRule>,
    #[serde(rename = "Rules", skip_serializing_if = "Option::is_none", default)]
    pub rules: Option<Vec<OAuthRule>>,
    #[serde(rename = "Grants", skip_serializing_if = "Option::is_none", default)]
    pub grants: Option<Vec<OAuthGrant>>,
    #[serde(rename = "GrantCount", skip_serializing_if = "Option::is_none", default)]
    pub grant_count: Option<i64>,
    #[serde(rename = "UserCount", skip_serializing_if = "Option::is_none", default)]
    pub user_count: Option<i64>,
    /// Strongroom's own: the grants `RevokeGrants` ended.
    #[serde(rename = "Revoked", skip_serializing_if = "Option::is_none", default)]
    pub revoked: Option<i64>,
    /// An [`OAuthResult`] code: 0 success.
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "Success")]
    pub success: bool,
    #[serde(rename = "error_description", skip_serializing_if = "Option::is_none", default)]
    pub error_description: Option<String>,
}

impl OAuthResponse {
    /// A successful answer (fill in what the call returns).
    pub fn success() -> OAuthResponse {
        OAuthResponse { result: OAuthResult::Success.code(), success: true, ..Default::default() }
    }

    pub fn failure(result: OAuthResult, description: String) -> OAuthResponse {
        OAuthResponse { result: result.code(), success: false, error_description: Some(description), ..Default::default() }
    }
}

/// A request naming an application and optionally a user or group (a
/// description: bodies are read leniently, keys in any case).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OAuthAdminRequest {
    #[serde(rename = "ApplicationId", skip_serializing_if = "Option::is_none", default)]
    pub application_id: Option<String>,
    #[serde(rename = "ApplicationIds", skip_serializing_if = "Option::is_none", default)]
    pub application_ids: Option<Vec<String>>,
    #[serde(rename = "Filter", skip_serializing_if = "Option::is_none", default)]
    pub filter: Option<String>,
    #[serde(rename = "TrusteePrefixedUniversal", skip_serializing_if = "Option::is_none", default)]
    pub trustee_prefixed_universal: Option<String>,
    #[serde(rename = "GranteePrefixedUniversal", skip_serializing_if = "Option::is_none", default)]
    pub grantee_prefixed_universal: Option<String>,
    #[serde(rename = "Start", skip_serializing_if = "Option::is_none", default)]
    pub start: Option<i64>,
    #[serde(rename = "Count", skip_serializing_if = "Option::is_none", default)]
    pub count: Option<i64>,
    #[serde(rename = "OrderBy", skip_serializing_if = "Option::is_none", default)]
    pub order_by: Option<String>,
    #[serde(rename = "Descending", skip_serializing_if = "Option::is_none", default)]
    pub descending: Option<bool>,
}

/// `CreateApplication`'s body, and `UpdateApplication`'s `Application`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OAuthApplicationRequest {
    #[serde(rename = "ApplicationId", skip_serializing_if = "Option::is_none", default)]
    pub application_id: Option<String>,
    #[serde(rename = "Name", skip_serializing_if = "Option::is_none", default)]
    pub name: Option<String>,
    #[serde(rename = "Scope", skip_serializing_if = "Option::is_none", default)]
    pub scope: Option<String>,
    #[serde(rename = "MaximumScope", skip_serializing_if = "Option::is_none", default)]
    pub maximum_scope: Option<String>,
    #[serde(rename = "AccessValidity", skip_serializing_if = "Option::is_none", default)]
    pub access_validity: Option<i64>,
    #[serde(rename = "GrantValidity", skip_serializing_if = "Option::is_none", default)]
    pub grant_validity: Option<i64>,
    #[serde(rename = "Renewable", skip_serializing_if = "Option::is_none", default)]
    pub renewable: Option<bool>,
}
