//! The only place that chooses HTTP statuses, headers and error bodies.
//!
//! Handlers return `Result<Outcome, Error>` with types from the service layer;
//! this module maps every variant exhaustively. Internal errors are logged
//! here with the request's span (which carries the request id) and answered
//! with a generic text: details never reach the client.

use axum::Json;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use serde::Serialize;

use strongroom_proto::certificates::{StageStatus, SuccessResponse};
use strongroom_proto::vedauth::{ErrorResponse, RevokeResponse};
use strongroom_proto::vedsdk::{BearerErrorResponse, ErrorOnly, ResultCode, ResultResponse};
use strongroom_store::StoreError;

use strongroom_app::service::AuthError;
use strongroom_app::service::bearer::BearerError;
use strongroom_app::service::device::PageError;
use strongroom_app::service::groups::GroupError;
use strongroom_app::service::vault::VaultError;

/// `application/json; charset=utf-8`: vcert checks the prefix, oauth2-rs
/// checks it case-insensitively.
pub(crate) fn json<T: Serialize>(status: StatusCode, body: &T) -> Response {
    let mut r = (status, Json(body)).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json; charset=utf-8"));
    r
}

/// A successful JSON answer.
pub(crate) fn ok<T: Serialize>(body: &T) -> Response {
    json(StatusCode::OK, body)
}

/// `GET Authorize/IsAuthServer`: 202 with the reason phrase Go vcert checks.
pub(crate) fn is_auth_server() -> Response {
    let mut r = json(StatusCode::ACCEPTED, &strongroom_proto::vedauth::IsAuthServerResponse { is_auth_server: true });
    r.extensions_mut().insert(hyper::ext::ReasonPhrase::from_static(b"Venafi Authentication Server"));
    r
}

/// HTTP 303 to `location` (an OpenID provider's authorization URL), setting `cookie`.
pub(crate) fn see_other(location: &str, cookie: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let (Ok(l), Ok(c)) = (HeaderValue::from_str(location), HeaderValue::from_str(cookie)) {
        r.headers_mut().insert(header::LOCATION, l);
        r.headers_mut().insert(header::SET_COOKIE, c);
    }
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r.headers_mut().insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    r
}

/// HTTP 200 with an empty body: the product's answer to `Identity/Validate`
/// for an identity it does not have. Typed `text/plain`, which an empty
/// body is (an empty `application/json` body is no JSON document).
pub(crate) fn empty_ok() -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"))], "").into_response()
}

/// A `/vedauth` refusal (the application's [`AuthError`]) as HTTP: the one
/// place its statuses are chosen.
#[derive(Debug)]
pub(crate) struct AuthRefusal(pub(crate) AuthError);

impl From<AuthError> for AuthRefusal {
    fn from(e: AuthError) -> Self {
        AuthRefusal(e)
    }
}

impl From<strongroom_store::StoreError> for AuthRefusal {
    fn from(e: strongroom_store::StoreError) -> Self {
        AuthRefusal(e.into())
    }
}

impl IntoResponse for AuthRefusal {
    fn into_response(self) -> Response {
        let AuthRefusal(this) = self;
        let status = match &this {
            AuthError::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            AuthError::TooManyStarts => StatusCode::TOO_MANY_REQUESTS,
            AuthError::TemporarilyUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            // A database busy, unreachable or read-only for now: RFC 6749's
            // temporarily_unavailable, which tells the client to try again.
            AuthError::Store(e) if e.is_transient() => {
                tracing::warn!(kind = %e.kind(), error = %e, "token endpoint: the store is unavailable");
                StatusCode::SERVICE_UNAVAILABLE
            }
            // As the interface requires: every Authorize/Token failure is HTTP 400, and so are
            // internal errors (invalid_request with a generic text).
            AuthError::Store(e) => {
                tracing::error!(kind = %e.kind(), error = %e, "token endpoint failed");
                StatusCode::BAD_REQUEST
            }
            AuthError::Internal(detail) => {
                tracing::error!(error = %detail, "token endpoint failed");
                StatusCode::BAD_REQUEST
            }
            AuthError::InvalidRequest(_)
            | AuthError::InvalidClient(_)
            | AuthError::InvalidGrant(_)
            | AuthError::InvalidScope(_)
            | AuthError::UnknownScope(_)
            | AuthError::UnauthorizedClient(_)
            | AuthError::AuthorizationPending
            | AuthError::SlowDown
            | AuthError::AccessDenied => StatusCode::BAD_REQUEST,
        };
        if !matches!(this, AuthError::AuthorizationPending | AuthError::SlowDown) {
            tracing::info!(error = this.code(), description = %this.description(), "token request refused");
        }
        let mut r =
            json(status, &ErrorResponse { error: this.code().to_owned(), error_description: Some(this.description().into_owned()) });
        if status == StatusCode::SERVICE_UNAVAILABLE {
            retry_after(&mut r);
        }
        r
    }
}

