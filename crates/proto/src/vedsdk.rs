//! `/vedsdk`: the WebSDK. JSON keys are matched case-insensitively on input
//! and written in the product's casing on output.
//!
//! The request types below are what the client library sends, in the
//! product's casing with absent optionals left out. The server does not
//! deserialise them: it reads bodies leniently (any key case, numbers as
//! strings; `server::http::sdk_body`), and a server test proves that every
//! request type here reads back to the same values.

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::SecretString;
use crate::time::format_date;

/// The product's SecretStore `Result` codes that Strongroom answers with.
/// HTTP status is 200 for all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[repr(i32)]
pub enum ResultCode {
    Success = 0,
    InvalidVaultId = 8,
    InvalidParams = 9,
    InsufficientPermissions = 10,
    CryptoFailure = 11,
    /// The entry is a credential object's: read it with `Credentials/Retrieve`.
    RetrieveSecretFailed = 14,
    DisassociateFailed = 17,
    /// The `Keyname` names no configured key, or one that cannot be used now.
    InvalidKey = 21,
    QueryError = 22,
    AssociationAlreadyExists = 27,
    AssociationLookupFailed = 29,
}

impl ResultCode {
    /// Every code, in numeric order.
    pub const ALL: [ResultCode; 11] = [
        ResultCode::Success,
        ResultCode::InvalidVaultId,
        ResultCode::InvalidParams,
        ResultCode::InsufficientPermissions,
        ResultCode::CryptoFailure,
        ResultCode::RetrieveSecretFailed,
        ResultCode::DisassociateFailed,
        ResultCode::InvalidKey,
        ResultCode::QueryError,
        ResultCode::AssociationAlreadyExists,
        ResultCode::AssociationLookupFailed,
    ];

    pub fn code(self) -> i32 {
        self as i32
    }

    /// The named code for a `Result` number, where Strongroom knows it.
    pub fn from_code(code: i32) -> Option<ResultCode> {
        ResultCode::ALL.into_iter().find(|c| c.code() == code)
    }
}

/// The only namespace Strongroom serves (`Namespace` in requests).
pub const NAMESPACE: &str = "config";

/// An association value as a client gives it. `Debug` shows no value.
#[derive(Clone, PartialEq, Eq)]
pub enum AssociationValue {
    String(SecretString),
    Int(i64),
    /// 100-nanosecond ticks since the Unix epoch (see [`crate::time::parse_date`]).
    Date(i64),
}

impl fmt::Debug for AssociationValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AssociationValue::String(_) => f.write_str("String(<redacted>)"),
            AssociationValue::Int(_) => f.write_str("Int(<redacted>)"),
            AssociationValue::Date(_) => f.write_str("Date(<redacted>)"),
        }
    }
}

/// `StringValue` / `IntValue` / `DateValue`: at most one is sent. Flattened
/// into the requests that carry a value. `Debug` names the fields present,
/// never their values.
#[derive(Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ValueFields {
    #[serde(rename = "StringValue", skip_serializing_if = "Option::is_none", default)]
    pub string_value: Option<SecretString>,
    #[serde(rename = "IntValue", skip_serializing_if = "Option::is_none", default)]
    pub int_value: Option<i64>,
    /// `YYYY-MM-DDTHH:MM:SS.fffffffZ` (UTC).
    #[cfg_attr(feature = "openapi", schema(example = "2024-01-02T03:04:05.0000000Z"))]
    #[serde(rename = "DateValue", skip_serializing_if = "Option::is_none", default)]
    pub date_value: Option<String>,
}

impl fmt::Debug for ValueFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ValueFields");
        if self.string_value.is_some() {
            d.field("StringValue", &"<redacted>");
        }
        if self.int_value.is_some() {
            d.field("IntValue", &"<redacted>");
        }
        if self.date_value.is_some() {
            d.field("DateValue", &"<redacted>");
        }
        d.finish()
    }
}

