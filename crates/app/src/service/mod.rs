//! The service layer: load from the store, ask `core` what to do, write the
//! result back in one store call. Knows nothing of HTTP: the HTTP edge's
//! handlers (`strongroom_http`) call it, and the edge's `respond` turns its
//! errors into statuses and bodies.

pub mod approved;
pub mod bearer;
pub mod caller;
pub mod cert_policy;
pub mod certificates;
pub mod console;
pub mod credentials;
pub mod device;
pub mod groups;
pub mod identity;
pub mod log;
pub mod login;
pub mod machine;
pub mod oidc;
pub mod revocation;
pub mod token;
pub mod tree;
pub mod vault;

use std::borrow::Cow;

use strongroom_core::event::{Event, EventKind};
use strongroom_core::identity::UserId;
use strongroom_core::integration::Integration;
use strongroom_core::scope::{Scope, ScopeError};
use strongroom_store::StoreError;

use crate::App;

/// Who is asking, for events and per-address throttling.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Origin {
    /// The client's IP address as the socket saw it.
    pub addr: String,
    pub request_id: String,
}

impl Origin {
    /// The client's address, if the request had one.
    pub fn known_addr(&self) -> Option<String> {
        Some(self.addr.clone()).filter(|a| !a.is_empty())
    }
}

impl App {
    /// A new event at the current time, stamped with the request's origin.
    pub fn event(&self, kind: EventKind, origin: &Origin) -> Event {
        Event::new(kind, self.now()).origin(&origin.addr, &origin.request_id)
    }

    /// Whether `integration` admits `user`: listed, or a member now of a
    /// group it lists (the memberships are read only when it lists groups).
    pub async fn admits(&self, integration: &Integration, user: &UserId) -> Result<bool, StoreError> {
        if integration.allowed_users.permits(user) {
            return Ok(true);
        }
        if integration.allowed_groups.is_empty() {
            return Ok(false);
        }
        let groups: Vec<_> = self.store.groups_of(user.clone()).await?.into_iter().map(|g| g.id).collect();
        Ok(integration.admits(user, &groups))
    }
}

/// An error of the token endpoints, with the product's error codes
/// (RFC 6749 §5.2, RFC 8628 §3.5). The description is safe to show to the
/// client.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("invalid_request: {0}")]
    InvalidRequest(&'static str),
    #[error("invalid_client: {0}")]
    InvalidClient(&'static str),
    #[error("invalid_grant: {0}")]
    InvalidGrant(&'static str),
    #[error("invalid_scope: {0}")]
    InvalidScope(&'static str),
    /// A scope that is not one of the catalogue's: its description names
    /// the valid ones.
    #[error("invalid_scope: {0}")]
    UnknownScope(ScopeError),
    #[error("unauthorized_client: {0}")]
    UnauthorizedClient(&'static str),
    #[error("authorization_pending")]
    AuthorizationPending,
    #[error("slow_down")]
    SlowDown,
    #[error("access_denied")]
    AccessDenied,
    #[error("request body too large")]
    BodyTooLarge,
    /// Too many device authorizations started from one address.
    #[error("too many device authorizations")]
    TooManyStarts,
    /// A passing condition: try again in a moment (RFC 6749 §4.1.2.1
    /// `temporarily_unavailable`).
    #[error("temporarily_unavailable: {0}")]
    TemporarilyUnavailable(&'static str),
    /// The store failed. A transient failure ([`StoreError::is_transient`]:
    /// the database busy, unreachable or read-only for now) is
    /// `temporarily_unavailable`; any other is logged with the request id
    /// and the client sees `invalid_request` with a generic text.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Something that should not happen did; logged with the request id, and
    /// the client sees a generic text.
    #[error("internal error: {0}")]
    Internal(&'static str),
}

impl AuthError {
    pub fn code(&self) -> &'static str {
        match self {
            AuthError::Store(e) if e.is_transient() => "temporarily_unavailable",
            AuthError::InvalidRequest(_) | AuthError::BodyTooLarge | AuthError::Store(_) | AuthError::Internal(_) => "invalid_request",
            AuthError::InvalidClient(_) => "invalid_client",
            AuthError::InvalidGrant(_) => "invalid_grant",
            AuthError::InvalidScope(_) | AuthError::UnknownScope(_) => "invalid_scope",
            AuthError::UnauthorizedClient(_) => "unauthorized_client",
            AuthError::AuthorizationPending => "authorization_pending",
            AuthError::SlowDown | AuthError::TooManyStarts => "slow_down",
            AuthError::TemporarilyUnavailable(_) => "temporarily_unavailable",
            AuthError::AccessDenied => "access_denied",
        }
    }

    pub fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            AuthError::InvalidRequest(d)
            | AuthError::InvalidClient(d)
            | AuthError::InvalidGrant(d)
            | AuthError::InvalidScope(d)
            | AuthError::UnauthorizedClient(d)
            | AuthError::TemporarilyUnavailable(d) => d,
            AuthError::UnknownScope(e) => return Cow::Owned(format!("The scope is not valid: {e}.")),
            AuthError::AuthorizationPending => "The user has not yet approved or denied the request in the browser.",
            AuthError::SlowDown => "Polling too fast: wait the interval, now five seconds longer, between polls.",
            AuthError::AccessDenied => "The user denied the request.",
            AuthError::BodyTooLarge => "The request body is too large.",
            AuthError::TooManyStarts => "Too many device authorizations from this address; try again in a few minutes.",
            AuthError::Store(e) if e.is_transient() => UNAVAILABLE,
            AuthError::Store(_) | AuthError::Internal(_) => "The request could not be processed; try again.",
        })
    }
}

/// The scope a token request asks for: required, and one of the catalogue's.
pub(crate) fn requested_scope(text: Option<String>) -> Result<Scope, AuthError> {
    let text = text.filter(|s| !s.trim().is_empty()).ok_or(AuthError::InvalidScope(SCOPE_REQUIRED))?;
    Scope::parse(&text).map_err(|e| match e {
        ScopeError::Empty => AuthError::InvalidScope(SCOPE_REQUIRED),
        e => AuthError::UnknownScope(e),
    })
}

pub const SCOPE_REQUIRED: &str = "scope is required.";

/// What a client is told when the store failed for a moment.
pub const UNAVAILABLE: &str = "The service cannot reach its database at this moment; try again shortly.";

/// Descriptions shared by several paths. The product's own sentence for a bad
/// refresh token (seen on real servers; VenafiPS matches on it).
pub const REFRESH_INVALID: &str = "Grant has been revoked, has expired, or the refresh token is invalid";
pub const CLIENT_MISMATCH: &str =
    "The client_id value being requested with the refresh token does not match the client_id of the access token making the call";
pub const DEVICE_CODE_INVALID: &str = "The device_code is invalid, expired or already used.";
pub const UNKNOWN_CLIENT: &str = "client_id does not match the Client ID of an API integration.";
pub const CLIENT_ID_REQUIRED: &str = "client_id is required.";
