//! Encryption at rest: XChaCha20-Poly1305 with random 192-bit nonces (no
//! per-key message limit to track), associated data that binds each
//! ciphertext to its entry, field and key id, and keyed hashes for equality
//! lookups.
//!
//! Key ring: data keys are random, stored wrapped by the master key; each
//! ciphertext records the id of the key that sealed it, so keys can be
//! rotated and old data re-encrypted at leisure.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, KeyInit as HmacKeyInit, Mac};
use sha2::Sha256;
use std::fmt;
use zeroize::Zeroize;

use super::VaultId;
use super::value::ValueType;
use crate::random::{Random, bytes};

const NONCE_LEN: usize = 24;

/// A 256-bit symmetric key. Wiped on drop; `Debug` shows nothing.
#[derive(Clone)]
pub struct Key([u8; 32]);

impl Key {
    pub fn new(k: [u8; 32]) -> Key {
        Key(k)
    }

    pub fn generate(rng: &dyn Random) -> Key {
        Key(bytes(rng))
    }

    pub fn expose(&self) -> &[u8; 32] {
        &self.0
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key(<redacted>)")
    }
}

/// Decryption failed: wrong key, tampered bytes, or a ciphertext moved from
/// another entry or field. Never says which.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("decryption failed")]
pub struct CryptoError;

/// Seals `plaintext`: `nonce || ciphertext || tag`.
pub fn seal(key: &Key, rng: &dyn Random, aad: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, CryptoError> {
    let nonce: [u8; NONCE_LEN] = bytes(rng);
    let cipher = XChaCha20Poly1305::new(key.0.as_slice().into());
    let ct = cipher.encrypt(XNonce::from_slice(&nonce), Payload { msg: plaintext, aad }).map_err(|_| CryptoError)?;
    let mut out = Vec::with_capacity(NONCE_LEN + ct.len());
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&ct);
    Ok(out)
}

pub fn open(key: &Key, aad: &[u8], sealed: &[u8]) -> Result<Vec<u8>, CryptoError> {
    if sealed.len() < NONCE_LEN + 16 {
        return Err(CryptoError);
    }
    let (nonce, ct) = sealed.split_at(NONCE_LEN);
    let cipher = XChaCha20Poly1305::new(key.0.as_slice().into());
    cipher.decrypt(XNonce::from_slice(nonce), Payload { msg: ct, aad }).map_err(|_| CryptoError)
}

fn lp(out: &mut Vec<u8>, field: &[u8]) {
    out.extend_from_slice(&(field.len() as u64).to_be_bytes());
    out.extend_from_slice(field);
}

/// Associated data of an entry's secret data.
pub fn aad_data(vault_id: VaultId, key_id: i64) -> Vec<u8> {
    let mut a = b"strongroom/vault-data/v1".to_vec();
    a.extend_from_slice(&vault_id.0.to_be_bytes());
    a.extend_from_slice(&key_id.to_be_bytes());
    a
}

/// Associated data of one association value.
pub fn aad_association(vault_id: VaultId, name: &str, t: ValueType, key_id: i64) -> Vec<u8> {
    let mut a = b"strongroom/vault-association/v1".to_vec();
    a.extend_from_slice(&vault_id.0.to_be_bytes());
    lp(&mut a, name.as_bytes());
    lp(&mut a, t.as_str().as_bytes());
    a.extend_from_slice(&key_id.to_be_bytes());
    a
}

/// Associated data of a data key wrapped by the master key.
pub fn aad_wrapped_key(key_id: i64) -> Vec<u8> {
    let mut a = b"strongroom/vault-key/v1".to_vec();
    a.extend_from_slice(&key_id.to_be_bytes());
    a
}

/// The keyed hash an association is found by in `LookupByAssociation`.
pub fn lookup_hash(lookup_key: &Key, name: &str, t: ValueType, value: &[u8]) -> [u8; 32] {
    let Ok(mut mac) = <Hmac<Sha256> as HmacKeyInit>::new_from_slice(&lookup_key.0) else { return [0; 32] };
    mac.update(b"strongroom/vault-lookup/v1");
    let mut buf = Vec::new();
    lp(&mut buf, name.as_bytes());
    lp(&mut buf, t.as_str().as_bytes());
    lp(&mut buf, value);
    mac.update(&buf);
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grant::testing::TestRng;

    #[test]
    fn sealed_data_opens_only_with_its_key_and_context() {
        let rng = TestRng::new();
        let k = Key::generate(&rng);
        let aad = aad_association(VaultId(1), "Purpose", ValueType::String, 1);
        let sealed = seal(&k, &rng, &aad, b"top secret").unwrap();
        assert_eq!(open(&k, &aad, &sealed).unwrap(), b"top secret");
        assert!(!sealed.windows(10).any(|w| w == b"top secret"));
        // Another entry, another name, another type, another key id, another key.
        for other in [
            aad_association(VaultId(2), "Purpose", ValueType::String, 1),
            aad_association(VaultId(1), "purpose", ValueType::String, 1),
            aad_association(VaultId(1), "Purpose", ValueType::Int, 1),
            aad_association(VaultId(1), "Purpose", ValueType::String, 2),
            aad_data(VaultId(1), 1),
        ] {
            assert_eq!(open(&k, &other, &sealed), Err(CryptoError));
        }
        assert_eq!(open(&Key::generate(&rng), &aad, &sealed), Err(CryptoError));
        // Every flipped byte is caught.
        for i in 0..sealed.len() {
            let mut t = sealed.clone();
            t[i] ^= 0x01;
            assert_eq!(open(&k, &aad, &t), Err(CryptoError), "byte {i}");
        }
        assert_eq!(open(&k, &aad, &sealed[..10]), Err(CryptoError));
        assert_ne!(seal(&k, &rng, &aad, b"top secret").unwrap(), sealed, "fresh nonce each time");
    }

    #[test]
    fn lookup_hashes_separate_names_types_and_values() {
        let k = Key::new([5; 32]);
        let h = lookup_hash(&k, "n", ValueType::String, b"v");
        assert_eq!(h, lookup_hash(&k, "n", ValueType::String, b"v"));
        assert_ne!(h, lookup_hash(&k, "m", ValueType::String, b"v"));
        assert_ne!(h, lookup_hash(&k, "n", ValueType::Int, b"v"));
        assert_ne!(h, lookup_hash(&Key::new([6; 32]), "n", ValueType::String, b"v"));
        // Another value, and the same bytes under another name or type.
        assert_ne!(h, lookup_hash(&k, "n", ValueType::String, b"w"));
        assert_ne!(h, lookup_hash(&k, "n", ValueType::String, b""));
        assert_ne!(h, lookup_hash(&k, "n", ValueType::String, b"vv"));
        let bytes = b"42";
        let int = lookup_hash(&k, "n", ValueType::Int, bytes);
        assert_ne!(int, lookup_hash(&k, "n", ValueType::String, bytes));
        assert_ne!(int, lookup_hash(&k, "n", ValueType::Date, bytes));
        assert_ne!(int, lookup_hash(&k, "m", ValueType::Int, bytes));
        // Fields are length-prefixed: moving bytes between name and value changes the hash.
        assert_ne!(lookup_hash(&k, "nv", ValueType::String, b""), h);
        assert!(!format!("{k:?}").contains('5'));
    }
}
