//! Credential objects (`/vedsdk/Credentials/*`): the classes
//! Strongroom serves, how each is named on the wire, the value names each
//! holds, and the vault type its sealed entry is stored under.
//!
//! A credential is a folder of the `\VED` tree at its DN that owns one vault
//! entry of one of the [`Class`] vault types. Those types lie in a range of
//! Strongroom's own (`0x0100_0000` and up) that none of the product's vault
//! types uses, so an ordinary `SecretStore/Add` of a password (type 32)
//! never passes for a credential.

/// The first of Strongroom's private vault types (see the module's text).
pub const VAULT_TYPE_BASE: i32 = 0x0100_0000;

/// Largest number of values one credential holds.
pub const MAX_VALUES: usize = 16;
/// Largest value (characters), for a base64 PKCS#12 too.
pub const MAX_VALUE_CHARS: usize = 512 * 1024;
/// Largest description or contact (characters).
pub const MAX_TEXT_CHARS: usize = 4096;

/// The credential classes served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    UsernamePassword,
    Password,
    Generic,
    Certificate,
}

impl Class {
    pub const ALL: [Class; 4] = [Class::UsernamePassword, Class::Password, Class::Generic, Class::Certificate];

    /// The `FriendlyName` clients send (pyvenafi's `features.credentials`).
    pub fn friendly_name(self) -> &'static str {
        match self {
            Class::UsernamePassword => "UsernamePassword",
            Class::Password => "Password",
            Class::Generic => "Generic",
            Class::Certificate => "Certificate",
        }
    }

    /// The product's class name (`Classname`, `ClassName`).
    pub fn class_name(self) -> &'static str {
        match self {
            Class::UsernamePassword => "Username Password Credential",
            Class::Password => "Password Credential",
            Class::Generic => "Generic Credential",
            Class::Certificate => "Certificate Credential",
        }
    }

    /// The vault type of the class's sealed entry.
    pub fn vault_type(self) -> i32 {
        VAULT_TYPE_BASE
            + match self {
                Class::UsernamePassword => 1,
                Class::Password => 2,
                Class::Generic => 3,
                Class::Certificate => 4,
            }
    }

    pub fn from_vault_type(t: i32) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.vault_type() == t)
    }

    /// A class by its `FriendlyName` or its class name, in any case
    /// (`Username/Password Credential`, pyvenafi's feature name, too).
    pub fn parse(s: &str) -> Option<Class> {
        let s = s.trim();
        Class::ALL.into_iter().find(|c| {
            s.eq_ignore_ascii_case(c.friendly_name())
                || s.eq_ignore_ascii_case(c.class_name())
                || (*c == Class::UsernamePassword && s.eq_ignore_ascii_case("Username/Password Credential"))
        })
    }

    /// The value names the class holds, each with whether it is required.
    pub fn names(self) -> &'static [(&'static str, bool)] {
        match self {
            Class::UsernamePassword => &[("Username", true), ("Password", true)],
            Class::Password => &[("Password", true)],
            Class::Generic => &[("Generic", true), ("Password", false)],
            Class::Certificate => &[("Certificate", true), ("Password", false)],
        }
    }
}

/// Why a credential's values are refused: the `Config` result code and the text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{1}")]
pub struct Refusal(pub i32, pub String);

/// `AttributeValueIsMandatory`.
pub const ATTRIBUTE_VALUE_IS_MANDATORY: i32 = 110;
/// `IllegalAttributeForClass`.
pub const ILLEGAL_ATTRIBUTE_FOR_CLASS: i32 = 112;
/// `AttributeValueTooLong`.
pub const ATTRIBUTE_VALUE_TOO_LONG: i32 = 111;
/// `InvalidArgument`.
pub const INVALID_ARGUMENT: i32 = 2;
/// `CredentialTypeMismatch`: an update naming another class.
pub const CREDENTIAL_TYPE_MISMATCH: i32 = 1004;
/// `SecretStoreFailed`: the sealed values could not be read or written.
pub const SECRET_STORE_FAILED: i32 = 1000;
/// `DriverTransactionCollision`: the credential changed meanwhile.
pub const TRANSACTION_COLLISION: i32 = 504;

