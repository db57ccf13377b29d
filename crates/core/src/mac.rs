//! HMAC-SHA256 under the server's 32-byte keys.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// HMAC-SHA256 keyed with `key`, ready for `update`.
///
/// HMAC pads a key shorter than SHA-256's 64-byte block with zeros, so the
/// padded block is the same key; built from it the construction cannot fail
/// (`new_from_slice` returns a `Result` for lengths that cannot occur here).
pub fn hmac_sha256(key: &[u8; 32]) -> Hmac<Sha256> {
    let mut block = hmac::digest::Key::<Hmac<Sha256>>::default();
    for (b, k) in block.iter_mut().zip(key) {
        *b = *k;
    }
    <Hmac<Sha256> as KeyInit>::new(&block)
}

/// HMAC-SHA256 of the concatenation of `parts` under `key`.
pub fn hmac_sha256_of(key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = hmac_sha256(key);
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_padded_key_is_the_same_key() {
        for key in [[0u8; 32], [0xa5; 32], core::array::from_fn(|i| i as u8)] {
            let mut reference = <Hmac<Sha256> as KeyInit>::new_from_slice(&key).unwrap();
            reference.update(b"strongroom");
            assert_eq!(hmac_sha256_of(&key, &[b"strong", b"room"]), <[u8; 32]>::from(reference.finalize().into_bytes()));
        }
        assert_ne!(hmac_sha256_of(&[1; 32], &[b"x"]), hmac_sha256_of(&[2; 32], &[b"x"]), "the key matters");
    }
}