impl From<&AssociationValue> for ValueFields {
    fn from(v: &AssociationValue) -> ValueFields {
        match v {
            AssociationValue::String(s) => ValueFields { string_value: Some(s.clone()), ..ValueFields::default() },
            AssociationValue::Int(i) => ValueFields { int_value: Some(*i), ..ValueFields::default() },
            AssociationValue::Date(t) => ValueFields { date_value: Some(format_date(*t)), ..ValueFields::default() },
        }
    }
}

impl From<Option<&AssociationValue>> for ValueFields {
    fn from(v: Option<&AssociationValue>) -> ValueFields {
        v.map(ValueFields::from).unwrap_or_default()
    }
}

/// `SecretStore/Add`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"Base64Data": "c2VjcmV0", "Keyname": "Software:Default", "Namespace": "config", "Owner": "\\VED\\Policy\\Team A", "VaultType": 32})))]
pub struct AddRequest {
    /// The secret, standard base64 (padded, canonical), at least one byte.
    #[cfg_attr(
        feature = "openapi",
        schema(
            value_type = String,
            example = "c2VjcmV0",
            min_length = 4,
            pattern = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)$"
        )
    )]
    #[serde(rename = "Base64Data")]
    pub base64_data: SecretString,
    #[cfg_attr(feature = "openapi", schema(example = "Software:Default"))]
    #[serde(rename = "Keyname")]
    pub keyname: String,
    #[cfg_attr(feature = "openapi", schema(example = "config"))]
    #[serde(rename = "Namespace")]
    pub namespace: String,
    /// The owning folder; required by the server (Result 9 without it).
    #[cfg_attr(feature = "openapi", schema(example = "\\VED\\Policy\\Team A", required = true))]
    #[serde(rename = "Owner", skip_serializing_if = "Option::is_none", default)]
    pub owner: Option<String>,
    #[cfg_attr(feature = "openapi", schema(example = 32))]
    #[serde(rename = "VaultType")]
    pub vault_type: i32,
}

/// A body of just `{"VaultID": n}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"VaultID": 1})))]
pub struct VaultIdRequest {
    #[serde(rename = "VaultID")]
    pub vault_id: i64,
}

/// `SecretStore/Retrieve`.
pub type RetrieveRequest = VaultIdRequest;
/// `SecretStore/LookupAllAssociationsbyVaultid`.
pub type LookupAllAssociationsRequest = VaultIdRequest;

/// `SecretStore/Associate`: one value.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"VaultID": 1, "Name": "Purpose", "StringValue": "Access to endpoint"})))]
pub struct AssociateRequest {
    #[serde(rename = "VaultID")]
    pub vault_id: i64,
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(flatten)]
    pub value: ValueFields,
}

/// `SecretStore/Dissociate`: every association (no `Name`), a name's, or a
/// name's given value.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"VaultID": 1, "Name": "Purpose"})))]
pub struct DissociateRequest {
    #[serde(rename = "VaultID")]
    pub vault_id: i64,
    #[serde(rename = "Name", skip_serializing_if = "Option::is_none", default)]
    pub name: Option<String>,
    #[serde(flatten)]
    pub value: ValueFields,
}

/// `SecretStore/LookupByAssociation`: by name, and value when given.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"Name": "Purpose", "StringValue": "Access to endpoint"})))]
pub struct LookupByAssociationRequest {
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(flatten)]
    pub value: ValueFields,
}

/// `SecretStore/LookupAssociationbyVaultID`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"VaultID": 1, "Name": "Purpose"})))]
pub struct LookupAssociationRequest {
    #[serde(rename = "VaultID")]
    pub vault_id: i64,
    #[serde(rename = "Name")]
    pub name: String,
}

/// `SecretStore/OwnerLookup`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"Namespace": "config", "VaultID": 1})))]
pub struct OwnerLookupRequest {
    #[cfg_attr(feature = "openapi", schema(example = "config"))]
    #[serde(rename = "Namespace")]
    pub namespace: String,
    #[serde(rename = "VaultID")]
    pub vault_id: i64,
}

