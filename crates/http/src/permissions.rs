//! `/vedsdk/Permissions/Object/{guid}/…`: explicit, implicit and effective
//! permissions on a folder, as the product answers them. HTTP statuses, not
//! `Result`s: 201 created, 200 replaced or deleted, 404 no such entry, 409
//! an entry exists, 400 an unknown object or principal, 403 without scope
//! `security` (`security:manage` to create or replace, `security:delete`
//! to delete) or without ManagePermissions on the folder (a Master Admin
//! has it everywhere). Errors are `{"Error":"…"}`.
//!
//! A principal is `local/{guid}` (braces optional, percent-encoded or not),
//! or a directory's `AD/{provider}/{guid}` / `LDAP/{provider}/{guid}`.

use axum::extract::{Path, Request, State};
use axum::response::Response;

use strongroom_core::grant::AccessContext;
use strongroom_core::tree::{flags_of, rights_from_flags};
use strongroom_core::vault::Rights;
use strongroom_proto::permissions::{EffectivePermissions, Permissions as Flags, PermissionsRequest, PrincipalPermissions};
use strongroom_store::RightsChange;

use super::extract::{Caller, Plain, bearer_token, scope, sdk_body};
use super::respond::{SdkFailure, TreeFailure, created, done, ok};
use super::responses::{BadJson, Forbidden, SdkTooLarge, Timeout, Unauthorized, Unavailable};
use crate::state::HttpState;
use strongroom_app::service::Origin;
use strongroom_app::service::bearer;
use strongroom_app::service::tree::{self, TreeError};

/// The caller of an entry call, whose scope depends on the method (one
/// handler serves GET, POST, PUT and DELETE); the other calls here take a
/// [`Caller`].
async fn caller(app: &HttpState, token: Option<String>, scope: &'static str) -> Result<AccessContext, TreeFailure> {
    let ctx = bearer::authenticate(app, token.as_deref()).await?;
    bearer::require(&ctx, scope)?;
    Ok(ctx)
}

fn flags(r: Rights) -> Flags {
    Flags::from_flags(flags_of(r))
}

/// The twelve flags of a POST or PUT body (keys in any case; a flag not given is false).
async fn body_rights(req: Request) -> Result<Rights, TreeFailure> {
    let body = sdk_body::<Plain>(req).await?;
    let mut set = Vec::new();
    for (name, _) in strongroom_core::tree::FLAGS {
        if let Some(on) = body.flag(&[name]).map_err(|e| SdkFailure::BadJson(e.0))? {
            set.push((name, on));
        }
    }
    Ok(rights_from_flags(set))
}

/// `local/{principal}` or `AD|LDAP/{provider}/{principal}` split from the path.
struct Who<'a> {
    ptype: &'a str,
    provider: Option<&'a str>,
    id: &'a str,
}

async fn entry(
    app: &HttpState,
    ctx: &AccessContext,
    origin: &Origin,
    guid: &str,
    who: Who<'_>,
    change: Option<RightsChange>,
) -> Result<Response, TreeFailure> {
    let f = tree::managed_folder(app, ctx, guid).await?;
    let (holder, name, user) = tree::principal(app, who.ptype, who.provider, who.id).await?;
    match change {
        Some(c) => {
            tree::change(app, ctx, origin, &f, holder, &name, c).await?;
            Ok(if matches!(c, RightsChange::Create(_)) { created() } else { done() })
        }
        None => {
            let held = tree::held_by(app, &f, &holder, user.as_ref()).await?;
            // A principal without an explicit entry is 404: a 200 without ExplicitPermissions crashes pyvenafi.
            let explicit =
                held.explicit.ok_or_else(|| TreeError::NotFound("The principal has no explicit permissions on this object.".into()))?;
            Ok(ok(&PrincipalPermissions { explicit: flags(explicit), implicit: flags(held.implicit.implied()) }))
        }
    }
}

async fn effective(app: &HttpState, ctx: &AccessContext, guid: &str, who: Who<'_>) -> Result<Response, TreeFailure> {
    let f = tree::managed_folder(app, ctx, guid).await?;
    let (holder, _, user) = tree::principal(app, who.ptype, who.provider, who.id).await?;
    let held = tree::held_by(app, &f, &holder, user.as_ref()).await?;
    let all = if held.master_admin { Rights::ALL } else { held.explicit.unwrap_or(Rights::NONE).union(held.implicit).implied() };
    Ok(ok(&EffectivePermissions { effective: flags(all) }))
}

