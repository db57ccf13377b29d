//! The X.509 work of certificates (issue 33): keys, CA certificates,
//! CSRs with their proof of possession, leaf certificates, CRLs, and the
//! encodings clients ask for (PEM with CRLF, PBES2-encrypted PKCS#8).
//!
//! Signing goes through [`CaSigner`]: a CA's key is a PKCS#8 sealed under
//! the key ring ([`SoftwareSigner`]) or a key in a PKCS#11 token
//! ([`TokenCaSigner`]: rcgen's `KeyPair::from_remote` over the key ring's
//! token signer; ECDSA P-256/P-384 or RSA 2048-4096).
//!
//! The issuer a leaf or a CRL names is read from the CA's certificate
//! ([`Issuer::cert_der`]): its subject as encoded there, its subject key
//! identifier as the authority key identifier, so an intermediate CA whose
//! certificate an offline root signed ([`check_ca_certificate`]) issues
//! certificates that chain to it byte for byte.
//!
//! Randomness: serial numbers, salts, IVs and RSA keys come from the
//! `&dyn Random` the caller passes; ECDSA key generation and signing use
//! ring's own `SystemRandom` (ring's `SecureRandom` is sealed).

use std::fmt;
use std::net::IpAddr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rcgen::{
    BasicConstraints, CertificateParams, CertificateRevocationListParams, CrlDistributionPoint, DistinguishedName, DnType, DnValue,
    ExtendedKeyUsagePurpose, IsCa, KeyIdMethod, KeyPair, KeyUsagePurpose, PublicKeyData, RevocationReason, RevokedCertParams, SanType,
    SerialNumber, SignatureAlgorithm,
};
use time::OffsetDateTime;
use zeroize::Zeroizing;

use strongroom_core::cert::{Curve, KeySpec, names};
use strongroom_core::random::Random;

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

fn internal(what: &str) -> impl Fn(rcgen::Error) -> PkiError + '_ {
    move |e| PkiError::Internal(format!("{what}: {e}"))
}

/// The key algorithms of a CA (`strongroom admin ca create --algorithm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaAlgorithm {
    P256,
    P384,
    Rsa(u32),
}

impl CaAlgorithm {
    /// The algorithm of the CA's key made in a token.
    pub fn token_algorithm(self) -> strongroom_keyring::SigningAlgorithm {
        match self {
            CaAlgorithm::P256 => strongroom_keyring::SigningAlgorithm::P256,
            CaAlgorithm::P384 => strongroom_keyring::SigningAlgorithm::P384,
            CaAlgorithm::Rsa(b) => strongroom_keyring::SigningAlgorithm::Rsa(b),
        }
    }

    pub fn parse(s: &str) -> Option<CaAlgorithm> {
        match s.trim().to_ascii_lowercase().as_str() {
            "p256" | "p-256" | "ecdsa" | "ec" => Some(CaAlgorithm::P256),
            "p384" | "p-384" => Some(CaAlgorithm::P384),
            "rsa2048" | "rsa" => Some(CaAlgorithm::Rsa(2048)),
            "rsa3072" => Some(CaAlgorithm::Rsa(3072)),
            "rsa4096" => Some(CaAlgorithm::Rsa(4096)),
            _ => None,
        }
    }

    pub fn as_str(self) -> String {
        match self {
            CaAlgorithm::P256 => "p256".into(),
            CaAlgorithm::P384 => "p384".into(),
            CaAlgorithm::Rsa(b) => format!("rsa{b}"),
        }
    }

    pub fn key_spec(self) -> KeySpec {
        match self {
            CaAlgorithm::P256 => KeySpec::Ec(Curve::P256),
            CaAlgorithm::P384 => KeySpec::Ec(Curve::P384),
            CaAlgorithm::Rsa(b) => KeySpec::Rsa(b),
        }
    }
}

/// A private key as PKCS#8 DER: zeroized when dropped, never printed.
pub struct PrivateKey(pub Zeroizing<Vec<u8>>);

impl fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PrivateKey(<redacted>)")
    }
}

/// `rand_core` over the caller's random source (for the `rsa` crate), drawn 4 KiB at a
/// time: prime generation asks for a few bytes thousands of times, and one system call
/// each made a 2048-bit key take seconds. The buffer is zeroized when dropped.
struct Rng<'a> {
    source: &'a dyn Random,
    buf: Zeroizing<[u8; 4096]>,
    pos: usize,
}

impl<'a> Rng<'a> {
    fn new(source: &'a dyn Random) -> Rng<'a> {
        Rng { source, buf: Zeroizing::new([0u8; 4096]), pos: 4096 }
    }
}

impl rand_core::RngCore for Rng<'_> {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.fill_bytes(&mut b);
        u32::from_le_bytes(b)
    }
    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill_bytes(&mut b);
        u64::from_le_bytes(b)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for d in dest.iter_mut() {
            if self.pos == self.buf.len() {
                self.source.fill(&mut self.buf[..]);
                self.pos = 0;
            }
            *d = self.buf[self.pos];
            self.pos += 1;
        }
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl rand_core::CryptoRng for Rng<'_> {}

/// A new private key (PKCS#8): P-256 and P-384 by ring, P-521 by the `p521` crate, RSA
/// 2048-4096 by the `rsa` crate.
pub fn generate_key(spec: KeySpec, rng: &dyn Random) -> Result<PrivateKey, PkiError> {
    match spec {
        KeySpec::Ec(c) => {
            let alg = match c {
                Curve::P256 => &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
                Curve::P384 => &ring::signature::ECDSA_P384_SHA384_ASN1_SIGNING,
                Curve::P521 => {
                    // ring has no P-521: the RustCrypto `p521` crate makes it (from the caller's randomness).
                    use p521::pkcs8::EncodePrivateKey as _;
                    let key = p521::SecretKey::random(&mut Rng::new(rng));
                    let doc = key.to_pkcs8_der().map_err(|_| PkiError::Internal("P-521 key encoding failed".into()))?;
                    return Ok(PrivateKey(Zeroizing::new(doc.as_bytes().to_vec())));
                }
            };
            let doc = ring::signature::EcdsaKeyPair::generate_pkcs8(alg, &ring::rand::SystemRandom::new())
                .map_err(|_| PkiError::Internal("EC key generation failed".into()))?;
            Ok(PrivateKey(Zeroizing::new(doc.as_ref().to_vec())))
        }
        KeySpec::Rsa(bits) => {
            if ![2048, 3072, 4096].contains(&bits) {
                return Err(PkiError::Invalid(format!("RSA {bits} keys are not generated: 2048, 3072 or 4096.")));
            }
            use rsa::pkcs8::EncodePrivateKey as _;
            let key = rsa::RsaPrivateKey::new(&mut Rng::new(rng), bits as usize)
                .map_err(|_| PkiError::Internal("RSA key generation failed".into()))?;
            let doc = key.to_pkcs8_der().map_err(|_| PkiError::Internal("RSA key encoding failed".into()))?;
            Ok(PrivateKey(Zeroizing::new(doc.as_bytes().to_vec())))
        }
    }
}

/// The signature algorithm a PKCS#8 key signs with, found by loading it.
fn load_key(pkcs8: &[u8]) -> Result<KeyPair, PkiError> {
    for alg in [&rcgen::PKCS_ECDSA_P256_SHA256, &rcgen::PKCS_ECDSA_P384_SHA384, &rcgen::PKCS_RSA_SHA256] {
        let der = rustls::pki_types::PrivatePkcs8KeyDer::from(pkcs8);
        if let Ok(k) = KeyPair::from_pkcs8_der_and_sign_algo(&der, alg) {
            return Ok(k);
        }
    }
    Err(PkiError::Internal("a stored private key does not load".into()))
}

