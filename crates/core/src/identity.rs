//! Local users and how they are named on the wire.

use std::fmt;

use crate::random::{Random, bytes};
use crate::time::UnixTime;

/// A user's stable id: a random (version 4) UUID, lower case.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UserId(String);

impl UserId {
    pub fn generate(rng: &dyn Random) -> Self {
        UserId(uuid_v4(rng))
    }

    /// Wraps an id read back from the store.
    pub fn from_stored(s: String) -> Self {
        UserId(s)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The prefixed universal identity the product shows: `local:{<uuid>}`.
    pub fn identity(&self) -> String {
        format!("local:{{{}}}", self.0)
    }
}

impl fmt::Debug for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UserId({})", self.0)
    }
}

impl fmt::Display for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A random (version 4) UUID from `rng`, in its usual lower-case text form.
pub fn uuid_v4(rng: &dyn Random) -> String {
    uuid::Builder::from_random_bytes(bytes(rng)).into_uuid().hyphenated().to_string()
}

/// A local user as the rules need it. The password hash stays in the store
/// and in [`crate::password`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub id: UserId,
    pub name: String,
    pub disabled: bool,
    pub master_admin: bool,
    pub created_at: UnixTime,
}

/// Reads a login name as typed: `alice` or `local:alice`.
pub fn login_name(input: &str) -> &str {
    let t = input.trim();
    match t.get(..6) {
        Some(p) if p.eq_ignore_ascii_case("local:") => &t[6..],
        _ => t,
    }
}

/// User names: 1 to 64 characters, letters, digits and `.-_@`.
pub fn valid_user_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || ".-_@".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn login_names_may_carry_the_provider_prefix() {
        assert_eq!(login_name("alice"), "alice");
        assert_eq!(login_name("LOCAL:alice"), "alice");
        assert_eq!(login_name(" local:alice "), "alice");
        assert_eq!(login_name("loc"), "loc");
        assert_eq!(login_name("é"), "é");
    }

    #[test]
    fn ids_are_version_4_uuids_in_lower_case_text() {
        #[derive(Debug)]
        struct Ones;
        impl Random for Ones {
            fn fill(&self, dest: &mut [u8]) {
                dest.fill(0xff);
            }
        }
        let id = uuid_v4(&Ones);
        assert_eq!(id, "ffffffff-ffff-4fff-bfff-ffffffffffff", "version 4, RFC 4122 variant");
        assert_eq!(UserId::generate(&Ones).identity(), format!("local:{{{id}}}"));
    }

    #[test]
    fn user_names() {
        assert!(valid_user_name("alice.smith@example"));
        assert!(!valid_user_name(""));
        assert!(!valid_user_name("a b"));
        assert!(!valid_user_name(&"a".repeat(65)));
    }
}
