//! Where people and machines prove who they are, below the application:
//!
//! - [`directory`]: LDAP and Active Directory sign-in and group look-up
//!   (RFC 4515-escaped filters, nested groups, the service account);
//! - [`oidc`]: the OpenID Connect relying party (discovery, the code
//!   exchange with PKCE, the ID token's checks); the approval page's side of
//!   the flow is the server's;
//! - [`jwks`]: JWT issuers' key sets, cached within bounds, fetched over
//!   HTTPS only;
//! - [`certificate`]: client certificates, verified by webpki against the
//!   certificate mappings' CAs and CRLs, and matched to a mapping.
//!
//! No store here: what a provider says is persisted by the application.
//! Without the default `providers` feature only [`certificate`] is built
//! (the fuzz targets' build).

#![forbid(unsafe_code)]

pub mod certificate;
#[cfg(feature = "providers")]
pub mod directory;
#[cfg(feature = "providers")]
pub mod jwks;
#[cfg(feature = "providers")]
pub mod oidc;
