//! The admin console's sessions (`/admin`, `http::console`).
//!
//! A person signs in with a user name and password through
//! [`login::authenticate`] (the guessing limits of every sign-in apply).
//! The session is a cookie the server MACs (under the page key, bound to
//! the browser's anti-forgery token): the user's id, when they signed in,
//! when they were last seen, and the user's console epoch at the sign-in.
//! It ends after [`IDLE_SECS`] without a request or [`MAX_SECS`] after the
//! sign-in, whichever comes first; every request that passes sets it again
//! with the new "last seen". It also ends, on the server, when the user's
//! console epoch moves on (`AdminStore::end_console_sessions`): signing out,
//! a password change, disabling the user, or an administrator's
//! `admin users end-sessions` move it, so every copy of every console
//! cookie of that user stops working at once, on every replica.
//!
//! Nothing about the person is kept in the session but their id: every
//! request reads the user again (there, enabled, Master Admin) and their
//! rights (their own and their groups', `sql::held_rights`), so a disabled
//! user, a removed right or a group membership taken away applies at the
//! next request.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::Mac as _;
use subtle::ConstantTimeEq as _;

use strongroom_core::identity::{User, UserId};
use strongroom_core::secret::Secret;
use strongroom_core::time::UnixTime;
use strongroom_core::vault::{FolderPath, Permissions, Rights};
use strongroom_store::{StoreError, Viewer};

use super::Origin;
use super::login::{self, LoginError};
use crate::App;
use crate::admin::{Actor, Admin, AdminError};

/// A session ends after this long without a request (15 minutes).
pub const IDLE_SECS: i64 = 15 * 60;
/// A session ends this long after its sign-in, however busy (8 hours).
pub const MAX_SECS: i64 = 8 * 60 * 60;

/// What can go wrong in the console, in words for the person there.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    #[error("The user name or password is wrong.")]
    WrongLogin,
    #[error("Too many failed attempts. Try again later.")]
    Locked,
    #[error("Too many sign-ins at this moment. Try again in a few seconds.")]
    Busy,
    #[error("The directory cannot be reached right now. Try again in a moment.")]
    DirectoryUnavailable,
    /// No session, or it expired, or its user is gone or disabled.
    #[error("Your session has ended. Sign in again.")]
    SignedOut,
    /// A form that fails the anti-forgery checks (cookie, field, `Origin`).
    #[error("This form did not come from this console's own page. Nothing was changed.")]
    Forged,
    /// The signed-in user may not see or do this.
    #[error("There is nothing here for you: your account may not administer this.")]
    Forbidden,
    #[error("{0}")]
    Invalid(String),
    /// The act would disable, delete or demote the signed-in person themselves.
    #[error("{0}")]
    OwnAccount(String),
    #[error("Not found: {0}.")]
    NotFound(String),
    #[error("Already exists: {0}.")]
    Exists(String),
    /// The store failed (logged with the request id).
    #[error("Something went wrong. Try again.")]
    Store(#[from] StoreError),
    /// Something else failed (logged with the request id).
    #[error("Something went wrong. Try again.")]
    Internal(String),
}

impl From<AdminError> for ConsoleError {
    fn from(e: AdminError) -> Self {
        match e {
            AdminError::Invalid(m) => ConsoleError::Invalid(m),
            AdminError::NotFound(m) => ConsoleError::NotFound(m),
            AdminError::Exists(m) => ConsoleError::Exists(m),
            AdminError::Forbidden(_) => ConsoleError::Forbidden,
            AdminError::OwnAccount(m) => ConsoleError::OwnAccount(m),
            AdminError::Store(e) => ConsoleError::Store(e),
            other => ConsoleError::Internal(other.to_string()),
        }
    }
}

/// A session as its cookie carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub user_id: UserId,
    pub signed_in: UnixTime,
    pub seen: UnixTime,
    /// The user's console epoch when they signed in: the session is good
    /// only while it is still theirs.
    pub epoch: i64,
}

