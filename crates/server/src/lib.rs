//! Strongroom's server: the HTTP edge (`/vedauth`, `/vedsdk`, the approval
//! page), TLS, configuration, start-up and shutdown.
//!
//! Architecture invariant: only [`http::respond`] chooses HTTP statuses; the
//! [`service`] layer knows nothing of HTTP.
//!
//! - [`http`]: the router, middleware, extractors, handlers and the approval
//!   page; `http::secretstore` for the vault, `http::log` for `GET /vedsdk/Log`;
//!   `http::sdk_body` reads `/vedsdk` bodies (case-insensitive keys, numeric
//!   strings, integers written `32.0`; a test in `http::secretstore` reads
//!   every `proto::vedsdk` request type back through it); `http::respond`,
//!   the only place that picks statuses (a store failure of a passing kind is
//!   503 `temporarily_unavailable` with `Retry-After`); `http::openapi`, the
//!   OpenAPI 3.1 document served at `/openapi.json`, gathered from the
//!   handlers' `#[utoipa::path]` attributes with the shared responses (among
//!   them `Timeout`, the timeout layer's 408, and `AuthUnavailable`);
//!   `http::fuzzing`, the fuzz targets' entry points (not an API).
//! - [`service`]: load, ask `core`, write: the token flows (`service::token`,
//!   `service::device`, `service::login`, `service::bearer`), the vault
//!   (`service::vault`), whose key ring is the `strongroom-keyring` crate
//!   (named keys `Driver:Name`, `Software:Default` from the master key,
//!   PKCS#11 keys in a token).
//! - [`certificate`]: the certificate grant's listener (client certificates
//!   verified by rustls against the certificate mappings' CAs and CRLs, with
//!   the verifier and the matching of `strongroom_idp::certificate`);
//!   `service::machine` has both machine grants. Directories, OpenID
//!   providers and JWT issuers' keys are `strongroom_idp`'s.
//! - [`metrics`]: the Prometheus registry: requests by route template, token
//!   counters counted once the store has committed, the store's batches and
//!   failures by kind (its [`strongroom_store::StoreObserver`]), pool and
//!   memory gauges read at scrape.
//! - [`config`] (`strongroom.toml`, `STRONGROOM_*`, flags), `strongroom_keyring::keys` (the
//!   master key and the keys derived from it; `keys::check_private`),
//!   [`hashing`] (password checks on dedicated threads with reusable argon2
//!   buffers), [`tls`] (the serving certificate), [`first_bytes`] (a
//!   deadline for a connection's first bytes; HTTP/2's preface refused),
//!   [`serve`] (start-up, shutdown, the janitor), [`state`] (`AppState`, the
//!   system clock and OS randomness: their only readers).
//! - [`admin`]: what `strongroom admin` does, on the store directly;
//!   `admin::migrate` copies a store into an empty one and checks counts and
//!   the chain; [`archive`], the event log's archive (`admin events archive`
//!   and the retention setting) and the verification of archive files.
#![forbid(unsafe_code)]

pub mod admin;
pub mod archive;
pub mod certificate;
pub mod config;
pub mod first_bytes;
pub mod hashing;
pub mod http;
pub mod metrics;
pub mod serve;
pub mod service;
pub mod state;
pub mod tls;

pub use config::Config;
pub use state::AppState;
