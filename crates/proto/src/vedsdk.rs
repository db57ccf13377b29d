//! `/vedsdk`: the WebSDK. JSON keys are matched case-insensitively on input
//! and written in the product's casing on output.

use serde::{Deserialize, Serialize};

/// `GET SystemStatus/Version`. The key is exactly `Version` (vcert), the
/// value a PEP 440 `major.minor.patch` (pyvenafi parses it).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct VersionResponse {
    #[serde(rename = "Version")]
    pub version: String,
}

/// A bearer error on `/vedsdk` (401 / 403), RFC 6750 §3.1.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct BearerErrorResponse {
    pub error: String,
    pub error_description: String,
}

/// `{"Result": n}`, with `Error` when `n` is not 0 (product reference §9).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct ResultResponse {
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "Error", skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// `SecretStore/Add` → `{"Result":0,"VaultID":69651}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct AddResponse {
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "VaultID")]
    pub vault_id: i64,
}

/// `SecretStore/Retrieve` → `{"Base64Data":"…","Result":0,"VaultType":32}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct RetrieveResponse {
    #[serde(rename = "Base64Data")]
    pub base64_data: crate::SecretString,
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "VaultType")]
    pub vault_type: i32,
}

/// Lookups → `{"Result":0,"VaultIDs":[…]}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct VaultIdsResponse {
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "VaultIDs")]
    pub vault_ids: Vec<i64>,
}

/// `LookupAssociationbyVaultID` → `{"Result":0,"Value":"…"}` (always a string).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct ValueResponse {
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "Value")]
    pub value: crate::SecretString,
}

/// One entry of `TypedNameValues`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct TypedNameValue {
    #[serde(rename = "Name")]
    pub name: String,
    /// `string`, `int` or `datetime`.
    #[serde(rename = "Type")]
    pub value_type: String,
    #[serde(rename = "Value")]
    pub value: crate::SecretString,
}

/// `LookupAllAssociationsbyVaultid` → `{"Result":0,"TypedNameValues":[…]}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct TypedNameValuesResponse {
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "TypedNameValues")]
    pub typed_name_values: Vec<TypedNameValue>,
}

/// `OwnerLookup` → `{"Result":0,"Owners":[…]}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct OwnersResponse {
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "Owners")]
    pub owners: Vec<String>,
}

/// `GET EncryptionKeysInUse` → `{"EncryptionKeys":[…],"Result":0}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct EncryptionKeysResponse {
    #[serde(rename = "EncryptionKeys")]
    pub encryption_keys: Vec<String>,
    #[serde(rename = "Result")]
    pub result: i32,
}

/// An HTTP 400 for a body that is not JSON: `{"Error": "…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct ErrorOnly {
    #[serde(rename = "Error")]
    pub error: String,
}

/// One event of `GET /vedsdk/Log`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct LogEvent {
    #[serde(rename = "Id")]
    pub id: i64,
    /// ISO 8601, UTC.
    #[serde(rename = "ServerTimestamp")]
    pub server_timestamp: String,
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Identity")]
    pub identity: String,
    #[serde(rename = "ClientId")]
    pub client_id: String,
    #[serde(rename = "SourceIP")]
    pub source_ip: String,
    #[serde(rename = "RequestId")]
    pub request_id: String,
    #[serde(rename = "Component")]
    pub component: String,
    #[serde(rename = "VaultID", skip_serializing_if = "Option::is_none", default)]
    pub vault_id: Option<i64>,
    #[serde(rename = "ValueName", skip_serializing_if = "String::is_empty", default)]
    pub value_name: String,
    #[serde(rename = "ValueType", skip_serializing_if = "String::is_empty", default)]
    pub value_type: String,
    #[serde(rename = "Text")]
    pub text: String,
    #[serde(rename = "Hash")]
    pub hash: String,
}

/// `GET /vedsdk/Log` → `{"LogEvents":[…],"Next":n}`; `Next` is the `After`
/// value of the next page, absent on the last page.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct LogResponse {
    #[serde(rename = "LogEvents")]
    pub log_events: Vec<LogEvent>,
    #[serde(rename = "Next", skip_serializing_if = "Option::is_none", default)]
    pub next: Option<i64>,
}
