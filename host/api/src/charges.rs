//! `GET /v1/charges`.

use axum::extract::State;
use axum::{Extension, Json};

use super::error::ApiError;
use super::state::AppState;
use courier_core::auth::Merchant;
use courier_core::payments::ChargeView;

/// `GET /v1/charges`: the last 50, one per job, newest first.
#[utoipa::path(
    get,
    path = "/charges",
    operation_id = "listCharges",
    tag = "payments",
    summary = "The last 50 charges, one per job, newest first",
    responses((status = 200, description = "Charges", body = Vec<ChargeView>))
)]
pub async fn list(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
) -> Result<Json<Vec<ChargeView>>, ApiError> {
    Ok(Json(state.payments.recent_charges(&merchant).await?))
}
