//! `/vedsdk/Credentials/*`: credential objects, read by whoever
//! holds Read on them. Every answer the product gives a `Result` for is
//! HTTP 200 with that `Result` (1 success; pyvenafi's `ResultCodes.Credential`
//! otherwise, with `Error`); 401 and 403 are the token's and the scope's.
//! Scopes: `security` to read and list, `security:manage` to create,
//! update and rename, `security:delete` to delete.

use axum::extract::State;
use axum::response::Response;

use strongroom_core::credential::{self, format_expiration};
use strongroom_core::tree::result;
use strongroom_proto::SecretString;
use strongroom_proto::credentials::{
    CredentialEnumerateResponse, CredentialInfo, CredentialRequest, CredentialResult, CredentialRetrieveResponse, NameTypeValue,
};
use strongroom_proto::read::{FieldError, SdkBody};

use super::extract::{Credential, scope};
use super::respond::{TreeFailure, ok};
use super::responses::SdkRefusals;
use crate::state::HttpState;
use strongroom_app::service::credentials::{self as svc, Changes, NewCredential};
use strongroom_app::service::tree::TreeError;

type Answer = Result<Response, TreeFailure>;

fn invalid(e: FieldError) -> TreeFailure {
    TreeFailure::Tree(TreeError::Result(credential::INVALID_ARGUMENT, e.0))
}

fn success() -> Response {
    ok(&CredentialResult { result: result::SUCCESS, error: None })
}

fn path(b: &SdkBody, field: &str) -> Result<String, TreeFailure> {
    b.string(&[field])
        .map_err(invalid)?
        .ok_or_else(|| TreeFailure::Tree(TreeError::Result(credential::INVALID_ARGUMENT, format!("{field} is required."))))
}

/// `Values`: `[{Name, Type, Value}]`; a value whose `Value` is `null` is
/// left out (pyvenafi sends one for an optional password not given).
fn values(b: &SdkBody) -> Result<Option<Vec<NameTypeValue>>, TreeFailure> {
    let Some(list) = b.objects(&["Values"]).map_err(invalid)? else { return Ok(None) };
    let mut out = Vec::with_capacity(list.len());
    for v in list {
        let name = v.string(&["Name"]).map_err(invalid)?.unwrap_or_default();
        let value_type = v.string(&["Type"]).map_err(invalid)?.unwrap_or_default();
        if let Some(value) = v.string(&["Value"]).map_err(invalid)? {
            out.push(NameTypeValue { name, value_type, value: SecretString(value) });
        }
    }
    Ok(Some(out))
}

/// `Expiration`: `/Date(ms)/` as a string, or milliseconds as a number.
fn expiration(b: &SdkBody) -> Result<Option<String>, TreeFailure> {
    if let Ok(Some(ms)) = b.int64(&["Expiration"]) {
        return Ok(Some(ms.to_string()));
    }
    b.string(&["Expiration"]).map_err(invalid)
}

fn contacts(b: &SdkBody) -> Result<Option<Vec<String>>, TreeFailure> {
    b.strings(&["Contact"]).map_err(invalid)
}

#[utoipa::path(
    post,
    path = "/vedsdk/Credentials/Create",
    tag = "vedsdk",
    description = "Creates a credential object at `CredentialPath` (under `\\VED\\Policy`): `FriendlyName` \
        `UsernamePassword` (values `Username`, `Password`), `Password` (`Password`), `Generic` (`Generic`, optional \
        `Password`) or `Certificate` (`Certificate`, base64 PKCS#12, optional `Password`). Its values are sealed in the \
        vault, owned by the credential. Needs Create and Write on the folder it is created in (or a Master Admin). \
        `Result` 1, or 401 (the DN is taken), 400 (no such folder), 7, 2, 110, 112 with `Error`. `EncryptionKey` and \
        `Shared` are read and ignored. Scope `security:manage`.",
    security(("bearer" = [])),
    request_body(content = CredentialRequest, description = "A JSON object; keys match in any case."),
    responses(
        (status = 200, description = "`Result` 1, or a failure's `Result` and `Error`.", body = CredentialResult),
        SdkRefusals,
    ),
)]
pub(crate) async fn create(State(app): State<HttpState>, c: Credential<scope::SecurityManage>) -> Answer {
    let b = &c.body;
    let dn = path(b, "CredentialPath")?;
    let new = NewCredential {
        class: path(b, "FriendlyName")?,
        values: values(b)?.unwrap_or_default(),
        description: b.string(&["Description"]).map_err(invalid)?,
        expiration: expiration(b)?,
        contact: contacts(b)?.unwrap_or_default(),
    };
    svc::create(&app, &c.caller, &c.access, &c.origin, &dn, new).await?;
    Ok(success())
}

