//! `/vedsdk/Config/*`: the `\VED` tree's folders and local identities as
//! objects, as the product answers them. Every answer the product gives a `Result`
//! for is HTTP 200 with that `Result` (VenafiPS branches on it after a
//! successful call); 401 and 403 are the token's and the scope's.

use axum::extract::State;
use axum::response::Response;

use strongroom_core::grant::AccessContext;
use strongroom_core::tree::{IDENTITY_DN, result};
use strongroom_proto::config::{
    ConfigObject, ConfigRequest, ConfigResult, DnToGuidResponse, GuidToDnResponse, ObjectResponse, ObjectsResponse,
};

use super::extract::{Sdk, scope};
use super::respond::{SdkFailure, TreeFailure, ok};
use super::responses::{BadJson, SdkRefusals, SdkTooLarge, Timeout, Unauthorized, Unavailable};
use crate::state::HttpState;
use strongroom_app::service::Origin;
use strongroom_app::service::tree::{self, Listing, Node, TreeError};
use strongroom_proto::read::{FieldError, SdkBody};

fn bad(e: FieldError) -> TreeFailure {
    SdkFailure::BadJson(e.0).into()
}

fn wire(n: &Node) -> ConfigObject {
    ConfigObject {
        absolute_guid: n.guid.braced(),
        dn: n.dn.clone(),
        guid: n.guid.braced(),
        id: n.guid.id(),
        name: n.name().to_owned(),
        parent: n.parent(),
        revision: n.revision,
        type_name: n.class.to_owned(),
    }
}

fn object(n: &Node) -> Response {
    ok(&ObjectResponse { object: Some(wire(n)), result: result::SUCCESS, error: None })
}

fn dn_of(body: &SdkBody) -> Result<Option<String>, TreeFailure> {
    body.string(&["ObjectDN"]).map_err(bad)
}

fn required_dn(body: &SdkBody) -> Result<String, TreeFailure> {
    dn_of(body)?.ok_or_else(|| TreeFailure::Tree(TreeError::Result(result::OBJECT_DOES_NOT_EXIST, "ObjectDN is required.".into())))
}

/// `POST Config/Create`: scope `configuration:manage`.
#[utoipa::path(
    post,
    path = "/vedsdk/Config/Create",
    tag = "vedsdk",
    description = "Creates an object. `Class` `Policy`: a folder whose parent exists, for a caller with Create on the \
        parent (or a Master Admin). `Class` `User` at `\\VED\\Identity\\<name>`: a local user without a usable password \
        (set one with `admin users passwd`), Master Admin only; `Group` likewise a local group. HTTP 200 with `Result` 1 and \
        `Object`, or `Result` 7 (insufficient privileges), 400 (the parent does not exist, or the caller cannot see it), 401 \
        (it exists), 405 (an invalid name), 406 (an invalid class), 407 (not allowed under that parent), with `Error`. \
        `Class` `X509 Certificate` (pyvenafi's `certificate.create`) in a policy folder under `\\VED\\Policy`, for a caller \
        with Create on it: a certificate object holding no certificate yet, with its `NameAttributeList` (`Description`, \
        `Contact`, `Approver`, `Management Type`, `Manual Csr`, `X509 Subject`, `Organization`, `Organizational Unit`, \
        `City`, `State`, `Country`, `X509 SubjectAltName DNS`/`IPAddress`/`URI`/`RFC822`/`OtherName UPN`, `Key Algorithm`, \
        `Key Bit Strength`, `Elliptic Curve`, `PKIX Parameter Set`, `Certificate Authority`, `Disable Automatic Renewal`; \
        `Driver Name`, `PKCS10 Hash Algorithm`, `Renewal Window` and `Origin` are accepted and not acted on); \
        `Certificates/Renew` enrolls it from them, where the folder's policy judges them as it judges a request (a violation \
        is 400 there). Another attribute name is `Result` 112, a value that cannot be (an RSA key under 2048 bits, a CA \
        this server does not have, keys made on applications) 2. Other classes read and ignore \
        `NameAttributeList`. Scope `configuration:manage`.",
    security(("bearer" = [])),
    request_body(content = ConfigRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "`Result` 1 and `Object`, or a failure's `Result` and `Error`.", body = ObjectResponse),
        SdkRefusals,
    ),
)]
pub(crate) async fn create(
    State(app): State<HttpState>,
    origin: Origin,
    Sdk { ctx, body, .. }: Sdk<scope::ConfigurationManage>,
) -> Result<Response, TreeFailure> {
    let dn = required_dn(&body)?;
    let class = body.string(&["Class"]).map_err(bad)?.unwrap_or_default();
    // Only a certificate object keeps its attributes; the other classes ignore them, unread.
    let attributes =
        if strongroom_core::cert::is_certificate_class(&class) { name_values(&body, &["NameAttributeList"])? } else { Vec::new() };
    let node = tree::create_with(&app, &ctx, &origin, &dn, &class, &attributes).await?;
    Ok(object(&node))
}

