//! `/vedsdk` handlers.

use axum::response::Response;

use strongroom_proto::vedsdk::VersionResponse;

use super::extract::{Caller, scope};
use super::respond::ok;
use super::responses::{Timeout, Unauthorized, Unavailable};

/// The WebSDK API level Strongroom serves. Clients parse it to pick API
/// features (pyvenafi reads major.minor), so it is the product version whose
/// interface we implement, not Strongroom's own version (that is in the
/// `Server` header).
pub const API_VERSION: &str = "25.1.0";

/// `GET /vedsdk/`: Go vcert's `Ping` wants a 200.
#[utoipa::path(
    get,
    path = "/vedsdk",
    tag = "vedsdk",
    responses((status = 200, description = "`{}`: the WebSDK is here (vcert's `Ping`).", body = inline(Object))),
)]
pub(crate) async fn ping() -> Response {
    ok(&serde_json::json!({}))
}

/// `GET SystemStatus/Version`: any valid bearer token.
#[utoipa::path(
    get,
    path = "/vedsdk/SystemStatus/Version",
    tag = "vedsdk",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The WebSDK level served.", body = VersionResponse),
        (status = 401, response = Unauthorized),
        (status = 408, response = Timeout),
        (status = 503, response = Unavailable),
    ),
)]
pub(crate) async fn version(_: Caller<scope::Any>) -> Response {
    ok(&VersionResponse { version: API_VERSION.to_owned() })
}
