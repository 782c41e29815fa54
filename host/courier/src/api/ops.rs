//! Operations endpoints: liveness, readiness, metrics. No credentials needed.

use axum::Json;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use serde_json::{Value, json};

use super::{ApiError, AppState};
use crate::telemetry;

/// The process is up.
pub async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

/// The process can serve: its database answers.
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    sqlx::query("SELECT 1")
        .execute(&state.pool)
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "readiness check failed");
            ApiError::DatabaseUnavailable
        })?;
    Ok(Json(json!({ "status": "ready" })))
}

/// Prometheus text exposition.
pub async fn metrics() -> impl IntoResponse {
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4")],
        telemetry::render_metrics(),
    )
}
