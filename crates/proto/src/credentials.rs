//! `/vedsdk/Credentials/*`: credential objects as pyvenafi's
//! `Credentials` endpoints send and parse them. Every answer is HTTP 200
//! with a numeric `Result` (1 success; the product's `Config` codes
//! otherwise, with `Error`). Secret values are [`SecretString`]s, so no
//! `Debug` of these types shows them.

use serde::{Deserialize, Serialize};

use crate::SecretString;

/// One value of a credential: `{"Name": "Password", "Type": "string", "Value": "…"}`
/// (`Type` `string` or `byte[]`, the latter base64).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NameTypeValue {
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Type")]
    pub value_type: String,
    #[serde(rename = "Value")]
    pub value: SecretString,
}

/// The request bodies of the `Credentials` calls, as pyvenafi sends them
/// (keys match in any case; `null` is absent); each call reads the fields
/// it needs.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CredentialRequest {
    /// The credential's DN, `\VED\Policy\…\Name` (the folder, for `Enumerate`).
    #[serde(rename = "CredentialPath")]
    pub credential_path: String,
    /// `Rename`: the new DN.
    #[serde(rename = "NewCredentialPath", skip_serializing_if = "Option::is_none", default)]
    pub new_credential_path: Option<String>,
    /// `Create`, `Update`: the class, `UsernamePassword`, `Password`, `Generic` or `Certificate`.
    #[serde(rename = "FriendlyName", skip_serializing_if = "Option::is_none", default)]
    pub friendly_name: Option<String>,
    #[serde(rename = "Values", skip_serializing_if = "Option::is_none", default)]
    pub values: Option<Vec<NameTypeValue>>,
    #[serde(rename = "Description", skip_serializing_if = "Option::is_none", default)]
    pub description: Option<String>,
    /// `/Date(milliseconds)/`.
    #[serde(rename = "Expiration", skip_serializing_if = "Option::is_none", default)]
    pub expiration: Option<String>,
    /// Prefixed universal names of the contacts.
    #[serde(rename = "Contact", skip_serializing_if = "Option::is_none", default)]
    pub contact: Option<Vec<String>>,
    /// Read and ignored: entries are sealed under the configured default key.
    #[serde(rename = "EncryptionKey", skip_serializing_if = "Option::is_none", default)]
    pub encryption_key: Option<String>,
    /// Read and ignored.
    #[serde(rename = "Shared", skip_serializing_if = "Option::is_none", default)]
    pub shared: Option<bool>,
    /// `Enumerate`: a name pattern (`*` and `?`).
    #[serde(rename = "Pattern", skip_serializing_if = "Option::is_none", default)]
    pub pattern: Option<String>,
    /// `Enumerate`: also the folders below.
    #[serde(rename = "Recursive", skip_serializing_if = "Option::is_none", default)]
    pub recursive: Option<bool>,
}

/// `{"Result": 1}`, or a failure's `Result` with `Error`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CredentialResult {
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "Error", skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// `Credentials/Retrieve`: on success (`Result` 1) everything but `Error`;
/// on a refusal `Result` and `Error` only.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CredentialRetrieveResponse {
    /// The product's class name, `Username Password Credential` …
    #[serde(rename = "Classname", default)]
    pub classname: String,
    #[serde(rename = "Contact", default)]
    pub contact: Vec<String>,
    #[serde(rename = "Description", skip_serializing_if = "Option::is_none", default)]
    pub description: Option<String>,
    /// `/Date(milliseconds)/`.
    #[serde(rename = "Expiration", skip_serializing_if = "Option::is_none", default)]
    pub expiration: Option<String>,
    #[serde(rename = "FriendlyName", default)]
    pub friendly_name: String,
    #[serde(rename = "Result")]
    pub result: i32,
    #[serde(rename = "Values", default)]
    pub values: Vec<NameTypeValue>,
    /// Why, when `Result` is not 1.
    #[serde(rename = "Error", skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

/// One credential `Enumerate` lists.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CredentialInfo {
    #[serde(rename = "ClassName")]
    pub class_name: String,
    /// The credential's DN.
    #[serde(rename = "FullName")]
    pub full_name: String,
}

/// `Credentials/Enumerate`: on a refusal `Result` and `Error` only.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CredentialEnumerateResponse {
    #[serde(rename = "CredentialInfos", default)]
    pub credential_infos: Vec<CredentialInfo>,
    #[serde(rename = "Result")]
    pub result: i32,
    /// Why, when `Result` is not 1.
    #[serde(rename = "Error", skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_never_show_in_debug() {
        let v = NameTypeValue { name: "Password".into(), value_type: "string".into(), value: SecretString("hunter2".into()) };
        let r = CredentialRetrieveResponse {
            classname: "Password Credential".into(),
            contact: vec![],
            description: None,
            expiration: None,
            friendly_name: "Password".into(),
            result: 1,
            values: vec![v.clone()],
            error: None,
        };
        assert!(!format!("{v:?} {r:?}").contains("hunter2"));
        assert!(serde_json::to_string(&r).unwrap_or_default().contains("\"Value\":\"hunter2\""));
    }
}
