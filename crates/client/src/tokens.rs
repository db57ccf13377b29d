//! A grant's tokens as the client keeps them, and when to refresh.

use serde::{Deserialize, Serialize};

use strongroom_proto::SecretString;
use strongroom_proto::time::UnixTime;
use strongroom_proto::vedauth::TokenResponse;

/// Tokens of one grant. `Debug` shows no token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub access_token: SecretString,
    pub refresh_token: Option<SecretString>,
    /// Epoch seconds the access token expires.
    pub expires: i64,
    /// Epoch seconds the grant ends (0: never).
    pub refresh_until: i64,
    pub scope: String,
    pub identity: String,
    /// Epoch seconds the access token was received.
    pub obtained_at: i64,
}

impl Tokens {
    pub fn from_response(r: TokenResponse, now: UnixTime) -> Tokens {
        // Trust the server's `expires_in` over its clock: `expires` may be
        // skewed against ours.
        let expires = now.secs() + r.expires_in.max(0);
        Tokens {
            access_token: r.access_token,
            refresh_token: r.refresh_token,
            expires,
            refresh_until: r.refresh_until,
            scope: r.scope,
            identity: r.identity,
            obtained_at: now.secs(),
        }
    }

    /// Seconds before expiry at which to refresh: a tenth of the lifetime,
    /// between 1 and 60 seconds.
    pub fn margin(&self) -> i64 {
        ((self.expires - self.obtained_at) / 10).clamp(1, 60)
    }

    /// True when the access token is expired or about to be.
    pub fn needs_refresh(&self, now: UnixTime) -> bool {
        now.secs() + self.margin() >= self.expires
    }

    /// True when the grant can no longer be refreshed.
    pub fn grant_ended(&self, now: UnixTime) -> bool {
        self.refresh_until > 0 && now.secs() >= self.refresh_until
    }
}

/// What to do for an access token, given the tokens in memory and on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// These tokens are good.
    Use(Tokens),
    /// Refresh with these tokens' refresh token.
    Refresh(Tokens),
    /// No way to get a token without a new login.
    LoginRequired(&'static str),
}

/// Chooses between the tokens this process holds and those in the cache
/// (another process may have refreshed, and so rotated the refresh token).
pub fn decide(memory: Option<&Tokens>, disk: Option<&Tokens>, now: UnixTime) -> Decision {
    // The newer of the two: the one obtained later.
    let best = match (memory, disk) {
        (Some(m), Some(d)) => Some(if d.obtained_at >= m.obtained_at { d } else { m }),
        (m, d) => m.or(d),
    };
    let Some(t) = best else { return Decision::LoginRequired("no tokens: never logged in, or logged out") };
    if !t.needs_refresh(now) {
        return Decision::Use(t.clone());
    }
    if t.grant_ended(now) {
        return Decision::LoginRequired("the grant has ended (refresh_until passed)");
    }
    if t.refresh_token.is_none() {
        return Decision::LoginRequired("the access token expired and the grant is not refreshable");
    }
    Decision::Refresh(t.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(obtained: i64, lifetime: i64, refresh_until: i64, rt: &str) -> Tokens {
        Tokens {
            access_token: SecretString(format!("at-{rt}")),
            refresh_token: Some(SecretString(rt.into())),
            expires: obtained + lifetime,
            refresh_until,
            scope: "restricted".into(),
            identity: "local:{x}".into(),
            obtained_at: obtained,
        }
    }

    #[test]
    fn refreshes_ahead_of_expiry() {
        let t = tokens(1000, 3600, 100_000, "a");
        assert_eq!(t.margin(), 60);
        assert!(!t.needs_refresh(UnixTime::from_secs(1000 + 3539)));
        assert!(t.needs_refresh(UnixTime::from_secs(1000 + 3540)));
        let short = tokens(1000, 20, 100_000, "a");
        assert_eq!(short.margin(), 2);
        assert!(!short.needs_refresh(UnixTime::from_secs(1017)));
        assert!(short.needs_refresh(UnixTime::from_secs(1018)));
    }

    #[test]
    fn decisions() {
        let now = UnixTime::from_secs(5000);
        let fresh = tokens(4990, 3600, 100_000, "fresh");
        let stale = tokens(1000, 3600, 100_000, "stale");
        let ended = tokens(1000, 60, 4000, "ended");
        assert_eq!(decide(Some(&fresh), None, now), Decision::Use(fresh.clone()));
        assert_eq!(decide(Some(&stale), None, now), Decision::Refresh(stale.clone()));
        // Another process refreshed: the disk copy is newer and wins.
        assert_eq!(decide(Some(&stale), Some(&fresh), now), Decision::Use(fresh.clone()));
        assert_eq!(decide(None, Some(&stale), now), Decision::Refresh(stale.clone()));
        assert!(matches!(decide(Some(&ended), None, now), Decision::LoginRequired(_)));
        assert!(matches!(decide(None, None, now), Decision::LoginRequired(_)));
        let mut no_rt = stale.clone();
        no_rt.refresh_token = None;
        assert!(matches!(decide(Some(&no_rt), None, now), Decision::LoginRequired(_)));
        assert!(!format!("{fresh:?}").contains("at-fresh"), "Debug hides tokens");
    }

    #[test]
    fn expiry_comes_from_expires_in() {
        let r = TokenResponse {
            access_token: SecretString("a".into()),
            refresh_token: None,
            expires_in: 600,
            expires: 1, // a server clock far off
            token_type: "Bearer".into(),
            scope: "s".into(),
            refresh_until: 99_999,
            identity: "i".into(),
            state: None,
        };
        let t = Tokens::from_response(r, UnixTime::from_secs(10_000));
        assert_eq!((t.expires, t.obtained_at), (10_600, 10_000));
    }
}
