//! Extractors: request bodies in JSON or form encoding with our error
//! shape, the caller's origin, and the bearer token.

use axum::body::Bytes;
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::{HeaderMap, header, request::Parts};
use serde::de::DeserializeOwned;
use std::net::SocketAddr;

use super::client_addr::client_addr;
use crate::respond::AuthRefusal;
use crate::state::HttpState;
use strongroom_app::service::{AuthError, Origin};
use strongroom_proto::read;

/// The request's id as text (set by `tower_http`'s `SetRequestIdLayer`).
pub(crate) fn request_id_of(ext: &axum::http::Extensions) -> String {
    ext.get::<tower_http::request_id::RequestId>().and_then(|r| r.header_value().to_str().ok()).unwrap_or_default().to_owned()
}

/// A `/vedauth` body: JSON or `application/x-www-form-urlencoded`
/// ([`read::form_or_json`]). Any failure is an [`AuthError`], so clients
/// always get `{error, error_description}`.
#[derive(Debug)]
pub(crate) struct FormOrJson<T>(pub(crate) T);

/// The `Content-Type` of a request, if it is text.
pub(crate) fn content_type(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::CONTENT_TYPE)?.to_str().ok()
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
        let kind = read::body_kind(content_type(req.headers()));
        let bytes = read_body(req, state).await?;
        Ok(FormOrJson(read::form_or_json(kind, &bytes).map_err(AuthError::InvalidRequest)?))
    }
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

/// The client id of a `Basic` `Authorization` header ([`read::basic_client_id`]).
pub(crate) fn basic_client_id(headers: &HeaderMap) -> Option<String> {
    read::basic_client_id(headers.get(header::AUTHORIZATION)?.to_str().ok()?)
}

/// The bearer token of a request: `Authorization: Bearer <t>`, or the legacy
/// `X-Venafi-API-Key: Bearer <t>` that pyvenafi falls back to
/// ([`read::bearer`]). Never a query parameter (RFC 6750 §5.3).
pub(crate) fn bearer_token(headers: &HeaderMap) -> Option<String> {
    [header::AUTHORIZATION.as_str(), "x-venafi-api-key"]
        .iter()
        .find_map(|name| read::bearer(headers.get(*name)?.to_str().ok()?).map(str::to_owned))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn the_authorization_header_comes_first() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer_token(&h), None);
        h.insert("x-venafi-api-key", HeaderValue::from_static("Bearer xyz"));
        assert_eq!(bearer_token(&h).as_deref(), Some("xyz"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer abc=="));
        assert_eq!(bearer_token(&h).as_deref(), Some("abc=="));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic YXBwOnNlY3JldA=="));
        assert_eq!(bearer_token(&h).as_deref(), Some("xyz"), "a Basic header is no bearer");
        assert_eq!(basic_client_id(&h).as_deref(), Some("app"));
    }
}
