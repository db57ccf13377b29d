//! The product's `\VED` tree as objects: what a DN names, object
//! GUIDs, the fixed GUIDs of the roots, `Config/*` result codes, name
//! patterns, and the twelve `Is…Allowed` flags mapped onto [`Rights`].
//!
//! The tree has three roots that always exist: `\VED`, `\VED\Policy` (the
//! vault's owner folders live under it; a folder anywhere under `\VED` but
//! outside `\VED\Identity` is a `Policy` object) and `\VED\Identity` (a
//! local user or group is the object `\VED\Identity\<name>`, its GUID its
//! id, which is also its `Universal`). Pure: no I/O, no randomness (a new
//! folder's GUID comes from a [`Random`] passed in).

use std::fmt;

use crate::identity::uuid_v4;
use crate::random::Random;
use crate::vault::{FolderPath, Rights};

/// An object's GUID: a UUID, lower case, without braces (shown with them).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectGuid(String);

impl ObjectGuid {
    /// Reads `{xxxxxxxx-…}` or `xxxxxxxx-…` (any case, surrounding blanks ignored).
    pub fn parse(s: &str) -> Option<ObjectGuid> {
        let t = s.trim();
        let bare = match (t.strip_prefix('{'), t.ends_with('}')) {
            (Some(r), true) => r.strip_suffix('}')?,
            (None, false) => t,
            _ => return None,
        };
        // Only the hyphenated form: `uuid` would also take 32 bare hex digits or a URN.
        if bare.len() != 36 {
            return None;
        }
        uuid::Uuid::try_parse(bare).ok().map(|u| ObjectGuid(u.hyphenated().to_string()))
    }

    /// A new random GUID.
    pub fn generate(rng: &dyn Random) -> ObjectGuid {
        ObjectGuid(uuid_v4(rng))
    }

    /// Wraps a GUID read back from the store (already lower case, no braces).
    pub fn from_stored(s: String) -> ObjectGuid {
        ObjectGuid(s)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `{xxxxxxxx-…}`, as the product writes GUIDs.
    pub fn braced(&self) -> String {
        format!("{{{}}}", self.0)
    }

    /// The object's `Id` (an int32, which Go vcert decodes it into): the
    /// GUID's first 31 bits. Stable for the object's life and derived, so
    /// nothing stores it; two objects may share one (it is informational:
    /// no call takes an `Id`).
    pub fn id(&self) -> i32 {
        let head = self.0.get(..8).and_then(|h| u32::from_str_radix(h, 16).ok()).unwrap_or(0);
        i32::try_from(head & 0x7fff_ffff).unwrap_or(0)
    }
}

impl fmt::Debug for ObjectGuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectGuid({})", self.0)
    }
}

impl fmt::Display for ObjectGuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.braced())
    }
}

/// The fixed GUID of `\VED`.
pub const VED_GUID: &str = "00000000-0000-4000-8000-00000000ed01";
/// The fixed GUID of `\VED\Policy`.
pub const POLICY_GUID: &str = "00000000-0000-4000-8000-00000000ed02";
/// The fixed GUID of `\VED\Identity`.
pub const IDENTITY_GUID: &str = "00000000-0000-4000-8000-00000000ed03";

pub const VED_DN: &str = "\\VED";
pub const POLICY_DN: &str = "\\VED\\Policy";
pub const IDENTITY_DN: &str = "\\VED\\Identity";

/// Object classes (`TypeName`, `Class`).
pub mod class {
    /// `\VED` itself.
    pub const TOP: &str = "Top";
    /// A folder (and `\VED\Policy`).
    pub const POLICY: &str = "Policy";
    /// `\VED\Identity`: the container of local identities (a Strongroom name).
    pub const IDENTITY_ROOT: &str = "Identity Root";
    pub const USER: &str = "User";
    pub const GROUP: &str = "Group";
}

/// The fixed GUID of a root folder key (`\ved`, `\ved\policy`), if it is one.
pub fn well_known_guid(key: &str) -> Option<ObjectGuid> {
    match key {
        "\\ved" => Some(ObjectGuid(VED_GUID.to_owned())),
        "\\ved\\policy" => Some(ObjectGuid(POLICY_GUID.to_owned())),
        "\\ved\\identity" => Some(ObjectGuid(IDENTITY_GUID.to_owned())),
        _ => None,
    }
}

