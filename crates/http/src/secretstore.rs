//! `/vedsdk/SecretStore/*` handlers: authenticate,
//! check the scope, parse the body, call the service, shape the answer.

use axum::extract::{Path, Query, Request, State};
use axum::response::Response;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use std::collections::HashMap;

use strongroom_core::vault::value::{self, MAX_STRING_BYTES, Value};
use strongroom_core::vault::{ResultCode, VaultId};
use strongroom_proto::SecretString;
use strongroom_proto::vedsdk::{
    AddRequest, AddResponse, AssociateRequest, DefaultKeyResponse, DissociateRequest, EncryptionKeysResponse, LookupAssociationRequest,
    LookupByAssociationRequest, LookupByOwnerRequest, LookupByVaultTypeRequest, MutateRequest, NamespacesResponse, OrphanLookupRequest,
    OwnerAddRequest, OwnerDeleteRequest, OwnerLookupRequest, OwnersResponse, ResultResponse, RetrieveResponse, TypedNameValue,
    TypedNameValuesResponse, ValueResponse, VaultIdRequest, VaultIdsResponse,
};

use super::extract::{Vault, VaultLookup, scope, vault_call};
use super::respond::{SdkFailure, ok};
use super::responses::{
    AddAnswer, Forbidden, IdsAnswer, KeysAnswer, OwnersAnswer, RetrieveAnswer, SdkRefusals, Timeout, TypedNameValuesAnswer, Unauthorized,
    Unavailable, ValueAnswer,
};
use crate::state::HttpState;
use strongroom_app::service::Origin;
use strongroom_app::service::vault::{self as svc, MAX_DATA_BYTES, VaultError};
use strongroom_proto::read::{FieldError, SdkBody};

type Answer = Result<Response, SdkFailure>;

impl From<FieldError> for SdkFailure {
    fn from(e: FieldError) -> Self {
        SdkFailure::Vault(VaultError::params(e.0))
    }
}

fn success() -> Response {
    ok(&ResultResponse { result: ResultCode::Success.code(), error: None })
}

fn ids(list: Vec<VaultId>) -> Response {
    ok(&VaultIdsResponse { result: 0, vault_ids: list.into_iter().map(|v| v.0).collect() })
}

fn required<T>(v: Option<T>, field: &str) -> Result<T, SdkFailure> {
    v.ok_or_else(|| SdkFailure::Vault(VaultError::params(format!("{field} is required."))))
}

fn vault_id(b: &SdkBody) -> Result<VaultId, SdkFailure> {
    Ok(VaultId(required(b.int64(&["VaultID"])?, "VaultID")?))
}

fn name(b: &SdkBody) -> Result<Option<String>, SdkFailure> {
    match b.string(&["Name"])? {
        None => Ok(None),
        Some(n) if value::valid_name(&n) => Ok(Some(n)),
        Some(_) => Err(VaultError::params(format!("Name must be 1 to {} characters.", value::MAX_NAME_CHARS)).into()),
    }
}

/// The one value honoured: StringValue over IntValue over DateValue
/// (`ValueDate` is the Dissociate page's spelling).
fn value(b: &SdkBody) -> Result<Option<Value>, SdkFailure> {
    if b.has(&["StringValue"]) {
        let s = required(b.string(&["StringValue"])?, "StringValue")?;
        if s.is_empty() || s.len() > MAX_STRING_BYTES {
            return Err(VaultError::params(format!("StringValue must be 1 to {MAX_STRING_BYTES} bytes.")).into());
        }
        return Ok(Some(Value::String(s)));
    }
    if b.has(&["IntValue"]) {
        return Ok(b.int64(&["IntValue"])?.map(Value::Int));
    }
    if let Some(d) = b.string(&["DateValue", "ValueDate"])? {
        let ticks =
            value::parse_date(&d).ok_or_else(|| VaultError::params("DateValue must be UTC ISO 8601: YYYY-MM-DDTHH:MM:SS.fffffffZ."))?;
        return Ok(Some(Value::Date(ticks)));
    }
    Ok(None)
}

