//! Jobs: `POST /v1/jobs`, `GET /v1/jobs`, `GET /v1/jobs/{id}`, `GET /v1/jobs/{id}/courier-position`,
//! `POST /v1/jobs/{id}/cancel`, `GET /v1/jobs/{id}/proof/{photo|signature}`.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::error::{ApiError, RequestError};
use super::extract::{ApiDocument, ApiQuery, job_id};
use super::lookups::PointBody;
use super::sandbox;
use super::state::AppState;
use courier_core::auth::Merchant;
use courier_core::idempotency;
use courier_core::jobs::ListFilter;
use courier_core::jobs::POSITION_FRESHNESS;
use courier_core::jobs::booking;
use courier_core::jobs::views::{JobDetail, JobListItem, JobView};
use courier_domain::JobStatus;
use courier_domain::job::proof::ProofKind;
use courier_domain::numeric::NumericValue;

pub const MAX_PAGE_SIZE: i64 = 200;
const DEFAULT_PAGE_SIZE: i64 = 50;

/// `POST /v1/jobs`'s body as `domain::booking::BookingRequest::parse` reads it.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct BookingBody {
    /// An unexpired, unused quote of this environment.
    quote_id: Uuid,
    /// The same point that was quoted.
    pickup: ContactBody,
    /// The same point that was quoted.
    dropoff: ContactBody,
    /// Must match what the quote was priced for; omitted means now; the past is refused.
    scheduled_for: Option<DateTime<Utc>>,
    /// Omit for a parcel; listed in receipt order.
    items: Option<Vec<ItemBody>>,
    /// Omitted means none; cannot exceed the items' total.
    #[schema(minimum = 0)]
    discount_minor: Option<i64>,
    /// What the customer was billed for the goods; omitted means items less discount.
    #[schema(minimum = 0)]
    items_total_minor: Option<i64>,
    /// Text the tracking link when the courier collects; omitted means the account setting.
    notify_customer: Option<bool>,
    /// When the parcel will be ready at the pickup: not before now (a minute's grace) nor,
    /// for a scheduled job, before `scheduled_for`; at most the dispatch deadline after the
    /// job is due. Omitted means the account's `preparation_minutes` after the job is due,
    /// or none. Couriers are sent to arrive about then.
    pickup_ready_at: Option<DateTime<Utc>>,
}

/// A stop of a booking.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ContactBody {
    #[schema(minimum = -90, maximum = 90)]
    latitude: f64,
    #[schema(minimum = -180, maximum = 180)]
    longitude: f64,
    /// As the courier should read it.
    address: String,
    postcode: Option<String>,
    contact_name: String,
    /// International format advised; must be usable in the market's country.
    contact_phone: String,
    /// Free text for the courier.
    notes: Option<String>,
}

/// A line of the order, as sent.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ItemBody {
    name: String,
    #[schema(minimum = 0)]
    unit_price_minor: i64,
    #[schema(minimum = 1)]
    quantity: i32,
}

#[utoipa::path(
    post,
    path = "/jobs",
    operation_id = "bookJob",
    tag = "jobs",
    summary = "Book a delivery against a quote",
    params(
        ("Idempotency-Key" = String, Header, description = "Caller-chosen; the same key with the same body answers the first booking again"),
        ("Courier-Sandbox-Scenario" = Option<String>, Header, description = "Test environment only: how the simulated courier plays the job out"),
    ),
    request_body = BookingBody,
    responses(
        (status = 201, description = "Booked; the same key with the same body answers this again", body = JobView),
        (status = 409, description = "idempotency.key_reused idempotency.in_progress booking.abandoned"),
        (status = 422, description = "request.missing_idempotency_key request.invalid_idempotency_key quote.not_found quote.expired quote.already_used quote.stop_mismatch quote.schedule_mismatch job.scheduled_in_past request.invalid_scheduled_for request.invalid_stop order.item_invalid order.discount_exceeds_items order.invalid_amount request.invalid_notify_customer request.invalid_pickup_ready_at job.pickup_ready_out_of_range request.invalid_body payment.no_payment_method payment.card_declined payment.card_dead payment.live_unavailable sandbox.unknown_scenario sandbox.test_only"),
        (status = 503, description = "payment.provider_unreachable payment.provider_busy payment.provider_refused"),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    headers: HeaderMap,
    ApiDocument(body): ApiDocument,
) -> Result<Response, ApiError> {
    let key = idempotency::header_key(headers.get("idempotency-key").map(|v| v.as_bytes()))
        .map_err(booking::BookingError::from)?;
    let scenario = sandbox::scenario_header(&headers, &merchant)?;
    let response = booking::book(
        &state.booking,
        &merchant,
        key,
        &body,
        scenario,
        courier_core::infra::clock::now(),
    )
    .await?;
    let status = StatusCode::from_u16(response.status).unwrap_or(StatusCode::CREATED);
    Ok((status, Json(response.body)).into_response())
}