/// `[{Name, Value}]` (`NameAttributeList`, `AttributeData`): each `Value` a list of strings, one
/// string or a number (VenafiPS sends scalars, pyvenafi lists).
fn name_values(body: &SdkBody, names: &[&str]) -> Result<Vec<(String, Vec<String>)>, TreeFailure> {
    let mut out = Vec::new();
    for a in body.objects(names).map_err(bad)?.unwrap_or_default() {
        let name = a.string(&["Name"]).map_err(bad)?.unwrap_or_default();
        let values = match a.strings(&["Value", "Values"]) {
            Ok(v) => v.unwrap_or_default(),
            Err(_) => a.text(&["Value", "Values"]).map_err(bad)?.into_iter().collect(),
        };
        out.push((name, values));
    }
    Ok(out)
}

/// `POST Config/Write`: scope `configuration:manage`.
#[utoipa::path(
    post,
    path = "/vedsdk/Config/Write",
    tag = "vedsdk",
    description = "Writes attributes of an object: `ObjectDN`, `AttributeData` `[{Name, Value}]` (`Value` a list or, as \
        VenafiPS sends it, one value). Written here: `Disabled` (`1` or `0`) of a certificate object, as \
        `PUT Certificates/{guid}` does (VenafiPS's Disable): Write on it. Any other attribute, or an object that is not a \
        certificate, is `Result` 5 (not implemented) and nothing is written. `Result` 1, or 2 (a value not 0 or 1), 5, 7, 400 \
        with `Error`. Scope \
        `configuration:manage`.",
    security(("bearer" = [])),
    request_body(content = ConfigRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "`Result` 1, or a failure's `Result` and `Error`.", body = ConfigResult),
        SdkRefusals,
    ),
)]
pub(crate) async fn write(
    State(app): State<HttpState>,
    origin: Origin,
    Sdk { ctx, body, .. }: Sdk<scope::ConfigurationManage>,
) -> Result<Response, TreeFailure> {
    let dn = required_dn(&body)?;
    let attributes = name_values(&body, &["AttributeData"])?;
    tree::write(&app, &ctx, &origin, &dn, &attributes).await?;
    Ok(ok(&ConfigResult { result: result::SUCCESS, error: None }))
}

/// `POST Config/Delete`: scope `configuration:delete`.
#[utoipa::path(
    post,
    path = "/vedsdk/Config/Delete",
    tag = "vedsdk",
    description = "Deletes an object. A folder needs Delete on it (or a Master Admin); one with folders below it or \
        owning vault entries is `Result` 402 unless `Recursive` (`true`, `1` or `\"true\"`), which deletes the folders \
        below it and every entry left without an owner. A user or group under `\\VED\\Identity` (Master Admin only) is \
        deleted as `admin users delete` / `admin groups delete` do. `Result` 1, or 7, 400, 402 with `Error`. Scope \
        `configuration:delete`.",
    security(("bearer" = [])),
    request_body(content = ConfigRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "`Result` 1, or a failure's `Result` and `Error`.", body = ConfigResult),
        SdkRefusals,
    ),
)]
pub(crate) async fn delete(
    State(app): State<HttpState>,
    origin: Origin,
    Sdk { ctx, body, .. }: Sdk<scope::ConfigurationDelete>,
) -> Result<Response, TreeFailure> {
    let dn = required_dn(&body)?;
    let recursive = body.flag(&["Recursive"]).map_err(bad)?.unwrap_or(false);
    tree::delete(&app, &ctx, &origin, &dn, recursive).await?;
    Ok(ok(&ConfigResult { result: result::SUCCESS, error: None }))
}

