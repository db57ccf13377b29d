//! `/vedsdk/Identity/*` and `POST /vedsdk/Log`: the calls that clients of the
//! product make right after they authenticate. Go vcert (cert-manager, the
//! Terraform provider, the vcert CLI) calls `GET Identity/Self` after every
//! authentication whenever it was given an HTTP client, and fails without it.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::response::Response;

use strongroom_core::event::{ClientLog, Severity};
use strongroom_core::identity::IdentityEntry;
use strongroom_proto::vedsdk::{IdentitiesResponse, IdentityEntry as WireEntry, LogRequest, LogResultResponse};

use super::extract::bearer_token;
use super::openapi::{BadJson, SdkTooLarge, Timeout, Unauthorized, Unavailable};
use super::respond::{SdkFailure, ok};
use super::sdk_body::SdkBody;
use crate::service::Origin;
use crate::service::bearer;
use crate::state::AppState;

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
    description = "The caller's identity (its `PrefixedUniversal` is `Verify`'s `identity`), then its groups (none yet: \
        groups come with issue 18), then its identity provider (`Type` 32). Any valid token, whatever its scope.",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The caller, its groups, its provider.", body = IdentitiesResponse),
        (status = 401, response = Unauthorized),
        (status = 408, response = Timeout),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn self_(State(app): State<AppState>, req: Request) -> Result<Response, SdkFailure> {
    let ctx = bearer::authenticate(&app, bearer_token(req.headers()).as_deref()).await?;
    let identities = [IdentityEntry::user(&ctx.grant.user_id, &ctx.user_name), IdentityEntry::local_provider()];
    Ok(ok(&IdentitiesResponse { identities: identities.iter().map(wire).collect() }))
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
        1, with `Error`, a refused event or one that could not be stored (nothing written). A database that is busy or \
        out of reach for a moment gets 503 `temporarily_unavailable`. Any valid token, whatever its scope.",
    security(("bearer" = [])),
    request_body(content = LogRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "`{\"LogResult\":0}`, or 1 with the reason in `Error`.", body = LogResultResponse),
        (status = 400, response = BadJson),
        (status = 401, response = Unauthorized),
        (status = 408, response = Timeout),
        (status = 413, response = SdkTooLarge),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn write_log(State(app): State<AppState>, origin: Origin, req: Request) -> Result<Response, SdkFailure> {
    let ctx = bearer::authenticate(&app, bearer_token(req.headers()).as_deref()).await?;
    let bytes = match Bytes::from_request(req, &()).await {
        Ok(b) => b,
        Err(e) if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE => return Err(SdkFailure::TooLarge),
        Err(_) => return Err(SdkFailure::BadJson("The request body could not be read.".into())),
    };
    let body = SdkBody::parse(&bytes).map_err(SdkFailure::BadJson)?;
    let entry = match client_log(&body) {
        Ok(e) => e,
        Err(why) => return Ok(log_result(1, Some(why))),
    };
    match crate::service::log::write(&app, &ctx, &entry, &origin).await {
        Ok(()) => Ok(log_result(0, None)),
        // The database busy or out of reach for a moment: 503, try again.
        Err(e) if e.is_transient() => Err(SdkFailure::Vault(e.into())),
        Err(e) => {
            tracing::error!(kind = %e.kind(), error = %e, "client event could not be stored");
            Ok(log_result(1, Some("The event could not be stored; nothing was written. Try again.".into())))
        }
    }
}