#[utoipa::path(
    post,
    path = "/vedsdk/SecretStore/Add",
    tag = "vedsdk",
    description = "Stores a secret owned by a folder. Needs Write on `Owner`. Scope `restricted:manage`.",
    security(("bearer" = [])),
    request_body(content = AddRequest, description = "A JSON object; keys match in any case, integers may be numeric strings."),
    responses(
        (status = 200, description = "Done (`Result` 0), or refused with the product's `Result` code and the reason in `Error`.", body = inline(AddAnswer),
            links(
                ("retrieve" = (operation_id = "retrieve", request_body = json!({"VaultID": "$response.body#/VaultID"}))),
                ("associate" = (operation_id = "associate", request_body = json!({"VaultID": "$response.body#/VaultID"}))),
                ("dissociate" = (operation_id = "dissociate", request_body = json!({"VaultID": "$response.body#/VaultID"}))),
                ("lookup_association" = (operation_id = "lookup_association", request_body = json!({"VaultID": "$response.body#/VaultID"}))),
                ("all_associations" = (operation_id = "all_associations", request_body = json!({"VaultID": "$response.body#/VaultID"}))),
                ("owner_lookup" = (operation_id = "owner_lookup", request_body = json!({"VaultID": "$response.body#/VaultID"}))),
                ("owner_add" = (operation_id = "owner_add", request_body = json!({"VaultID": "$response.body#/VaultID"}))),
                ("mutate" = (operation_id = "mutate", request_body = json!({"VaultID": "$response.body#/VaultID"}))),
                ("owner_delete" = (operation_id = "owner_delete", request_body = json!({"VaultID": "$response.body#/VaultID"})))
            ),
        ),
        SdkRefusals,
    ),
)]
pub(crate) async fn add(State(app): State<HttpState>, Vault { caller: c, body: b, .. }: Vault<scope::RestrictedManage>) -> Answer {
    let vault_type = required(b.int32(&["VaultType"])?, "VaultType")?;
    let key_name = b.string(&["Keyname"])?;
    if key_name.as_ref().is_some_and(|k| k.is_empty() || k.len() > 128) {
        return Err(VaultError::params("Keyname must be 1 to 128 characters.").into());
    }
    let data = required(b.string(&["Base64Data"])?, "Base64Data")?;
    let data = STANDARD.decode(data.trim()).map_err(|_| VaultError::params("Base64Data is not valid base64."))?;
    if data.is_empty() || data.len() > MAX_DATA_BYTES {
        return Err(VaultError::params(format!("Base64Data must decode to 1 to {MAX_DATA_BYTES} bytes.")).into());
    }
    svc::namespace(b.string(&["Namespace"])?)?;
    let id = svc::add(&app, &c, svc::AddRequest { vault_type, key_name, data, owner: b.string(&["Owner"])? }).await?;
    Ok(ok(&AddResponse { result: 0, vault_id: id.0 }))
}

#[utoipa::path(
    post,
    path = "/vedsdk/SecretStore/Retrieve",
    tag = "vedsdk",
    description = "The secret data. Master Admin only. Scope `restricted:manage`.",
    security(("bearer" = [])),
    request_body(content = VaultIdRequest, description = "A JSON object; keys match in any case, integers may be numeric strings."),
    responses(
        (status = 200, description = "Done (`Result` 0), or refused with the product's `Result` code and the reason in `Error`.", body = inline(RetrieveAnswer)),
        SdkRefusals,
    ),
)]
pub(crate) async fn retrieve(State(app): State<HttpState>, Vault { caller: c, body: b, .. }: Vault<scope::RestrictedManage>) -> Answer {
    let (data, vault_type) = svc::retrieve(&app, &c, vault_id(&b)?).await?;
    Ok(ok(&RetrieveResponse { base64_data: SecretString(STANDARD.encode(data)), result: 0, vault_type }))
}

