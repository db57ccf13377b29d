//! Scopes: `category[:privilege,privilege...]` joined by `;`.
//!
//! Parsing is case-insensitive and canonicalises (lower case, fixed order), so
//! a scope compares and stores the same however a client spelled it. A
//! privilege implies the bare category: `restricted:manage` satisfies an
//! endpoint that needs `restricted`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The product's scope categories and the privileges each may carry.
const CATALOGUE: &[(&str, &[&str])] = &[
    ("admin", &["algorithms", "delete", "recyclebin", "rotate", "viewlogs"]),
    ("agent", &["delete"]),
    ("certificate", &["approve", "delete", "discover", "manage", "revoke"]),
    ("codesign", &["admin", "approve", "delete", "manage"]),
    ("codesignclient", &[]),
    ("configuration", &["delete", "manage"]),
    ("restricted", &["delete", "manage"]),
    ("security", &["delete", "manage"]),
    ("ssh", &["approve", "delete", "discover", "manage"]),
    ("statistics", &["delete", "manage"]),
];

/// Why a scope string is refused. Its text names the valid scopes (never
/// the text refused), for the client's `error_description` and the admin's
/// `--scope`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    #[error("scope is empty")]
    Empty,
    #[error("scope is too long")]
    TooLong,
    #[error("no scope category of that name; {valid}", valid = Valid)]
    UnknownCategory,
    /// A privilege the category (named) does not have.
    #[error("{0} has no privilege of that name ({privileges}); {valid}", privileges = Privileges(.0), valid = Valid)]
    UnknownPrivilege(&'static str),
    #[error("a privilege is missing after `:` or `,`; {valid}", valid = Valid)]
    Malformed,
}

/// The valid scopes, from the catalogue: each category with all of its
/// privileges, which is itself the widest scope there is.
struct Valid;

impl fmt::Display for Valid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("valid scopes are a category alone or with some of its privileges, several joined by `;`: ")?;
        for (i, (cat, privs)) in CATALOGUE.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            f.write_str(cat)?;
            if !privs.is_empty() {
                write!(f, ":{}", privs.join(","))?;
            }
        }
        Ok(())
    }
}

/// A category's privileges, in words.
struct Privileges<'a>(&'a str);

impl fmt::Display for Privileges<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match CATALOGUE.iter().find(|(c, _)| *c == self.0) {
            Some((_, privs)) if !privs.is_empty() => write!(f, "its privileges: {}", privs.join(", ")),
            _ => f.write_str("it takes none"),
        }
    }
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
            let (name, allowed) = CATALOGUE.iter().find(|(n, _)| n.eq_ignore_ascii_case(cat)).ok_or(ScopeError::UnknownCategory)?;
            let entry = map.entry(name).or_default();
            if let Some(privs) = privs {
                for p in privs.split(',') {
                    if p.is_empty() {
                        return Err(ScopeError::Malformed);
                    }
                    let p = allowed.iter().find(|a| a.eq_ignore_ascii_case(p)).ok_or(ScopeError::UnknownPrivilege(name))?;
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

    /// Every scope a grant may hold: each category alone, and each with
    /// one of its privileges (`restricted`, `restricted:delete`, …).
    pub fn catalogue() -> Vec<String> {
        CATALOGUE
            .iter()
            .flat_map(|(cat, privs)| std::iter::once((*cat).to_owned()).chain(privs.iter().map(move |p| format!("{cat}:{p}"))))
            .collect()
    }

    /// Lines in plain words for the approval page: what each part of the
    /// scope lets the application do, the reading its category implies
    /// first, then one line per privilege.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (cat, privs) in &self.0 {
            lines.push(plain_words(cat, ""));
            lines.extend(privs.iter().map(|p| plain_words(cat, p)));
        }
        lines
    }
}

