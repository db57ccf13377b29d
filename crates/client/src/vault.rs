//! Typed calls for `/vedsdk/SecretStore/*`: each sends its `proto::vedsdk`
//! request type and reads its response type. A non-zero `Result` becomes
//! [`ClientError::Vault`] with the code and the server's `Error` text.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use strongroom_proto::SecretString;
use strongroom_proto::vedsdk::{
    AddRequest, AddResponse, AssociateRequest, DissociateRequest, EncryptionKeysResponse, LookupAllAssociationsRequest,
    LookupAssociationRequest, LookupByAssociationRequest, LookupByOwnerRequest, LookupByVaultTypeRequest, MutateRequest, NAMESPACE,
    OwnerAddRequest, OwnerDeleteRequest, OwnerLookupRequest, OwnersResponse, ResultResponse, RetrieveRequest, RetrieveResponse,
    TypedNameValuesResponse, ValueResponse, VaultIdsResponse,
};

/// An association value: a string, an int64, or a date in 100 ns ticks
/// (`strongroom_proto::time::parse_date` reads the wire's date form).
pub use strongroom_proto::vedsdk::AssociationValue;

use crate::error::{ClientError, ClientResult};
use crate::source::TokenSource;

/// The vault of the server a [`TokenSource`] logs in to.
#[derive(Debug, Clone, Copy)]
pub struct Vault<'a> {
    source: &'a TokenSource,
}

/// A non-zero `Result` is a refusal; otherwise the answer must have the
/// operation's shape.
fn check<T: DeserializeOwned>(v: Value) -> ClientResult<T> {
    let code = v.get("Result").and_then(Value::as_i64).ok_or_else(|| ClientError::BadResponse("no Result in the answer".into()))?;
    if code != 0 {
        let message = v.get("Error").and_then(Value::as_str).unwrap_or("").to_owned();
        return Err(ClientError::Vault { code: i32::try_from(code).unwrap_or(-1), message });
    }
    serde_json::from_value(v).map_err(|e| ClientError::BadResponse(format!("vault answer: {e}")))
}