#[utoipa::path(
    post,
    path = "/vedsdk/SecretStore/Associate",
    tag = "vedsdk",
    description = "Adds one name/value association (one of `StringValue`, `IntValue`, `DateValue`). Needs Write on an owner. Scope `restricted:manage`.",
    security(("bearer" = [])),
    request_body(content = AssociateRequest, description = "A JSON object; keys match in any case, integers may be numeric strings."),
    responses(
        (status = 200, description = "Done (`Result` 0), or refused with the product's `Result` code and the reason in `Error`.", body = ResultResponse),
        SdkRefusals,
    ),
)]
pub(crate) async fn associate(State(app): State<HttpState>, Vault { caller: c, body: b, .. }: Vault<scope::RestrictedManage>) -> Answer {
    let id = vault_id(&b)?;
    let n = required(name(&b)?, "Name")?;
    let v = value(&b)?.ok_or_else(|| VaultError::params("One of StringValue, IntValue or DateValue is required."))?;
    svc::associate(&app, &c, id, n, v).await?;
    Ok(success())
}

#[utoipa::path(
    post,
    path = "/vedsdk/SecretStore/Dissociate",
    tag = "vedsdk",
    description = "Removes every association (no `Name`), a name's, or a name's given value. Needs Write on an owner. Scope `restricted:manage`.",
    security(("bearer" = [])),
    request_body(content = DissociateRequest, description = "A JSON object; keys match in any case, integers may be numeric strings."),
    responses(
        (status = 200, description = "Done (`Result` 0), or refused with the product's `Result` code and the reason in `Error`.", body = ResultResponse),
        SdkRefusals,
    ),
)]
pub(crate) async fn dissociate(State(app): State<HttpState>, Vault { caller: c, body: b, .. }: Vault<scope::RestrictedManage>) -> Answer {
    let id = vault_id(&b)?;
    let n = name(&b)?;
    let v = if n.is_some() { value(&b)? } else { None };
    svc::dissociate(&app, &c, id, n, v).await?;
    Ok(success())
}

#[utoipa::path(
    post,
    path = "/vedsdk/SecretStore/LookupByAssociation",
    tag = "vedsdk",
    description = "Entries with an association of this name (and value, when given); entries without Read are left out. Scope `restricted`.",
    security(("bearer" = [])),
    request_body(content = LookupByAssociationRequest, description = "A JSON object; keys match in any case, integers may be numeric strings."),
    responses(
        (status = 200, description = "Done (`Result` 0), or refused with the product's `Result` code and the reason in `Error`.", body = inline(IdsAnswer)),
        SdkRefusals,
    ),
)]
pub(crate) async fn lookup_by_association(VaultLookup { caller: c, found, .. }: VaultLookup<scope::Restricted>) -> Answer {
    Ok(ids(svc::readable(&c, found)))
}

/// `LookupByAssociation`'s question: the association's `Name` (required)
/// and the value, if one is given.
pub(crate) fn association(b: &SdkBody) -> Result<(String, Option<Value>), SdkFailure> {
    Ok((required(name(b)?, "Name")?, value(b)?))
}

#[utoipa::path(
    post,
    path = "/vedsdk/SecretStore/LookupAssociationbyVaultID",
    tag = "vedsdk",
    description = "One association's value, as a string. Needs Read on an owner. Scope `restricted`.",
    security(("bearer" = [])),
    request_body(content = LookupAssociationRequest, description = "A JSON object; keys match in any case, integers may be numeric strings."),
    responses(
        (status = 200, description = "Done (`Result` 0), or refused with the product's `Result` code and the reason in `Error`.", body = inline(ValueAnswer)),
        SdkRefusals,
    ),
)]
pub(crate) async fn lookup_association(State(app): State<HttpState>, Vault { caller: c, body: b, .. }: Vault<scope::Restricted>) -> Answer {
    let id = vault_id(&b)?;
    let n = required(name(&b)?, "Name")?;
    let v = svc::lookup_association(&app, &c, id, &n).await?;
    Ok(ok(&ValueResponse { result: 0, value: SecretString(v.display()) }))
}

