//! `/vedauth` handlers: thin, they convert between wire and service types.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use strongroom_proto::SecretString;
use strongroom_proto::vedauth::{
    AuthorizationServerMetadata, CertificateRequest, DEVICE_CODE_GRANT, DeviceRequest, DeviceResponse, ErrorResponse, IsAuthServerResponse,
    JwtRequest, OAuthRequest, REFRESH_TOKEN_GRANT, RevocationRequest, RevokeResponse, TokenRequest, TokenResponse, VerifyResponse,
};

use super::extract::{FormOrJson, basic_client_id, bearer_token};
use super::respond::{Revoked, ok};
use super::responses::{AuthRefused, AuthTooLarge, AuthUnavailable, Timeout, Unauthorized, Unavailable};
use crate::http::respond::{AuthRefusal, BearerRefusal};
use crate::state::HttpState;
use strongroom_app::service::bearer::{self, BearerError};
use strongroom_app::service::machine::{self, ClientCertificate};
use strongroom_app::service::token::Issued;
use strongroom_app::service::{Origin, device, revocation, token};
use strongroom_core::event::EventKind;

fn token_response(app: &HttpState, issued: Issued) -> TokenResponse {
    let Issued { grant, tokens, state } = issued;
    TokenResponse {
        access_token: SecretString(tokens.access.expose().to_owned()),
        refresh_token: tokens.refresh.as_ref().map(|(t, _)| SecretString(t.expose().to_owned())),
        expires_in: app.now().secs_until(tokens.access_expires),
        expires: tokens.access_expires.secs(),
        token_type: "Bearer".to_owned(),
        scope: grant.scope.to_string(),
        refresh_until: grant.refresh_until.secs(),
        identity: grant.user_id.identity(),
        state,
    }
}

/// `POST Authorize/Device`.
#[utoipa::path(
    post,
    path = "/vedauth/Authorize/Device",
    tag = "vedauth",
    request_body(content((DeviceRequest = "application/json"), (DeviceRequest = "application/x-www-form-urlencoded"))),
    responses(
        (status = 200, description = "A device code and the user code to show (RFC 8628 §3.2).", body = DeviceResponse),
        (status = 400, response = AuthRefused),
        (status = 408, response = Timeout),
        (status = 413, response = AuthTooLarge),
        (status = 429, description = "`slow_down`: more than 60 starts from this client address in ten minutes; nothing was stored.", body = ErrorResponse),
        (status = 503, response = AuthUnavailable),
    ),
)]
pub(crate) async fn device(
    State(app): State<HttpState>,
    origin: Origin,
    FormOrJson(req): FormOrJson<DeviceRequest>,
) -> Result<Response, AuthRefusal> {
    let started = device::start(&app, req, &origin).await?;
    let verification_uri = format!("{}/vedauth/device", app.public_url);
    Ok(ok(&DeviceResponse {
        device_code: SecretString(started.device_code.expose().to_owned()),
        verification_uri_complete: format!("{verification_uri}?user_code={}", started.user_code.expose()),
        user_code: started.user_code.expose().to_owned(),
        verification_uri,
        expires_in: app.now().secs_until(started.expires_at),
        expires: started.expires_at.secs(),
        interval: started.interval_secs,
    }))
}

/// `POST Authorize/Token`.
#[utoipa::path(
    post,
    path = "/vedauth/Authorize/Token",
    tag = "vedauth",
    description = "Two shapes: refresh `{client_id, refresh_token}` (optionally `grant_type=refresh_token`), and the device-code \
        exchange `{client_id, device_code, grant_type=urn:ietf:params:oauth:grant-type:device_code}`. Every refusal is HTTP 400; \
        a database that is busy or out of reach for a moment gets 503 `temporarily_unavailable` with `Retry-After`.",
    request_body(content((TokenRequest = "application/json"), (TokenRequest = "application/x-www-form-urlencoded"))),
    responses(
        (status = 200, description = "A new token pair; the presented refresh token or device code is spent.", body = TokenResponse),
        (status = 400, response = AuthRefused),
        (status = 408, response = Timeout),
        (status = 413, response = AuthTooLarge),
        (status = 503, response = AuthUnavailable),
    ),
)]
pub(crate) async fn token(
    State(app): State<HttpState>,
    origin: Origin,
    FormOrJson(req): FormOrJson<TokenRequest>,
) -> Result<Response, AuthRefusal> {
    let issued = token::token(&app, req, &origin).await?;
    Ok(ok(&token_response(&app, issued)))
}