/// `SecretStore/OwnerAdd` (pyvenafi spells the key `VaultId`; the server
/// reads either).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"Namespace": "config", "Owner": "\\VED\\Policy\\Team A", "VaultID": 1})))]
pub struct OwnerAddRequest {
    #[cfg_attr(feature = "openapi", schema(example = "config"))]
    #[serde(rename = "Namespace")]
    pub namespace: String,
    #[cfg_attr(feature = "openapi", schema(example = "\\VED\\Policy\\Team A"))]
    #[serde(rename = "Owner")]
    pub owner: String,
    #[serde(rename = "VaultID")]
    pub vault_id: i64,
}

/// `SecretStore/OwnerDelete`: one entry's owner, or (no `VaultID`) the
/// owner of every entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"Namespace": "config", "Owner": "\\VED\\Policy\\Team A", "VaultID": 1})))]
pub struct OwnerDeleteRequest {
    #[cfg_attr(feature = "openapi", schema(example = "config"))]
    #[serde(rename = "Namespace")]
    pub namespace: String,
    #[cfg_attr(feature = "openapi", schema(example = "\\VED\\Policy\\Team A"))]
    #[serde(rename = "Owner")]
    pub owner: String,
    #[serde(rename = "VaultID", skip_serializing_if = "Option::is_none", default)]
    pub vault_id: Option<i64>,
}

/// `SecretStore/LookupByOwner`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"Namespace": "config", "Owner": "\\VED\\Policy\\Team A"})))]
pub struct LookupByOwnerRequest {
    #[cfg_attr(feature = "openapi", schema(example = "config"))]
    #[serde(rename = "Namespace")]
    pub namespace: String,
    #[cfg_attr(feature = "openapi", schema(example = "\\VED\\Policy\\Team A"))]
    #[serde(rename = "Owner", skip_serializing_if = "Option::is_none", default)]
    pub owner: Option<String>,
    #[cfg_attr(feature = "openapi", schema(example = 32))]
    #[serde(rename = "VaultType", skip_serializing_if = "Option::is_none", default)]
    pub vault_type: Option<i32>,
}

/// `SecretStore/LookupByVaultType`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"VaultType": 32})))]
pub struct LookupByVaultTypeRequest {
    #[cfg_attr(feature = "openapi", schema(example = 32))]
    #[serde(rename = "VaultType")]
    pub vault_type: i32,
}

/// `SecretStore/OrphanLookup`: entries without owners, of a type if given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"VaultType": 32})))]
pub struct OrphanLookupRequest {
    #[cfg_attr(feature = "openapi", schema(example = 32))]
    #[serde(rename = "VaultType", skip_serializing_if = "Option::is_none", default)]
    pub vault_type: Option<i32>,
}

/// `SecretStore/Mutate`: change an entry's `VaultType`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"VaultID": 1, "VaultType": 64})))]
pub struct MutateRequest {
    #[serde(rename = "VaultID")]
    pub vault_id: i64,
    #[cfg_attr(feature = "openapi", schema(example = 32))]
    #[serde(rename = "VaultType")]
    pub vault_type: i32,
}

/// `GET SystemStatus/Version`. The key is exactly `Version` (vcert), the
/// value a PEP 440 `major.minor.patch` (pyvenafi parses it).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VersionResponse {
    #[serde(rename = "Version")]
    pub version: String,
}

/// A bearer error on `/vedsdk` (401 / 403), RFC 6750 §3.1.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BearerErrorResponse {
    pub error: String,
    pub error_description: String,
}

/// `{"Result": n}`, with `Error` when `n` is not 0, as the product answers.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ResultResponse {
    #[cfg_attr(feature = "openapi", schema(value_type = ResultCode))]
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "Error", skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// `SecretStore/Add` → `{"Result":0,"VaultID":69651}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AddResponse {
    #[cfg_attr(feature = "openapi", schema(value_type = ResultCode))]
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "VaultID")]
    pub vault_id: i64,
}