#[utoipa::path(
    post,
    path = "/vedsdk/SecretStore/LookupAllAssociationsbyVaultid",
    tag = "vedsdk",
    description = "Every association of an entry. Needs Write on an owner. Scope `restricted`.",
    security(("bearer" = [])),
    request_body(content = VaultIdRequest, description = "A JSON object; keys match in any case, integers may be numeric strings."),
    responses(
        (status = 200, description = "Done (`Result` 0), or refused with the product's `Result` code and the reason in `Error`.", body = inline(TypedNameValuesAnswer)),
        SdkRefusals,
    ),
)]
pub(crate) async fn all_associations(State(app): State<HttpState>, Vault { caller: c, body: b, .. }: Vault<scope::Restricted>) -> Answer {
    let list = svc::all_associations(&app, &c, vault_id(&b)?).await?;
    let typed_name_values = list
        .into_iter()
        .map(|(name, v)| TypedNameValue { name, value_type: v.value_type().as_str().to_owned(), value: SecretString(v.display()) })
        .collect();
    Ok(ok(&TypedNameValuesResponse { result: 0, typed_name_values }))
}

#[utoipa::path(
    post,
    path = "/vedsdk/SecretStore/LookupByOwner",
    tag = "vedsdk",
    description = "Entries owned by a folder (of a type, when given). Master Admin only. Scope `restricted`.",
    security(("bearer" = [])),
    request_body(content = LookupByOwnerRequest, description = "A JSON object; keys match in any case, integers may be numeric strings."),
    responses(
        (status = 200, description = "Done (`Result` 0), or refused with the product's `Result` code and the reason in `Error`.", body = inline(IdsAnswer)),
        SdkRefusals,
    ),
)]
pub(crate) async fn lookup_by_owner(State(app): State<HttpState>, Vault { caller: c, body: b, .. }: Vault<scope::Restricted>) -> Answer {
    svc::namespace(b.string(&["Namespace"])?)?;
    Ok(ids(svc::lookup_by_owner(&app, &c, b.string(&["Owner"])?, b.int32(&["VaultType"])?).await?))
}

#[utoipa::path(
    post,
    path = "/vedsdk/SecretStore/LookupByVaultType",
    tag = "vedsdk",
    description = "Entries of a type; entries without Read are left out. Scope `restricted`.",
    security(("bearer" = [])),
    request_body(content = LookupByVaultTypeRequest, description = "A JSON object; keys match in any case, integers may be numeric strings."),
    responses(
        (status = 200, description = "Done (`Result` 0), or refused with the product's `Result` code and the reason in `Error`.", body = inline(IdsAnswer)),
        SdkRefusals,
    ),
)]
pub(crate) async fn lookup_by_vault_type(
    State(app): State<HttpState>,
    Vault { caller: c, body: b, .. }: Vault<scope::Restricted>,
) -> Answer {
    let t = required(b.int32(&["VaultType"])?, "VaultType")?;
    Ok(ids(svc::lookup_by_type(&app, &c, t).await?))
}

#[utoipa::path(
    post,
    path = "/vedsdk/SecretStore/OrphanLookup",
    tag = "vedsdk",
    description = "Entries without owners (of a type, when given). Master Admin only. Scope `restricted`.",
    security(("bearer" = [])),
    request_body(content = OrphanLookupRequest, description = "A JSON object; keys match in any case, integers may be numeric strings."),
    responses(
        (status = 200, description = "Done (`Result` 0), or refused with the product's `Result` code and the reason in `Error`.", body = inline(IdsAnswer)),
        SdkRefusals,
    ),
)]
pub(crate) async fn orphan_lookup(State(app): State<HttpState>, Vault { caller: c, body: b, .. }: Vault<scope::Restricted>) -> Answer {
    Ok(ids(svc::orphans(&app, &c, b.int32(&["VaultType"])?).await?))
}

