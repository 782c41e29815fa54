//! The courier API under `/courier/v1`, for couriers' apps: `Authorization: Bearer
//! crk_<key>.<secret>` (the credential issued when an operator creates the courier). A
//! suspended courier is refused with 403 `courier.suspended`.

use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::StatusCode;
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;
use uuid::Uuid;

use crate::error::{ApiError, RequestError};
use crate::extract::ApiJson;
use crate::state::AppState;
use courier_core::auth::AuthError;
use courier_core::couriers::{CourierAuthError, CourierIdentity, CourierView};
use courier_core::dispatch::OfferRow;
use courier_core::jobs::JobRow;
use courier_core::jobs::fulfilment::FulfilmentError;
use courier_core::jobs::views::ProofRequirement;
use courier_domain::booking::{Contact, Item};
use courier_domain::job::proof::{DeliveryRequest, Proof, Requirement};
use courier_domain::numeric::Numeric;

/// The couriers' API routes, described; [`with_courier_layers`] serves them. Proof of
/// delivery carries files, so its route takes bodies up to `proof_body_limit`.
pub fn routes(proof_body_limit: usize) -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(me))
        .routes(routes!(go_online))
        .routes(routes!(go_offline))
        .routes(routes!(report_position))
        .routes(routes!(list_offers))
        .routes(routes!(accept_offer))
        .routes(routes!(decline_offer))
        .routes(routes!(list_jobs))
        .routes(routes!(collected))
        .routes(routes!(delivered).layer(DefaultBodyLimit::max(proof_body_limit)))
        .routes(routes!(returned))
}

/// The couriers' API as served: every request is a courier's, checked first.
pub fn with_courier_layers(state: AppState) -> Router<AppState> {
    // Two files of base64 (4/3 of their size) plus the rest of the body.
    let proof_limit = state.config.dispatch.proof_max_bytes.saturating_mul(3) + (64 << 10);
    Router::from(routes(proof_limit))
        .fallback(super::middleware::route_not_found)
        .layer(axum::middleware::from_fn_with_state(state, require_courier))
}

async fn require_courier(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let header = request.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
    // Wrong courier credentials count against the same per-address budget as the merchant
    // API's; a courier's are never cached, so past it every request waits.
    let client = crate::middleware::client_address(&state, &request);
    let now = std::time::Instant::now();
    if let Some(retry_after) = state.auth_failures.wait(client, now) {
        return crate::middleware::paced_refusal(&state, client, retry_after).await;
    }
    match state.couriers.credentials().authenticate(header).await {
        Ok(courier) => {
            request.extensions_mut().insert(courier);
            next.run(request).await
        }
        Err(e) => {
            if let CourierAuthError::Credential(
                AuthError::Missing | AuthError::Malformed | AuthError::Invalid,
            ) = e
            {
                state.auth_failures.spend(client, now);
            }
            ApiError::CourierAuth(e).into_response()
        }
    }
}

type Courier = Extension<CourierIdentity>;

#[utoipa::path(
    get,
    path = "/me",
    operation_id = "getCourierSelf",
    tag = "couriers",
    summary = "The calling courier",
    responses((status = 200, description = "The courier", body = CourierView))
)]
async fn me(
    State(state): State<AppState>,
    Extension(c): Courier,
) -> Result<Json<CourierView>, ApiError> {
    Ok(Json(state.couriers.get(c.courier_id).await?))
}

#[utoipa::path(
    post,
    path = "/online",
    operation_id = "goOnline",
    tag = "couriers",
    summary = "Start taking offers",
    responses((status = 200, description = "The courier, online", body = CourierView))
)]
async fn go_online(
    State(state): State<AppState>,
    Extension(c): Courier,
) -> Result<Json<CourierView>, ApiError> {
    Ok(Json(state.couriers.set_online(c.courier_id, true).await?))
}

#[utoipa::path(
    post,
    path = "/offline",
    operation_id = "goOffline",
    tag = "couriers",
    summary = "Stop taking offers; the open offer is withdrawn",
    responses((status = 200, description = "The courier, offline", body = CourierView))
)]
async fn go_offline(
    State(state): State<AppState>,
    Extension(c): Courier,
) -> Result<Json<CourierView>, ApiError> {
    Ok(Json(state.couriers.set_online(c.courier_id, false).await?))
}

/// Where the courier is; each coordinate a number or a numeric string.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct PositionBody {
    #[schema(value_type = f64, minimum = -90, maximum = 90)]
    latitude: Numeric<f64>,
    #[schema(value_type = f64, minimum = -180, maximum = 180)]
    longitude: Numeric<f64>,
}

/// The position as kept.
#[derive(Serialize, ToSchema)]
struct PositionView {
    latitude: f64,
    longitude: f64,
    seen_at: DateTime<Utc>,
}

