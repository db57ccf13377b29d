//! `/vedsdk/Identity/*` and `POST /vedsdk/Log`: the calls that clients of the
//! product make right after they authenticate. Go vcert (cert-manager, the
//! Terraform provider, the vcert CLI) calls `GET Identity/Self` after every
//! authentication whenever it was given an HTTP client, and fails without it;
//! VenafiPS and pyvenafi resolve people and groups with `Validate`, `Browse`,
//! `GetMemberships` and `GetMembers` (scope `configuration`, as the product).

use axum::extract::State;
use axum::response::Response;

use strongroom_core::event::{ClientLog, Severity};
use strongroom_core::identity::{IdentityEntry, IdentityRef, identity_type};
use strongroom_proto::vedsdk::{
    BrowseRequest, IdentitiesResponse, IdentityEntry as WireEntry, IdentityRequest, LogRequest, LogResultResponse, ValidateResponse,
};

use super::extract::{Caller, Sdk, scope};
use super::respond::{SdkFailure, ok};
use super::responses::{BadJson, SdkRefusals, SdkTooLarge, Timeout, Unauthorized, Unavailable};
use crate::state::HttpState;
use strongroom_app::service::Origin;
use strongroom_app::service::bearer;
use strongroom_app::service::identity::{self as people, BROWSE_DEFAULT, BROWSE_MAX, Found};
use strongroom_proto::read::SdkBody;

fn wire(e: &IdentityEntry) -> WireEntry {
    WireEntry {
        full_name: e.full_name.clone(),
        name: e.name.clone(),
        prefix: e.prefix.clone(),
        prefixed_name: e.prefixed_name(),
        prefixed_universal: e.prefixed_universal(),
        kind: e.kind,
        universal: e.universal.clone(),
    }
}

/// `GET Identity/Self`: any valid bearer token, whatever its scope.
#[utoipa::path(
    get,
    path = "/vedsdk/Identity/Self",
    tag = "vedsdk",
    description = "The caller's identity (its `PrefixedUniversal` is `Verify`'s `identity`), then the groups it is a \
        member of now (`Type` 2), then its identity provider (`Type` 32). Any valid token, whatever its scope.",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The caller, its groups, its provider.", body = IdentitiesResponse),
        (status = 401, response = Unauthorized),
        (status = 408, response = Timeout),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn self_(State(app): State<HttpState>, Caller(ctx, _): Caller<scope::Any>) -> Result<Response, SdkFailure> {
    let identities = people::self_entries(&app, &ctx.grant.user_id, &ctx.user_name).await.map_err(bearer::BearerError::from)?;
    Ok(ok(&IdentitiesResponse { identities: identities.iter().map(wire).collect() }))
}

/// The identity the body's `ID` names: `Ok(None)` when this server has none
/// by that name; 400 when `ID` is missing or cannot name an identity.
async fn named(app: &HttpState, body: &SdkBody) -> Result<Option<Found>, SdkFailure> {
    let given = body.identity(&["ID"]).map_err(|e| SdkFailure::BadJson(e.0))?;
    let given = given.ok_or_else(|| SdkFailure::BadJson("ID is required: an object with PrefixedName or PrefixedUniversal.".into()))?;
    let r = IdentityRef::parse(&given).ok_or_else(|| {
        SdkFailure::BadJson("ID must name an identity: local:NAME, local:{GUID}, or a provider's prefixed identity.".into())
    })?;
    people::resolve(app, &r).await.map_err(|e| SdkFailure::Bearer(e.into()))
}

fn unknown() -> SdkFailure {
    SdkFailure::BadJson("No such identity.".into())
}