#[utoipa::path(
    post,
    path = "/vedsdk/SecretStore/OwnerAdd",
    tag = "vedsdk",
    description = "Adds an owner. Needs Write on the new and on a current owner. Scope `restricted:manage`.",
    security(("bearer" = [])),
    request_body(content = OwnerAddRequest, description = "A JSON object; keys match in any case, integers may be numeric strings."),
    responses(
        (status = 200, description = "Done (`Result` 0), or refused with the product's `Result` code and the reason in `Error`.", body = ResultResponse),
        SdkRefusals,
    ),
)]
pub(crate) async fn owner_add(State(app): State<HttpState>, Vault { caller: c, body: b, .. }: Vault<scope::RestrictedManage>) -> Answer {
    svc::namespace(b.string(&["Namespace"])?)?;
    svc::owner_add(&app, &c, vault_id(&b)?, b.string(&["Owner"])?).await?;
    Ok(success())
}

#[utoipa::path(
    post,
    path = "/vedsdk/SecretStore/OwnerDelete",
    tag = "vedsdk",
    description = "Removes an owner from one entry, or (no `VaultID`) from every entry; the last owner removed deletes the entry. Needs Write on that owner. Scope `restricted:delete`.",
    security(("bearer" = [])),
    request_body(content = OwnerDeleteRequest, description = "A JSON object; keys match in any case, integers may be numeric strings."),
    responses(
        (status = 200, description = "Done (`Result` 0), or refused with the product's `Result` code and the reason in `Error`.", body = ResultResponse),
        SdkRefusals,
    ),
)]
pub(crate) async fn owner_delete(State(app): State<HttpState>, Vault { caller: c, body: b, .. }: Vault<scope::RestrictedDelete>) -> Answer {
    svc::namespace(b.string(&["Namespace"])?)?;
    let id = b.int64(&["VaultID"])?.map(VaultId);
    svc::owner_delete(&app, &c, id, b.string(&["Owner"])?).await?;
    Ok(success())
}

#[utoipa::path(
    post,
    path = "/vedsdk/SecretStore/OwnerLookup",
    tag = "vedsdk",
    description = "The owners of an entry. Master Admin only. Scope `restricted`.",
    security(("bearer" = [])),
    request_body(content = OwnerLookupRequest, description = "A JSON object; keys match in any case, integers may be numeric strings."),
    responses(
        (status = 200, description = "Done (`Result` 0), or refused with the product's `Result` code and the reason in `Error`.", body = inline(OwnersAnswer)),
        SdkRefusals,
    ),
)]
pub(crate) async fn owner_lookup(Vault { caller: c, body: b, .. }: Vault<scope::Restricted>) -> Answer {
    svc::namespace(b.string(&["Namespace"])?)?;
    let owners = svc::owner_lookup(&c, vault_id(&b)?).await?;
    Ok(ok(&OwnersResponse { result: 0, owners }))
}

#[utoipa::path(
    post,
    path = "/vedsdk/SecretStore/Mutate",
    tag = "vedsdk",
    description = "Changes an entry's `VaultType`. Master Admin only. Scope `restricted:manage`.",
    security(("bearer" = [])),
    request_body(content = MutateRequest, description = "A JSON object; keys match in any case, integers may be numeric strings."),
    responses(
        (status = 200, description = "Done (`Result` 0), or refused with the product's `Result` code and the reason in `Error`.", body = ResultResponse),
        SdkRefusals,
    ),
)]
pub(crate) async fn mutate(State(app): State<HttpState>, Vault { caller: c, body: b, .. }: Vault<scope::RestrictedManage>) -> Answer {
    let t = required(b.int32(&["VaultType"])?, "VaultType")?;
    svc::mutate(&app, &c, vault_id(&b)?, t).await?;
    Ok(success())
}

