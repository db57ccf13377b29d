//! The vault's rules: owner folders and inherited permissions, association
//! values, `Result` codes, and the encryption of what is stored.

pub mod crypto;
pub mod value;

use std::fmt;

/// A vault entry's id, allocated by the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VaultId(pub i64);

impl fmt::Display for VaultId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The SecretStore `Result` codes live in `proto` (the client needs them).
pub use strongroom_proto::vedsdk::ResultCode;

/// Rights an identity holds on a folder, inherited by everything below it.
#[derive(Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Rights(u32);

impl Rights {
    pub const NONE: Rights = Rights(0);
    pub const VIEW: Rights = Rights(1);
    pub const READ: Rights = Rights(2);
    pub const WRITE: Rights = Rights(4);
    pub const CREATE: Rights = Rights(8);
    pub const DELETE: Rights = Rights(16);
    /// The product's other permission flags (`IsRenameAllowed` …), kept and
    /// shown by the Permissions calls; see the book's "Administering remotely"
    /// for which of them the vault honours.
    pub const RENAME: Rights = Rights(32);
    pub const REVOKE: Rights = Rights(64);
    pub const ASSOCIATE: Rights = Rights(128);
    pub const POLICY_WRITE: Rights = Rights(256);
    pub const PRIVATE_KEY_READ: Rights = Rights(512);
    pub const PRIVATE_KEY_WRITE: Rights = Rights(1024);
    pub const MANAGE_PERMISSIONS: Rights = Rights(2048);
    /// Every flag there is.
    pub const ALL: Rights = Rights(4095);
    const NAMES: [(&'static str, Rights); 12] = [
        ("view", Rights::VIEW),
        ("read", Rights::READ),
        ("write", Rights::WRITE),
        ("create", Rights::CREATE),
        ("delete", Rights::DELETE),
        ("rename", Rights::RENAME),
        ("revoke", Rights::REVOKE),
        ("associate", Rights::ASSOCIATE),
        ("policywrite", Rights::POLICY_WRITE),
        ("privatekeyread", Rights::PRIVATE_KEY_READ),
        ("privatekeywrite", Rights::PRIVATE_KEY_WRITE),
        ("managepermissions", Rights::MANAGE_PERMISSIONS),
    ];

    pub const fn bits(self) -> u32 {
        self.0
    }

    pub const fn from_bits(b: u32) -> Rights {
        Rights(b & Rights::ALL.0)
    }

    pub const fn union(self, other: Rights) -> Rights {
        Rights(self.0 | other.0)
    }

    pub const fn contains(self, other: Rights) -> bool {
        self.0 & other.0 == other.0
    }

    /// These rights with what they imply, as the product reports effective
    /// permissions: Create implies View, Write implies Read, Manage Policy
    /// implies Read and Write.
    pub const fn implied(self) -> Rights {
        let mut r = self.0;
        if r & Rights::CREATE.0 != 0 {
            r |= Rights::VIEW.0;
        }
        if r & Rights::POLICY_WRITE.0 != 0 {
            r |= Rights::READ.0 | Rights::WRITE.0;
        }
        if r & Rights::WRITE.0 != 0 {
            r |= Rights::READ.0;
        }
        Rights(r)
    }

    /// Parses `read,write` (any case; `-`, `_` and spaces inside a name are
    /// ignored, so `manage-permissions` and `PrivateKeyRead` both work).
    pub fn parse(s: &str) -> Option<Rights> {
        let mut r = Rights::NONE;
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let squeezed: String = part.chars().filter(|c| !matches!(c, '-' | '_' | ' ')).collect();
            r = r.union(Rights::NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(&squeezed))?.1);
        }
        Some(r)
    }
}

impl fmt::Debug for Rights {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Rights({self})")
    }
}

impl fmt::Display for Rights {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Rights::NAMES.iter().filter(|(_, r)| self.contains(*r)).map(|(n, _)| *n).collect();
        if names.is_empty() { f.write_str("none") } else { f.write_str(&names.join(",")) }
    }
}

