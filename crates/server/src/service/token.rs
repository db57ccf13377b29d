//! `Authorize/Token` (device-code exchange and refresh) and `Authorize/OAuth`
//! (password grant).

use strongroom_core::event::EventKind;
use strongroom_core::grant::device::Poll;
use strongroom_core::grant::refresh::{self, Refresh, RefreshRejected};
use strongroom_core::grant::{Grant, IssuedTokens};
use strongroom_core::identity::{User, UserId};
use strongroom_core::integration::Integration;
use strongroom_core::scope::Scope;
use strongroom_core::secret::Secret;
use strongroom_core::time::UnixTime;
use strongroom_core::token::{TokenKind, looks_like_device_code, looks_like_token};
use strongroom_proto::vedauth::{DEVICE_CODE_GRANT, OAuthRequest, REFRESH_TOKEN_GRANT, TokenRequest};
use strongroom_store::NewTokens;

use super::login::{self, LoginError};
use super::{AuthError, CLIENT_ID_REQUIRED, CLIENT_MISMATCH, DEVICE_CODE_INVALID, Origin, REFRESH_INVALID, UNKNOWN_CLIENT};
use crate::state::AppState;

/// A grant and the tokens just issued under it.
#[derive(Debug)]
pub struct Issued {
    pub grant: Grant,
    pub tokens: IssuedTokens,
    pub state: Option<String>,
}

fn required(v: Option<String>) -> Option<String> {
    v.filter(|s| !s.is_empty())
}

/// `POST Authorize/Token`: picks the shape (seed §4.1) and runs it.
pub async fn token(app: &AppState, req: TokenRequest, origin: &Origin) -> Result<Issued, AuthError> {
    let client_id = required(req.client_id).ok_or(AuthError::InvalidRequest(CLIENT_ID_REQUIRED))?;
    let device_code = req.device_code.filter(|c| !c.expose().is_empty());
    let refresh_token = req.refresh_token.filter(|c| !c.expose().is_empty());
    match req.grant_type.as_deref().filter(|g| !g.is_empty()) {
        Some(DEVICE_CODE_GRANT) => match device_code {
            Some(code) => exchange_device_code(app, &client_id, Secret::new(code.0), origin).await,
            None => Err(AuthError::InvalidRequest("device_code is required for the device-code exchange.")),
        },
        // The product's clients refresh with no grant_type at all; RFC 6749
        // clients send grant_type=refresh_token.
        Some(REFRESH_TOKEN_GRANT) | None => match (refresh_token, device_code) {
            (Some(rt), _) => refresh(app, &client_id, Secret::new(rt.0), origin).await,
            (None, Some(_)) => Err(AuthError::InvalidRequest("grant_type is required for the device-code exchange.")),
            (None, None) => Err(AuthError::InvalidRequest("refresh_token (or device_code with grant_type) is required.")),
        },
        Some(_) => Err(AuthError::InvalidRequest("Unsupported grant_type.")),
    }
}

async fn integration(app: &AppState, client_id: &str) -> Result<Integration, AuthError> {
    app.store.integration(client_id.to_owned()).await?.ok_or(AuthError::InvalidGrant(UNKNOWN_CLIENT))
}

/// Whether `user_id` may receive new tokens through `integration` for
/// `scope` now. Checked at every issue, including refresh: a user disabled
/// or locked out, removed from the integration, or a scope no longer within
/// the integration's maximum, gets nothing.
async fn may_receive(app: &AppState, integration: &Integration, user_id: &UserId, scope: &Scope) -> Result<User, AuthError> {
    if integration.disabled {
        return Err(AuthError::InvalidClient("The API integration is disabled."));
    }
    let user = app.store.user_by_id(user_id.clone()).await?.ok_or(AuthError::InvalidGrant("The user no longer exists."))?;
    if user.disabled || login::is_locked(app, &user.name).await? {
        return Err(AuthError::InvalidGrant("The user's account is disabled or locked."));
    }
    if !integration.allowed_users.permits(&user.id) {
        return Err(AuthError::UnauthorizedClient("The user is not allowed to use this API integration."));
    }
    if !scope.is_subset_of(&integration.max_scope) {
        return Err(AuthError::InvalidScope("The scope exceeds the scope of the API integration."));
    }
    Ok(user)
}