#[utoipa::path(
    post,
    path = "/vedsdk/Credentials/Retrieve",
    tag = "vedsdk",
    description = "The credential at `CredentialPath`: its class, values, description, expiration (`/Date(ms)/`) and \
        contacts. Needs Read on it (granted there or above, to the caller or a group they are in; or a Master Admin). \
        Every read writes a `credential.retrieved` event first. `Result` 1, or 400 (none the caller may see), 7 (no Read) \
        with `Error`. Scope `security`.",
    security(("bearer" = [])),
    request_body(content = CredentialRequest, description = "A JSON object; keys match in any case."),
    responses(
        (status = 200, description = "`Result` 1 with the credential, or a failure's `Result` and `Error`.", body = CredentialRetrieveResponse),
        SdkRefusals,
    ),
)]
pub(crate) async fn retrieve(State(app): State<HttpState>, c: Credential<scope::Security>) -> Answer {
    let dn = path(&c.body, "CredentialPath")?;
    let (class, details) = svc::retrieve(&app, &c.caller, &dn).await?;
    Ok(ok(&CredentialRetrieveResponse {
        classname: class.class_name().to_owned(),
        contact: details.contact,
        description: details.description,
        expiration: details.expiration.map(format_expiration),
        friendly_name: class.friendly_name().to_owned(),
        result: result::SUCCESS,
        values: details.values.into_iter().map(NameTypeValue::from).collect(),
        error: None,
    }))
}

#[utoipa::path(
    post,
    path = "/vedsdk/Credentials/Update",
    tag = "vedsdk",
    description = "Replaces what is given of the credential at `CredentialPath`: `Values` (all of them), \
        `Description`, `Expiration`, `Contact`. `FriendlyName`, if given, must be the credential's (else `Result` 1004). \
        Needs Write on it. One conditional write: `Result` 504 if it changed meanwhile. Scope `security:manage`.",
    security(("bearer" = [])),
    request_body(content = CredentialRequest, description = "A JSON object; keys match in any case."),
    responses(
        (status = 200, description = "`Result` 1, or a failure's `Result` and `Error`.", body = CredentialResult),
        SdkRefusals,
    ),
)]
pub(crate) async fn update(State(app): State<HttpState>, c: Credential<scope::SecurityManage>) -> Answer {
    let b = &c.body;
    let dn = path(b, "CredentialPath")?;
    let changes = Changes {
        class: b.string(&["FriendlyName"]).map_err(invalid)?,
        values: values(b)?,
        description: b.string(&["Description"]).map_err(invalid)?,
        expiration: expiration(b)?,
        contact: contacts(b)?,
    };
    svc::update(&app, &c.caller, &dn, changes).await?;
    Ok(success())
}

#[utoipa::path(
    post,
    path = "/vedsdk/Credentials/Delete",
    tag = "vedsdk",
    description = "Deletes the credential at `CredentialPath` with its sealed values. Needs Write and Delete on it. \
        `Result` 1, or 400, 7 with `Error`. Scope `security:delete`.",
    security(("bearer" = [])),
    request_body(content = CredentialRequest, description = "A JSON object; keys match in any case."),
    responses(
        (status = 200, description = "`Result` 1, or a failure's `Result` and `Error`.", body = CredentialResult),
        SdkRefusals,
    ),
)]
pub(crate) async fn delete(State(app): State<HttpState>, c: Credential<scope::SecurityDelete>) -> Answer {
    let dn = path(&c.body, "CredentialPath")?;
    svc::delete(&app, &c.caller, &c.access, &c.origin, &dn).await?;
    Ok(success())
}

#[utoipa::path(
    post,
    path = "/vedsdk/Credentials/Rename",
    tag = "vedsdk",
    description = "Renames or moves the credential at `CredentialPath` to `NewCredentialPath` (under `\\VED\\Policy`). \
        Needs Rename on it and Create on the new folder (as `Config/RenameObject`). `Result` 1, or 400, 401, 7 with \
        `Error`. Scope `security:manage`.",
    security(("bearer" = [])),
    request_body(content = CredentialRequest, description = "A JSON object; keys match in any case."),
    responses(
        (status = 200, description = "`Result` 1, or a failure's `Result` and `Error`.", body = CredentialResult),
        SdkRefusals,
    ),
)]
pub(crate) async fn rename(State(app): State<HttpState>, c: Credential<scope::SecurityManage>) -> Answer {
    let dn = path(&c.body, "CredentialPath")?;
    let to = path(&c.body, "NewCredentialPath")?;
    svc::rename(&app, &c.caller, &c.access, &c.origin, &dn, &to).await?;
    Ok(success())
}

#[utoipa::path(
    post,
    path = "/vedsdk/Credentials/Enumerate",
    tag = "vedsdk",
    description = "The credentials in the folder `CredentialPath` (and below it with `Recursive`) whose name matches \
        `Pattern` (`*`, `?`), that the caller holds any right on: `CredentialInfos` `[{ClassName, FullName}]`, by DN. \
        No values. Scope `security`.",
    security(("bearer" = [])),
    request_body(content = CredentialRequest, description = "A JSON object; keys match in any case."),
    responses(
        (status = 200, description = "`Result` 1 with `CredentialInfos`, or a failure's `Result` and `Error`.", body = CredentialEnumerateResponse),
        SdkRefusals,
    ),
)]
pub(crate) async fn enumerate(State(app): State<HttpState>, c: Credential<scope::Security>) -> Answer {
    let b = &c.body;
    let dn = path(b, "CredentialPath")?;
    let pattern = b.string(&["Pattern"]).map_err(invalid)?.filter(|p| !p.is_empty());
    let recursive = b.flag(&["Recursive"]).map_err(invalid)?.unwrap_or(false);
    let found = svc::enumerate(&app, &c.caller, &dn, pattern.as_deref(), recursive).await?;
    Ok(ok(&CredentialEnumerateResponse {
        credential_infos: found
            .into_iter()
            .map(|(class, dn)| CredentialInfo { class_name: class.class_name().to_owned(), full_name: dn })
            .collect(),
        result: result::SUCCESS,
        error: None,
    }))
}