/// Checks the names of a credential's values against its class: each
/// name once (in any case, stored as the class spells it), none the class
/// does not hold, every required one there. `names` are the values' names
/// in order; the answer is their canonical spellings in the same order.
pub fn check_names(class: Class, names: &[&str]) -> Result<Vec<&'static str>, Refusal> {
    if names.len() > MAX_VALUES {
        return Err(Refusal(INVALID_ARGUMENT, format!("At most {MAX_VALUES} values.")));
    }
    let mut out: Vec<&'static str> = Vec::with_capacity(names.len());
    for n in names {
        let Some((canon, _)) = class.names().iter().find(|(c, _)| c.eq_ignore_ascii_case(n)) else {
            let allowed: Vec<&str> = class.names().iter().map(|(c, _)| *c).collect();
            return Err(Refusal(
                ILLEGAL_ATTRIBUTE_FOR_CLASS,
                format!("{} holds only {}; not {n:?}.", class.class_name(), allowed.join(", ")),
            ));
        };
        if out.contains(canon) {
            return Err(Refusal(INVALID_ARGUMENT, format!("The value {canon} is given twice.")));
        }
        out.push(canon);
    }
    if let Some((missing, _)) = class.names().iter().find(|(c, required)| *required && !out.contains(c)) {
        return Err(Refusal(ATTRIBUTE_VALUE_IS_MANDATORY, format!("{} needs a value named {missing}.", class.class_name())));
    }
    Ok(out)
}

/// Reads an expiration as clients send it: `/Date(ms)/` (pyvenafi, the
/// product's WCF form, with an optional `+hhmm` offset that does not change
/// the instant), `\/Date(ms)\/`, or bare milliseconds. `/Date(None)/`
/// (pyvenafi's raw call without an expiration) is none. Milliseconds since
/// the Unix epoch.
pub fn parse_expiration(s: &str) -> Result<Option<i64>, Refusal> {
    let t = s.trim().trim_matches(|c| c == '/' || c == '\\');
    let inner = t.strip_prefix("Date(").and_then(|r| r.strip_suffix(')')).unwrap_or(t);
    if inner.eq_ignore_ascii_case("none") || inner.eq_ignore_ascii_case("null") || inner.is_empty() {
        return Ok(None);
    }
    let digits = match inner.char_indices().skip(1).find(|(_, c)| *c == '+' || *c == '-') {
        Some((i, _)) => &inner[..i],
        None => inner,
    };
    digits.parse::<i64>().map(Some).map_err(|_| Refusal(INVALID_ARGUMENT, "Expiration must be /Date(milliseconds since 1970)/.".into()))
}

/// An expiration as the product writes it: `/Date(ms)/`.
pub fn format_expiration(ms: i64) -> String {
    format!("/Date({ms})/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_round_trip_and_keep_out_of_the_products_vault_types() {
        for c in Class::ALL {
            assert_eq!(Class::from_vault_type(c.vault_type()), Some(c));
            assert_eq!(Class::parse(c.friendly_name()), Some(c));
            assert_eq!(Class::parse(&c.class_name().to_lowercase()), Some(c));
        }
        assert_eq!(Class::parse("Username/Password Credential"), Some(Class::UsernamePassword));
        for product in [0, 1, 2, 4, 32, 128, 256, 16384, 1_073_741_856, -2_147_483_392] {
            assert_eq!(Class::from_vault_type(product), None);
        }
        assert_eq!(Class::parse("Amazon"), None);
    }

    #[test]
    fn names_are_checked_against_the_class() {
        assert_eq!(check_names(Class::UsernamePassword, &["username", "Password"]), Ok(vec!["Username", "Password"]));
        assert_eq!(check_names(Class::Password, &[]).map_err(|r| r.0), Err(ATTRIBUTE_VALUE_IS_MANDATORY));
        assert_eq!(check_names(Class::Password, &["Password", "Username"]).map_err(|r| r.0), Err(ILLEGAL_ATTRIBUTE_FOR_CLASS));
        assert_eq!(check_names(Class::Generic, &["Generic", "generic"]).map_err(|r| r.0), Err(INVALID_ARGUMENT));
        assert_eq!(check_names(Class::Certificate, &["Certificate"]), Ok(vec!["Certificate"]));
    }

    #[test]
    fn expirations_read_every_form_clients_send() {
        assert_eq!(parse_expiration("/Date(1700000000000)/"), Ok(Some(1_700_000_000_000)));
        assert_eq!(parse_expiration("\\/Date(1700000000000+0100)\\/"), Ok(Some(1_700_000_000_000)));
        assert_eq!(parse_expiration("/Date(-5)/"), Ok(Some(-5)));
        assert_eq!(parse_expiration("1700000000000"), Ok(Some(1_700_000_000_000)));
        assert_eq!(parse_expiration("/Date(None)/"), Ok(None));
        assert!(parse_expiration("tomorrow").is_err());
        assert_eq!(format_expiration(12), "/Date(12)/");
    }
}