async fn exchange_device_code(app: &AppState, client_id: &str, code: Secret, origin: &Origin) -> Result<Issued, AuthError> {
    if !looks_like_device_code(code.expose()) {
        return Err(AuthError::InvalidGrant(DEVICE_CODE_INVALID));
    }
    let integration = integration(app, client_id).await?;
    if !integration.grant_types.device {
        return Err(AuthError::InvalidClient("Browser-based authentication is disabled for this API integration."));
    }
    let code_hash = app.keys.token.hash(TokenKind::DeviceCode, code.expose());
    let device = app.store.device_by_code(code_hash).await?.ok_or(AuthError::InvalidGrant(DEVICE_CODE_INVALID))?;
    let now = app.now();
    match device.poll(client_id, now) {
        Poll::WrongClient | Poll::Expired => Err(AuthError::InvalidGrant(DEVICE_CODE_INVALID)),
        Poll::Redeemed => {
            let event =
                app.event(EventKind::DeviceCodeReplayed, origin).client_id(client_id).detail("redeemed device code presented again");
            app.store.append_event(event).await?;
            Err(AuthError::InvalidGrant(DEVICE_CODE_INVALID))
        }
        Poll::Denied => Err(AuthError::AccessDenied),
        Poll::Pending { record } => {
            tracing::trace!(client_id, "device code pending");
            app.store.record_poll(code_hash, device.version, record).await?;
            Err(AuthError::AuthorizationPending)
        }
        Poll::SlowDown { record } => {
            app.store.record_poll(code_hash, device.version, record).await?;
            Err(AuthError::SlowDown)
        }
        Poll::Issue { user_id } => {
            let user = may_receive(app, &integration, &user_id, &device.scope).await?;
            let settings = integration.settings(app.tokens);
            let grant = Grant::new(&*app.rng, client_id, user_id, device.scope.clone(), now, settings);
            let tokens = IssuedTokens::mint(&app.keys.token, &*app.rng, &grant, now);
            let event = app
                .event(EventKind::TokenIssued, origin)
                .identity(user.id.identity())
                .client_id(client_id)
                .object(grant.id.as_str())
                .detail("device code exchanged");
            // One conditional write: of concurrent exchanges exactly one wins.
            if app.store.redeem_device(code_hash, device.version, grant.clone(), NewTokens::from(&tokens), event).await? {
                tracing::debug!(grant = %grant.id, client_id, "device code exchanged");
                Ok(Issued { grant, tokens, state: None })
            } else {
                Err(AuthError::InvalidGrant(DEVICE_CODE_INVALID))
            }
        }
    }
}