#[utoipa::path(
    post,
    path = "/position",
    operation_id = "reportCourierPosition",
    tag = "couriers",
    summary = "Where the courier is now",
    request_body = PositionBody,
    responses(
        (status = 200, description = "The position as kept", body = PositionView),
        (status = 422, description = "request.invalid_location"),
    )
)]
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
#[derive(Serialize, ToSchema)]
struct OfferView {
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
struct OfferJob {
    id: Uuid,
    reference: String,
    #[schema(value_type = courier_domain::VehicleName)]
    vehicle: String,
    pickup: OfferStop,
    dropoff: OfferStop,
}

/// A stop of an offered job: where, not who.
#[derive(ToSchema)]
#[allow(dead_code)]
struct OfferStop {
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
async fn list_offers(
    State(state): State<AppState>,
    Extension(c): Courier,
) -> Result<Json<Vec<OfferView>>, ApiError> {
    let open = state.couriers.open_offers(c.courier_id).await?;
    Ok(Json(open.iter().map(|(o, j)| offer_view(o, j)).collect()))
}

fn offer_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| FulfilmentError::OfferNotFound.into())
}

fn job_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| FulfilmentError::JobNotFound.into())
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
#[derive(Serialize, ToSchema)]
struct CourierJobView {
    id: Uuid,
    reference: String,
    #[schema(value_type = courier_domain::JobStatus)]
    status: courier_domain::JobStatus,
    #[schema(value_type = courier_domain::VehicleName)]
    vehicle: courier_domain::Vehicle,
    #[schema(value_type = Contact)]
    pickup: Value,
    #[schema(value_type = Contact)]
    dropoff: Value,
    /// Empty for a parcel.
    #[schema(value_type = Vec<Item>)]
    items: Value,
    /// What the delivery must come with.
    #[schema(value_type = ProofRequirement)]
    proof_requirement: Value,
    assigned_at: Option<DateTime<Utc>>,
    completed_at: Option<DateTime<Utc>>,
}

impl From<&JobRow> for CourierJobView {
    fn from(job: &JobRow) -> Self {
        Self {
            id: job.id,
            reference: job.reference.clone(),
            status: job.status,
            vehicle: job.vehicle,
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

#[utoipa::path(
    get,
    path = "/jobs",
    operation_id = "listCourierJobs",
    tag = "couriers",
    summary = "The courier's jobs under way",
    responses((status = 200, description = "The jobs", body = Vec<CourierJobView>))
)]
async fn list_jobs(
    State(state): State<AppState>,
    Extension(c): Courier,
) -> Result<Json<Vec<CourierJobView>>, ApiError> {
    let jobs = state.couriers.jobs_under_way(c.courier_id).await?;
    Ok(Json(jobs.iter().map(CourierJobView::from).collect()))
}

#[utoipa::path(
    post,
    path = "/jobs/{id}/collected",
    operation_id = "markJobCollected",
    tag = "couriers",
    summary = "The courier has the goods: the job is in transit",
    params(("id" = Uuid, Path, description = "The job's id")),
    responses(
        (status = 200, description = "The job, in transit", body = CourierJobView),
        (status = 404, description = "job.not_found"),
        (status = 409, description = "job.invalid_transition"),
    )
)]
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

/// `POST /courier/v1/jobs/{id}/delivered`'s body as `jobs::proof::Proof::parse` reads it.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct DeliveryBody {
    #[schema(value_type = courier_domain::job::proof::DeliveryOutcome)]
    outcome: String,
    /// Required when the outcome is a handover; at most 200 characters.
    #[schema(max_length = 200)]
    recipient_name: Option<String>,
    /// At most 1000 characters.
    #[schema(max_length = 1000)]
    note: Option<String>,
    /// Required when the job's proof requirement asks for a photo.
    photo: Option<ProofFileBody>,
    /// Required when the job's proof requirement asks for a signature.
    signature: Option<ProofFileBody>,
}

/// A file of the proof: an image, checked against its first bytes.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ProofFileBody {
    #[schema(value_type = courier_domain::job::proof::ProofContentType)]
    content_type: String,
    /// Standard base64 of the file; at most the service's proof file size once decoded.
    #[schema(content_encoding = "base64")]
    data: String,
}

#[utoipa::path(
    post,
    path = "/jobs/{id}/delivered",
    operation_id = "markJobDelivered",
    tag = "couriers",
    summary = "Handed over, with proof of delivery",
    params(("id" = Uuid, Path, description = "The job's id")),
    request_body = DeliveryBody,
    responses(
        (status = 200, description = "The job, delivered", body = CourierJobView),
        (status = 404, description = "job.not_found"),
        (status = 409, description = "job.invalid_transition"),
        (status = 422, description = "proof.invalid_outcome proof.recipient_name_required proof.photo_required proof.signature_required proof.file_too_large proof.unsupported_content_type proof.invalid_file request.invalid_body"),
    )
)]
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
            Proof::parse(
                body,
                requirement,
                max_bytes,
                courier_core::infra::clock::now(),
            )
        })
        .await?;
    Ok(Json(CourierJobView::from(&job)))
}

/// Why the goods came back.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ReturnBody {
    /// 1 to 500 characters, surrounding blanks not counted.
    #[schema(value_type = String, required = true, min_length = 1, max_length = 500)]
    reason: Option<String>,
}

#[utoipa::path(
    post,
    path = "/jobs/{id}/returned",
    operation_id = "markJobReturned",
    tag = "couriers",
    summary = "Brought back to the pickup, with the reason",
    params(("id" = Uuid, Path, description = "The job's id")),
    request_body = ReturnBody,
    responses(
        (status = 200, description = "The job, returned", body = CourierJobView),
        (status = 404, description = "job.not_found"),
        (status = 409, description = "job.invalid_transition"),
        (status = 422, description = "job.reason_required"),
    )
)]
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
