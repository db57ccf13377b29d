//! The server's own endpoints: liveness, readiness (and `/healthz`, its
//! alias) and the Prometheus metrics.

use std::time::Duration;

use axum::extract::State;
use axum::response::Response;

use super::{respond, responses};
use crate::state::HttpState;

/// Liveness: the process answers.
#[utoipa::path(
    get,
    path = "/health/live",
    tag = "server",
    responses((status = 200, description = "The process serves.", body = responses::HealthStatus)),
)]
pub(crate) async fn live() -> Response {
    respond::healthy(true)
}

/// Readiness: the store answers within two seconds and its schema is at
/// this binary's migrations.
#[utoipa::path(
    get,
    path = "/health/ready",
    tag = "server",
    responses(
        (status = 200, description = "The store can take writes and its schema is current.", body = responses::HealthStatus),
        (status = 503, description = "The store does not answer, or its schema is not this binary's.", body = responses::HealthStatus),
        (status = 408, response = responses::Timeout),
    ),
)]
pub(crate) async fn ready(State(app): State<HttpState>) -> Response {
    let outcome = tokio::time::timeout(Duration::from_secs(2), app.store.ready()).await;
    let ok = match outcome {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "not ready");
            false
        }
        Err(_) => {
            tracing::warn!("not ready: the store did not answer within 2 s");
            false
        }
    };
    respond::healthy(ok)
}

/// `/healthz`, kept for existing probes: the same answer as `/health/ready`.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "server",
    responses(
        (status = 200, description = "Ready (an alias of `/health/ready`).", body = responses::HealthStatus),
        (status = 503, description = "Not ready.", body = responses::HealthStatus),
        (status = 408, response = responses::Timeout),
    ),
)]
pub(crate) async fn healthz(state: State<HttpState>) -> Response {
    ready(state).await
}

/// Prometheus metrics (counts only: no token, name or address in a label).
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "server",
    responses((status = 200, description = "The metrics in the OpenMetrics text format.", content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8", body = String)),
)]
pub(crate) async fn metrics(State(app): State<HttpState>) -> Response {
    respond::metrics(app.metrics.render(app.store.pool_status(), app.keygen.in_progress()))
}
