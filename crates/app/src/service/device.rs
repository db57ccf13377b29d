//! Device authorization: `Authorize/Device`, and the approval page's two
//! steps (sign in and see the request; approve or deny it).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq as _;

use strongroom_core::event::EventKind;
use strongroom_core::grant::device::{Decide, DeviceAuthorization, DeviceState};
use strongroom_core::hex;
use strongroom_core::identity::{User, UserId};
use strongroom_core::secret::Secret;
use strongroom_core::throttle::{self, Admission, Rule};
use strongroom_core::time::UnixTime;
use strongroom_core::token::{TokenHash, TokenKind, display_user_code, mint_device_code, mint_user_code, normalize_user_code};
use strongroom_proto::vedauth::DeviceRequest;
use strongroom_store::StoreError;

use super::login::{self, LoginError};
use super::{AuthError, CLIENT_ID_REQUIRED, Origin, UNKNOWN_CLIENT};
use crate::App;

/// A started device authorization, for the response.
#[derive(Debug)]
pub struct Started {
    pub device_code: Secret,
    /// As shown to people: `XXXX-XXXX`.
    pub user_code: Secret,
    pub expires_at: UnixTime,
    pub interval_secs: i64,
}

/// `POST Authorize/Device`.
pub async fn start(app: &App, req: DeviceRequest, origin: &Origin) -> Result<Started, AuthError> {
    let client_id = req.client_id.filter(|c| !c.is_empty()).ok_or(AuthError::InvalidRequest(CLIENT_ID_REQUIRED))?;
    let integration = app.store.integration(client_id.clone()).await?.ok_or(AuthError::InvalidGrant(UNKNOWN_CLIENT))?;
    if integration.disabled || !integration.grant_types.device {
        return Err(AuthError::InvalidClient("Browser-based authentication is disabled for this API integration."));
    }
    let scope = super::requested_scope(req.scope)?;
    if !scope.is_subset_of(&integration.max_scope) {
        return Err(AuthError::InvalidScope("The scope exceeds the scope of the API integration."));
    }
    let settings = integration.settings(app.tokens);
    let now = app.now();
    // A user code collides with a live one once in 20^8 / (live codes): retry.
    for _ in 0..4 {
        let device_code = mint_device_code(&*app.rng);
        let user_code = mint_user_code(&*app.rng);
        let device = DeviceAuthorization {
            code_hash: app.keys.token.hash(TokenKind::DeviceCode, device_code.expose()),
            user_code_hash: app.keys.token.hash(TokenKind::UserCode, user_code.expose()),
            client_id: client_id.clone(),
            scope: scope.clone(),
            state: DeviceState::Pending,
            created_at: now,
            expires_at: now.plus_secs(settings.device_code_validity),
            interval_secs: settings.poll_interval,
            last_poll_at: None,
            version: 0,
        };
        let event = app.event(EventKind::DeviceAuthorizationStarted, origin).client_id(client_id.as_str()).detail(scope.to_string());
        let quota = Some((format!("device:addr:{}", origin.addr), Rule::ADDRESS_DEVICE_STARTS));
        match app.store.insert_device(device, event, quota).await {
            Ok(()) => {
                return Ok(Started {
                    device_code,
                    user_code: Secret::new(display_user_code(user_code.expose())),
                    expires_at: now.plus_secs(settings.device_code_validity),
                    interval_secs: settings.poll_interval,
                });
            }
            Err(StoreError::Conflict) => continue,
            Err(StoreError::QuotaExceeded) => return Err(AuthError::TooManyStarts),
            Err(e) => return Err(e.into()),
        }
    }
    Err(AuthError::Internal("could not allocate a unique user code"))
}

