//! Leaf certificates, signed by a CA ([`Issuer`]) for a key a CSR or this
//! server gave ([`LeafKey`]): rcgen writes them, but for two things it cannot
//! write, a P-521 key (rcgen with ring has no P-521) and a subject that
//! repeats a type (several OUs): then rcgen writes the certificate unsigned,
//! its to-be-signed part is rewritten with the key's own SubjectPublicKeyInfo
//! and the whole subject, and the CA signs that ([`CaSigner::sign`](crate::CaSigner::sign)).

use rcgen::{
    CertificateParams, CrlDistributionPoint, ExtendedKeyUsagePurpose, IsCa, KeyIdMethod, KeyPair, KeyUsagePurpose, PublicKeyData,
    SerialNumber, SignatureAlgorithm,
};

use strongroom_core::cert::{Curve, KeySpec};
use strongroom_core::random::Random;

use crate::ca::{Issuer, serial};
use crate::der::{elements, read_tlv, seq, tlv};
use crate::facts::{hex_upper, thumbprint};
use crate::keys::LeafKey;
use crate::sans::Sans;
use crate::subject::{distinguished_name, name_der};
use crate::{PkiError, at, internal};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::der::der_uint;
    use crate::facts::parse_cert;
    use crate::keys::{OID_P521, Rng};
    use crate::testing::{Os, leaf_for, software_ca, subject};
    use crate::{CaAlgorithm, cert_facts, encrypt_pkcs8, generate_key, parse_csr, pem, public_of};

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
            let (ca_der, signer) = software_ca(alg, "CN=P521 CA");
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

    /// Several OUs (from a request or a CSR) are all in the leaf, in order, each its own RDN, under
    /// a software CA of each algorithm; a subject without repeats is rcgen's, unchanged.
    #[test]
    fn several_organizational_units_are_issued() {
        let wanted = subject(&[("CN", "ou.example.com"), ("O", "Acme"), ("OU", "Web"), ("OU", "Ops"), ("OU", "Paris"), ("C", "FR")]);
        for alg in [CaAlgorithm::P256, CaAlgorithm::P384, CaAlgorithm::Rsa(2048)] {
            let (ca_der, signer) = software_ca(alg, "CN=OU CA");
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
        let (ca_der, signer) = software_ca(CaAlgorithm::P256, "CN=OU CA");
        let key = generate_key(KeySpec::Ec(Curve::P256), &Os).unwrap();
        let issued = leaf_for(&Issuer { cert_der: &ca_der, signer: &signer }, &plain, &Sans::default(), &public_of(&key).unwrap());
        assert_eq!(parse_cert(&issued.der).unwrap().subject().as_raw(), &name_der(&plain)[..]);
    }
}
