//! What a certificate says, read back from its DER: its subject, issuer,
//! serial, validity, key and thumbprint, as the certificate's rows and the
//! product's answers show them.

use strongroom_core::cert::KeySpec;

use crate::PkiError;
use crate::keys::leaf_key;
use crate::subject::subject_of;

/// A certificate, parsed; `Invalid` if it is none (one an operator gave, say).
pub(crate) fn parse_cert(der: &[u8]) -> Result<x509_parser::certificate::X509Certificate<'_>, PkiError> {
    use x509_parser::prelude::FromDer as _;
    match x509_parser::certificate::X509Certificate::from_der(der) {
        Ok((_, c)) => Ok(c),
        Err(_) => Err(PkiError::Invalid("not an X.509 certificate".into())),
    }
}

/// What a certificate says, read back from its DER.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertFacts {
    pub subject: Vec<(String, String)>,
    /// The issuer, as RFC 4514 text.
    pub issuer: String,
    /// Upper-case hex.
    pub serial: String,
    pub not_before: i64,
    pub not_after: i64,
    pub key: KeySpec,
    pub thumbprint: String,
}

/// Reads a certificate's facts.
pub fn cert_facts(der: &[u8]) -> Result<CertFacts, PkiError> {
    use x509_parser::prelude::FromDer as _;
    let (_, c) = x509_parser::certificate::X509Certificate::from_der(der)
        .map_err(|_| PkiError::Internal("a stored certificate does not parse".into()))?;
    let key = leaf_key(c.public_key())?.spec;
    Ok(CertFacts {
        subject: subject_of(c.subject()),
        issuer: c.issuer().to_string(),
        serial: hex_upper(c.raw_serial()),
        not_before: c.validity().not_before.timestamp(),
        not_after: c.validity().not_after.timestamp(),
        key,
        thumbprint: thumbprint(der),
    })
}

/// Bytes as upper-case hex, as serials and thumbprints are shown.
pub fn hex_upper(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// SHA-1 of a DER certificate: the product's thumbprint.
pub fn thumbprint(der: &[u8]) -> String {
    hex_upper(ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, der).as_ref())
}
