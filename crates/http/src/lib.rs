//! Strongroom's HTTP edge, over the application (`strongroom_app`): the
//! product's API (`/vedauth`, `/vedsdk`), the approval page, the admin
//! console, routes, middleware and the path normalisation that makes
//! routing case-insensitive, the OpenAPI document, and the Prometheus
//! metrics. Only [`respond`] chooses HTTP statuses.
//!
//! May not depend on the runtime (`strongroom-server`: configuration,
//! listeners, TLS, start-up), which builds the [`state::HttpState`] and the
//! [`Limits`] this crate serves with.
//!
//! - The product's calls, a module per family: `vedauth` (`/vedauth`:
//!   tokens, device authorization, verify, revoke; the server's metadata),
//!   `vedsdk` (`/vedsdk`'s ping and version), `secretstore` (the vault, whose
//!   bodies and credentials headers `strongroom_proto::read` reads; a test
//!   in it reads every `proto::vedsdk` request type back through it),
//!   `credentials` (credential objects), `config` (the `\VED` tree's
//!   `Config/*`), `permissions` (`Permissions/Object/…`), `identity`
//!   (`Identity/*` and `POST Log`), `groups` (the group and password calls),
//!   `teams` (VenafiPS's `Teams/*`), `oauth` (API integrations, their rules
//!   and grants), `log` (`GET Log` and the custom fields of a class),
//!   `certificates` (`Certificates/*`), `cert_policy` (folder certificate
//!   policies through `Config/*Policy*`) and `workflow` (the tickets of
//!   certificate requests waiting for approval).
//! - `extract`: one extractor per surface, each refusing in its surface's
//!   shape; [`client_addr`]: the client's address behind trusted proxies.
//! - `page`: the approval page; `console`: the admin console at `/admin`;
//!   `landing`: `GET /`; `health`: liveness, readiness and `GET /metrics`.
//! - `respond`: the only place that picks statuses (a store failure of a
//!   passing kind is 503 `temporarily_unavailable` with `Retry-After`),
//!   wrapping the application's errors; `responses`: the responses
//!   operations share.
//! - [`openapi`]: the OpenAPI 3.1 document served at `/openapi.json`,
//!   gathered from the handlers' `#[utoipa::path]` attributes; [`metrics`]:
//!   the Prometheus registry (requests by route template, the application's
//!   outcomes as its `Observer`, the store's batches and failures as its
//!   `StoreObserver`, pool and memory gauges read at scrape); [`state`]:
//!   `HttpState` (the `App` and the edge's settings).

#![forbid(unsafe_code)]

mod cert_policy;
mod certificates;
pub mod client_addr;
mod config;
mod console;
mod credentials;
mod extract;
mod groups;
mod health;
mod identity;
mod landing;
mod log;
pub mod metrics;
mod oauth;
pub mod openapi;
mod page;
mod permissions;
mod respond;
mod responses;
mod secretstore;
pub mod state;
mod teams;
mod vedauth;
mod vedsdk;
mod workflow;

pub use vedsdk::API_VERSION;

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, Uri, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{MethodRouter, get};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};
use tower::Layer as _;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use strongroom_core::random::Random;

use crate::state::HttpState;

/// Limits applied to every request.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_body_bytes: usize,
    pub request_timeout: Duration,
    /// Serve `GET /metrics` on this listener (false when `[metrics] listen`
    /// names a listener of its own).
    pub metrics_here: bool,
}

/// Every operation, once: the method, the handler and, where its attribute
/// is on a stand-in (`=> doc`), that stand-in. Its path is written once too,
/// in the product's spelling, in the handler's `#[utoipa::path]`: the router
/// serves it in lower case (routing sees [`normalize_path`]'s), so both the
/// routes and the OpenAPI document's operations are made from this one list,
/// and a handler is never served undocumented nor documented unserved. A
/// path served by several handlers has a line for each; a handler serving
/// several methods names them `get | post`.
macro_rules! api {
    ($($($method:ident)|+ $($handler:ident)::+ $(=> $($doc:ident)::+)?;)*) => {
        /// Every line of the list, in its order.
        fn lines() -> Vec<Line> {
            vec![$(api_line!([$($method)|+] $($handler)::+ $(=> $($doc)::+)?),)*]
        }
    };
}

