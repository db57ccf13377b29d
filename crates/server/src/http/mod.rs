//! The axum edge: routes, middleware, and the path normalisation that makes
//! routing case-insensitive.

pub mod client_addr;
mod extract;
mod page;
pub(crate) mod respond;
mod sdk_body;
mod secretstore;
mod vedauth;
mod vedsdk;

pub use vedsdk::API_VERSION;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, Uri, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use std::time::{Duration, Instant};
use tower::Layer as _;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tracing::Instrument as _;

use crate::state::AppState;
use extract::RequestId;

/// Limits applied to every request.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_body_bytes: usize,
    pub request_timeout: Duration,
}

/// The whole HTTP application, ready to serve.
pub fn app(state: AppState, limits: Limits) -> Router {
    let router = Router::new()
        .route("/healthz", get(health))
        .route("/vedauth/authorize/device", post(vedauth::device))
        .route("/vedauth/authorize/token", post(vedauth::token))
        .route("/vedauth/authorize/oauth", post(vedauth::oauth))
        .route("/vedauth/authorize/verify", get(vedauth::verify))
        .route("/vedauth/revoke/token", get(vedauth::revoke))
        .route("/vedauth/device", get(page::show).post(page::sign_in))
        .route("/vedauth/device/decision", post(page::decide))
        .route("/vedauth/device/style.css", get(page::style))
        .route("/vedsdk", get(vedsdk::ping))
        .route("/vedsdk/systemstatus/version", get(vedsdk::version))
        .route("/vedsdk/secretstore/add", post(secretstore::add))
        .route("/vedsdk/secretstore/retrieve", post(secretstore::retrieve))
        .route("/vedsdk/secretstore/associate", post(secretstore::associate))
        .route("/vedsdk/secretstore/dissociate", post(secretstore::dissociate))
        .route("/vedsdk/secretstore/lookupbyassociation", post(secretstore::lookup_by_association))
        .route("/vedsdk/secretstore/lookupassociationbyvaultid", post(secretstore::lookup_association))
        .route("/vedsdk/secretstore/lookupallassociationsbyvaultid", post(secretstore::all_associations))
        .route("/vedsdk/secretstore/lookupbyowner", post(secretstore::lookup_by_owner))
        .route("/vedsdk/secretstore/lookupbyvaulttype", post(secretstore::lookup_by_vault_type))
        .route("/vedsdk/secretstore/orphanlookup", post(secretstore::orphan_lookup))
        .route("/vedsdk/secretstore/owneradd", post(secretstore::owner_add))
        .route("/vedsdk/secretstore/ownerdelete", post(secretstore::owner_delete))
        .route("/vedsdk/secretstore/ownerlookup", post(secretstore::owner_lookup))
        .route("/vedsdk/secretstore/mutate", post(secretstore::mutate))
        .route("/vedsdk/secretstore/lookup", get(secretstore::lookup))
        .route("/vedsdk/secretstore/encryptionkeysinuse", get(secretstore::encryption_keys_in_use))
        .route("/vedsdk/log", get(secretstore::log))
        .fallback(|| async { respond::not_found() })
        .method_not_allowed_fallback(|| async { respond::method_not_allowed() })
        .layer(DefaultBodyLimit::max(limits.max_body_bytes))
        .layer(TimeoutLayer::with_status_code(axum::http::StatusCode::REQUEST_TIMEOUT, limits.request_timeout))
        .layer(SetResponseHeaderLayer::if_not_present(header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .layer(SetResponseHeaderLayer::overriding(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")))
        .layer(SetResponseHeaderLayer::overriding(
            header::SERVER,
            HeaderValue::from_static(concat!("strongroom/", env!("CARGO_PKG_VERSION"))),
        ))
        .layer(CatchPanicLayer::custom(|_| respond::panicked()))
        .layer(middleware::from_fn_with_state(state.clone(), request_context))
        .with_state(state);
    // Routing sees the normalised path: an outer router with no routes hands
    // every request, rewritten, to the real one.
    let normalize: fn(Request) -> Request = normalize_path;
    Router::new().fallback_service(tower::util::MapRequestLayer::new(normalize).layer(router))
}

/// Lower-cases the path (the product's paths are case-insensitive), folds
/// repeated slashes (a vendor doc shows `//vedauth/...`) and drops a trailing
/// slash. The query is kept as sent.
fn normalize_path(mut req: Request) -> Request {
    let uri = req.uri();
    let path = uri.path();
    let mut norm = String::with_capacity(path.len());
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        norm.push('/');
        norm.push_str(&seg.to_ascii_lowercase());
    }
    if norm.is_empty() {
        norm.push('/');
    }
    if norm != path {
        let pq = match uri.query() {
            Some(q) => format!("{norm}?{q}"),
            None => norm,
        };
        let mut parts = uri.clone().into_parts();
        if let Ok(pq) = pq.parse() {
            parts.path_and_query = Some(pq);
            if let Ok(u) = Uri::from_parts(parts) {
                *req.uri_mut() = u;
            }
        }
    }
    req
}

/// Gives every request an id, a tracing span, and one access-log line.
/// The line holds the method, the path without its query (the approval link
/// carries the user code), the status and the time taken; never headers or
/// bodies.
async fn request_context(State(app): State<AppState>, mut req: Request, next: Next) -> Response {
    let id: String = strongroom_core::random::bytes::<8>(&*app.rng).iter().map(|b| format!("{b:02x}")).collect();
    req.extensions_mut().insert(RequestId(id.clone()));
    let span = tracing::info_span!("request", request_id = %id, method = %req.method(), path = %req.uri().path());
    let started = Instant::now();
    let mut res = next.run(req).instrument(span.clone()).await;
    span.in_scope(|| {
        tracing::info!(status = res.status().as_u16(), elapsed_ms = started.elapsed().as_millis() as u64, "request");
    });
    if let Ok(v) = HeaderValue::from_str(&id) {
        res.headers_mut().insert("x-request-id", v);
    }
    res
}

async fn health(State(app): State<AppState>) -> Response {
    respond::healthy(app.store.ping().await.is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(s: &str) -> String {
        let req = Request::builder().uri(s).body(axum::body::Body::empty()).unwrap();
        normalize_path(req).uri().to_string()
    }

    #[test]
    fn paths_are_case_and_slash_insensitive() {
        assert_eq!(norm("/vedauth/Authorize/Token"), "/vedauth/authorize/token");
        assert_eq!(norm("//vedauth/authorize/token"), "/vedauth/authorize/token");
        assert_eq!(norm("/vedsdk/"), "/vedsdk");
        assert_eq!(norm("/vedauth/Device?user_code=BCDF-GHJK"), "/vedauth/device?user_code=BCDF-GHJK");
        assert_eq!(norm("/"), "/");
    }
}