/// What a method on an entry does.
async fn on_entry(app: HttpState, origin: Origin, req: Request, guid: String, who: Who<'_>) -> Result<Response, TreeFailure> {
    let method = req.method().clone();
    let token = bearer_token(req.headers());
    if method == axum::http::Method::GET {
        let ctx = caller(&app, token, "security").await?;
        return entry(&app, &ctx, &origin, &guid, who, None).await;
    }
    if method == axum::http::Method::DELETE {
        let ctx = caller(&app, token, "security:delete").await?;
        return entry(&app, &ctx, &origin, &guid, who, Some(RightsChange::Delete)).await;
    }
    let ctx = caller(&app, token, "security:manage").await?;
    let rights = body_rights(req).await?;
    let change = if method == axum::http::Method::POST { RightsChange::Create(rights) } else { RightsChange::Replace(rights) };
    entry(&app, &ctx, &origin, &guid, who, Some(change)).await
}

/// `GET Permissions/Object/{guid}`: scope `security`.
#[utoipa::path(
    get,
    path = "/vedsdk/Permissions/Object/{guid}",
    tag = "vedsdk",
    description = "The principals with an explicit entry on the folder `guid` (braces optional), as a bare JSON array of \
        `PrefixedUniversal`s (`local:{…}`, `LDAP+corp:{…}`). Needs ManagePermissions on the folder (or a Master Admin). \
        Scope `security`.",
    security(("bearer" = [])),
    params(("guid" = String, Path, description = "The object's GUID, with or without braces.")),
    responses(
        (status = 200, description = "`[\"local:{…}\", …]`.", body = Vec<String>),
        (status = 400, response = BadJson),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 408, response = Timeout),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn principals(
    State(app): State<HttpState>,
    Caller(ctx, _): Caller<scope::Security>,
    Path(guid): Path<String>,
) -> Result<Response, TreeFailure> {
    Ok(ok(&tree::principals(&app, &ctx, &guid).await?))
}

/// `GET|POST|PUT|DELETE Permissions/Object/{guid}/local/{principal}`.
#[utoipa::path(
    method(get, post, put, delete),
    path = "/vedsdk/Permissions/Object/{guid}/{ptype}/{principal}",
    tag = "vedsdk",
    description = "One principal's entry on the folder `guid`; `ptype` is `local`, `principal` a local user's or group's \
        `{GUID}`. GET: `ExplicitPermissions` (the entry on this folder) and `ImplicitPermissions` (inherited from folders \
        above and from groups), 404 when the principal has no explicit entry here (scope `security`). POST: creates the \
        entry from the body's `Is…Allowed` flags, 201 with an empty body, 409 `Permission already exists` (scope \
        `security:manage`). PUT: replaces it, 200, 404 `Permission does not exist so cannot be updated` (scope \
        `security:manage`). DELETE: 200 with an empty body, 404 (scope `security:delete`). An unknown principal is 400 \
        `Unable to verify principal`; every call needs ManagePermissions on the folder (or a Master Admin), else 403.",
    security(("bearer" = [])),
    params(
        ("guid" = String, Path, description = "The object's GUID, with or without braces."),
        ("ptype" = String, Path, description = "`local`."),
        ("principal" = String, Path, description = "The principal's `{GUID}`."),
    ),
    request_body(content = PermissionsRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "GET: the entry; PUT, DELETE: done (empty body).", body = PrincipalPermissions),
        (status = 201, description = "POST: created (empty body)."),
        (status = 400, response = BadJson),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, description = "No such entry.", body = strongroom_proto::vedsdk::ErrorOnly),
        (status = 408, response = Timeout),
        (status = 409, description = "POST: the entry exists.", body = strongroom_proto::vedsdk::ErrorOnly),
        (status = 413, response = SdkTooLarge),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn local_entry(
    State(app): State<HttpState>,
    origin: Origin,
    Path((guid, ptype, principal)): Path<(String, String, String)>,
    req: Request,
) -> Result<Response, TreeFailure> {
    on_entry(app, origin, req, guid, Who { ptype: &ptype, provider: None, id: &principal }).await
}

