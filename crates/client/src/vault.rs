//! Typed calls for `/vedsdk/SecretStore/*`. A non-zero `Result` becomes
//! [`ClientError::Vault`] with the code and the server's `Error` text.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use strongroom_core::vault::value::{Value as AssociationValue, format_date};

use crate::error::{ClientError, ClientResult};
use crate::source::TokenSource;

/// The vault of the server a [`TokenSource`] logs in to.
#[derive(Debug, Clone, Copy)]
pub struct Vault<'a> {
    source: &'a TokenSource,
}

fn value_fields(v: &AssociationValue, body: &mut serde_json::Map<String, Value>) {
    match v {
        AssociationValue::String(s) => body.insert("StringValue".into(), json!(s)),
        AssociationValue::Int(i) => body.insert("IntValue".into(), json!(i)),
        AssociationValue::Date(t) => body.insert("DateValue".into(), json!(format_date(*t))),
    };
}

fn ids(v: &Value) -> ClientResult<Vec<i64>> {
    v["VaultIDs"]
        .as_array()
        .ok_or_else(|| ClientError::BadResponse("no VaultIDs".into()))?
        .iter()
        .map(|x| x.as_i64().ok_or_else(|| ClientError::BadResponse("a VaultID is not an integer".into())))
        .collect()
}

impl<'a> Vault<'a> {
    pub fn new(source: &'a TokenSource) -> Vault<'a> {
        Vault { source }
    }

    async fn op(&self, op: &str, body: Value) -> ClientResult<Value> {
        let v = self.source.call(&format!("/vedsdk/SecretStore/{op}"), Some(&body)).await?;
        Self::check(v)
    }

    async fn get(&self, op: &str) -> ClientResult<Value> {
        let v = self.source.call(&format!("/vedsdk/SecretStore/{op}"), None).await?;
        Self::check(v)
    }

    fn check(v: Value) -> ClientResult<Value> {
        let code = v["Result"].as_i64().ok_or_else(|| ClientError::BadResponse("no Result in the answer".into()))?;
        if code == 0 {
            Ok(v)
        } else {
            Err(ClientError::Vault { code: i32::try_from(code).unwrap_or(-1), message: v["Error"].as_str().unwrap_or("").to_owned() })
        }
    }

    pub async fn add(&self, owner: &str, vault_type: i32, key_name: &str, data: &[u8]) -> ClientResult<i64> {
        let v = self
            .op(
                "Add",
                json!({"VaultType": vault_type, "Keyname": key_name, "Namespace": "config", "Owner": owner, "Base64Data": STANDARD.encode(data)}),
            )
            .await?;
        v["VaultID"].as_i64().ok_or_else(|| ClientError::BadResponse("no VaultID".into()))
    }

    /// The secret data and the VaultType.
    pub async fn retrieve(&self, id: i64) -> ClientResult<(Vec<u8>, i64)> {
        let v = self.op("Retrieve", json!({"VaultID": id})).await?;
        let data = STANDARD
            .decode(v["Base64Data"].as_str().unwrap_or(""))
            .map_err(|_| ClientError::BadResponse("Base64Data is not base64".into()))?;
        Ok((data, v["VaultType"].as_i64().unwrap_or(0)))
    }

    pub async fn associate(&self, id: i64, name: &str, value: &AssociationValue) -> ClientResult<()> {
        let mut body = serde_json::Map::new();
        body.insert("VaultID".into(), json!(id));
        body.insert("Name".into(), json!(name));
        value_fields(value, &mut body);
        self.op("Associate", Value::Object(body)).await.map(drop)
    }

    /// Removes all associations (no name), a name's, or one name's value.
    pub async fn dissociate(&self, id: i64, name: Option<&str>, value: Option<&AssociationValue>) -> ClientResult<()> {
        let mut body = serde_json::Map::new();
        body.insert("VaultID".into(), json!(id));
        if let Some(n) = name {
            body.insert("Name".into(), json!(n));
        }
        if let Some(v) = value {
            value_fields(v, &mut body);
        }
        self.op("Dissociate", Value::Object(body)).await.map(drop)
    }

    pub async fn lookup_by_association(&self, name: &str, value: Option<&AssociationValue>) -> ClientResult<Vec<i64>> {
        let mut body = serde_json::Map::new();
        body.insert("Name".into(), json!(name));
        if let Some(v) = value {
            value_fields(v, &mut body);
        }
        ids(&self.op("LookupByAssociation", Value::Object(body)).await?)
    }

    /// One association's value, as the server shows it.
    pub async fn lookup_association(&self, id: i64, name: &str) -> ClientResult<String> {
        let v = self.op("LookupAssociationbyVaultID", json!({"VaultID": id, "Name": name})).await?;
        Ok(v["Value"].as_str().unwrap_or("").to_owned())
    }

    /// Every association: (name, type, value).
    pub async fn all_associations(&self, id: i64) -> ClientResult<Vec<(String, String, String)>> {
        let v = self.op("LookupAllAssociationsbyVaultid", json!({"VaultID": id})).await?;
        Ok(v["TypedNameValues"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|x| {
                        let s = |k: &str| x[k].as_str().unwrap_or("").to_owned();
                        (s("Name"), s("Type"), s("Value"))
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    pub async fn owners(&self, id: i64) -> ClientResult<Vec<String>> {
        let v = self.op("OwnerLookup", json!({"Namespace": "config", "VaultID": id})).await?;
        Ok(v["Owners"].as_array().map(|a| a.iter().filter_map(|o| o.as_str().map(str::to_owned)).collect()).unwrap_or_default())
    }

    pub async fn owner_add(&self, id: i64, owner: &str) -> ClientResult<()> {
        self.op("OwnerAdd", json!({"Namespace": "config", "Owner": owner, "VaultID": id})).await.map(drop)
    }

    pub async fn owner_delete(&self, owner: &str, id: Option<i64>) -> ClientResult<()> {
        let mut body = json!({"Namespace": "config", "Owner": owner});
        if let Some(id) = id {
            body["VaultID"] = json!(id);
        }
        self.op("OwnerDelete", body).await.map(drop)
    }

    pub async fn lookup_by_owner(&self, owner: &str) -> ClientResult<Vec<i64>> {
        ids(&self.op("LookupByOwner", json!({"Namespace": "config", "Owner": owner})).await?)
    }

    pub async fn lookup_by_vault_type(&self, vault_type: i32) -> ClientResult<Vec<i64>> {
        ids(&self.op("LookupByVaultType", json!({"VaultType": vault_type})).await?)
    }

    pub async fn mutate(&self, id: i64, vault_type: i32) -> ClientResult<()> {
        self.op("Mutate", json!({"VaultID": id, "VaultType": vault_type})).await.map(drop)
    }

    /// Every entry the caller may read.
    pub async fn lookup(&self) -> ClientResult<Vec<i64>> {
        ids(&self.get("Lookup").await?)
    }

    pub async fn encryption_keys_in_use(&self) -> ClientResult<Vec<String>> {
        let v = self.get("EncryptionKeysInUse").await?;
        Ok(v["EncryptionKeys"].as_array().map(|a| a.iter().filter_map(|o| o.as_str().map(str::to_owned)).collect()).unwrap_or_default())
    }
}
