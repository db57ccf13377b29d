//! "Applications I have approved": a person signs in (through the same
//! guessing limits as the approval page, locally or through the directory)
//! and sees their live grants; they may revoke any of them. A signed
//! ticket (user, expiry, bound to the browser's anti-forgery token, 10
//! minutes) carries the sign-in to the revocations; every revocation checks
//! again that the grant is the person's and live, in the conditional write
//! that ends it.

use hmac::{Hmac, Mac as _};
use sha2::Sha256;
use subtle::ConstantTimeEq as _;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use strongroom_core::event::EventKind;
use strongroom_core::grant::{Grant, GrantId};
use strongroom_core::identity::{User, UserId};
use strongroom_core::secret::Secret;
use strongroom_core::time::UnixTime;

use super::Origin;
use super::device::PageError;
use super::login::{self, LoginError};
use crate::App;

/// How long a signed-in list may be acted on.
const TICKET_SECS: i64 = 600;

/// A person's list: who they are, their live grants, the ticket to act on them.
#[derive(Debug)]
pub struct Approved {
    pub user: User,
    /// Each live grant with its application's name, oldest first.
    pub grants: Vec<(Grant, String)>,
    pub ticket: String,
    /// The application whose grant was just revoked, if one was.
    pub revoked: Option<String>,
}

/// Signs in and lists the person's grants.
pub async fn sign_in(app: &App, username: &str, password: &Secret, csrf: &str, origin: &Origin) -> Result<Approved, PageError> {
    let user = match login::authenticate(app, username, password, login::Surface::ApprovedApplications, origin).await {
        Ok(u) => u,
        Err(LoginError::Invalid) => return Err(PageError::WrongLogin),
        Err(LoginError::Locked) => return Err(PageError::Locked),
        Err(LoginError::Busy) => return Err(PageError::Busy),
        Err(LoginError::Unavailable) => return Err(PageError::DirectoryUnavailable),
        Err(LoginError::Store(e)) => return Err(e.into()),
    };
    list(app, user, csrf, None).await
}

async fn list(app: &App, user: User, csrf: &str, revoked: Option<String>) -> Result<Approved, PageError> {
    let now = app.now();
    let grants = app.store.approved_grants(user.id.clone(), now).await?;
    let ticket = sign(&app.keys.page, &user.id, now.plus_secs(TICKET_SECS), csrf);
    Ok(Approved { user, grants, ticket, revoked })
}

/// Revokes grant `grant` of the ticket's person, then lists again.
pub async fn revoke(app: &App, ticket: &str, csrf: &str, grant: &str, origin: &Origin) -> Result<Approved, PageError> {
    let now = app.now();
    let user_id = verify(&app.keys.page, ticket, csrf, now).ok_or(PageError::BadForm)?;
    let user = app.store.user_by_id(user_id).await?.ok_or(PageError::BadForm)?;
    if user.disabled {
        return Err(PageError::NotAllowed);
    }
    let mine = app.store.approved_grants(user.id.clone(), now).await?;
    let Some((g, application)) = mine.into_iter().find(|(g, _)| g.id.as_str() == grant) else {
        // Not theirs, or ended meanwhile: nothing to do, the list says what is live.
        return list(app, user, csrf, None).await;
    };
    let event = app
        .event(EventKind::GrantRevoked, origin)
        .identity(user.id.identity())
        .client_id(g.client_id.as_str())
        .object(g.id.as_str())
        .detail("revoked by its user (applications I have approved)");
    if app.store.revoke_grant(GrantId::from_stored(g.id.as_str().to_owned()), now, event).await? {
        app.observer.grant_revoked();
    }
    list(app, user, csrf, Some(application)).await
}

fn mac(key: &[u8; 32], payload: &str, csrf: &str) -> Hmac<Sha256> {
    let mut mac = strongroom_core::mac::hmac_sha256(key);
    mac.update(b"strongroom/approved-list-ticket/v1\0");
    mac.update(payload.as_bytes());
    mac.update(b"\0");
    mac.update(csrf.as_bytes());
    mac
}

fn sign(key: &[u8; 32], user: &UserId, expires: UnixTime, csrf: &str) -> String {
    let payload = format!("{user}.{}", expires.millis());
    format!("{payload}.{}", URL_SAFE_NO_PAD.encode(mac(key, &payload, csrf).finalize().into_bytes()))
}

fn verify(key: &[u8; 32], ticket: &str, csrf: &str, now: UnixTime) -> Option<UserId> {
    let (payload, sig) = ticket.rsplit_once('.')?;
    let sig = URL_SAFE_NO_PAD.decode(sig).ok()?;
    let expected = mac(key, payload, csrf).finalize().into_bytes();
    if !bool::from(expected.as_slice().ct_eq(&sig)) {
        return None;
    }
    let (user, expires) = payload.rsplit_once('.')?;
    if now >= UnixTime::from_millis(expires.parse().ok()?) {
        return None;
    }
    Some(UserId::from_stored(user.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_bind_user_browser_and_time() {
        let key = [3u8; 32];
        let user = UserId::from_stored("LDAP+dir:0b8f7f8e-1111-4222-8333-444455556666".into());
        let t0 = UnixTime::from_secs(1_800_000_000);
        let t = sign(&key, &user, t0.plus_secs(600), "csrf-a");
        assert_eq!(verify(&key, &t, "csrf-a", t0), Some(user.clone()));
        assert_eq!(verify(&key, &t, "csrf-b", t0), None, "another browser");
        assert_eq!(verify(&key, &t, "csrf-a", t0.plus_secs(600)), None, "expired");
        assert_eq!(verify(&[4u8; 32], &t, "csrf-a", t0), None, "another key");
        let forged = t.replacen("LDAP+dir", "local", 1);
        assert_eq!(verify(&key, &forged, "csrf-a", t0), None, "another user");
    }
}
