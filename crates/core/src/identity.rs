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
    ///
    /// A machine identity (a JWT or certificate mapping's, see
    /// [`crate::machine`]) is its id itself: `jwt+<mapping>:<subject>`.
    pub fn identity(&self) -> String {
        if self.is_machine() { self.0.clone() } else { format!("{LOCAL_PREFIX}:{}", self.universal()) }
    }

    /// Whether this is a machine identity, which never signs in with a password.
    pub fn is_machine(&self) -> bool {
        self.0.starts_with(crate::machine::JWT_PREFIX) || self.0.starts_with(crate::machine::CERT_PREFIX)
    }

    /// The product's `Universal` of a local identity: `{<uuid>}`.
    pub fn universal(&self) -> String {
        format!("{{{}}}", self.0)
    }
}

/// The identity provider of local users.
pub const LOCAL_PREFIX: &str = "local";
/// Where the product keeps local identities in its tree.
pub const IDENTITY_ROOT: &str = "\\VED\\Identity";

/// The product's identity `Type` flags (IdentityEntry).
pub mod identity_type {
    pub const USER: i32 = 1;
    pub const GROUP: i32 = 2;
    /// The provider's own entry, last in `Identity/Self`.
    pub const PROVIDER: i32 = 32;
}

/// An identity as the product's Identity calls describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityEntry {
    /// The identity's place in the tree, `\VED\Identity\alice`.
    pub full_name: String,
    pub name: String,
    pub prefix: String,
    pub universal: String,
    pub kind: i32,
}

impl IdentityEntry {
    /// A user: a local one, or a machine identity (`jwt+<mapping>:<subject>`),
    /// whose provider is its prefix and whose name and universal its subject.
    pub fn user(id: &UserId, name: &str) -> IdentityEntry {
        if id.is_machine()
            && let Some((prefix, subject)) = id.as_str().split_once(':')
        {
            return IdentityEntry {
                full_name: format!("{IDENTITY_ROOT}\\{}", id.as_str()),
                name: subject.to_owned(),
                prefix: prefix.to_owned(),
                universal: subject.to_owned(),
                kind: identity_type::USER,
            };
        }
        IdentityEntry {
            full_name: format!("{IDENTITY_ROOT}\\{name}"),
            name: name.to_owned(),
            prefix: LOCAL_PREFIX.to_owned(),
            universal: id.universal(),
            kind: identity_type::USER,
        }
    }

    /// The local provider's entry, which `Identity/Self` lists last. Its
    /// universal is the nil UUID: the provider is no object of the store.
    pub fn local_provider() -> IdentityEntry {
        IdentityEntry {
            full_name: IDENTITY_ROOT.to_owned(),
            name: "Local".to_owned(),
            prefix: LOCAL_PREFIX.to_owned(),
            universal: "{00000000-0000-0000-0000-000000000000}".to_owned(),
            kind: identity_type::PROVIDER,
        }
    }

    /// `local:alice`.
    pub fn prefixed_name(&self) -> String {
        format!("{}:{}", self.prefix, self.name)
    }

    /// `local:{<uuid>}`: the identity tokens and events carry.
    pub fn prefixed_universal(&self) -> String {
        format!("{}:{}", self.prefix, self.universal)
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
    fn a_user_entry_names_the_same_identity_as_its_tokens() {
        let id = UserId::from_stored("0b8f7f8e-1111-4222-8333-444455556666".into());
        let e = IdentityEntry::user(&id, "alice");
        assert_eq!(e.prefixed_universal(), id.identity());
        assert_eq!(e.prefixed_name(), "local:alice");
        assert_eq!(e.full_name, "\\VED\\Identity\\alice");
        assert_eq!(e.universal, "{0b8f7f8e-1111-4222-8333-444455556666}");
        assert_eq!(IdentityEntry::local_provider().kind, identity_type::PROVIDER);
    }

    #[test]
    fn a_machine_identity_is_its_own_prefixed_universal() {
        let id = UserId::from_stored("jwt+deploy:repo:org/app".into());
        assert!(id.is_machine());
        assert_eq!(id.identity(), "jwt+deploy:repo:org/app");
        let e = IdentityEntry::user(&id, "jwt+deploy:repo:org/app");
        assert_eq!(e.prefixed_universal(), id.identity());
        assert_eq!(e.prefix, "jwt+deploy");
        assert!(!UserId::from_stored("0b8f7f8e-1111-4222-8333-444455556666".into()).is_machine());
    }

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
