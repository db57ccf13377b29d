//! Password checks with throttling, shared by the approval page and the
//! password grant.
//!
//! Failures are counted per user name and per client address in the
//! database (every replica sees the same counts). A locked name or address
//! is refused before any password is hashed; a locked account gets no
//! tokens (checked again at redemption and refresh).

use strongroom_core::event::EventKind;
use strongroom_core::identity::{User, login_name};
use strongroom_core::password;
use strongroom_core::secret::Secret;
use strongroom_core::throttle::Rule;

use super::Origin;
use crate::state::AppState;
use strongroom_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error("wrong user name or password")]
    Invalid,
    #[error("too many failed attempts")]
    Locked,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The throttle key of a user name's password failures.
pub fn user_key(name: &str) -> String {
    strongroom_core::throttle::user_password_key(name)
}

pub fn addr_key(addr: &str) -> String {
    format!("pw:addr:{addr}")
}

/// Whether the account `name` is locked out now.
pub async fn is_locked(app: &AppState, name: &str) -> Result<bool, StoreError> {
    let c = app.store.counters(vec![user_key(name)]).await?;
    Ok(c.iter().any(|c| c.is_locked(app.now())))
}

/// Checks a user name and password. Disabled users and wrong passwords look
/// the same from outside.
pub async fn authenticate(app: &AppState, name: &str, password: &Secret, origin: &Origin) -> Result<User, LoginError> {
    let name = login_name(name).to_owned();
    let keys = vec![user_key(&name), addr_key(&origin.addr)];
    let now = app.now();
    if app.store.counters(keys.clone()).await?.iter().any(|c| c.is_locked(now)) {
        return Err(LoginError::Locked);
    }
    let found = if name.is_empty() || name.len() > 64 { None } else { app.store.user_by_name(name.clone()).await? };
    let phc = found.as_ref().map_or_else(|| password::dummy_hash().to_owned(), |(_, h)| h.clone());
    let ok = app.hashing.verify(password.clone(), phc).await.map_err(|_| StoreError::Backend("password check failed".into()))?;
    match found {
        Some((user, _)) if ok && !user.disabled => {
            app.store.clear_counters(vec![keys[0].clone()]).await?;
            Ok(user)
        }
        _ => {
            let event = app.event(EventKind::LoginFailed, origin).object(name.clone()).detail("wrong user name or password");
            let counters = app
                .store
                .record_failure(vec![(keys[0].clone(), Rule::USER_PASSWORD), (keys[1].clone(), Rule::ADDRESS_PASSWORD)], event)
                .await?;
            // No key was locked before (checked above): every locked one is a new lockout.
            let locked = counters.iter().filter(|c| c.is_locked(now)).count();
            app.metrics.lockouts(locked);
            if locked > 0 { Err(LoginError::Locked) } else { Err(LoginError::Invalid) }
        }
    }
}
