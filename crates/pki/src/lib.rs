//! X.509 for Strongroom's certificates, pure: no store, no key ring, no I/O
//! and no clock. Times are arguments (Unix seconds); serial numbers, salts,
//! IVs and RSA and P-521 keys come from the `&dyn Random` the caller passes,
//! while ECDSA P-256/P-384 key generation and signing use ring's own
//! `SystemRandom` (ring's `SecureRandom` is sealed).
//!
//! - `keys`: a CA's algorithms ([`CaAlgorithm`]), private keys as PKCS#8
//!   ([`generate_key`]), a leaf's public key ([`LeafKey`], [`public_of`]),
//!   PBES2 export ([`encrypt_pkcs8`]).
//! - `signer`: how a CA's key signs ([`CaSigner`]; [`SoftwareSigner`] in
//!   memory; the key ring implements it for a key in a PKCS#11 token).
//! - `subject`: subjects as (type, value) pairs ([`parse_subject`]) and as
//!   names; `sans`: subject alternative names, checked ([`Sans`]).
//! - `csr`: a client's PKCS#10 request read and its signature checked
//!   ([`parse_csr`], [`Csr`]).
//! - `ca`: a CA's own certificate ([`create_ca`], [`self_signed_ca`]), an
//!   intermediate's CSR and certificate ([`ca_csr`],
//!   [`check_ca_certificate`]), a CA as issuer ([`Issuer`]).
//! - `issue`: leaf certificates ([`issue`]), rcgen's to-be-signed part
//!   rewritten for a P-521 key or a repeated subject attribute.
//! - `crl`: revocation lists ([`crl`]).
//! - `facts`: what a certificate says ([`cert_facts`], [`thumbprint`]).
//! - `pack`: PEM, certificates in a file, PKCS #7 and #12 ([`pem`],
//!   [`read_certs`], [`pkcs7`], [`pkcs12`]).
//! - `der`: the DER written and read by hand.

#![forbid(unsafe_code)]

mod ca;
mod crl;
mod csr;
mod der;
mod facts;
mod issue;
mod keys;
mod pack;
mod sans;
mod signer;
mod subject;
#[cfg(test)]
mod testing;

pub use ca::{Issuer, ca_csr, check_ca_certificate, create_ca, self_signed_ca};
pub use crl::{CRL_VALIDITY_SECS, Revoked, crl};
pub use csr::{Csr, parse_csr};
pub use facts::{CertFacts, cert_facts, hex_upper, thumbprint};
pub use issue::{Issued, Leaf, issue};
pub use keys::{CaAlgorithm, LeafKey, PBKDF2_ITERATIONS, PrivateKey, encrypt_pkcs8, generate_key, public_of};
pub use pack::{pem, pem_body, pkcs7, pkcs12, read_certs, split_certs};
pub use sans::Sans;
pub use signer::{CaSigner, SoftwareSigner, ecdsa_der, signer_public_key};
pub use subject::parse_subject;

use time::OffsetDateTime;

/// Why an X.509 step failed; the text is for the client (never a key).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PkiError {
    /// The client's input (a CSR, a subject, a key choice) cannot be used.
    #[error("{0}")]
    Invalid(String),
    /// The server's own step failed (a stored key that does not load, a signature).
    #[error("{0}")]
    Internal(String),
}

/// An rcgen failure as an internal error, named by what was being done.
fn internal(what: &str) -> impl Fn(rcgen::Error) -> PkiError + '_ {
    move |e| PkiError::Internal(format!("{what}: {e}"))
}

/// A time in Unix seconds as rcgen takes it.
fn at(secs: i64) -> Result<OffsetDateTime, PkiError> {
    OffsetDateTime::from_unix_timestamp(secs).map_err(|_| PkiError::Internal("a time out of range".into()))
}