/// What can go wrong on the approval page, in words for the person there.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("The user name or password is wrong.")]
    WrongLogin,
    #[error("Too many failed attempts. Try again later.")]
    Locked,
    #[error("That code is not recognised, or it has expired. Check the code shown by your application.")]
    UnknownCode,
    #[error("Too many wrong codes. Try again later.")]
    CodeLocked,
    #[error("Too many sign-ins at this moment. Try again in a few seconds.")]
    Busy,
    #[error("Your organisation's directory cannot be reached right now. Try again in a moment.")]
    DirectoryUnavailable,
    /// An OpenID Connect sign-in's state is unknown, used, expired or another browser's.
    #[error("This sign-in was not started here, was used already, or has expired. Start again from the code's link.")]
    SignInExpired,
    /// The identity provider's answer was refused (the reason is logged).
    #[error("Your identity provider's answer could not be accepted. Start again from the code's link.")]
    ProviderRefused,
    #[error("Your account may not use this application.")]
    NotAllowed,
    #[error("This request has already been answered.")]
    AlreadyDecided,
    #[error("This request has expired. Start again in your application.")]
    Expired,
    #[error("This page has expired. Start again.")]
    BadForm,
    /// The store failed (logged with the request id).
    #[error("Something went wrong. Try again.")]
    Store(#[from] StoreError),
}

/// What the signed-in user is asked to approve.
#[derive(Debug)]
pub struct Consent {
    pub user: User,
    pub integration_name: String,
    pub client_id: String,
    pub scope: String,
    pub scope_lines: Vec<String>,
    pub user_code: String,
    /// Signed proof that `user` signed in to decide this code, bound to the
    /// browser's anti-forgery token; short-lived.
    pub ticket: String,
}

/// Minutes a consent ticket stays valid.
const TICKET_SECS: i64 = 300;

/// Step one: check the password and the user code, and show the request.
pub async fn sign_in(
    app: &App,
    username: &str,
    password: &Secret,
    user_code_input: &str,
    csrf: &str,
    origin: &Origin,
) -> Result<Consent, PageError> {
    let user = match login::authenticate(app, username, password, login::Surface::ApprovalPage, origin).await {
        Ok(u) => u,
        Err(LoginError::Invalid) => return Err(PageError::WrongLogin),
        Err(LoginError::Locked) => return Err(PageError::Locked),
        Err(LoginError::Busy) => return Err(PageError::Busy),
        Err(LoginError::Unavailable) => return Err(PageError::DirectoryUnavailable),
        Err(LoginError::Store(e)) => return Err(e.into()),
    };
    consent_for(app, user, user_code_input, csrf, origin).await
}

/// Step one for a person signed in already (through an OpenID provider):
/// check the user code, and show the request.
pub async fn consent_for(app: &App, user: User, user_code_input: &str, csrf: &str, origin: &Origin) -> Result<Consent, PageError> {
    // The code is compared only after the attempt took its slots: parallel
    // guesses cannot outrun the count.
    let slots = throttle::code_slots(user.id.as_str(), &user.name.to_lowercase(), &origin.addr);
    match app.store.begin_attempt(slots.clone(), app.now()).await? {
        Admission::Admitted => {}
        Admission::Locked => return Err(PageError::CodeLocked),
        Admission::Busy => return Err(PageError::Busy),
    }
    let now = app.now();
    let found = match normalize_user_code(user_code_input) {
        Some(code) => app.store.device_by_user_code(app.keys.token.hash(TokenKind::UserCode, &code)).await?.map(|d| (d, code)),
        None => None,
    };
    let Some((device, code)) = found.filter(|(d, _)| d.decide(now) == Decide::Record) else {
        let event = app
            .event(EventKind::UserCodeFailed, origin)
            .identity(user.id.identity())
            .detail("user code not recognised, expired or already answered");
        // The failure that locks was checked like the others: it is answered
        // as unknown; the attempts after it are refused unchecked.
        app.observer.lockouts(app.store.attempt_failed(slots, event).await?);
        return Err(PageError::UnknownCode);
    };
    if !app.store.attempt_succeeded(slots, None, None, app.now()).await? {
        return Err(PageError::CodeLocked);
    }
    let integration = app.store.integration(device.client_id.clone()).await?.ok_or(PageError::UnknownCode)?;
    if integration.disabled || !app.admits(&integration, &user.id).await? {
        return Err(PageError::NotAllowed);
    }
    let ticket = sign_ticket(&app.keys.page, &user.id, &device.code_hash, now.plus_secs(TICKET_SECS), csrf);
    Ok(Consent {
        integration_name: integration.name,
        client_id: integration.client_id,
        scope: device.scope.to_string(),
        scope_lines: device.scope.describe(),
        user_code: display_user_code(&code),
        user,
        ticket,
    })
}

/// The outcome of step two.
#[derive(Debug)]
pub struct Decided {
    pub approved: bool,
    pub integration_name: String,
}

