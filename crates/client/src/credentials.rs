//! Typed calls for `/vedsdk/Credentials/*`: credential objects,
//! which anyone holding Read on them may read back (unlike
//! `SecretStore/Retrieve`, Master Admin only). A `Result` other than 1 is
//! [`ClientError::Refused`] with the product's code and the server's text.
//! Values are [`SecretString`]s: no `Debug` shows them.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use strongroom_proto::SecretString;
use strongroom_proto::credentials::{
    CredentialEnumerateResponse, CredentialInfo, CredentialRequest, CredentialRetrieveResponse, NameTypeValue,
};

use crate::error::{ClientError, ClientResult};
use crate::source::TokenSource;

/// `Result` 1: success.
const SUCCESS: i64 = 1;
/// `Result` 400: no credential there (or none the caller may see).
pub const NOT_FOUND: i32 = 400;
/// `Result` 401: the DN is taken.
pub const EXISTS: i32 = 401;

/// The credentials of the server a [`TokenSource`] logs in to.
#[derive(Debug, Clone, Copy)]
pub struct Credentials<'a> {
    source: &'a TokenSource,
}

/// A refusal's `Result` code, if `e` is one.
pub fn refusal_code(e: &ClientError) -> Option<i32> {
    match e {
        ClientError::Refused { status: 200, code, .. } => *code,
        _ => None,
    }
}

fn check<T: DeserializeOwned>(v: Value) -> ClientResult<T> {
    let code = v.get("Result").and_then(Value::as_i64).ok_or_else(|| ClientError::BadResponse("no Result in the answer".into()))?;
    if code != SUCCESS {
        let message = v.get("Error").and_then(Value::as_str).unwrap_or("").to_owned();
        return Err(ClientError::Refused { status: 200, code: Some(i32::try_from(code).unwrap_or(-1)), message });
    }
    serde_json::from_value(v).map_err(|e| ClientError::BadResponse(format!("credential answer: {e}")))
}

/// A value to store: name, and the text (type `string`).
pub fn value(name: &str, text: String) -> NameTypeValue {
    NameTypeValue { name: name.to_owned(), value_type: "string".to_owned(), value: SecretString(text) }
}

impl<'a> Credentials<'a> {
    pub fn new(source: &'a TokenSource) -> Credentials<'a> {
        Credentials { source }
    }

    async fn op<B: Serialize, T: DeserializeOwned>(&self, op: &str, body: &B) -> ClientResult<T> {
        check(self.source.call(&format!("/vedsdk/Credentials/{op}"), Some(body)).await?)
    }

    fn request(dn: &str) -> CredentialRequest {
        CredentialRequest { credential_path: dn.to_owned(), ..Default::default() }
    }

    /// The credential at `dn`: its class, values, description and expiration.
    pub async fn retrieve(&self, dn: &str) -> ClientResult<CredentialRetrieveResponse> {
        self.op("Retrieve", &Self::request(dn)).await
    }

    /// Creates a credential of class `friendly_name` (`UsernamePassword`, `Password`, `Generic`, `Certificate`).
    pub async fn create(&self, dn: &str, friendly_name: &str, values: Vec<NameTypeValue>) -> ClientResult<()> {
        let body = CredentialRequest { friendly_name: Some(friendly_name.to_owned()), values: Some(values), ..Self::request(dn) };
        self.op::<_, Value>("Create", &body).await.map(drop)
    }

    /// Replaces the values of the credential at `dn` (whose class must be `friendly_name`, if given).
    pub async fn update(&self, dn: &str, friendly_name: Option<&str>, values: Vec<NameTypeValue>) -> ClientResult<()> {
        let body = CredentialRequest { friendly_name: friendly_name.map(str::to_owned), values: Some(values), ..Self::request(dn) };
        self.op::<_, Value>("Update", &body).await.map(drop)
    }

    /// Updates the credential at `dn` (of class `class`, if given), or
    /// creates it of class `class`, else `new_class`, when there is none.
    /// Returns whether it was created.
    pub async fn set(&self, dn: &str, class: Option<&str>, new_class: &str, values: Vec<NameTypeValue>) -> ClientResult<bool> {
        match self.update(dn, class, values.clone()).await {
            Ok(()) => Ok(false),
            Err(e) if refusal_code(&e) == Some(NOT_FOUND) => self.create(dn, class.unwrap_or(new_class), values).await.map(|()| true),
            Err(e) => Err(e),
        }
    }

    pub async fn delete(&self, dn: &str) -> ClientResult<()> {
        self.op::<_, Value>("Delete", &Self::request(dn)).await.map(drop)
    }

    pub async fn rename(&self, dn: &str, new_dn: &str) -> ClientResult<()> {
        let body = CredentialRequest { new_credential_path: Some(new_dn.to_owned()), ..Self::request(dn) };
        self.op::<_, Value>("Rename", &body).await.map(drop)
    }

    /// The credentials in folder `dn` (and below it, `recursive`) the caller may see.
    pub async fn enumerate(&self, dn: &str, recursive: bool) -> ClientResult<Vec<CredentialInfo>> {
        let body = CredentialRequest { recursive: Some(recursive), ..Self::request(dn) };
        let r: CredentialEnumerateResponse = self.op("Enumerate", &body).await?;
        Ok(r.credential_infos)
    }
}
