//! Jobs, by operators: set the status by hand with a reason, put another courier on a job.

use axum::extract::{Path, State};
use axum::{Extension, Json};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::error::{ApiError, RequestError};
use crate::extract::ApiJson;
use crate::state::AppState;
use courier_core::auth::operators::Operator;
use courier_core::jobs::fulfilment::FulfilmentError;
use courier_core::jobs::views::JobDetail;
use courier_domain::JobStatus;

fn job_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| FulfilmentError::JobNotFound.into())
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusBody {
    /// Only moves an operator may make from the job's status are accepted.
    #[schema(value_type = courier_domain::JobStatus)]
    status: String,
    /// Required: 1 to 500 characters.
    #[schema(value_type = String, required = true, min_length = 1, max_length = 500)]
    reason: Option<String>,
}

#[utoipa::path(
    post,
    path = "/jobs/{id}/status",
    operation_id = "setJobStatus",
    tag = "admin",
    summary = "Set a job's status by hand, with a reason",
    params(("id" = Uuid, Path, description = "The job's id")),
    request_body = StatusBody,
    responses(
        (status = 200, description = "The job after the move", body = JobDetail),
        (status = 404, description = "job.not_found"),
        (status = 409, description = "job.invalid_transition"),
        (status = 422, description = "request.unknown_status job.reason_required"),
    )
)]
/// `POST /admin/v1/jobs/{id}/status` `{status, reason}`.
pub async fn set_status(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<StatusBody>,
) -> Result<Json<JobDetail>, ApiError> {
    let to = JobStatus::parse(body.status.trim())
        .ok_or_else(|| RequestError::UnknownStatus(body.status.clone()))?;
    let job = state
        .fulfilment
        .set_status_by_hand(&operator.name, job_id(&id)?, to, body.reason.as_deref())
        .await?;
    Ok(Json(JobDetail::new(&job, &state.config.public_url())))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReassignBody {
    /// An active courier of the job's market; anything else than a courier's id is not found.
    #[schema(value_type = Uuid)]
    courier_id: String,
    /// Why, for the audit trail (at most 500 characters).
    #[serde(default)]
    reason: Option<String>,
}

#[utoipa::path(
    post,
    path = "/jobs/{id}/reassign",
    operation_id = "reassignJob",
    tag = "admin",
    summary = "Put another courier on a searching, assigned or in-transit job",
    params(("id" = Uuid, Path, description = "The job's id")),
    request_body = ReassignBody,
    responses(
        (status = 200, description = "The job with its new courier (a searching job is assigned)", body = JobDetail),
        (status = 404, description = "job.not_found courier.not_found"),
        (status = 409, description = "job.invalid_transition"),
        (status = 422, description = "courier.not_available job.reason_required"),
    )
)]
/// `POST /admin/v1/jobs/{id}/reassign` `{courier_id, reason?}`.
pub async fn reassign(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ReassignBody>,
) -> Result<Json<JobDetail>, ApiError> {
    let courier_id =
        Uuid::parse_str(body.courier_id.trim()).map_err(|_| FulfilmentError::CourierNotFound)?;
    let job = state
        .fulfilment
        .reassign(
            &operator.name,
            job_id(&id)?,
            courier_id,
            body.reason.as_deref(),
        )
        .await?;
    Ok(Json(JobDetail::new(&job, &state.config.public_url())))
}
