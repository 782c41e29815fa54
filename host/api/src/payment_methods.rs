//! `/v1/payment-methods`: cards on file, per environment. Card numbers are refused wherever
//! they appear, before anything reads, stores or echoes them.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::error::{ApiError, RequestError};
use super::extract::{UnscannedDocument, from_document, parse_json};
use super::state::AppState;
use courier_core::auth::Merchant;
use courier_core::payments::cards::{CardFormOptions, CardFormView, PaymentMethodView};
use courier_core::payments::{HoldError, PaymentError};
use courier_domain::charge::{contains_card_number, json_contains_card_number};

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

/// `POST /v1/payment-methods/setup`: no body is needed; one may say what the form is for
/// (currency, country, locale, return URL; each left out is the operator's default). Any body
/// is searched for card numbers.
#[utoipa::path(
    post,
    path = "/payment-methods/setup",
    operation_id = "setUpCardForm",
    tag = "payments",
    summary = "Start the payment provider's card form, with the merchant present",
    request_body(content = Option<CardFormOptions>, description = "Optional: what the form is for"),
    responses(
        (status = 200, description = "What the provider's card form needs", body = CardFormView),
        (status = 422, description = "payment.raw_card_number payment.live_unavailable payment.invalid_card_form request.malformed_json request.invalid_body"),
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
    let options: CardFormOptions = if body.iter().all(u8::is_ascii_whitespace) {
        CardFormOptions::default()
    } else {
        from_document(parse_json(&body)?)?
    };
    Ok(Json(state.payments.setup(&merchant, &options).await?))
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
    UnscannedDocument(mut document): UnscannedDocument,
) -> Result<(StatusCode, Json<PaymentMethodView>), ApiError> {
    // A card number anywhere is refused before the shape is checked, except in
    // `provider_ref`: the payments feature holds it to the rule, leaving alone a reference
    // that matches the pattern the provider's adapter declared.
    let reference = document
        .get_mut("provider_ref")
        .map(|field| std::mem::replace(field, serde_json::Value::String(String::new())));
    let mut body: AttachBody = from_document(document)?;
    match reference {
        Some(serde_json::Value::String(text)) if !text.contains('\0') => body.provider_ref = text,
        Some(other) if json_contains_card_number(&other) => {
            return Err(PaymentError::RawCardNumber.into());
        }
        Some(_) => {
            return Err(RequestError::InvalidBody(
                "provider_ref: expected a string without NUL".into(),
            )
            .into());
        }
        None => {}
    }
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
