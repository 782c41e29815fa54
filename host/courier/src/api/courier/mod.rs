//! The courier API under `/courier/v1`, for couriers' apps: `Authorization: Bearer
//! crk_<key>.<secret>` (the credential issued when an operator creates the courier). A
//! suspended courier is refused with 403 `courier.suspended`.

use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::StatusCode;
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use super::{ApiError, ApiJson, AppState, RequestError};
use crate::couriers::{CourierIdentity, CourierView};
use crate::jobs::fulfilment::FulfilmentError;
use crate::jobs::proof::{DeliveryRequest, Proof, Requirement};
use crate::numeric::Numeric;
use crate::store::dispatch::{self as offers_store, OfferRow};
use crate::store::fulfilment as jobs_store;
use crate::store::jobs::JobRow;

pub fn routes(state: AppState) -> Router<AppState> {
    // Two files of base64 (4/3 of their size) plus the rest of the body.
    let proof_limit = state.config.dispatch.proof_max_bytes.saturating_mul(3) + (64 << 10);
    Router::new()
        .route("/me", get(me))
        .route("/online", post(go_online))
        .route("/offline", post(go_offline))
        .route("/position", post(report_position))
        .route("/offers", get(list_offers))
        .route("/offers/{id}/accept", post(accept_offer))
        .route("/offers/{id}/decline", post(decline_offer))
        .route("/jobs", get(list_jobs))
        .route("/jobs/{id}/collected", post(collected))
        .route(
            "/jobs/{id}/delivered",
            post(delivered).layer(DefaultBodyLimit::max(proof_limit)),
        )
        .route("/jobs/{id}/returned", post(returned))
        .fallback(super::middleware::route_not_found)
        .layer(axum::middleware::from_fn_with_state(state, require_courier))
}

async fn require_courier(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let header = request.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
    match state.couriers.credentials().authenticate(header).await {
        Ok(courier) => {
            request.extensions_mut().insert(courier);
            next.run(request).await
        }
        Err(e) => ApiError::CourierAuth(e).into_response(),
    }
}

type Courier = Extension<CourierIdentity>;

async fn me(
    State(state): State<AppState>,
    Extension(c): Courier,
) -> Result<Json<CourierView>, ApiError> {
    Ok(Json(state.couriers.get(c.courier_id).await?))
}

async fn go_online(
    State(state): State<AppState>,
    Extension(c): Courier,
) -> Result<Json<CourierView>, ApiError> {
    Ok(Json(state.couriers.set_online(c.courier_id, true).await?))
}

async fn go_offline(
    State(state): State<AppState>,
    Extension(c): Courier,
) -> Result<Json<CourierView>, ApiError> {
    Ok(Json(state.couriers.set_online(c.courier_id, false).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PositionBody {
    latitude: Numeric<f64>,
    longitude: Numeric<f64>,
}

#[derive(Serialize)]
struct PositionView {
    latitude: f64,
    longitude: f64,
    seen_at: DateTime<Utc>,
}

async fn report_position(
    State(state): State<AppState>,
    Extension(c): Courier,
    ApiJson(body): ApiJson<PositionBody>,
) -> Result<Json<PositionView>, ApiError> {
    let (latitude, longitude) = (body.latitude.0, body.longitude.0);
    if !courier_geo::LatLon::new(latitude, longitude).is_valid() {
        return Err(RequestError::InvalidLocation(
            "latitude and longitude must be a point on Earth".into(),
        )
        .into());
    }
    let seen_at = state
        .couriers
        .report_position(c.courier_id, latitude, longitude)
        .await?;
    Ok(Json(PositionView {
        latitude,
        longitude,
        seen_at,
    }))
}

/// An offer as the courier sees it: where to collect and deliver, not who.
#[derive(Serialize)]
struct OfferView {
    id: Uuid,
    expires_at: DateTime<Utc>,
    travel_seconds: i32,
    job: Value,
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
        }),
    }
}

async fn list_offers(
    State(state): State<AppState>,
    Extension(c): Courier,
) -> Result<Json<Vec<OfferView>>, ApiError> {
    let open = offers_store::open_offers(&state.pool, c.courier_id, crate::clock::now()).await?;
    Ok(Json(open.iter().map(|(o, j)| offer_view(o, j)).collect()))
}

fn offer_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| FulfilmentError::OfferNotFound.into())
}

fn job_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| FulfilmentError::JobNotFound.into())
}

async fn accept_offer(
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

async fn decline_offer(
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

/// A job as its courier sees it: everything needed to collect and deliver it.
#[derive(Serialize)]
struct CourierJobView {
    id: Uuid,
    reference: String,
    status: String,
    vehicle: String,
    pickup: Value,
    dropoff: Value,
    items: Value,
    proof_requirement: Value,
    assigned_at: Option<DateTime<Utc>>,
    completed_at: Option<DateTime<Utc>>,
}

impl From<&JobRow> for CourierJobView {
    fn from(job: &JobRow) -> Self {
        Self {
            id: job.id,
            reference: job.reference.clone(),
            status: job.status.clone(),
            vehicle: job.vehicle.clone(),
            pickup: job.pickup.clone(),
            dropoff: job.dropoff.clone(),
            items: job.items.clone(),
            proof_requirement: json!({
                "photo_required": job.proof_photo_required,
                "signature_required": job.proof_signature_required,
            }),
            assigned_at: job.assigned_at,
            completed_at: job.completed_at,
        }
    }
}

async fn list_jobs(
    State(state): State<AppState>,
    Extension(c): Courier,
) -> Result<Json<Vec<CourierJobView>>, ApiError> {
    let jobs = jobs_store::courier_jobs(&state.pool, c.courier_id).await?;
    Ok(Json(jobs.iter().map(CourierJobView::from).collect()))
}

async fn collected(
    State(state): State<AppState>,
    Extension(c): Courier,
    Path(id): Path<String>,
) -> Result<Json<CourierJobView>, ApiError> {
    let job = state
        .fulfilment
        .collected(c.courier_id, job_id(&id)?)
        .await?;
    Ok(Json(CourierJobView::from(&job)))
}

async fn delivered(
    State(state): State<AppState>,
    Extension(c): Courier,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<DeliveryRequest>,
) -> Result<Json<CourierJobView>, ApiError> {
    let max_bytes = state.config.dispatch.proof_max_bytes;
    let job = state
        .fulfilment
        .delivered(c.courier_id, job_id(&id)?, |job| {
            let requirement = Requirement {
                photo: job.proof_photo_required,
                signature: job.proof_signature_required,
            };
            Proof::parse(body, requirement, max_bytes, crate::clock::now())
        })
        .await?;
    Ok(Json(CourierJobView::from(&job)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReturnBody {
    reason: Option<String>,
}

async fn returned(
    State(state): State<AppState>,
    Extension(c): Courier,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ReturnBody>,
) -> Result<Json<CourierJobView>, ApiError> {
    let job = state
        .fulfilment
        .returned(c.courier_id, job_id(&id)?, body.reason.as_deref())
        .await?;
    Ok(Json(CourierJobView::from(&job)))
}