#[utoipa::path(
    get,
    path = "/vedsdk/SecretStore/Lookup",
    tag = "vedsdk",
    description = "Every entry the caller may read. Scope `restricted`.",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Done (`Result` 0), or refused with the product's `Result` code and the reason in `Error`.", body = inline(IdsAnswer)),
        SdkRefusals,
    ),
)]
pub(crate) async fn lookup(State(app): State<HttpState>, Vault { caller: c, body: _, .. }: Vault<scope::Restricted>) -> Answer {
    Ok(ids(svc::lookup_all(&app, &c).await?))
}

#[utoipa::path(
    get,
    path = "/vedsdk/SecretStore/EncryptionKeysInUse",
    tag = "vedsdk",
    description = "The key names entries were stored with. Scope `restricted`.",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Done (`Result` 0), or refused with the product's `Result` code and the reason in `Error`.", body = inline(KeysAnswer)),
        SdkRefusals,
    ),
)]
pub(crate) async fn encryption_keys_in_use(State(app): State<HttpState>, _: Vault<scope::Restricted>) -> Answer {
    Ok(ok(&EncryptionKeysResponse { encryption_keys: svc::keys_in_use(&app).await?, result: 0 }))
}

#[utoipa::path(
    get,
    path = "/vedsdk/SecretStore/AvailableNamespaces",
    tag = "vedsdk",
    description = "The namespaces entries may live in: only `config`. Scope `restricted:manage`.",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"Namespaces\":[\"config\"],\"Result\":0}`.", body = NamespacesResponse),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 408, response = Timeout),
        (status = 503, response = Unavailable),
    ),
)]
/// `GET /vedsdk/SecretStore/AvailableNamespaces`.
pub(crate) async fn available_namespaces(_: Vault<scope::RestrictedManage>) -> Answer {
    Ok(ok(&NamespacesResponse { namespaces: vec![strongroom_core::vault::NAMESPACE.to_owned()], result: 0 }))
}

#[utoipa::path(
    get,
    path = "/vedsdk/SecretStore/RotateKey/{vaultid}",
    tag = "vedsdk",
    description = "Moves one entry (its data and associations) under another named key. Needs Write on an owner. Scope `admin:rotate`. An unknown or unusable key is `Result` 21.",
    security(("bearer" = [])),
    params(
        ("vaultid" = i64, Path, description = "The entry's VaultID."),
        ("newkeyname" = String, Query, description = "The named key (`Driver:Name`) to move the entry under.", example = "Software:Default"),
    ),
    responses(
        (status = 200, description = "Done (`Result` 0), or refused with the product's `Result` code and the reason in `Error`.", body = ResultResponse),
        SdkRefusals,
    ),
)]
/// `GET RotateKey/{vaultid}?newkeyname=` (parameter name in any case), scope
/// `admin:rotate`: moves one entry under another named key.
pub(crate) async fn rotate_key(
    State(app): State<HttpState>,
    origin: Origin,
    Path(vault_id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    req: Request,
) -> Answer {
    let id = vault_id.trim().parse::<i64>().ok().filter(|v| *v > 0).map(VaultId);
    let (c, _) = vault_call(&app, origin, req, Some("admin:rotate"), id).await?;
    let id = id.ok_or_else(|| VaultError::params("The VaultID in the path must be a positive integer."))?;
    let name = q.into_iter().find(|(k, _)| k.eq_ignore_ascii_case("newkeyname")).map(|(_, v)| v);
    let name = required(name.filter(|n| !n.trim().is_empty()), "newkeyname")?;
    svc::rotate_entry(&app, &c, id, &name).await?;
    Ok(success())
}

#[utoipa::path(
    get,
    path = "/vedsdk/Crypto/DefaultKey",
    tag = "vedsdk",
    description = "The named key `Add` uses when `Keyname` is absent. Scope `restricted`.",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The default key.", body = DefaultKeyResponse),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 408, response = Timeout),
        (status = 503, response = Unavailable),
    ),
)]
/// `GET /vedsdk/Crypto/DefaultKey`: the key `Add` uses when `Keyname` is absent.
pub(crate) async fn default_key(State(app): State<HttpState>, _: Vault<scope::Restricted>) -> Answer {
    Ok(ok(&DefaultKeyResponse { default_key: app.keyring.default_name().to_owned() }))
}

