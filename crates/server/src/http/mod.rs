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
use axum::routing::{MethodRouter, get, post};
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

/// Every route: its path (as normalised) and its handlers. [`app`] serves
/// exactly these; [`route_paths`] lists them for tests.
fn routes() -> Vec<(&'static str, MethodRouter<AppState>)> {
    vec![
        ("/healthz", get(health)),
        ("/vedauth/authorize/device", post(vedauth::device)),
        ("/vedauth/authorize/token", post(vedauth::token)),
        ("/vedauth/authorize/oauth", post(vedauth::oauth)),
        ("/vedauth/authorize/verify", get(vedauth::verify)),
        ("/vedauth/revoke/token", get(vedauth::revoke)),
        ("/vedauth/device", get(page::show).post(page::sign_in)),
        ("/vedauth/device/decision", post(page::decide)),
        ("/vedauth/device/style.css", get(page::style)),
        ("/vedsdk", get(vedsdk::ping)),
        ("/vedsdk/systemstatus/version", get(vedsdk::version)),
        ("/vedsdk/secretstore/add", post(secretstore::add)),
        ("/vedsdk/secretstore/retrieve", post(secretstore::retrieve)),
        ("/vedsdk/secretstore/associate", post(secretstore::associate)),
        ("/vedsdk/secretstore/dissociate", post(secretstore::dissociate)),
        ("/vedsdk/secretstore/lookupbyassociation", post(secretstore::lookup_by_association)),
        ("/vedsdk/secretstore/lookupassociationbyvaultid", post(secretstore::lookup_association)),
        ("/vedsdk/secretstore/lookupallassociationsbyvaultid", post(secretstore::all_associations)),
        ("/vedsdk/secretstore/lookupbyowner", post(secretstore::lookup_by_owner)),
        ("/vedsdk/secretstore/lookupbyvaulttype", post(secretstore::lookup_by_vault_type)),
        ("/vedsdk/secretstore/orphanlookup", post(secretstore::orphan_lookup)),
        ("/vedsdk/secretstore/owneradd", post(secretstore::owner_add)),
        ("/vedsdk/secretstore/ownerdelete", post(secretstore::owner_delete)),
        ("/vedsdk/secretstore/ownerlookup", post(secretstore::owner_lookup)),
        ("/vedsdk/secretstore/mutate", post(secretstore::mutate)),
        ("/vedsdk/secretstore/lookup", get(secretstore::lookup)),
        ("/vedsdk/secretstore/encryptionkeysinuse", get(secretstore::encryption_keys_in_use)),
        ("/vedsdk/log", get(secretstore::log)),
    ]
}

/// The path of every route [`app`] serves, so tests (the fuzz test) can
/// cover each one without keeping a second list.
pub fn route_paths() -> Vec<&'static str> {
    routes().into_iter().map(|(p, _)| p).collect()
}

/// The whole HTTP application, ready to serve.
pub fn app(state: AppState, limits: Limits) -> Router {
    let router = routes()
        .into_iter()
        .fold(Router::new(), |r, (path, handlers)| r.route(path, handlers))
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

    #[test]
    fn route_paths_are_normalised_and_distinct() {
        let paths = route_paths();
        for p in &paths {
            assert_eq!(&norm(p), p, "{p} could never be reached: routing sees normalised paths");
        }
        let distinct: std::collections::BTreeSet<_> = paths.iter().collect();
        assert_eq!(distinct.len(), paths.len());
    }
}