fn mac(key: &[u8; 32], payload: &str, csrf: &str) -> Vec<u8> {
    let mut mac = strongroom_core::mac::hmac_sha256(key);
    mac.update(b"strongroom/admin-console-session/v2\0");
    mac.update(payload.as_bytes());
    mac.update(b"\0");
    mac.update(csrf.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// The cookie value of `s`, bound to the browser's anti-forgery token.
pub fn seal(key: &[u8; 32], s: &Session, csrf: &str) -> String {
    let payload = format!("{}.{}.{}.{}", URL_SAFE_NO_PAD.encode(s.user_id.as_str()), s.signed_in.millis(), s.seen.millis(), s.epoch);
    format!("{payload}.{}", URL_SAFE_NO_PAD.encode(mac(key, &payload, csrf)))
}

/// The session a cookie value holds, if this server made it for this
/// browser and it has not ended at `now`.
pub fn open(key: &[u8; 32], value: &str, csrf: &str, now: UnixTime) -> Option<Session> {
    let (payload, sig) = value.rsplit_once('.')?;
    let sig = URL_SAFE_NO_PAD.decode(sig).ok()?;
    if !bool::from(mac(key, payload, csrf).as_slice().ct_eq(&sig)) {
        return None;
    }
    let mut parts = payload.split('.');
    let user = String::from_utf8(URL_SAFE_NO_PAD.decode(parts.next()?).ok()?).ok()?;
    let signed_in = UnixTime::from_millis(parts.next()?.parse().ok()?);
    let seen = UnixTime::from_millis(parts.next()?.parse().ok()?);
    let epoch = parts.next()?.parse().ok()?;
    if parts.next().is_some() || now >= seen.plus_secs(IDLE_SECS) || now >= signed_in.plus_secs(MAX_SECS) || now < signed_in {
        return None;
    }
    Some(Session { user_id: UserId::from_stored(user), signed_in, seen, epoch })
}

/// Every right the vault names (`Rights`' own names, from its `Display`),
/// in its order: the console never lists them itself.
pub fn right_flags() -> Vec<(String, Rights)> {
    Rights::from_bits(u32::MAX)
        .to_string()
        .split(',')
        .filter_map(|name| Rights::parse(name).filter(|r| *r != Rights::NONE).map(|r| (name.to_owned(), r)))
        .collect()
}

/// The right to manage a folder's permissions, if `Rights` has one (a name
/// such as `managepermissions` or `manage_permissions`).
pub fn manage_flag() -> Option<Rights> {
    right_flags()
        .into_iter()
        .find_map(|(name, r)| name.to_ascii_lowercase().replace(['_', '-', ' '], "").starts_with("manage").then_some(r))
}

/// Who is signed in and what they may do, read again for this request.
#[derive(Debug, Clone)]
pub struct Standing {
    pub user: User,
    pub session: Session,
    /// What they hold where (their own and their groups' rights: folder key, rights).
    pub held: Vec<(String, Rights)>,
}

impl Standing {
    pub fn master_admin(&self) -> bool {
        self.user.master_admin
    }

    /// Whether the console has anything for them: a Master Admin, or someone holding a right somewhere.
    pub fn has_any(&self) -> bool {
        self.master_admin() || self.held.iter().any(|(_, r)| *r != Rights::NONE)
    }

    /// What they hold on `folder` (inherited; every right for a Master Admin).
    pub fn on(&self, folder: &FolderPath) -> Rights {
        Permissions { master_admin: self.master_admin(), grants: self.held.clone() }.effective(folder)
    }

    /// Whether they may see `folder` and its permissions: a Master Admin, or holding a right there.
    pub fn may_see(&self, folder: &FolderPath) -> bool {
        self.on(folder) != Rights::NONE
    }

    /// Whether they may change the permissions of `folder`: a Master Admin,
    /// or holding ManagePermissions there (once `Rights` has that flag).
    pub fn may_manage(&self, folder: &FolderPath) -> bool {
        self.master_admin() || manage_flag().is_some_and(|m| self.on(folder).contains(m))
    }

    /// Whose events they may read (`None`: every event, a Master Admin).
    pub fn viewer(&self) -> Option<Viewer> {
        (!self.master_admin()).then(|| Viewer { identity: self.user.id.identity(), user_id: self.user.id.clone() })
    }

    /// The one implementation of each administrative act, its events naming
    /// this person, its changes of permissions re-checked against what they
    /// hold at the write.
    pub fn admin(&self, app: &App, origin: &Origin) -> Admin {
        Admin {
            store: app.store.clone(),
            clock: app.clock.clone(),
            rng: app.rng.clone(),
            keyring: app.keyring.clone(),
            actor: Actor { identity: self.user.id.identity(), source: origin.addr.clone(), request_id: origin.request_id.clone() },
            on_behalf_of: None,
        }
        .on_behalf_of(self.user.id.clone())
    }

    /// The session with this request as its last sight.
    pub fn touched(&self, now: UnixTime) -> Session {
        Session { seen: now, ..self.session.clone() }
    }
}

/// Signs in: the user, and their new session.
pub async fn sign_in(app: &App, username: &str, password: &Secret, origin: &Origin) -> Result<Session, ConsoleError> {
    let user = match login::authenticate(app, username, password, login::Surface::Console, origin).await {
        Ok(u) => u,
        Err(LoginError::Invalid) => return Err(ConsoleError::WrongLogin),
        Err(LoginError::Locked) => return Err(ConsoleError::Locked),
        Err(LoginError::Busy) => return Err(ConsoleError::Busy),
        Err(LoginError::Unavailable) => return Err(ConsoleError::DirectoryUnavailable),
        Err(LoginError::Store(e)) => return Err(e.into()),
    };
    let now = app.now();
    let epoch = app.store.console_epoch(user.id.clone()).await?;
    Ok(Session { user_id: user.id, signed_in: now, seen: now, epoch })
}

/// Signs out: ends every console session of the session's user (every
/// copy of the cookie, on every replica), with its event. A cookie whose
/// session has ended already (idle, or its epoch gone) ends nothing more.
pub async fn sign_out(app: &App, value: Option<&str>, csrf: &str, origin: &Origin) -> Result<(), ConsoleError> {
    let session = match standing(app, value, Some(csrf)).await {
        Ok(s) => s.session,
        Err(ConsoleError::SignedOut) => return Ok(()),
        Err(e) => return Err(e),
    };
    let event = app
        .event(strongroom_core::event::EventKind::ConsoleSessionsEnded, origin)
        .identity(session.user_id.identity())
        .object(session.user_id.as_str())
        .detail("signed out of the console");
    app.store.end_console_sessions(session.user_id, event).await?;
    Ok(())
}

/// The standing of the session in cookie `value`, read again now: the
/// user must still exist and be enabled, and the session's epoch must
/// still be theirs.
pub async fn standing(app: &App, value: Option<&str>, csrf: Option<&str>) -> Result<Standing, ConsoleError> {
    let (Some(value), Some(csrf)) = (value, csrf) else { return Err(ConsoleError::SignedOut) };
    let session = open(&app.keys.page, value, csrf, app.now()).ok_or(ConsoleError::SignedOut)?;
    let (user, epoch) = tokio::try_join!(app.store.user_by_id(session.user_id.clone()), app.store.console_epoch(session.user_id.clone()))?;
    let user = user.ok_or(ConsoleError::SignedOut)?;
    if user.disabled || epoch != session.epoch {
        return Err(ConsoleError::SignedOut);
    }
    let held = if user.master_admin { Vec::new() } else { app.store.rights_of(user.id.clone()).await? };
    Ok(Standing { user, session, held })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_bind_user_browser_and_time() {
        let key = [5u8; 32];
        let t0 = UnixTime::from_secs(1_800_000_000);
        let s = Session { user_id: UserId::from_stored("LDAP+dir:0b8f7f8e-1111".into()), signed_in: t0, seen: t0, epoch: 3 };
        let v = seal(&key, &s, "csrf-a");
        assert_eq!(open(&key, &v, "csrf-a", t0.plus_secs(60)), Some(s.clone()));
        assert_eq!(open(&key, &v, "csrf-b", t0), None, "another browser");
        assert_eq!(open(&[6u8; 32], &v, "csrf-a", t0), None, "another key");
        assert_eq!(open(&key, &v, "csrf-a", t0.plus_secs(IDLE_SECS)), None, "idle");
        let later = Session { seen: t0.plus_secs(MAX_SECS - 60), ..s.clone() };
        let v2 = seal(&key, &later, "csrf-a");
        assert!(open(&key, &v2, "csrf-a", t0.plus_secs(MAX_SECS - 1)).is_some());
        assert_eq!(open(&key, &v2, "csrf-a", t0.plus_secs(MAX_SECS)), None, "past the longest session");
        let other_epoch = seal(&key, &Session { epoch: 4, ..s.clone() }, "csrf-a");
        assert_eq!(open(&key, &other_epoch, "csrf-a", t0).map(|s| s.epoch), Some(4), "the epoch is carried as sealed");
        let (payload, mac) = v.rsplit_once('.').unwrap();
        let bumped = format!("{}4.{mac}", payload.strip_suffix('3').unwrap());
        assert_eq!(open(&key, &bumped, "csrf-a", t0), None, "an epoch changed in the cookie");
        let forged = v.replacen('.', "x.", 1);
        assert_eq!(open(&key, &forged, "csrf-a", t0), None, "another payload");
        for junk in ["", ".", "a.b.c.d", "....", "x.1.2.###", "x.1.2.3.4.###"] {
            assert_eq!(open(&key, junk, "csrf-a", t0), None, "{junk:?}");
        }
    }

    #[test]
    fn right_flags_come_from_rights_itself() {
        let flags = right_flags();
        assert!(flags.len() >= 5, "{flags:?}");
        assert!(flags.iter().any(|(n, r)| n == "read" && *r == Rights::READ));
        let all = flags.iter().fold(Rights::NONE, |a, (_, r)| a.union(*r));
        assert_eq!(all, Rights::from_bits(u32::MAX));
    }
}
