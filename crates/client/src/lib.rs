//! A client for Strongroom and for the product whose interface it serves.
//!
//! - [`device`]: the device-authorization login, polling as RFC 8628 asks
//!   (interval, `slow_down`, `authorization_pending`, `access_denied`, expiry),
//!   cancellable.
//! - [`source::TokenSource`]: hands out a valid access token, refreshing ahead
//!   of expiry, one refresh at a time per cache file (also across processes),
//!   re-reading the cache before giving up on a rotated refresh token, and
//!   sending a refresh once more after a transport failure (never after an
//!   HTTP answer).
//! - [`cache`]: one `0600` file per server and client id, written atomically.
//! - [`vault`]: typed calls for the SecretStore family, sending the
//!   `strongroom_proto::vedsdk` request types.
//! - [`tls`]: a custom CA or a pinned certificate for self-signed servers.
//!
//! Tokens and device codes never reach a log line or `Debug` output.
#![forbid(unsafe_code)]

pub mod cache;
pub mod device;
pub mod error;
pub mod http;
pub mod source;
pub mod tls;
pub mod tokens;
pub mod vault;

pub use error::ClientError;
pub use http::Server;
