//! Account settings of a merchant.

use axum::Json;
use axum::extract::{Path, State};

use crate::api::{ApiError, ApiJson, AppState};
use crate::merchants::{self, AccountSettings, SettingsChange};

fn merchant_id(raw: &str) -> Result<uuid::Uuid, ApiError> {
    uuid::Uuid::parse_str(raw).map_err(|_| ApiError::MerchantNotFound)
}

pub async fn settings(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<AccountSettings>, ApiError> {
    merchants::settings(&state.pool, merchant_id(&id)?)
        .await?
        .map(Json)
        .ok_or(ApiError::MerchantNotFound)
}

pub async fn change_settings(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiJson(change): ApiJson<SettingsChange>,
) -> Result<Json<AccountSettings>, ApiError> {
    merchants::change_settings(&state.pool, merchant_id(&id)?, &change)
        .await?
        .map(Json)
        .ok_or(ApiError::MerchantNotFound)
}