/// What a scope's category (privilege `""`) or privilege lets an
/// application do, for people deciding whether to approve it.
const PLAIN_WORDS: &[(&str, &str, &str)] = &[
    ("admin", "", "Read the server's administrative settings"),
    ("admin", "algorithms", "Change which cryptographic algorithms are allowed"),
    ("admin", "delete", "Delete administrative objects"),
    ("admin", "recyclebin", "Restore or empty the recycle bin"),
    ("admin", "rotate", "Re-encrypt vault entries under another key"),
    ("admin", "viewlogs", "Read the event log"),
    ("agent", "", "Read agents"),
    ("agent", "delete", "Delete agents"),
    ("certificate", "", "Read certificates"),
    ("certificate", "approve", "Approve certificate requests"),
    ("certificate", "delete", "Delete certificates"),
    ("certificate", "discover", "Look for certificates on the network"),
    ("certificate", "manage", "Request, renew and change certificates"),
    ("certificate", "revoke", "Revoke certificates"),
    ("codesign", "", "Read code signing projects"),
    ("codesign", "admin", "Administer code signing"),
    ("codesign", "approve", "Approve code signing requests"),
    ("codesign", "delete", "Delete code signing projects"),
    ("codesign", "manage", "Create and change code signing projects"),
    ("codesignclient", "", "Sign code with the code signing client"),
    ("configuration", "", "Read configuration objects"),
    ("configuration", "delete", "Delete configuration objects"),
    ("configuration", "manage", "Create and change configuration objects"),
    ("restricted", "", "Read secrets and their values in the vault"),
    ("restricted", "delete", "Delete vault entries"),
    ("restricted", "manage", "Store secrets and change their values in the vault"),
    (
        "security",
        "",
        "Read the credentials you may read, their passwords and other secret values included, and who holds which permissions",
    ),
    ("security", "delete", "Delete credentials and the secret values they hold, and permission entries"),
    ("security", "manage", "Create credentials, change their secret values, rename them, and grant permissions"),
    ("ssh", "", "Read SSH keys"),
    ("ssh", "approve", "Approve SSH key requests"),
    ("ssh", "delete", "Delete SSH keys"),
    ("ssh", "discover", "Look for SSH keys on the network"),
    ("ssh", "manage", "Create and change SSH keys"),
    ("statistics", "", "Read statistics"),
    ("statistics", "delete", "Delete statistics"),
    ("statistics", "manage", "Change statistics"),
];

