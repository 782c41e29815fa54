//! The operator API under `/admin/v1`, authenticated with a bearer token naming the operator.

mod audit;
mod couriers;
mod jobs;
mod merchants;
mod operators;
mod price_books;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::{ApiError, AppState};

pub use operators::{Operator, OperatorTokens};

/// Price-book components arrive base64-encoded in JSON; allow for a few megabytes.
const UPLOAD_BODY_LIMIT: usize = 16 << 20;

pub fn routes(state: AppState) -> Router<AppState> {
    Router::new()
        .route(
            "/markets/{market}/price-books",
            get(price_books::list)
                .post(price_books::upload)
                .layer(DefaultBodyLimit::max(UPLOAD_BODY_LIMIT)),
        )
        .route(
            "/markets/{market}/price-books/{version}/activate",
            post(price_books::activate),
        )
        .route(
            "/markets/{market}/price-books/{version}/comparison",
            get(price_books::compare),
        )
        .route("/charges/{id}/refund", post(super::charges::refund))
        .route("/couriers", post(couriers::create).get(couriers::list))
        .route("/couriers/{id}", get(couriers::get))
        .route("/couriers/{id}/suspend", post(couriers::suspend))
        .route("/couriers/{id}/reinstate", post(couriers::reinstate))
        .route("/jobs/{id}/status", post(jobs::set_status))
        .route("/jobs/{id}/reassign", post(jobs::reassign))
        .route(
            "/merchants/{id}/settings",
            get(merchants::settings).patch(merchants::change_settings),
        )
        .route("/merchants", post(merchants::create).get(merchants::list))
        .route("/merchants/{id}", get(merchants::show))
        .route("/merchants/{id}/keys", post(merchants::create_key))
        .route("/keys/{key}/revoke", post(merchants::revoke_key))
        .route("/audit", get(audit::list))
        .fallback(super::middleware::route_not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.config.request_timeout,
            super::middleware::time_limit,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state,
            require_operator,
        ))
}

/// `Authorization: Bearer <token>`: `COURIER_ADMIN_TOKEN` (operator "admin") or one of the
/// named `COURIER_OPERATOR_TOKENS`. With no token configured the API is closed.
async fn require_operator(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let presented = request.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
    match state.operators.check(presented) {
        Ok(operator) => {
            request.extensions_mut().insert(operator);
            next.run(request).await
        }
        Err(e) => ApiError::AdminAuth(e).into_response(),
    }
}
