//! Certificate authorities: a CA's own certificate (self-signed, its key
//! made here or held by a [`CaSigner`]), the CSR an intermediate CA gives an
//! offline root, the check of the certificate that root sends back, and a CA
//! as the issuer of what it signs ([`Issuer`]).
//!
//! The issuer a leaf or a CRL names is read from the CA's certificate
//! ([`Issuer::cert_der`]): its subject as encoded there, its subject key
//! identifier as the authority key identifier, so an intermediate CA whose
//! certificate an offline root signed ([`check_ca_certificate`]) issues
//! certificates that chain to it byte for byte.

use std::fmt;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, DnValue, IsCa, KeyIdMethod, KeyPair, KeyUsagePurpose, SerialNumber,
};

use strongroom_core::random::Random;

use crate::facts::parse_cert;
use crate::keys::{CaAlgorithm, PrivateKey, generate_key};
use crate::signer::{CaSigner, SoftwareSigner};
use crate::subject::distinguished_name;
use crate::{PkiError, at, internal};

/// The parameters of a CA's own certificate (self-signed) or CSR.
fn ca_params(subject: &[(String, String)], not_before: i64, not_after: i64) -> Result<CertificateParams, PkiError> {
    let mut p = CertificateParams::default();
    p.distinguished_name = distinguished_name(subject);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    p.not_before = at(not_before)?;
    p.not_after = at(not_after)?;
    p.key_identifier_method = KeyIdMethod::Sha256;
    Ok(p)
}

/// A new self-signed CA: its certificate (DER) and its key.
pub fn create_ca(
    alg: CaAlgorithm,
    subject: &[(String, String)],
    now: i64,
    validity_days: i64,
    rng: &dyn Random,
) -> Result<(Vec<u8>, PrivateKey), PkiError> {
    let key = generate_key(alg.key_spec(), rng)?;
    let signer = SoftwareSigner(PrivateKey(key.0.clone()));
    Ok((self_signed_ca(&signer, subject, now, validity_days, rng)?, key))
}

/// The self-signed certificate (DER) of a CA whose key `signer` holds (one
/// made in a token, say).
pub fn self_signed_ca(
    signer: &dyn CaSigner,
    subject: &[(String, String)],
    now: i64,
    validity_days: i64,
    rng: &dyn Random,
) -> Result<Vec<u8>, PkiError> {
    let kp = signer.key_pair()?;
    let mut p = ca_params(subject, now - 60, now + validity_days * 86_400)?;
    p.serial_number = Some(SerialNumber::from_slice(&serial(rng)));
    let cert = p.self_signed(&kp).map_err(internal("signing the CA certificate"))?;
    Ok(cert.der().to_vec())
}

/// A positive 16-byte serial.
pub(crate) fn serial(rng: &dyn Random) -> [u8; 16] {
    let mut s = [0u8; 16];
    rng.fill(&mut s);
    s[0] = (s[0] & 0x7f) | 0x10;
    s
}

/// What a leaf's or a CRL's issuer needs: the CA's certificate (DER; its
/// subject and subject key identifier are what the issued certificates
/// name) and its signer.
pub struct Issuer<'a> {
    pub cert_der: &'a [u8],
    pub signer: &'a dyn CaSigner,
}

impl fmt::Debug for Issuer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Issuer").field("cert_der", &self.cert_der.len()).finish_non_exhaustive()
    }
}

/// A key rcgen's issuer certificate is made with: rcgen signs a leaf with the
/// key it is given and reads only the issuer's parameters (subject, key
/// identifier, key usages), so this one never signs anything given out, and
/// making the issuer costs no signature of the CA's key (a token's, say).
fn throwaway_key() -> Result<&'static KeyPair, PkiError> {
    static KEY: std::sync::OnceLock<Option<KeyPair>> = std::sync::OnceLock::new();
    KEY.get_or_init(|| KeyPair::generate().ok()).as_ref().ok_or_else(|| PkiError::Internal("making a key".into()))
}

