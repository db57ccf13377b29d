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

    /// Whether this is a machine identity (a JWT or certificate mapping's,
    /// see [`crate::machine`]: `jwt+<mapping>:<subject>`), which never signs
    /// in with a password.
    pub fn is_machine(&self) -> bool {
        self.0.starts_with(crate::machine::JWT_PREFIX) || self.0.starts_with(crate::machine::CERT_PREFIX)
    }

    /// A directory person's id: `LDAP+corp:<uuid>` (the provider's prefix
    /// and the directory's stable id, lower case).
    pub fn directory(prefix: &str, id: &str) -> Self {
        UserId(format!("{prefix}:{}", id.to_lowercase()))
    }

    /// The provider: `local`, or a directory's `LDAP+corp` / `AD+corp`.
    pub fn prefix(&self) -> &str {
        self.0.split_once(':').map_or(LOCAL_PREFIX, |(p, _)| p)
    }

    /// Whether a directory vouches for this user (not a local password, and
    /// not a machine identity).
    pub fn is_directory(&self) -> bool {
        self.0.contains(':') && !self.is_machine()
    }

    /// The stable id without its provider: the UUID.
    pub fn bare(&self) -> &str {
        self.0.split_once(':').map_or(self.0.as_str(), |(_, id)| id)
    }

    /// The prefixed universal identity the product shows: `local:{<uuid>}`,
    /// `AD+corp:{<uuid>}`; a machine identity is its id itself,
    /// `jwt+<mapping>:<subject>`.
    pub fn identity(&self) -> String {
        if self.is_machine() { self.0.clone() } else { format!("{}:{}", self.prefix(), self.universal()) }
    }

    /// The product's `Universal`: `{<uuid>}`; a machine identity's subject.
    pub fn universal(&self) -> String {
        if self.is_machine() { self.bare().to_owned() } else { format!("{{{}}}", self.bare()) }
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
    /// A user: local, a directory's (stored as `LDAP+corp:alice`, shown as
    /// `alice` with the prefix `LDAP+corp`), or a machine identity
    /// (`jwt+<mapping>:<subject>`), whose provider is its prefix and whose
    /// name and universal its subject.
    pub fn user(id: &UserId, name: &str) -> IdentityEntry {
        if id.is_machine() {
            return IdentityEntry {
                full_name: format!("{IDENTITY_ROOT}\\{}", id.as_str()),
                name: id.bare().to_owned(),
                prefix: id.prefix().to_owned(),
                universal: id.universal(),
                kind: identity_type::USER,
            };
        }
        let prefix = id.prefix();
        let bare = unprefixed(name, prefix);
        IdentityEntry {
            full_name: format!("{IDENTITY_ROOT}\\{name}"),
            name: bare.to_owned(),
            prefix: prefix.to_owned(),
            universal: id.universal(),
            kind: identity_type::USER,
        }
    }

    /// A group: local, or a directory's (named `LDAP+corp:admins`).
    pub fn group(g: &Group) -> IdentityEntry {
        let prefix = g.prefix();
        IdentityEntry {
            full_name: format!("{IDENTITY_ROOT}\\{}", g.name),
            name: unprefixed(&g.name, prefix).to_owned(),
            prefix: prefix.to_owned(),
            universal: g.id.universal(),
            kind: identity_type::GROUP,
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

    /// A directory's provider entry (`LDAP+corp`), which `Identity/Self`
    /// lists last for its people; its universal is the nil UUID too.
    pub fn provider(prefix: &str) -> IdentityEntry {
        if prefix.eq_ignore_ascii_case(LOCAL_PREFIX) {
            return IdentityEntry::local_provider();
        }
        let name = prefix.split_once('+').map_or(prefix, |(_, n)| n);
        IdentityEntry {
            full_name: IDENTITY_ROOT.to_owned(),
            name: name.to_owned(),
            prefix: prefix.to_owned(),
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
    /// When a directory or an OpenID provider last vouched for this person:
    /// their last sign-in through it, or (a directory) its look-up at a
    /// refresh. `None` for local and machine users.
    pub signed_in_at: Option<UnixTime>,
}

/// A group's stable id: a random (version 4) UUID, lower case, never a
/// user's (both are random).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupId(String);

impl GroupId {
    pub fn generate(rng: &dyn Random) -> Self {
        GroupId(uuid_v4(rng))
    }

    /// Wraps an id read back from the store.
    pub fn from_stored(s: String) -> Self {
        GroupId(s)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `{<uuid>}`.
    pub fn universal(&self) -> String {
        format!("{{{}}}", self.0)
    }

    /// `local:{<uuid>}`: a local group's identity ([`Group::identity`] knows a directory group's prefix).
    pub fn identity(&self) -> String {
        format!("{LOCAL_PREFIX}:{}", self.universal())
    }
}

impl fmt::Debug for GroupId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GroupId({})", self.0)
    }
}

/// `alice` of `LDAP+corp:alice` under prefix `LDAP+corp`; a local name as it is.
fn unprefixed<'a>(name: &'a str, prefix: &str) -> &'a str {
    match name.split_once(':') {
        Some((p, rest)) if p.eq_ignore_ascii_case(prefix) => rest,
        _ => name,
    }
}

/// A group of users. Rights on folders and places on integrations granted
/// to a group are held by each of its members, for as long as they are one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub id: GroupId,
    /// A local group's name, or a directory group's `LDAP+corp:admins`.
    pub name: String,
    pub created_at: UnixTime,
}