async fn refresh(app: &AppState, client_id: &str, presented: Secret, origin: &Origin) -> Result<Issued, AuthError> {
    if !looks_like_token(presented.expose()) {
        return Err(AuthError::InvalidGrant(REFRESH_INVALID));
    }
    let hash = app.keys.token.hash(TokenKind::Refresh, presented.expose());
    let (token, grant) = app.store.refresh_token(hash).await?.ok_or(AuthError::InvalidGrant(REFRESH_INVALID))?;
    let now = app.now();
    match refresh::decide(&token, &grant, client_id, now) {
        Refresh::Reject(RefreshRejected::WrongClient) => Err(AuthError::InvalidGrant(CLIENT_MISMATCH)),
        Refresh::Reject(RefreshRejected::NotRefreshable) => Err(AuthError::InvalidGrant("The grant is not refreshable.")),
        Refresh::Reject(RefreshRejected::Revoked | RefreshRejected::Expired) => Err(AuthError::InvalidGrant(REFRESH_INVALID)),
        Refresh::Reuse => Err(reuse_detected(app, &grant, client_id, origin, now).await?),
        Refresh::Rotate => {
            let integration = integration(app, client_id).await?;
            let user = may_receive(app, &integration, &grant.user_id, &grant.scope).await?;
            let tokens = IssuedTokens::mint(&app.keys.token, &*app.rng, &grant, now);
            let event =
                app.event(EventKind::TokenRefreshed, origin).identity(user.id.identity()).client_id(client_id).object(grant.id.as_str());
            // One conditional write. Losing it means the token was spent
            // between our read and our write: it was presented twice, which
            // is reuse whatever the timing, and the grant is revoked.
            if app.store.rotate_refresh(hash, grant.id.clone(), NewTokens::from(&tokens), event).await? {
                tracing::debug!(grant = %grant.id, client_id, "refresh token rotated");
                let mut grant = grant;
                grant.access_issued_at = now;
                Ok(Issued { grant, tokens, state: None })
            } else {
                Err(reuse_detected(app, &grant, client_id, origin, now).await?)
            }
        }
    }
}

/// A spent refresh token came back: revoke the whole grant (RFC 9700
/// §4.14.2) and record it. Returns the error the client gets.
async fn reuse_detected(app: &AppState, grant: &Grant, client_id: &str, origin: &Origin, now: UnixTime) -> Result<AuthError, AuthError> {
    let event = app
        .event(EventKind::RefreshTokenReuse, origin)
        .identity(grant.user_id.identity())
        .client_id(client_id)
        .object(grant.id.as_str())
        .detail("spent refresh token presented again: grant revoked");
    if app.store.revoke_grant(grant.id.clone(), now, event).await? {
        tracing::warn!(grant = %grant.id, "refresh token reuse: grant revoked");
    }
    Ok(AuthError::InvalidGrant(REFRESH_INVALID))
}

/// `POST Authorize/OAuth`: user name and password, when the integration
/// allows it.
pub async fn password_grant(app: &AppState, req: OAuthRequest, origin: &Origin) -> Result<Issued, AuthError> {
    let client_id = required(req.client_id).ok_or(AuthError::InvalidRequest(CLIENT_ID_REQUIRED))?;
    let integration = integration(app, &client_id).await?;
    if !integration.grant_types.password {
        return Err(AuthError::UnauthorizedClient("The password grant is not allowed for this API integration."));
    }
    let scope_text = required(req.scope).ok_or(AuthError::InvalidScope("scope is required."))?;
    let scope = Scope::parse(&scope_text).map_err(|_| AuthError::InvalidScope("The scope is malformed."))?;
    let (Some(username), Some(password)) = (required(req.username), req.password.filter(|p| !p.expose().is_empty())) else {
        return Err(AuthError::InvalidGrant("Username and password are required."));
    };
    let password = Secret::new(password.0);
    let user = match login::authenticate(app, &username, &password, origin).await {
        Ok(u) => u,
        Err(LoginError::Invalid) => return Err(AuthError::InvalidGrant("Username or password is invalid.")),
        Err(LoginError::Locked) => return Err(AuthError::InvalidGrant("Too many failed attempts; try again later.")),
        Err(LoginError::Store(e)) => return Err(e.into()),
    };
    may_receive(app, &integration, &user.id, &scope).await?;
    let now = app.now();
    let grant = Grant::new(&*app.rng, &client_id, user.id.clone(), scope, now, integration.settings(app.tokens));
    let tokens = IssuedTokens::mint(&app.keys.token, &*app.rng, &grant, now);
    let event = app
        .event(EventKind::TokenIssued, origin)
        .identity(user.id.identity())
        .client_id(client_id.as_str())
        .object(grant.id.as_str())
        .detail("password grant");
    app.store.insert_grant(grant.clone(), NewTokens::from(&tokens), event).await?;
    Ok(Issued { grant, tokens, state: req.state })
}