/// `POST Authorize/OAuth` (password grant).
#[utoipa::path(
    post,
    path = "/vedauth/Authorize/OAuth",
    tag = "vedauth",
    description = "The password grant, for integrations that allow it. Every refusal is HTTP 400; more sign-ins of one user from one \
        address at the same moment than its guessing limit has slots (5), and a database that is busy or out of reach for a \
        moment, get 503 `temporarily_unavailable` with `Retry-After`.",
    request_body(content((OAuthRequest = "application/json"), (OAuthRequest = "application/x-www-form-urlencoded"))),
    responses(
        (status = 200, description = "A new grant's token pair.", body = TokenResponse),
        (status = 400, response = AuthRefused),
        (status = 503, description = "`temporarily_unavailable`: too many sign-ins at this moment, or the database is busy or out of reach \
            for a moment; try again after `Retry-After` seconds.", body = ErrorResponse),
        (status = 408, response = Timeout),
        (status = 413, response = AuthTooLarge),
    ),
)]
pub(crate) async fn oauth(
    State(app): State<HttpState>,
    origin: Origin,
    FormOrJson(req): FormOrJson<OAuthRequest>,
) -> Result<Response, AuthRefusal> {
    let issued = token::password_grant(&app, req, &origin).await?;
    Ok(ok(&token_response(&app, issued)))
}

/// `POST Authorize/Jwt` (the JWT grant).
#[utoipa::path(
    post,
    path = "/vedauth/Authorize/Jwt",
    tag = "vedauth",
    description = "The JWT grant, for machines without a stored secret (CI pipelines, Kubernetes workloads): a JWT from a trusted \
        issuer (`admin jwt-issuers`), mapped to a machine identity by a mapping (`admin mappings set-jwt`). RS256, PS256, ES256 and \
        EdDSA only; `none` and HMAC are refused. The JWT must have `exp`, its `iss` and `aud` must be the issuer's, its lifetime \
        within the issuer's maximum; each JWT (its `jti`) is accepted once, on every replica. The answer has no refresh token \
        (`refresh_token: null`): present a fresh JWT instead. Every refusal is HTTP 400 `invalid_grant` (or `invalid_scope`, \
        `unauthorized_client`) with a description; nothing is written.",
    request_body(content((JwtRequest = "application/json"), (JwtRequest = "application/x-www-form-urlencoded"))),
    responses(
        (status = 200, description = "A new grant's access token; `identity` is `jwt+<mapping>:<subject>`.", body = TokenResponse),
        (status = 400, response = AuthRefused),
        (status = 408, response = Timeout),
        (status = 413, response = AuthTooLarge),
        (status = 503, response = AuthUnavailable),
    ),
)]
pub(crate) async fn jwt(
    State(app): State<HttpState>,
    origin: Origin,
    FormOrJson(req): FormOrJson<JwtRequest>,
) -> Result<Response, AuthRefusal> {
    let issued = machine::jwt_grant(&app, req, &origin).await?;
    Ok(ok(&token_response(&app, issued)))
}