/// `POST Identity/Validate`: scope `configuration`.
#[utoipa::path(
    post,
    path = "/vedsdk/Identity/Validate",
    tag = "vedsdk",
    description = "The whole identity entry of the identity `ID` names (by `PrefixedUniversal`, `PrefixedName`, \
        `Universal` or `Name`; a plain string is read the same way). An identity this server does not have is HTTP 200 \
        with an empty body, as the product answers it (VenafiPS and pyvenafi read that as \"not found\"). Scope `configuration`.",
    security(("bearer" = [])),
    request_body(content = IdentityRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "`{\"ID\":{…}}`; an empty `text/plain` body when there is no such identity.",
            content((ValidateResponse = "application/json"), (String = "text/plain"))),
        SdkRefusals,
    ),
)]
pub(crate) async fn validate(
    State(app): State<HttpState>,
    Sdk { ctx: _, body, .. }: Sdk<scope::Configuration>,
) -> Result<Response, SdkFailure> {
    Ok(match named(&app, &body).await? {
        Some(found) => ok(&ValidateResponse { id: wire(&found.entry()) }),
        None => super::respond::empty_ok(),
    })
}

/// `POST Identity/Browse`: scope `configuration`.
#[utoipa::path(
    post,
    path = "/vedsdk/Identity/Browse",
    tag = "vedsdk",
    description = "Users and groups whose name starts with `Filter` (any case; `*` inside it matches any run), users \
        first, each by name, at most `Limit` (default 50, at most 1000). `IdentityType` flags: 1 users, 2 security groups, \
        8 distribution groups (a group here); default 11. Scope `configuration`.",
    security(("bearer" = [])),
    request_body(content = BrowseRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "`{\"Identities\":[…]}`.", body = IdentitiesResponse),
        SdkRefusals,
    ),
)]
pub(crate) async fn browse(
    State(app): State<HttpState>,
    Sdk { ctx: _, body, .. }: Sdk<scope::Configuration>,
) -> Result<Response, SdkFailure> {
    let bad = |e: strongroom_proto::read::FieldError| SdkFailure::BadJson(e.0);
    let filter = body.text(&["Filter"]).map_err(bad)?.unwrap_or_default();
    let limit = match body.int32(&["Limit"]).map_err(bad)? {
        None => BROWSE_DEFAULT,
        Some(n) if n >= 1 => usize::try_from(n).unwrap_or(BROWSE_MAX).min(BROWSE_MAX),
        Some(_) => return Err(SdkFailure::BadJson("Limit must be 1 or more.".into())),
    };
    let kinds = body.int32(&["IdentityType"]).map_err(bad)?.unwrap_or(identity_type::USER | identity_type::GROUP | 8);
    if kinds <= 0 {
        return Err(SdkFailure::BadJson("IdentityType must be a sum of 1 (users), 2 and 8 (groups).".into()));
    }
    let found = people::browse(&app, &filter, limit, kinds).await.map_err(|e| SdkFailure::Bearer(e.into()))?;
    Ok(ok(&IdentitiesResponse { identities: found.iter().map(wire).collect() }))
}

/// `POST Identity/GetMemberships`: scope `configuration`.
#[utoipa::path(
    post,
    path = "/vedsdk/Identity/GetMemberships",
    tag = "vedsdk",
    description = "The groups the identity `ID` names is a member of now (none for a group). An unknown identity is 400. \
        Scope `configuration`.",
    security(("bearer" = [])),
    request_body(content = IdentityRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "`{\"Identities\":[…]}`.", body = IdentitiesResponse),
        SdkRefusals,
    ),
)]
pub(crate) async fn memberships(
    State(app): State<HttpState>,
    Sdk { ctx: _, body, .. }: Sdk<scope::Configuration>,
) -> Result<Response, SdkFailure> {
    let found = named(&app, &body).await?.ok_or_else(unknown)?;
    let groups = people::memberships(&app, &found).await.map_err(|e| SdkFailure::Bearer(e.into()))?;
    Ok(ok(&IdentitiesResponse { identities: groups.iter().map(wire).collect() }))
}