/// A folder of the owner tree, e.g. `\VED\Policy\Team A\App`.
///
/// Paths start at `\VED`, segments are separated by one backslash, and
/// compare case-insensitively (the product's config tree does).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct FolderPath {
    shown: String,
    key: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("a folder path starts with \\VED")]
    NotUnderVed,
    #[error("a folder path has an empty segment")]
    EmptySegment,
    #[error("a folder path holds a control character")]
    Control,
    #[error("a folder path is at most 1024 characters")]
    TooLong,
    /// A new folder named `.` or `..`, or with an invisible character
    /// (bidirectional overrides, zero-width and other format characters):
    /// names that would show one folder and be another.
    #[error("a folder name may not be . or .., nor hold invisible or direction-changing characters")]
    Misleading,
}

/// Characters that show nothing or change the direction of what follows
/// (Unicode format characters a name could hide behind): soft hyphen, the
/// Arabic letter mark, the Mongolian vowel separator, zero-width spaces and
/// joiners, the direction marks, embeddings, overrides and isolates, the
/// invisible operators, and the byte-order mark.
fn invisible(c: char) -> bool {
    matches!(c, '\u{ad}' | '\u{61c}' | '\u{180e}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{feff}')
}

impl FolderPath {
    /// Whether this path may be given to a folder made now: no segment is
    /// `.` or `..` or holds an invisible character. (Paths are read back
    /// with [`FolderPath::parse`] alone, so folders made before this rule
    /// still open.)
    pub fn check_new(&self) -> Result<(), PathError> {
        let bad = |seg: &str| seg == "." || seg == ".." || seg.chars().any(invisible);
        if self.shown.split('\\').any(bad) { Err(PathError::Misleading) } else { Ok(()) }
    }

    pub fn parse(s: &str) -> Result<FolderPath, PathError> {
        let s = s.trim();
        if s.len() > 1024 {
            return Err(PathError::TooLong);
        }
        if s.chars().any(char::is_control) {
            return Err(PathError::Control);
        }
        let rest = s.strip_prefix('\\').ok_or(PathError::NotUnderVed)?;
        let segments: Vec<&str> = rest.split('\\').collect();
        if !segments.first().is_some_and(|f| f.eq_ignore_ascii_case("VED")) {
            return Err(PathError::NotUnderVed);
        }
        if segments.iter().any(|seg| seg.trim().is_empty()) {
            return Err(PathError::EmptySegment);
        }
        let shown = format!("\\VED{}", segments[1..].iter().map(|seg| format!("\\{}", seg.trim())).collect::<String>());
        Ok(FolderPath { key: shown.to_lowercase(), shown })
    }

    /// `\VED`, the top of the tree.
    pub fn ved() -> FolderPath {
        FolderPath { shown: "\\VED".into(), key: "\\ved".into() }
    }

    /// `\VED\Policy`, the root of the owner folders.
    pub fn policy_root() -> FolderPath {
        FolderPath { shown: "\\VED\\Policy".into(), key: "\\ved\\policy".into() }
    }

    /// The path as created.
    pub fn as_str(&self) -> &str {
        &self.shown
    }

    /// The lower-cased form paths are stored and compared by.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// This folder and every folder above it, top first.
    pub fn lineage(&self) -> Vec<FolderPath> {
        let mut out = Vec::new();
        let mut acc = String::new();
        for seg in self.shown[1..].split('\\') {
            acc.push('\\');
            acc.push_str(seg);
            out.push(FolderPath { key: acc.to_lowercase(), shown: acc.clone() });
        }
        out
    }
}

impl fmt::Debug for FolderPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FolderPath({})", self.shown)
    }
}

impl fmt::Display for FolderPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

/// What one identity may do, as far as the vault cares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    pub master_admin: bool,
    /// Rights granted directly on folders: (folder key, rights).
    pub grants: Vec<(String, Rights)>,
}

impl Permissions {
    /// Rights on `folder`: everything granted on it or above it. A Master
    /// Admin holds every right everywhere.
    pub fn effective(&self, folder: &FolderPath) -> Rights {
        if self.master_admin {
            return Rights::from_bits(u32::MAX);
        }
        let lineage: Vec<String> = folder.lineage().into_iter().map(|p| p.key).collect();
        self.grants.iter().filter(|(k, _)| lineage.contains(k)).fold(Rights::NONE, |acc, (_, r)| acc.union(*r))
    }

    /// Whether `needed` is held on at least one of `owners`.
    pub fn on_any(&self, owners: &[FolderPath], needed: Rights) -> bool {
        self.master_admin || owners.iter().any(|o| self.effective(o).contains(needed))
    }
}

