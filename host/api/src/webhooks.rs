//! `/v1/webhooks`: endpoints of the credential's environment and their delivery records.

use axum::Extension;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use utoipa::ToSchema;
use uuid::Uuid;

use super::error::ApiError;
use super::extract::{ApiDocument, OptionalJson};
use super::state::AppState;
use courier_core::auth::Merchant;
use courier_core::webhooks::Owner;
use courier_core::webhooks::{DeliveryRecord, Endpoint, WebhookError};
use courier_domain::event::EventName;

fn owner(merchant: &Merchant) -> Owner {
    Owner {
        merchant_id: merchant.merchant_id,
        environment: merchant.environment,
    }
}

/// An id that is not a UUID names no endpoint: 404 like any unknown id.
fn endpoint_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| WebhookError::NotFound.into())
}

/// `POST /v1/webhooks`'s body as `Webhooks::create` reads it.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct NewEndpointBody {
    /// An absolute https URL on the public internet.
    #[schema(format = "uri")]
    url: String,
    /// Omitted, null or empty means every event.
    events: Option<Vec<EventName>>,
    /// What the merchant calls the endpoint (at most 500 characters); omitted, null or blank
    /// means none.
    description: Option<String>,
}

/// `PATCH /v1/webhooks/{id}`'s body: any of the fields, each set as given; nothing else.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct EndpointEditBody {
    /// An absolute https URL on the public internet.
    #[schema(format = "uri")]
    url: Option<String>,
    /// Null or empty means every event.
    events: Option<Vec<EventName>>,
    /// Null or blank clears it.
    description: Option<String>,
}

/// `POST /v1/webhooks/{id}/rotate-secret`'s optional body.
#[derive(Default, serde::Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateBody {
    /// How long the previous secret keeps signing beside the new one (a second `v1` entry of
    /// `Courier-Signature`), from 0 to 86400; omitted or 0: it stops at once.
    overlap_seconds: Option<serde_json::Value>,
}

impl RotateBody {
    fn overlap(&self) -> Result<std::time::Duration, WebhookError> {
        match &self.overlap_seconds {
            None | Some(serde_json::Value::Null) => Ok(std::time::Duration::ZERO),
            Some(value) => value
                .as_u64()
                .map(std::time::Duration::from_secs)
                .ok_or(WebhookError::InvalidOverlap),
        }
    }
}

#[utoipa::path(
    post,
    path = "/webhooks",
    operation_id = "createWebhookEndpoint",
    tag = "webhooks",
    summary = "Register an endpoint; its signing secret is shown only in this response",
    request_body = NewEndpointBody,
    responses(
        (status = 201, description = "The endpoint, with its signing secret", body = Endpoint),
        (status = 422, description = "webhook.invalid_url webhook.unknown_event webhook.invalid_description webhook.too_many_endpoints request.invalid_body"),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    ApiDocument(body): ApiDocument,
) -> Result<(StatusCode, Json<Endpoint>), ApiError> {
    let endpoint = state
        .webhooks
        .endpoints()
        .create(owner(&merchant), &body)
        .await?;
    Ok((StatusCode::CREATED, Json(endpoint)))
}

#[utoipa::path(
    get,
    path = "/webhooks",
    operation_id = "listWebhookEndpoints",
    tag = "webhooks",
    responses((status = 200, description = "Endpoints of the credential's environment; no secrets", body = Vec<Endpoint>))
)]
pub async fn list(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
) -> Result<Json<Vec<Endpoint>>, ApiError> {
    Ok(Json(
        state.webhooks.endpoints().list(owner(&merchant)).await?,
    ))
}

#[utoipa::path(
    get,
    path = "/webhooks/{id}/deliveries",
    operation_id = "listWebhookDeliveries",
    tag = "webhooks",
    params(("id" = Uuid, Path, description = "The endpoint's id")),
    responses(
        (status = 200, description = "The last 50 delivery records, newest first", body = Vec<DeliveryRecord>),
        (status = 404, description = "webhook.not_found"),
    )
)]
pub async fn deliveries(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
) -> Result<Json<Vec<DeliveryRecord>>, ApiError> {
    let id = endpoint_id(&id)?;
    Ok(Json(
        state
            .webhooks
            .endpoints()
            .deliveries(owner(&merchant), id)
            .await?,
    ))
}

#[utoipa::path(
    post,
    path = "/webhooks/{id}/resume",
    operation_id = "resumeWebhookEndpoint",
    tag = "webhooks",
    summary = "Send events again to a suspended endpoint; those raised meanwhile are not sent",
    params(("id" = Uuid, Path, description = "The endpoint's id")),
    responses(
        (status = 200, description = "The endpoint, active", body = Endpoint),
        (status = 404, description = "webhook.not_found"),
    )
)]
pub async fn resume(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
) -> Result<Json<Endpoint>, ApiError> {
    let id = endpoint_id(&id)?;
    Ok(Json(
        state
            .webhooks
            .endpoints()
            .resume(owner(&merchant), id)
            .await?,
    ))
}

#[utoipa::path(
    post,
    path = "/webhooks/{id}/rotate-secret",
    operation_id = "rotateWebhookSecret",
    tag = "webhooks",
    summary = "Issue a new signing secret; the old one stops at once, or after `overlap_seconds` during which both sign",
    params(("id" = Uuid, Path, description = "The endpoint's id")),
    request_body(content = Option<RotateBody>, description = "Optional; the body may be empty"),
    responses(
        (status = 200, description = "The endpoint with its new signing secret, shown only here", body = Endpoint),
        (status = 404, description = "webhook.not_found"),
        (status = 422, description = "webhook.invalid_overlap request.invalid_body"),
    )
)]
pub async fn rotate_secret(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
    OptionalJson(body): OptionalJson<RotateBody>,
) -> Result<Json<Endpoint>, ApiError> {
    let id = endpoint_id(&id)?;
    let overlap = body.overlap()?;
    Ok(Json(
        state
            .webhooks
            .endpoints()
            .rotate_secret(owner(&merchant), id, overlap)
            .await?,
    ))
}

#[utoipa::path(
    patch,
    path = "/webhooks/{id}",
    operation_id = "editWebhookEndpoint",
    tag = "webhooks",
    summary = "Change an endpoint's URL, events or description; its secret, status and deliveries stay",
    params(("id" = Uuid, Path, description = "The endpoint's id")),
    request_body = EndpointEditBody,
    responses(
        (status = 200, description = "The endpoint as it is now; no secret", body = Endpoint),
        (status = 404, description = "webhook.not_found"),
        (status = 422, description = "webhook.invalid_url webhook.unknown_event webhook.invalid_description request.invalid_body"),
    )
)]
pub async fn edit(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
    ApiDocument(body): ApiDocument,
) -> Result<Json<Endpoint>, ApiError> {
    let id = endpoint_id(&id)?;
    Ok(Json(
        state
            .webhooks
            .endpoints()
            .edit(owner(&merchant), id, &body)
            .await?,
    ))
}

#[utoipa::path(
    delete,
    path = "/webhooks/{id}",
    operation_id = "deleteWebhookEndpoint",
    tag = "webhooks",
    params(("id" = Uuid, Path, description = "The endpoint's id")),
    responses(
        (status = 204, description = "Nothing more is sent to it"),
        (status = 404, description = "webhook.not_found"),
    )
)]
pub async fn delete(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = endpoint_id(&id)?;
    state
        .webhooks
        .endpoints()
        .delete(owner(&merchant), id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
