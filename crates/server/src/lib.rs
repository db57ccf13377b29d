//! Strongroom's server: the HTTP edge (`/vedauth`, `/vedsdk`, the approval
//! page), TLS, configuration, start-up and shutdown.
//!
//! Architecture invariant: only [`http::respond`] chooses HTTP statuses; the
//! [`service`] layer knows nothing of HTTP.
#![forbid(unsafe_code)]

pub mod admin;
pub mod config;
pub mod first_bytes;
pub mod hashing;
pub mod http;
pub mod keys;
pub mod metrics;
pub mod serve;
pub mod service;
pub mod state;
pub mod tls;

pub use config::Config;
pub use state::AppState;
