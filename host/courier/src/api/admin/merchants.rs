//! Merchants, their keys and account settings, for operators.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;

use super::Operator;
use crate::api::{ApiError, ApiJson, AppState};
use crate::merchants::{
    self, AccountSettings, ApiKey, CreatedKey, MerchantDetail, MerchantSummary, NewMerchant,
    SettingsChange,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewMerchantBody {
    name: String,
}

/// `POST /admin/v1/merchants` `{name}`: 201 with the merchant and its first two keys.
pub async fn create(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    ApiJson(body): ApiJson<NewMerchantBody>,
) -> Result<(StatusCode, Json<NewMerchant>), ApiError> {
    let created = merchants::create_as(
        &state.pool,
        &state.authenticator,
        &body.name,
        &operator.name,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(created)))
}

pub async fn list(State(state): State<AppState>) -> Result<Json<Vec<MerchantSummary>>, ApiError> {
    Ok(Json(merchants::list(&state.pool).await?))
}

pub async fn show(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<MerchantDetail>, ApiError> {
    Ok(Json(
        merchants::show(&state.pool, merchants::parse_id(&id)?).await?,
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewKeyBody {
    environment: String,
    label: String,
}

/// `POST /admin/v1/merchants/{id}/keys` `{environment, label}`: 201 with the key and its
/// secret, which is never shown again.
pub async fn create_key(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<NewKeyBody>,
) -> Result<(StatusCode, Json<CreatedKey>), ApiError> {
    let created = merchants::create_key(
        &state.pool,
        &state.authenticator,
        merchants::parse_id(&id)?,
        &body.environment,
        &body.label,
        &operator.name,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// `POST /admin/v1/keys/{key}/revoke`: idempotent; answers the key.
pub async fn revoke_key(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path(key): Path<String>,
) -> Result<Json<ApiKey>, ApiError> {
    Ok(Json(
        merchants::revoke_key(&state.pool, &state.authenticator, &key, &operator.name).await?,
    ))
}

pub async fn settings(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<AccountSettings>, ApiError> {
    Ok(Json(
        merchants::settings(&state.pool, merchants::parse_id(&id)?).await?,
    ))
}

pub async fn change_settings(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path(id): Path<String>,
    ApiJson(change): ApiJson<SettingsChange>,
) -> Result<Json<AccountSettings>, ApiError> {
    Ok(Json(
        merchants::change_settings(
            &state.pool,
            &state.authenticator,
            merchants::parse_id(&id)?,
            &change,
            &operator.name,
        )
        .await?,
    ))
}
