//! Wire shapes of the `/vedauth` and `/vedsdk` interfaces, exactly as clients
//! see them. Shared by the server and the client library, which depends on
//! this crate only. No logic beyond the wire's own formats and their readers.
//!
//! - [`vedauth`]: token, device and verify bodies, the RFC 6749 error body.
//! - [`vedsdk`]: SecretStore requests and responses, `Result` codes.
//! - [`certificates`]: the `Certificates/*`, `Metadata/*`,
//!   `Workflow/Ticket/*` and certificate policy bodies.
//! - [`config`], [`permissions`]: the `\VED` tree's `Config/*` and
//!   `Permissions/Object/…` bodies.
//! - [`groups`]: the group and password calls of `Identity/*` and
//!   VenafiPS's `Teams/*`; [`oauth`]: API integrations, their rules and
//!   grants (`oauth/*`), with the product's `OAuthResult` codes.
//! - [`credentials`]: the `Credentials/*` bodies.
//! - [`time`]: `UnixTime`, the `Clock` trait, the date forms the wire uses.
//! - [`read`]: the readers of request bodies and credentials headers (the
//!   `/vedsdk` body's lenient keys and numbers, form-or-JSON, `Bearer` and
//!   `Basic`), which the fuzz targets drive.
//!
//! And, because the client library may depend on nothing else of ours, the
//! few helpers every crate needs, each written once: [`hex`] (strict
//! reading), [`files`] (files and directories only their owner may read),
//! and with the `tls` feature [`tls::Verifier`], the one shape of the
//! client's and the store's own certificate checks.
//!
//! With the `openapi` feature (the server turns it on, the client does not)
//! every wire type derives utoipa's `ToSchema`. [`SecretString`] carries
//! secret fields.
//!
//! Field names, integer types and casing here are compatibility facts; the
//! comments cite the client or document that forces them.
#![forbid(unsafe_code)]

pub mod certificates;
pub mod config;
pub mod credentials;
pub mod files;
pub mod groups;
pub mod hex;
pub mod oauth;
pub mod permissions;
pub mod read;
pub mod time;
#[cfg(feature = "tls")]
pub mod tls;
pub mod vedauth;
pub mod vedsdk;

use serde::{Deserialize, Serialize};
use std::fmt;

/// A string that is a secret on the wire (token, code, password). It
/// serialises as the plain string but never shows in `Debug`, has no
/// `Display`, and `==` compares in constant time (`subtle`), so a wire type
/// compared by mistake leaks no prefix length through timing.
#[derive(Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct SecretString(pub String);

impl SecretString {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl PartialEq for SecretString {
    fn eq(&self, other: &Self) -> bool {
        use subtle::ConstantTimeEq as _;
        // Lengths are not secret (tokens have one fixed length); contents are.
        self.0.len() == other.0.len() && bool::from(self.0.as_bytes().ct_eq(other.0.as_bytes()))
    }
}

impl Eq for SecretString {}

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

    #[test]
    fn equality_is_by_content() {
        let s = SecretString("tok==".into());
        assert_eq!(s, SecretString("tok==".into()));
        assert_ne!(s, SecretString("tok=!".into()));
        assert_ne!(s, SecretString("tok=".into()));
        assert_ne!(s, SecretString(String::new()));
    }
}