/// `POST Authorize/Certificate` (the certificate grant).
#[utoipa::path(
    post,
    path = "/vedauth/Authorize/Certificate",
    tag = "vedauth",
    description = "The certificate grant: served on the certificate listener (`[certificate] listen`), which asks for a TLS client \
        certificate; the main listener answers it only for a trusted proxy passing the certificate in `[certificate] \
        proxy_header`. The certificate must chain to a CA of a certificate mapping (`admin mappings set-cert`), be valid now, \
        allow client authentication (EKU clientAuth) and not be revoked in the configured CRLs; the identity is \
        `cert+<mapping>:<name>`, the name from the subject CN, an e-mail SAN or a UPN SAN as the mapping says. No refresh token.",
    request_body(content((CertificateRequest = "application/json"), (CertificateRequest = "application/x-www-form-urlencoded"))),
    responses(
        (status = 200, description = "A new grant's access token; `identity` is `cert+<mapping>:<name>`.", body = TokenResponse),
        (status = 400, response = AuthRefused),
        (status = 408, response = Timeout),
        (status = 413, response = AuthTooLarge),
        (status = 503, response = AuthUnavailable),
    ),
)]
pub(crate) async fn certificate(
    State(app): State<HttpState>,
    origin: Origin,
    cert: Option<axum::Extension<ClientCertificate>>,
    peer: Option<axum::Extension<axum::extract::ConnectInfo<std::net::SocketAddr>>>,
    headers: HeaderMap,
    FormOrJson(req): FormOrJson<CertificateRequest>,
) -> Result<Response, AuthRefusal> {
    let chain = match cert {
        // The certificate listener: what rustls verified, or nothing.
        Some(axum::Extension(ClientCertificate(chain))) => chain,
        // The main listener: only a trusted proxy's header.
        None => app
            .machine
            .proxy_header
            .as_deref()
            .filter(|_| {
                peer.is_some_and(|axum::Extension(axum::extract::ConnectInfo(p))| app.trusted_proxies.iter().any(|n| n.contains(p.ip())))
            })
            .and_then(|h| headers.get(h))
            .and_then(|v| v.to_str().ok())
            .and_then(strongroom_idp::certificate::chain_from_header),
    };
    let issued = machine::certificate_grant(&app, req, chain, &origin).await?;
    Ok(ok(&token_response(&app, issued)))
}

/// `GET Authorize/IsAuthServer`.
#[utoipa::path(
    get,
    path = "/vedauth/Authorize/IsAuthServer",
    tag = "vedauth",
    description = "Whether this is an authentication server: 202 with the reason phrase `Venafi Authentication Server`, which is \
        what Go vcert checks (the product's OpenAPI says 200; clients that follow it accept any 2xx).",
    responses((status = 202, description = "This is an authentication server.", body = IsAuthServerResponse)),
)]
pub(crate) async fn is_auth_server() -> Response {
    super::respond::is_auth_server()
}

/// `GET Authorize/Verify`.
#[utoipa::path(
    get,
    path = "/vedauth/Authorize/Verify",
    tag = "vedauth",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The token is valid: its grant, scope and times.", body = VerifyResponse),
        (status = 401, response = Unauthorized),
        (status = 408, response = Timeout),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn verify(State(app): State<HttpState>, headers: HeaderMap) -> Result<Response, BearerRefusal> {
    let ctx = bearer::authenticate(&app, bearer_token(&headers).as_deref()).await?;
    let g = &ctx.grant;
    Ok(ok(&VerifyResponse {
        access_issued_on: ctx.token_issued_at.dotnet_date(),
        access_issued_on_ISO8601: ctx.token_issued_at.iso8601(),
        access_issued_on_unix_time: ctx.token_issued_at.secs(),
        application: g.client_id.clone(),
        expires: g.refresh_until.dotnet_date(),
        expires_ISO8601: g.refresh_until.iso8601(),
        expires_unix_time: g.refresh_until.secs(),
        grant_issued_on: g.created_at.dotnet_date(),
        grant_issued_on_ISO8601: g.created_at.iso8601(),
        grant_issued_on_unix_time: g.created_at.secs(),
        identity: g.user_id.identity(),
        scope: g.scope.to_string(),
        valid_for: ctx.token_issued_at.secs_until(ctx.token_expires),
        username: Some(ctx.user_name.clone()),
    }))
}