/// One line of [`api!`]: its handler's (or stand-in's) one-operation
/// document, from which the path comes, and the line's method router.
macro_rules! api_line {
    ([$($method:ident)|+] $($handler:ident)::+ => $($doc:ident)::+) => {{
        #[derive(utoipa::OpenApi)]
        #[openapi(paths($($doc)::+))]
        struct Documented;
        let handler = $($handler)::+;
        Line {
            document: <Documented as utoipa::OpenApi>::openapi,
            #[cfg(test)]
            methods: &[$(stringify!($method)),+],
            handlers: MethodRouter::new()$(.$method(handler))+,
        }
    }};
    ([$($method:ident)|+] $($handler:ident)::+) => {
        api_line!([$($method)|+] $($handler)::+ => $($handler)::+)
    };
}

/// A line of the [`api!`] list.
struct Line {
    /// The document of the line's operation alone (its attribute's path, the
    /// operation under each method it documents, the schemas it names).
    document: fn() -> utoipa::openapi::OpenApi,
    /// The methods the line routes (a test holds them to the documented ones).
    #[cfg(test)]
    methods: &'static [&'static str],
    handlers: MethodRouter<HttpState>,
}

/// The path routing matches for a one-operation document: its path in lower
/// case (see [`normalize_path`]).
fn routing_path(document: fn() -> utoipa::openapi::OpenApi) -> String {
    document().paths.paths.into_keys().next().map(|p| p.to_ascii_lowercase()).unwrap_or_default()
}

/// The path of every line, in the list's order (its documents are made once).
static PATHS: LazyLock<Vec<String>> = LazyLock::new(|| lines().into_iter().map(|l| routing_path(l.document)).collect());

/// Every route: its path (as normalised) and a method router.
/// [`app`] serves exactly these; [`route_paths`] lists them for tests.
fn routes() -> Vec<(&'static str, MethodRouter<HttpState>)> {
    PATHS.iter().map(String::as_str).zip(lines().into_iter().map(|l| l.handlers)).collect()
}

/// The path routing matches for a handler, from its `#[utoipa::path]`.
macro_rules! path_of {
    ($($handler:ident)::+) => {{
        #[derive(utoipa::OpenApi)]
        #[openapi(paths($($handler)::+))]
        struct Documented;
        routing_path(<Documented as utoipa::OpenApi>::openapi)
    }};
}

/// The operations of [`routes`], from their handlers' `#[utoipa::path]`
/// attributes ([`openapi`] adds the rest).
pub(crate) struct Operations;

impl utoipa::OpenApi for Operations {
    fn openapi() -> utoipa::openapi::OpenApi {
        lines().into_iter().fold(utoipa::openapi::OpenApi::default(), |mut doc, l| {
            doc.merge((l.document)());
            doc
        })
    }
}