/// rcgen's parameters of the CA whose certificate is `der`: its subject with
/// each value's string type kept, its subject key identifier (or, without
/// one, SHA-256 of its key, as rcgen made it), CA key usages. Fails on what
/// rcgen cannot write back (a multi-valued RDN, a repeated attribute).
fn issuer_params(der: &[u8]) -> Result<CertificateParams, PkiError> {
    use x509_parser::asn1_rs::Tag;
    use x509_parser::extensions::ParsedExtension;
    let cannot = |why: &str| PkiError::Invalid(format!("the CA certificate's subject cannot be named as an issuer: {why}"));
    let c = parse_cert(der)?;
    let mut dn = DistinguishedName::new();
    for rdn in c.subject().iter() {
        let mut attrs = rdn.iter();
        let (Some(a), None) = (attrs.next(), attrs.next()) else { return Err(cannot("a multi-valued RDN")) };
        let oid: Vec<u64> = a.attr_type().iter().ok_or_else(|| cannot("an attribute type"))?.collect();
        let t = DnType::from_oid(&oid);
        if dn.get(&t).is_some() {
            return Err(cannot("an attribute that appears twice"));
        }
        let v = a.attr_value();
        let text = || std::str::from_utf8(v.data).map_err(|_| cannot("a value that is not text"));
        let bad = || cannot("a value its string type does not allow");
        let value = match v.header.tag() {
            Tag::Utf8String => DnValue::Utf8String(text()?.to_owned()),
            Tag::PrintableString => DnValue::PrintableString(rcgen::PrintableString::try_from(text()?).map_err(|_| bad())?),
            Tag::Ia5String => DnValue::Ia5String(rcgen::Ia5String::try_from(text()?).map_err(|_| bad())?),
            Tag::TeletexString => DnValue::TeletexString(rcgen::TeletexString::try_from(text()?).map_err(|_| bad())?),
            Tag::BmpString => DnValue::BmpString(rcgen::BmpString::from_utf16be(v.data.to_vec()).map_err(|_| bad())?),
            Tag::UniversalString => DnValue::UniversalString(rcgen::UniversalString::from_utf32be(v.data.to_vec()).map_err(|_| bad())?),
            _ => return Err(cannot("a value of an unknown string type")),
        };
        dn.push(t, value);
    }
    let ski = c.iter_extensions().find_map(|e| match e.parsed_extension() {
        ParsedExtension::SubjectKeyIdentifier(k) => Some(k.0.to_vec()),
        _ => None,
    });
    let mut p = CertificateParams::default();
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    p.key_identifier_method = ski.map_or(KeyIdMethod::Sha256, KeyIdMethod::PreSpecified);
    Ok(p)
}

/// The CA whose certificate is `cert_der` as rcgen's issuer (see
/// [`throwaway_key`]), checked to name that certificate's subject byte for byte.
fn issuer_certificate(cert_der: &[u8]) -> Result<rcgen::Certificate, PkiError> {
    let made = issuer_params(cert_der)?.self_signed(throwaway_key()?).map_err(internal("re-making the CA"))?;
    let subject = parse_cert(cert_der)?.subject().as_raw().to_vec();
    let named = parse_cert(made.der())?.issuer().as_raw().to_vec();
    if subject != named {
        return Err(PkiError::Invalid("the CA certificate's subject cannot be written back byte for byte as an issuer".into()));
    }
    Ok(made)
}

impl Issuer<'_> {
    /// The CA as rcgen's issuer (see [`issuer_certificate`]).
    pub(crate) fn certificate(&self) -> Result<rcgen::Certificate, PkiError> {
        issuer_certificate(self.cert_der)
    }
}