/// A key of a CA that signs. [`SoftwareSigner`] holds a PKCS#8 in memory for
/// the time of one signature; [`TokenCaSigner`] answers an rcgen
/// `KeyPair::from_remote` over the token's key, whose calls block (sign on
/// the blocking pool).
pub trait CaSigner: Send + Sync {
    fn key_pair(&self) -> Result<KeyPair, PkiError>;

    /// Signs `msg` as [`CaSigner::key_pair`]'s algorithm does (ECDSA as DER, RSA PKCS#1 v1.5
    /// SHA-256): for a certificate whose to-be-signed part was rewritten (see [`issue`]).
    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, PkiError>;
}

/// A CA key opened from the key ring.
#[derive(Debug)]
pub struct SoftwareSigner(pub PrivateKey);

impl CaSigner for SoftwareSigner {
    fn key_pair(&self) -> Result<KeyPair, PkiError> {
        load_key(&self.0.0)
    }

    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, PkiError> {
        use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, ECDSA_P384_SHA384_ASN1_SIGNING, EcdsaKeyPair, RsaKeyPair};
        let rng = ring::rand::SystemRandom::new();
        let failed = |_| PkiError::Internal("signing with the CA's key failed".into());
        for alg in [&ECDSA_P256_SHA256_ASN1_SIGNING, &ECDSA_P384_SHA384_ASN1_SIGNING] {
            if let Ok(k) = EcdsaKeyPair::from_pkcs8(alg, &self.0.0, &rng) {
                return Ok(k.sign(&rng, msg).map_err(failed)?.as_ref().to_vec());
            }
        }
        let k = RsaKeyPair::from_pkcs8(&self.0.0).map_err(|_| PkiError::Internal("a stored private key does not load".into()))?;
        let mut sig = vec![0u8; k.public().modulus_len()];
        k.sign(&ring::signature::RSA_PKCS1_SHA256, &rng, msg, &mut sig).map_err(failed)?;
        Ok(sig)
    }
}

/// A CA key in a PKCS#11 token: rcgen signs through it (`KeyPair::from_remote`),
/// hashing here and signing the digest there: `CKM_ECDSA`, the signature turned
/// from the token's `r || s` into X.509's DER, or `CKM_RSA_PKCS` over the
/// SHA-256 `DigestInfo` (sha256WithRSAEncryption).
pub struct TokenCaSigner {
    pub signer: strongroom_keyring::TokenSigner,
    pub algorithm: strongroom_keyring::SigningAlgorithm,
}

impl fmt::Debug for TokenCaSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenCaSigner").field("key", &self.signer.key_name()).field("algorithm", &self.algorithm).finish()
    }
}

struct TokenKey {
    signer: strongroom_keyring::TokenSigner,
    algorithm: strongroom_keyring::SigningAlgorithm,
    public: Vec<u8>,
}

impl rcgen::RemoteKeyPair for TokenKey {
    fn public_key(&self) -> &[u8] {
        &self.public
    }

    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, rcgen::Error> {
        use strongroom_keyring::SigningAlgorithm as A;
        let digest = match self.algorithm {
            A::P256 | A::Rsa(_) => ring::digest::digest(&ring::digest::SHA256, msg),
            A::P384 => ring::digest::digest(&ring::digest::SHA384, msg),
        };
        let raw = self.signer.sign_digest(digest.as_ref()).map_err(|e| {
            tracing::error!(error = %e, "the token did not sign");
            rcgen::Error::RemoteKeyError
        })?;
        match self.algorithm {
            A::Rsa(_) => Ok(raw),
            A::P256 | A::P384 => ecdsa_der(&raw).ok_or(rcgen::Error::RemoteKeyError),
        }
    }

    fn algorithm(&self) -> &'static SignatureAlgorithm {
        use strongroom_keyring::SigningAlgorithm as A;
        match self.algorithm {
            A::P256 => &rcgen::PKCS_ECDSA_P256_SHA256,
            A::P384 => &rcgen::PKCS_ECDSA_P384_SHA384,
            A::Rsa(_) => &rcgen::PKCS_RSA_SHA256,
        }
    }
}

/// An ECDSA signature `r || s` (each half the curve's size) as X.509 has it:
/// `SEQUENCE { INTEGER r, INTEGER s }`.
fn ecdsa_der(raw: &[u8]) -> Option<Vec<u8>> {
    if raw.is_empty() || !raw.len().is_multiple_of(2) {
        return None;
    }
    let (r, s) = raw.split_at(raw.len() / 2);
    let int = |v: &[u8]| {
        let v: Vec<u8> = v.iter().copied().skip_while(|b| *b == 0).collect();
        let mut body = if v.first().is_none_or(|b| b & 0x80 != 0) { vec![0] } else { Vec::new() };
        body.extend_from_slice(&v);
        tlv(0x02, &body)
    };
    Some(seq(&[&int(r), &int(s)]))
}

impl CaSigner for TokenCaSigner {
    fn key_pair(&self) -> Result<KeyPair, PkiError> {
        let public = self.signer.public_key().map_err(|e| PkiError::Internal(format!("the CA's key in its token: {e}")))?;
        let key = TokenKey { signer: self.signer.clone(), algorithm: self.algorithm, public };
        KeyPair::from_remote(Box::new(key)).map_err(internal("the CA's key in its token"))
    }

    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, PkiError> {
        use rcgen::RemoteKeyPair as _;
        let key = TokenKey { signer: self.signer.clone(), algorithm: self.algorithm, public: Vec::new() };
        key.sign(msg).map_err(internal("the CA's key in its token"))
    }
}

/// A subject as written on the command line: `CN=Issuing CA, O=Acme, C=FR`
/// (CN, O, OU, L, ST, C; commas inside values are not supported).
pub fn parse_subject(s: &str) -> Result<Vec<(String, String)>, PkiError> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            return Err(PkiError::Invalid(format!("{part:?} is not TYPE=VALUE.")));
        };
        let k = k.trim().to_ascii_uppercase();
        if !["CN", "O", "OU", "L", "ST", "C"].contains(&k.as_str()) {
            return Err(PkiError::Invalid(format!("{k} is not one of CN, O, OU, L, ST, C.")));
        }
        let v = v.trim();
        if v.is_empty() || v.len() > 64 {
            return Err(PkiError::Invalid(format!("{k} must be 1 to 64 characters.")));
        }
        out.push((k, v.to_owned()));
    }
    if !out.iter().any(|(k, _)| k == "CN") {
        return Err(PkiError::Invalid("The subject needs a CN.".into()));
    }
    Ok(out)
}

fn dn_type(k: &str) -> Option<DnType> {
    Some(match k {
        "CN" => DnType::CommonName,
        "O" => DnType::OrganizationName,
        "OU" => DnType::OrganizationalUnitName,
        "L" => DnType::LocalityName,
        "ST" => DnType::StateOrProvinceName,
        "C" => DnType::CountryName,
        _ => return None,
    })
}

fn distinguished_name(entries: &[(String, String)]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    for (k, v) in entries {
        if let Some(t) = dn_type(k) {
            if t == DnType::CountryName {
                match rcgen::PrintableString::try_from(v.as_str()) {
                    Ok(p) => dn.push(t, DnValue::PrintableString(p)),
                    Err(_) => dn.push(t, v.as_str()),
                }
            } else {
                dn.push(t, v.as_str());
            }
        }
    }
    dn
}

fn at(secs: i64) -> Result<OffsetDateTime, PkiError> {
    OffsetDateTime::from_unix_timestamp(secs).map_err(|_| PkiError::Internal("a time out of range".into()))
}

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
fn serial(rng: &dyn Random) -> [u8; 16] {
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

fn parse_cert(der: &[u8]) -> Result<x509_parser::certificate::X509Certificate<'_>, PkiError> {
    use x509_parser::prelude::FromDer as _;
    match x509_parser::certificate::X509Certificate::from_der(der) {
        Ok((_, c)) => Ok(c),
        Err(_) => Err(PkiError::Invalid("not an X.509 certificate".into())),
    }
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
    fn certificate(&self) -> Result<rcgen::Certificate, PkiError> {
        issuer_certificate(self.cert_der)
    }
}

