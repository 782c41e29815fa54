//! Cross-cutting request handling: authentication of /v1, metrics, error bodies, panics.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use axum::body::Body;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{MatchedPath, Request, State};
use axum::http::header::{AUTHORIZATION, CONNECTION, CONTENT_TYPE};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, RequestError};
use super::state::{AppState, Draining};
use courier_core::auth::AuthError;
use courier_core::auth::failures::Turn;
use courier_core::rate_limit::{Budget, Decision, whole_seconds};

/// The client's address: the peer's, or, from a trusted proxy, the one it forwarded.
pub fn client_address(state: &AppState, request: &Request) -> IpAddr {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |ConnectInfo(peer)| {
            peer.ip()
        });
    const FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
    let forwarded = request
        .headers()
        .get_all(FORWARDED_FOR)
        .iter()
        .filter_map(|value| value.to_str().ok());
    state.trusted_proxies.client_address(peer, forwarded)
}

/// Authenticates every /v1 request and spends one request of the key's budget for its kind;
/// handlers read the `Merchant` from the extensions. Every authenticated answer carries the
/// budget's `RateLimit-*` headers. A client address that used up its failed sign-ins is
/// answered 429 before any lookup, unless its credentials were verified a moment ago.
pub async fn require_merchant(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let header = request.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
    let client = client_address(&state, &request);
    let now = Instant::now();
    if let Some(retry_after) = state.auth_failures.wait(client, now)
        && !state.authenticator.verified_in_memory(header)
    {
        return paced_refusal(&state, client, retry_after).await;
    }
    let caller = match state.authenticator.verify(header).await {
        Ok(caller) => caller,
        Err(e) => {
            if e != AuthError::Unavailable {
                state.auth_failures.spend(client, now);
            }
            return ApiError::from(e).into_response();
        }
    };
    let budget = Budget::of(request.method(), request.uri().path());
    let limit = state
        .config
        .rate_limits
        .limits_for(&caller.limits)
        .of(budget);
    // The merchant's budget, spent by all its keys (test and live alike): another key adds
    // nothing.
    let decision =
        state
            .rate_limiter
            .check(caller.merchant.merchant_id, budget, limit, Instant::now());
    let mut response = if decision.allowed {
        request.extensions_mut().insert(caller.merchant);
        next.run(request).await
    } else {
        ApiError::RateLimited {
            retry_after: decision.retry_after,
        }
        .into_response()
    };
    add_rate_limit_headers(&mut response, &decision);
    response
}

/// Spends one request of the client address's budget for the public routes; past it, 429.
pub async fn limit_public(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let client = client_address(&state, &request);
    let now = Instant::now();
    if let Some(retry_after) = state.public_requests.wait(client, now) {
        return ApiError::RateLimited { retry_after }.into_response();
    }
    state.public_requests.spend(client, now);
    next.run(request).await
}

/// 429 for an address past its failed sign-ins, in its turn (`RefusalPace`).
pub async fn paced_refusal(state: &AppState, client: IpAddr, retry_after: Duration) -> Response {
    let close = match state.refusal_pace.turn(client, Instant::now()) {
        Turn::After(wait) => {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            false
        }
        Turn::Now => true,
    };
    let mut response = ApiError::RateLimited { retry_after }.into_response();
    if close {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Spends one request of the courier's budget; the refusal when it is spent.
pub(crate) fn courier_budget(state: &AppState, courier_id: uuid::Uuid) -> Decision {
    let limit = state
        .config
        .rate_limits
        .limits_for(&Default::default())
        .of(Budget::Courier);
    state
        .rate_limiter
        .check(courier_id, Budget::Courier, limit, Instant::now())
}

pub(crate) fn add_rate_limit_headers(response: &mut Response, decision: &Decision) {
    // Names made once (a name given as a string is parsed on every insert).
    const LIMIT: HeaderName = HeaderName::from_static("ratelimit-limit");
    const REMAINING: HeaderName = HeaderName::from_static("ratelimit-remaining");
    const RESET: HeaderName = HeaderName::from_static("ratelimit-reset");
    let headers = response.headers_mut();
    headers.insert(LIMIT, HeaderValue::from(decision.limit));
    headers.insert(REMAINING, HeaderValue::from(decision.remaining));
    headers.insert(RESET, HeaderValue::from(whole_seconds(decision.reset)));
}

/// While the instance drains, each HTTP/1 response closes its connection: a client that keeps
/// connections alive opens a new one, which the load balancer sends to another instance.
/// (HTTP/2 connections are told to go away when the drain period ends.)
pub async fn close_while_draining(
    State(draining): State<Draining>,
    request: Request,
    next: Next,
) -> Response {
    let http1 = request.version() < axum::http::Version::HTTP_2;
    let mut response = next.run(request).await;
    if http1 && draining.is_on() {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Abandons a request still unanswered after `limit`: 503 `service.timeout`. Dropping the
/// handler rolls back its open transaction.
pub async fn time_limit(State(limit): State<Duration>, request: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            tracing::warn!(limit_ms = limit.as_millis() as u64, "request timed out");
            ApiError::Timeout.into_response()
        }
    }
}

pub async fn route_not_found() -> ApiError {
    RequestError::RouteNotFound.into()
}

pub async fn method_not_allowed() -> ApiError {
    RequestError::MethodNotAllowed.into()
}

/// Request counts and latency by route template (never by concrete path: ids stay out).
pub async fn record_metrics(
    State(metrics): State<RequestMetrics>,
    request: Request,
    next: Next,
) -> Response {
    let route = request.extensions().get::<MatchedPath>().cloned();
    let method = courier_core::infra::telemetry::method_label(request.method());
    let started = Instant::now();
    let response = next.run(request).await;
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    let (requests, duration) = metrics.of(method, route, response.status().as_u16());
    requests.increment(1);
    duration.record(started.elapsed().as_secs_f64());
    response
}

/// The request counter and latency histogram of each method, route template and status, each
/// registered once: a metric's labels made, hashed and looked up for every request cost more
/// than the counting. Their number is bounded: routes are templates, methods and statuses few.
#[derive(Clone, Default)]
pub struct RequestMetrics(Arc<RwLock<HashMap<String, ByMethodAndStatus>>>);

type ByMethodAndStatus = HashMap<(&'static str, u16), Handles>;
type Handles = (metrics::Counter, metrics::Histogram);

impl RequestMetrics {
    fn of(&self, method: &'static str, route: &str, status: u16) -> Handles {
        let known = self.0.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(handles) = known.get(route).and_then(|by| by.get(&(method, status))) {
            return handles.clone();
        }
        drop(known);
        let labels = [
            ("method", method.to_owned()),
            ("route", route.to_owned()),
            ("status", status.to_string()),
        ];
        let handles = (
            metrics::counter!("http_requests_total", &labels),
            metrics::histogram!("http_request_duration_seconds", &labels),
        );
        self.0
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(route.to_owned())
            .or_default()
            .insert((method, status), handles.clone());
        handles
    }
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
        // axum refuses a path segment that is not UTF-8 with a bare 400: such a path names
        // nothing this service serves.
        StatusCode::BAD_REQUEST => {
            return ApiError::from(RequestError::RouteNotFound).into_response();
        }
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