#[cfg(test)]
mod tests {
    //! The client sends `proto::vedsdk` request types; the handlers read
    //! bodies leniently through `SdkBody`. Every request type, serialised,
    //! must read back through the handlers' readers to the values sent.

    use super::*;
    use strongroom_proto::time::parse_date;
    use strongroom_proto::vedsdk::{
        AddRequest, AssociateRequest, AssociationValue, DissociateRequest, LookupAllAssociationsRequest, LookupAssociationRequest,
        LookupByAssociationRequest, LookupByOwnerRequest, LookupByVaultTypeRequest, MutateRequest, NAMESPACE, OrphanLookupRequest,
        OwnerAddRequest, OwnerDeleteRequest, OwnerLookupRequest, RetrieveRequest, ValueFields,
    };

    fn read<T: serde::Serialize>(req: &T) -> SdkBody {
        SdkBody::parse(&serde_json::to_vec(req).unwrap()).unwrap()
    }

    fn pairs() -> Vec<(AssociationValue, Value)> {
        let date = parse_date("2024-01-02T03:04:05.1234567Z").unwrap();
        vec![
            (AssociationValue::String(SecretString("Access to endpoint".into())), Value::String("Access to endpoint".into())),
            (AssociationValue::Int(2048), Value::Int(2048)),
            (AssociationValue::Int(i64::MIN), Value::Int(i64::MIN)),
            (AssociationValue::Date(date), Value::Date(date)),
            (AssociationValue::Date(0), Value::Date(0)),
        ]
    }

    #[test]
    fn add_reads_back() {
        let r = AddRequest {
            base64_data: SecretString("c2VjcmV0".into()),
            keyname: "Software:Default".into(),
            namespace: NAMESPACE.into(),
            owner: Some("\\VED\\Policy\\Team A".into()),
            vault_type: 32,
        };
        let b = read(&r);
        assert_eq!(b.int32(&["VaultType"]), Ok(Some(32)));
        assert_eq!(b.string(&["Keyname"]), Ok(Some(r.keyname.clone())));
        assert_eq!(b.string(&["Base64Data"]), Ok(Some("c2VjcmV0".into())));
        assert_eq!(b.string(&["Namespace"]), Ok(Some(NAMESPACE.into())));
        assert_eq!(b.string(&["Owner"]), Ok(r.owner.clone()));
        let b = read(&AddRequest { owner: None, ..r });
        assert_eq!(b.string(&["Owner"]), Ok(None));
    }

