//! `/vedsdk` request bodies (`SdkBody`): JSON objects whose keys match case-insensitively
//! (`VaultId` = `VaultID`: pyvenafi sends both), whose numbers may come as
//! numeric strings (`"376"`: the vendor's own examples) or with a zero
//! fraction (`376.0`: an integer to JSON Schema), and whose unknown keys are
//! ignored.

use serde_json::{Map, Value};

/// The largest integer every f64 below it represents exactly (2^53).
const MAX_EXACT_F64: f64 = 9_007_199_254_740_992.0;

/// A parsed body.
#[derive(Debug, Default)]
pub struct SdkBody(Map<String, Value>);

/// A field that is present but wrong, naming the field for the `Error` text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError(pub String);

impl SdkBody {
    /// Parses a JSON object. An empty body is an empty object (GET-style
    /// calls send `Content-Type: application/json` with nothing).
    pub fn parse(bytes: &[u8]) -> Result<SdkBody, String> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(SdkBody::default());
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(m)) => Ok(SdkBody(m)),
            Ok(_) => Err("The request body must be a JSON object.".into()),
            Err(_) => Err("The request body is not valid JSON.".into()),
        }
    }

    /// The value of the first key equal to one of `names`, ignoring case.
    fn get(&self, names: &[&str]) -> Option<&Value> {
        names.iter().find_map(|n| self.0.iter().find(|(k, _)| k.eq_ignore_ascii_case(n)).map(|(_, v)| v)).filter(|v| !v.is_null())
    }

    pub fn has(&self, names: &[&str]) -> bool {
        self.get(names).is_some()
    }

    /// A string field; numbers are not strings.
    pub fn string(&self, names: &[&str]) -> Result<Option<String>, FieldError> {
        match self.get(names) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(FieldError(format!("{} must be a string.", names[0]))),
        }
    }

    /// A field read as text: a string as it is, a number in its decimal form
    /// (clients send `Value1` and the like either way).
    pub fn text(&self, names: &[&str]) -> Result<Option<String>, FieldError> {
        match self.get(names) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(_) => Err(FieldError(format!("{} must be a string or a number.", names[0]))),
        }
    }

    /// A 64-bit integer field: a JSON integer or a string of one.
    pub fn int64(&self, names: &[&str]) -> Result<Option<i64>, FieldError> {
        let wrong = || FieldError(format!("{} must be a 64-bit integer.", names[0]));
        match self.get(names) {
            None => Ok(None),
            // `2959.0` is an integer to JSON Schema (and so to the OpenAPI
            // description): a number with no fraction, exactly representable.
            Some(Value::Number(n)) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() <= MAX_EXACT_F64).map(|f| f as i64))
                .map(Some)
                .ok_or_else(wrong),
            Some(Value::String(s)) => {
                let t = s.trim();
                if t.is_empty() || !t.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit()) {
                    return Err(wrong());
                }
                t.parse::<i64>().map(Some).map_err(|_| wrong())
            }
            Some(_) => Err(wrong()),
        }
    }

    /// An identity field (`ID` of the Identity calls): a string, or an
    /// object with any of an identity entry's fields, read in the order
    /// `PrefixedUniversal`, `PrefixedName`, `Universal`, `Name`.
    pub fn identity(&self, names: &[&str]) -> Result<Option<String>, FieldError> {
        match self.get(names) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Object(m)) => {
                let inner = SdkBody(m.clone());
                for field in ["PrefixedUniversal", "PrefixedName", "Universal", "Name"] {
                    let v = inner.string(&[field]).map_err(|_| FieldError(format!("{}.{field} must be a string.", names[0])))?;
                    if let Some(v) = v.filter(|v| !v.trim().is_empty()) {
                        return Ok(Some(v));
                    }
                }
                Ok(None)
            }
            Some(_) => Err(FieldError(format!("{} must be an identity: an object with PrefixedName or PrefixedUniversal.", names[0]))),
        }
    }

    /// A list of identities (`Members`, `Owners` of the group calls): each
    /// a string (read as a prefixed name or universal) or an object with any
    /// of an identity entry's fields, as given. Missing: an empty list.
    pub fn identity_list(&self, names: &[&str]) -> Result<Vec<crate::vedsdk::IdentityName>, FieldError> {
        use crate::vedsdk::IdentityName;
        let wrong = || FieldError(format!("{} must be a list of identities: objects with PrefixedName or PrefixedUniversal.", names[0]));
        let Some(v) = self.get(names) else { return Ok(Vec::new()) };
        let Value::Array(items) = v else { return Err(wrong()) };
        items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(IdentityName { prefixed_name: Some(s.clone()), ..Default::default() }),
                Value::Object(m) => {
                    let inner = SdkBody(m.clone());
                    let field = |f: &str| inner.string(&[f]).map_err(|_| wrong());
                    Ok(IdentityName {
                        prefixed_universal: field("PrefixedUniversal")?,
                        prefixed_name: field("PrefixedName")?,
                        universal: field("Universal")?,
                        name: field("Name")?,
                    })
                }
                _ => Err(wrong()),
            })
            .collect()
    }

    /// A list of strings (`Products`); missing: an empty list.
    pub fn string_list(&self, names: &[&str]) -> Result<Vec<String>, FieldError> {
        let wrong = || FieldError(format!("{} must be a list of strings.", names[0]));
        match self.get(names) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => items.iter().map(|i| i.as_str().map(str::to_owned).ok_or_else(wrong)).collect(),
            Some(_) => Err(wrong()),
        }
    }

    /// A 32-bit integer field (`VaultType`).
    pub fn int32(&self, names: &[&str]) -> Result<Option<i32>, FieldError> {
        match self.int64(names) {
            Ok(Some(v)) => i32::try_from(v).map(Some).map_err(|_| FieldError(format!("{} must be a 32-bit integer.", names[0]))),
            Ok(None) => Ok(None),
            Err(_) => Err(FieldError(format!("{} must be a 32-bit integer.", names[0]))),
        }
    }

    /// A yes/no field as the clients send it (`Recursive`, `Renewable`): `true`/`false`,
    /// `1`/`0`, or a string of either (`"true"`, `"1"`, any case).
    pub fn flag(&self, names: &[&str]) -> Result<Option<bool>, FieldError> {
        let wrong = || FieldError(format!("{} must be true or false (or 1 or 0).", names[0]));
        match self.get(names) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(0) => Ok(Some(false)),
                Some(1) => Ok(Some(true)),
                _ => Err(wrong()),
            },
            Some(Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" => Ok(Some(true)),
                "false" | "0" | "no" | "" => Ok(Some(false)),
                _ => Err(wrong()),
            },
            Some(_) => Err(wrong()),
        }
    }

    /// A list of strings (`Classes`); one string is a list of one.
    pub fn strings(&self, names: &[&str]) -> Result<Option<Vec<String>>, FieldError> {
        let wrong = || FieldError(format!("{} must be a list of strings.", names[0]));
        match self.get(names) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(vec![s.clone()])),
            Some(Value::Array(items)) => {
                items.iter().map(|v| v.as_str().map(str::to_owned).ok_or_else(wrong)).collect::<Result<_, _>>().map(Some)
            }
            Some(_) => Err(wrong()),
        }
    }
}

