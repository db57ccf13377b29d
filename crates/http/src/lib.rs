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
use std::sync::Arc;
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

/// Every operation, once: the path routing matches (in lower case: see
/// [`normalize_path`]), the method and the handler. The router and the
/// OpenAPI document's operations are both made from this one list, so a
/// handler is never served undocumented nor documented unserved; a path
/// served by several handlers has a line for each, a handler serving
/// several methods names them `get | post`.
macro_rules! api {
    (
        $($path:literal $($method:ident)|+ $($handler:ident)::+;)*
        documented apart {
            $($apath:literal $amethod:ident $($ahandler:ident)::+ => $($doc:ident)::+;)*
        }
    ) => {
        /// Every route: its path (as normalised) and a method router.
        /// [`app`] serves exactly these; [`route_paths`] lists them for tests.
        fn routes() -> Vec<(&'static str, MethodRouter<HttpState>)> {
            vec![
                $(($path, {
                    let handler = $($handler)::+;
                    MethodRouter::new()$(.$method(handler))+
                }),)*
                $(($apath, axum::routing::$amethod($($ahandler)::+)),)*
            ]
        }

        /// The operations of [`routes`], from their handlers'
        /// `#[utoipa::path]` attributes ([`openapi`] adds the rest).
        #[derive(utoipa::OpenApi)]
        #[openapi(paths($($($handler)::+,)* $($($doc)::+,)*))]
        pub(crate) struct Operations;
    };
}

