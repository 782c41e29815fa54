//! `GET /v1/charges` and the operator's refunds (`POST /admin/v1/charges/{id}/refund`).

use axum::extract::{Path, State};
use axum::{Extension, Json};
use serde::Deserialize;
use uuid::Uuid;

use super::admin::Operator;
use super::{ApiError, ApiJson, AppState};
use crate::auth::Merchant;
use crate::numeric::Numeric;
use crate::payments::{ChargeView, PaymentError};

/// `GET /v1/charges`: the last 50, one per job, newest first.
pub async fn list(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
) -> Result<Json<Vec<ChargeView>>, ApiError> {
    Ok(Json(state.payments.recent_charges(&merchant).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefundBody {
    amount_minor: Numeric<i64>,
}

/// `POST /admin/v1/charges/{id}/refund` `{amount_minor}`: gives back part or all of a
/// captured charge; answers the charge.
pub async fn refund(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<RefundBody>,
) -> Result<Json<ChargeView>, ApiError> {
    let id = Uuid::parse_str(&id).map_err(|_| PaymentError::ChargeNotFound)?;
    let charge = state
        .payments
        .refund(id, body.amount_minor.0, &operator.name)
        .await?;
    Ok(Json(charge))
}