/// The certificates (DER) one after the other in `der` (a CA's certificate and those above it).
pub fn split_certs(der: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = der;
    while rest.len() >= 2 && rest[0] == 0x30 {
        let (head, len) = match rest[1] {
            n if n < 0x80 => (2, usize::from(n)),
            n => {
                let k = usize::from(n & 0x7f);
                if k == 0 || k > 4 || rest.len() < 2 + k {
                    break;
                }
                (2 + k, rest[2..2 + k].iter().fold(0usize, |a, b| (a << 8) | usize::from(*b)))
            }
        };
        let Some(end) = head.checked_add(len).filter(|e| *e <= rest.len()) else { break };
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    out
}

/// The certificates in a file: PEM blocks (`CERTIFICATE`), or DER one after the other.
pub fn read_certs(bytes: &[u8]) -> Result<Vec<Vec<u8>>, PkiError> {
    let bad = || PkiError::Invalid("no certificate in it (PEM CERTIFICATE blocks or DER)".into());
    if bytes.first() == Some(&0x30) {
        let certs: Vec<Vec<u8>> = split_certs(bytes).into_iter().map(<[u8]>::to_vec).collect();
        return if certs.is_empty() { Err(bad()) } else { Ok(certs) };
    }
    let text = std::str::from_utf8(bytes).map_err(|_| bad())?;
    let mut out = Vec::new();
    for block in text.split("-----BEGIN CERTIFICATE-----").skip(1) {
        let body = block.split("-----END CERTIFICATE-----").next().unwrap_or_default();
        let clean: String = body.chars().filter(|c| !c.is_whitespace()).collect();
        out.push(STANDARD.decode(clean).map_err(|_| bad())?);
    }
    if out.is_empty() { Err(bad()) } else { Ok(out) }
}

/// The public key of a CA's signer as a certificate holds it (SubjectPublicKeyInfo, DER).
pub fn signer_public_key(signer: &dyn CaSigner) -> Result<Vec<u8>, PkiError> {
    Ok(signer.key_pair()?.public_key_der())
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

/// A leaf's public key as a CSR or a generated key gives it. rcgen (with ring) has no P-521
/// algorithm to name such a key with: a P-521 key stands as a P-384 one for rcgen, and
/// [`issue`] puts `spki`, the key's own SubjectPublicKeyInfo, in the certificate instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafKey {
    raw: Vec<u8>,
    alg: &'static SignatureAlgorithm,
    spki: Vec<u8>,
    pub spec: KeySpec,
}

impl PublicKeyData for LeafKey {
    fn der_bytes(&self) -> &[u8] {
        &self.raw
    }
    fn algorithm(&self) -> &SignatureAlgorithm {
        self.alg
    }
}

/// Subject alternative names, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Sans {
    #[serde(rename = "DNS", default, skip_serializing_if = "Vec::is_empty")]
    pub dns: Vec<String>,
    #[serde(rename = "IP", default, skip_serializing_if = "Vec::is_empty")]
    pub ip: Vec<String>,
    #[serde(rename = "Email", default, skip_serializing_if = "Vec::is_empty")]
    pub email: Vec<String>,
    #[serde(rename = "URI", default, skip_serializing_if = "Vec::is_empty")]
    pub uri: Vec<String>,
    /// User principal names: otherName 1.3.6.1.4.1.311.20.2.3, a UTF8String.
    #[serde(rename = "UPN", default, skip_serializing_if = "Vec::is_empty")]
    pub upn: Vec<String>,
}

/// The OID of a UPN otherName (Microsoft's szOID_NT_PRINCIPAL_NAME).
const UPN_OID: [u64; 10] = [1, 3, 6, 1, 4, 1, 311, 20, 2, 3];

impl Sans {
    fn add(list: &mut Vec<String>, v: &str) {
        if !list.iter().any(|x| x.eq_ignore_ascii_case(v)) {
            list.push(v.to_owned());
        }
    }

    pub fn merge(&mut self, other: &Sans) {
        for v in &other.dns {
            Sans::add(&mut self.dns, v);
        }
        for v in &other.ip {
            Sans::add(&mut self.ip, v);
        }
        for v in &other.email {
            Sans::add(&mut self.email, v);
        }
        for v in &other.uri {
            Sans::add(&mut self.uri, v);
        }
        for v in &other.upn {
            Sans::add(&mut self.upn, v);
        }
    }

    /// The kinds of names present, as policies name them: `DNS`, `IP`, `Email`, `URI`, `UPN`.
    pub fn kinds(&self) -> Vec<&'static str> {
        [("DNS", &self.dns), ("IP", &self.ip), ("Email", &self.email), ("URI", &self.uri), ("UPN", &self.upn)]
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, _)| k)
            .collect()
    }

    /// One name as clients send it: `Type` 0 UPN, 1 email, 2 DNS, 6 URI, 7 IP, or `TypeName`
    /// `UPN` (or `OtherName`), `DNS`, `Email`, `IPAddress`, `URI`. The name is taken exactly as
    /// given and must be one of its kind ([`names`]: a DNS name a host name, and so on).
    pub fn push(&mut self, kind: &str, name: &str) -> Result<(), PkiError> {
        let k = kind.trim().to_ascii_lowercase();
        match k.as_str() {
            "2" | "dns" => {
                names::host_name(name).map_err(PkiError::Invalid)?;
                Sans::add(&mut self.dns, name);
            }
            "1" | "email" | "rfc822" => {
                names::email(name).map_err(PkiError::Invalid)?;
                Sans::add(&mut self.email, name);
            }
            "6" | "uri" => {
                names::uri(name).map_err(PkiError::Invalid)?;
                Sans::add(&mut self.uri, name);
            }
            "0" | "upn" | "othername" => {
                if name.is_empty() || name.len() > 1024 || name.chars().any(char::is_control) || name.trim() != name {
                    return Err(PkiError::Invalid(format!("{} is not a user principal name.", names::shown(name))));
                }
                Sans::add(&mut self.upn, name);
            }
            "7" | "ip" | "ipaddress" => {
                name.parse::<IpAddr>().map_err(|_| PkiError::Invalid(format!("{} is not an IP address.", names::shown(name))))?;
                Sans::add(&mut self.ip, name);
            }
            _ => return Err(PkiError::Invalid(format!("Subject alternative names of type {} are not issued.", names::shown(kind)))),
        }
        Ok(())
    }

    fn rcgen(&self) -> Result<Vec<SanType>, PkiError> {
        let ia5 = |s: &str| rcgen::Ia5String::try_from(s).map_err(|_| PkiError::Invalid(format!("{s:?} is not an ASCII name.")));
        let mut out = Vec::new();
        for d in &self.dns {
            out.push(SanType::DnsName(ia5(d)?));
        }
        for i in &self.ip {
            out.push(SanType::IpAddress(i.parse().map_err(|_| PkiError::Invalid(format!("{i:?} is not an IP address.")))?));
        }
        for e in &self.email {
            out.push(SanType::Rfc822Name(ia5(e)?));
        }
        for u in &self.uri {
            out.push(SanType::URI(ia5(u)?));
        }
        for u in &self.upn {
            out.push(SanType::OtherName((UPN_OID.to_vec(), rcgen::OtherNameValue::Utf8String(u.clone()))));
        }
        Ok(out)
    }
}

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

/// The DER inside PEM text with `\n`, `\r\n`, or every line break stripped, or bare base64.
pub fn pem_body(text: &str) -> Option<Vec<u8>> {
    let mut body = text.trim();
    if let Some(i) = body.find("-----BEGIN") {
        let after = &body[i + 10..];
        let end_marker = after.find("-----")?;
        body = &after[end_marker + 5..];
        if let Some(j) = body.find("-----END") {
            body = &body[..j];
        }
    }
    let clean: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    STANDARD.decode(clean).ok()
}

