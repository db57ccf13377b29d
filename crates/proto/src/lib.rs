//! Wire shapes of the `/vedauth` and `/vedsdk` interfaces, exactly as clients
//! see them. Shared by the server and the client library, which depends on
//! this crate only. Serde only: no logic beyond the wire's own formats.
//!
//! - [`vedauth`]: token, device and verify bodies, the RFC 6749 error body.
//! - [`vedsdk`]: SecretStore requests and responses, `Result` codes.
//! - [`time`]: `UnixTime`, the `Clock` trait, the date forms the wire uses.
//!
//! Field names, integer types and casing here are compatibility facts; the
//! comments cite the client or document that forces them.
#![forbid(unsafe_code)]

pub mod time;
pub mod vedauth;
pub mod vedsdk;

use serde::{Deserialize, Serialize};
use std::fmt;

/// A string that is a secret on the wire (token, code, password). It
/// serialises as the plain string but never shows in `Debug`.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SecretString(pub String);

impl SecretString {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for SecretString {
    fn from(s: String) -> Self {
        SecretString(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_serialise_plainly_but_never_debug() {
        let s = SecretString("tok==".into());
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"tok==\"");
        assert!(!format!("{s:?}").contains("tok"));
    }
}