#[utoipa::path(
    get,
    path = "/jobs/{id}",
    operation_id = "getJob",
    tag = "jobs",
    params(("id" = Uuid, Path, description = "The job's id")),
    responses(
        (status = 200, description = "The job", body = JobDetail),
        (status = 404, description = "job.not_found"),
    )
)]
pub async fn get(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
) -> Result<Json<JobDetail>, ApiError> {
    let job = state
        .jobs
        .find(&merchant, job_id(&id)?)
        .await?
        .ok_or(ApiError::JobNotFound)?;
    Ok(Json(JobDetail::new(&job, &state.config.public_url())))
}

#[derive(Serialize, ToSchema)]
pub struct JobPage {
    items: Vec<JobListItem>,
    /// The matches, counted up to one more than `COURIER_JOBS_LIST_DEPTH` (10,000): that
    /// one more means "more than the list goes deep".
    total: i64,
    page: i64,
    size: i64,
}

#[utoipa::path(
    get,
    path = "/jobs",
    operation_id = "listJobs",
    tag = "jobs",
    summary = "The caller's jobs, newest first",
    params(
        ("status" = Option<String>, Query, description = "One status or several, comma-separated"),
        ("from" = Option<DateTime<Utc>>, Query, description = "Booked at or after"),
        ("to" = Option<DateTime<Utc>>, Query, description = "Booked before"),
        ("page" = Option<i64>, Query, minimum = 1, description = "From 1; default 1"),
        ("size" = Option<i64>, Query, minimum = 1, maximum = 200, description = "Up to 200; default 50"),
    ),
    responses(
        (status = 200, description = "A page of jobs", body = JobPage),
        (status = 422, description = "request.unknown_status request.invalid_page request.page_too_deep request.invalid_page_size request.invalid_query payment.raw_card_number"),
    )
)]
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
    let depth = state.config.jobs_list_depth;
    let offset = (page - 1)
        .checked_mul(size)
        .filter(|offset| *offset < i64::from(depth))
        .ok_or(RequestError::PageTooDeep { depth })?;
    let filter = ListFilter {
        merchant_id: merchant.merchant_id,
        environment: merchant.environment,
        statuses: &statuses,
        from: date_time_parameter(&query, "from")?,
        to: date_time_parameter(&query, "to")?,
        // Never past the deepest match.
        limit: size.min(i64::from(depth) - offset),
        offset,
        count_up_to: i64::from(depth) + 1,
    };
    let (rows, total) = state.jobs.list(&filter).await?;
    Ok(Json(JobPage {
        items: rows.iter().map(JobListItem::from).collect(),
        total,
        page,
        size,
    }))
}

#[derive(Serialize, ToSchema)]
pub struct CourierPosition {
    #[serde(flatten)]
    point: PointBody,
    seen_at: DateTime<Utc>,
}