/// `path` and every folder above it, top first, each with its GUID: the
/// fixed one of a root, a new random one otherwise (the store keeps the
/// GUID of a folder that already exists).
pub fn lineage_with_guids(path: &FolderPath, rng: &dyn Random) -> Vec<(FolderPath, ObjectGuid)> {
    path.lineage()
        .into_iter()
        .map(|f| {
            let g = well_known_guid(f.key()).unwrap_or_else(|| ObjectGuid::generate(rng));
            (f, g)
        })
        .collect()
}

/// What a DN names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dn {
    /// `\VED`.
    Root,
    /// `\VED\Identity`.
    IdentityRoot,
    /// `\VED\Identity\<name>`: a local user or group.
    Identity(String),
    /// A folder: `\VED\Policy` or anything below `\VED` outside `\VED\Identity`.
    Folder(FolderPath),
}

/// Why a DN names nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DnError {
    #[error("a DN starts with \\VED")]
    NotUnderVed,
    #[error("a DN has an empty segment or a character not allowed in a name")]
    InvalidName,
    #[error("a DN is at most 1024 characters")]
    TooLong,
    #[error("local identities are directly under \\VED\\Identity")]
    TooDeep,
}

impl Dn {
    /// Reads `\VED\Policy\Team A`, in any case, with a trailing `\` or
    /// doubled backslashes (`\\VED\\Policy`, as a DN looks when its JSON
    /// escaping was doubled once too often) tolerated.
    pub fn parse(s: &str) -> Result<Dn, DnError> {
        let t = s.trim();
        if t.len() > 1024 {
            return Err(DnError::TooLong);
        }
        if t.chars().any(char::is_control) {
            return Err(DnError::InvalidName);
        }
        let mut collapsed = String::with_capacity(t.len());
        for c in t.chars() {
            if !(c == '\\' && collapsed.ends_with('\\')) {
                collapsed.push(c);
            }
        }
        let trimmed = collapsed.strip_suffix('\\').filter(|r| !r.is_empty()).unwrap_or(&collapsed);
        let rest = trimmed.strip_prefix('\\').ok_or(DnError::NotUnderVed)?;
        let segs: Vec<&str> = rest.split('\\').map(str::trim).collect();
        if !segs.first().is_some_and(|f| f.eq_ignore_ascii_case("VED")) {
            return Err(DnError::NotUnderVed);
        }
        if segs.iter().any(|s| s.is_empty() || !valid_segment(s)) {
            return Err(DnError::InvalidName);
        }
        match segs.as_slice() {
            [_] => Ok(Dn::Root),
            [_, id] if id.eq_ignore_ascii_case("Identity") => Ok(Dn::IdentityRoot),
            [_, id, name] if id.eq_ignore_ascii_case("Identity") => Ok(Dn::Identity((*name).to_owned())),
            [_, id, ..] if id.eq_ignore_ascii_case("Identity") => Err(DnError::TooDeep),
            _ => FolderPath::parse(trimmed).map(Dn::Folder).map_err(|_| DnError::InvalidName),
        }
    }

    /// The DN as shown.
    pub fn shown(&self) -> String {
        match self {
            Dn::Root => VED_DN.to_owned(),
            Dn::IdentityRoot => IDENTITY_DN.to_owned(),
            Dn::Identity(n) => format!("{IDENTITY_DN}\\{n}"),
            Dn::Folder(f) => f.as_str().to_owned(),
        }
    }

    /// The DN of the parent (`None` for `\VED`).
    pub fn parent(&self) -> Option<String> {
        match self {
            Dn::Root => None,
            Dn::IdentityRoot => Some(VED_DN.to_owned()),
            Dn::Identity(_) => Some(IDENTITY_DN.to_owned()),
            Dn::Folder(f) => parent_of(f.as_str()),
        }
    }
}

/// A name segment: no control characters, nothing the tree uses itself.
fn valid_segment(s: &str) -> bool {
    s.chars().count() <= 256 && !s.chars().any(|c| c.is_control() || matches!(c, '*' | '?' | '"' | '<' | '>' | '|'))
}

/// The DN above `dn` (a shown DN), if any.
pub fn parent_of(dn: &str) -> Option<String> {
    let (head, _) = dn.rsplit_once('\\')?;
    if head.is_empty() { None } else { Some(head.to_owned()) }
}

/// The last segment of a shown DN.
pub fn name_of(dn: &str) -> &str {
    dn.rsplit_once('\\').map_or(dn, |(_, n)| n)
}