/// Seconds a client is asked to wait before trying a 503 again.
const RETRY_AFTER_SECS: &str = "1";

fn retry_after(r: &mut Response) {
    r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
}

/// `/vedsdk`'s 503: the store did not answer (`temporarily_unavailable`, the
/// documented `Unavailable` response), with `Retry-After`.
fn sdk_unavailable(e: &StoreError) -> Response {
    tracing::warn!(kind = %e.kind(), error = %e, "the store is unavailable");
    let mut r = json(
        StatusCode::SERVICE_UNAVAILABLE,
        &BearerErrorResponse { error: "temporarily_unavailable".to_owned(), error_description: "Try again later.".to_owned() },
    );
    retry_after(&mut r);
    r
}

/// A bearer token's refusal (the application's [`BearerError`]) as HTTP.
#[derive(Debug)]
pub(crate) struct BearerRefusal(pub(crate) BearerError);

impl From<BearerError> for BearerRefusal {
    fn from(e: BearerError) -> Self {
        BearerRefusal(e)
    }
}

impl IntoResponse for BearerRefusal {
    fn into_response(self) -> Response {
        let BearerRefusal(this) = self;
        // 401 only for a bad token: clients answer a 401 by refreshing
        // (pyvenafi retries four times), so permissions get 403.
        let (status, error, description) = match &this {
            BearerError::Missing => (StatusCode::UNAUTHORIZED, "invalid_token", "A valid access token is required.".to_owned()),
            BearerError::Unknown | BearerError::Refused(_) => {
                (StatusCode::UNAUTHORIZED, "invalid_token", "The access token is invalid, expired or revoked.".to_owned())
            }
            BearerError::InsufficientScope(needed) => {
                (StatusCode::FORBIDDEN, "insufficient_scope", format!("Grant rejected scope '{needed}'."))
            }
            // Whatever the store's failure, the token could not be checked: never a 401.
            BearerError::Store(e) => return sdk_unavailable(e),
        };
        tracing::info!(reason = %this, "bearer refused");
        let mut r = json(status, &BearerErrorResponse { error: error.to_owned(), error_description: description });
        let challenge = match status {
            StatusCode::UNAUTHORIZED => Some("Bearer realm=\"strongroom\", error=\"invalid_token\""),
            StatusCode::FORBIDDEN => Some("Bearer realm=\"strongroom\", error=\"insufficient_scope\""),
            _ => None,
        };
        if let Some(c) = challenge {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(c));
        }
        r
    }
}

/// The answer of `GET Revoke/Token`.
#[derive(Debug)]
pub(crate) enum Revoked {
    /// 200: the caller's grant is revoked.
    Done(String),
    /// 202: no such token (the product's answer when the header is missing).
    NotFound,
}

impl IntoResponse for Revoked {
    fn into_response(self) -> Response {
        match self {
            Revoked::Done(message) => json(StatusCode::OK, &RevokeResponse { success: true, message }),
            Revoked::NotFound => json(StatusCode::ACCEPTED, &RevokeResponse { success: false, message: "Token not found".to_owned() }),
        }
    }
}

