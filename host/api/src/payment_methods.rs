//! `/v1/payment-methods`: cards on file, per environment. Card numbers are refused wherever
//! they appear, before anything reads, stores or echoes them.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::error::ApiError;
use super::extract::ApiJson;
use super::state::AppState;
use courier_core::auth::Merchant;
use courier_core::payments::cards::{CardFormView, PaymentMethodView};
use courier_core::payments::{HoldError, PaymentError};
use courier_domain::charge::contains_card_number;

impl From<HoldError> for ApiError {
    fn from(error: HoldError) -> Self {
        PaymentError::from(error).into()
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachBody {
    /// The provider's reference for the card (in the test environment `pm_sandbox_` and a
    /// designated test number); never a card number.
    provider_ref: String,
    #[serde(default)]
    make_default: Option<bool>,
}

/// `POST /v1/payment-methods/setup`: no body is needed; one sent is still searched.
#[utoipa::path(
    post,
    path = "/payment-methods/setup",
    operation_id = "setUpCardForm",
    tag = "payments",
    summary = "Start the payment provider's card form, with the merchant present",
    responses(
        (status = 200, description = "What the provider's card form needs", body = CardFormView),
        (status = 422, description = "payment.raw_card_number payment.live_unavailable"),
        (status = 503, description = "payment.provider_unreachable payment.provider_busy"),
    )
)]
pub async fn setup(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    body: Bytes,
) -> Result<Json<CardFormView>, ApiError> {
    if contains_card_number(&String::from_utf8_lossy(&body)) {
        return Err(PaymentError::RawCardNumber.into());
    }
    Ok(Json(state.payments.setup(&merchant).await?))
}

/// `POST /v1/payment-methods`
#[utoipa::path(
    post,
    path = "/payment-methods",
    operation_id = "attachPaymentMethod",
    tag = "payments",
    summary = "Put a card on file by the provider's reference",
    request_body = AttachBody,
    responses(
        (status = 201, description = "The card on file", body = PaymentMethodView),
        (status = 422, description = "payment.raw_card_number payment.reference_wrong_environment payment.unknown_reference payment.live_unavailable payment.card_declined"),
        (status = 503, description = "payment.provider_unreachable payment.provider_busy"),
    )
)]
pub async fn attach(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    // `ApiJson` refuses a card number anywhere in the body before it checks the shape.
    ApiJson(body): ApiJson<AttachBody>,
) -> Result<(StatusCode, Json<PaymentMethodView>), ApiError> {
    let card = state
        .payments
        .attach(
            &merchant,
            &body.provider_ref,
            body.make_default.unwrap_or(false),
        )
        .await?;
    Ok((StatusCode::CREATED, Json(card)))
}

/// `GET /v1/payment-methods`
#[utoipa::path(
    get,
    path = "/payment-methods",
    operation_id = "listPaymentMethods",
    tag = "payments",
    responses((status = 200, description = "Cards on file in the credential's environment", body = Vec<PaymentMethodView>))
)]
pub async fn list(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
) -> Result<Json<Vec<PaymentMethodView>>, ApiError> {
    Ok(Json(state.payments.cards(&merchant).await?))
}

/// `POST /v1/payment-methods/{id}/default`: 204.
#[utoipa::path(
    post,
    path = "/payment-methods/{id}/default",
    operation_id = "makePaymentMethodDefault",
    tag = "payments",
    summary = "Deliveries are charged to the default card",
    params(("id" = Uuid, Path, description = "The card's id")),
    responses(
        (status = 204, description = "It is the default now"),
        (status = 404, description = "payment_method.not_found"),
        (status = 422, description = "payment.card_dead payment.raw_card_number"),
    )
)]
pub async fn make_default(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = card_id(&id)?;
    state.payments.make_default(&merchant, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE /v1/payment-methods/{id}`: 204.
#[utoipa::path(
    delete,
    path = "/payment-methods/{id}",
    operation_id = "removePaymentMethod",
    tag = "payments",
    params(("id" = Uuid, Path, description = "The card's id")),
    responses(
        (status = 204, description = "Removed; another card becomes the default if this one was"),
        (status = 404, description = "payment_method.not_found"),
        (status = 422, description = "payment.raw_card_number"),
    )
)]
pub async fn remove(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = card_id(&id)?;
    state.payments.remove(&merchant, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A card id from the path. A UUID is an id, even when its digits happen to pass the Luhn
/// check; anything else holding a card number is refused like anywhere else, and the rest
/// names no card.
fn card_id(raw: &str) -> Result<Uuid, PaymentError> {
    if let Ok(id) = Uuid::parse_str(raw) {
        return Ok(id);
    }
    if contains_card_number(raw) {
        return Err(PaymentError::RawCardNumber);
    }
    Err(PaymentError::PaymentMethodNotFound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uuid_is_an_id_even_when_its_digits_pass_the_luhn_check() {
        // Its last three groups, joined, are a Luhn-valid run of 18 digits.
        let lookalike = "deadbeef-abcd-ef01-2345-678901234569";
        assert!(contains_card_number("01-2345-678901234569"));
        assert!(card_id(lookalike).is_ok(), "{lookalike}");
        assert!(matches!(
            card_id("4242424242424242"),
            Err(PaymentError::RawCardNumber)
        ));
        assert!(matches!(
            card_id("not-a-card"),
            Err(PaymentError::PaymentMethodNotFound)
        ));
    }
}
