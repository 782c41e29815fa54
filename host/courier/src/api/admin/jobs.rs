//! Jobs, by operators: set the status by hand with a reason, put another courier on a job.

use axum::extract::{Path, State};
use axum::{Extension, Json};
use serde::Deserialize;
use uuid::Uuid;

use super::Operator;
use crate::api::{ApiError, ApiJson, AppState, RequestError};
use crate::domain::JobStatus;
use crate::jobs::fulfilment::FulfilmentError;
use crate::jobs::views::JobDetail;

fn job_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| FulfilmentError::JobNotFound.into())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusBody {
    status: String,
    reason: Option<String>,
}

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
    Ok(Json(JobDetail::new(&job, &state.config.public_url)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReassignBody {
    courier_id: String,
}

/// `POST /admin/v1/jobs/{id}/reassign` `{courier_id}`.
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
        .reassign(&operator.name, job_id(&id)?, courier_id)
        .await?;
    Ok(Json(JobDetail::new(&job, &state.config.public_url)))
}
