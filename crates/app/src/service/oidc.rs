//! The page's side of the flow: starting a sign-in for a device's code, and
//! finishing it at the callback. The protocol itself (discovery, the token exchange, the ID token's
//! checks) is `strongroom_idp::oidc`.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use strongroom_core::random::bytes;

use crate::App;
use crate::service::Origin;
use crate::service::device::{self, Consent, PageError};
use strongroom_idp::oidc::{OidcError, STATE_SECS, person_id};

/// Where the provider sends the browser back.
pub fn redirect_uri(app: &App) -> String {
    format!("{}/vedauth/device/oidc/callback", app.public_url)
}

fn keyed(app: &App, what: &[u8], value: &str) -> [u8; 32] {
    strongroom_core::mac::hmac_sha256_of(&app.keys.page, &[what, value.as_bytes()])
}

/// A started sign-in: the provider's URL to send the browser to, and the
/// binding to set as its cookie.
#[derive(Debug)]
pub struct Started {
    pub location: String,
    pub binding: String,
}

/// Starts a sign-in for the device code `user_code` (as typed; checked after the sign-in).
pub async fn start(app: &App, user_code: &str) -> Result<Started, PageError> {
    let oidc = app.oidc.as_ref().ok_or(PageError::BadForm)?;
    let state = URL_SAFE_NO_PAD.encode(bytes::<32>(&*app.rng));
    let binding = URL_SAFE_NO_PAD.encode(bytes::<32>(&*app.rng));
    let now = app.now();
    let code: String = user_code.chars().take(32).collect();
    app.store
        .insert_oidc_state(
            keyed(app, b"oidc-state\0", &state),
            keyed(app, b"oidc-binding\0", &binding),
            code,
            now.plus_secs(STATE_SECS),
            now,
        )
        .await?;
    let location = oidc.authorization_url(&app.keys.page, &state, &redirect_uri(app)).await.map_err(refused)?;
    Ok(Started { location, binding })
}

fn refused(e: OidcError) -> PageError {
    match e {
        OidcError::State => PageError::SignInExpired,
        OidcError::Unavailable(why) | OidcError::Config(why) => {
            tracing::warn!(why, "OIDC: the identity provider cannot be reached");
            PageError::DirectoryUnavailable
        }
        OidcError::Token(why) => {
            tracing::warn!(why, "OIDC: the identity provider's answer was refused");
            PageError::ProviderRefused
        }
    }
}

/// The callback: takes the state (once), exchanges the code, checks the
/// id token, stores the person, and shows the device's request.
pub async fn finish(app: &App, state: &str, code: &str, binding: &str, csrf: &str, origin: &Origin) -> Result<Consent, PageError> {
    let oidc = app.oidc.as_ref().ok_or(PageError::BadForm)?;
    let now = app.now();
    let user_code = app
        .store
        .take_oidc_state(keyed(app, b"oidc-state\0", state), keyed(app, b"oidc-binding\0", binding), now)
        .await?
        .ok_or(PageError::SignInExpired)?;
    let person = oidc.finish(&app.keys.page, state, code, &redirect_uri(app), now).await.map_err(refused)?;
    let groups = person.groups.iter().map(String::as_str);
    let id = person_id(&person.issuer, &person.subject);
    let user = crate::service::login::sync_person(app, oidc.config.prefix(), &id, &person.name, groups, origin, now).await?;
    if user.disabled {
        return Err(PageError::NotAllowed);
    }
    device::consent_for(app, user, &user_code, csrf, origin).await
}