const OID_RSA: &str = "1.2.840.113549.1.1.1";
const OID_EC: &str = "1.2.840.10045.2.1";
const OID_P256: &str = "1.2.840.10045.3.1.7";
const OID_P384: &str = "1.3.132.0.34";
const OID_P521: &str = "1.3.132.0.35";

/// A subject public key's kind and size, from its algorithm OIDs.
fn leaf_key(spki: &x509_parser::x509::SubjectPublicKeyInfo<'_>) -> Result<LeafKey, PkiError> {
    let alg = spki.algorithm.algorithm.to_id_string();
    let raw = spki.subject_public_key.data.to_vec();
    let whole = spki.raw.to_vec();
    if alg == OID_RSA {
        let bits = spki.parsed().map(|k| k.key_size()).unwrap_or(0) as u32;
        return Ok(LeafKey { raw, alg: &rcgen::PKCS_RSA_SHA256, spki: whole, spec: KeySpec::Rsa(bits) });
    }
    if alg == OID_EC {
        let curve = spki.algorithm.parameters.as_ref().and_then(|p| p.as_oid().ok()).map(|o| o.to_id_string()).unwrap_or_default();
        let ec = |alg, c| Ok(LeafKey { raw: raw.clone(), alg, spki: whole.clone(), spec: KeySpec::Ec(c) });
        return match curve.as_str() {
            OID_P256 => ec(&rcgen::PKCS_ECDSA_P256_SHA256, Curve::P256),
            OID_P384 => ec(&rcgen::PKCS_ECDSA_P384_SHA384, Curve::P384),
            OID_P521 => {
                p521::PublicKey::from_sec1_bytes(&raw)
                    .map_err(|_| PkiError::Invalid("The P521 public key is not a point of the curve.".into()))?;
                // P-384's algorithm stands in for rcgen; `issue` writes `spki` (see `LeafKey`).
                ec(&rcgen::PKCS_ECDSA_P384_SHA384, Curve::P521)
            }
            _ => Err(PkiError::Invalid("The CSR's elliptic curve is not P256, P384 or P521.".into())),
        };
    }
    Err(PkiError::Invalid("The CSR's key is neither RSA nor ECC.".into()))
}

fn subject_of(name: &x509_parser::x509::X509Name<'_>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for a in name.iter_attributes() {
        let k = match a.attr_type().to_id_string().as_str() {
            "2.5.4.3" => "CN",
            "2.5.4.10" => "O",
            "2.5.4.11" => "OU",
            "2.5.4.7" => "L",
            "2.5.4.8" => "ST",
            "2.5.4.6" => "C",
            _ => continue,
        };
        if let Ok(v) = a.as_str() {
            out.push((k.to_owned(), v.to_owned()));
        }
    }
    out
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

/// The UTF8String of an otherName's value (`[0] EXPLICIT UTF8String`).
fn other_name_utf8(value: &[u8]) -> Option<&str> {
    let (tag, inner, rest) = read_tlv(value)?;
    let (tag2, text, rest2) = read_tlv(inner)?;
    if tag != 0xA0 || tag2 != 0x0C || !rest.is_empty() || !rest2.is_empty() {
        return None;
    }
    std::str::from_utf8(text).ok()
}

/// One DER element at the start of `der`: its tag, its content and what follows it.
fn read_tlv(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let tag = *der.first()?;
    let first = *der.get(1)?;
    let (head, len) = if first < 0x80 {
        (2, usize::from(first))
    } else {
        let k = usize::from(first & 0x7f);
        if k == 0 || k > 4 {
            return None;
        }
        (2 + k, der.get(2..2 + k)?.iter().fold(0usize, |a, b| (a << 8) | usize::from(*b)))
    };
    let end = head.checked_add(len)?;
    Some((tag, der.get(head..end)?, der.get(end..)?))
}

/// The elements one after the other in `content` (whole, with their tags).
fn elements(mut content: &[u8]) -> Option<Vec<&[u8]>> {
    let mut out = Vec::new();
    while !content.is_empty() {
        let (_, _, rest) = read_tlv(content)?;
        out.push(&content[..content.len() - rest.len()]);
        content = rest;
    }
    Some(out)
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

/// The public key of a PKCS#8 private key, as a leaf key.
pub fn public_of(key: &PrivateKey) -> Result<LeafKey, PkiError> {
    use x509_parser::prelude::FromDer as _;
    let spki = match load_key(&key.0) {
        Ok(kp) => kp.public_key_der(),
        Err(e) => {
            use p521::pkcs8::{DecodePrivateKey as _, EncodePublicKey as _};
            let k = p521::SecretKey::from_pkcs8_der(&key.0).map_err(|_| e)?;
            let doc = k.public_key().to_public_key_der().map_err(|_| PkiError::Internal("a key's public part".into()))?;
            doc.as_bytes().to_vec()
        }
    };
    let (_, parsed) =
        x509_parser::x509::SubjectPublicKeyInfo::from_der(&spki).map_err(|_| PkiError::Internal("a key's public part".into()))?;
    leaf_key(&parsed)
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

/// What a leaf certificate says.
#[derive(Debug)]
pub struct Leaf<'a> {
    pub subject: &'a [(String, String)],
    pub sans: &'a Sans,
    pub key: &'a LeafKey,
    pub not_before: i64,
    pub not_after: i64,
    pub crl_url: &'a str,
}

/// An issued certificate: DER, serial and thumbprint (upper-case hex).
#[derive(Clone, Debug)]
pub struct Issued {
    pub der: Vec<u8>,
    pub serial: String,
    pub thumbprint: String,
}

pub fn hex_upper(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// SHA-1 of a DER certificate: the product's thumbprint.
pub fn thumbprint(der: &[u8]) -> String {
    hex_upper(ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, der).as_ref())
}

/// Signs a leaf certificate.
pub fn issue(issuer: &Issuer<'_>, leaf: &Leaf<'_>, rng: &dyn Random) -> Result<Issued, PkiError> {
    let ca = issuer.certificate()?;
    let key = issuer.signer.key_pair()?;
    let mut p = CertificateParams::default();
    p.distinguished_name = distinguished_name(leaf.subject);
    p.subject_alt_names = leaf.sans.rcgen()?;
    // No basicConstraints on a leaf: `cA FALSE` written out is a DEFAULT value, which DER forbids
    // (Python's cryptography, and so vcert-python, refuses such a certificate).
    p.is_ca = IsCa::NoCa;
    p.key_usages = match leaf.key.spec {
        KeySpec::Rsa(_) => vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment],
        KeySpec::Ec(_) => vec![KeyUsagePurpose::DigitalSignature],
    };
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    p.not_before = at(leaf.not_before)?;
    p.not_after = at(leaf.not_after)?;
    let s = serial(rng);
    p.serial_number = Some(SerialNumber::from_slice(&s));
    p.crl_distribution_points = vec![CrlDistributionPoint { uris: vec![leaf.crl_url.to_owned()] }];
    p.use_authority_key_identifier_extension = true;
    p.key_identifier_method = KeyIdMethod::Sha256;
    let p521 = leaf.key.spec == KeySpec::Ec(Curve::P521);
    let repeated = leaf.subject.iter().enumerate().any(|(i, (k, _))| leaf.subject[..i].iter().any(|(x, _)| x == k));
    let der = if p521 || repeated {
        // rcgen writes the certificate unsigned; its to-be-signed part gets the subject with
        // every value and the key's own SubjectPublicKeyInfo, and the CA signs that.
        let unsigned = KeyPair::from_remote(Box::new(Unsigned { public: key.der_bytes().to_vec(), alg: key.algorithm() }))
            .map_err(internal("the CA's key"))?;
        let draft = p.signed_by(leaf.key, &ca, &unsigned).map_err(internal("writing the certificate"))?;
        let subject = repeated.then(|| name_der(leaf.subject));
        let spki = p521.then_some(leaf.key);
        let rewritten = rewrite_tbs(draft.der(), subject.as_deref(), spki)?;
        let sig = issuer.signer.sign(&rewritten.tbs)?;
        seq(&[&rewritten.tbs, &rewritten.sig_alg, &tlv(0x03, &[&[0u8][..], &sig].concat())])
    } else {
        p.signed_by(leaf.key, &ca, &key).map_err(internal("signing the certificate"))?.der().to_vec()
    };
    Ok(Issued { thumbprint: thumbprint(&der), serial: hex_upper(&s), der })
}

