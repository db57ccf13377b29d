//! Custom fields of certificate objects (the product's metadata items), the
//! pure part: their types, names, the classes they apply to and the check of
//! the values a client sets (`Metadata/Set`, `Certificates/Request`'s
//! `CustomFields`), with the product's metadata result codes.

use super::{CERTIFICATE_CLASS, CREATED_CLASS};

/// The product's field types (`Key.Type`): a text string and a list of allowed values.
pub const TEXT: i64 = 1;
pub const LIST: i64 = 2;

/// The classes a field applies to when its definition names none: every certificate (the
/// abstract base class covers the classes below it).
pub const DEFAULT_CLASS: &str = CREATED_CLASS;

/// Bounds: a field's name, one value, the values of one field on one object, a list's values.
pub const MAX_NAME: usize = 128;
pub const MAX_VALUE: usize = 1024;
pub const MAX_VALUES: usize = 64;

/// The product's metadata result codes (`Result` of `Metadata/*`) that Strongroom answers.
pub mod result {
    pub const SUCCESS: i64 = 0;
    pub const INVALID_DN: i64 = 2;
    pub const INVALID_ITEM: i64 = 4;
    pub const INVALID_RIGHTS: i64 = 7;
    pub const VALUE_NOT_IN_ALLOWED_LIST: i64 = 17;
    pub const ITEM_NOT_VALID_FOR_CLASS: i64 = 18;
    pub const NAME_TOO_LONG: i64 = 19;
}

/// The type's name as `GET Certificates/{guid}`'s `CustomFields[].Type` shows it.
pub fn type_name(kind: i64) -> &'static str {
    if kind == LIST { "List" } else { "Text" }
}

/// A type as an operator writes it (`text`, `list`, or the product's number).
pub fn parse_kind(s: &str) -> Option<i64> {
    match s.trim().to_ascii_lowercase().as_str() {
        "text" | "string" | "1" => Some(TEXT),
        "list" | "2" => Some(LIST),
        _ => None,
    }
}

/// A field's name (its label), trimmed: 1 to [`MAX_NAME`] characters, no control character and no
/// `\` (the name is the last part of its DN, `\VED\Metadata Root\NAME`).
pub fn check_name(name: &str) -> Result<String, String> {
    let n = name.trim();
    if n.is_empty() {
        return Err("A field needs a name.".into());
    }
    if n.chars().count() > MAX_NAME {
        return Err(format!("A field's name has at most {MAX_NAME} characters."));
    }
    if n.chars().any(|c| c.is_control() || c == '\\') {
        return Err("A field's name holds no control character and no backslash.".into());
    }
    Ok(n.to_owned())
}

/// A class a field may apply to, in the product's spelling; `None`: not a certificate class.
pub fn class_name(s: &str) -> Option<&'static str> {
    [CREATED_CLASS, CERTIFICATE_CLASS].into_iter().find(|c| c.eq_ignore_ascii_case(s.trim()))
}

/// Whether a field of `classes` applies to an object of class `class` (the base class
/// `X509 Certificate` covers every certificate class, and nothing else).
pub fn applies(classes: &[String], class: &str) -> bool {
    let certificate = class_name(class).is_some();
    classes.iter().any(|c| c.eq_ignore_ascii_case(class) || (certificate && c.eq_ignore_ascii_case(DEFAULT_CLASS)))
}

/// Why values cannot be set: the product's result code and a text for a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    pub code: i64,
    pub text: String,
}

/// Checks `values` for a field named `name` of type `kind` (`allowed`: a list's values): each
/// value at most [`MAX_VALUE`] characters, at most [`MAX_VALUES`] of them, a list's among its
/// allowed values (exactly as defined). No values clears the field.
pub fn check_values(name: &str, kind: i64, allowed: &[String], values: &[String]) -> Result<(), Refused> {
    if values.len() > MAX_VALUES {
        return Err(Refused { code: result::NAME_TOO_LONG, text: format!("Custom field {name} takes at most {MAX_VALUES} values.") });
    }
    if let Some(v) = values.iter().find(|v| v.chars().count() > MAX_VALUE) {
        let head: String = v.chars().take(16).collect();
        return Err(Refused {
            code: result::NAME_TOO_LONG,
            text: format!("A value of custom field {name} ({head}…) is longer than {MAX_VALUE} characters."),
        });
    }
    if kind == LIST
        && let Some(v) = values.iter().find(|v| !allowed.contains(v))
    {
        return Err(Refused {
            code: result::VALUE_NOT_IN_ALLOWED_LIST,
            text: format!("{v:?} is not an allowed value of custom field {name}."),
        });
    }
    Ok(())
}

/// A list of strings as stored (a JSON array).
pub fn encode_list(list: &[String]) -> String {
    serde_json::Value::from(list.to_vec()).to_string()
}

/// A stored list; `None` if it is not a JSON array of strings.
pub fn decode_list(text: &str) -> Option<Vec<String>> {
    serde_json::from_str(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn names_kinds_and_classes() {
        assert_eq!(check_name("  Cost Center ").unwrap(), "Cost Center");
        assert!(check_name("").is_err());
        assert!(check_name("a\\b").is_err());
        assert!(check_name(&"x".repeat(MAX_NAME + 1)).is_err());
        assert_eq!(parse_kind("List"), Some(LIST));
        assert_eq!(parse_kind("text"), Some(TEXT));
        assert_eq!(parse_kind("date"), None);
        assert_eq!(class_name("x509 server certificate"), Some(CERTIFICATE_CLASS));
        assert_eq!(class_name("Device"), None);
        assert!(applies(&s(&["X509 Certificate"]), CERTIFICATE_CLASS));
        assert!(applies(&s(&["X509 Server Certificate"]), CERTIFICATE_CLASS));
        assert!(!applies(&s(&["X509 Server Certificate"]), CREATED_CLASS));
        assert!(!applies(&s(&["X509 Certificate"]), "Device"));
        assert_eq!(type_name(LIST), "List");
        assert_eq!(type_name(TEXT), "Text");
    }

    #[test]
    fn values_are_checked() {
        let allowed = s(&["Staging", "UAT"]);
        assert!(check_values("Env", LIST, &allowed, &s(&["UAT", "Staging"])).is_ok());
        assert_eq!(check_values("Env", LIST, &allowed, &s(&["uat"])).unwrap_err().code, result::VALUE_NOT_IN_ALLOWED_LIST);
        assert!(check_values("Cost", TEXT, &[], &s(&["anything"])).is_ok());
        assert!(check_values("Cost", TEXT, &[], &[]).is_ok());
        assert_eq!(check_values("Cost", TEXT, &[], &[String::from("x").repeat(MAX_VALUE + 1)]).unwrap_err().code, result::NAME_TOO_LONG);
        assert!(check_values("Cost", TEXT, &[], &vec![String::new(); MAX_VALUES + 1]).is_err());
    }

    #[test]
    fn lists_round_trip() {
        let l = s(&["a\"b", "ü", ""]);
        assert_eq!(decode_list(&encode_list(&l)).unwrap(), l);
        assert_eq!(decode_list("{}"), None);
    }
}
