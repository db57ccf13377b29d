//! Scopes: `category[:privilege,privilege...]` joined by `;`.
//!
//! Parsing is case-insensitive and canonicalises (lower case, fixed order), so
//! a scope compares and stores the same however a client spelled it. A
//! privilege implies the bare category: `restricted:manage` satisfies an
//! endpoint that needs `restricted`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The product's scope categories and the privileges each may carry.
const CATALOGUE: &[(&str, &[&str], &str)] = &[
    ("admin", &["algorithms", "delete", "recyclebin", "rotate", "viewlogs"], "administration"),
    ("agent", &["delete"], "agents"),
    ("certificate", &["approve", "delete", "discover", "manage", "revoke"], "certificates"),
    ("codesign", &["admin", "approve", "delete", "manage"], "code signing projects"),
    ("codesignclient", &[], "code signing"),
    ("configuration", &["delete", "manage"], "configuration objects"),
    ("restricted", &["delete", "manage"], "the secret vault and other low-level data"),
    ("security", &["delete", "manage"], "credentials and permissions"),
    ("ssh", &["approve", "delete", "discover", "manage"], "SSH keys"),
    ("statistics", &["delete", "manage"], "statistics"),
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    #[error("scope is empty")]
    Empty,
    #[error("scope is too long")]
    TooLong,
    #[error("unknown scope category")]
    UnknownCategory,
    #[error("unknown privilege for scope category")]
    UnknownPrivilege,
    #[error("malformed scope")]
    Malformed,
}

/// A parsed, canonical scope.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Scope(BTreeMap<&'static str, BTreeSet<&'static str>>);

impl Scope {
    /// Parses a scope string. `;` separates categories; whitespace is taken as
    /// a separator too, because RFC 6749 clients (oauth2-rs) join scopes with
    /// spaces.
    pub fn parse(input: &str) -> Result<Scope, ScopeError> {
        if input.len() > 1024 {
            return Err(ScopeError::TooLong);
        }
        let mut map: BTreeMap<&'static str, BTreeSet<&'static str>> = BTreeMap::new();
        for part in input.split(|c: char| c == ';' || c.is_whitespace()) {
            if part.is_empty() {
                continue;
            }
            let (cat, privs) = match part.split_once(':') {
                Some((c, p)) => (c, Some(p)),
                None => (part, None),
            };
            let (name, allowed, _) = CATALOGUE.iter().find(|(n, _, _)| n.eq_ignore_ascii_case(cat)).ok_or(ScopeError::UnknownCategory)?;
            let entry = map.entry(name).or_default();
            if let Some(privs) = privs {
                for p in privs.split(',') {
                    if p.is_empty() {
                        return Err(ScopeError::Malformed);
                    }
                    let p = allowed.iter().find(|a| a.eq_ignore_ascii_case(p)).ok_or(ScopeError::UnknownPrivilege)?;
                    entry.insert(p);
                }
            }
        }
        if map.is_empty() {
            return Err(ScopeError::Empty);
        }
        Ok(Scope(map))
    }

    /// True when every category and privilege of `self` is also in `max`.
    pub fn is_subset_of(&self, max: &Scope) -> bool {
        self.0.iter().all(|(cat, privs)| max.0.get(cat).is_some_and(|m| privs.is_subset(m)))
    }

    /// True when this scope grants `category`, and `privilege` if one is named.
    pub fn allows(&self, category: &str, privilege: Option<&str>) -> bool {
        match self.0.iter().find(|(c, _)| c.eq_ignore_ascii_case(category)) {
            None => false,
            Some((_, privs)) => privilege.is_none_or(|p| privs.iter().any(|x| x.eq_ignore_ascii_case(p))),
        }
    }

    /// Lines in plain words for the approval page.
    pub fn describe(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|(cat, privs)| {
                let what = CATALOGUE.iter().find(|(n, _, _)| n == cat).map_or("", |(_, _, d)| *d);
                if privs.is_empty() {
                    format!("Read {what}")
                } else {
                    let list: Vec<&str> = privs.iter().copied().collect();
                    format!("Read and {} {what}", list.join(", "))
                }
            })
            .collect()
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (cat, privs) in &self.0 {
            if !first {
                f.write_str(";")?;
            }
            first = false;
            f.write_str(cat)?;
            let mut sep = ':';
            for p in privs {
                write!(f, "{sep}{p}")?;
                sep = ',';
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Scope({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_and_canonicalises() {
        let s = Scope::parse("Restricted:Manage,delete;certificate:manage,revoke").unwrap();
        assert_eq!(s.to_string(), "certificate:manage,revoke;restricted:delete,manage");
        assert_eq!(Scope::parse("statistics").unwrap().to_string(), "statistics");
        assert_eq!(Scope::parse("restricted:manage restricted:delete").unwrap().to_string(), "restricted:delete,manage");
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        assert_eq!(Scope::parse(""), Err(ScopeError::Empty));
        assert_eq!(Scope::parse(" ;; "), Err(ScopeError::Empty));
        assert_eq!(Scope::parse("vault:manage"), Err(ScopeError::UnknownCategory));
        assert_eq!(Scope::parse("restricted:fly"), Err(ScopeError::UnknownPrivilege));
        assert_eq!(Scope::parse("restricted:"), Err(ScopeError::Malformed));
        assert_eq!(Scope::parse("restricted:manage,,delete"), Err(ScopeError::Malformed));
    }

    #[test]
    fn subset_and_allows() {
        let max = Scope::parse("restricted:manage;certificate:manage").unwrap();
        assert!(Scope::parse("restricted").unwrap().is_subset_of(&max));
        assert!(Scope::parse("restricted:manage").unwrap().is_subset_of(&max));
        assert!(!Scope::parse("restricted:delete").unwrap().is_subset_of(&max));
        assert!(!Scope::parse("admin").unwrap().is_subset_of(&max));
        let s = Scope::parse("restricted:manage").unwrap();
        assert!(s.allows("restricted", None));
        assert!(s.allows("Restricted", Some("Manage")));
        assert!(!s.allows("restricted", Some("delete")));
        assert!(!s.allows("admin", None));
    }

    proptest! {
        #[test]
        fn canonical_form_reparses_to_itself(s in "[a-zA-Z:,; ]{0,60}") {
            if let Ok(scope) = Scope::parse(&s) {
                let again = Scope::parse(&scope.to_string()).unwrap();
                prop_assert_eq!(again.to_string(), scope.to_string());
                prop_assert!(scope.is_subset_of(&again));
            }
        }
    }
}