/// RFC 7009's answer: 200, whether anything was revoked or not; no body.
pub(crate) fn revoked_rfc7009() -> Response {
    StatusCode::OK.into_response()
}

/// Marks a response whose access-log line is written at DEBUG: a health
/// check answered 200 (load balancers ask every few seconds).
#[derive(Clone, Copy, Debug)]
pub(crate) struct QuietAccessLog;

/// A page of HTML for the approval flow, with the status its outcome needs.
#[derive(Debug)]
pub(crate) enum Page {
    Ok(maud::Markup),
    Problem(PageError, maud::Markup),
}

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        let (status, body) = match self {
            Page::Ok(m) => (StatusCode::OK, m),
            Page::Problem(e, m) => {
                let status = match &e {
                    PageError::WrongLogin => StatusCode::UNAUTHORIZED,
                    PageError::Locked | PageError::CodeLocked | PageError::Busy => StatusCode::TOO_MANY_REQUESTS,
                    PageError::UnknownCode | PageError::Expired => StatusCode::NOT_FOUND,
                    PageError::NotAllowed => StatusCode::FORBIDDEN,
                    PageError::AlreadyDecided => StatusCode::CONFLICT,
                    PageError::BadForm => StatusCode::BAD_REQUEST,
                    PageError::DirectoryUnavailable => StatusCode::SERVICE_UNAVAILABLE,
                    PageError::SignInExpired | PageError::ProviderRefused => StatusCode::BAD_REQUEST,
                    PageError::Store(e) => {
                        tracing::error!(kind = %e.kind(), error = %e, "approval page failed");
                        StatusCode::SERVICE_UNAVAILABLE
                    }
                };
                (status, m)
            }
        };
        let mut r = (status, Html(body.into_string())).into_response();
        let h = r.headers_mut();
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
        );
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        // The page's URL carries the user code: keep it out of Referer headers
        // sent elsewhere. Not `no-referrer`: with it, browsers send
        // `Origin: null` on the page's own form posts, defeating the Origin check.
        h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
        r
    }
}

/// An answer of the admin console (`http::console`): a page, a refusal
/// with its page, or a redirect; each with the cookies it sets, the page's
/// strict CSP, `no-store`, and no framing.
#[derive(Debug)]
pub(crate) enum Console {
    Ok(maud::Markup, Vec<String>),
    Problem(strongroom_app::service::console::ConsoleError, maud::Markup, Vec<String>),
    SeeOther(String, Vec<String>),
    /// A PEM file to save (`/admin/cas/pem`): its file name and text.
    File(String, String),
}

impl IntoResponse for Console {
    fn into_response(self) -> Response {
        use strongroom_app::service::console::ConsoleError as E;
        let (mut r, cookies) = match self {
            Console::Ok(m, c) => ((StatusCode::OK, Html(m.into_string())).into_response(), c),
            Console::SeeOther(location, c) => {
                let mut r = StatusCode::SEE_OTHER.into_response();
                if let Ok(l) = HeaderValue::from_str(&location) {
                    r.headers_mut().insert(header::LOCATION, l);
                }
                (r, c)
            }
            Console::File(name, text) => {
                let mut r = (StatusCode::OK, text).into_response();
                r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/x-pem-file"));
                if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
                    r.headers_mut().insert(header::CONTENT_DISPOSITION, v);
                }
                (r, Vec::new())
            }
            Console::Problem(e, m, c) => {
                let status = match &e {
                    E::WrongLogin | E::SignedOut => StatusCode::UNAUTHORIZED,
                    E::Locked | E::Busy => StatusCode::TOO_MANY_REQUESTS,
                    E::DirectoryUnavailable => StatusCode::SERVICE_UNAVAILABLE,
                    E::Forged | E::Forbidden | E::OwnAccount(_) => StatusCode::FORBIDDEN,
                    E::Invalid(_) => StatusCode::BAD_REQUEST,
                    E::NotFound(_) => StatusCode::NOT_FOUND,
                    E::Exists(_) => StatusCode::CONFLICT,
                    E::Store(e) => {
                        tracing::error!(kind = %e.kind(), error = %e, "admin console: the store failed");
                        StatusCode::SERVICE_UNAVAILABLE
                    }
                    E::Internal(detail) => {
                        tracing::error!(error = %detail, "admin console failed");
                        StatusCode::INTERNAL_SERVER_ERROR
                    }
                };
                if matches!(e, E::Forged) {
                    tracing::info!("admin console: a form failed the anti-forgery checks");
                }
                ((status, Html(m.into_string())).into_response(), c)
            }
        };
        let h = r.headers_mut();
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
        );
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        for c in cookies {
            if let Ok(v) = HeaderValue::from_str(&c) {
                h.append(header::SET_COOKIE, v);
            }
        }
        r
    }
}

