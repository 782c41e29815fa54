//! `POST /v1/provider-events/{environment}`: the payment provider's notifications. No
//! merchant credential: the environment's payment adapter verifies the provider's signature
//! with its configured secret. Under the public routes' per-address budget, and a body limit
//! of its own.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;

use super::error::{ApiError, RequestError};
use super::state::AppState;
use courier_core::payments::events::EventsReceived;
use courier_domain::Environment;

/// The largest notification taken: a provider's notification is a few KiB.
pub const MAX_NOTIFICATION_BYTES: usize = 256 * 1024;
/// The most headers handed to the adapter; a request with more is refused.
const MAX_HEADERS: usize = 64;

#[utoipa::path(
    post,
    path = "/v1/provider-events/{environment}",
    operation_id = "receiveProviderEvents",
    tag = "payments",
    summary = "The payment provider's notifications (captures, refunds, cards stored, …), verified by the environment's adapter",
    description = "For the payment provider, not for merchants: configure it as the provider's webhook (notification) address. No credential: the environment's payment adapter checks the provider's signature with its configured secret. Each event is applied once by the provider's id, in whatever order they arrive; an event sent again answers 200 and counts among `duplicates`. Body at most 256 KiB; under the public routes' per-address budget.",
    security(()),
    params(("environment" = String, Path, description = "`test` or `live`: whose adapter verifies it")),
    request_body(content = String, description = "The provider's notification, as it sends it", content_type = "application/octet-stream"),
    responses(
        (status = 200, description = "Verified and kept; each new event applied (or kept until what it confirms is recorded)", body = EventsReceived),
        (status = 401, description = "provider_event.unverified"),
        (status = 404, description = "not_found provider_event.unsupported"),
        (status = 413, description = "request.body_too_large"),
        (status = 422, description = "payment.live_unavailable"),
        (status = 429, description = "rate_limited"),
        (status = 503, description = "payment.provider_busy service.database_unavailable"),
    )
)]
pub async fn receive(
    State(state): State<AppState>,
    Path(environment): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<EventsReceived>, ApiError> {
    let environment = Environment::parse(&environment).ok_or(RequestError::RouteNotFound)?;
    if body.len() > MAX_NOTIFICATION_BYTES || headers.len() > MAX_HEADERS {
        return Err(RequestError::BodyTooLarge.into());
    }
    // Names are lower case already; a value that is not text cannot be part of a signature.
    let headers = headers
        .iter()
        .filter_map(|(name, value)| {
            Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect();
    let received = state
        .payments
        .receive_provider_events(environment, headers, body.to_vec())
        .await?;
    Ok(Json(received))
}
