//! Strongroom's application layer: what a request means, below any wire.
//!
//! - [`service`]: load, ask `core`, write: the token flows
//!   (`service::token`, `service::device`, `service::login`,
//!   `service::bearer`, `service::revocation`, `service::approved`), the
//!   machine grants (`service::machine`), the vault (`service::vault`), the
//!   `\VED` tree, groups and identities (`service::tree`, `service::groups`,
//!   `service::identity`), credential objects (`service::credentials`),
//!   certificates and folder certificate policies (`service::certificates`,
//!   `service::cert_policy`), clients' events (`service::log`), the console's
//!   sessions (`service::console`) and the approval page's side of an OpenID
//!   sign-in (`service::oidc`); who calls the API (`service::caller`). Its
//!   errors are typed; the HTTP edge alone turns them into statuses.
//! - [`admin`]: each administrative act once, its event naming who acted
//!   ([`admin::Admin::acting_as`]), used by the product's calls, the console
//!   and the admin CLI alike.
//! - [`hashing`]: password checks on dedicated threads; [`keygen`]: the
//!   private keys of central certificate requests, within bounds;
//!   [`archive`]: the event archive.
//! - [`pki`]: X.509, the `strongroom_pki` crate (pure: no store, no key
//!   ring, no I/O); a token's CA key signs through the key ring's
//!   `TokenCaSigner`.
//! - [`App`] (in `state`): what every act can reach (the store, the clock,
//!   the random source, the keys, the key ring, the providers), and
//!   [`Observer`] (in `observer`), told what was issued, refused and revoked
//!   (the edge counts it).
//!
//! It knows no HTTP: no axum, tower, utoipa, maud or prometheus-client.

#![forbid(unsafe_code)]

pub mod admin;
pub mod archive;
pub mod hashing;
pub mod keygen;
mod observer;
pub mod service;
mod state;

pub use observer::{GrantType, KeyGenOutcome, Observer};
pub use state::{App, OsRandom, SystemClock};
/// X.509: the pure `strongroom_pki`, named here as `crate::pki` and `strongroom_app::pki`.
pub use strongroom_pki as pki;
