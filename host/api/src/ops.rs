//! Operations endpoints: liveness, readiness, metrics. No credentials needed.

use axum::Json;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use serde::Serialize;
use utoipa::ToSchema;

use super::error::ApiError;
use super::state::AppState;
use courier_core::infra::telemetry;

/// `GET /healthz`'s answer: always `{"status": "ok"}`.
#[derive(Serialize, ToSchema)]
pub struct Health {
    status: HealthStatus,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HealthStatus {
    Ok,
}

/// `GET /readyz`'s answer when ready: `{"status": "ready"}`.
#[derive(Serialize, ToSchema)]
pub struct Readiness {
    status: ReadinessStatus,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReadinessStatus {
    Ready,
}

/// The process is up.
#[utoipa::path(
    get,
    path = "/healthz",
    operation_id = "getHealth",
    tag = "operations",
    summary = "Liveness: the process is up",
    security(()),
    responses((status = 200, description = "Up", body = Health))
)]
pub async fn healthz() -> Json<Health> {
    Json(Health {
        status: HealthStatus::Ok,
    })
}

/// The process can serve: its database answers.
#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "getReadiness",
    tag = "operations",
    summary = "Readiness: the database answers",
    security(()),
    responses(
        (status = 200, description = "Ready", body = Readiness),
        (status = 503, description = "service.database_unavailable"),
    )
)]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Readiness>, ApiError> {
    courier_store::ping(&state.pool).await.map_err(|e| {
        tracing::warn!(error = %e, "readiness check failed");
        ApiError::DatabaseUnavailable
    })?;
    Ok(Json(Readiness {
        status: ReadinessStatus::Ready,
    }))
}

/// Prometheus text exposition.
#[utoipa::path(
    get,
    path = "/metrics",
    operation_id = "getMetrics",
    tag = "operations",
    summary = "Prometheus metrics",
    security(()),
    responses((status = 200, description = "Prometheus text exposition format 0.0.4", content_type = "text/plain; version=0.0.4", body = String))
)]
pub async fn metrics() -> impl IntoResponse {
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4")],
        telemetry::render_metrics(),
    )
}
