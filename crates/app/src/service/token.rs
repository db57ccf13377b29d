//! `Authorize/Token` (device-code exchange and refresh) and `Authorize/OAuth`
//! (password grant).

use std::future::Future;
use std::time::Duration;

use strongroom_core::event::{Event, EventKind};
use strongroom_core::grant::device::Poll;
use strongroom_core::grant::refresh::{self, Refresh, RefreshRejected};
use strongroom_core::grant::{Grant, IssueRefused, IssuedTokens, Pair, Standing, may_receive};
use strongroom_core::secret::Secret;
use strongroom_core::time::UnixTime;
use strongroom_core::token::{Presented, TokenHash, TokenKind, looks_like_device_code, looks_like_token};
use strongroom_proto::vedauth::{DEVICE_CODE_GRANT, OAuthRequest, REFRESH_TOKEN_GRANT, TokenRequest};
use strongroom_store::PairChange;

use super::login::{self, LoginError};
use super::{AuthError, CLIENT_ID_REQUIRED, CLIENT_MISMATCH, DEVICE_CODE_INVALID, Origin, REFRESH_INVALID, UNKNOWN_CLIENT};
use crate::App;
use crate::GrantType;

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

/// `POST Authorize/Token`: picks the shape (a refresh or a device-code exchange) and runs it.
pub async fn token(app: &App, req: TokenRequest, origin: &Origin) -> Result<Issued, AuthError> {
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

/// Reads of one request before it gives up on a grant or code that keeps
/// changing under it (only many simultaneous presentations of one token do
/// that; each lost attempt means another one won).
const MAX_ATTEMPTS: usize = 64;

/// Of those, the attempts that may follow a busy or unreachable database
/// (`Busy`, `Unavailable`: a lock timeout, a serialization failure, a
/// connection lost to a failover), each after a pause longer than the last.
/// Reading again is safe after any failure, a write's included: its
/// conditional write either happened (and the next read sees the grant or
/// code moved on, which the retry rules answer with a working pair) or not.
/// A database still failing after these is answered `503
/// temporarily_unavailable`, and the client retries later.
const TRANSIENT_ATTEMPTS: u32 = 3;
const TRANSIENT_PAUSE: Duration = Duration::from_millis(50);

/// Runs `attempt` until it is done (`Some`), reading again after a lost write (`None`)
/// ([`MAX_ATTEMPTS`] in all) or a transient store failure
/// ([`TRANSIENT_ATTEMPTS`] of them).
async fn attempts<F, Fut>(mut attempt: F) -> Result<Issued, AuthError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<Issued>, AuthError>>,
{
    let mut transient = 0;
    for _ in 0..MAX_ATTEMPTS {
        match attempt().await {
            Ok(Some(issued)) => return Ok(issued),
            Ok(None) => {}
            Err(AuthError::Store(e)) if e.is_retryable() && transient < TRANSIENT_ATTEMPTS => {
                transient += 1;
                tracing::debug!(kind = %e.kind(), error = %e, "store failed; reading again");
                tokio::time::sleep(TRANSIENT_PAUSE * transient).await;
            }
            Err(e) => return Err(e),
        }
    }
    Err(contended())
}

/// The client's error for a refusal of `may_receive`.
fn refused(why: IssueRefused) -> AuthError {
    match why {
        IssueRefused::IntegrationDisabled => AuthError::InvalidClient("The API integration is disabled."),
        IssueRefused::UserGone => AuthError::InvalidGrant("The user no longer exists."),
        IssueRefused::UserDisabled => AuthError::InvalidGrant("The user's account is disabled."),
        IssueRefused::UserNotAllowed => AuthError::UnauthorizedClient("The user is not allowed to use this API integration."),
        IssueRefused::ScopeTooWide => AuthError::InvalidScope("The scope exceeds the scope of the API integration."),
    }
}

fn contended() -> AuthError {
    AuthError::Internal("the grant kept changing under the request")
}

/// The device-code exchange: one context read, the pure poll decision,
/// then one conditional write. A lost write (someone else changed the code
/// or its grant first) reads and decides again.
async fn exchange_device_code(app: &App, client_id: &str, code: Secret, origin: &Origin) -> Result<Issued, AuthError> {
    if !looks_like_device_code(code.expose()) {
        return Err(AuthError::InvalidGrant(DEVICE_CODE_INVALID));
    }
    let code_hash = app.keys.token.hash(TokenKind::DeviceCode, code.expose());
    attempts(|| exchange_once(app, client_id, code_hash, origin)).await
}

/// One attempt of [`exchange_device_code`]: `None` when its conditional write lost.
async fn exchange_once(app: &App, client_id: &str, code_hash: TokenHash, origin: &Origin) -> Result<Option<Issued>, AuthError> {
    let ctx = app.store.device_context(code_hash).await?.ok_or(AuthError::InvalidGrant(DEVICE_CODE_INVALID))?;
    let device = &ctx.device;
    if device.client_id == client_id && !ctx.device_flow_enabled {
        return Err(AuthError::InvalidClient("Browser-based authentication is disabled for this API integration."));
    }
    let now = app.now();
    let settings = ctx.overrides.apply(app.tokens);
    match device.poll(client_id, now) {
        Poll::WrongClient | Poll::Expired => return Err(AuthError::InvalidGrant(DEVICE_CODE_INVALID)),
        Poll::Denied => return Err(AuthError::AccessDenied),
        // The poll is answered only once it is recorded: a poll that
        // lost its conditional write to a simultaneous one reads again,
        // and finds itself too fast. Parallel polls cannot all pass as
        // paced.
        Poll::Pending { record } => {
            if app.store.record_poll(code_hash, device.version, record).await? {
                tracing::trace!(client_id, "device code pending");
                return Err(AuthError::AuthorizationPending);
            }
        }
        Poll::SlowDown { record } => {
            if app.store.record_poll(code_hash, device.version, record).await? {
                return Err(AuthError::SlowDown);
            }
        }
        Poll::Redeemed => match &ctx.grant {
            Some(grant) if ctx.may_reissue(client_id, now, refresh::window(ctx.overrides.retry_window, app.tokens.retry_window)) => {
                may_receive(&ctx.standing, &grant.scope).map_err(refused)?;
                let tokens = IssuedTokens::mint(&app.keys.token, &*app.rng, grant, now);
                let change = PairChange::replacing(grant, &tokens).from_addr(&origin.addr);
                let event = app
                    .event(EventKind::DeviceCodeReissued, origin)
                    .identity(grant.user_id.identity())
                    .client_id(client_id)
                    .object(grant.id.as_str())
                    .detail("device code presented again: the unused pair was replaced");
                if app.store.advance_pair(grant.id.clone(), grant.version, change, event).await? {
                    app.observer.token_issued();
                    tracing::debug!(grant = %grant.id, client_id, "device code exchanged again: pair replaced");
                    let mut grant = grant.clone();
                    grant.access_issued_at = now;
                    return Ok(Some(Issued { grant, tokens, state: None }));
                }
            }
            _ => {
                let event =
                    app.event(EventKind::DeviceCodeReplayed, origin).client_id(client_id).detail("redeemed device code presented again");
                app.store.append_event(event).await?;
                return Err(AuthError::InvalidGrant(DEVICE_CODE_INVALID));
            }
        },
        Poll::Issue { user_id } => {
            may_receive(&ctx.standing, &device.scope).map_err(refused)?;
            let (grant, tokens, event) = first_pair(
                app,
                Grant::new(&*app.rng, client_id, user_id, device.scope.clone(), now, settings),
                origin,
                now,
                "device code exchanged",
            );
            // One conditional write: of concurrent exchanges exactly one redeems.
            if app.store.redeem_device(code_hash, device.version, grant.clone(), event).await? {
                app.observer.token_issued();
                app.observer.grant_issued(GrantType::Device);
                tracing::debug!(grant = %grant.id, client_id, "device code exchanged");
                return Ok(Some(Issued { grant, tokens, state: None }));
            }
        }
    }
    Ok(None)
}

/// A refresh: one context read, the pure decision, one write conditional on
/// the grant's version. A lost write reads and decides again: under 32
/// simultaneous presentations of one token, one rotates, the others see a
/// just-rotated token and retry in turn, and the grant ends with exactly one
/// working refresh token.
async fn refresh(app: &App, client_id: &str, presented: Secret, origin: &Origin) -> Result<Issued, AuthError> {
    if !looks_like_token(presented.expose()) {
        return Err(AuthError::InvalidGrant(REFRESH_INVALID));
    }
    // A token without a locator this server tagged is no grant's: refused
    // like an unknown one, without a read.
    let token = app.keys.token.presented(TokenKind::Refresh, presented.expose()).ok_or(AuthError::InvalidGrant(REFRESH_INVALID))?;
    attempts(|| refresh_once(app, client_id, token, origin)).await
}

/// One attempt of [`refresh`]: `None` when its conditional write lost.
async fn refresh_once(app: &App, client_id: &str, token: Presented, origin: &Origin) -> Result<Option<Issued>, AuthError> {
    let mut ctx = app.store.refresh_context(token).await?.ok_or(AuthError::InvalidGrant(REFRESH_INVALID))?;
    let now = app.now();
    let mut decision = ctx.decide(client_id, now, refresh::window(ctx.retry_window, app.tokens.retry_window));
    // A directory person's standing and groups are read from the directory
    // again at every refresh, before the decision that issues tokens is
    // made on them (the bound for a change made in the directory: one
    // access token's lifetime). An OpenID provider's person is refreshed
    // only within `oidc.session_secs` of their last sign-in there.
    if matches!(decision, Refresh::Rotate | Refresh::Retry)
        && ctx.grant.user_id.is_directory()
        && recheck_directory(app, &ctx.grant.user_id, now, origin).await?
    {
        ctx = app.store.refresh_context(token).await?.ok_or(AuthError::InvalidGrant(REFRESH_INVALID))?;
        decision = ctx.decide(client_id, now, refresh::window(ctx.retry_window, app.tokens.retry_window));
    }
    let g = &ctx.grant;
    let (kind, detail) = match decision {
        Refresh::Reject(RefreshRejected::WrongClient) => return Err(AuthError::InvalidGrant(CLIENT_MISMATCH)),
        Refresh::Reject(RefreshRejected::NotRefreshable) => return Err(AuthError::InvalidGrant("The grant is not refreshable.")),
        Refresh::Reject(RefreshRejected::Revoked | RefreshRejected::Expired | RefreshRejected::Unknown) => {
            return Err(AuthError::InvalidGrant(REFRESH_INVALID));
        }
        Refresh::Reject(RefreshRejected::Refused(why)) => return Err(refused(why)),
        Refresh::Reuse => return Err(reuse_detected(app, g, client_id, origin, now).await?),
        Refresh::Rotate => (EventKind::TokenRefreshed, ""),
        Refresh::Retry => (EventKind::RefreshRetried, "refresh token presented again: the unused pair was replaced"),
    };
    let tokens = IssuedTokens::mint(&app.keys.token, &*app.rng, g, now);
    let change = if decision == Refresh::Retry { PairChange::replacing(g, &tokens) } else { PairChange::rotation(g, token.hash, &tokens) }
        .from_addr(&origin.addr);
    let event = app.event(kind, origin).identity(g.user_id.identity()).client_id(client_id).object(g.id.as_str()).detail(detail);
    if app.store.advance_pair(g.id.clone(), g.version, change, event).await? {
        app.observer.token_refreshed();
        tracing::debug!(grant = %g.id, client_id, retried = decision == Refresh::Retry, "refresh token rotated");
        let mut grant = ctx.grant;
        grant.access_issued_at = now;
        grant.last_addr = origin.known_addr().or(grant.last_addr);
        return Ok(Some(Issued { grant, tokens, state: None }));
    }
    Ok(None)
}

/// A refresh of an OpenID provider's person past `oidc.session_secs` after
/// their last sign-in there.
pub const OIDC_SIGN_IN_AGAIN: &str =
    "The sign-in through the identity provider is older than this server allows a grant to be refreshed on; sign in again.";

/// Reads a directory person again: gone or disabled there refuses the
/// refresh; otherwise their groups are brought up to date (`true`: the
/// stored person changed hands, read the context again). A directory out
/// of reach is `temporarily_unavailable` (the stored groups are kept, and
/// nothing is issued on them).
async fn recheck_directory(app: &App, user: &strongroom_core::identity::UserId, now: UnixTime, origin: &Origin) -> Result<bool, AuthError> {
    // An OpenID provider is asked nothing at a refresh (it has no lookup
    // without the person): its people's groups are those of their last
    // sign-in, and their grants are refreshed only within
    // `oidc.session_secs` of it; past that they sign in again (which reads
    // their groups afresh). An administrator disabling them here still
    // ends their grants at once.
    if let Some(oidc) = app.oidc.as_ref().filter(|o| o.config.prefix().eq_ignore_ascii_case(user.prefix())) {
        let signed_in = app.store.user_by_id(user.clone()).await?.and_then(|u| u.signed_in_at);
        return match signed_in {
            Some(at) if now < at.plus_secs(oidc.config.session_secs) => Ok(false),
            _ => Err(AuthError::InvalidGrant(OIDC_SIGN_IN_AGAIN)),
        };
    }
    let Some(dir) = app.directory.as_ref().filter(|d| d.config.prefix().eq_ignore_ascii_case(user.prefix())) else {
        return Err(AuthError::InvalidGrant("The identity provider of this grant's user is no longer configured."));
    };
    match dir.lookup(user.bare()).await {
        Ok(Some(person)) => {
            login::sync(app, dir, &person, origin).await?;
            Ok(true)
        }
        Ok(None) => Err(AuthError::InvalidGrant("The directory no longer knows this account, or has disabled it.")),
        Err(e) => {
            tracing::warn!(error = %e, directory = %dir.config.url, "refresh: the directory cannot be reached");
            Err(AuthError::TemporarilyUnavailable("The identity provider cannot be reached at this moment; try again."))
        }
    }
}

/// A new grant's first pair, minted at `now` for the client at `origin`, and
/// the `token.issued` event that records it (`detail`: how it was granted):
/// the device-code exchange, the password grant and the machine grants.
pub(crate) fn first_pair(
    app: &App,
    mut grant: Grant,
    origin: &Origin,
    now: UnixTime,
    detail: impl Into<String>,
) -> (Grant, IssuedTokens, Event) {
    grant.last_addr = origin.known_addr();
    let tokens = IssuedTokens::mint(&app.keys.token, &*app.rng, &grant, now);
    grant.pair = Pair::first(&tokens);
    let event = app
        .event(EventKind::TokenIssued, origin)
        .identity(grant.user_id.identity())
        .client_id(grant.client_id.as_str())
        .object(grant.id.as_str())
        .detail(detail);
    (grant, tokens, event)
}

/// A spent refresh token came back: revoke the whole grant (RFC 9700 §4.14.2)
/// and record it. Returns the error the client gets.
async fn reuse_detected(app: &App, grant: &Grant, client_id: &str, origin: &Origin, now: UnixTime) -> Result<AuthError, AuthError> {
    let event = app
        .event(EventKind::RefreshTokenReuse, origin)
        .identity(grant.user_id.identity())
        .client_id(client_id)
        .object(grant.id.as_str())
        .detail("spent refresh token presented again: grant revoked");
    // Counted once the store has answered, exactly when the reuse event and
    // the revocation committed (a racing presentation that finds the grant
    // revoked already writes no event and counts nothing).
    if app.store.revoke_grant(grant.id.clone(), now, event).await? {
        app.observer.refresh_reuse();
        app.observer.grant_revoked();
        tracing::warn!(grant = %grant.id, "refresh token reuse: grant revoked");
    }
    Ok(AuthError::InvalidGrant(REFRESH_INVALID))
}

/// `POST Authorize/OAuth`: user name and password, when the integration
/// allows it.
pub async fn password_grant(app: &App, req: OAuthRequest, origin: &Origin) -> Result<Issued, AuthError> {
    let client_id = required(req.client_id).ok_or(AuthError::InvalidRequest(CLIENT_ID_REQUIRED))?;
    let integration = app.store.integration(client_id.clone()).await?.ok_or(AuthError::InvalidGrant(UNKNOWN_CLIENT))?;
    if !integration.grant_types.password {
        return Err(AuthError::UnauthorizedClient("The password grant is not allowed for this API integration."));
    }
    let scope = super::requested_scope(req.scope)?;
    let (Some(username), Some(password)) = (required(req.username), req.password.filter(|p| !p.expose().is_empty())) else {
        return Err(AuthError::InvalidGrant("Username and password are required."));
    };
    let password = Secret::new(password.0);
    let user = match login::authenticate(app, &username, &password, login::Surface::PasswordGrant, origin).await {
        Ok(u) => u,
        Err(LoginError::Invalid) => return Err(AuthError::InvalidGrant("Username or password is invalid.")),
        Err(LoginError::Locked) => return Err(AuthError::InvalidGrant("Too many failed attempts; try again later.")),
        Err(LoginError::Busy) => {
            return Err(AuthError::TemporarilyUnavailable(
                "Too many sign-ins of this user are being checked at this moment; try again in a few seconds.",
            ));
        }
        Err(LoginError::Unavailable) => {
            return Err(AuthError::TemporarilyUnavailable("The identity provider cannot be reached at this moment; try again."));
        }
        Err(LoginError::Store(e)) => return Err(e.into()),
    };
    let now = app.now();
    let user_allowed = app.admits(&integration, &user.id).await?;
    // `authenticate` refused a disabled account already.
    let standing = Standing {
        integration_found: true,
        integration_disabled: integration.disabled,
        max_scope: integration.max_scope.clone(),
        user_found: true,
        user_disabled: user.disabled,
        user_allowed,
    };
    may_receive(&standing, &scope).map_err(refused)?;
    let grant = Grant::new(&*app.rng, &client_id, user.id.clone(), scope, now, integration.settings(app.tokens));
    let (grant, tokens, event) = first_pair(app, grant, origin, now, "password grant");
    app.store.insert_grant(grant.clone(), event).await?;
    app.observer.token_issued();
    app.observer.grant_issued(GrantType::Password);
    Ok(Issued { grant, tokens, state: req.state })
}
