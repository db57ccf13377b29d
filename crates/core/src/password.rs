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

/// Passwords seen most often in breach corpora (and this product's own
/// names), refused for new passwords whatever their case (ASVS 2.1.7, NIST
/// SP 800-63B 5.1.1.2: "passwords obtained from previous breach corpuses",
/// "dictionary words", "context-specific words"). A short list on purpose:
/// it stops what an attacker tries first, not every weak password.
const COMMON: &[&str] = &[
    "123456",
    "123456789",
    "12345678",
    "password",
    "qwerty123",
    "qwerty1",
    "111111",
    "12345",
    "secret",
    "123123",
    "1234567890",
    "000000",
    "abc123",
    "password1",
    "iloveyou",
    "1q2w3e4r",
    "1q2w3e4r5t",
    "654321",
    "qwertyuiop",
    "123321",
    "666666",
    "987654321",
    "1qaz2wsx",
    "zaq12wsx",
    "123qwe",
    "7777777",
    "555555",
    "112233",
    "dragon",
    "monkey",
    "letmein",
    "football",
    "baseball",
    "welcome",
    "welcome1",
    "admin",
    "admin123",
    "administrator",
    "passw0rd",
    "p@ssw0rd",
    "p@ssword",
    "password123",
    "password12",
    "password!",
    "qwerty12",
    "qwerty",
    "qazwsx",
    "sunshine",
    "princess",
    "shadow",
    "master",
    "superman",
    "trustno1",
    "starwars",
    "whatever",
    "michael",
    "jennifer",
    "charlie",
    "11111111",
    "22222222",
    "88888888",
    "12341234",
    "123456a",
    "a123456",
    "123456789a",
    "aa123456",
    "asdfghjkl",
    "asdfgh",
    "zxcvbnm",
    "zxcvbnm123",
    "computer",
    "internet",
    "changeme",
    "changeme123",
    "default",
    "guest",
    "test1234",
    "testtest",
    "1password",
    "strongroom",
    "venafi",
];

/// Why a new password is refused: too short or long, one of the
/// [`COMMON`] ones, or one character repeated. `None`: acceptable.
pub fn weakness(password: &str) -> Option<String> {
    let n = password.chars().count();
    if n < MIN_PASSWORD_LEN || password.len() > MAX_PASSWORD_LEN {
        return Some(format!("passwords are {MIN_PASSWORD_LEN} to {MAX_PASSWORD_LEN} characters"));
    }
    let lower = password.to_lowercase();
    if COMMON.contains(&lower.as_str()) {
        return Some("this password is among the most common ones (found in breach lists): choose another".into());
    }
    let mut chars = password.chars();
    if let Some(first) = chars.next()
        && chars.all(|c| c == first)
    {
        return Some("a password of one character repeated is refused: choose another".into());
    }
    None
}

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
    #[test]
    fn common_and_short_passwords_are_weak() {
        for weak in ["password", "12345678", "PassWord1", "Qwerty123", "aaaaaaaaaa", "short", "strongroom"] {
            assert!(weakness(weak).is_some(), "{weak}");
        }
        for fine in ["correct horse battery", "a long new password 1", "zT8#qL1!vR"] {
            assert_eq!(weakness(fine), None, "{fine}");
        }
        assert!(weakness(&"x".repeat(MAX_PASSWORD_LEN + 1)).is_some());
    }

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