/// `GET Revoke/Token`: revokes the caller's whole grant. A token that has
/// expired still names its grant, so a client may revoke after expiry.
#[utoipa::path(
    get,
    path = "/vedauth/Revoke/Token",
    tag = "vedauth",
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "The caller's grant (every token of it) is revoked.", body = RevokeResponse),
        (status = 202, description = "No such token (also when the header is missing); nothing changed.", body = RevokeResponse),
        (status = 408, response = Timeout),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn revoke(State(app): State<HttpState>, origin: Origin, headers: HeaderMap) -> Response {
    let ctx = match bearer::lookup(&app, bearer_token(&headers).as_deref()).await {
        Ok(ctx) => ctx,
        Err(BearerError::Missing | BearerError::Unknown | BearerError::Refused(_) | BearerError::InsufficientScope(_)) => {
            return Revoked::NotFound.into_response();
        }
        Err(e @ BearerError::Store(_)) => return BearerRefusal(e).into_response(),
    };
    let g = &ctx.grant;
    let event = app
        .event(EventKind::GrantRevoked, &origin)
        .identity(g.user_id.identity())
        .client_id(g.client_id.as_str())
        .object(g.id.as_str())
        .detail("revoked by the client");
    match app.store.revoke_grant(g.id.clone(), app.now(), event).await {
        Ok(true) => {
            app.metrics.grant_revoked();
            Revoked::Done(format!("Grant for identity {} with scope {} has been revoked", g.user_id.identity(), g.scope)).into_response()
        }
        Ok(false) => Revoked::NotFound.into_response(),
        Err(e) => BearerRefusal(BearerError::from(e)).into_response(),
    }
}

/// `POST Revoke/Token`: RFC 7009 revocation, beside the product's `GET`.
/// The token (access or refresh) names its grant, which is revoked with
/// every token of it, as `GET Revoke/Token` does.
#[utoipa::path(
    post,
    path = "/vedauth/Revoke/Token",
    tag = "vedauth",
    description = "RFC 7009 token revocation for public clients: `token` (an access or a refresh token), the optional \
        `token_type_hint` (`access_token` or `refresh_token`; where to look first) and the client's `client_id` (or a \
        `Basic` `Authorization` header naming it). The token's whole grant is revoked. An unknown, expired or already \
        revoked token is not an error (§2.2): 200 all the same.",
    request_body(content((RevocationRequest = "application/x-www-form-urlencoded"), (RevocationRequest = "application/json"))),
    responses(
        (status = 200, description = "The token's grant is revoked, or there was nothing to revoke. Empty body."),
        (status = 400, description = "`invalid_request` (no `token`, no `client_id`, a body that does not parse), or \
            `unauthorized_client` (the token belongs to another client; nothing changed).", body = ErrorResponse),
        (status = 408, response = Timeout),
        (status = 413, response = AuthTooLarge),
        (status = 503, response = AuthUnavailable),
    ),
)]
pub(crate) async fn revoke_rfc7009(
    State(app): State<HttpState>,
    origin: Origin,
    headers: HeaderMap,
    FormOrJson(req): FormOrJson<RevocationRequest>,
) -> Result<Response, AuthRefusal> {
    revocation::revoke(&app, req, basic_client_id(&headers), &origin).await?;
    Ok(super::respond::revoked_rfc7009())
}

/// `GET /.well-known/oauth-authorization-server`: RFC 8414 metadata.
#[utoipa::path(
    get,
    path = "/.well-known/oauth-authorization-server",
    tag = "vedauth",
    description = "RFC 8414 authorization server metadata, every URL under the configured `public_url`: standards clients \
        find the token, device authorization and revocation endpoints here.",
    responses((status = 200, description = "The metadata.", body = AuthorizationServerMetadata)),
)]
pub(crate) async fn metadata(State(app): State<HttpState>) -> Response {
    let base = &app.public_url;
    let none = vec!["none".to_owned()];
    ok(&AuthorizationServerMetadata {
        issuer: base.clone(),
        token_endpoint: format!("{base}/vedauth/authorize/token"),
        device_authorization_endpoint: format!("{base}/vedauth/authorize/device"),
        revocation_endpoint: format!("{base}/vedauth/revoke/token"),
        grant_types_supported: vec![DEVICE_CODE_GRANT.to_owned(), REFRESH_TOKEN_GRANT.to_owned()],
        response_types_supported: Vec::new(),
        token_endpoint_auth_methods_supported: none.clone(),
        revocation_endpoint_auth_methods_supported: none,
        scopes_supported: strongroom_core::scope::Scope::catalogue(),
        service_documentation: format!("{base}/"),
    })
}