/// The only namespace the product's examples use; others are refused.
pub const NAMESPACE: &str = "config";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_canonicalise_and_nest() {
        let p = FolderPath::parse("\\ved\\Policy\\Team A\\App").unwrap();
        assert_eq!(p.as_str(), "\\VED\\Policy\\Team A\\App");
        assert_eq!(p.key(), "\\ved\\policy\\team a\\app");
        let l: Vec<String> = p.lineage().iter().map(|f| f.as_str().to_owned()).collect();
        assert_eq!(l, ["\\VED", "\\VED\\Policy", "\\VED\\Policy\\Team A", "\\VED\\Policy\\Team A\\App"]);
        assert_eq!(FolderPath::parse("VED\\Policy"), Err(PathError::NotUnderVed));
        assert_eq!(FolderPath::parse("\\Other\\Policy"), Err(PathError::NotUnderVed));
        assert_eq!(FolderPath::parse("\\VED\\\\x"), Err(PathError::EmptySegment));
        assert_eq!(FolderPath::parse("\\VED\\x\\"), Err(PathError::EmptySegment));
        assert_eq!(FolderPath::parse("\\VED\\a\nb"), Err(PathError::Control));
        assert_eq!(FolderPath::ved(), FolderPath::parse("\\ved").unwrap());
        assert_eq!(FolderPath::policy_root(), FolderPath::parse("\\VED\\Policy").unwrap());
    }

    #[test]
    fn new_folders_may_not_mislead() {
        for ok in ["\\VED\\Policy\\Team A", "\\VED\\Policy\\.hidden", "\\VED\\Policy\\a..b", "\\VED\\Policy\\Équipe"] {
            assert_eq!(FolderPath::parse(ok).unwrap().check_new(), Ok(()), "{ok}");
        }
        for bad in [
            "\\VED\\Policy\\.",
            "\\VED\\Policy\\..\\x",
            "\\VED\\Policy\\Team\u{202e}A",
            "\\VED\\Policy\\Te\u{200b}am",
            "\\VED\\\u{feff}Policy",
        ] {
            let p = FolderPath::parse(bad).unwrap();
            assert_eq!(p.check_new(), Err(PathError::Misleading), "{bad:?}");
        }
    }

    #[test]
    fn rights_inherit_downwards_only() {
        let team = FolderPath::parse("\\VED\\Policy\\Team").unwrap();
        let app = FolderPath::parse("\\VED\\Policy\\Team\\App").unwrap();
        let other = FolderPath::parse("\\VED\\Policy\\Other").unwrap();
        let p = Permissions { master_admin: false, grants: vec![(team.key().to_owned(), Rights::READ.union(Rights::WRITE))] };
        assert!(p.effective(&app).contains(Rights::WRITE));
        assert!(p.effective(&team).contains(Rights::READ));
        assert_eq!(p.effective(&other), Rights::NONE);
        assert_eq!(p.effective(&FolderPath::parse("\\VED\\Policy").unwrap()), Rights::NONE, "not upwards");
        assert!(p.on_any(&[other.clone(), app], Rights::WRITE));
        assert!(!p.on_any(std::slice::from_ref(&other), Rights::READ));
        let admin = Permissions { master_admin: true, grants: vec![] };
        assert!(admin.on_any(&[other], Rights::WRITE.union(Rights::DELETE)));
    }

    #[test]
    fn rights_parse_and_print() {
        assert_eq!(Rights::parse("Read, write"), Some(Rights::READ.union(Rights::WRITE)));
        assert_eq!(Rights::parse("fly"), None);
        assert_eq!(Rights::parse("read,write").unwrap().to_string(), "read,write");
        assert_eq!(Rights::NONE.to_string(), "none");
        assert_eq!(Rights::parse("Manage-Permissions,privatekeyread"), Some(Rights::MANAGE_PERMISSIONS.union(Rights::PRIVATE_KEY_READ)));
        assert_eq!(Rights::from_bits(u32::MAX), Rights::ALL);
        assert_eq!(Rights::from_bits(1 << 12), Rights::NONE, "unknown bits are dropped");
        assert_eq!(Rights::parse(&Rights::ALL.to_string()), Some(Rights::ALL));
        assert_eq!(Rights::CREATE.implied(), Rights::CREATE.union(Rights::VIEW));
        assert_eq!(Rights::WRITE.implied(), Rights::WRITE.union(Rights::READ));
        assert!(Rights::POLICY_WRITE.implied().contains(Rights::READ.union(Rights::WRITE)));
    }
}
