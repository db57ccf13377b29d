//! Strongroom's runtime: configuration, start-up and shutdown, the
//! listeners (the main one, the certificate grant's, the metrics'), TLS and
//! the janitor. It composes the HTTP edge (`strongroom_http`) over the
//! application (`strongroom_app`), and nothing below it depends on it.
//!
//! - [`config`] (`strongroom.toml`, `STRONGROOM_*`, flags; one settings
//!   table, `config::SETTINGS`, makes the man page and `config check`);
//! - [`serve`]: start-up (listeners bound before anything is created),
//!   shutdown, the janitor (`serve::upkeep`); its errors (`error`);
//! - `listener`: a listener serving an application (TLS, read timeouts,
//!   graceful shutdown, the TLS pair read again);
//! - `certificate`: the certificate grant's listener (client certificates
//!   verified by rustls against the certificate mappings' CAs and CRLs, with
//!   the verifier and the matching of `strongroom_idp::certificate`);
//! - [`tls`] (the serving certificate; SIGHUP reloads it), `first_bytes`
//!   (a deadline for a connection's first bytes; HTTP/2's preface refused).
#![forbid(unsafe_code)]

mod certificate;
pub mod config;
mod error;
mod first_bytes;
mod listener;
pub mod serve;
pub mod tls;

pub use config::Config;
