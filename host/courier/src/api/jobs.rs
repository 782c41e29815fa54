//! Jobs: `POST /v1/jobs`, `GET /v1/jobs`, `GET /v1/jobs/{id}`, `GET /v1/jobs/{id}/courier-position`,
//! `POST /v1/jobs/{id}/cancel`, `GET /v1/jobs/{id}/proof/{photo|signature}`.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::lookups::PointBody;
use super::{ApiError, ApiJson, ApiQuery, AppState, RequestError, sandbox};
use crate::auth::Merchant;
use crate::domain::JobStatus;
use crate::jobs::POSITION_FRESHNESS;
use crate::jobs::booking::{self, BookingContext};
use crate::jobs::views::{JobDetail, JobListItem};
use crate::numeric::NumericValue;
use crate::store::jobs::{self as store, ListFilter};

pub const MAX_PAGE_SIZE: i64 = 200;
const DEFAULT_PAGE_SIZE: i64 = 50;

pub async fn create(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response, ApiError> {
    let key = headers
        .get("idempotency-key")
        .map(|v| v.to_str().map_err(|_| booking::BookingError::InvalidKey))
        .transpose()?;
    let key = booking::check_key(key)?;
    let scenario = sandbox::scenario_header(&headers, &merchant)?;
    let context = BookingContext {
        pool: &state.pool,
        payments: &state.payments,
        markets: &state.markets,
        public_url: &state.config.public_url,
    };
    let response = booking::book(
        &context,
        &merchant,
        key,
        &body,
        scenario,
        crate::clock::now(),
    )
    .await?;
    let status = StatusCode::from_u16(response.status).unwrap_or(StatusCode::CREATED);
    Ok((status, Json(response.body)).into_response())
}

/// Ids in paths are UUIDs; anything else names no job (404, like an unknown one).
pub(super) fn job_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::JobNotFound)
}

pub async fn get(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
) -> Result<Json<JobDetail>, ApiError> {
    let job = store::find(
        &state.pool,
        merchant.merchant_id,
        merchant.environment,
        job_id(&id)?,
    )
    .await?
    .ok_or(ApiError::JobNotFound)?;
    Ok(Json(JobDetail::new(&job, &state.config.public_url)))
}

#[derive(Serialize)]
pub struct JobPage {
    items: Vec<JobListItem>,
    total: i64,
    page: i64,
    size: i64,
}

pub async fn list(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    ApiQuery(query): ApiQuery<HashMap<String, String>>,
) -> Result<Json<JobPage>, ApiError> {
    let statuses: Vec<&str> = match query.get("status") {
        None => Vec::new(),
        Some(raw) => raw
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                JobStatus::parse(s)
                    .map(JobStatus::as_str)
                    .ok_or_else(|| RequestError::UnknownStatus(s.to_owned()))
            })
            .collect::<Result<_, _>>()?,
    };
    let page = whole_parameter(&query, "page", 1)
        .filter(|p| *p >= 1)
        .ok_or(RequestError::InvalidPage)?;
    let size = whole_parameter(&query, "size", DEFAULT_PAGE_SIZE)
        .filter(|s| (1..=MAX_PAGE_SIZE).contains(s))
        .ok_or(RequestError::InvalidPageSize { max: MAX_PAGE_SIZE })?;
    let offset = (page - 1)
        .checked_mul(size)
        .ok_or(RequestError::InvalidPage)?;
    let filter = ListFilter {
        merchant_id: merchant.merchant_id,
        environment: merchant.environment,
        statuses: &statuses,
        from: date_time_parameter(&query, "from")?,
        to: date_time_parameter(&query, "to")?,
        limit: size,
        offset,
    };
    let (rows, total) = store::list(&state.pool, &filter).await?;
    Ok(Json(JobPage {
        items: rows.iter().map(JobListItem::from).collect(),
        total,
        page,
        size,
    }))
}

#[derive(Serialize)]
pub struct CourierPosition {
    #[serde(flatten)]
    point: PointBody,
    seen_at: DateTime<Utc>,
}

pub async fn courier_position(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let job = store::find(
        &state.pool,
        merchant.merchant_id,
        merchant.environment,
        job_id(&id)?,
    )
    .await?
    .ok_or(ApiError::JobNotFound)?;
    // Only while someone is on the job: after it ends, where its courier is concerns nobody.
    let under_way = matches!(
        JobStatus::parse(&job.status),
        Some(JobStatus::Assigned | JobStatus::InTransit)
    );
    let Some(courier_id) = job.courier_id.filter(|_| under_way) else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    let fresh_since = Utc::now() - POSITION_FRESHNESS;
    Ok(
        match store::courier_position(&state.pool, courier_id, fresh_since).await? {
            Some((latitude, longitude, seen_at)) => Json(CourierPosition {
                point: PointBody {
                    latitude,
                    longitude,
                },
                seen_at,
            })
            .into_response(),
            None => StatusCode::NO_CONTENT.into_response(),
        },
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelBody {
    reason: Option<String>,
}

/// `POST /v1/jobs/{id}/cancel` `{reason}` (optional; the body may be empty): until the job is
/// collected. Cancelling a cancelled job answers it again.
pub async fn cancel(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Json<JobDetail>, ApiError> {
    let reason = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        serde_json::from_slice::<CancelBody>(&body)
            .map_err(|e| RequestError::InvalidBody(e.to_string()))?
            .reason
    };
    let job = state
        .fulfilment
        .cancel_by_merchant(&merchant, job_id(&id)?, reason.as_deref())
        .await?;
    Ok(Json(JobDetail::new(&job, &state.config.public_url)))
}

/// `GET /v1/jobs/{id}/proof/{photo|signature}`: the file, to the job's merchant only.
pub async fn proof_file(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path((id, kind)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let job = store::find(
        &state.pool,
        merchant.merchant_id,
        merchant.environment,
        job_id(&id)?,
    )
    .await?
    .ok_or(ApiError::JobNotFound)?;
    if kind != "photo" && kind != "signature" {
        return Err(ApiError::ProofFileNotFound);
    }
    let file = crate::store::fulfilment::proof_file(&state.pool, job.id, &kind)
        .await?
        .ok_or(ApiError::ProofFileNotFound)?;
    let content_type =
        axum::http::HeaderValue::from_str(&file.content_type).map_err(|_| ApiError::Internal)?;
    Ok((
        [
            (axum::http::header::CONTENT_TYPE, content_type),
            (
                axum::http::header::CACHE_CONTROL,
                axum::http::HeaderValue::from_static("private, max-age=3600"),
            ),
            (
                axum::http::header::X_CONTENT_TYPE_OPTIONS,
                axum::http::HeaderValue::from_static("nosniff"),
            ),
        ],
        file.bytes,
    )
        .into_response())
}

pub(super) fn whole_parameter(
    query: &HashMap<String, String>,
    name: &str,
    default: i64,
) -> Option<i64> {
    match query.get(name) {
        None => Some(default),
        Some(raw) => i64::from_text(raw.trim()),
    }
}

pub(super) fn date_time_parameter(
    query: &HashMap<String, String>,
    name: &str,
) -> Result<Option<DateTime<Utc>>, RequestError> {
    query
        .get(name)
        .map(|raw| {
            DateTime::parse_from_rfc3339(raw.trim())
                .map(|at| at.with_timezone(&Utc))
                .map_err(|_| {
                    RequestError::InvalidQuery(format!(
                        "`{name}` must be an ISO 8601 date-time with an offset"
                    ))
                })
        })
        .transpose()
}