/// A key rcgen writes a certificate "signed" by: the CA's algorithm and public key, and a
/// placeholder signature, for a certificate whose to-be-signed part is rewritten and then
/// signed by the CA (see [`issue`]). Nothing it makes leaves this module.
struct Unsigned {
    public: Vec<u8>,
    alg: &'static SignatureAlgorithm,
}

impl rcgen::RemoteKeyPair for Unsigned {
    fn public_key(&self) -> &[u8] {
        &self.public
    }
    fn sign(&self, _msg: &[u8]) -> Result<Vec<u8>, rcgen::Error> {
        Ok(vec![0])
    }
    fn algorithm(&self) -> &'static SignatureAlgorithm {
        self.alg
    }
}

/// A subject (Name, DER) with every attribute given, in order, one per RDN: UTF8String values, a
/// country as a PrintableString (as rcgen writes them).
fn name_der(entries: &[(String, String)]) -> Vec<u8> {
    let mut rdns = Vec::new();
    for (k, v) in entries {
        let oid: u8 = match k.as_str() {
            "CN" => 3,
            "C" => 6,
            "L" => 7,
            "ST" => 8,
            "O" => 10,
            "OU" => 11,
            _ => continue,
        };
        let printable = |v: &str| v.chars().all(|c| c.is_ascii_alphanumeric() || " '()+,-./:=?".contains(c));
        let tag = if k == "C" && printable(v) { 0x13 } else { 0x0C };
        let attr = seq(&[&[0x06, 0x03, 0x55, 0x04, oid][..], &tlv(tag, v.as_bytes())]);
        rdns.push(tlv(0x31, &attr));
    }
    seq(&rdns.iter().map(Vec::as_slice).collect::<Vec<_>>())
}

/// A certificate's to-be-signed part (DER) and signature algorithm, taken apart.
struct Rewritten {
    tbs: Vec<u8>,
    sig_alg: Vec<u8>,
}

/// The to-be-signed part of `cert` with its subject replaced by `subject` and its
/// SubjectPublicKeyInfo by `key`'s own (which must hold the same public key).
fn rewrite_tbs(cert: &[u8], subject: Option<&[u8]>, key: Option<&LeafKey>) -> Result<Rewritten, PkiError> {
    let broken = || PkiError::Internal("rewriting the certificate".into());
    let (_, outer, _) = read_tlv(cert).ok_or_else(broken)?;
    let parts = elements(outer).ok_or_else(broken)?;
    let [tbs, sig_alg, _sig] = parts.as_slice() else { return Err(broken()) };
    let (_, tbs_content, _) = read_tlv(tbs).ok_or_else(broken)?;
    let mut fields: Vec<Vec<u8>> = elements(tbs_content).ok_or_else(broken)?.into_iter().map(<[u8]>::to_vec).collect();
    // version [0], serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo, extensions [3]
    if fields.len() < 7 || fields[0].first() != Some(&0xA0) {
        return Err(broken());
    }
    if let Some(s) = subject {
        fields[5] = s.to_vec();
    }
    if let Some(k) = key {
        if !fields[6].ends_with(&k.raw) {
            return Err(broken());
        }
        fields[6] = k.spki.clone();
    }
    Ok(Rewritten { tbs: seq(&fields.iter().map(Vec::as_slice).collect::<Vec<_>>()), sig_alg: sig_alg.to_vec() })
}

/// A revoked serial for a CRL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revoked {
    pub serial_hex: String,
    pub at: i64,
    pub reason: i64,
}

fn reason(r: i64) -> Option<RevocationReason> {
    Some(match r {
        1 => RevocationReason::KeyCompromise,
        2 => RevocationReason::CaCompromise,
        3 => RevocationReason::AffiliationChanged,
        4 => RevocationReason::Superseded,
        5 => RevocationReason::CessationOfOperation,
        _ => return None,
    })
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).filter_map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()).collect()
}

/// How long a CRL is valid: its `nextUpdate` is this after it was signed.
/// A revocation stays on the CRL this long after its certificate expired, so
/// that it appears on one regularly scheduled CRL issued after the
/// certificate's end (RFC 5280 §3.3), then leaves it.
pub const CRL_VALIDITY_SECS: i64 = 86_400;

/// A CRL of the CA, signed now, valid [`CRL_VALIDITY_SECS`] (DER).
pub fn crl(issuer: &Issuer<'_>, revoked: &[Revoked], now: i64) -> Result<Vec<u8>, PkiError> {
    let ca = issuer.certificate()?;
    let key = issuer.signer.key_pair()?;
    let mut list = Vec::with_capacity(revoked.len());
    for r in revoked {
        list.push(RevokedCertParams {
            serial_number: SerialNumber::from_slice(&unhex(&r.serial_hex)),
            revocation_time: at(r.at)?,
            reason_code: reason(r.reason),
            invalidity_date: None,
        });
    }
    let params = CertificateRevocationListParams {
        this_update: at(now - 60)?,
        next_update: at(now + CRL_VALIDITY_SECS)?,
        crl_number: SerialNumber::from(now.max(1) as u64),
        issuing_distribution_point: None,
        revoked_certs: list,
        // The CA certificate's subject key identifier (an offline root's SHA-1, say), as its leaves name it.
        key_identifier_method: ca.params().key_identifier_method.clone(),
    };
    Ok(params.signed_by(&ca, &key).map_err(internal("signing the CRL"))?.der().to_vec())
}

/// PEM of one block with CRLF line ends (§0.6 of the reference).
pub fn pem(label: &str, der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\r\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push_str("\r\n");
    }
    out.push_str(&format!("-----END {label}-----\r\n"));
    out
}

// ------------------------------------------------------------------ PBES2

fn der_len(n: usize, out: &mut Vec<u8>) {
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes: Vec<u8> = n.to_be_bytes().iter().copied().skip_while(|b| *b == 0).collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend_from_slice(&bytes);
    }
}

fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    der_len(content.len(), &mut out);
    out.extend_from_slice(content);
    out
}

