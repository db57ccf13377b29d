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
//!
//! With a directory (`[ldap]`), `corp\alice`, `LDAP+corp:alice` (the
//! product's prefixed name), and a bare name that no local user has, are
//! the directory's: the same counters (keyed by the prefixed name) are taken
//! first, then the directory checks the password (`service::directory`),
//! and a person it vouches for is stored as a user of id `LDAP+corp:<uuid>`
//! with their directory groups. `local:alice` and a bare local name never
//! reach the directory. A directory out of reach answers
//! [`LoginError::Unavailable`] within its timeout; the attempt neither counts
//! nor locks.

use strongroom_core::event::{Event, EventKind};
use strongroom_core::identity::{Group, GroupId, User, UserId, login_name, valid_user_name};
use strongroom_core::password;
use strongroom_core::secret::Secret;
use strongroom_core::throttle::{self, Admission, Slot};
use strongroom_core::time::UnixTime;

use super::Origin;
use crate::App;
use strongroom_idp::directory::{Directory, DirectoryError, DirectoryPerson, directory_login};
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
    /// The directory could not check the password now (out of reach, too
    /// slow, refusing the service account); logged with the reason.
    #[error("the directory cannot be reached")]
    Unavailable,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Where a person signs in with their password: the `detail` of their
/// `login.succeeded` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    ApprovalPage,
    Console,
    PasswordGrant,
    /// The page of the applications a person approved.
    ApprovedApplications,
    /// `Identity/SetPassword` checking a user's old password: not a
    /// sign-in, so neither an event nor a last sign-in is written.
    OldPasswordCheck,
}

impl Surface {
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::ApprovalPage => "approval page",
            Surface::Console => "console",
            Surface::PasswordGrant => "password grant",
            Surface::ApprovedApplications => "approved applications",
            Surface::OldPasswordCheck => "old password check",
        }
    }
}

/// The `login.succeeded` event of `user` signing in on `surface`, with
/// the stamp of their last sign-in: what a successful attempt writes.
fn signed_in(app: &App, user: &User, surface: Surface, origin: &Origin) -> Option<(UserId, Event)> {
    if surface == Surface::OldPasswordCheck {
        return None;
    }
    let event =
        app.event(EventKind::LoginSucceeded, origin).identity(user.id.identity()).object(user.name.as_str()).detail(surface.as_str());
    Some((user.id.clone(), event))
}

/// Longest user name looked up; longer ones are wrong without a lookup.
const MAX_NAME: usize = 64;

/// Checks a user name and password. Disabled users and wrong passwords look
/// the same from outside, and an unknown user takes the same time as a
/// wrong password (a dummy hash is checked).
pub async fn authenticate(app: &App, name: &str, password: &Secret, surface: Surface, origin: &Origin) -> Result<User, LoginError> {
    if let Some(dir) = &app.directory {
        if let Some(login) = directory_login(name, &dir.config) {
            return authenticate_directory(app, dir, login, password, surface, origin).await;
        }
        let bare = name.trim();
        let local_prefix = bare.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("local:"));
        if !local_prefix && valid_user_name(bare) && app.store.user_by_name(bare.to_lowercase()).await?.is_none() {
            return authenticate_directory(app, dir, bare, password, surface, origin).await;
        }
    }
    let mut name_key = login_name(name).to_lowercase();
    // A directory user's stored name (`ldap+corp:alice`) is no local name:
    // it never meets the local password path.
    if name_key.len() > MAX_NAME || name_key.contains(':') {
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
            if app.store.attempt_succeeded(slots, remember, signed_in(app, &user, surface, origin), app.now()).await? {
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
            app.observer.lockouts(app.store.attempt_failed(slots, event).await?);
            Err(LoginError::Invalid)
        }
    }
}