/// `SecretStore/Retrieve` → `{"Base64Data":"…","Result":0,"VaultType":32}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RetrieveResponse {
    #[cfg_attr(feature = "openapi", schema(example = "c2VjcmV0"))]
    #[serde(rename = "Base64Data")]
    pub base64_data: SecretString,
    #[cfg_attr(feature = "openapi", schema(value_type = ResultCode))]
    #[serde(rename = "Result")]
    pub result: i32,
    #[cfg_attr(feature = "openapi", schema(example = 32))]
    #[serde(rename = "VaultType")]
    pub vault_type: i32,
}

/// Lookups → `{"Result":0,"VaultIDs":[…]}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VaultIdsResponse {
    #[cfg_attr(feature = "openapi", schema(value_type = ResultCode))]
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "VaultIDs")]
    pub vault_ids: Vec<i64>,
}

/// `LookupAssociationbyVaultID` → `{"Result":0,"Value":"…"}` (always a string).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ValueResponse {
    #[cfg_attr(feature = "openapi", schema(value_type = ResultCode))]
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "Value")]
    pub value: SecretString,
}

/// One entry of `TypedNameValues`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TypedNameValue {
    #[serde(rename = "Name")]
    pub name: String,
    /// `string`, `int` or `datetime`.
    #[cfg_attr(feature = "openapi", schema(example = "string"))]
    #[serde(rename = "Type")]
    pub value_type: String,
    #[serde(rename = "Value")]
    pub value: SecretString,
}

/// `LookupAllAssociationsbyVaultid` → `{"Result":0,"TypedNameValues":[…]}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TypedNameValuesResponse {
    #[cfg_attr(feature = "openapi", schema(value_type = ResultCode))]
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "TypedNameValues")]
    pub typed_name_values: Vec<TypedNameValue>,
}

/// `OwnerLookup` → `{"Result":0,"Owners":[…]}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OwnersResponse {
    #[cfg_attr(feature = "openapi", schema(value_type = ResultCode))]
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "Owners")]
    pub owners: Vec<String>,
}

/// `GET EncryptionKeysInUse` → `{"EncryptionKeys":[…],"Result":0}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EncryptionKeysResponse {
    #[serde(rename = "EncryptionKeys")]
    pub encryption_keys: Vec<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = ResultCode))]
    #[serde(rename = "Result")]
    pub result: i32,
}

/// `GET /vedsdk/Crypto/DefaultKey` → `{"DefaultKey":"Software:Default"}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DefaultKeyResponse {
    /// The named key (`Driver:Name`) that `Add` uses when `Keyname` is absent.
    #[serde(rename = "DefaultKey")]
    #[cfg_attr(feature = "openapi", schema(example = "Software:Default"))]
    pub default_key: String,
}

/// `GET /vedsdk/SecretStore/AvailableNamespaces` → `{"Namespaces":["config"],"Result":0}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NamespacesResponse {
    #[serde(rename = "Namespaces")]
    pub namespaces: Vec<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = ResultCode))]
    #[serde(rename = "Result")]
    pub result: i32,
}

/// An identity as the product's `Identity` calls show it (`IdentityEntry`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IdentityEntry {
    /// The identity's place in the tree: `\VED\Identity\alice` for a local user.
    #[serde(rename = "FullName")]
    #[cfg_attr(feature = "openapi", schema(example = "\\VED\\Identity\\alice"))]
    pub full_name: String,
    #[serde(rename = "Name")]
    #[cfg_attr(feature = "openapi", schema(example = "alice"))]
    pub name: String,
    /// The identity provider: `local`.
    #[serde(rename = "Prefix")]
    #[cfg_attr(feature = "openapi", schema(example = "local"))]
    pub prefix: String,
    #[serde(rename = "PrefixedName")]
    #[cfg_attr(feature = "openapi", schema(example = "local:alice"))]
    pub prefixed_name: String,
    /// What tokens, `Verify` and the event log call the identity.
    #[serde(rename = "PrefixedUniversal")]
    #[cfg_attr(feature = "openapi", schema(example = "local:{0b8f7f8e-1111-4222-8333-444455556666}"))]
    pub prefixed_universal: String,
    /// Flags: 1 user, 2 group, 32 the identity provider itself.
    #[serde(rename = "Type")]
    pub kind: i32,
    #[serde(rename = "Universal")]
    #[cfg_attr(feature = "openapi", schema(example = "{0b8f7f8e-1111-4222-8333-444455556666}"))]
    pub universal: String,
}