/// The `Config/*` `Result` codes (pyvenafi's `ResultCodes.Config`).
pub mod result {
    pub const SUCCESS: i32 = 1;
    pub const INSUFFICIENT_PRIVILEGES: i32 = 7;
    pub const OBJECT_DOES_NOT_EXIST: i32 = 400;
    pub const OBJECT_ALREADY_EXISTS: i32 = 401;
    pub const OBJECT_HAS_CHILDREN: i32 = 402;
    pub const OBJECT_INVALID_NAME: i32 = 405;
    pub const OBJECT_INVALID_CLASS: i32 = 406;
    pub const OBJECT_INVALID_CONTAINMENT: i32 = 407;
}

/// Whether `name` matches `pattern`: `*` any run, `?` one character, `\`
/// makes the next character literal; any case. An empty pattern matches all.
pub fn pattern_matches(pattern: &str, name: &str) -> bool {
    if pattern.is_empty() {
        return true;
    }
    #[derive(Clone, Copy, PartialEq)]
    enum Tok {
        Any,
        One,
        Lit(char),
    }
    let mut toks = Vec::new();
    let mut chars = pattern.chars().flat_map(char::to_lowercase);
    while let Some(c) = chars.next() {
        toks.push(match c {
            '*' => Tok::Any,
            '?' => Tok::One,
            '\\' => Tok::Lit(chars.next().unwrap_or('\\')),
            c => Tok::Lit(c),
        });
    }
    let name: Vec<char> = name.chars().flat_map(char::to_lowercase).collect();
    // Iterative wildcard match with one backtrack point (linear in practice, never exponential).
    let (mut p, mut n, mut star, mut mark) = (0usize, 0usize, None::<usize>, 0usize);
    while n < name.len() {
        match toks.get(p) {
            Some(Tok::One) => {
                p += 1;
                n += 1;
            }
            Some(Tok::Lit(c)) if *c == name[n] => {
                p += 1;
                n += 1;
            }
            Some(Tok::Any) => {
                star = Some(p);
                mark = n;
                p += 1;
            }
            _ => match star {
                Some(s) => {
                    p = s + 1;
                    mark += 1;
                    n = mark;
                }
                None => return false,
            },
        }
    }
    toks[p..].iter().all(|t| *t == Tok::Any)
}

/// The twelve `Is…Allowed` flags of the Permissions calls, each with the
/// right it sets.
pub const FLAGS: [(&str, Rights); 12] = [
    ("IsViewAllowed", Rights::VIEW),
    ("IsReadAllowed", Rights::READ),
    ("IsWriteAllowed", Rights::WRITE),
    ("IsCreateAllowed", Rights::CREATE),
    ("IsDeleteAllowed", Rights::DELETE),
    ("IsRenameAllowed", Rights::RENAME),
    ("IsRevokeAllowed", Rights::REVOKE),
    ("IsAssociateAllowed", Rights::ASSOCIATE),
    ("IsPolicyWriteAllowed", Rights::POLICY_WRITE),
    ("IsPrivateKeyReadAllowed", Rights::PRIVATE_KEY_READ),
    ("IsPrivateKeyWriteAllowed", Rights::PRIVATE_KEY_WRITE),
    ("IsManagePermissionsAllowed", Rights::MANAGE_PERMISSIONS),
];