fn plain_words(category: &str, privilege: &str) -> String {
    PLAIN_WORDS
        .iter()
        .find(|(c, p, _)| *c == category && *p == privilege)
        .map_or_else(|| format!("{category} {privilege}").trim().to_owned(), |(_, _, w)| (*w).to_owned())
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
        assert_eq!(Scope::parse("restricted:fly"), Err(ScopeError::UnknownPrivilege("restricted")));
        assert_eq!(Scope::parse("Certificate:admin"), Err(ScopeError::UnknownPrivilege("certificate")));
        assert_eq!(Scope::parse("restricted:"), Err(ScopeError::Malformed));
        assert_eq!(Scope::parse("restricted:manage,,delete"), Err(ScopeError::Malformed));
    }

    #[test]
    fn a_refusal_names_the_valid_scopes_and_not_what_was_given() {
        let wrong = Scope::parse("certificate:admin").unwrap_err().to_string();
        assert!(
            wrong.starts_with("certificate has no privilege of that name (its privileges: approve, delete, discover, manage, revoke); "),
            "{wrong}"
        );
        assert_eq!(
            Scope::parse("codesignclient:manage").unwrap_err().to_string().split("; ").next(),
            Some("codesignclient has no privilege of that name (it takes none)")
        );
        for bad in ["certificate:admin", "vault:manage", "restricted:"] {
            let text = Scope::parse(bad).unwrap_err().to_string();
            let (_, listed) = text.split_once("several joined by `;`: ").unwrap_or_else(|| panic!("{bad}: {text}"));
            // The list is the widest scope: it parses, and holds every scope of the catalogue.
            let widest = Scope::parse(listed).unwrap_or_else(|e| panic!("{bad}: {listed:?}: {e}"));
            assert!(Scope::catalogue().iter().all(|s| Scope::parse(s).unwrap().is_subset_of(&widest)), "{listed}");
            assert!(!text.contains("vault"), "{bad}: the text given is not echoed: {text}");
        }
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

    #[test]
    fn every_scope_has_plain_words() {
        for s in Scope::catalogue() {
            let (cat, p) = s.split_once(':').unwrap_or((&s, ""));
            assert!(PLAIN_WORDS.iter().any(|(c, q, _)| *c == cat && *q == p), "{s} has no plain words");
            assert!(Scope::parse(&s).is_ok(), "{s}");
        }
        assert_eq!(PLAIN_WORDS.len(), Scope::catalogue().len(), "no words for scopes that do not exist");
        let lines = Scope::parse("restricted:manage,delete;admin:viewlogs").unwrap().describe();
        assert_eq!(
            lines,
            [
                "Read the server's administrative settings",
                "Read the event log",
                "Read secrets and their values in the vault",
                "Delete vault entries",
                "Store secrets and change their values in the vault",
            ]
        );
    }

    /// A scope drawn from the catalogue, spelled as a client might: parts in
    /// any order and case, a category more than once (its privileges then
    /// add up), `;` or whitespace between them; with the canonical form its
    /// parse must give.
    fn spelled_scope() -> impl Strategy<Value = (String, String)> {
        let part = (0..CATALOGUE.len(), proptest::collection::vec(any::<proptest::sample::Index>(), 0..4), any::<u64>());
        let seps = proptest::collection::vec(proptest::sample::select(vec![";", " ", " ; ", ";;", "\t", "  "]), 6);
        (proptest::collection::vec(part, 1..6), seps).prop_map(|(parts, seps)| {
            let mut expected: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
            let mut spelled = String::new();
            for (i, (cat, picks, case)) in parts.into_iter().enumerate() {
                let (name, allowed) = CATALOGUE[cat];
                let privs: BTreeSet<&str> =
                    if allowed.is_empty() { BTreeSet::new() } else { picks.iter().map(|p| *p.get(allowed)).collect() };
                expected.entry(name).or_default().extend(&privs);
                let mut part = name.to_owned();
                if !privs.is_empty() {
                    part.push(':');
                    part.push_str(&privs.into_iter().collect::<Vec<_>>().join(","));
                }
                // Each letter in upper case where its bit of `case` is set.
                let part: String =
                    part.chars().enumerate().map(|(j, c)| if case >> (j % 64) & 1 == 1 { c.to_ascii_uppercase() } else { c }).collect();
                if i > 0 {
                    spelled.push_str(seps[i % seps.len()]);
                }
                spelled.push_str(&part);
            }
            let canonical = expected
                .iter()
                .map(|(cat, privs)| {
                    if privs.is_empty() {
                        (*cat).to_owned()
                    } else {
                        format!("{cat}:{}", privs.iter().copied().collect::<Vec<_>>().join(","))
                    }
                })
                .collect::<Vec<_>>()
                .join(";");
            (spelled, canonical)
        })
    }

    proptest! {
        #[test]
        fn canonical_form_reparses_to_itself((spelled, canonical) in spelled_scope()) {
            let scope = Scope::parse(&spelled);
            prop_assert!(scope.is_ok(), "{spelled:?} does not parse: {scope:?}");
            let scope = scope.unwrap();
            prop_assert_eq!(scope.to_string(), canonical);
            let again = Scope::parse(&scope.to_string()).unwrap();
            prop_assert_eq!(&again, &scope);
            prop_assert_eq!(again.to_string(), scope.to_string());
            prop_assert!(scope.is_subset_of(&again) && again.is_subset_of(&scope));
        }
    }
}