/// The router's own error bodies (no such endpoint, a method not served, a
/// panic); a call's own errors are [`SdkFailure`] and its kin.
pub(crate) fn not_found() -> Response {
    json(StatusCode::NOT_FOUND, &ErrorResponse { error: "not_found".into(), error_description: Some("No such endpoint.".into()) })
}

pub(crate) fn method_not_allowed() -> Response {
    json(
        StatusCode::METHOD_NOT_ALLOWED,
        &ErrorResponse { error: "invalid_request".into(), error_description: Some("Method not allowed.".into()) },
    )
}

pub(crate) fn panicked() -> Response {
    json(
        StatusCode::INTERNAL_SERVER_ERROR,
        &ErrorResponse { error: "server_error".into(), error_description: Some("Internal error.".into()) },
    )
}

pub(crate) fn healthy(ok: bool) -> Response {
    if ok {
        let mut r = json(StatusCode::OK, &serde_json::json!({"status": "ok"}));
        r.extensions_mut().insert(QuietAccessLog);
        r
    } else {
        json(StatusCode::SERVICE_UNAVAILABLE, &serde_json::json!({"status": "unavailable"}))
    }
}

/// Prometheus metrics in the OpenMetrics text format.
pub(crate) fn metrics(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], body).into_response()
}

/// Static assets of the page.
pub(crate) fn css(body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8"), (header::CACHE_CONTROL, "public, max-age=3600")], body).into_response()
}

/// Why a `/vedsdk` call did not succeed.
#[derive(Debug)]
pub(crate) enum SdkFailure {
    /// The body is not a JSON object: HTTP 400 `{"Error": ...}`.
    BadJson(String),
    /// The body is over the limit: HTTP 413 `{"Error": ...}`.
    TooLarge,
    Bearer(BearerError),
    /// Every vault outcome is HTTP 200 with a `Result` code.
    Vault(VaultError),
    /// The group and password calls (`http::groups`, `http::teams`).
    Group(GroupError),
    /// `POST Log` past the identity's quota: HTTP 429 with `Retry-After`
    /// (these seconds) and `{"LogResult": 1, "Error": ...}`; nothing written.
    LogQuota {
        retry_after_secs: i64,
    },
}

impl From<GroupError> for SdkFailure {
    fn from(e: GroupError) -> Self {
        SdkFailure::Group(e)
    }
}

impl From<BearerError> for SdkFailure {
    fn from(e: BearerError) -> Self {
        SdkFailure::Bearer(e)
    }
}

impl From<VaultError> for SdkFailure {
    fn from(e: VaultError) -> Self {
        SdkFailure::Vault(e)
    }
}