api! {
    // The server: the landing page, the authorization server metadata, health, metrics, this description.
    get landing::page;
    get vedauth::metadata;
    get health::healthz;
    get health::live;
    get health::ready;
    get health::metrics;
    get openapi::openapi_json;
    // Tokens (`/vedauth`).
    post vedauth::device;
    post vedauth::token;
    post vedauth::oauth;
    get vedauth::verify;
    post vedauth::jwt;
    post vedauth::certificate;
    get vedauth::is_auth_server;
    get vedauth::revoke;
    post vedauth::revoke_rfc7009;
    // The approval page.
    get page::show;
    post page::sign_in;
    post page::decide;
    get page::style;
    get page::approved;
    post page::approved_sign_in;
    post page::approved_revoke;
    get page::oidc_start;
    get page::oidc_callback;
    // The WebSDK (`/vedsdk`): the API level, identities, the vault, the log, groups and teams, the `\VED` tree and its permissions.
    get vedsdk::ping;
    get vedsdk::version;
    get identity::self_;
    post identity::validate;
    post identity::browse;
    post identity::memberships;
    post identity::members;
    post secretstore::add;
    post secretstore::retrieve;
    post secretstore::associate;
    post secretstore::dissociate;
    post secretstore::lookup_by_association;
    post secretstore::lookup_association;
    post secretstore::all_associations;
    post secretstore::lookup_by_owner;
    post secretstore::lookup_by_vault_type;
    post secretstore::orphan_lookup;
    post secretstore::owner_add;
    post secretstore::owner_delete;
    post secretstore::owner_lookup;
    post secretstore::mutate;
    get secretstore::lookup;
    get secretstore::encryption_keys_in_use;
    get secretstore::available_namespaces;
    get secretstore::rotate_key;
    get secretstore::default_key;
    post credentials::create;
    post credentials::retrieve;
    post credentials::update;
    post credentials::delete;
    post credentials::rename;
    post credentials::enumerate;
    post certificates::check_policy;
    post certificates::request;
    post certificates::retrieve;
    post certificates::retrieve_vault;
    post certificates::renew;
    post certificates::revoke;
    post certificates::reset;
    post certificates::retry;
    post workflow::enumerate;
    post workflow::status;
    post workflow::update_status;
    post certificates::unsupported;
    post certificates::associate;
    post certificates::dissociate;
    post certificates::push;
    get certificates::search;
    get certificates::get_one;
    put certificates::put_one;
    delete certificates::delete_one;
    get certificates::previous_versions;
    post certificates::metadata_get;
    post certificates::metadata_get_items;
    post certificates::metadata_set;
    get certificates::metadata_items;
    get certificates::crl;
    get log::log;
    post identity::write_log;
    get log::log_schema;
    get log::log_of_object;
    post log::items_for_class;
    post groups::add_group;
    put groups::add_members;
    put groups::remove_members;
    put groups::rename_group;
    delete groups::delete_group;
    post groups::set_password;
    post groups::read_attribute;
    post teams::create;
    put teams::add_members;
    put teams::remove_members;
    get teams::get_team;
    delete teams::delete_team;
    post config::create;
    post config::delete;
    post config::is_valid;
    post config::dn_to_guid;
    post config::guid_to_dn;
    post config::enumerate;
    post config::find_objects_of_class;
    post config::rename_object;
    post config::write;
    post cert_policy::write_policy;
    post cert_policy::read_policy;
    post cert_policy::clear_policy_attribute;
    get permissions::principals;
    get | post | put | delete permissions::local_entry;
    get permissions::local_effective;
    get | post | put | delete permissions::directory_entry;
    get permissions::directory_effective;
    // The admin console.
    get console::home;
    post console::sign_in;
    post console::sign_out;
    get console::style;
    get console::integrations::page;
    post console::integrations::create;
    post console::integrations::update;
    get console::integrations::confirm_delete;
    post console::integrations::delete;
    get console::users::page;
    post console::users::create_user;
    get console::users::confirm_disable;
    post console::users::disable_user;
    get console::users::password_form;
    post console::users::set_password;
    post console::users::unlock;
    get console::users::confirm_master;
    post console::users::master;
    get console::users::confirm_delete;
    post console::users::delete_user;
    post console::users::create_group;
    get console::users::confirm_delete_group;
    post console::users::delete_group;
    get console::users::confirm_remove_member;
    post console::users::members;
    get console::folders::page;
    post console::folders::create;
    post console::folders::rename;
    get console::folders::confirm_delete;
    post console::folders::delete;
    get console::folders::confirm_revoke;
    post console::folders::set_rights;
    get console::vault::page;
    get console::grants::page;
    get console::grants::confirm_revoke;
    post console::grants::revoke;
    get console::keys::page;
    get console::keys::confirm_rotate;
    post console::keys::rotate;
    get console::machines::page;
    post console::machines::save_issuer;
    get console::machines::confirm_remove_issuer;
    post console::machines::remove_issuer;
    post console::machines::save_jwt_mapping;
    post console::machines::save_cert_mapping;
    get console::machines::confirm_remove_mapping;
    post console::machines::remove_mapping;
    get console::certs::cas;
    post console::certs::create;
    get console::certs::ca;
    get console::certs::pem;
    get console::certs::policies;
    post console::certs::set_policy;
    get console::approvals::pending;
    get console::approvals::confirm_approve;
    post console::approvals::approve;
    get console::approvals::confirm_reject;
    post console::approvals::reject;
    get console::log::page;
    get console::server::page;
    // API integrations (`/vedsdk/oauth/*`). `oauth_path!` documents each by a stand-in: their attributes differ only in path, scope and text.
    post oauth::create_application => oauth::create_application_doc;
    post oauth::get_application => oauth::get_application_doc;
    post oauth::get_applications => oauth::get_applications_doc;
    post oauth::enumerate_applications => oauth::enumerate_applications_doc;
    post oauth::update_application => oauth::update_application_doc;
    post oauth::delete_application => oauth::delete_application_doc;
    post oauth::create_rule => oauth::create_rule_doc;
    post oauth::get_rules => oauth::get_rules_doc;
    post oauth::enumerate_rules => oauth::enumerate_rules_doc;
    post oauth::delete_rule => oauth::delete_rule_doc;
    post oauth::delete_rules => oauth::delete_rules_doc;
    post oauth::get_grants => oauth::get_grants_doc;
    post oauth::enumerate_grants => oauth::enumerate_grants_doc;
    post oauth::grant_count => oauth::grant_count_doc;
    post oauth::user_count => oauth::user_count_doc;
    post oauth::revoke_grants => oauth::revoke_grants_doc;
}

