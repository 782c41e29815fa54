//! Price books per market: upload (validated), list, activate (hot swap; rollback is activating
//! an earlier upload).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use super::Operator;
use crate::api::{ApiError, ApiJson, AppState, RequestError};
use crate::pricing::{Activation, Comparison, UploadSummary};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UploadBody {
    /// The component (`.wasm`), base64.
    component_base64: String,
    /// The settings document the book is run with.
    settings: serde_json::Value,
}

pub async fn upload(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path(market): Path<String>,
    ApiJson(body): ApiJson<UploadBody>,
) -> Result<(StatusCode, Json<UploadSummary>), ApiError> {
    let component = STANDARD
        .decode(body.component_base64.trim())
        .map_err(|e| RequestError::InvalidBody(format!("component_base64 is not base64: {e}")))?;
    let summary = state
        .price_books
        .upload(&market, component, body.settings, &operator.name)
        .await?;
    Ok((StatusCode::CREATED, Json(summary)))
}

pub async fn list(
    State(state): State<AppState>,
    Path(market): Path<String>,
) -> Result<Json<Vec<UploadSummary>>, ApiError> {
    Ok(Json(state.price_books.list(&market).await?))
}

pub async fn activate(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path((market, version)): Path<(String, i32)>,
) -> Result<Json<Activation>, ApiError> {
    Ok(Json(
        state
            .price_books
            .activate(&market, version, &operator.name)
            .await?,
    ))
}

pub async fn compare(
    State(state): State<AppState>,
    Path((market, version)): Path<(String, i32)>,
) -> Result<Json<Comparison>, ApiError> {
    Ok(Json(state.price_books.compare(&market, version).await?))
}
