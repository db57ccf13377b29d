//! Strongroom's server: the HTTP edge (`/vedauth`, `/vedsdk`, the approval
//! page, the console), TLS, configuration, start-up and shutdown, over the
//! application (`strongroom_app`: the services and the administrative acts,
//! which know no HTTP).
//!
//! Architecture invariant: only [`http::respond`] chooses HTTP statuses.
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
//! - [`certificate`]: the certificate grant's listener (client certificates
//!   verified by rustls against the certificate mappings' CAs and CRLs, with
//!   the verifier and the matching of `strongroom_idp::certificate`).
//! - [`metrics`]: the Prometheus registry: requests by route template, the
//!   application's outcomes (it is the application's `Observer`), the
//!   store's batches and failures by kind (its
//!   [`strongroom_store::StoreObserver`]), pool and memory gauges read at
//!   scrape.
//! - [`config`] (`strongroom.toml`, `STRONGROOM_*`, flags), [`tls`] (the
//!   serving certificate), [`first_bytes`] (a deadline for a connection's
//!   first bytes; HTTP/2's preface refused), [`serve`] (start-up, shutdown,
//!   the janitor), [`state`] (`HttpState`: the application and the edge's
//!   settings).
#![forbid(unsafe_code)]

pub mod certificate;
pub mod config;
pub mod first_bytes;
pub mod http;
pub mod metrics;
pub mod serve;
pub mod state;
pub mod tls;

pub use config::Config;
pub use state::HttpState;
