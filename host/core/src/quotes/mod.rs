//! Quotes: the only place a price is computed. A journey is located in a market, routed on
//! its road network for the vehicle, priced by the market's active price book, and kept for
//! a booking on any instance to find.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use thiserror::Error;
use uuid::Uuid;

use crate::auth::Merchant;
use crate::markets::{Market, Markets, RoutingError};
use crate::pricing::{PriceBooks, PricingError, convert};
use courier_domain::error::ErrorCode;
use courier_domain::job::ready::ReadyWindow;
use courier_domain::quote::{QuoteRequest, QuoteRequestError, Stop};
use courier_store::quotes::QuoteRow;

mod writer;
pub use writer::QuoteWriter;

#[derive(Debug, Error, ErrorCode)]
pub enum QuoteError {
    #[error(transparent)]
    #[code(via)]
    Request(#[from] QuoteRequestError),
    #[error(transparent)]
    #[code(via)]
    Routing(#[from] RoutingError),
    #[error(transparent)]
    #[code(via)]
    Pricing(#[from] PricingError),
    #[error(transparent)]
    #[code(fault)]
    Store(#[from] sqlx::Error),
}

/// One line of a price breakdown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BreakdownLine {
    pub code: String,
    pub description: String,
    pub amount_minor: i64,
}

/// A quote as the API shows it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Quote {
    pub id: Uuid,
    pub currency: String,
    pub total_amount_minor: i64,
    pub total: String,
    pub distance_metres: i32,
    pub estimated_duration_seconds: i32,
    #[schema(value_type = courier_domain::VehicleName)]
    pub vehicle: courier_domain::Vehicle,
    pub expires_at: DateTime<Utc>,
    pub breakdown: Vec<BreakdownLine>,
    pub price_book_version: i32,
    /// The ready time sent, as the job would keep it; absent when none was sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pickup_ready_at: Option<DateTime<Utc>>,
    /// When the parcel would reach the drop-off if collected when ready: the ready time plus
    /// `estimated_duration_seconds`; absent when no ready time was sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_delivery_at: Option<DateTime<Utc>>,
}

/// What creating a quote needs.
pub struct QuoteContext<'a> {
    pub markets: &'a Markets,
    pub price_books: &'a PriceBooks,
    pub writer: &'a QuoteWriter,
    pub lifetime: chrono::Duration,
    /// How long a search may last (`COURIER_DISPATCH_DEADLINE_SECS`): bounds a ready time.
    pub dispatch_deadline: chrono::Duration,
}

pub async fn create(
    context: &QuoteContext<'_>,
    merchant: &Merchant,
    request: QuoteRequest,
    now: DateTime<Utc>,
) -> Result<Quote, QuoteError> {
    let pickup_ready_at = request
        .pickup_ready_at
        .map(|at| ReadyWindow::new(now, request.scheduled_for, context.dispatch_deadline).check(at))
        .transpose()
        .map_err(QuoteRequestError::from)?;
    let market = context.markets.locate(request.pickup.point)?;
    let vehicle = request.vehicle.unwrap_or_else(|| market.smallest_vehicle());
    let route = market.route(vehicle, request.pickup.point, request.dropoff.point)?;
    let priced_for = request.scheduled_for.unwrap_or(now);
    let pickup_postcode = postcode(market, &request.pickup);
    let dropoff_postcode = postcode(market, &request.dropoff);
    // Open jobs per available courier: no courier pool exists yet, so there is no demand signal.
    let demand_permille = 0;
    let price_request = courier_plugins::PriceRequest {
        market: market.id().to_owned(),
        currency: market.definition.currency.code(),
        vehicle: convert::vehicle(vehicle),
        distance_metres: route.distance_metres,
        duration_seconds: route.duration_seconds,
        weight_grams: request.weight_grams,
        pickup_postcode: pickup_postcode.clone(),
        dropoff_postcode: dropoff_postcode.clone(),
        local_time: convert::local_time(priced_for, market.definition.timezone),
        demand_permille,
        merchant: merchant.merchant_id.to_string(),
    };
    let priced = context.price_books.price(market.id(), &price_request)?;
    let breakdown: Vec<BreakdownLine> = priced
        .lines
        .iter()
        .map(|line| BreakdownLine {
            code: line.code.as_str().to_owned(),
            description: line.description.clone(),
            amount_minor: line.amount_minor,
        })
        .collect();
    let total_amount_minor = courier_plugins::total_minor(&priced.lines);
    let row = QuoteRow {
        id: Uuid::new_v4(),
        merchant_id: merchant.merchant_id,
        environment: merchant.environment,
        market_id: market.id().to_owned(),
        currency: market.definition.currency.code(),
        vehicle,
        pickup_latitude: request.pickup.point.lat,
        pickup_longitude: request.pickup.point.lon,
        pickup_postcode,
        dropoff_latitude: request.dropoff.point.lat,
        dropoff_longitude: request.dropoff.point.lon,
        dropoff_postcode,
        weight_grams: i32::try_from(request.weight_grams).unwrap_or(i32::MAX),
        scheduled_for: request.scheduled_for,
        priced_for,
        demand_permille: i64::from(demand_permille),
        distance_metres: i32::try_from(route.distance_metres).unwrap_or(i32::MAX),
        duration_seconds: i32::try_from(route.duration_seconds).unwrap_or(i32::MAX),
        total_amount_minor,
        breakdown: serde_json::to_value(&breakdown).expect("breakdown lines serialise"),
        price_book_version: priced.price_book_version,
        created_at: now,
        expires_at: now + context.lifetime,
        used_at: None,
    };
    let quote = Quote {
        id: row.id,
        total: market.definition.currency.format(total_amount_minor),
        currency: row.currency.clone(),
        total_amount_minor,
        distance_metres: row.distance_metres,
        estimated_duration_seconds: row.duration_seconds,
        vehicle: row.vehicle,
        expires_at: row.expires_at,
        breakdown,
        price_book_version: row.price_book_version,
        pickup_ready_at,
        estimated_delivery_at: pickup_ready_at
            .map(|at| at + chrono::Duration::seconds(i64::from(row.duration_seconds))),
    };
    context.writer.write(row).await?;
    Ok(quote)
}

/// In markets priced by postcode, the postcode given, else the one found at the point.
fn postcode(market: &Market, stop: &Stop) -> Option<String> {
    if !market.definition.priced_by_postcode {
        return stop.postcode.clone();
    }
    stop.postcode.clone().or_else(|| {
        market
            .network()
            .ok()?
            .places()
            .reverse(stop.point)
            .and_then(|place| place.postcode)
    })
}