/// `GET /vedsdk/Identity/Self` → `{"Identities":[…]}`: the caller first, then
/// its groups, then its identity provider (`Type` 32).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IdentitiesResponse {
    #[serde(rename = "Identities")]
    pub identities: Vec<IdentityEntry>,
}

/// How a request names an identity (`ID`): any of the entry's fields; the
/// server reads `PrefixedUniversal`, else `PrefixedName`, else `Universal`
/// (local), else `Name` (local). A plain string is read the same way.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IdentityName {
    #[serde(rename = "PrefixedUniversal", skip_serializing_if = "Option::is_none", default)]
    #[cfg_attr(feature = "openapi", schema(example = "local:{0b8f7f8e-1111-4222-8333-444455556666}"))]
    pub prefixed_universal: Option<String>,
    #[serde(rename = "PrefixedName", skip_serializing_if = "Option::is_none", default)]
    #[cfg_attr(feature = "openapi", schema(example = "local:alice"))]
    pub prefixed_name: Option<String>,
    #[serde(rename = "Universal", skip_serializing_if = "Option::is_none", default)]
    pub universal: Option<String>,
    #[serde(rename = "Name", skip_serializing_if = "Option::is_none", default)]
    pub name: Option<String>,
}

/// `POST Identity/Validate`, `GetMemberships`, `GetMembers`: the identity asked about.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"ID": {"PrefixedName": "local:alice"}})))]
pub struct IdentityRequest {
    #[serde(rename = "ID")]
    pub id: IdentityName,
    /// `GetMembers` only: accepted and ignored (local groups hold users only, so nothing is nested).
    #[serde(rename = "ResolveNested", skip_serializing_if = "Option::is_none", default)]
    pub resolve_nested: Option<i32>,
}

/// `POST Identity/Validate` → `{"ID":{…}}` for a known identity.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ValidateResponse {
    #[serde(rename = "ID")]
    pub id: IdentityEntry,
}

/// `POST Identity/Browse`: users and groups whose name starts with `Filter`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"Filter": "ali", "Limit": 50, "IdentityType": 11})))]
pub struct BrowseRequest {
    /// A name prefix, in any case (`*` matches any run inside it); empty: everyone.
    #[serde(rename = "Filter", skip_serializing_if = "Option::is_none", default)]
    pub filter: Option<String>,
    /// At most this many (default 50, at most 1000).
    #[serde(rename = "Limit", skip_serializing_if = "Option::is_none", default)]
    pub limit: Option<i32>,
    /// Flags: 1 users, 2 security groups, 8 distribution groups (a group here); default 11.
    #[serde(rename = "IdentityType", skip_serializing_if = "Option::is_none", default)]
    pub identity_type: Option<i32>,
}

/// `POST /vedsdk/Log`: an event a client writes. Keys match in any case and
/// numbers may be strings (Go vcert sends every field as a string).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"ID": "26808595", "Component": "\\VED\\Policy\\Team A", "Text1": "build-host-7", "Severity": 7})))]
pub struct LogRequest {
    /// The event's decimal id (required), a number or a numeric string.
    #[serde(rename = "ID")]
    pub id: u32,
    #[serde(rename = "Severity", skip_serializing_if = "Option::is_none", default)]
    /// 1 Emergency … 7 Info … 8 Debug, or the name.
    pub severity: Option<u8>,
    #[serde(rename = "Component", skip_serializing_if = "Option::is_none", default)]
    pub component: Option<String>,
    #[serde(rename = "ComponentID", skip_serializing_if = "Option::is_none", default)]
    pub component_id: Option<String>,
    #[serde(rename = "ComponentSubsystem", skip_serializing_if = "Option::is_none", default)]
    pub component_subsystem: Option<String>,
    #[serde(rename = "Grouping", skip_serializing_if = "Option::is_none", default)]
    pub grouping: Option<String>,
    #[serde(rename = "SourceIp", skip_serializing_if = "Option::is_none", default)]
    pub source_ip: Option<String>,
    #[serde(rename = "Text1", skip_serializing_if = "Option::is_none", default)]
    pub text1: Option<String>,
    #[serde(rename = "Text2", skip_serializing_if = "Option::is_none", default)]
    pub text2: Option<String>,
    #[serde(rename = "Value1", skip_serializing_if = "Option::is_none", default)]
    pub value1: Option<String>,
    #[serde(rename = "Value2", skip_serializing_if = "Option::is_none", default)]
    pub value2: Option<String>,
}

