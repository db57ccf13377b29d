//! API integrations (registered client applications) and token lifetimes.

use crate::identity::{GroupId, UserId};
use crate::scope::Scope;

/// The server-wide defaults of the "remote tree" settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenSettings {
    /// Seconds an access token is valid.
    pub access_validity: i64,
    /// Seconds a grant is valid: `refresh_until` is its issue time plus this.
    pub grant_validity: i64,
    /// Whether refresh tokens are issued.
    pub refreshable: bool,
    /// Seconds a device code is valid.
    pub device_code_validity: i64,
    /// Minimum seconds between two polls of one device code.
    pub poll_interval: i64,
    /// Seconds after a rotation during which the spent refresh token (or the
    /// redeemed device code) may be presented again to recover an answer that
    /// was lost, as long as the pair it produced was never used. 0 is strict.
    pub retry_window: i64,
}

/// The default retry window: long enough for a client's timeout and one
/// retry, short enough that a stolen token is of little use.
pub const DEFAULT_RETRY_WINDOW: i64 = 30;

impl Default for TokenSettings {
    fn default() -> Self {
        TokenSettings {
            access_validity: 3600,
            grant_validity: 90 * 86_400,
            refreshable: true,
            device_code_validity: 300,
            poll_interval: 5,
            retry_window: DEFAULT_RETRY_WINDOW,
        }
    }
}

/// Per-integration overrides of [`TokenSettings`]; `None` keeps the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenOverrides {
    pub access_validity: Option<i64>,
    pub grant_validity: Option<i64>,
    pub refreshable: Option<bool>,
    pub device_code_validity: Option<i64>,
    pub poll_interval: Option<i64>,
    pub retry_window: Option<i64>,
}

impl TokenOverrides {
    pub fn apply(&self, d: TokenSettings) -> TokenSettings {
        TokenSettings {
            access_validity: self.access_validity.unwrap_or(d.access_validity),
            grant_validity: self.grant_validity.unwrap_or(d.grant_validity),
            refreshable: self.refreshable.unwrap_or(d.refreshable),
            device_code_validity: self.device_code_validity.unwrap_or(d.device_code_validity),
            poll_interval: self.poll_interval.unwrap_or(d.poll_interval),
            retry_window: self.retry_window.unwrap_or(d.retry_window),
        }
    }
}

/// Which grant types an integration accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrantTypes {
    /// Browser-based device authorization (on by default).
    pub device: bool,
    /// `Authorize/OAuth` with user name and password (off by default).
    pub password: bool,
}

impl Default for GrantTypes {
    fn default() -> Self {
        GrantTypes { device: true, password: false }
    }
}

/// Who may obtain grants through an integration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllowedUsers {
    Everyone,
    Only(Vec<UserId>),
}

impl AllowedUsers {
    pub fn permits(&self, user: &UserId) -> bool {
        match self {
            AllowedUsers::Everyone => true,
            AllowedUsers::Only(list) => list.contains(user),
        }
    }
}

/// A registered client application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Integration {
    /// Case-sensitive, compared exactly.
    pub client_id: String,
    pub name: String,
    pub max_scope: Scope,
    pub allowed_users: AllowedUsers,
    /// Groups whose members are allowed too (besides `allowed_users`).
    pub allowed_groups: Vec<GroupId>,
    pub grant_types: GrantTypes,
    pub overrides: TokenOverrides,
    pub disabled: bool,
    /// Moves on by one with every change of the integration: a change is
    /// written only if the row is still at the version it was read at.
    pub version: i64,
}

impl Integration {
    /// Whether `user`, a member of `groups`, may get grants here: everyone
    /// may, or the user is listed, or one of their groups is.
    pub fn admits(&self, user: &UserId, groups: &[GroupId]) -> bool {
        self.allowed_users.permits(user) || groups.iter().any(|g| self.allowed_groups.contains(g))
    }

    pub fn settings(&self, defaults: TokenSettings) -> TokenSettings {
        self.overrides.apply(defaults)
    }
}

/// Client IDs: 1 to 128 printable ASCII characters without spaces.
pub fn valid_client_id(id: &str) -> bool {
    (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic())
}

/// A token lifetime outside its bounds: the setting's name and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}: {message}")]
pub struct OutOfBounds {
    pub name: &'static str,
    pub message: String,
}

/// Bounds on token lifetimes, the server's defaults' and each integration's
/// overrides' alike.
pub fn check_tokens(t: &TokenSettings) -> Result<(), OutOfBounds> {
    let within = |name: &'static str, v: i64, lo: i64, hi: i64| {
        if (lo..=hi).contains(&v) { Ok(()) } else { Err(OutOfBounds { name, message: format!("{v} is outside {lo}..={hi} seconds") }) }
    };
    within("access_validity", t.access_validity, 1, 10 * 365 * 86_400)?;
    within("grant_validity", t.grant_validity, 1, 100 * 365 * 86_400)?;
    within("device_code_validity", t.device_code_validity, 10, 86_400)?;
    within("poll_interval", t.poll_interval, 1, 300)?;
    within("retry_window", t.retry_window, 0, 300)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_only_what_they_name() {
        let o = TokenOverrides { access_validity: Some(60), refreshable: Some(false), ..Default::default() };
        let s = o.apply(TokenSettings::default());
        assert_eq!(s.access_validity, 60);
        assert!(!s.refreshable);
        assert_eq!(s.grant_validity, 90 * 86_400);
        assert_eq!(s.poll_interval, 5);
    }

    #[test]
    fn client_ids() {
        assert!(valid_client_id("vcert-sdk"));
        assert!(!valid_client_id(""));
        assert!(!valid_client_id("a b"));
    }
}
