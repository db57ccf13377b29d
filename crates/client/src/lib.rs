//! A client for Strongroom and for the product whose interface it serves.
//!
//! - [`device`]: the device-authorization login, polling as RFC 8628 asks
//!   (interval, `slow_down`, `authorization_pending`, `access_denied`, expiry),
//!   cancellable.
//! - [`source::TokenSource`]: hands out a valid access token, refreshing ahead
//!   of expiry, one refresh at a time per cache file (also across processes),
//!   re-reading the cache before giving up on a rotated refresh token, and
//!   sending a refresh once more after a transport failure (the pure
//!   `retry_refresh`; never after an HTTP answer but a 503, see [`http`]).
//! - [`tokens`]: `Tokens` and the pure rule of when to refresh (`decide`).
//! - [`cache`]: one `0600` file per server and client id, written
//!   atomically, and a cross-process lock file.
//! - [`admin`]: typed administrative calls (`GET Log`, `Identity/*`, …),
//!   one function per product call, for `strongroom admin --server`.
//! - [`vault`]: typed calls for the SecretStore family, sending the
//!   `strongroom_proto::vedsdk` request types.
//! - [`credentials`]: typed calls for `Credentials/*` (credential objects
//!   read back by whoever holds Read on them).
//! - [`tls`]: the web PKI, a custom CA or a pinned certificate (SHA-256) for
//!   self-signed servers.
//! - [`http`]: one server and its requests; every failure classified into
//!   [`error::ClientError`] by the types in its chain of causes
//!   (`is_transport`: no whole HTTP answer arrived); a 503 is sent again
//!   after its `Retry-After` on the token endpoints and for reads.
//!
//! Depends on `strongroom-proto` only, never on `strongroom-core`.
//!
//! Tokens and device codes never reach a log line or `Debug` output.
#![forbid(unsafe_code)]

pub mod admin;
pub mod cache;
pub mod credentials;
pub mod device;
pub mod error;
pub mod http;
pub mod source;
pub mod tls;
pub mod tokens;
pub mod vault;

pub use error::ClientError;
pub use http::Server;
