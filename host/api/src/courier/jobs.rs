//! The courier's jobs under way and their moves: collected, delivered (with proof), returned.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::{Extension, Json};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use super::caller::Courier;
use crate::error::ApiError;
use crate::extract::ApiJson;
use crate::state::AppState;
use courier_core::jobs::JobRow;
use courier_core::jobs::fulfilment::FulfilmentError;
use courier_core::jobs::views::ProofRequirement;
use courier_domain::booking::{Contact, Item};
use courier_domain::job::proof::{DeliveryRequest, Proof, Requirement};

fn job_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| FulfilmentError::JobNotFound.into())
}

/// A job as its courier sees it: everything needed to collect and deliver it.
#[derive(Serialize, ToSchema)]
pub(super) struct CourierJobView {
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
    /// When the parcel will be ready at the pickup; null: as soon as the job is due.
    pickup_ready_at: Option<DateTime<Utc>>,
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
            pickup_ready_at: job.pickup_ready_at,
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
pub(super) async fn list_jobs(
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
    params(
        ("id" = Uuid, Path, description = "The job's id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Optional, 1 to 255 visible characters: sent again with the same key, the move is answered as it stands and not made twice"),
    ),
    responses(
        (status = 200, description = "The job, in transit", body = CourierJobView),
        (status = 404, description = "job.not_found"),
        (status = 409, description = "job.invalid_transition idempotency.key_reused"),
        (status = 422, description = "request.invalid_idempotency_key"),
    )
)]
pub(super) async fn collected(
    State(state): State<AppState>,
    Extension(c): Courier,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<CourierJobView>, ApiError> {
    let job = state
        .fulfilment
        .collected(
            c.courier_id,
            job_id(&id)?,
            super::caller::move_key(&headers)?,
        )
        .await?;
    Ok(Json(CourierJobView::from(&job)))
}

/// `POST /courier/v1/jobs/{id}/delivered`'s body as `jobs::proof::Proof::parse` reads it.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub(super) struct DeliveryBody {
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
pub(super) struct ProofFileBody {
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
    params(
        ("id" = Uuid, Path, description = "The job's id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Optional, 1 to 255 visible characters: sent again with the same key, the move is answered as it stands and not made twice"),
    ),
    request_body = DeliveryBody,
    responses(
        (status = 200, description = "The job, delivered", body = CourierJobView),
        (status = 404, description = "job.not_found"),
        (status = 409, description = "job.invalid_transition idempotency.key_reused"),
        (status = 422, description = "proof.invalid_outcome proof.recipient_name_required proof.photo_required proof.signature_required proof.file_too_large proof.unsupported_content_type proof.invalid_file request.invalid_body request.invalid_idempotency_key"),
    )
)]
pub(super) async fn delivered(
    State(state): State<AppState>,
    Extension(c): Courier,
    Path(id): Path<String>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<DeliveryRequest>,
) -> Result<Json<CourierJobView>, ApiError> {
    let max_bytes = state.config.dispatch.proof_max_bytes;
    let key = super::caller::move_key(&headers)?;
    let job = state
        .fulfilment
        .delivered(c.courier_id, job_id(&id)?, key, |job| {
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
pub(super) struct ReturnBody {
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
    params(
        ("id" = Uuid, Path, description = "The job's id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Optional, 1 to 255 visible characters: sent again with the same key, the move is answered as it stands and not made twice"),
    ),
    request_body = ReturnBody,
    responses(
        (status = 200, description = "The job, returned", body = CourierJobView),
        (status = 404, description = "job.not_found"),
        (status = 409, description = "job.invalid_transition idempotency.key_reused"),
        (status = 422, description = "job.reason_required request.invalid_idempotency_key"),
    )
)]
pub(super) async fn returned(
    State(state): State<AppState>,
    Extension(c): Courier,
    Path(id): Path<String>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<ReturnBody>,
) -> Result<Json<CourierJobView>, ApiError> {
    let key = super::caller::move_key(&headers)?;
    let job = state
        .fulfilment
        .returned(c.courier_id, job_id(&id)?, body.reason.as_deref(), key)
        .await?;
    Ok(Json(CourierJobView::from(&job)))
}