/// The path of every route [`app`] serves, so tests (the fuzz test) can
/// cover each one without keeping a second list.
pub fn route_paths() -> Vec<&'static str> {
    let mut paths: Vec<&'static str> = routes().into_iter().map(|(p, _)| p).collect();
    paths.sort_unstable();
    paths.dedup();
    paths
}

/// The whole HTTP application, ready to serve.
pub fn app(state: HttpState, limits: Limits) -> Router {
    let metrics = path_of!(health::metrics);
    build(state, limits, &|path| limits.metrics_here || path != metrics)
}

/// What the certificate listener serves: the certificate grant (and
/// `IsAuthServer`, `/healthz`), with the same layers as [`app`].
pub fn certificate_app(state: HttpState, limits: Limits) -> Router {
    let served = [path_of!(vedauth::certificate), path_of!(vedauth::is_auth_server), path_of!(health::healthz)];
    build(state, limits, &|path| served.iter().any(|p| p == path))
}

fn build(state: HttpState, limits: Limits, keep: &dyn Fn(&str) -> bool) -> Router {
    let router = routes()
        .into_iter()
        .filter(|(path, _)| keep(path))
        .fold(Router::new(), |r, (path, handlers)| r.route(path, handlers))
        .fallback(|| async { respond::not_found() })
        .method_not_allowed_fallback(|| async { respond::method_not_allowed() })
        .layer(DefaultBodyLimit::max(limits.max_body_bytes))
        .layer(TimeoutLayer::with_status_code(axum::http::StatusCode::REQUEST_TIMEOUT, limits.request_timeout))
        .layer(SetResponseHeaderLayer::if_not_present(header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .layer(SetResponseHeaderLayer::overriding(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")))
        // Browsers reach us over HTTPS: they keep to it for a year (RFC 6797).
        .layer(SetResponseHeaderLayer::if_not_present(
            header::STRICT_TRANSPORT_SECURITY,
            state.secure_cookies.then(|| HeaderValue::from_static("max-age=31536000")),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::SERVER,
            HeaderValue::from_static(concat!("strongroom/", env!("CARGO_PKG_VERSION"))),
        ))
        .layer(CatchPanicLayer::custom(|_| respond::panicked()))
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .layer(PropagateRequestIdLayer::new(x_request_id()))
        .layer(TraceLayer::new_for_http().make_span_with(request_span).on_request(()).on_response(access_log).on_failure(()))
        .layer(SetRequestIdLayer::new(x_request_id(), MakeId(state.rng.clone())))
        .layer(middleware::map_request(bound_request_id))
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
    // VenafiPS URL-encodes a whole leaf, slash included (`certificates%2f%7b…%7d`).
    let decoded = uri.path().get(..23).filter(|p| p.eq_ignore_ascii_case("/vedsdk/certificates%2f")).map(|_| {
        let rest = &uri.path()[23..];
        format!("/vedsdk/certificates/{}", rest.replace("%2f", "/").replace("%2F", "/"))
    });
    let original = uri.path();
    let path = decoded.as_deref().unwrap_or(original);
    let mut norm = String::with_capacity(path.len());
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        norm.push('/');
        norm.push_str(&seg.to_ascii_lowercase());
    }
    if norm.is_empty() {
        norm.push('/');
    }
    if norm != original {
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

/// The serving only `GET /metrics`, for `[metrics] listen`.
pub fn metrics_app(state: HttpState) -> Router {
    Router::new().route(&path_of!(health::metrics), get(health::metrics)).fallback(|| async { respond::not_found() }).with_state(state)
}

fn x_request_id() -> HeaderName {
    HeaderName::from_static("x-request-id")
}

/// Longest inbound `X-Request-Id` kept.
const MAX_REQUEST_ID: usize = 64;

/// Whether an inbound request id is kept: 1 to 64 letters, digits and
/// `-_.:/+=@` (UUIDs, trace ids, base64). Nothing that quotes, escapes or
/// nests (`"`, `\`, `{`, `}`, spaces…), so a log line stays one unambiguous
/// logfmt record and JSON string.
fn acceptable_request_id(v: &HeaderValue) -> bool {
    let b = v.as_bytes();
    (1..=MAX_REQUEST_ID).contains(&b.len()) && b.iter().all(|c| c.is_ascii_alphanumeric() || b"-_.:/+=@".contains(c))
}

/// Drops an inbound `X-Request-Id` that is too long, empty, repeated, or
/// holds anything else than [`acceptable_request_id`] allows;
/// [`SetRequestIdLayer`] then makes one.
async fn bound_request_id(mut req: Request) -> Request {
    let h = req.headers().get_all(x_request_id());
    let mut values = h.iter();
    let keep = matches!((values.next(), values.next()), (Some(v), None) if acceptable_request_id(v));
    if !keep {
        req.headers_mut().remove(x_request_id());
    }
    req
}

/// New request ids: 16 hex digits from the state's random source.
#[derive(Clone, Debug)]
struct MakeId(Arc<dyn Random>);

impl MakeRequestId for MakeId {
    fn make_request_id<B>(&mut self, _req: &axum::http::Request<B>) -> Option<RequestId> {
        let id = strongroom_core::hex::encode(&strongroom_core::random::bytes::<8>(&*self.0));
        HeaderValue::from_str(&id).ok().map(RequestId::new)
    }
}

/// Every request's span: its id, method and path without the query (the
/// approval link carries the user code); never headers or bodies.
fn request_span(req: &Request) -> tracing::Span {
    let id = extract::request_id_of(req.extensions());
    tracing::info_span!("request", request_id = %id, method = %req.method(), path = %req.uri().path())
}

/// One access-log line per request, in the request's span: at DEBUG for a
/// health check answered 200 (a load balancer asks every few seconds), at
/// INFO for everything else.
fn access_log(res: &Response, latency: Duration, _span: &tracing::Span) {
    let (status, elapsed_ms) = (res.status().as_u16(), latency.as_millis() as u64);
    if res.extensions().get::<respond::QuietAccessLog>().is_some() {
        tracing::debug!(status, elapsed_ms, "request");
    } else {
        tracing::info!(status, elapsed_ms, "request");
    }
}

/// Counts the request by route template (never the raw path) and status.
async fn observe(State(app): State<HttpState>, req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().map_or("unmatched", |m| m.as_str()).to_owned();
    let method = req.method().clone();
    let started = Instant::now();
    let res = next.run(req).await;
    app.metrics.request(&route, &method, res.status().as_u16(), started.elapsed());
    res
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
    fn route_paths_are_normalised() {
        for p in route_paths() {
            assert_eq!(norm(p), p, "{p} could never be reached: routing sees normalised paths");
        }
    }

    #[test]
    fn inbound_request_ids_keep_log_lines_unambiguous() {
        let ok = |s: &str| acceptable_request_id(&HeaderValue::from_str(s).unwrap());
        for good in ["0b8f7f8e-1111-4222-8333-444455556666", "Root=1-67891233-abcdef012345678912345678", "abc_DEF.1:2/3+4=@"] {
            assert!(ok(good), "{good}");
        }
        for bad in ["", "a b", "x\"y", "{\"a\":1}", "a\\b", "k=v,w", "a;b", &"a".repeat(65)] {
            assert!(!ok(bad), "{bad:?}");
        }
    }
}