/// A sign-in through the directory: `login` as the person typed it (without
/// the domain or prefix).
async fn authenticate_directory(
    app: &App,
    dir: &Directory,
    login: &str,
    password: &Secret,
    surface: Surface,
    origin: &Origin,
) -> Result<User, LoginError> {
    let prefix = dir.config.prefix();
    let mut name_key = format!("{prefix}:{login}").to_lowercase();
    if login.trim().is_empty() || name_key.len() > 2 * MAX_NAME {
        name_key.clear();
    }
    let ctx = if name_key.is_empty() { Default::default() } else { app.store.login_context(name_key.clone(), origin.addr.clone()).await? };
    let slots = throttle::password_slots(&name_key, &origin.addr, ctx.known_origin);
    match app.store.begin_attempt(slots.clone(), app.now()).await? {
        Admission::Admitted => {}
        Admission::Locked => return Err(LoginError::Locked),
        Admission::Busy => return Err(LoginError::Busy),
    }
    let checked = if name_key.is_empty() { Err(DirectoryError::Invalid) } else { dir.authenticate(login.trim(), password).await };
    let why = match checked {
        Ok(person) => {
            let user = sync(app, dir, &person, origin).await?;
            if !user.disabled {
                let remember = Some((name_key, origin.addr.clone()));
                let stamp = signed_in(app, &user, surface, origin);
                return if app.store.attempt_succeeded(slots, remember, stamp, app.now()).await? {
                    Ok(user)
                } else {
                    Err(LoginError::Locked)
                };
            }
            "the account is disabled here"
        }
        Err(DirectoryError::Invalid) => "wrong user name or password",
        Err(DirectoryError::Disabled) => "the directory account is disabled or locked",
        Err(e @ (DirectoryError::Unavailable(_) | DirectoryError::Config(_))) => {
            tracing::warn!(error = %e, directory = %dir.config.url, "directory sign-in failed: the directory cannot be reached");
            // Not the person's failure: each slot given back, uncounted, and no
            // count reset (an outage must not wipe the guesses counted so far).
            let back = slots.into_iter().map(|s| Slot { reset_on_success: false, ..s }).collect();
            app.store.attempt_succeeded(back, None, None, app.now()).await?;
            return Err(LoginError::Unavailable);
        }
    };
    let event = app.event(EventKind::LoginFailed, origin).object(name_key).detail(why);
    app.observer.lockouts(app.store.attempt_failed(slots, event).await?);
    Err(LoginError::Invalid)
}

/// Stores a person as the directory describes them now: their user row,
/// their directory groups and memberships. The user as stored (an
/// administrator may have disabled them here).
pub async fn sync(app: &App, dir: &Directory, person: &DirectoryPerson, origin: &Origin) -> Result<User, StoreError> {
    let groups = person.groups.iter().map(|g| g.name.as_str());
    sync_person(app, dir.config.prefix(), &person.id, &person.name, groups, origin, app.now()).await
}

/// Stores a person an identity provider (`prefix`: a directory's, or an
/// OpenID provider's) vouches for at `now`: the user row of id
/// `prefix:stable_id`, named `prefix:name`, signed in now, and their groups
/// of that provider set to exactly `groups` (by name), with one
/// `user.directory_synced` event. The user as stored.
pub async fn sync_person<'a>(
    app: &App,
    prefix: String,
    stable_id: &str,
    name: &str,
    groups: impl Iterator<Item = &'a str>,
    origin: &Origin,
    now: UnixTime,
) -> Result<User, StoreError> {
    let user = User {
        id: UserId::directory(&prefix, stable_id),
        name: format!("{prefix}:{name}"),
        disabled: false,
        master_admin: false,
        created_at: now,
        signed_in_at: Some(now),
    };
    let groups = groups.map(|g| Group { id: GroupId::generate(&*app.rng), name: format!("{prefix}:{g}"), created_at: now }).collect();
    let event = app.event(EventKind::DirectorySynced, origin).identity(user.id.identity()).object(user.name.as_str());
    app.store.sync_directory_user(user, prefix, groups, event).await
}