/// `POST /vedsdk/Log` → `{"LogResult":0}`; 1 with `Error` when the event is
/// refused (Go vcert fails on 1).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogResultResponse {
    #[serde(rename = "LogResult")]
    pub log_result: i32,
    #[serde(rename = "Error", skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// An HTTP 400 for a body that is not JSON: `{"Error": "…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorOnly {
    #[serde(rename = "Error")]
    pub error: String,
}

/// One event of `GET /vedsdk/Log`, in the product's shape (`LogEvents[]`)
/// with Strongroom's own fields after it. How a chained event maps onto it
/// is in the book (book/src/administration/event-log.md, "The event log
/// over the API").
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogEvent {
    /// ISO 8601, UTC: the time the server recorded the event.
    #[serde(rename = "ClientTimestamp")]
    pub client_timestamp: String,
    /// The folder DN (`\VED\Policy\…`) of a vault event's entry, else the event's object.
    #[serde(rename = "Component")]
    pub component: String,
    /// The VaultID of a vault event, else 0.
    #[serde(rename = "ComponentId")]
    pub component_id: i64,
    /// The part of Strongroom: `vault`, `token`, `user`…
    #[serde(rename = "ComponentSubsystem")]
    pub component_subsystem: String,
    /// The API integration (client_id) the event came through, if any.
    #[serde(rename = "Data")]
    pub data: String,
    /// The event's place in the hash chain (unique, increasing).
    #[serde(rename = "Grouping")]
    pub grouping: i64,
    /// The event kind's code (`0x0300nnnn`).
    #[serde(rename = "Id")]
    pub id: i64,
    /// The event kind, such as `vault.associated`.
    #[serde(rename = "Name")]
    pub name: String,
    /// ISO 8601, UTC.
    #[serde(rename = "ServerTimestamp")]
    pub server_timestamp: String,
    /// `Alert`, `Warning`, `Notice` or `Info`.
    #[serde(rename = "Severity")]
    pub severity: String,
    #[serde(rename = "SourceIP")]
    pub source_ip: String,
    /// The acting identity (`local:{…}`), empty when none.
    #[serde(rename = "Text1")]
    pub text1: String,
    /// The event's detail (never a value, secret or token).
    #[serde(rename = "Text2")]
    pub text2: String,
    /// The VaultID of a vault event, else 0.
    #[serde(rename = "Value1")]
    pub value1: i64,
    /// Always 0.
    #[serde(rename = "Value2")]
    pub value2: i64,
    /// The request's id.
    #[serde(rename = "RequestId")]
    pub request_id: String,
    /// The event's object as recorded (a VaultID, a user, a folder…).
    #[serde(rename = "Object")]
    pub object: String,
    /// The event's chain hash, hex.
    #[serde(rename = "Hash")]
    pub hash: String,
}

/// `GET /vedsdk/Log` → `{"LogEvents":[…]}`, the newest first.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogResponse {
    #[serde(rename = "LogEvents")]
    pub log_events: Vec<LogEvent>,
}

