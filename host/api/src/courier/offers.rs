//! Offers of jobs: the open ones, accepting and declining.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use super::caller::Courier;
use super::jobs::CourierJobView;
use crate::error::ApiError;
use crate::state::AppState;
use courier_core::couriers::{Earnings, OfferedRoute};
use courier_core::jobs::JobRow;
use courier_core::jobs::fulfilment::FulfilmentError;

/// An offer as the courier sees it: where to collect and deliver, not who. One job, or
/// several from one pickup (a route), accepted or declined together.
#[derive(Serialize, ToSchema)]
pub(super) struct OfferView {
    /// The id to accept or decline the offer by.
    id: Uuid,
    /// Accept before this.
    expires_at: DateTime<Utc>,
    /// The courier's estimated travel to the (first) pickup.
    travel_seconds: i32,
    /// The first job of the offer (its only one, unless it is a route).
    #[schema(value_type = OfferJob)]
    job: Value,
    /// Every job of the offer, in drop-off order.
    #[schema(value_type = Vec<OfferJob>)]
    jobs: Vec<Value>,
    /// The stops in the order to make them: the pickups, then each drop-off.
    #[schema(value_type = Vec<OfferStop>)]
    stops: Vec<Value>,
    /// What the courier earns for it, where its market says what couriers earn (so much a
    /// job and a kilometre of each job's road distance as quoted); null where it does not.
    earnings: Option<OfferEarnings>,
}

/// An amount a courier earns.
#[derive(Serialize, ToSchema)]
pub(super) struct OfferEarnings {
    /// In the currency's minor units.
    amount_minor: i64,
    /// ISO 4217.
    currency: String,
}

/// The job an offer is for, as [`offer_job`] writes it.
#[derive(ToSchema)]
#[allow(dead_code)]
pub(super) struct OfferJob {
    id: Uuid,
    reference: String,
    #[schema(value_type = courier_domain::VehicleName)]
    vehicle: String,
    pickup: OfferPlace,
    dropoff: OfferPlace,
    /// When the parcel will be ready at the pickup; null: as soon as the job is due.
    pickup_ready_at: Option<DateTime<Utc>>,
}

/// Where a stop of an offered job is: where, not who.
#[derive(ToSchema)]
#[allow(dead_code)]
pub(super) struct OfferPlace {
    latitude: f64,
    longitude: f64,
    address: String,
    postcode: Option<String>,
}

/// A stop of an offer's route.
#[derive(ToSchema)]
#[allow(dead_code)]
pub(super) struct OfferStop {
    job_id: Uuid,
    /// `pickup` or `dropoff`.
    stop: String,
    latitude: f64,
    longitude: f64,
    address: String,
    postcode: Option<String>,
}

fn place(stop: &Value) -> Value {
    json!({
        "latitude": stop["latitude"],
        "longitude": stop["longitude"],
        "address": stop["address"],
        "postcode": stop["postcode"],
    })
}

fn offer_job(job: &JobRow) -> Value {
    json!({
        "id": job.id,
        "reference": job.reference,
        "vehicle": job.vehicle,
        "pickup": place(&job.pickup),
        "dropoff": place(&job.dropoff),
        "pickup_ready_at": job.pickup_ready_at,
    })
}

/// An offered route as the courier API writes it.
fn offer_view(route: &OfferedRoute, earnings: Option<Earnings>) -> OfferView {
    let stops = route
        .stops
        .iter()
        .map(|(job, kind)| {
            let job = &route.jobs[*job];
            let mut view = place(kind.of(job));
            view["job_id"] = json!(job.id);
            view["stop"] = json!(kind.as_str());
            view
        })
        .collect();
    let jobs: Vec<Value> = route.jobs.iter().map(offer_job).collect();
    OfferView {
        id: route.id,
        expires_at: route.expires_at,
        travel_seconds: route.travel_seconds,
        job: jobs[0].clone(),
        jobs,
        stops,
        earnings: earnings.map(|e| OfferEarnings {
            amount_minor: e.amount_minor,
            currency: e.currency.code(),
        }),
    }
}

#[utoipa::path(
    get,
    path = "/offers",
    operation_id = "listCourierOffers",
    tag = "couriers",
    summary = "The courier's open offers",
    responses((status = 200, description = "Open, unexpired offers", body = Vec<OfferView>))
)]
pub(super) async fn list_offers(
    State(state): State<AppState>,
    Extension(c): Courier,
) -> Result<Json<Vec<OfferView>>, ApiError> {
    let open = state.couriers.open_offers(c.courier_id).await?;
    let earns = state.couriers.offers_earn(&c.market_id, &open).await?;
    Ok(Json(
        open.iter()
            .zip(earns)
            .map(|(route, earns)| offer_view(route, earns))
            .collect(),
    ))
}

fn offer_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| FulfilmentError::OfferNotFound.into())
}

#[utoipa::path(
    post,
    path = "/offers/{id}/accept",
    operation_id = "acceptOffer",
    tag = "couriers",
    summary = "Take the offered job, or every job of an offered route",
    description = "Every job of the offer still searching is assigned to the courier (a job the merchant cancelled meanwhile is left out). The answer is the first of them, in drop-off order; `GET /jobs` lists them all.",
    params(
        ("id" = Uuid, Path, description = "The offer's id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Optional, 1 to 255 visible characters: sent again with the same key, the move is answered as it stands and not made twice"),
    ),
    responses(
        (status = 200, description = "The (first) job, assigned to the courier", body = CourierJobView),
        (status = 404, description = "offer.not_found"),
        (status = 409, description = "offer.expired offer.not_open idempotency.key_reused"),
        (status = 422, description = "request.invalid_idempotency_key"),
    )
)]
pub(super) async fn accept_offer(
    State(state): State<AppState>,
    Extension(c): Courier,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<CourierJobView>, ApiError> {
    let jobs = state
        .fulfilment
        .accept_offer(
            c.courier_id,
            offer_id(&id)?,
            super::caller::move_key(&headers)?,
        )
        .await?;
    let first = jobs.first().ok_or(FulfilmentError::OfferNotOpen)?;
    Ok(Json(CourierJobView::from(first)))
}

#[utoipa::path(
    post,
    path = "/offers/{id}/decline",
    operation_id = "declineOffer",
    tag = "couriers",
    summary = "Turn the offered job (every job of an offered route) down; it goes to another courier",
    params(
        ("id" = Uuid, Path, description = "The offer's id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Optional, 1 to 255 visible characters: sent again with the same key, the move is answered as it stands and not made twice"),
    ),
    responses(
        (status = 204, description = "Declined"),
        (status = 404, description = "offer.not_found"),
        (status = 409, description = "offer.expired offer.not_open idempotency.key_reused"),
        (status = 422, description = "request.invalid_idempotency_key"),
    )
)]
pub(super) async fn decline_offer(
    State(state): State<AppState>,
    Extension(c): Courier,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    state
        .fulfilment
        .decline_offer(
            c.courier_id,
            offer_id(&id)?,
            super::caller::move_key(&headers)?,
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