/// `oauth/*`: nested objects.
impl SdkBody {
    /// A nested object, read the same lenient way.
    pub fn object(&self, names: &[&str]) -> Result<Option<SdkBody>, FieldError> {
        match self.get(names) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(SdkBody(m.clone()))),
            Some(_) => Err(FieldError(format!("{} must be an object.", names[0]))),
        }
    }

    /// A list of objects.
    pub fn objects(&self, names: &[&str]) -> Result<Option<Vec<SdkBody>>, FieldError> {
        let wrong = || FieldError(format!("{} must be a list of objects.", names[0]));
        match self.get(names) {
            None => Ok(None),
            Some(Value::Array(a)) => {
                a.iter().map(|v| v.as_object().map(|m| SdkBody(m.clone())).ok_or_else(wrong)).collect::<Result<_, _>>().map(Some)
            }
            Some(_) => Err(wrong()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(s: &str) -> SdkBody {
        SdkBody::parse(s.as_bytes()).unwrap()
    }

    #[test]
    fn flags_come_in_three_spellings() {
        for (s, want) in
            [("true", true), ("1", true), ("\"true\"", true), ("\"1\"", true), ("false", false), ("0", false), ("\"False\"", false)]
        {
            assert_eq!(body(&format!("{{\"recursive\":{s}}}")).flag(&["Recursive"]), Ok(Some(want)), "{s}");
        }
        assert!(body("{\"Recursive\":2}").flag(&["Recursive"]).is_err());
        assert!(body("{\"Recursive\":\"maybe\"}").flag(&["Recursive"]).is_err());
        assert_eq!(body("{\"Recursive\":null}").flag(&["Recursive"]), Ok(None));
        assert_eq!(body("{\"Classes\":[\"User\",\"Group\"]}").strings(&["Classes"]), Ok(Some(vec!["User".into(), "Group".into()])));
        assert!(body("{\"Classes\":[1]}").strings(&["Classes"]).is_err());
    }

    #[test]
    fn keys_match_in_any_case_and_numbers_may_be_strings() {
        let b = body(r#"{"VaultId":"376","name":"Purpose","IntValue":-5,"Extra":true}"#);
        assert_eq!(b.int64(&["VaultID"]), Ok(Some(376)));
        assert_eq!(b.string(&["Name"]), Ok(Some("Purpose".into())));
        assert_eq!(b.int64(&["IntValue"]), Ok(Some(-5)));
        assert_eq!(b.string(&["StringValue"]), Ok(None));
        assert!(b.has(&["extra"]));
    }

    #[test]
    fn wrong_types_name_the_field() {
        let b = body(r#"{"VaultID":1.5,"IntValue":9223372036854775808,"Name":5,"T":"12x","U":"","V":4294967296}"#);
        assert_eq!(b.int64(&["VaultID"]), Err(FieldError("VaultID must be a 64-bit integer.".into())));
        assert!(b.int64(&["IntValue"]).is_err(), "overflow");
        assert!(b.string(&["Name"]).is_err());
        assert!(b.int64(&["T"]).is_err());
        assert!(b.int64(&["U"]).is_err());
        assert!(b.int32(&["V"]).is_err());
        assert_eq!(body(r#"{"N":null}"#).string(&["N"]), Ok(None));
        assert!(body(r#"{"V":1e300}"#).int64(&["V"]).is_err(), "integral but not exact");
        assert!(body(r#"{"V":-0.5}"#).int64(&["V"]).is_err());
    }

    #[test]
    fn integral_numbers_written_with_a_fraction_are_integers() {
        let b = body(r#"{"VaultType":2959.0,"VaultID":-299418892.0,"T":4294967296.0,"Z":-0.0,"E":1e3}"#);
        assert_eq!(b.int32(&["VaultType"]), Ok(Some(2959)));
        assert_eq!(b.int64(&["VaultID"]), Ok(Some(-299_418_892)));
        assert_eq!(b.int64(&["T"]), Ok(Some(4_294_967_296)));
        assert!(b.int32(&["T"]).is_err());
        assert_eq!(b.int64(&["Z"]), Ok(Some(0)));
        assert_eq!(b.int64(&["E"]), Ok(Some(1000)));
        assert_eq!(body(r#"{"V":9007199254740992.0}"#).int64(&["V"]), Ok(Some(9_007_199_254_740_992)));
        assert!(body(r#"{"V":18014398509481984.0}"#).int64(&["V"]).is_err());
    }

    #[test]
    fn bodies_must_be_objects() {
        assert!(SdkBody::parse(b"").is_ok());
        assert!(SdkBody::parse(b"[1]").is_err());
        assert!(SdkBody::parse(b"{").is_err());
        assert!(SdkBody::parse(b"\"x\"").is_err());
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    /// Keys the handlers read, and others.
    const KEYS: &[&str] = &["VaultID", "VaultType", "Name", "StringValue", "IntValue", "DateValue", "Owner", "ID", "Members", "Enabled"];

    /// A key as clients spell it: one of [`KEYS`] in any case, or any word.
    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            (proptest::sample::select(KEYS), any::<u16>()).prop_map(|(k, case)| {
                k.chars().enumerate().map(|(i, c)| if case >> (i % 16) & 1 == 1 { c.to_ascii_lowercase() } else { c }).collect()
            }),
            "[A-Za-z]{1,12}",
        ]
    }

    fn object(fields: &[(String, String)]) -> String {
        let fields: Vec<String> = fields.iter().map(|(k, v)| format!("{}:{v}", serde_json::to_string(k).unwrap())).collect();
        format!("{{{}}}", fields.join(","))
    }

    /// A JSON value as text, of the shapes clients send: integers (also as
    /// strings, with a zero fraction, past 64 bits), other numbers, strings,
    /// booleans, null, and lists and objects of them.
    fn json_value() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            any::<i64>().prop_map(|v| v.to_string()),
            any::<i64>().prop_map(|v| format!("\"{v}\"")),
            (-1_000_000_i64..1_000_000).prop_map(|v| format!("{v}.0")),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| format!("{f:e}")),
            "[ -~]{0,12}".prop_map(|s| serde_json::to_string(&s).unwrap()),
            any::<bool>().prop_map(|b| b.to_string()),
            Just("null".to_owned()),
            Just("\" 12 \"".to_owned()),
            Just("\"-\"".to_owned()),
            Just("99999999999999999999".to_owned()),
            Just("-9223372036854775809".to_owned()),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
                proptest::collection::vec((key(), inner), 0..4).prop_map(|fields| object(&fields)),
            ]
        })
    }

    proptest! {
        /// JSON-shaped bodies (an object of the fields clients send, now and
        /// then cut short): a whole one parses, and no field read as any type
        /// panics; an int32 is an int64 that fits.
        #[test]
        fn no_input_makes_the_parser_panic(
            fields in proptest::collection::vec((key(), json_value()), 0..8),
            key in key(),
            cut in proptest::option::weighted(0.2, any::<proptest::sample::Index>()),
        ) {
            let mut body = object(&fields).into_bytes();
            if let Some(cut) = cut {
                body.truncate(cut.index(body.len() + 1));
            }
            let parsed = SdkBody::parse(&body);
            if cut.is_none() {
                prop_assert!(parsed.is_ok(), "{}: {parsed:?}", String::from_utf8_lossy(&body));
            }
            if let Ok(b) = parsed {
                let names = [key.as_str()];
                let i64v = b.int64(&names);
                if let Ok(Some(v)) = b.int32(&names) {
                    prop_assert_eq!(i64v, Ok(Some(i64::from(v))));
                }
                let _ = (b.has(&names), b.string(&names), b.text(&names), b.flag(&names), b.strings(&names));
                let _ = (b.identity(&names), b.identity_list(&names), b.string_list(&names));
                if let Ok(Some(inner)) = b.object(&names) {
                    let _ = inner.int64(&names);
                }
                let _ = b.objects(&names);
            }
        }

        #[test]
        fn any_i64_round_trips_as_number_or_string(v in any::<i64>()) {
            let n = SdkBody::parse(format!("{{\"VaultID\":{v}}}").as_bytes()).unwrap();
            prop_assert_eq!(n.int64(&["vaultid"]), Ok(Some(v)));
            let s = SdkBody::parse(format!("{{\"VaultID\":\"{v}\"}}").as_bytes()).unwrap();
            prop_assert_eq!(s.int64(&["VAULTID"]), Ok(Some(v)));
        }
    }
}
