//! Encodings of certificates and keys as they are handed out and read in:
//! PEM (written with CRLF line ends, read with any or none), certificates one
//! after the other in DER or PEM, PKCS #7 (`.p7b`, certificates only) and
//! PKCS #12 (certificates and a key under a password, as modern openssl
//! writes it).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use zeroize::Zeroizing;

use strongroom_core::random::Random;

use crate::PkiError;
use crate::der::{der_uint, seq, tlv};
use crate::keys::{PrivateKey, encrypt_pkcs8};

/// PEM of one block, its lines ended by CRLF as the product's own PEM is.
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

// ------------------------------------------------------------------ PKCS #7 and #12

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
    use strongroom_core::cert::{Curve, KeySpec};

    use crate::testing::{Os, leaf_for, software_ca};
    use crate::{CaAlgorithm, Issuer, Sans, generate_key, public_of};

    /// openssl opens it with the password (the MAC, the PBES2 key), and not without.
    #[test]
    fn a_pkcs12_file_opens_in_openssl() {
        let (ca_der, signer) = software_ca(CaAlgorithm::P256, "CN=P12 CA");
        let key = generate_key(KeySpec::Ec(Curve::P256), &Os).unwrap();
        let leaf_subject = vec![("CN".to_owned(), "p12.example.com".to_owned())];
        let issued = leaf_for(&Issuer { cert_der: &ca_der, signer: &signer }, &leaf_subject, &Sans::default(), &public_of(&key).unwrap());
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