impl IntoResponse for SdkFailure {
    fn into_response(self) -> Response {
        match self {
            SdkFailure::BadJson(message) => json(StatusCode::BAD_REQUEST, &ErrorOnly { error: message }),
            SdkFailure::TooLarge => json(StatusCode::PAYLOAD_TOO_LARGE, &ErrorOnly { error: "The request body is too large.".into() }),
            SdkFailure::Bearer(e) => BearerRefusal(e).into_response(),
            SdkFailure::LogQuota { retry_after_secs } => {
                let rule = strongroom_core::throttle::Rule::IDENTITY_CLIENT_EVENTS;
                tracing::info!(retry_after_secs, "client event refused: over the identity's quota");
                let error = format!(
                    "Too many events from this identity: at most {} in {} seconds. Nothing was written; try again in {retry_after_secs} s.",
                    rule.limit, rule.window_secs
                );
                let mut r =
                    json(StatusCode::TOO_MANY_REQUESTS, &strongroom_proto::vedsdk::LogResultResponse { log_result: 1, error: Some(error) });
                if let Ok(v) = HeaderValue::from_str(&retry_after_secs.to_string()) {
                    r.headers_mut().insert(header::RETRY_AFTER, v);
                }
                r
            }
            // The product's Identity failures: 400 with only `Message`. A
            // caller without the role (Master Admin, the group's owner) gets
            // 403 with `Message`: never 401, which means only a bad token.
            SdkFailure::Group(e) => {
                let status = match &e {
                    GroupError::Invalid(_) | GroupError::NotATeam => StatusCode::BAD_REQUEST,
                    GroupError::NotAllowed(_) => StatusCode::FORBIDDEN,
                    GroupError::Store(s) if s.is_transient() => return sdk_unavailable(s),
                    GroupError::Store(s) => {
                        tracing::error!(kind = %s.kind(), error = %s, "group call failed");
                        return panicked();
                    }
                    GroupError::Internal(why) => {
                        tracing::error!(error = %why, "group call failed");
                        return panicked();
                    }
                };
                tracing::info!(reason = %e, "group call refused");
                json(status, &strongroom_proto::groups::MessageOnly { message: e.to_string() })
            }
            SdkFailure::Vault(VaultError::Refused { code, message }) => {
                tracing::info!(result = code.code(), "vault call refused");
                json(StatusCode::OK, &ResultResponse { result: code.code(), error: Some(message) })
            }
            SdkFailure::Vault(VaultError::Store(e)) if e.is_transient() => sdk_unavailable(&e),
            // Any other store failure: Result 22 (QueryError), as the product answers.
            SdkFailure::Vault(VaultError::Store(e)) => {
                tracing::error!(kind = %e.kind(), error = %e, "vault store call failed");
                let result = ResultCode::QueryError.code();
                json(
                    StatusCode::OK,
                    &ResultResponse { result, error: Some("The vault could not complete the request; nothing was changed.".into()) },
                )
            }
        }
    }
}

// ------------------------------------------------------------------ the \VED tree

/// Why a `Config/*` or `Permissions/*` call did not succeed.
#[derive(Debug)]
pub(crate) enum TreeFailure {
    /// The token, the scope, or a body that does not parse.
    Sdk(SdkFailure),
    Tree(strongroom_app::service::tree::TreeError),
}

impl From<SdkFailure> for TreeFailure {
    fn from(e: SdkFailure) -> Self {
        TreeFailure::Sdk(e)
    }
}

impl From<BearerError> for TreeFailure {
    fn from(e: BearerError) -> Self {
        TreeFailure::Sdk(SdkFailure::Bearer(e))
    }
}

impl From<strongroom_app::service::tree::TreeError> for TreeFailure {
    fn from(e: strongroom_app::service::tree::TreeError) -> Self {
        TreeFailure::Tree(e)
    }
}

impl From<StoreError> for TreeFailure {
    fn from(e: StoreError) -> Self {
        TreeFailure::Tree(strongroom_app::service::tree::TreeError::Store(e))
    }
}

