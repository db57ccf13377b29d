//! Password checks with guessing limits, shared by the approval page and
//! the password grant.
//!
//! An attempt takes its slots in the limiting counters (per name and
//! address, per address, and per name for addresses that never signed in
//! as it: [`throttle::password_slots`]) in one conditional write *before*
//! the password is hashed, so parallel guesses cannot outrun the count; a
//! right password whose counter locked while it was being checked is
//! refused too. The counters live in the database: every replica sees the
//! same numbers. A lock limits guessing; it does not stop grants that exist.

use strongroom_core::event::EventKind;
use strongroom_core::identity::{User, login_name};
use strongroom_core::password;
use strongroom_core::secret::Secret;
use strongroom_core::throttle::{self, Admission};

use super::Origin;
use crate::state::AppState;
use strongroom_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error("wrong user name or password")]
    Invalid,
    #[error("too many failed attempts")]
    Locked,
    /// Too many sign-ins of this name from this address (or from this
    /// address) are being checked at this moment; nothing is locked.
    #[error("too many sign-ins at once")]
    Busy,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Longest user name looked up; longer ones are wrong without a lookup.
const MAX_NAME: usize = 64;

/// Checks a user name and password. Disabled users and wrong passwords look
/// the same from outside, and an unknown user takes the same time as a
/// wrong password (a dummy hash is checked).
pub async fn authenticate(app: &AppState, name: &str, password: &Secret, origin: &Origin) -> Result<User, LoginError> {
    let mut name_key = login_name(name).to_lowercase();
    if name_key.len() > MAX_NAME {
        // No such user; counted under one key per address, not stored at any length.
        name_key.clear();
    }
    let ctx = if name_key.is_empty() { Default::default() } else { app.store.login_context(name_key.clone(), origin.addr.clone()).await? };
    // A machine identity (`jwt+…`, `cert+…`) never signs in with a password: it is checked like an unknown name.
    let mut ctx = ctx;
    ctx.user = ctx.user.filter(|(u, _)| !u.id.is_machine());
    let slots = throttle::password_slots(&name_key, &origin.addr, ctx.known_origin);
    match app.store.begin_attempt(slots.clone(), app.now()).await? {
        Admission::Admitted => {}
        Admission::Locked => return Err(LoginError::Locked),
        Admission::Busy => return Err(LoginError::Busy),
    }
    let phc = ctx.user.as_ref().map_or_else(|| password::dummy_hash().to_owned(), |(_, h)| h.clone());
    let ok = match app.hashing.verify(password.clone(), phc).await {
        Ok(ok) => ok,
        Err(e) => {
            // The slots stay taken: an attempt the server could not check counts.
            tracing::error!(error = %e, "password check failed");
            false
        }
    };
    match ctx.user {
        Some((user, _)) if ok && !user.disabled => {
            let remember = Some((name_key, origin.addr.clone()));
            if app.store.attempt_succeeded(slots, remember, app.now()).await? {
                Ok(user)
            } else {
                // A counter locked while this check ran: the lock holds.
                Err(LoginError::Locked)
            }
        }
        _ => {
            let event = app.event(EventKind::LoginFailed, origin).object(name_key).detail("wrong user name or password");
            // The failure that locks was checked like the others: it is
            // answered as wrong; the attempts after it are refused unchecked.
            app.metrics.lockouts(app.store.attempt_failed(slots, event).await?);
            Err(LoginError::Invalid)
        }
    }
}