#[utoipa::path(
    get,
    path = "/jobs/{id}/courier-position",
    operation_id = "getCourierPosition",
    tag = "jobs",
    params(("id" = Uuid, Path, description = "The job's id")),
    responses(
        (status = 200, description = "Where the job's courier was last seen", body = CourierPosition),
        (status = 204, description = "Nobody is on the job, or its courier has not been heard from lately"),
        (status = 404, description = "job.not_found"),
    )
)]
pub async fn courier_position(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let job = state
        .jobs
        .find(&merchant, job_id(&id)?)
        .await?
        .ok_or(ApiError::JobNotFound)?;
    // Only while someone is on the job: after it ends, where its courier is concerns nobody.
    let under_way = matches!(job.status, JobStatus::Assigned | JobStatus::InTransit);
    let Some(courier_id) = job.courier_id.filter(|_| under_way) else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    let fresh_since = Utc::now() - POSITION_FRESHNESS;
    Ok(
        match state.jobs.courier_position(courier_id, fresh_since).await? {
            Some(seen) => Json(CourierPosition {
                point: PointBody {
                    latitude: seen.latitude,
                    longitude: seen.longitude,
                },
                seen_at: seen.seen_at,
            })
            .into_response(),
            None => StatusCode::NO_CONTENT.into_response(),
        },
    )
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelBody {
    reason: Option<String>,
}

#[utoipa::path(
    post,
    path = "/jobs/{id}/cancel",
    operation_id = "cancelJob",
    tag = "jobs",
    params(("id" = Uuid, Path, description = "The job's id")),
    request_body(content = Option<CancelBody>, description = "Optional; the body may be empty"),
    responses(
        (status = 200, description = "The cancelled job", body = JobDetail),
        (status = 404, description = "job.not_found"),
        (status = 409, description = "job.not_cancellable"),
        (status = 422, description = "request.invalid_body"),
    )
)]
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
        let document = serde_json::from_slice(&body)
            .map_err(|e| RequestError::MalformedJson(e.to_string()))?;
        super::extract::from_document::<CancelBody>(document)?.reason
    };
    let job = state
        .fulfilment
        .cancel_by_merchant(&merchant, job_id(&id)?, reason.as_deref())
        .await?;
    Ok(Json(JobDetail::new(&job, &state.config.public_url())))
}

#[utoipa::path(
    get,
    path = "/jobs/{id}/proof/{kind}",
    operation_id = "getProofFile",
    tag = "jobs",
    params(
        ("id" = Uuid, Path, description = "The job's id"),
        ("kind" = String, Path, description = "`photo` or `signature`"),
    ),
    responses(
        (status = 200, description = "The file as the courier's app sent it", content(
            (String = "image/jpeg"), (String = "image/png"), (String = "image/webp")
        )),
        (status = 404, description = "job.not_found proof.not_found"),
    )
)]
/// `GET /v1/jobs/{id}/proof/{photo|signature}`: the file, to the job's merchant only.
pub async fn proof_file(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path((id, kind)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let job = state
        .jobs
        .find(&merchant, job_id(&id)?)
        .await?
        .ok_or(ApiError::JobNotFound)?;
    let kind = ProofKind::parse(&kind).ok_or(ApiError::ProofFileNotFound)?;
    let file = state
        .jobs
        .proof_file(job.id, kind)
        .await?
        .ok_or(ApiError::ProofFileNotFound)?;
    proof_file_response(&file.content_type, file.bytes).ok_or(ApiError::Internal)
}

/// A proof file as it is served (to the API and to the console alike): its own type, stored by
/// no cache (a recipient's photo and signature, like the pages, stay on no shared or
/// browser disk), never sniffed. None when the stored type is not a header value.
pub(crate) fn proof_file_response(content_type: &str, bytes: Vec<u8>) -> Option<Response> {
    use axum::http::{HeaderValue, header};
    let content_type = HeaderValue::from_str(content_type).ok()?;
    Some(
        (
            [
                (header::CONTENT_TYPE, content_type),
                (
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("private, no-store"),
                ),
                (
                    header::X_CONTENT_TYPE_OPTIONS,
                    HeaderValue::from_static("nosniff"),
                ),
            ],
            bytes,
        )
            .into_response(),
    )
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
