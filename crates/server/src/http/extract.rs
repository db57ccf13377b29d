//! Extractors: request bodies in JSON or form encoding with our error
//! shape, the caller's origin, and the bearer token.

use axum::body::Bytes;
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::{HeaderMap, header, request::Parts};
use serde::de::DeserializeOwned;
use std::net::SocketAddr;

use super::client_addr::client_addr;
use crate::http::respond::AuthRefusal;
use crate::state::HttpState;
use strongroom_app::service::{AuthError, Origin};

/// The request's id as text (set by `tower_http`'s `SetRequestIdLayer`).
pub(crate) fn request_id_of(ext: &axum::http::Extensions) -> String {
    ext.get::<tower_http::request_id::RequestId>().and_then(|r| r.header_value().to_str().ok()).unwrap_or_default().to_owned()
}

/// A `/vedauth` body: JSON or `application/x-www-form-urlencoded` (both
/// allowed for the device flow; oauth2-rs sends only form). Any failure is an
/// [`AuthError`], so clients always get `{error, error_description}`.
#[derive(Debug)]
pub(crate) struct FormOrJson<T>(pub(crate) T);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyKind {
    Json,
    Form,
}

pub(crate) fn body_kind(headers: &HeaderMap) -> Option<BodyKind> {
    let ct = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let mime = ct.split(';').next().unwrap_or("").trim();
    if mime.eq_ignore_ascii_case("application/json") {
        Some(BodyKind::Json)
    } else if mime.eq_ignore_ascii_case("application/x-www-form-urlencoded") {
        Some(BodyKind::Form)
    } else {
        None
    }
}

/// Reads the whole body within the configured limit.
pub(crate) async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, AuthError> {
    Bytes::from_request(req, state).await.map_err(|e| {
        if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            AuthError::BodyTooLarge
        } else {
            AuthError::InvalidRequest("The request body could not be read.")
        }
    })
}

impl<S, T> FromRequest<S> for FormOrJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = AuthRefusal;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let kind = body_kind(req.headers());
        let bytes = read_body(req, state).await?;
        Ok(FormOrJson(parse_form_or_json(kind, &bytes)?))
    }
}

/// The body of a [`FormOrJson`], once read: JSON or form by `kind`.
pub(crate) fn parse_form_or_json<T: DeserializeOwned>(kind: Option<BodyKind>, bytes: &[u8]) -> Result<T, AuthError> {
    let parsed = match kind {
        Some(BodyKind::Json) => serde_json::from_slice(bytes).map_err(|_| "The JSON body is malformed or has a field of the wrong type."),
        Some(BodyKind::Form) => serde_urlencoded::from_bytes(bytes).map_err(|_| "The form body is malformed or repeats a field."),
        None => Err("Content-Type must be application/json or application/x-www-form-urlencoded."),
    };
    parsed.map_err(AuthError::InvalidRequest)
}

impl FromRequestParts<HttpState> for Origin {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, app: &HttpState) -> Result<Self, Self::Rejection> {
        let forwarded = parts.headers.get("x-forwarded-for").and_then(|v| v.to_str().ok());
        let addr = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(a)| client_addr(a.ip(), forwarded, &app.trusted_proxies).to_string())
            .unwrap_or_else(|| "unknown".to_owned());
        let request_id = request_id_of(&parts.extensions);
        Ok(Origin { addr, request_id })
    }
}

/// The bearer token of a request: `Authorization: Bearer <t>`, or the legacy
/// `X-Venafi-API-Key: Bearer <t>` that pyvenafi falls back to. Never a query
/// parameter (RFC 6750 §5.3).
/// The client id of a `Basic` `Authorization` header (RFC 6749 §2.3.1:
/// `client_id:client_secret`, each form-encoded, in base64), as standard
/// clients send it.
pub(crate) fn basic_client_id(headers: &HeaderMap) -> Option<String> {
    use base64::Engine as _;
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, encoded) = v.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let user = text.split(':').next()?;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(&format!("id={user}")).ok()?;
    pairs.into_iter().next().map(|(_, id)| id).filter(|id| !id.is_empty())
}

pub(crate) fn bearer_token(headers: &HeaderMap) -> Option<String> {
    [header::AUTHORIZATION.as_str(), "x-venafi-api-key"].iter().find_map(|name| {
        let v = headers.get(*name)?.to_str().ok()?.trim();
        let (scheme, token) = v.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim().to_owned()).filter(|t| !t.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn a_basic_header_names_its_client() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
            basic_client_id(&h)
        };
        // "my%20app:" and "app:secret"
        assert_eq!(with("Basic bXklMjBhcHA6").as_deref(), Some("my app"));
        assert_eq!(with("basic YXBwOnNlY3JldA==").as_deref(), Some("app"));
        assert_eq!(with("Bearer YXBwOnNlY3JldA=="), None);
        assert_eq!(with("Basic !!!"), None);
        assert_eq!(with("Basic Og=="), None, "an empty client id is none");
    }

    #[test]
    fn bearer_forms() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer_token(&h), None);
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer abc=="));
        assert_eq!(bearer_token(&h).as_deref(), Some("abc=="));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic eHh4"));
        assert_eq!(bearer_token(&h), None);
        h.insert("x-venafi-api-key", HeaderValue::from_static("Bearer xyz"));
        assert_eq!(bearer_token(&h).as_deref(), Some("xyz"));
    }

    #[test]
    fn content_types() {
        let mut h = HeaderMap::new();
        assert_eq!(body_kind(&h), None);
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("Application/JSON; charset=utf-8"));
        assert_eq!(body_kind(&h), Some(BodyKind::Json));
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/x-www-form-urlencoded"));
        assert_eq!(body_kind(&h), Some(BodyKind::Form));
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        assert_eq!(body_kind(&h), None);
    }
}
