//! Readers of what clients send, below any HTTP framework: the `/vedsdk`
//! body ([`SdkBody`]: keys in any case, integers as numeric strings), the
//! `/vedauth` body in JSON or form encoding ([`form_or_json`]), and the
//! credentials of an `Authorization` header ([`bearer`], [`basic_client_id`]).
//! They take bytes and header values, so the fuzz targets drive exactly
//! what the server runs, with nothing of the server linked in.

mod sdk;

pub use sdk::{FieldError, SdkBody};

use serde::de::DeserializeOwned;

/// The encodings a `/vedauth` body may come in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    Json,
    Form,
}

/// The body's encoding by its `Content-Type` (parameters such as `charset`
/// ignored); `None` for a type that is neither or a missing header.
pub fn body_kind(content_type: Option<&str>) -> Option<BodyKind> {
    let mime = content_type?.split(';').next().unwrap_or("").trim();
    if mime.eq_ignore_ascii_case("application/json") {
        Some(BodyKind::Json)
    } else if mime.eq_ignore_ascii_case("application/x-www-form-urlencoded") {
        Some(BodyKind::Form)
    } else {
        None
    }
}

/// A `/vedauth` body as `T`: JSON or form by `kind` (both are allowed for
/// the device flow; oauth2-rs sends only form). The error is the sentence
/// the client is told.
pub fn form_or_json<T: DeserializeOwned>(kind: Option<BodyKind>, bytes: &[u8]) -> Result<T, &'static str> {
    match kind {
        Some(BodyKind::Json) => serde_json::from_slice(bytes).map_err(|_| "The JSON body is malformed or has a field of the wrong type."),
        Some(BodyKind::Form) => serde_urlencoded::from_bytes(bytes).map_err(|_| "The form body is malformed or repeats a field."),
        None => Err("Content-Type must be application/json or application/x-www-form-urlencoded."),
    }
}

/// The token of a `Bearer` credential (`Authorization`, or the legacy
/// `X-Venafi-API-Key` that pyvenafi falls back to): trimmed, never empty.
pub fn bearer(header_value: &str) -> Option<&str> {
    let (scheme, token) = header_value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

/// The client id of a `Basic` `Authorization` header (RFC 6749 §2.3.1:
/// `client_id:client_secret`, each form-encoded, in base64), as standard
/// clients send it.
pub fn basic_client_id(header_value: &str) -> Option<String> {
    use base64::Engine as _;
    let (scheme, encoded) = header_value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let user = text.split(':').next()?;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(&format!("id={user}")).ok()?;
    pairs.into_iter().next().map(|(_, id)| id).filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_basic_header_names_its_client() {
        // "my%20app:" and "app:secret"
        assert_eq!(basic_client_id("Basic bXklMjBhcHA6").as_deref(), Some("my app"));
        assert_eq!(basic_client_id("basic YXBwOnNlY3JldA==").as_deref(), Some("app"));
        assert_eq!(basic_client_id("Bearer YXBwOnNlY3JldA=="), None);
        assert_eq!(basic_client_id("Basic !!!"), None);
        assert_eq!(basic_client_id("Basic Og=="), None, "an empty client id is none");
    }

    #[test]
    fn bearer_forms() {
        assert_eq!(bearer("bearer abc=="), Some("abc=="));
        assert_eq!(bearer(" Bearer  xyz "), Some("xyz"));
        assert_eq!(bearer("Basic eHh4"), None);
        assert_eq!(bearer("Bearer "), None);
        assert_eq!(bearer("Bearer"), None);
    }

    #[test]
    fn content_types() {
        assert_eq!(body_kind(None), None);
        assert_eq!(body_kind(Some("Application/JSON; charset=utf-8")), Some(BodyKind::Json));
        assert_eq!(body_kind(Some("application/x-www-form-urlencoded")), Some(BodyKind::Form));
        assert_eq!(body_kind(Some("text/plain")), None);
    }

    #[test]
    fn form_or_json_reads_both_and_names_the_problem() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct B {
            a: String,
        }
        assert_eq!(form_or_json::<B>(Some(BodyKind::Json), br#"{"a":"x"}"#), Ok(B { a: "x".into() }));
        assert_eq!(form_or_json::<B>(Some(BodyKind::Form), b"a=x"), Ok(B { a: "x".into() }));
        assert!(form_or_json::<B>(Some(BodyKind::Form), b"a=x&a=y").is_err());
        assert!(form_or_json::<B>(None, b"a=x").is_err());
    }
}
