//! Keys: a CA's key algorithms, private keys as PKCS#8 (made here: P-256 and
//! P-384 by ring, P-521 by the `p521` crate, RSA by the `rsa` crate, from the
//! caller's randomness where the crate takes it), a leaf's public key as a
//! CSR or a generated key gives it, and a private key exported under a
//! password (PBES2).

use std::fmt;

use rcgen::{KeyPair, PublicKeyData, SignatureAlgorithm};
use zeroize::Zeroizing;

use strongroom_core::cert::{Curve, KeySpec};
use strongroom_core::random::Random;

use crate::PkiError;
use crate::der::{der_uint, seq, tlv};

/// The key algorithms of a CA (`strongroom admin ca create --algorithm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaAlgorithm {
    P256,
    P384,
    Rsa(u32),
}

impl CaAlgorithm {
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
pub(crate) struct Rng<'a> {
    source: &'a dyn Random,
    buf: Zeroizing<[u8; 4096]>,
    pos: usize,
}

impl<'a> Rng<'a> {
    pub(crate) fn new(source: &'a dyn Random) -> Rng<'a> {
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
pub(crate) fn load_key(pkcs8: &[u8]) -> Result<KeyPair, PkiError> {
    for alg in [&rcgen::PKCS_ECDSA_P256_SHA256, &rcgen::PKCS_ECDSA_P384_SHA384, &rcgen::PKCS_RSA_SHA256] {
        let der = rustls::pki_types::PrivatePkcs8KeyDer::from(pkcs8);
        if let Ok(k) = KeyPair::from_pkcs8_der_and_sign_algo(&der, alg) {
            return Ok(k);
        }
    }
    Err(PkiError::Internal("a stored private key does not load".into()))
}

/// A leaf's public key as a CSR or a generated key gives it. rcgen (with ring) has no P-521
/// algorithm to name such a key with: a P-521 key stands as a P-384 one for rcgen, and
/// [`issue`](crate::issue) puts `spki`, the key's own SubjectPublicKeyInfo, in the certificate instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafKey {
    pub(crate) raw: Vec<u8>,
    pub(crate) alg: &'static SignatureAlgorithm,
    pub(crate) spki: Vec<u8>,
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

const OID_RSA: &str = "1.2.840.113549.1.1.1";
const OID_EC: &str = "1.2.840.10045.2.1";
const OID_P256: &str = "1.2.840.10045.3.1.7";
const OID_P384: &str = "1.3.132.0.34";
pub(crate) const OID_P521: &str = "1.3.132.0.35";

/// A subject public key's kind and size, from its algorithm OIDs.
pub(crate) fn leaf_key(spki: &x509_parser::x509::SubjectPublicKeyInfo<'_>) -> Result<LeafKey, PkiError> {
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

// ------------------------------------------------------------------ PBES2

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