impl<'a> Vault<'a> {
    pub fn new(source: &'a TokenSource) -> Vault<'a> {
        Vault { source }
    }

    async fn op<B: Serialize, T: DeserializeOwned>(&self, op: &str, body: &B) -> ClientResult<T> {
        check(self.source.call(&format!("/vedsdk/SecretStore/{op}"), Some(body)).await?)
    }

    async fn get<T: DeserializeOwned>(&self, op: &str) -> ClientResult<T> {
        check(self.source.call::<()>(&format!("/vedsdk/SecretStore/{op}"), None).await?)
    }

    pub async fn add(&self, owner: &str, vault_type: i32, key_name: &str, data: &[u8]) -> ClientResult<i64> {
        let body = AddRequest {
            base64_data: SecretString(STANDARD.encode(data)),
            keyname: key_name.to_owned(),
            namespace: NAMESPACE.to_owned(),
            owner: Some(owner.to_owned()),
            vault_type,
        };
        let r: AddResponse = self.op("Add", &body).await?;
        Ok(r.vault_id)
    }

    /// The secret data and the VaultType.
    pub async fn retrieve(&self, id: i64) -> ClientResult<(Vec<u8>, i64)> {
        let r: RetrieveResponse = self.op("Retrieve", &RetrieveRequest { vault_id: id }).await?;
        let data = STANDARD.decode(r.base64_data.expose()).map_err(|_| ClientError::BadResponse("Base64Data is not base64".into()))?;
        Ok((data, i64::from(r.vault_type)))
    }

    pub async fn associate(&self, id: i64, name: &str, value: &AssociationValue) -> ClientResult<()> {
        let body = AssociateRequest { vault_id: id, name: name.to_owned(), value: value.into() };
        self.op::<_, ResultResponse>("Associate", &body).await.map(drop)
    }

    /// Removes all associations (no name), a name's, or one name's value.
    pub async fn dissociate(&self, id: i64, name: Option<&str>, value: Option<&AssociationValue>) -> ClientResult<()> {
        let body = DissociateRequest { vault_id: id, name: name.map(str::to_owned), value: value.into() };
        self.op::<_, ResultResponse>("Dissociate", &body).await.map(drop)
    }

    pub async fn lookup_by_association(&self, name: &str, value: Option<&AssociationValue>) -> ClientResult<Vec<i64>> {
        let body = LookupByAssociationRequest { name: name.to_owned(), value: value.into() };
        let r: VaultIdsResponse = self.op("LookupByAssociation", &body).await?;
        Ok(r.vault_ids)
    }

    /// One association's value, as the server shows it.
    pub async fn lookup_association(&self, id: i64, name: &str) -> ClientResult<String> {
        let body = LookupAssociationRequest { vault_id: id, name: name.to_owned() };
        let r: ValueResponse = self.op("LookupAssociationbyVaultID", &body).await?;
        Ok(r.value.0)
    }

    /// Every association: (name, type, value).
    pub async fn all_associations(&self, id: i64) -> ClientResult<Vec<(String, String, String)>> {
        let r: TypedNameValuesResponse = self.op("LookupAllAssociationsbyVaultid", &LookupAllAssociationsRequest { vault_id: id }).await?;
        Ok(r.typed_name_values.into_iter().map(|t| (t.name, t.value_type, t.value.0)).collect())
    }

    pub async fn owners(&self, id: i64) -> ClientResult<Vec<String>> {
        let r: OwnersResponse = self.op("OwnerLookup", &OwnerLookupRequest { namespace: NAMESPACE.to_owned(), vault_id: id }).await?;
        Ok(r.owners)
    }

    pub async fn owner_add(&self, id: i64, owner: &str) -> ClientResult<()> {
        let body = OwnerAddRequest { namespace: NAMESPACE.to_owned(), owner: owner.to_owned(), vault_id: id };
        self.op::<_, ResultResponse>("OwnerAdd", &body).await.map(drop)
    }

    pub async fn owner_delete(&self, owner: &str, id: Option<i64>) -> ClientResult<()> {
        let body = OwnerDeleteRequest { namespace: NAMESPACE.to_owned(), owner: owner.to_owned(), vault_id: id };
        self.op::<_, ResultResponse>("OwnerDelete", &body).await.map(drop)
    }

    pub async fn lookup_by_owner(&self, owner: &str) -> ClientResult<Vec<i64>> {
        let body = LookupByOwnerRequest { namespace: NAMESPACE.to_owned(), owner: Some(owner.to_owned()), vault_type: None };
        let r: VaultIdsResponse = self.op("LookupByOwner", &body).await?;
        Ok(r.vault_ids)
    }

    pub async fn lookup_by_vault_type(&self, vault_type: i32) -> ClientResult<Vec<i64>> {
        let r: VaultIdsResponse = self.op("LookupByVaultType", &LookupByVaultTypeRequest { vault_type }).await?;
        Ok(r.vault_ids)
    }

    pub async fn mutate(&self, id: i64, vault_type: i32) -> ClientResult<()> {
        self.op::<_, ResultResponse>("Mutate", &MutateRequest { vault_id: id, vault_type }).await.map(drop)
    }

    /// Every entry the caller may read.
    pub async fn lookup(&self) -> ClientResult<Vec<i64>> {
        let r: VaultIdsResponse = self.get("Lookup").await?;
        Ok(r.vault_ids)
    }

    pub async fn encryption_keys_in_use(&self) -> ClientResult<Vec<String>> {
        let r: EncryptionKeysResponse = self.get("EncryptionKeysInUse").await?;
        Ok(r.encryption_keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn non_zero_results_are_refusals_and_shapes_are_checked() {
        let r: VaultIdsResponse = check(json!({"Result": 0, "VaultIDs": [1, 2]})).unwrap();
        assert_eq!(r.vault_ids, [1, 2]);
        let e = check::<VaultIdsResponse>(json!({"Result": 27, "Error": "exists"})).unwrap_err();
        assert!(matches!(&e, ClientError::Vault { code: 27, message } if message == "exists"), "{e:?}");
        assert!(matches!(check::<VaultIdsResponse>(json!({"Result": 0})), Err(ClientError::BadResponse(_))));
        assert!(matches!(check::<ResultResponse>(json!({"VaultIDs": []})), Err(ClientError::BadResponse(_))));
    }
}
