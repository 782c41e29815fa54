//! Cross-cutting request handling: authentication of /v1, metrics, error bodies, panics.

use std::any::Any;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::StatusCode;
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{ApiError, AppState, RequestError};

/// Authenticates every /v1 request; handlers read the `Merchant` from the extensions.
pub async fn require_merchant(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let header = request.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
    match state.authenticator.authenticate(header).await {
        Ok(merchant) => {
            request.extensions_mut().insert(merchant);
            next.run(request).await
        }
        Err(e) => ApiError::from(e).into_response(),
    }
}

pub async fn route_not_found() -> ApiError {
    RequestError::RouteNotFound.into()
}

pub async fn method_not_allowed() -> ApiError {
    RequestError::MethodNotAllowed.into()
}

/// Request counts and latency by route template (never by concrete path: ids stay out).
pub async fn record_metrics(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let method = request.method().to_string();
    let started = Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    let labels = [("method", method), ("route", route), ("status", status)];
    metrics::counter!("http_requests_total", &labels).increment(1);
    metrics::histogram!("http_request_duration_seconds", &labels)
        .record(started.elapsed().as_secs_f64());
    response
}

/// Marks a response whose body is a page for people (the tracking page's "not found"):
/// [`json_errors_only`] leaves it as it is.
#[derive(Clone, Copy, Debug)]
pub struct PageForPeople;

/// A safety net: any refusal produced below the handlers (by a layer or the router) without
/// the common JSON body gets one, so clients can always branch on `code`.
pub async fn json_errors_only(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let is_page = response.extensions().get::<PageForPeople>().is_some();
    if status.as_u16() < 400 || is_json || is_page {
        return response;
    }
    let error: ApiError = match status {
        StatusCode::NOT_FOUND => RequestError::RouteNotFound.into(),
        StatusCode::METHOD_NOT_ALLOWED => RequestError::MethodNotAllowed.into(),
        StatusCode::PAYLOAD_TOO_LARGE => RequestError::BodyTooLarge.into(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => RequestError::UnsupportedMediaType.into(),
        _ => {
            tracing::error!(%status, "a refusal without an error body reached the edge");
            ApiError::Internal
        }
    };
    let mut replaced = error.into_response();
    if replaced.status() != StatusCode::INTERNAL_SERVER_ERROR {
        *replaced.status_mut() = status;
    }
    replaced
}

/// A panicking handler answers 500 `internal`; what it said goes to the log only.
pub fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response<Body> {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    tracing::error!(panic = detail, "a request handler panicked");
    ApiError::Internal.into_response()
}
