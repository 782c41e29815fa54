//! The operator's refunds (`POST /admin/v1/charges/{id}/refund`).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::error::ApiError;
use crate::extract::ApiJson;
use crate::state::AppState;
use courier_core::auth::operators::Operator;
use courier_core::idempotency;
use courier_core::payments::refunds::RefundOutcome;
use courier_core::payments::{ChargeView, PaymentError};
use courier_domain::numeric::Numeric;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefundBody {
    /// Up to what is captured and not yet refunded.
    #[schema(value_type = i64, minimum = 1)]
    amount_minor: Numeric<i64>,
}

#[utoipa::path(
    post,
    path = "/charges/{id}/refund",
    operation_id = "refundCharge",
    tag = "admin",
    params(
        ("id" = Uuid, Path, description = "The charge's id"),
        ("Idempotency-Key" = String, Header, description = "Caller-chosen, 1 to 255 visible characters; the same key with the same charge and amount answers the first refund again and never pays twice"),
    ),
    request_body = RefundBody,
    responses(
        (status = 200, description = "The charge after the refund", body = ChargeView),
        (status = 202, description = "The provider accepted the refund and confirms it later (its notification): the charge as it stands, the refund not yet counted", body = ChargeView),
        (status = 404, description = "charge.not_found"),
        (status = 409, description = "charge.not_refundable idempotency.key_reused idempotency.in_progress"),
        (status = 422, description = "request.missing_idempotency_key request.invalid_idempotency_key charge.invalid_amount charge.refund_exceeds_captured payment.card_declined payment.live_unavailable"),
        (status = 503, description = "payment.provider_unreachable payment.provider_busy payment.provider_refused"),
    )
)]
/// `POST /admin/v1/charges/{id}/refund` `{amount_minor}` with an `Idempotency-Key`: gives
/// back part or all of a captured charge, once per key; answers the charge (202 while the
/// provider has yet to confirm it).
pub async fn refund(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path(id): Path<String>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<RefundBody>,
) -> Result<(StatusCode, Json<ChargeView>), ApiError> {
    let key = idempotency::header_key(headers.get("idempotency-key").map(|v| v.as_bytes()))
        .map_err(PaymentError::from)?;
    let id = Uuid::parse_str(&id).map_err(|_| PaymentError::ChargeNotFound)?;
    let outcome = state
        .payments
        .refund(id, body.amount_minor.0, &operator.name, key)
        .await?;
    Ok(match outcome {
        RefundOutcome::Paid(charge) => (StatusCode::OK, Json(charge)),
        RefundOutcome::AwaitingProvider(charge) => (StatusCode::ACCEPTED, Json(charge)),
    })
}