impl IntoResponse for TreeFailure {
    fn into_response(self) -> Response {
        use strongroom_app::service::tree::TreeError;
        let error = |status: StatusCode, message: String| json(status, &ErrorOnly { error: message });
        match self {
            TreeFailure::Sdk(e) => e.into_response(),
            // Config: the product's Result codes travel in an HTTP 200 (VenafiPS branches on them).
            TreeFailure::Tree(TreeError::Result(code, message)) => {
                tracing::info!(result = code, "config call refused");
                json(StatusCode::OK, &strongroom_proto::config::ConfigResult { result: code, error: Some(message) })
            }
            TreeFailure::Tree(TreeError::BadRequest(m)) => error(StatusCode::BAD_REQUEST, m),
            // 403, not 401: a 401 means only a bad token in this project (clients refresh on a 401).
            TreeFailure::Tree(TreeError::Forbidden(m)) => error(StatusCode::FORBIDDEN, m),
            TreeFailure::Tree(TreeError::NotFound(m)) => error(StatusCode::NOT_FOUND, m),
            TreeFailure::Tree(TreeError::Conflict(m)) => error(StatusCode::CONFLICT, m),
            TreeFailure::Tree(TreeError::Store(e)) if e.is_transient() => sdk_unavailable(&e),
            TreeFailure::Tree(TreeError::Store(e)) => {
                tracing::error!(kind = %e.kind(), error = %e, "tree call failed");
                error(StatusCode::INTERNAL_SERVER_ERROR, "The request could not be completed; nothing was changed.".into())
            }
        }
    }
}

/// HTTP 201 with an empty body: a permission entry created.
pub(crate) fn created() -> Response {
    StatusCode::CREATED.into_response()
}

/// HTTP 200 with an empty body: a permission entry replaced or deleted.
pub(crate) fn done() -> Response {
    StatusCode::OK.into_response()
}

/// Why an `oauth/*` call did not succeed.
#[derive(Debug)]
pub(crate) enum OAuthFailure {
    /// The token, the scope or the body.
    Sdk(SdkFailure),
    /// The caller is not a Master Admin (Strongroom's OAuth administrator):
    /// 403 `insufficient_rights`. The product answers 401, but a 401 means
    /// only a bad token here (clients answer it by refreshing).
    Rights,
    /// HTTP 200 with the product's `Result` code and `error_description`.
    Refused(strongroom_proto::oauth::OAuthResult, String),
    Store(StoreError),
}

impl From<SdkFailure> for OAuthFailure {
    fn from(e: SdkFailure) -> Self {
        OAuthFailure::Sdk(e)
    }
}

impl IntoResponse for OAuthFailure {
    fn into_response(self) -> Response {
        use strongroom_proto::oauth::{OAuthResponse, OAuthResult};
        match self {
            OAuthFailure::Sdk(e) => e.into_response(),
            OAuthFailure::Rights => {
                tracing::info!("oauth call refused: not an administrator");
                json(
                    StatusCode::FORBIDDEN,
                    &BearerErrorResponse {
                        error: "insufficient_rights".to_owned(),
                        error_description: "API integrations are administered by Master Admins only.".to_owned(),
                    },
                )
            }
            OAuthFailure::Refused(code, message) => {
                tracing::info!(result = code.code(), "oauth call refused");
                ok(&OAuthResponse::failure(code, message))
            }
            OAuthFailure::Store(e) if e.is_transient() => sdk_unavailable(&e),
            OAuthFailure::Store(e) => {
                tracing::error!(kind = %e.kind(), error = %e, "oauth store call failed");
                ok(&OAuthResponse::failure(OAuthResult::Failure, "The request could not be completed; nothing was changed.".into()))
            }
        }
    }
}

// ------------------------------------------------------------------ certificates

/// Why a `Certificates/*` call did not succeed, and in which body shape.
#[derive(Debug)]
pub(crate) enum CertFailure {
    /// The token, the scope, or a body that does not parse.
    Sdk(SdkFailure),
    /// `{"Error": …}`.
    Cert(strongroom_app::service::certificates::CertError),
    /// `{"Success": false, "Error": …}` (`Renew`, `Revoke`: clients read `Success`).
    Unsuccessful(strongroom_app::service::certificates::CertError),
}

impl From<SdkFailure> for CertFailure {
    fn from(e: SdkFailure) -> Self {
        CertFailure::Sdk(e)
    }
}

impl From<strongroom_app::service::certificates::CertError> for CertFailure {
    fn from(e: strongroom_app::service::certificates::CertError) -> Self {
        CertFailure::Cert(e)
    }
}

impl From<strongroom_proto::read::FieldError> for CertFailure {
    fn from(e: strongroom_proto::read::FieldError) -> Self {
        CertFailure::Cert(strongroom_app::service::certificates::CertError::Invalid(e.0))
    }
}

