//! Operations endpoints: liveness, readiness, metrics. No credentials needed, but for the
//! metrics when `COURIER_METRICS_TOKEN` is set.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::response::IntoResponse;
use serde::Serialize;
use utoipa::ToSchema;

use super::error::ApiError;
use super::state::AppState;
use courier_core::auth::AuthError;
use courier_core::auth::operators::{bearer_token, same_token};
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

/// The process can serve: its database answers, and it is not stopping.
#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "getReadiness",
    tag = "operations",
    summary = "Readiness: the database answers and the instance is not stopping",
    security(()),
    responses(
        (status = 200, description = "Ready", body = Readiness),
        (status = 503, description = "service.database_unavailable service.draining"),
    )
)]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Readiness>, ApiError> {
    if state.draining.is_on() {
        return Err(ApiError::Draining);
    }
    state.readiness.check().await.map_err(|e| {
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
    responses(
        (status = 200, description = "Prometheus text exposition format 0.0.4", content_type = "text/plain; version=0.0.4", body = String),
        (status = 401, description = "auth.missing_credentials auth.malformed_credentials auth.invalid_credentials"),
    )
)]
/// With `COURIER_METRICS_TOKEN` set, only `Authorization: Bearer <that token>` reads them.
pub async fn metrics(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<impl IntoResponse, ApiError> {
    if let Some(token) = &state.config.metrics_token {
        let header = headers.get(AUTHORIZATION).map(|v| v.as_bytes());
        let presented = bearer_token(header).map_err(ApiError::AdminAuth)?;
        if !same_token(presented, token.expose()) {
            return Err(ApiError::AdminAuth(AuthError::Invalid));
        }
    }
    Ok((
        [(CONTENT_TYPE, "text/plain; version=0.0.4")],
        telemetry::render_metrics(),
    ))
}
