//! Password hashing: argon2id in PHC strings.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::random::{Random, bytes};
use crate::secret::Secret;

/// ASVS 5.0 appendix C: argon2id with t=2 needs at least 19 MiB.
pub const MEMORY_KIB: u32 = 19 * 1024;
pub const ITERATIONS: u32 = 2;
pub const PARALLELISM: u32 = 1;

/// Longest password accepted; longer input is refused before hashing.
pub const MAX_PASSWORD_LEN: usize = 1024;
/// Shortest password `admin` accepts for a new user.
pub const MIN_PASSWORD_LEN: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    #[error("password hashing failed")]
    Hash,
}

fn hasher() -> Result<Argon2<'static>, PasswordError> {
    let params = Params::new(MEMORY_KIB, ITERATIONS, PARALLELISM, None).map_err(|_| PasswordError::Hash)?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

/// Hashes a password with a fresh random salt. Slow on purpose (tens of ms).
pub fn hash(password: &Secret, rng: &dyn Random) -> Result<String, PasswordError> {
    let salt = SaltString::encode_b64(&bytes::<16>(rng)).map_err(|_| PasswordError::Hash)?;
    hasher()?.hash_password(password.expose().as_bytes(), &salt).map(|h| h.to_string()).map_err(|_| PasswordError::Hash)
}

/// Checks a password against a stored PHC string. A malformed stored hash
/// verifies nothing.
pub fn verify(password: &Secret, phc: &str) -> bool {
    if password.expose().len() > MAX_PASSWORD_LEN {
        return false;
    }
    let Ok(parsed) = PasswordHash::new(phc) else { return false };
    // The parameters come from the PHC string, so old hashes keep verifying
    // after the defaults are raised.
    Argon2::default().verify_password(password.expose().as_bytes(), &parsed).is_ok()
}

/// A fixed hash to verify against when the user does not exist, so that the
/// time taken does not tell whether a user name is real.
pub fn dummy_hash() -> &'static str {
    "$argon2id$v=19$m=19456,t=2,p=1$c3Ryb25ncm9vbWR1bW15$9Lh6tmfnzo38P5pfBdXoL9DWDPuZ7kXm6BR5lrJTHXo"
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU8, Ordering};

    #[derive(Debug)]
    struct Counter(AtomicU8);
    impl Random for Counter {
        fn fill(&self, d: &mut [u8]) {
            for b in d {
                *b = self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    #[test]
    fn hashes_verify_and_use_argon2id_at_asvs_strength() {
        let rng = Counter(AtomicU8::new(0));
        let h = hash(&Secret::new("correct horse"), &rng).unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{h}");
        assert!(verify(&Secret::new("correct horse"), &h));
        assert!(!verify(&Secret::new("correct horsE"), &h));
        assert!(!verify(&Secret::new("x"), "not a phc string"));
        assert!(!verify(&Secret::new("x"), dummy_hash()));
        let h2 = hash(&Secret::new("correct horse"), &rng).unwrap();
        assert_ne!(h, h2, "salts differ");
    }
}