fn seq(parts: &[&[u8]]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

fn der_uint(v: u32) -> Vec<u8> {
    let mut b: Vec<u8> = v.to_be_bytes().iter().copied().skip_while(|b| *b == 0).collect();
    if b.first().is_none_or(|x| x & 0x80 != 0) {
        b.insert(0, 0);
    }
    tlv(0x02, &b)
}

const OID_PBES2: &[u8] = &[0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x05, 0x0D];
const OID_PBKDF2: &[u8] = &[0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x05, 0x0C];
const OID_HMAC_SHA256: &[u8] = &[0x06, 0x08, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x02, 0x09];
const OID_AES256_CBC: &[u8] = &[0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x01, 0x2A];

/// PBKDF2 iterations of an exported key.
pub const PBKDF2_ITERATIONS: u32 = 100_000;

/// A PKCS#8 key encrypted under `password` as PBES2 (PBKDF2-HMAC-SHA256, AES-256-CBC):
/// the `ENCRYPTED PRIVATE KEY` that vcert, Terraform and openssl read.
pub fn encrypt_pkcs8(key: &PrivateKey, password: &str, rng: &dyn Random) -> Result<Vec<u8>, PkiError> {
    use aes::cipher::{BlockEncryptMut as _, KeyIvInit as _, block_padding::Pkcs7};
    if password.is_empty() {
        return Err(PkiError::Invalid("A Password is required to export a private key.".into()));
    }
    let mut salt = [0u8; 16];
    let mut iv = [0u8; 16];
    rng.fill(&mut salt);
    rng.fill(&mut iv);
    let mut dk = Zeroizing::new([0u8; 32]);
    let iterations = std::num::NonZeroU32::new(PBKDF2_ITERATIONS).ok_or_else(|| PkiError::Internal("iterations".into()))?;
    ring::pbkdf2::derive(ring::pbkdf2::PBKDF2_HMAC_SHA256, iterations, &salt, password.as_bytes(), &mut dk[..]);
    let enc = cbc::Encryptor::<aes::Aes256>::new(dk[..].into(), (&iv).into());
    let ct = enc.encrypt_padded_vec_mut::<Pkcs7>(&key.0);
    let null = [0x05, 0x00];
    let prf = seq(&[OID_HMAC_SHA256, &null]);
    let kdf_params = seq(&[&tlv(0x04, &salt), &der_uint(PBKDF2_ITERATIONS), &prf]);
    let kdf = seq(&[OID_PBKDF2, &kdf_params]);
    let scheme = seq(&[OID_AES256_CBC, &tlv(0x04, &iv)]);
    let pbes2 = seq(&[OID_PBES2, &seq(&[&kdf, &scheme])]);
    Ok(seq(&[&pbes2, &tlv(0x04, &ct)]))
}

// ------------------------------------------------------------------ PKCS#12

fn oid_tlv(der: &[u8]) -> Vec<u8> {
    der.to_vec()
}

const OID_DATA: &[u8] = &[0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01];
const OID_CERT_BAG: &[u8] = &[0x06, 0x0B, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x0C, 0x0A, 0x01, 0x03];
const OID_SHROUDED_KEY_BAG: &[u8] = &[0x06, 0x0B, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x0C, 0x0A, 0x01, 0x02];
const OID_X509_CERTIFICATE: &[u8] = &[0x06, 0x0A, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x16, 0x01];
const OID_LOCAL_KEY_ID: &[u8] = &[0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x15];
const OID_SHA256: &[u8] = &[0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01];

/// `[0] EXPLICIT` around `inner`.
fn explicit0(inner: &[u8]) -> Vec<u8> {
    tlv(0xA0, inner)
}

/// The PKCS#12 key derivation (RFC 7292 B.2) with SHA-256: `id` 3 for the MAC key.
fn pkcs12_kdf(password: &str, salt: &[u8], iterations: u32, id: u8, n: usize) -> Zeroizing<Vec<u8>> {
    const U: usize = 32;
    const V: usize = 64;
    let mut pw: Zeroizing<Vec<u8>> = Zeroizing::new(password.encode_utf16().flat_map(u16::to_be_bytes).collect());
    pw.extend_from_slice(&[0, 0]);
    let fill = |x: &[u8]| -> Vec<u8> {
        if x.is_empty() {
            return Vec::new();
        }
        let len = V * x.len().div_ceil(V);
        (0..len).map(|i| x[i % x.len()]).collect()
    };
    let mut i_buf: Zeroizing<Vec<u8>> = Zeroizing::new([fill(salt), fill(&pw)].concat());
    let d = [id; V];
    let mut out = Zeroizing::new(Vec::with_capacity(n));
    while out.len() < n {
        let mut a = ring::digest::digest(&ring::digest::SHA256, &[&d[..], &i_buf[..]].concat()).as_ref().to_vec();
        for _ in 1..iterations {
            a = ring::digest::digest(&ring::digest::SHA256, &a).as_ref().to_vec();
        }
        let take = U.min(n - out.len());
        out.extend_from_slice(&a[..take]);
        let b: Vec<u8> = (0..V).map(|k| a[k % U]).collect();
        for block in i_buf.chunks_mut(V) {
            let mut carry = 1u16;
            for k in (0..V).rev() {
                let sum = u16::from(block[k]) + u16::from(b[k]) + carry;
                block[k] = (sum & 0xff) as u8;
                carry = sum >> 8;
            }
        }
    }
    out
}

/// The certificates (DER, leaf first) as PKCS #7 (`.p7b`): a SignedData
/// without signers (RFC 5652 §5, the "certs-only" message), the
/// certificates a DER `SET OF`, so in the order of their encodings.
pub fn pkcs7(certs: &[&[u8]]) -> Vec<u8> {
    let mut sorted = certs.to_vec();
    sorted.sort();
    let signed = seq(&[
        &der_uint(1),
        &tlv(0x31, &[]),              // digestAlgorithms: none
        &seq(&[OID_DATA]),            // encapContentInfo: data, without content
        &tlv(0xA0, &sorted.concat()), // certificates [0] IMPLICIT SET OF Certificate
        &tlv(0x31, &[]),              // signerInfos: none
    ]);
    seq(&[OID_SIGNED_DATA, &explicit0(&signed)])
}

/// 1.2.840.113549.1.7.2 signedData
const OID_SIGNED_DATA: &[u8] = &[0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02];

/// A PKCS#12 file (modern: the key as PBES2 AES-256-CBC with PBKDF2-HMAC-SHA256, the MAC
/// HMAC-SHA256): the certificates (leaf first), and the key when given, under `password`.
pub fn pkcs12(certs: &[&[u8]], key: Option<&PrivateKey>, password: &str, rng: &dyn Random) -> Result<Vec<u8>, PkiError> {
    if password.is_empty() {
        return Err(PkiError::Invalid("A Password is required for PKCS #12.".into()));
    }
    let local_id =
        certs.first().map(|c| ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, c).as_ref().to_vec()).unwrap_or_default();
    let attrs = tlv(0x31, &seq(&[OID_LOCAL_KEY_ID, &tlv(0x31, &tlv(0x04, &local_id))]));
    let mut cert_bags = Vec::new();
    for (i, c) in certs.iter().enumerate() {
        let bag_value = seq(&[OID_X509_CERTIFICATE, &explicit0(&tlv(0x04, c))]);
        let bag = if i == 0 {
            seq(&[&oid_tlv(OID_CERT_BAG), &explicit0(&bag_value), &attrs])
        } else {
            seq(&[&oid_tlv(OID_CERT_BAG), &explicit0(&bag_value)])
        };
        cert_bags.push(bag);
    }
    let cert_safe = seq(&cert_bags.iter().map(Vec::as_slice).collect::<Vec<_>>());
    let mut infos = vec![seq(&[OID_DATA, &explicit0(&tlv(0x04, &cert_safe))])];
    if let Some(k) = key {
        let shrouded = encrypt_pkcs8(k, password, rng)?;
        let bag = seq(&[OID_SHROUDED_KEY_BAG, &explicit0(&shrouded), &attrs]);
        let key_safe = seq(&[&bag]);
        infos.push(seq(&[OID_DATA, &explicit0(&tlv(0x04, &key_safe))]));
    }
    let auth_safe = seq(&infos.iter().map(Vec::as_slice).collect::<Vec<_>>());
    let mut salt = [0u8; 16];
    rng.fill(&mut salt);
    let iterations = 2048;
    let mac_key = pkcs12_kdf(password, &salt, iterations, 3, 32);
    let tag = ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &mac_key), &auth_safe);
    let null = [0x05, 0x00];
    let mac_data = seq(&[&seq(&[&seq(&[OID_SHA256, &null]), &tlv(0x04, tag.as_ref())]), &tlv(0x04, &salt), &der_uint(iterations)]);
    Ok(seq(&[&der_uint(3), &seq(&[OID_DATA, &explicit0(&tlv(0x04, &auth_safe))]), &mac_data]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Os;
    impl Random for Os {
        fn fill(&self, d: &mut [u8]) {
            ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), d).unwrap();
        }
    }

    #[test]
    fn a_ca_issues_for_a_generated_key_and_signs_a_crl() {
        let subject = parse_subject("CN=Test CA, O=Acme, C=FR").unwrap();
        let (ca_der, ca_key) = create_ca(CaAlgorithm::P256, &subject, 1_800_000_000, 3650, &Os).unwrap();
        assert!(!ca_der.is_empty());
        let signer = SoftwareSigner(ca_key);
        let issuer = Issuer { cert_der: &ca_der, signer: &signer };
        let key = generate_key(KeySpec::Ec(Curve::P384), &Os).unwrap();
        let leaf_key = public_of(&key).unwrap();
        let sans = Sans { dns: vec!["www.example.com".into()], ..Sans::default() };
        let leaf_subject = vec![("CN".to_owned(), "www.example.com".to_owned())];
        let issued = issue(
            &issuer,
            &Leaf {
                subject: &leaf_subject,
                sans: &sans,
                key: &leaf_key,
                not_before: 1_800_000_000,
                not_after: 1_800_086_400,
                crl_url: "https://x/crl",
            },
            &Os,
        )
        .unwrap();
        assert_eq!(issued.serial.len(), 32);
        assert_eq!(issued.thumbprint.len(), 40);
        let listed = [Revoked { serial_hex: issued.serial.clone(), at: 1_800_000_100, reason: 1 }];
        let der = crl(&issuer, &listed, 1_800_000_200).unwrap();
        assert!(der.len() > 100);
        // ECDSA's signatures are randomized: the same CRL signed twice in one second differs,
        // which is how the server's tests tell a kept CRL from one signed again.
        assert_ne!(crl(&issuer, &listed, 1_800_000_200).unwrap(), der);
        assert!(encrypt_pkcs8(&key, "", &Os).is_err());
        let enc = encrypt_pkcs8(&key, "pw", &Os).unwrap();
        assert_eq!(enc[0], 0x30);
        assert!(pem("X", &[1, 2, 3]).contains("\r\n"));
    }

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

        let issued = issue(
            &Issuer { cert_der: &sub_der, signer: &sub },
            &Leaf {
                subject: &leaf_subject,
                sans: &Sans::default(),
                key: &public_of(&leaf_key).unwrap(),
                not_before: now,
                not_after: now + 86_400,
                crl_url: "http://x/crl",
            },
            &Os,
        )
        .unwrap();
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

    #[test]
    fn subjects_and_pem_bodies_are_read() {
        assert!(parse_subject("O=Acme").is_err());
        assert!(parse_subject("CN=a, X=b").is_err());
        assert_eq!(pem_body("-----BEGIN CERTIFICATE REQUEST-----AAEC-----END CERTIFICATE REQUEST-----"), Some(vec![0, 1, 2]));
        assert_eq!(pem_body("AAEC"), Some(vec![0, 1, 2]));
        assert!(parse_csr("not a csr").is_err());
    }

    fn leaf_for(issuer: &Issuer<'_>, subject: &[(String, String)], sans: &Sans, key: &LeafKey) -> Issued {
        issue(issuer, &Leaf { subject, sans, key, not_before: 1_800_000_000, not_after: 1_800_086_400, crl_url: "http://x/crl" }, &Os)
            .unwrap()
    }

    fn subject(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    /// A PKCS#10 request by a P-521 key, signed with `hash` (`sha512`, `sha256`), written by hand
    /// (rcgen with ring cannot sign with P-521).
    fn p521_csr(key: &p521::SecretKey, cn: &str, hash: &str) -> Vec<u8> {
        use p521::ecdsa::signature::hazmat::RandomizedPrehashSigner as _;
        use p521::pkcs8::EncodePublicKey as _;
        let spki = key.public_key().to_public_key_der().unwrap().as_bytes().to_vec();
        let cri = seq(&[&der_uint(0), &name_der(&subject(&[("CN", cn)])), &spki, &[0xA0, 0x00][..]]);
        let (oid_last, digest) = match hash {
            "sha512" => (4u8, ring::digest::digest(&ring::digest::SHA512, &cri)),
            _ => (2u8, ring::digest::digest(&ring::digest::SHA256, &cri)),
        };
        let mut prehash = vec![0u8; 33usize.saturating_sub(digest.as_ref().len())];
        prehash.extend_from_slice(digest.as_ref());
        let signer = p521::ecdsa::SigningKey::from_bytes(&key.to_bytes()).unwrap();
        let sig: p521::ecdsa::Signature = signer.sign_prehash_with_rng(&mut Rng::new(&Os), &prehash).unwrap();
        let alg = seq(&[&[0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, oid_last][..]]);
        seq(&[&cri, &alg, &tlv(0x03, &[&[0u8][..], sig.to_der().as_bytes()].concat())])
    }

    fn spki_curve(der: &[u8]) -> String {
        let c = parse_cert(der).unwrap();
        c.public_key().algorithm.parameters.as_ref().unwrap().as_oid().unwrap().to_id_string()
    }

    /// A central P-521 key and P-521 CSRs (SHA-512 and SHA-256) are issued under P-256 and P-384
    /// CAs: the certificate holds the very key (secp521r1), its signature verifies with the CA's
    /// key, and a CSR whose signature does not verify is refused.
    #[test]
    fn p521_leaf_keys_are_issued_from_a_csr_and_generated() {
        for alg in [CaAlgorithm::P256, CaAlgorithm::P384] {
            let (ca_der, ca_key) = create_ca(alg, &parse_subject("CN=P521 CA").unwrap(), 1_800_000_000, 3650, &Os).unwrap();
            let signer = SoftwareSigner(ca_key);
            let issuer = Issuer { cert_der: &ca_der, signer: &signer };
            let ca = parse_cert(&ca_der).unwrap();

            let key = generate_key(KeySpec::Ec(Curve::P521), &Os).unwrap();
            let leaf = public_of(&key).unwrap();
            assert_eq!(leaf.spec, KeySpec::Ec(Curve::P521));
            let issued = leaf_for(&issuer, &subject(&[("CN", "p521.example.com")]), &Sans::default(), &leaf);
            let cert = parse_cert(&issued.der).unwrap();
            cert.verify_signature(Some(ca.public_key())).unwrap();
            assert_eq!(spki_curve(&issued.der), OID_P521);
            assert_eq!(cert.public_key().raw, &leaf.spki[..]);
            assert_eq!(cert.public_key().subject_public_key.data.len(), 133);
            assert_eq!(cert_facts(&issued.der).unwrap().key, KeySpec::Ec(Curve::P521));
            assert_eq!(cert_facts(&issued.der).unwrap().subject, subject(&[("CN", "p521.example.com")]));
            assert_eq!(cert.raw_serial_as_string().replace(':', "").to_ascii_uppercase(), issued.serial);
            assert!(encrypt_pkcs8(&key, "pw", &Os).is_ok());

            let secret = p521::SecretKey::random(&mut Rng::new(&Os));
            for hash in ["sha512", "sha256"] {
                let der = p521_csr(&secret, "csr521.example.com", hash);
                let csr = parse_csr(&pem("CERTIFICATE REQUEST", &der)).unwrap();
                assert_eq!(csr.key.spec, KeySpec::Ec(Curve::P521));
                assert_eq!(csr.get("CN"), Some("csr521.example.com"));
                let issued = leaf_for(&issuer, &csr.subject, &csr.sans, &csr.key);
                let cert = parse_cert(&issued.der).unwrap();
                cert.verify_signature(Some(ca.public_key())).unwrap();
                assert_eq!(spki_curve(&issued.der), OID_P521);
                let mut bad = der.clone();
                let n = bad.len();
                bad[n - 3] ^= 1;
                let e = parse_csr(&pem("CERTIFICATE REQUEST", &bad)).unwrap_err();
                assert!(e.to_string().contains("does not verify"), "{e}");
            }
            // Signed by another P-521 key than the one it holds.
            let other = p521::SecretKey::random(&mut Rng::new(&Os));
            let mine = p521_csr(&secret, "x.example.com", "sha512");
            let theirs = p521_csr(&other, "x.example.com", "sha512");
            let (_, m, _) = read_tlv(&mine).unwrap();
            let (_, t, _) = read_tlv(&theirs).unwrap();
            let (m, t) = (elements(m).unwrap(), elements(t).unwrap());
            let forged = seq(&[m[0], m[1], t[2]]);
            assert!(parse_csr(&pem("CERTIFICATE REQUEST", &forged)).is_err());
        }
    }

    /// A UPN from the request or a CSR is an otherName 1.3.6.1.4.1.311.20.2.3 UTF8String in the leaf.
    #[test]
    fn upn_names_are_issued() {
        use x509_parser::extensions::{GeneralName, ParsedExtension};
        let (ca_der, ca_key) = create_ca(CaAlgorithm::P256, &parse_subject("CN=UPN CA").unwrap(), 1_800_000_000, 3650, &Os).unwrap();
        let signer = SoftwareSigner(ca_key);
        let issuer = Issuer { cert_der: &ca_der, signer: &signer };
        let mut sans = Sans::default();
        sans.push("0", "alice@corp.example").unwrap();
        sans.push("UPN", "alice@corp.example").unwrap();
        sans.push("dns", "alice.example.com").unwrap();
        assert_eq!(sans.upn, vec!["alice@corp.example"]);
        assert_eq!(sans.kinds(), vec!["DNS", "UPN"]);
        assert!(sans.push("0", "").is_err());
        assert!(sans.push("0", "a\nb").is_err());
        let json = serde_json::to_string(&sans).unwrap();
        assert!(json.contains(r#""UPN":["alice@corp.example"]"#), "{json}");
        assert_eq!(serde_json::from_str::<Sans>(r#"{"DNS":["a"]}"#).unwrap().upn, Vec::<String>::new(), "rows before UPN read");

        let key = generate_key(KeySpec::Ec(Curve::P256), &Os).unwrap();
        let issued = leaf_for(&issuer, &subject(&[("CN", "alice")]), &sans, &public_of(&key).unwrap());
        let cert = parse_cert(&issued.der).unwrap();
        let names: Vec<String> = cert
            .iter_extensions()
            .filter_map(|e| match e.parsed_extension() {
                ParsedExtension::SubjectAlternativeName(s) => Some(s.general_names.clone()),
                _ => None,
            })
            .flatten()
            .filter_map(|g| match g {
                GeneralName::OtherName(oid, v) => {
                    assert_eq!(oid.to_id_string(), "1.3.6.1.4.1.311.20.2.3");
                    other_name_utf8(v).map(str::to_owned)
                }
                _ => None,
            })
            .collect();
        assert_eq!(names, vec!["alice@corp.example"]);

        // A CSR's UPN is read.
        let kp = KeyPair::generate().unwrap();
        let mut p = CertificateParams::default();
        p.distinguished_name = distinguished_name(&subject(&[("CN", "bob")]));
        p.subject_alt_names = vec![SanType::OtherName((UPN_OID.to_vec(), rcgen::OtherNameValue::Utf8String("bob@corp.example".into())))];
        let csr = parse_csr(&p.serialize_request(&kp).unwrap().pem().unwrap()).unwrap();
        assert_eq!(csr.sans.upn, vec!["bob@corp.example"]);
    }

    /// Several OUs (from a request or a CSR) are all in the leaf, in order, each its own RDN, under
    /// a software CA of each algorithm; a subject without repeats is rcgen's, unchanged.
    #[test]
    fn several_organizational_units_are_issued() {
        let wanted = subject(&[("CN", "ou.example.com"), ("O", "Acme"), ("OU", "Web"), ("OU", "Ops"), ("OU", "Paris"), ("C", "FR")]);
        for alg in [CaAlgorithm::P256, CaAlgorithm::P384, CaAlgorithm::Rsa(2048)] {
            let (ca_der, ca_key) = create_ca(alg, &parse_subject("CN=OU CA").unwrap(), 1_800_000_000, 3650, &Os).unwrap();
            let signer = SoftwareSigner(ca_key);
            let issuer = Issuer { cert_der: &ca_der, signer: &signer };
            let ca = parse_cert(&ca_der).unwrap();
            let key = generate_key(KeySpec::Ec(Curve::P256), &Os).unwrap();
            let issued = leaf_for(&issuer, &wanted, &Sans::default(), &public_of(&key).unwrap());
            let cert = parse_cert(&issued.der).unwrap();
            cert.verify_signature(Some(ca.public_key())).unwrap();
            assert_eq!(cert_facts(&issued.der).unwrap().subject, wanted);
            assert_eq!(cert.subject().iter().count(), 6, "one RDN each");
            assert_eq!(cert.subject().to_string(), "CN=ou.example.com, O=Acme, OU=Web, OU=Ops, OU=Paris, C=FR");
            assert_eq!(cert.issuer().as_raw(), ca.subject().as_raw());
        }
        // Without a repeated type, name_der writes what rcgen writes.
        let plain = subject(&[("CN", "a"), ("O", "Acme"), ("OU", "Web"), ("C", "FR")]);
        let (ca_der, ca_key) = create_ca(CaAlgorithm::P256, &parse_subject("CN=OU CA").unwrap(), 1_800_000_000, 3650, &Os).unwrap();
        let signer = SoftwareSigner(ca_key);
        let key = generate_key(KeySpec::Ec(Curve::P256), &Os).unwrap();
        let issued = leaf_for(&Issuer { cert_der: &ca_der, signer: &signer }, &plain, &Sans::default(), &public_of(&key).unwrap());
        assert_eq!(parse_cert(&issued.der).unwrap().subject().as_raw(), &name_der(&plain)[..]);
    }

    /// openssl opens it with the password (the MAC, the PBES2 key), and not without.
    #[test]
    fn a_pkcs12_file_opens_in_openssl() {
        let subject = parse_subject("CN=P12 CA").unwrap();
        let (ca_der, ca_key) = create_ca(CaAlgorithm::P256, &subject, 1_800_000_000, 3650, &Os).unwrap();
        let signer = SoftwareSigner(ca_key);
        let key = generate_key(KeySpec::Ec(Curve::P256), &Os).unwrap();
        let leaf_subject = vec![("CN".to_owned(), "p12.example.com".to_owned())];
        let issued = issue(
            &Issuer { cert_der: &ca_der, signer: &signer },
            &Leaf {
                subject: &leaf_subject,
                sans: &Sans::default(),
                key: &public_of(&key).unwrap(),
                not_before: 1_800_000_000,
                not_after: 1_800_086_400,
                crl_url: "http://x/crl",
            },
            &Os,
        )
        .unwrap();
        let p12 = pkcs12(&[&issued.der, &ca_der], Some(&key), "pw 12", &Os).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.p12"), &p12).unwrap();
        let Ok(out) = std::process::Command::new("openssl")
            .current_dir(dir.path())
            .args(["pkcs12", "-in", "a.p12", "-passin", "pass:pw 12", "-nodes", "-info"])
            .output()
        else {
            eprintln!("openssl is not installed: the PKCS#12 check is skipped");
            return;
        };
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{text}");
        assert!(text.contains("MAC: sha256"), "{text}");
        assert!(text.contains("p12.example.com") && text.contains("BEGIN PRIVATE KEY"), "{text}");
        assert_eq!(text.matches("BEGIN CERTIFICATE").count(), 2, "{text}");
        let bad = std::process::Command::new("openssl")
            .current_dir(dir.path())
            .args(["pkcs12", "-in", "a.p12", "-passin", "pass:wrong", "-nodes"])
            .output()
            .unwrap();
        assert!(!bad.status.success(), "a wrong password fails the MAC");
    }
}