/// Step two: record the user's answer.
pub async fn decide(app: &App, ticket: &str, csrf: &str, approve: bool, origin: &Origin) -> Result<Decided, PageError> {
    let now = app.now();
    let (user_id, code_hash) = verify_ticket(&app.keys.page, ticket, csrf, now).ok_or(PageError::BadForm)?;
    let user = app.store.user_by_id(user_id.clone()).await?.ok_or(PageError::BadForm)?;
    if user.disabled {
        return Err(PageError::NotAllowed);
    }
    let device = app.store.device_context(code_hash).await?.ok_or(PageError::Expired)?.device;
    match device.decide(now) {
        Decide::Expired => return Err(PageError::Expired),
        Decide::AlreadyDecided => return Err(PageError::AlreadyDecided),
        Decide::Record => {}
    }
    let integration = app.store.integration(device.client_id.clone()).await?.ok_or(PageError::Expired)?;
    if approve && (integration.disabled || !app.admits(&integration, &user.id).await?) {
        return Err(PageError::NotAllowed);
    }
    let (state, kind) = if approve {
        (DeviceState::Approved { user_id: user.id.clone() }, EventKind::DeviceApproved)
    } else {
        (DeviceState::Denied { user_id: user.id.clone() }, EventKind::DeviceDenied)
    };
    let event = app.event(kind, origin).identity(user.id.identity()).client_id(device.client_id.as_str()).detail(device.scope.to_string());
    if app.store.decide_device(device.code_hash, device.version, state, event).await? {
        Ok(Decided { approved: approve, integration_name: integration.name })
    } else {
        Err(PageError::AlreadyDecided)
    }
}

fn ticket_mac(key: &[u8; 32], payload: &str, csrf: &str) -> Hmac<Sha256> {
    let mut mac = strongroom_core::mac::hmac_sha256(key);
    mac.update(b"strongroom/consent-ticket/v1\0");
    mac.update(payload.as_bytes());
    mac.update(b"\0");
    mac.update(csrf.as_bytes());
    mac
}

fn sign_ticket(key: &[u8; 32], user: &UserId, code: &TokenHash, expires: UnixTime, csrf: &str) -> String {
    let code_hex = hex::encode(code.as_bytes());
    let payload = format!("{user}.{code_hex}.{}", expires.millis());
    format!("{payload}.{}", URL_SAFE_NO_PAD.encode(ticket_mac(key, &payload, csrf).finalize().into_bytes()))
}

fn verify_ticket(key: &[u8; 32], ticket: &str, csrf: &str, now: UnixTime) -> Option<(UserId, TokenHash)> {
    let (payload, sig) = ticket.rsplit_once('.')?;
    let sig = URL_SAFE_NO_PAD.decode(sig).ok()?;
    let expected = ticket_mac(key, payload, csrf).finalize().into_bytes();
    if !bool::from(expected.as_slice().ct_eq(&sig)) {
        return None;
    }
    let mut parts = payload.split('.');
    let (user, code_hex, expires) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || now >= UnixTime::from_millis(expires.parse().ok()?) {
        return None;
    }
    let code = TokenHash::from_slice(&hex::decode::<32>(code_hex)?)?;
    Some((UserId::from_stored(user.to_owned()), code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_bind_user_code_browser_and_time() {
        let key = [9u8; 32];
        let user = UserId::from_stored("0b8f7f8e-1111-4222-8333-444455556666".into());
        let code = TokenHash([5; 32]);
        let now = UnixTime::from_secs(1000);
        let t = sign_ticket(&key, &user, &code, now.plus_secs(60), "csrf-a");
        assert_eq!(verify_ticket(&key, &t, "csrf-a", now), Some((user, code)));
        assert_eq!(verify_ticket(&key, &t, "csrf-b", now), None, "another browser");
        assert_eq!(verify_ticket(&key, &t, "csrf-a", now.plus_secs(60)), None, "expired");
        assert_eq!(verify_ticket(&[8; 32], &t, "csrf-a", now), None, "another key");
        let mut tampered = t.clone();
        tampered.replace_range(0..1, "1");
        assert_eq!(verify_ticket(&key, &tampered, "csrf-a", now), None);
        assert_eq!(verify_ticket(&key, "garbage", "csrf-a", now), None);
        assert_eq!(verify_ticket(&key, "", "", now), None);
    }
}