/// `POST Config/IsValid`: scope `configuration`.
#[utoipa::path(
    post,
    path = "/vedsdk/Config/IsValid",
    tag = "vedsdk",
    description = "Whether the object `ObjectDN` or `ObjectGUID` (braces optional) names exists: `Result` 1 with \
        `Object`, or `Result` 400 with `Error` (also for an object the caller may not see). Scope `configuration`.",
    security(("bearer" = [])),
    request_body(content = ConfigRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "`Result` 1 and `Object`, or `Result` 400 and `Error`.", body = ObjectResponse),
        SdkRefusals,
    ),
)]
pub(crate) async fn is_valid(
    State(app): State<HttpState>,
    Sdk { ctx, body, .. }: Sdk<scope::Configuration>,
) -> Result<Response, TreeFailure> {
    let guid = body.string(&["ObjectGUID"]).map_err(bad)?;
    let perms = tree::caller_rights(&app, &ctx).await?;
    let node = tree::find(&app, &perms, dn_of(&body)?.as_deref(), guid.as_deref()).await?;
    Ok(object(&node))
}

/// `POST Config/DnToGuid`: any scope.
#[utoipa::path(
    post,
    path = "/vedsdk/Config/DnToGuid",
    tag = "vedsdk",
    description = "The GUID (with braces), class and revision of the object `ObjectDN`; `Result` 400 with `Error` when \
        there is none (or the caller may not see it). Any valid token, whatever its scope.",
    security(("bearer" = [])),
    request_body(content = ConfigRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "`Result` 1 with `GUID`, or a failure's `Result` and `Error`.", body = DnToGuidResponse),
        (status = 400, response = BadJson),
        (status = 401, response = Unauthorized),
        (status = 408, response = Timeout),
        (status = 413, response = SdkTooLarge),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn dn_to_guid(State(app): State<HttpState>, Sdk { ctx, body, .. }: Sdk<scope::Any>) -> Result<Response, TreeFailure> {
    let dn = required_dn(&body)?;
    let perms = tree::caller_rights(&app, &ctx).await?;
    let n = tree::find(&app, &perms, Some(&dn), None).await?;
    Ok(ok(&DnToGuidResponse {
        guid: Some(n.guid.braced()),
        class_name: Some(n.class.to_owned()),
        revision: Some(n.revision),
        hierarchical_guid: Some(n.guid.braced()),
        result: result::SUCCESS,
        error: None,
    }))
}

/// `POST Config/GuidToDn`: any scope.
#[utoipa::path(
    post,
    path = "/vedsdk/Config/GuidToDn",
    tag = "vedsdk",
    description = "The DN, class and revision of the object `ObjectGUID` (braces optional); `Result` 400 with `Error` \
        when there is none (or the caller may not see it). Any valid token, whatever its scope.",
    security(("bearer" = [])),
    request_body(content = ConfigRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "`Result` 1 with `ObjectDN`, or a failure's `Result` and `Error`.", body = GuidToDnResponse),
        (status = 400, response = BadJson),
        (status = 401, response = Unauthorized),
        (status = 408, response = Timeout),
        (status = 413, response = SdkTooLarge),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn guid_to_dn(State(app): State<HttpState>, Sdk { ctx, body, .. }: Sdk<scope::Any>) -> Result<Response, TreeFailure> {
    let guid = body.string(&["ObjectGUID"]).map_err(bad)?.unwrap_or_default();
    let perms = tree::caller_rights(&app, &ctx).await?;
    let n = tree::find(&app, &perms, None, Some(&guid)).await?;
    Ok(ok(&GuidToDnResponse {
        object_dn: Some(n.dn.clone()),
        class_name: Some(n.class.to_owned()),
        revision: Some(n.revision),
        hierarchical_guid: Some(n.guid.braced()),
        result: result::SUCCESS,
        error: None,
    }))
}

/// Lists below `ObjectDN` (default `default_dn`) for Enumerate and FindObjectsOfClass.
async fn list(
    app: &HttpState,
    ctx: &AccessContext,
    body: &SdkBody,
    default_dn: &str,
    classes: &[String],
    recursive_default: bool,
) -> Result<Response, TreeFailure> {
    let dn = dn_of(body)?;
    let recursive = body.flag(&["Recursive"]).map_err(bad)?.unwrap_or(recursive_default && dn.is_none());
    let pattern = body.string(&["Pattern"]).map_err(bad)?.unwrap_or_default();
    let perms = tree::caller_rights(app, ctx).await?;
    let base = tree::find(app, &perms, Some(dn.as_deref().unwrap_or(default_dn)), None).await?;
    let found = tree::children(app, &perms, &base, &Listing { recursive, pattern: &pattern, classes }).await?;
    Ok(ok(&ObjectsResponse { objects: found.iter().map(wire).collect(), result: result::SUCCESS, error: None }))
}