/// `POST Identity/GetMembers`: scope `configuration`.
#[utoipa::path(
    post,
    path = "/vedsdk/Identity/GetMembers",
    tag = "vedsdk",
    description = "The members of the group `ID` names, by name. A user, or an unknown identity, is 400. `ResolveNested` \
        is accepted and changes nothing: local groups hold users only. Scope `configuration`.",
    security(("bearer" = [])),
    request_body(content = IdentityRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "`{\"Identities\":[…]}`.", body = IdentitiesResponse),
        SdkRefusals,
    ),
)]
pub(crate) async fn members(
    State(app): State<HttpState>,
    Sdk { ctx: _, body, .. }: Sdk<scope::Configuration>,
) -> Result<Response, SdkFailure> {
    let found = named(&app, &body).await?.ok_or_else(unknown)?;
    let members = people::members(&app, &found).await.map_err(|e| SdkFailure::Bearer(e.into()))?;
    let members = members.ok_or_else(|| SdkFailure::BadJson("ID names a user, not a group.".into()))?;
    Ok(ok(&IdentitiesResponse { identities: members.iter().map(wire).collect() }))
}

/// Reads a `POST Log` body into the event it asks for.
fn client_log(b: &SdkBody) -> Result<ClientLog, String> {
    let id = match b.int64(&["ID"]).map_err(|e| e.0)? {
        Some(n) => Some(u32::try_from(n).map_err(|_| "ID must be a decimal event id (0 to 4294967295).".to_owned())?),
        None => None,
    };
    let severity = match b.text(&["Severity"]).map_err(|e| e.0)? {
        Some(s) => Some(Severity::parse(&s).ok_or("Severity must be 1 to 8 or a severity's name.")?),
        None => None,
    };
    let mut fields = Vec::new();
    for name in ClientLog::FIELDS {
        if let Some(v) = b.text(&[name]).map_err(|e| e.0)? {
            fields.push((name, v));
        }
    }
    ClientLog::new(id, severity, fields).map_err(|e| format!("{e}."))
}

fn log_result(result: i32, error: Option<String>) -> Response {
    ok(&LogResultResponse { log_result: result, error })
}

/// `POST Log`: any valid bearer token, whatever its scope (the product's rule).
#[utoipa::path(
    post,
    path = "/vedsdk/Log",
    tag = "vedsdk",
    description = "Writes an event to the chained log as a `client.log` event under the caller's identity: `Component` \
        becomes its object, `ID`, `Severity` and the other fields its detail (each field at most 1024 bytes). Keys match \
        in any case; numbers may be numeric strings (Go vcert sends every field as a string). `LogResult` 0 is success; \
        1, with `Error`, a refused event or one that could not be stored (nothing written). Each identity writes at most \
        120 events a minute (counted on every replica together); past that, 429 with `Retry-After` and `LogResult` 1, \
        nothing written. A database that is busy or out of reach for a moment gets 503 `temporarily_unavailable`. Any \
        valid token, whatever its scope.",
    security(("bearer" = [])),
    request_body(content = LogRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "`{\"LogResult\":0}`, or 1 with the reason in `Error`.", body = LogResultResponse),
        (status = 400, response = BadJson),
        (status = 401, response = Unauthorized),
        (status = 408, response = Timeout),
        (status = 413, response = SdkTooLarge),
        (status = 429, description = "Over the identity's quota (120 events a minute): `LogResult` 1 with the reason in `Error`, and `Retry-After`; nothing was written.", body = LogResultResponse),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn write_log(
    State(app): State<HttpState>,
    origin: Origin,
    Sdk { ctx, body, .. }: Sdk<scope::Any>,
) -> Result<Response, SdkFailure> {
    let entry = match client_log(&body) {
        Ok(e) => e,
        Err(why) => return Ok(log_result(1, Some(why))),
    };
    match strongroom_app::service::log::write(&app, &ctx, &entry, &origin).await {
        Ok(Ok(())) => Ok(log_result(0, None)),
        Ok(Err(until)) => {
            let wait_ms = until.millis().saturating_sub(app.now().millis());
            Err(SdkFailure::LogQuota { retry_after_secs: (wait_ms.saturating_add(999) / 1000).max(1) })
        }
        // The database busy or out of reach for a moment: 503, try again.
        Err(e) if e.is_transient() => Err(SdkFailure::Vault(e.into())),
        Err(e) => {
            tracing::error!(kind = %e.kind(), error = %e, "client event could not be stored");
            Ok(log_result(1, Some("The event could not be stored; nothing was written. Try again.".into())))
        }
    }
}