/// A CSR (DER) for an intermediate CA with `subject`, signed by its key: for an offline root to sign.
pub fn ca_csr(signer: &dyn CaSigner, subject: &[(String, String)]) -> Result<Vec<u8>, PkiError> {
    let kp = signer.key_pair()?;
    let mut p = CertificateParams::default();
    // The subject alone: the root decides the CA's extensions (rcgen writes none of them in a CSR).
    p.distinguished_name = distinguished_name(subject);
    Ok(p.serialize_request(&kp).map_err(internal("signing the CSR"))?.der().to_vec())
}

/// Checks an intermediate CA's certificate `cert` before it is installed: it
/// holds the CA's key (`ca_key`, SubjectPublicKeyInfo DER), it is a CA
/// certificate (basicConstraints cA) whose key may sign certificates and
/// CRLs (keyUsage keyCertSign and cRLSign), it is valid at `now`, its subject
/// can be named as leaves' issuer, and `others` (in any order) lead from it
/// to a self-signed root, every signature verified. Answers the path: `cert`,
/// its issuer, …, the root.
pub fn check_ca_certificate(cert: &[u8], others: &[Vec<u8>], ca_key: &[u8], now: i64) -> Result<Vec<Vec<u8>>, PkiError> {
    let invalid = |m: String| PkiError::Invalid(m);
    let c = parse_cert(cert)?;
    if c.public_key().raw != ca_key {
        return Err(invalid("the certificate's public key is not the CA's key (was it made from this CA's CSR?)".into()));
    }
    fn is_ca(x: &x509_parser::certificate::X509Certificate<'_>) -> bool {
        matches!(x.basic_constraints(), Ok(Some(b)) if b.value.ca)
    }
    if !is_ca(&c) {
        return Err(invalid("the certificate is not a CA certificate (basicConstraints cA is not true)".into()));
    }
    if !matches!(c.key_usage(), Ok(Some(k)) if k.value.key_cert_sign() && k.value.crl_sign()) {
        return Err(invalid("the certificate's keyUsage must hold keyCertSign and cRLSign".into()));
    }
    let (from, to) = (c.validity().not_before.timestamp(), c.validity().not_after.timestamp());
    if now < from || now >= to {
        return Err(invalid("the certificate is not valid now (notBefore, notAfter)".into()));
    }
    issuer_certificate(cert)?;
    let mut pool: Vec<(&[u8], x509_parser::certificate::X509Certificate<'_>)> = Vec::new();
    for o in others.iter().filter(|o| o.as_slice() != cert) {
        pool.push((o.as_slice(), parse_cert(o)?));
    }
    let mut path = vec![cert.to_vec()];
    let mut current = c;
    for _ in 0..8 {
        if current.subject().as_raw() == current.issuer().as_raw() && current.verify_signature(None).is_ok() {
            return Ok(path);
        }
        let Some((der, next)) = pool
            .iter()
            .find(|(_, p)| p.subject().as_raw() == current.issuer().as_raw() && current.verify_signature(Some(p.public_key())).is_ok())
        else {
            return Err(invalid(format!(
                "the chain does not reach a self-signed root: no certificate given signed the one of {} (give its issuers with --chain)",
                current.subject()
            )));
        };
        if !is_ca(next) {
            return Err(invalid(format!("{} is not a CA certificate (basicConstraints cA)", next.subject())));
        }
        path.push(der.to_vec());
        current = next.clone();
    }
    Err(invalid("the chain is longer than 8 certificates".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use strongroom_core::cert::{Curve, KeySpec};

    use crate::keys::load_key;
    use crate::testing::{Os, leaf_for};
    use crate::{Sans, parse_csr, parse_subject, pem, public_of, read_certs, signer_public_key, split_certs};

    /// An intermediate made from its CSR's subject and signed by another CA: installed with its
    /// root, it issues leaves whose issuer and authority key identifier are its own, byte for byte.
    #[test]
    fn an_intermediate_signed_elsewhere_is_checked_and_issues_under_its_own_name() {
        use x509_parser::extensions::ParsedExtension;
        let now = 1_800_000_000;
        let root_subject = parse_subject("CN=Offline Root, O=Acme").unwrap();
        let (root_der, root_key) = create_ca(CaAlgorithm::P384, &root_subject, now, 3650, &Os).unwrap();
        let root_kp = load_key(&root_key.0).unwrap();
        let sub = SoftwareSigner(generate_key(KeySpec::Ec(Curve::P256), &Os).unwrap());
        let sub_subject = parse_subject("CN=Issuing Sub CA, O=Acme, C=FR").unwrap();
        let csr = ca_csr(&sub, &sub_subject).unwrap();
        assert!(parse_csr(&pem("CERTIFICATE REQUEST", &csr)).is_ok(), "the CSR verifies with its own key");
        // The root signs (as openssl x509 -req would): the CSR's subject, its own name as issuer.
        let root_ca = issuer_certificate(&root_der).unwrap();
        let mut p = ca_params(&sub_subject, now - 60, now + 86_400 * 365).unwrap();
        p.key_identifier_method = KeyIdMethod::PreSpecified(vec![7; 20]);
        p.use_authority_key_identifier_extension = true;
        let sub_kp = sub.key_pair().unwrap();
        let sub_der = p.signed_by(&sub_kp, &root_ca, &root_kp).unwrap().der().to_vec();
        let sub_key = signer_public_key(&sub).unwrap();

        let path = check_ca_certificate(&sub_der, std::slice::from_ref(&root_der), &sub_key, now).unwrap();
        assert_eq!(path, vec![sub_der.clone(), root_der.clone()]);
        let e = check_ca_certificate(&sub_der, &[], &sub_key, now).unwrap_err();
        assert!(e.to_string().contains("does not reach a self-signed root"), "{e}");
        let other = signer_public_key(&SoftwareSigner(generate_key(KeySpec::Ec(Curve::P256), &Os).unwrap())).unwrap();
        assert!(
            check_ca_certificate(&sub_der, std::slice::from_ref(&root_der), &other, now)
                .unwrap_err()
                .to_string()
                .contains("not the CA's key")
        );
        assert!(check_ca_certificate(&sub_der, std::slice::from_ref(&root_der), &sub_key, now + 86_400 * 400).is_err(), "expired");
        let leaf_subject = vec![("CN".to_owned(), "www.example.com".to_owned())];
        let leaf_key = generate_key(KeySpec::Ec(Curve::P256), &Os).unwrap();
        assert!(
            check_ca_certificate(&root_der, &[], &signer_public_key(&SoftwareSigner(root_key)).unwrap(), now).is_ok(),
            "a root is its own path"
        );

        // For a day from `now` (leaf_for's 1_800_000_000), within the intermediate's validity.
        let issued =
            leaf_for(&Issuer { cert_der: &sub_der, signer: &sub }, &leaf_subject, &Sans::default(), &public_of(&leaf_key).unwrap());
        let (leaf, inter) = (parse_cert(&issued.der).unwrap(), parse_cert(&sub_der).unwrap());
        assert_eq!(leaf.issuer().as_raw(), inter.subject().as_raw());
        leaf.verify_signature(Some(inter.public_key())).unwrap();
        let aki = leaf.iter_extensions().find_map(|e| match e.parsed_extension() {
            ParsedExtension::AuthorityKeyIdentifier(a) => a.key_identifier.as_ref().map(|k| k.0.to_vec()),
            _ => None,
        });
        assert_eq!(aki, Some(vec![7; 20]), "the leaf's AKI is the intermediate's SKI");
        assert_eq!(split_certs(&[sub_der.clone(), root_der.clone()].concat()), vec![&sub_der[..], &root_der[..]]);
        let text = format!("{}{}", pem("CERTIFICATE", &sub_der), pem("CERTIFICATE", &root_der));
        assert_eq!(read_certs(text.as_bytes()).unwrap(), vec![sub_der.clone(), root_der.clone()]);
        assert_eq!(read_certs(&[sub_der.clone(), root_der].concat()).unwrap().len(), 2);
        assert!(read_certs(b"nothing").is_err());
    }
}