/// One event definition of `GET /vedsdk/Log/LogSchema`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogEventDefinition {
    #[serde(rename = "Id")]
    pub id: i64,
    #[serde(rename = "Description")]
    pub description: String,
    #[serde(rename = "DataFormat")]
    pub data_format: String,
    #[serde(rename = "DataTitle")]
    pub data_title: String,
    #[serde(rename = "DataType")]
    pub data_type: String,
    #[serde(rename = "GroupingTitle")]
    pub grouping_title: String,
    #[serde(rename = "GroupingType")]
    pub grouping_type: String,
    #[serde(rename = "Text1Title")]
    pub text1_title: String,
    #[serde(rename = "Text2Title")]
    pub text2_title: String,
    #[serde(rename = "Value1Title")]
    pub value1_title: String,
    #[serde(rename = "Value1Type")]
    pub value1_type: String,
    #[serde(rename = "Value2Title")]
    pub value2_title: String,
    #[serde(rename = "Value2Type")]
    pub value2_type: String,
}

/// One application of `GET /vedsdk/Log/LogSchema`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogApplicationDefinition {
    #[serde(rename = "ApplicationName")]
    pub application_name: String,
    #[serde(rename = "Id")]
    pub id: i64,
}

/// `GET /vedsdk/Log/LogSchema`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogSchemaResponse {
    #[serde(rename = "LogEventApplicationDefinitions")]
    pub applications: Vec<LogApplicationDefinition>,
    #[serde(rename = "LogEventDefinitions")]
    pub definitions: Vec<LogEventDefinition>,
    #[serde(rename = "LogResult")]
    pub log_result: i32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn result_codes_round_trip() {
        for c in ResultCode::ALL {
            assert_eq!(ResultCode::from_code(c.code()), Some(c));
        }
        assert_eq!(ResultCode::from_code(27), Some(ResultCode::AssociationAlreadyExists));
        assert_eq!(ResultCode::from_code(1), None);
    }

    #[test]
    fn requests_use_the_product_casing_and_leave_out_absent_fields() {
        let add = AddRequest {
            base64_data: SecretString("c2VjcmV0".into()),
            keyname: "Software:Default".into(),
            namespace: NAMESPACE.into(),
            owner: Some("\\VED\\Policy".into()),
            vault_type: 32,
        };
        assert_eq!(
            serde_json::to_value(&add).unwrap(),
            json!({"Base64Data":"c2VjcmV0","Keyname":"Software:Default","Namespace":"config","Owner":"\\VED\\Policy","VaultType":32})
        );
        let date = AssociationValue::Date(crate::time::parse_date("2024-01-02T03:04:05Z").unwrap());
        let a = AssociateRequest { vault_id: 7, name: "Created".into(), value: (&date).into() };
        assert_eq!(serde_json::to_value(&a).unwrap(), json!({"VaultID":7,"Name":"Created","DateValue":"2024-01-02T03:04:05.0000000Z"}));
        let d = DissociateRequest { vault_id: 7, name: None, value: ValueFields::from(None) };
        assert_eq!(serde_json::to_value(&d).unwrap(), json!({"VaultID":7}));
        let o = OwnerDeleteRequest { namespace: NAMESPACE.into(), owner: "\\VED\\X".into(), vault_id: None };
        assert_eq!(serde_json::to_value(&o).unwrap(), json!({"Namespace":"config","Owner":"\\VED\\X"}));
        let back: AssociateRequest = serde_json::from_value(serde_json::to_value(&a).unwrap()).unwrap();
        assert_eq!(back, a);
    }

    #[test]
    fn secret_fields_never_show_in_debug() {
        let add = AddRequest {
            base64_data: SecretString("c2VjcmV0".into()),
            keyname: "k".into(),
            namespace: NAMESPACE.into(),
            owner: None,
            vault_type: 32,
        };
        assert!(!format!("{add:?}").contains("c2VjcmV0"));
        let v = AssociationValue::String(SecretString("hunter2".into()));
        let a = AssociateRequest { vault_id: 1, name: "pw".into(), value: (&v).into() };
        let shown = format!("{a:?} {v:?}");
        assert!(!shown.contains("hunter2") && shown.contains("StringValue"), "{shown}");
        let i = AssociateRequest { vault_id: 1, name: "n".into(), value: (&AssociationValue::Int(424242)).into() };
        assert!(!format!("{i:?}").contains("424242"));
    }
}
