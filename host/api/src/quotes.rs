//! `POST /v1/quotes`

use axum::Extension;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use utoipa::ToSchema;

use super::error::ApiError;
use super::extract::ApiDocument;
use super::state::AppState;
use courier_core::auth::Merchant;
use courier_core::quotes::{self, Quote, QuoteContext};
use courier_domain::VehicleName;
use courier_domain::quote::QuoteRequest;

/// `POST /v1/quotes`'s body as `domain::quote::QuoteRequest::parse` reads it.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct QuoteBody {
    pickup: QuotePoint,
    dropoff: QuotePoint,
    /// Omitted means the smallest vehicle the market offers.
    vehicle: Option<VehicleName>,
    /// Selects the price bracket; default 0.
    #[schema(minimum = 0)]
    weight_grams: Option<i64>,
    /// Priced for that time; omitted means now.
    scheduled_for: Option<DateTime<Utc>>,
    /// When the parcel will be ready at the pickup, for the answer's `estimated_delivery_at`:
    /// not before now (a minute's grace) nor, for a scheduled job, before `scheduled_for`;
    /// at most the dispatch deadline after the job is due. Not kept: send it when booking.
    pickup_ready_at: Option<DateTime<Utc>>,
}

/// Coordinates are the primary locator; the postcode matters only where prices go by postcode.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct QuotePoint {
    #[schema(minimum = -90, maximum = 90)]
    latitude: f64,
    #[schema(minimum = -180, maximum = 180)]
    longitude: f64,
    postcode: Option<String>,
}

#[utoipa::path(
    post,
    path = "/quotes",
    operation_id = "createQuote",
    tag = "quotes",
    summary = "Price a delivery",
    request_body = QuoteBody,
    responses(
        (status = 201, description = "The quote; book it before it expires", body = Quote),
        (status = 422, description = "request.invalid_pickup request.invalid_dropoff request.unknown_vehicle request.invalid_weight request.invalid_scheduled_for job.scheduled_in_past request.invalid_pickup_ready_at job.pickup_ready_out_of_range pricing.origin_not_covered pricing.destination_not_covered pricing.vehicle_not_available pricing.no_route"),
        (status = 503, description = "pricing.unavailable lookup.not_ready lookup.unavailable"),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    ApiDocument(body): ApiDocument,
) -> Result<(StatusCode, Json<Quote>), ApiError> {
    let now = courier_core::infra::clock::now();
    let request = QuoteRequest::parse(&body, now)?;
    let context = QuoteContext {
        markets: &state.markets,
        price_books: &state.price_books,
        writer: &state.quote_writer,
        lifetime: state.config.quote_lifetime,
        dispatch_deadline: state.config.dispatch.deadline,
    };
    let quote = quotes::create(&context, &merchant, request, now).await?;
    Ok((StatusCode::CREATED, Json(quote)))
}