/// A status line with the product's reason phrase (vcert shows only the status line, and
/// Terraform matches `does not exist` in it). HTTP/1.1 only; HTTP/2 has no phrase.
pub(crate) fn with_reason(mut r: Response, phrase: &str) -> Response {
    let clean: String = phrase.chars().filter(|c| c.is_ascii() && !c.is_ascii_control()).take(200).collect();
    if let Ok(p) = hyper::ext::ReasonPhrase::try_from(clean.into_bytes()) {
        r.extensions_mut().insert(p);
    }
    r
}

impl IntoResponse for CertFailure {
    fn into_response(self) -> Response {
        use strongroom_app::service::certificates::CertError as E;
        let (e, success_shape) = match self {
            CertFailure::Sdk(e) => return e.into_response(),
            CertFailure::Cert(e) => (e, false),
            CertFailure::Unsuccessful(e) => (e, true),
        };
        let body = |status: StatusCode, message: String| {
            if success_shape { json(status, &SuccessResponse::refused(message)) } else { json(status, &ErrorOnly { error: message }) }
        };
        match e {
            E::NoCertificate(m) => {
                tracing::info!("certificate call: no such certificate");
                with_reason(body(StatusCode::BAD_REQUEST, m), "Certificate does not exist.")
            }
            E::NoKey(m) => {
                let r = body(StatusCode::BAD_REQUEST, m.clone());
                with_reason(r, &m)
            }
            E::Invalid(m) | E::NoPolicy(m) | E::Unsupported(m) => {
                tracing::info!(reason = %m, "certificate call refused");
                body(StatusCode::BAD_REQUEST, m)
            }
            // 403, never 401: a 401 means only a bad token (clients refresh on it).
            E::Denied(m) => {
                tracing::info!(reason = %m, "certificate call refused: a right is missing");
                body(StatusCode::FORBIDDEN, m)
            }
            E::Store(s) if s.is_transient() => sdk_unavailable(&s),
            E::Store(s) => {
                tracing::error!(kind = %s.kind(), error = %s, "certificate call failed");
                body(StatusCode::INTERNAL_SERVER_ERROR, "The request could not be completed; nothing was changed.".into())
            }
            // Retrieve: in progress is 202 `{"Stage", "Status"}`, failed 500 with the same body; each
            // with the product's status line.
            E::Pending { ref stage, ref status, .. } => {
                let line = e.to_string();
                with_reason(json(StatusCode::ACCEPTED, &StageStatus { stage: *stage, status: status.clone() }), &line)
            }
            E::Failed { ref stage, ref status, .. } => {
                tracing::info!(status = %status, "certificate call: the request was rejected");
                let line = e.to_string();
                with_reason(json(StatusCode::INTERNAL_SERVER_ERROR, &StageStatus { stage: *stage, status: status.clone() }), &line)
            }
            // Too many keys asked at once: 429, with when to try again; nothing was done.
            E::Busy { message, retry_after_secs } => {
                tracing::info!(retry_after_secs, "certificate call refused: too many keys asked of the server at once");
                let mut r = body(StatusCode::TOO_MANY_REQUESTS, message);
                r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
                r
            }
            E::Internal(why) => {
                tracing::error!(error = %why, "certificate call failed");
                body(StatusCode::INTERNAL_SERVER_ERROR, "The request could not be completed; nothing was changed.".into())
            }
        }
    }
}

/// A CRL (DER), served to anyone.
pub(crate) fn crl(der: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, "application/pkix-crl"), (header::CACHE_CONTROL, "no-cache")], der).into_response()
}

/// A JSON answer with the `X-Record-Count` header (`GET Certificates/`, which VenafiPS pages by).
pub(crate) fn with_record_count<T: Serialize>(body: &T, count: usize) -> Response {
    let mut r = ok(body);
    if let Ok(v) = HeaderValue::from_str(&count.to_string()) {
        r.headers_mut().insert(HeaderName::from_static("x-record-count"), v);
    }
    r
}