/// `GET|POST|PUT|DELETE Permissions/Object/{guid}/{AD|LDAP}/{provider}/{principal}`.
#[utoipa::path(
    method(get, post, put, delete),
    path = "/vedsdk/Permissions/Object/{guid}/{ptype}/{principal}/{id}",
    tag = "vedsdk",
    description = "As `…/{ptype}/{principal}`, for a directory's user or group: `ptype` is `AD` or `LDAP`, `principal` \
        the provider's name (`corp` of `LDAP+corp`), `id` the identity's `{GUID}`.",
    security(("bearer" = [])),
    params(
        ("guid" = String, Path, description = "The object's GUID, with or without braces."),
        ("ptype" = String, Path, description = "`AD` or `LDAP`."),
        ("principal" = String, Path, description = "The provider's name."),
        ("id" = String, Path, description = "The identity's `{GUID}`."),
    ),
    request_body(content = PermissionsRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "GET: the entry; PUT, DELETE: done (empty body).", body = PrincipalPermissions),
        (status = 201, description = "POST: created (empty body)."),
        (status = 400, response = BadJson),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, description = "No such entry.", body = strongroom_proto::vedsdk::ErrorOnly),
        (status = 408, response = Timeout),
        (status = 409, description = "POST: the entry exists.", body = strongroom_proto::vedsdk::ErrorOnly),
        (status = 413, response = SdkTooLarge),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn directory_entry(
    State(app): State<HttpState>,
    origin: Origin,
    Path((guid, ptype, provider, id)): Path<(String, String, String, String)>,
    req: Request,
) -> Result<Response, TreeFailure> {
    on_entry(app, origin, req, guid, Who { ptype: &ptype, provider: Some(&provider), id: &id }).await
}

/// `GET Permissions/Object/{guid}/local/{principal}/Effective`: scope `security`.
#[utoipa::path(
    get,
    path = "/vedsdk/Permissions/Object/{guid}/{ptype}/{principal}/Effective",
    tag = "vedsdk",
    description = "What the principal may do on the folder: its explicit entry, what it inherits from folders above and \
        from its groups, every flag for a Master Admin; Create implies View, Write implies Read. 400 `Unable to verify \
        principal` for an unknown one. Needs ManagePermissions on the folder (or a Master Admin). Scope `security`.",
    security(("bearer" = [])),
    params(
        ("guid" = String, Path, description = "The object's GUID, with or without braces."),
        ("ptype" = String, Path, description = "`local`."),
        ("principal" = String, Path, description = "The principal's `{GUID}`."),
    ),
    responses(
        (status = 200, description = "`EffectivePermissions`.", body = EffectivePermissions),
        (status = 400, response = BadJson),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 408, response = Timeout),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn local_effective(
    State(app): State<HttpState>,
    Caller(ctx, _): Caller<scope::Security>,
    Path((guid, ptype, principal)): Path<(String, String, String)>,
) -> Result<Response, TreeFailure> {
    effective(&app, &ctx, &guid, Who { ptype: &ptype, provider: None, id: &principal }).await
}

/// `GET Permissions/Object/{guid}/{AD|LDAP}/{provider}/{principal}/Effective`: scope `security`.
#[utoipa::path(
    get,
    path = "/vedsdk/Permissions/Object/{guid}/{ptype}/{principal}/{id}/Effective",
    tag = "vedsdk",
    description = "As `…/{ptype}/{principal}/Effective`, for a directory's user or group.",
    security(("bearer" = [])),
    params(
        ("guid" = String, Path, description = "The object's GUID, with or without braces."),
        ("ptype" = String, Path, description = "`AD` or `LDAP`."),
        ("principal" = String, Path, description = "The provider's name."),
        ("id" = String, Path, description = "The identity's `{GUID}`."),
    ),
    responses(
        (status = 200, description = "`EffectivePermissions`.", body = EffectivePermissions),
        (status = 400, response = BadJson),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 408, response = Timeout),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn directory_effective(
    State(app): State<HttpState>,
    Caller(ctx, _): Caller<scope::Security>,
    Path((guid, ptype, provider, id)): Path<(String, String, String, String)>,
) -> Result<Response, TreeFailure> {
    effective(&app, &ctx, &guid, Who { ptype: &ptype, provider: Some(&provider), id: &id }).await
}