    #[test]
    fn values_read_back_through_the_handlers_readers() {
        for (sent, expected) in pairs() {
            let b = read(&AssociateRequest { vault_id: 376, name: "Purpose".into(), value: (&sent).into() });
            assert_eq!(vault_id(&b).ok(), Some(VaultId(376)));
            assert_eq!(name(&b).ok().flatten().as_deref(), Some("Purpose"));
            assert_eq!(value(&b).ok().flatten(), Some(expected.clone()), "{sent:?}");

            let b = read(&DissociateRequest { vault_id: 9, name: Some("Purpose".into()), value: (&sent).into() });
            assert_eq!(vault_id(&b).ok(), Some(VaultId(9)));
            assert_eq!(name(&b).ok().flatten().as_deref(), Some("Purpose"));
            assert_eq!(value(&b).ok().flatten(), Some(expected.clone()));

            let b = read(&LookupByAssociationRequest { name: "Purpose".into(), value: Some(&sent).into() });
            assert_eq!(name(&b).ok().flatten().as_deref(), Some("Purpose"));
            assert_eq!(value(&b).ok().flatten(), Some(expected));
        }
        let b = read(&DissociateRequest { vault_id: 9, name: None, value: ValueFields::default() });
        assert_eq!(vault_id(&b).ok(), Some(VaultId(9)));
        assert_eq!(name(&b).ok(), Some(None));
        assert_eq!(value(&b).ok(), Some(None));
        let b = read(&LookupByAssociationRequest { name: "Purpose".into(), value: None.into() });
        assert_eq!(value(&b).ok(), Some(None));
    }

    #[test]
    fn id_owner_and_type_requests_read_back() {
        for id in [1, 376, i64::MAX] {
            assert_eq!(vault_id(&read(&RetrieveRequest { vault_id: id })).ok(), Some(VaultId(id)));
            assert_eq!(vault_id(&read(&LookupAllAssociationsRequest { vault_id: id })).ok(), Some(VaultId(id)));
        }
        let b = read(&LookupAssociationRequest { vault_id: 5, name: "Key Size".into() });
        assert_eq!((vault_id(&b).ok(), name(&b).ok().flatten()), (Some(VaultId(5)), Some("Key Size".into())));

        let b = read(&OwnerLookupRequest { namespace: NAMESPACE.into(), vault_id: 5 });
        assert_eq!((b.string(&["Namespace"]), vault_id(&b).ok()), (Ok(Some(NAMESPACE.into())), Some(VaultId(5))));

        let owner = "\\VED\\Policy\\Team A";
        let b = read(&OwnerAddRequest { namespace: NAMESPACE.into(), owner: owner.into(), vault_id: 5 });
        assert_eq!(b.string(&["Namespace"]), Ok(Some(NAMESPACE.into())));
        assert_eq!(b.string(&["Owner"]), Ok(Some(owner.into())));
        assert_eq!(vault_id(&b).ok(), Some(VaultId(5)));

        let b = read(&OwnerDeleteRequest { namespace: NAMESPACE.into(), owner: owner.into(), vault_id: Some(5) });
        assert_eq!((b.string(&["Owner"]), b.int64(&["VaultID"])), (Ok(Some(owner.into())), Ok(Some(5))));
        let b = read(&OwnerDeleteRequest { namespace: NAMESPACE.into(), owner: owner.into(), vault_id: None });
        assert_eq!(b.int64(&["VaultID"]), Ok(None));

        let b = read(&LookupByOwnerRequest { namespace: NAMESPACE.into(), owner: Some(owner.into()), vault_type: Some(32) });
        assert_eq!((b.string(&["Owner"]), b.int32(&["VaultType"])), (Ok(Some(owner.into())), Ok(Some(32))));
        let b = read(&LookupByOwnerRequest { namespace: NAMESPACE.into(), owner: None, vault_type: None });
        assert_eq!((b.string(&["Owner"]), b.int32(&["VaultType"])), (Ok(None), Ok(None)));

        assert_eq!(read(&LookupByVaultTypeRequest { vault_type: i32::MIN }).int32(&["VaultType"]), Ok(Some(i32::MIN)));
        assert_eq!(read(&OrphanLookupRequest { vault_type: Some(64) }).int32(&["VaultType"]), Ok(Some(64)));
        assert_eq!(read(&OrphanLookupRequest::default()).int32(&["VaultType"]), Ok(None));

        let b = read(&MutateRequest { vault_id: 5, vault_type: 64 });
        assert_eq!((vault_id(&b).ok(), b.int32(&["VaultType"])), (Some(VaultId(5)), Ok(Some(64))));
    }
}
