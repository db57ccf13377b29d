//! `/vedauth`: device authorization, token exchange and refresh, verify,
//! revoke. Parameter names are case-sensitive, as the product's.

use serde::{Deserialize, Serialize};

use crate::SecretString;

/// `grant_type` of the device-code exchange (RFC 8628 §3.4).
pub const DEVICE_CODE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";
/// `grant_type` of a standard RFC 6749 refresh (oauth2-rs sends it; the
/// product's own clients send no `grant_type` on refresh).
pub const REFRESH_TOKEN_GRANT: &str = "refresh_token";

/// `POST Authorize/Device`, JSON or form. Absent fields are left out when
/// serialised (the client sends this).
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeviceRequest {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub client_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub scope: Option<String>,
}

/// `POST Authorize/Device` → 200.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DeviceResponse {
    pub device_code: SecretString,
    pub user_code: String,
    /// Absolute URL (oauth2-rs requires it).
    pub verification_uri: String,
    pub verification_uri_complete: String,
    pub expires_in: i64,
    /// Epoch seconds (pyvenafi reads it).
    pub expires: i64,
    pub interval: i64,
}

/// `POST Authorize/Token`, JSON or form. Two shapes:
/// refresh `{client_id, refresh_token}` (optionally with
/// `grant_type=refresh_token`), and device-code exchange
/// `{client_id, device_code, grant_type}`. Absent fields are left out when
/// serialised: the client sends this, and pyvenafi omits them too.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TokenRequest {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub client_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub grant_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub device_code: Option<SecretString>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub refresh_token: Option<SecretString>,
    /// Sent by RFC 6749 clients; a refresh ignores it and keeps the grant's scope.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub scope: Option<String>,
}

/// `POST Authorize/OAuth` (password grant), JSON.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OAuthRequest {
    pub client_id: Option<String>,
    pub username: Option<String>,
    pub password: Option<SecretString>,
    pub scope: Option<String>,
    /// vcert sends `"state": ""`; echoed back when present.
    pub state: Option<String>,
    /// RFC 6749 clients send `grant_type=password`; ignored.
    pub grant_type: Option<String>,
}

/// `POST Authorize/Jwt` (the JWT grant), JSON or form.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JwtRequest {
    pub client_id: Option<String>,
    /// The whole JWT (a compact JWS) from a trusted issuer, at most 16 KiB.
    pub jwt: Option<SecretString>,
    pub scope: Option<String>,
}

/// `POST Authorize/Certificate` (the certificate grant), JSON or form, over
/// a TLS connection with a client certificate.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CertificateRequest {
    pub client_id: Option<String>,
    pub scope: Option<String>,
}

/// `GET Authorize/IsAuthServer`'s body.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IsAuthServerResponse {
    pub is_auth_server: bool,
}

/// Every successful token response, in the product's shape. Integers are JSON integers:
/// Go vcert decodes them into `int`, oauth2-rs needs an unsigned `expires_in`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TokenResponse {
    pub access_token: SecretString,
    /// `null` when the integration's grants are not refreshable; the key is
    /// always present because vcert indexes it.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub refresh_token: Option<SecretString>,
    pub expires_in: i64,
    pub expires: i64,
    pub token_type: String,
    pub scope: String,
    pub refresh_until: i64,
    pub identity: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub state: Option<String>,
}

/// Every `/vedauth` error, in the product's shape (RFC 6749 §5.2).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorResponse {
    pub error: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error_description: Option<String>,
}

/// `GET Authorize/Verify` → 200, in the product's shape. Both the
/// `*_unix_time` integers (pyvenafi) and the `*_ISO8601` strings (Go vcert).
#[allow(non_snake_case)]
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VerifyResponse {
    pub access_issued_on: String,
    pub access_issued_on_ISO8601: String,
    pub access_issued_on_unix_time: i64,
    /// The integration's Client ID.
    pub application: String,
    /// Grant expiry, `/Date(ms)/`.
    pub expires: String,
    pub expires_ISO8601: String,
    pub expires_unix_time: i64,
    pub grant_issued_on: String,
    pub grant_issued_on_ISO8601: String,
    pub grant_issued_on_unix_time: i64,
    pub identity: String,
    pub scope: String,
    /// Seconds the access token is valid for, from issue.
    pub valid_for: i64,
    /// The user name behind `identity` (a Strongroom addition; the product
    /// has no such field, and its clients read none): what `strongroom
    /// login` shows beside the identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
}

/// `GET Revoke/Token` → 200 (revoked) or 202 (token not found).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RevokeResponse {
    #[serde(rename = "Success")]
    pub success: bool,
    #[serde(rename = "Message")]
    pub message: String,
}

/// `POST Revoke/Token` (RFC 7009), form or JSON: the token to revoke, an
/// optional hint of its type (`access_token` or `refresh_token`), and the
/// public client's `client_id`. Absent fields are left out when serialised.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RevocationRequest {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub token: Option<SecretString>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub token_type_hint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub client_id: Option<String>,
}

/// `GET /.well-known/oauth-authorization-server`: RFC 8414 authorization
/// server metadata, every URL absolute under the server's public URL.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuthorizationServerMetadata {
    /// The public URL: the base of every endpoint below.
    pub issuer: String,
    /// The token endpoint: device-code exchange and refresh.
    pub token_endpoint: String,
    /// RFC 8628's device authorization endpoint.
    pub device_authorization_endpoint: String,
    /// RFC 7009's revocation endpoint.
    pub revocation_endpoint: String,
    pub grant_types_supported: Vec<String>,
    /// No authorization endpoint: none.
    pub response_types_supported: Vec<String>,
    /// Public clients: they send their `client_id` and no secret.
    pub token_endpoint_auth_methods_supported: Vec<String>,
    pub revocation_endpoint_auth_methods_supported: Vec<String>,
    /// Every scope (`category` and `category:privilege`) a grant may hold.
    pub scopes_supported: Vec<String>,
    /// Where people read about the server (its OpenAPI document).
    pub service_documentation: String,
}
