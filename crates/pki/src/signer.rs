//! How a CA's key signs: [`CaSigner`], which rcgen's issuer signs through,
//! and [`SoftwareSigner`], a PKCS#8 key in memory. This crate keeps no keys
//! and knows no key ring: a key in a PKCS#11 token signs through the key
//! ring's own implementation (`strongroom_keyring::TokenCaSigner`), which
//! turns the token's ECDSA `r || s` into X.509's DER with [`ecdsa_der`].

use rcgen::KeyPair;

use crate::PkiError;
use crate::der::{seq, tlv};
use crate::keys::{PrivateKey, load_key};

/// A key of a CA that signs. [`SoftwareSigner`] holds a PKCS#8 in memory for
/// the time of one signature; the key ring's `TokenCaSigner` answers an rcgen
/// `KeyPair::from_remote` over a token's key, whose calls block (sign on the
/// blocking pool).
pub trait CaSigner: Send + Sync {
    fn key_pair(&self) -> Result<KeyPair, PkiError>;

    /// Signs `msg` as [`CaSigner::key_pair`]'s algorithm does (ECDSA as DER, RSA PKCS#1 v1.5
    /// SHA-256): for a certificate whose to-be-signed part was rewritten (see [`issue`](crate::issue)).
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

/// An ECDSA signature `r || s` (each half the curve's size) as X.509 has it:
/// `SEQUENCE { INTEGER r, INTEGER s }`.
pub fn ecdsa_der(raw: &[u8]) -> Option<Vec<u8>> {
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

/// The public key of a CA's signer as a certificate holds it (SubjectPublicKeyInfo, DER).
pub fn signer_public_key(signer: &dyn CaSigner) -> Result<Vec<u8>, PkiError> {
    Ok(signer.key_pair()?.public_key_der())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each half an INTEGER: leading zeros dropped, a zero put back before a high bit, zero as `02 01 00`.
    #[test]
    fn a_tokens_ecdsa_signature_is_written_as_der() {
        let raw = [[0x00, 0x00, 0x01, 0x02], [0x80, 0x00, 0x00, 0x01]].concat();
        assert_eq!(ecdsa_der(&raw), Some(vec![0x30, 0x0B, 0x02, 0x02, 0x01, 0x02, 0x02, 0x05, 0x00, 0x80, 0x00, 0x00, 0x01]));
        assert_eq!(ecdsa_der(&[0u8; 4]), Some(vec![0x30, 0x06, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00]));
        assert_eq!(ecdsa_der(&[1, 2, 3]), None);
        assert_eq!(ecdsa_der(&[]), None);
    }
}