impl Group {
    /// `local`, or the directory's prefix its name carries.
    pub fn prefix(&self) -> &str {
        match self.name.split_once(':') {
            Some((p, _)) if p.contains('+') => p,
            _ => LOCAL_PREFIX,
        }
    }

    /// `local:{<uuid>}` or `LDAP+corp:{<uuid>}`.
    pub fn identity(&self) -> String {
        format!("{}:{}", self.prefix(), self.id.universal())
    }
}

/// An identity as a request names it (`ID` of the Identity calls): by
/// prefixed universal (`local:{<uuid>}`, braces optional) or by prefixed
/// name (`local:alice`); a name with no prefix is a local one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdentityRef {
    /// A local user's or group's id (lower case, no braces).
    Universal(String),
    /// A local user's or group's name, as given.
    Name(String),
    /// A directory's identity by universal: (`LDAP+corp`, the UUID).
    DirectoryUniversal(String, String),
    /// Another provider's identity this server cannot name.
    Foreign,
}

impl IdentityRef {
    /// Reads `local:{uuid}`, `local:uuid`, `{uuid}`, `local:alice` or `alice`.
    pub fn parse(input: &str) -> Option<IdentityRef> {
        let t = input.trim();
        if t.is_empty() || t.len() > 256 {
            return None;
        }
        let rest = match t.split_once(':') {
            Some((p, r)) if p.eq_ignore_ascii_case(LOCAL_PREFIX) => r.trim(),
            Some((p, r)) if p.contains('+') => {
                let r = r.trim();
                let bare = r.strip_prefix('{').and_then(|x| x.strip_suffix('}')).unwrap_or(r);
                return Some(match uuid::Uuid::try_parse(bare) {
                    Ok(u) => IdentityRef::DirectoryUniversal(p.to_owned(), u.hyphenated().to_string()),
                    Err(_) if !r.is_empty() => IdentityRef::Name(format!("{p}:{r}")),
                    Err(_) => IdentityRef::Foreign,
                });
            }
            Some(_) => return None,
            None => t,
        };
        let bare = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')).unwrap_or(rest);
        if let Ok(u) = uuid::Uuid::try_parse(bare) {
            return Some(IdentityRef::Universal(u.hyphenated().to_string()));
        }
        if rest.starts_with('{') {
            return None;
        }
        Some(IdentityRef::Name(rest.to_owned()))
    }
}

/// The product's `IdentityType` flags a `Browse` asks for: users (1),
/// groups (2; a distribution list, 8, is a group here too).
pub fn browse_kinds(identity_type: i32) -> (bool, bool) {
    (identity_type & identity_type::USER != 0, identity_type & (identity_type::GROUP | 8) != 0)
}

/// Whether `name` matches a `Browse` filter: the filter is a prefix (the
/// product adds a trailing wildcard), any case; `*` inside it matches any run.
pub fn browse_matches(filter: &str, name: &str) -> bool {
    let f = filter.trim().to_lowercase();
    let n = name.to_lowercase();
    let parts: Vec<&str> = f.split('*').collect();
    let Some((first, rest)) = parts.split_first() else { return true };
    let Some(mut tail) = n.strip_prefix(first) else { return false };
    for p in rest {
        match tail.find(p) {
            Some(i) => tail = &tail[i + p.len()..],
            None => return false,
        }
    }
    true
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
        assert!(!id.is_directory());
        assert_eq!((e.name.as_str(), e.universal.as_str()), ("repo:org/app", "repo:org/app"));
    }

    #[test]
    fn identities_are_named_by_universal_or_by_name() {
        let u = "0b8f7f8e-1111-4222-8333-444455556666";
        for input in [format!("local:{{{u}}}"), format!("LOCAL:{u}"), format!("{{{}}}", u.to_uppercase()), u.to_owned()] {
            assert_eq!(IdentityRef::parse(&input), Some(IdentityRef::Universal(u.to_owned())), "{input}");
        }
        assert_eq!(IdentityRef::parse("local:alice"), Some(IdentityRef::Name("alice".into())));
        assert_eq!(IdentityRef::parse("alice"), Some(IdentityRef::Name("alice".into())));
        assert_eq!(IdentityRef::parse("AD+corp:bob"), Some(IdentityRef::Name("AD+corp:bob".into())));
        assert_eq!(IdentityRef::parse(&format!("AD+corp:{{{u}}}")), Some(IdentityRef::DirectoryUniversal("AD+corp".into(), u.into())));
        assert_eq!(IdentityRef::parse("AD+corp:"), Some(IdentityRef::Foreign));
        let d = UserId::directory("LDAP+dir", &u.to_uppercase());
        assert_eq!((d.identity(), d.is_directory()), (format!("LDAP+dir:{{{u}}}"), true));
        let e = IdentityEntry::user(&d, "LDAP+dir:bob");
        assert_eq!((e.name.as_str(), e.prefixed_name(), e.prefixed_universal()), ("bob", "LDAP+dir:bob".to_owned(), d.identity()));
        assert_eq!(IdentityRef::parse("local:{nope}"), None);
        assert_eq!(IdentityRef::parse("other:x"), None);
        assert_eq!(IdentityRef::parse(""), None);
    }

    #[test]
    fn browse_filters_are_prefixes_with_wildcards() {
        assert!(browse_matches("al", "Alice"));
        assert!(browse_matches("", "anyone"));
        assert!(browse_matches("a*e", "alice"));
        assert!(!browse_matches("li", "alice"));
        assert!(!browse_matches("a*z", "alice"));
        assert_eq!(browse_kinds(11), (true, true));
        assert_eq!(browse_kinds(1), (true, false));
        assert_eq!(browse_kinds(8), (false, true));
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