/// `POST Config/Enumerate`: scope `configuration`.
#[utoipa::path(
    post,
    path = "/vedsdk/Config/Enumerate",
    tag = "vedsdk",
    description = "The objects below `ObjectDN` (default `\\VED\\Policy`) the caller may see: its children, or with \
        `Recursive` everything below it; `Pattern` keeps those whose name matches (`*` any run, `?` one character, `\\` \
        escapes). `\\VED\\Identity` lists local users and groups. `Result` 1 with `Objects`, or 400 with `Error`. Scope \
        `configuration`.",
    security(("bearer" = [])),
    request_body(content = ConfigRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "`Result` 1 with `Objects`, or a failure's `Result` and `Error`.", body = ObjectsResponse),
        SdkRefusals,
    ),
)]
pub(crate) async fn enumerate(
    State(app): State<HttpState>,
    Sdk { ctx, body, .. }: Sdk<scope::Configuration>,
) -> Result<Response, TreeFailure> {
    list(&app, &ctx, &body, strongroom_core::tree::POLICY_DN, &[], false).await
}

/// `POST Config/FindObjectsOfClass`: scope `configuration`.
#[utoipa::path(
    post,
    path = "/vedsdk/Config/FindObjectsOfClass",
    tag = "vedsdk",
    description = "The objects of `Class` or `Classes` (`Policy`, `User`, `Group`, `Top`) below `ObjectDN` the caller \
        may see, `Recursive` and `Pattern` as Enumerate's. Without `ObjectDN`, the whole tree from `\\VED`. Scope \
        `configuration`.",
    security(("bearer" = [])),
    request_body(content = ConfigRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "`Result` 1 with `Objects`, or a failure's `Result` and `Error`.", body = ObjectsResponse),
        SdkRefusals,
    ),
)]
pub(crate) async fn find_objects_of_class(
    State(app): State<HttpState>,
    Sdk { ctx, body, .. }: Sdk<scope::Configuration>,
) -> Result<Response, TreeFailure> {
    let mut classes = body.strings(&["Classes"]).map_err(bad)?.unwrap_or_default();
    classes.extend(body.string(&["Class"]).map_err(bad)?);
    if classes.is_empty() {
        return Err(TreeError::Result(result::OBJECT_INVALID_CLASS, "Class or Classes is required.".into()).into());
    }
    let base = if dn_of(&body)?.is_none() && classes.iter().all(|c| ["User", "Group"].iter().any(|k| k.eq_ignore_ascii_case(c))) {
        IDENTITY_DN
    } else {
        strongroom_core::tree::VED_DN
    };
    list(&app, &ctx, &body, base, &classes, true).await
}

/// `POST Config/RenameObject`: scope `configuration:manage`.
#[utoipa::path(
    post,
    path = "/vedsdk/Config/RenameObject",
    tag = "vedsdk",
    description = "Renames or moves the folder `ObjectDN` to `NewObjectDN`, with everything below it, in one \
        transaction: each folder keeps its GUID, and its rights and the vault entries it owns follow it. Needs Rename on \
        the folder and Create on the new parent (or a Master Admin). `Result` 1, or 7, 400 (no such object or new \
        parent), 401 (the new DN is taken), 405, 406 (not a folder), 407, with `Error`. Scope `configuration:manage`.",
    security(("bearer" = [])),
    request_body(content = ConfigRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "`Result` 1, or a failure's `Result` and `Error`.", body = ConfigResult),
        SdkRefusals,
    ),
)]
pub(crate) async fn rename_object(
    State(app): State<HttpState>,
    origin: Origin,
    Sdk { ctx, body, .. }: Sdk<scope::ConfigurationManage>,
) -> Result<Response, TreeFailure> {
    let dn = required_dn(&body)?;
    let new_dn = body.string(&["NewObjectDN"]).map_err(bad)?.unwrap_or_default();
    tree::rename(&app, &ctx, &origin, &dn, &new_dn).await?;
    Ok(ok(&ConfigResult { result: result::SUCCESS, error: None }))
}
