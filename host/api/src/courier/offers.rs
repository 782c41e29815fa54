//! Offers of jobs: the open ones, accepting and declining.

use axum::extract::{Path, State};
use axum::http::StatusCode;
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
use courier_core::dispatch::OfferRow;
use courier_core::jobs::JobRow;
use courier_core::jobs::fulfilment::FulfilmentError;

/// An offer as the courier sees it: where to collect and deliver, not who.
#[derive(Serialize, ToSchema)]
pub(super) struct OfferView {
    id: Uuid,
    /// Accept before this.
    expires_at: DateTime<Utc>,
    /// The courier's estimated travel to the pickup.
    travel_seconds: i32,
    #[schema(value_type = OfferJob)]
    job: Value,
}

/// The job an offer is for, as [`offer_view`] writes it.
#[derive(ToSchema)]
#[allow(dead_code)]
pub(super) struct OfferJob {
    id: Uuid,
    reference: String,
    #[schema(value_type = courier_domain::VehicleName)]
    vehicle: String,
    pickup: OfferStop,
    dropoff: OfferStop,
    /// When the parcel will be ready at the pickup; null: as soon as the job is due.
    pickup_ready_at: Option<DateTime<Utc>>,
}

/// A stop of an offered job: where, not who.
#[derive(ToSchema)]
#[allow(dead_code)]
pub(super) struct OfferStop {
    latitude: f64,
    longitude: f64,
    address: String,
    postcode: Option<String>,
}

fn offer_view(offer: &OfferRow, job: &JobRow) -> OfferView {
    let stop = |s: &Value| {
        json!({
            "latitude": s["latitude"],
            "longitude": s["longitude"],
            "address": s["address"],
            "postcode": s["postcode"],
        })
    };
    OfferView {
        id: offer.id,
        expires_at: offer.expires_at,
        travel_seconds: offer.travel_seconds,
        job: json!({
            "id": job.id,
            "reference": job.reference,
            "vehicle": job.vehicle,
            "pickup": stop(&job.pickup),
            "dropoff": stop(&job.dropoff),
            "pickup_ready_at": job.pickup_ready_at,
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
    Ok(Json(open.iter().map(|(o, j)| offer_view(o, j)).collect()))
}

fn offer_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| FulfilmentError::OfferNotFound.into())
}

#[utoipa::path(
    post,
    path = "/offers/{id}/accept",
    operation_id = "acceptOffer",
    tag = "couriers",
    summary = "Take the offered job",
    params(("id" = Uuid, Path, description = "The offer's id")),
    responses(
        (status = 200, description = "The job, assigned to the courier", body = CourierJobView),
        (status = 404, description = "offer.not_found"),
        (status = 409, description = "offer.expired offer.not_open"),
    )
)]
pub(super) async fn accept_offer(
    State(state): State<AppState>,
    Extension(c): Courier,
    Path(id): Path<String>,
) -> Result<Json<CourierJobView>, ApiError> {
    let job = state
        .fulfilment
        .accept_offer(c.courier_id, offer_id(&id)?)
        .await?;
    Ok(Json(CourierJobView::from(&job)))
}

#[utoipa::path(
    post,
    path = "/offers/{id}/decline",
    operation_id = "declineOffer",
    tag = "couriers",
    summary = "Turn the offered job down; it goes to the next courier",
    params(("id" = Uuid, Path, description = "The offer's id")),
    responses(
        (status = 204, description = "Declined"),
        (status = 404, description = "offer.not_found"),
        (status = 409, description = "offer.expired offer.not_open"),
    )
)]
pub(super) async fn decline_offer(
    State(state): State<AppState>,
    Extension(c): Courier,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state
        .fulfilment
        .decline_offer(c.courier_id, offer_id(&id)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
