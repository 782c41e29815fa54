//! The courier API under `/courier/v1`, for couriers' apps: `Authorization: Bearer
//! crk_<key>.<secret>` (the credential issued when an operator creates the courier). A
//! suspended courier is refused with 403 `courier.suspended`. Each move of an offer or a job
//! may carry an `Idempotency-Key`: sent again with it, the move is answered, not made twice.
//! Each courier has a budget of requests (`COURIER_RATE_LIMIT_COURIER_PER_MINUTE`), its app's
//! included; past it, 429 `rate_limited` with `Retry-After`.

mod caller;
mod jobs;
mod offers;
mod shift;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;

use crate::error::ApiError;
use crate::state::AppState;
use courier_core::auth::AuthError;
use courier_core::couriers::CourierAuthError;

/// The couriers' API routes, described; [`with_courier_layers`] serves them. Proof of
/// delivery carries files, so its route takes bodies up to `proof_body_limit`.
pub fn routes(proof_body_limit: usize) -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(shift::me))
        .routes(routes!(shift::go_online))
        .routes(routes!(shift::go_offline))
        .routes(routes!(shift::report_position))
        .routes(routes!(offers::list_offers))
        .routes(routes!(offers::accept_offer))
        .routes(routes!(offers::decline_offer))
        .routes(routes!(jobs::list_jobs))
        .routes(routes!(jobs::collected))
        .routes(routes!(jobs::delivered).layer(DefaultBodyLimit::max(proof_body_limit)))
        .routes(routes!(jobs::returned))
}

/// The couriers' API as served: every request is a courier's, checked first.
pub fn with_courier_layers(state: AppState) -> Router<AppState> {
    // Two files of base64 (4/3 of their size) plus the rest of the body.
    let proof_limit = state.config.dispatch.proof_max_bytes.saturating_mul(3) + (64 << 10);
    Router::from(routes(proof_limit))
        .fallback(super::middleware::route_not_found)
        .layer(axum::middleware::from_fn_with_state(state, require_courier))
}

async fn require_courier(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let header = request.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
    // Wrong courier credentials count against the same per-address budget as the merchant
    // API's; a courier's are never cached, so past it every request waits.
    let client = crate::middleware::client_address(&state, &request);
    let now = std::time::Instant::now();
    if let Some(retry_after) = state.auth_failures.wait(client, now) {
        return crate::middleware::paced_refusal(&state, client, retry_after).await;
    }
    match state.couriers.credentials().authenticate(header).await {
        Ok(courier) => {
            let decision = crate::middleware::courier_budget(&state, courier.courier_id);
            let mut response = if decision.allowed {
                request.extensions_mut().insert(courier);
                next.run(request).await
            } else {
                ApiError::RateLimited {
                    retry_after: decision.retry_after,
                }
                .into_response()
            };
            crate::middleware::add_rate_limit_headers(&mut response, &decision);
            response
        }
        Err(e) => {
            if let CourierAuthError::Credential(
                AuthError::Missing | AuthError::Malformed | AuthError::Invalid,
            ) = e
            {
                state.auth_failures.spend(client, now);
            }
            ApiError::CourierAuth(e).into_response()
        }
    }
}
