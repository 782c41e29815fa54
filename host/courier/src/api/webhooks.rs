//! `/v1/webhooks`: endpoints of the credential's environment and their delivery records.

use axum::Extension;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::Value;
use uuid::Uuid;

use super::{ApiError, ApiJson, AppState};
use crate::auth::Merchant;
use crate::store::webhooks::Owner;
use crate::webhooks::{DeliveryRecord, Endpoint, WebhookError};

fn owner(merchant: &Merchant) -> Owner<'static> {
    Owner {
        merchant_id: merchant.merchant_id,
        environment: merchant.environment.as_str(),
    }
}

/// An id that is not a UUID names no endpoint: 404 like any unknown id.
fn endpoint_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| WebhookError::NotFound.into())
}

pub async fn create(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    ApiJson(body): ApiJson<Value>,
) -> Result<(StatusCode, Json<Endpoint>), ApiError> {
    let endpoint = state.webhooks.create(owner(&merchant), &body).await?;
    Ok((StatusCode::CREATED, Json(endpoint)))
}

pub async fn list(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
) -> Result<Json<Vec<Endpoint>>, ApiError> {
    Ok(Json(state.webhooks.list(owner(&merchant)).await?))
}

pub async fn deliveries(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
) -> Result<Json<Vec<DeliveryRecord>>, ApiError> {
    let id = endpoint_id(&id)?;
    Ok(Json(state.webhooks.deliveries(owner(&merchant), id).await?))
}

pub async fn resume(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
) -> Result<Json<Endpoint>, ApiError> {
    let id = endpoint_id(&id)?;
    Ok(Json(state.webhooks.resume(owner(&merchant), id).await?))
}

pub async fn rotate_secret(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
) -> Result<Json<Endpoint>, ApiError> {
    let id = endpoint_id(&id)?;
    Ok(Json(
        state.webhooks.rotate_secret(owner(&merchant), id).await?,
    ))
}

pub async fn delete(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = endpoint_id(&id)?;
    state.webhooks.delete(owner(&merchant), id).await?;
    Ok(StatusCode::NO_CONTENT)
}