api! {
    // The server: the landing page, the authorization server metadata, health, metrics, this description.
    "/" get landing::page;
    "/.well-known/oauth-authorization-server" get vedauth::metadata;
    "/healthz" get health::healthz;
    "/health/live" get health::live;
    "/health/ready" get health::ready;
    "/metrics" get health::metrics;
    "/openapi.json" get openapi::openapi_json;
    // Tokens (`/vedauth`).
    "/vedauth/authorize/device" post vedauth::device;
    "/vedauth/authorize/token" post vedauth::token;
    "/vedauth/authorize/oauth" post vedauth::oauth;
    "/vedauth/authorize/verify" get vedauth::verify;
    "/vedauth/authorize/jwt" post vedauth::jwt;
    "/vedauth/authorize/certificate" post vedauth::certificate;
    "/vedauth/authorize/isauthserver" get vedauth::is_auth_server;
    "/vedauth/revoke/token" get vedauth::revoke;
    "/vedauth/revoke/token" post vedauth::revoke_rfc7009;
    // The approval page.
    "/vedauth/device" get page::show;
    "/vedauth/device" post page::sign_in;
    "/vedauth/device/decision" post page::decide;
    "/vedauth/device/style.css" get page::style;
    "/vedauth/device/grants" get page::approved;
    "/vedauth/device/grants" post page::approved_sign_in;
    "/vedauth/device/grants/revoke" post page::approved_revoke;
    "/vedauth/device/oidc" get page::oidc_start;
    "/vedauth/device/oidc/callback" get page::oidc_callback;
    // The WebSDK (`/vedsdk`): the API level, identities, the vault, the log, groups and teams, the `\VED` tree and its permissions.
    "/vedsdk" get vedsdk::ping;
    "/vedsdk/systemstatus/version" get vedsdk::version;
    "/vedsdk/identity/self" get identity::self_;
    "/vedsdk/identity/validate" post identity::validate;
    "/vedsdk/identity/browse" post identity::browse;
    "/vedsdk/identity/getmemberships" post identity::memberships;
    "/vedsdk/identity/getmembers" post identity::members;
    "/vedsdk/secretstore/add" post secretstore::add;
    "/vedsdk/secretstore/retrieve" post secretstore::retrieve;
    "/vedsdk/secretstore/associate" post secretstore::associate;
    "/vedsdk/secretstore/dissociate" post secretstore::dissociate;
    "/vedsdk/secretstore/lookupbyassociation" post secretstore::lookup_by_association;
    "/vedsdk/secretstore/lookupassociationbyvaultid" post secretstore::lookup_association;
    "/vedsdk/secretstore/lookupallassociationsbyvaultid" post secretstore::all_associations;
    "/vedsdk/secretstore/lookupbyowner" post secretstore::lookup_by_owner;
    "/vedsdk/secretstore/lookupbyvaulttype" post secretstore::lookup_by_vault_type;
    "/vedsdk/secretstore/orphanlookup" post secretstore::orphan_lookup;
    "/vedsdk/secretstore/owneradd" post secretstore::owner_add;
    "/vedsdk/secretstore/ownerdelete" post secretstore::owner_delete;
    "/vedsdk/secretstore/ownerlookup" post secretstore::owner_lookup;
    "/vedsdk/secretstore/mutate" post secretstore::mutate;
    "/vedsdk/secretstore/lookup" get secretstore::lookup;
    "/vedsdk/secretstore/encryptionkeysinuse" get secretstore::encryption_keys_in_use;
    "/vedsdk/secretstore/availablenamespaces" get secretstore::available_namespaces;
    "/vedsdk/secretstore/rotatekey/{vaultid}" get secretstore::rotate_key;
    "/vedsdk/crypto/defaultkey" get secretstore::default_key;
    "/vedsdk/credentials/create" post credentials::create;
    "/vedsdk/credentials/retrieve" post credentials::retrieve;
    "/vedsdk/credentials/update" post credentials::update;
    "/vedsdk/credentials/delete" post credentials::delete;
    "/vedsdk/credentials/rename" post credentials::rename;
    "/vedsdk/credentials/enumerate" post credentials::enumerate;
    "/vedsdk/certificates/checkpolicy" post certificates::check_policy;
    "/vedsdk/certificates/request" post certificates::request;
    "/vedsdk/certificates/retrieve" post certificates::retrieve;
    "/vedsdk/certificates/retrieve/{vaultid}" post certificates::retrieve_vault;
    "/vedsdk/certificates/renew" post certificates::renew;
    "/vedsdk/certificates/revoke" post certificates::revoke;
    "/vedsdk/certificates/reset" post certificates::reset;
    "/vedsdk/certificates/retry" post certificates::retry;
    "/vedsdk/workflow/ticket/enumerate" post workflow::enumerate;
    "/vedsdk/workflow/ticket/status" post workflow::status;
    "/vedsdk/workflow/ticket/updatestatus" post workflow::update_status;
    "/vedsdk/certificates/import" post certificates::unsupported;
    "/vedsdk/certificates/associate" post certificates::associate;
    "/vedsdk/certificates/dissociate" post certificates::dissociate;
    "/vedsdk/certificates/push" post certificates::push;
    "/vedsdk/certificates" get certificates::search;
    "/vedsdk/certificates/{guid}" get certificates::get_one;
    "/vedsdk/certificates/{guid}" put certificates::put_one;
    "/vedsdk/certificates/{guid}" delete certificates::delete_one;
    "/vedsdk/certificates/{guid}/previousversions" get certificates::previous_versions;
    "/vedsdk/metadata/get" post certificates::metadata_get;
    "/vedsdk/metadata/getitems" post certificates::metadata_get_items;
    "/vedsdk/metadata/set" post certificates::metadata_set;
    "/vedsdk/metadata/items" get certificates::metadata_items;
    "/crl/{name}" get certificates::crl;
    "/vedsdk/log" get log::log;
    "/vedsdk/log" post identity::write_log;
    "/vedsdk/log/logschema" get log::log_schema;
    "/vedsdk/log/{guid}" get log::log_of_object;
    "/vedsdk/metadata/getitemsforclass" post log::items_for_class;
    "/vedsdk/identity/addgroup" post groups::add_group;
    "/vedsdk/identity/addgroupmembers" put groups::add_members;
    "/vedsdk/identity/removegroupmembers" put groups::remove_members;
    "/vedsdk/identity/renamegroup" put groups::rename_group;
    "/vedsdk/identity/group/{prefix}/{universal}" delete groups::delete_group;
    "/vedsdk/identity/setpassword" post groups::set_password;
    "/vedsdk/identity/readattribute" post groups::read_attribute;
    "/vedsdk/teams" post teams::create;
    "/vedsdk/teams/addteammembers" put teams::add_members;
    "/vedsdk/teams/removeteammembers" put teams::remove_members;
    "/vedsdk/teams/local/{guid}" get teams::get_team;
    "/vedsdk/teams/local/{guid}" delete teams::delete_team;
    "/vedsdk/config/create" post config::create;
    "/vedsdk/config/delete" post config::delete;
    "/vedsdk/config/isvalid" post config::is_valid;
    "/vedsdk/config/dntoguid" post config::dn_to_guid;
    "/vedsdk/config/guidtodn" post config::guid_to_dn;
    "/vedsdk/config/enumerate" post config::enumerate;
    "/vedsdk/config/findobjectsofclass" post config::find_objects_of_class;
    "/vedsdk/config/renameobject" post config::rename_object;
    "/vedsdk/config/write" post config::write;
    "/vedsdk/config/writepolicy" post cert_policy::write_policy;
    "/vedsdk/config/readpolicy" post cert_policy::read_policy;
    "/vedsdk/config/clearpolicyattribute" post cert_policy::clear_policy_attribute;
    "/vedsdk/permissions/object/{guid}" get permissions::principals;
    "/vedsdk/permissions/object/{guid}/{ptype}/{principal}" get | post | put | delete permissions::local_entry;
    "/vedsdk/permissions/object/{guid}/{ptype}/{principal}/effective" get permissions::local_effective;
    "/vedsdk/permissions/object/{guid}/{ptype}/{principal}/{id}" get | post | put | delete permissions::directory_entry;
    "/vedsdk/permissions/object/{guid}/{ptype}/{principal}/{id}/effective" get permissions::directory_effective;
    // The admin console.
    "/admin" get console::home;
    "/admin" post console::sign_in;
    "/admin/signout" post console::sign_out;
    "/admin/style.css" get console::style;
    "/admin/integrations" get console::integrations::page;
    "/admin/integrations/create" post console::integrations::create;
    "/admin/integrations/update" post console::integrations::update;
    "/admin/integrations/delete" get console::integrations::confirm_delete;
    "/admin/integrations/delete" post console::integrations::delete;
    "/admin/users" get console::users::page;
    "/admin/users/create" post console::users::create_user;
    "/admin/users/disable" get console::users::confirm_disable;
    "/admin/users/disable" post console::users::disable_user;
    "/admin/users/password" get console::users::password_form;
    "/admin/users/password" post console::users::set_password;
    "/admin/users/unlock" post console::users::unlock;
    "/admin/users/master" get console::users::confirm_master;
    "/admin/users/master" post console::users::master;
    "/admin/users/delete" get console::users::confirm_delete;
    "/admin/users/delete" post console::users::delete_user;
    "/admin/groups/create" post console::users::create_group;
    "/admin/groups/delete" get console::users::confirm_delete_group;
    "/admin/groups/delete" post console::users::delete_group;
    "/admin/groups/members" get console::users::confirm_remove_member;
    "/admin/groups/members" post console::users::members;
    "/admin/folders" get console::folders::page;
    "/admin/folders/create" post console::folders::create;
    "/admin/folders/rename" post console::folders::rename;
    "/admin/folders/delete" get console::folders::confirm_delete;
    "/admin/folders/delete" post console::folders::delete;
    "/admin/folders/rights" get console::folders::confirm_revoke;
    "/admin/folders/rights" post console::folders::set_rights;
    "/admin/vault" get console::vault::page;
    "/admin/grants" get console::grants::page;
    "/admin/grants/revoke" get console::grants::confirm_revoke;
    "/admin/grants/revoke" post console::grants::revoke;
    "/admin/keys" get console::keys::page;
    "/admin/keys/rotate" get console::keys::confirm_rotate;
    "/admin/keys/rotate" post console::keys::rotate;
    "/admin/machines" get console::machines::page;
    "/admin/machines/issuers" post console::machines::save_issuer;
    "/admin/machines/issuers/remove" get console::machines::confirm_remove_issuer;
    "/admin/machines/issuers/remove" post console::machines::remove_issuer;
    "/admin/machines/mappings/jwt" post console::machines::save_jwt_mapping;
    "/admin/machines/mappings/cert" post console::machines::save_cert_mapping;
    "/admin/machines/mappings/remove" get console::machines::confirm_remove_mapping;
    "/admin/machines/mappings/remove" post console::machines::remove_mapping;
    "/admin/cas" get console::certs::cas;
    "/admin/cas/create" post console::certs::create;
    "/admin/cas/show" get console::certs::ca;
    "/admin/cas/pem" get console::certs::pem;
    "/admin/policies" get console::certs::policies;
    "/admin/policies/set" post console::certs::set_policy;
    "/admin/certificates/pending" get console::approvals::pending;
    "/admin/certificates/approve" get console::approvals::confirm_approve;
    "/admin/certificates/approve" post console::approvals::approve;
    "/admin/certificates/reject" get console::approvals::confirm_reject;
    "/admin/certificates/reject" post console::approvals::reject;
    "/admin/log" get console::log::page;
    "/admin/server" get console::server::page;
    documented apart {
        // API integrations (`/vedsdk/oauth/*`). `oauth_path!` documents each by a stand-in: their attributes differ only in path, scope and text.
        "/vedsdk/oauth/createapplication" post oauth::create_application => oauth::create_application_doc;
        "/vedsdk/oauth/getapplication" post oauth::get_application => oauth::get_application_doc;
        "/vedsdk/oauth/getapplications" post oauth::get_applications => oauth::get_applications_doc;
        "/vedsdk/oauth/enumerateapplications" post oauth::enumerate_applications => oauth::enumerate_applications_doc;
        "/vedsdk/oauth/updateapplication" post oauth::update_application => oauth::update_application_doc;
        "/vedsdk/oauth/deleteapplication" post oauth::delete_application => oauth::delete_application_doc;
        "/vedsdk/oauth/createrule" post oauth::create_rule => oauth::create_rule_doc;
        "/vedsdk/oauth/getrules" post oauth::get_rules => oauth::get_rules_doc;
        "/vedsdk/oauth/enumeraterules" post oauth::enumerate_rules => oauth::enumerate_rules_doc;
        "/vedsdk/oauth/deleterule" post oauth::delete_rule => oauth::delete_rule_doc;
        "/vedsdk/oauth/deleterules" post oauth::delete_rules => oauth::delete_rules_doc;
        "/vedsdk/oauth/getgrants" post oauth::get_grants => oauth::get_grants_doc;
        "/vedsdk/oauth/enumerategrants" post oauth::enumerate_grants => oauth::enumerate_grants_doc;
        "/vedsdk/oauth/grantcount" post oauth::grant_count => oauth::grant_count_doc;
        "/vedsdk/oauth/usercount" post oauth::user_count => oauth::user_count_doc;
        "/vedsdk/oauth/revokegrants" post oauth::revoke_grants => oauth::revoke_grants_doc;
    }
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
    build(state, limits, &|path| limits.metrics_here || path != "/metrics")
}

/// What the certificate listener serves: the certificate grant (and
/// `IsAuthServer`, `/healthz`), with the same layers as [`app`].
pub fn certificate_app(state: HttpState, limits: Limits) -> Router {
    build(state, limits, &|path| matches!(path, "/vedauth/authorize/certificate" | "/vedauth/authorize/isauthserver" | "/healthz"))
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
    Router::new().route("/metrics", get(health::metrics)).fallback(|| async { respond::not_found() }).with_state(state)
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
