//! `/v1/webhooks`: endpoints of the credential's environment and their delivery records.

use axum::Extension;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use utoipa::ToSchema;
use uuid::Uuid;

use super::error::ApiError;
use super::extract::ApiDocument;
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
        (status = 422, description = "webhook.invalid_url webhook.unknown_event webhook.too_many_endpoints request.invalid_body"),
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
    summary = "Issue a new signing secret; the old one stops at once",
    params(("id" = Uuid, Path, description = "The endpoint's id")),
    responses(
        (status = 200, description = "The endpoint with its new signing secret, shown only here", body = Endpoint),
        (status = 404, description = "webhook.not_found"),
    )
)]
pub async fn rotate_secret(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
) -> Result<Json<Endpoint>, ApiError> {
    let id = endpoint_id(&id)?;
    Ok(Json(
        state
            .webhooks
            .endpoints()
            .rotate_secret(owner(&merchant), id)
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