/// Rights from the flags a body sets true (flags not given or false add nothing).
pub fn rights_from_flags(set: impl IntoIterator<Item = (&'static str, bool)>) -> Rights {
    set.into_iter()
        .filter(|(_, on)| *on)
        .fold(Rights::NONE, |acc, (name, _)| FLAGS.iter().find(|(n, _)| *n == name).map_or(acc, |(_, r)| acc.union(*r)))
}

/// Each flag's value for `rights`, in [`FLAGS`] order.
pub fn flags_of(rights: Rights) -> [(&'static str, bool); 12] {
    FLAGS.map(|(n, r)| (n, rights.contains(r)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_parse_with_tolerance() {
        assert_eq!(Dn::parse("\\VED"), Ok(Dn::Root));
        assert_eq!(Dn::parse("\\ved\\"), Ok(Dn::Root));
        assert_eq!(Dn::parse("\\VED\\Identity\\"), Ok(Dn::IdentityRoot));
        assert_eq!(Dn::parse("\\VED\\identity\\alice"), Ok(Dn::Identity("alice".into())));
        assert_eq!(Dn::parse("\\VED\\Identity\\a\\b"), Err(DnError::TooDeep));
        let f = Dn::parse("\\\\VED\\\\Policy\\\\Team A\\").unwrap();
        assert_eq!(f, Dn::Folder(FolderPath::parse("\\VED\\Policy\\Team A").unwrap()));
        assert_eq!(f.shown(), "\\VED\\Policy\\Team A");
        assert_eq!(f.parent().as_deref(), Some("\\VED\\Policy"));
        assert_eq!(Dn::parse("VED\\Policy"), Err(DnError::NotUnderVed));
        assert_eq!(Dn::parse("\\Other"), Err(DnError::NotUnderVed));
        assert_eq!(Dn::parse("\\VED\\Policy\\a*b"), Err(DnError::InvalidName));
        assert_eq!(Dn::parse("\\VED\\Policy\\ \\x"), Err(DnError::InvalidName));
        assert_eq!(Dn::parse("\\"), Err(DnError::NotUnderVed));
        assert_eq!(Dn::parse(""), Err(DnError::NotUnderVed));
        assert_eq!(Dn::Root.parent(), None);
    }

    #[test]
    fn guids_parse_with_or_without_braces() {
        let g = ObjectGuid::parse("{0F8FAD5B-D9CB-469F-A165-70867728950E}").unwrap();
        assert_eq!(g.as_str(), "0f8fad5b-d9cb-469f-a165-70867728950e");
        assert_eq!(g.braced(), "{0f8fad5b-d9cb-469f-a165-70867728950e}");
        assert_eq!(ObjectGuid::parse(" 0f8fad5b-d9cb-469f-a165-70867728950e "), Some(g.clone()));
        assert_eq!(ObjectGuid::parse("{0f8fad5b-d9cb-469f-a165-70867728950e"), None);
        assert_eq!(ObjectGuid::parse("0f8fad5bd9cb469fa16570867728950e"), None);
        assert_eq!(ObjectGuid::parse("{}"), None);
        assert_eq!(ObjectGuid::parse(""), None);
        assert_eq!(g.id(), 0x0f8f_ad5b);
        assert!(ObjectGuid::parse("ffffffff-d9cb-469f-a165-70867728950e").unwrap().id() >= 0);
        assert!(ObjectGuid::parse(VED_GUID).is_some() && ObjectGuid::parse(POLICY_GUID).is_some());
    }

    #[test]
    fn patterns_match_names() {
        assert!(pattern_matches("", "x"));
        assert!(pattern_matches("*", ""));
        assert!(pattern_matches("team*", "Team A"));
        assert!(pattern_matches("t?am", "TEAM"));
        assert!(!pattern_matches("t?am", "tam"));
        assert!(pattern_matches("*a*b*", "xxaxxbxx"));
        assert!(!pattern_matches("*a*b", "xxbxxa"));
        assert!(pattern_matches("a\\*", "a*"));
        assert!(!pattern_matches("a\\*", "ab"));
        assert!(pattern_matches(&"*".repeat(50), &"a".repeat(50)));
    }

    #[test]
    fn flags_map_onto_rights() {
        let r = rights_from_flags([("IsWriteAllowed", true), ("IsReadAllowed", false), ("IsManagePermissionsAllowed", true)]);
        assert_eq!(r, Rights::WRITE.union(Rights::MANAGE_PERMISSIONS));
        assert_eq!(rights_from_flags(flags_of(Rights::ALL)), Rights::ALL);
        let mut seen = Rights::NONE;
        for (_, f) in FLAGS {
            assert_eq!(seen.bits() & f.bits(), 0, "one bit each");
            seen = seen.union(f);
        }
        assert_eq!(seen, Rights::ALL);
    }

    #[test]
    fn roots_keep_their_guids_in_a_lineage() {
        struct Ones;
        impl fmt::Debug for Ones {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("Ones")
            }
        }
        impl Random for Ones {
            fn fill(&self, dest: &mut [u8]) {
                dest.fill(1);
            }
        }
        let l = lineage_with_guids(&FolderPath::parse("\\VED\\Policy\\A").unwrap(), &Ones);
        assert_eq!(l[0].1.as_str(), VED_GUID);
        assert_eq!(l[1].1.as_str(), POLICY_GUID);
        assert_ne!(l[2].1.as_str(), POLICY_GUID);
    }
}
