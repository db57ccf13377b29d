//! The reader of a client's PKCS#10 request: PEM or bare base64, its key's
//! kind and size, its signature checked with its own key (the proof of
//! possession; P-521, which ring lacks, by the `p521` crate), its subject and
//! the names it asks for, each checked as [`Sans::push`] checks a request's.
//! Everything here reads what a client sent: the `csr` fuzz target drives it.

use std::net::IpAddr;

use strongroom_core::cert::{Curve, KeySpec};

use crate::PkiError;
use crate::keys::{LeafKey, leaf_key};
use crate::pack::pem_body;
use crate::sans::{Sans, UPN_OID, other_name_utf8};
use crate::subject::subject_of;

/// A CSR, read and its signature checked (proof of possession).
#[derive(Clone, Debug)]
pub struct Csr {
    pub der: Vec<u8>,
    /// Its subject: (CN/O/OU/L/ST/C, value), in order.
    pub subject: Vec<(String, String)>,
    pub sans: Sans,
    pub key: LeafKey,
}

impl Csr {
    pub fn get(&self, k: &str) -> Option<&str> {
        self.subject.iter().find(|(t, _)| t == k).map(|(_, v)| v.as_str())
    }
}

/// Reads a PKCS#10 request and checks its signature with its own key.
pub fn parse_csr(text: &str) -> Result<Csr, PkiError> {
    use x509_parser::extensions::{GeneralName, ParsedExtension};
    use x509_parser::prelude::FromDer as _;
    let bad = || PkiError::Invalid("PKCS10 is not a certificate signing request (PEM or base64 DER).".into());
    let der = pem_body(text).ok_or_else(bad)?;
    let (rest, csr) = x509_parser::certification_request::X509CertificationRequest::from_der(&der).map_err(|_| bad())?;
    if !rest.is_empty() {
        return Err(bad());
    }
    let info = &csr.certification_request_info;
    let key = leaf_key(&info.subject_pki)?;
    let verified = match key.spec {
        // ring (x509-parser's verifier) has no P-521.
        KeySpec::Ec(Curve::P521) => {
            verify_p521(&key.raw, &csr.signature_algorithm.algorithm.to_id_string(), info.raw, &csr.signature_value.data)
        }
        _ => csr.verify_signature().is_ok(),
    };
    if !verified {
        return Err(PkiError::Invalid("The CSR's signature does not verify with its own key.".into()));
    }
    let mut sans = Sans::default();
    if let Some(exts) = csr.requested_extensions() {
        for e in exts {
            if let ParsedExtension::SubjectAlternativeName(san) = e {
                for g in &san.general_names {
                    match g {
                        GeneralName::DNSName(d) => sans.push("dns", d)?,
                        GeneralName::RFC822Name(m) => sans.push("email", m)?,
                        GeneralName::URI(u) => sans.push("uri", u)?,
                        GeneralName::OtherName(oid, value) if oid.iter().is_some_and(|o| o.eq(UPN_OID)) => {
                            let upn = other_name_utf8(value)
                                .ok_or_else(|| PkiError::Invalid("The CSR's UPN name is not a UTF8String.".into()))?;
                            sans.push("upn", upn)?;
                        }
                        GeneralName::IPAddress(b) => {
                            let ip = match b.len() {
                                4 => IpAddr::from(<[u8; 4]>::try_from(*b).map_err(|_| bad())?),
                                16 => IpAddr::from(<[u8; 16]>::try_from(*b).map_err(|_| bad())?),
                                _ => return Err(bad()),
                            };
                            sans.push("ip", &ip.to_string())?;
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    let subject = subject_of(&info.subject);
    Ok(Csr { der: der.clone(), subject, sans, key })
}

/// Whether `sig` (DER) is the ECDSA signature of `msg` by the P-521 point `point` (SEC1), with the
/// hash `sig_alg` (an `ecdsa-with-SHA512`, `-SHA384` or `-SHA256` OID) names.
fn verify_p521(point: &[u8], sig_alg: &str, msg: &[u8], sig: &[u8]) -> bool {
    use p521::ecdsa::signature::hazmat::PrehashVerifier as _;
    let hash = match sig_alg {
        "1.2.840.10045.4.3.4" => &ring::digest::SHA512,
        "1.2.840.10045.4.3.3" => &ring::digest::SHA384,
        "1.2.840.10045.4.3.2" => &ring::digest::SHA256,
        _ => return false,
    };
    let (Ok(key), Ok(sig)) = (p521::ecdsa::VerifyingKey::from_sec1_bytes(point), p521::ecdsa::Signature::from_der(sig)) else {
        return false;
    };
    let digest = ring::digest::digest(hash, msg);
    // The ecdsa crate wants at least half the field (33 bytes): a SHA-256 digest gets a leading
    // zero, which leaves its value (the integer ECDSA signs) as it is.
    let mut prehash = vec![0u8; 33usize.saturating_sub(digest.as_ref().len())];
    prehash.extend_from_slice(digest.as_ref());
    key.verify_prehash(&prehash, &sig).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_subject;

    #[test]
    fn subjects_and_pem_bodies_are_read() {
        assert!(parse_subject("O=Acme").is_err());
        assert!(parse_subject("CN=a, X=b").is_err());
        assert_eq!(pem_body("-----BEGIN CERTIFICATE REQUEST-----AAEC-----END CERTIFICATE REQUEST-----"), Some(vec![0, 1, 2]));
        assert_eq!(pem_body("AAEC"), Some(vec![0, 1, 2]));
        assert!(parse_csr("not a csr").is_err());
    }
}
