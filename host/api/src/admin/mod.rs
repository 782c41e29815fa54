//! The operator API under `/admin/v1`, authenticated with a bearer token naming the operator.

mod audit;
mod bookings;
mod charges;
mod couriers;
mod jobs;
mod merchants;
mod operators;
mod payments;

mod price_books;

use std::net::IpAddr;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;

use crate::error::ApiError;
use crate::state::AppState;

use courier_core::audit::{AuditAction, AuditRecord};
use courier_core::auth::AuthError;
use courier_core::auth::operators::OperatorRefusal;
pub use courier_core::auth::operators::{Operator, OperatorTokens};

/// Price-book components arrive base64-encoded in JSON; allow for a few megabytes.
pub(crate) const UPLOAD_BODY_LIMIT: usize = 16 << 20;

/// The operator API's routes, described; [`with_operator_layers`] serves them.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(
            routes!(price_books::list, price_books::upload)
                .layer(DefaultBodyLimit::max(UPLOAD_BODY_LIMIT)),
        )
        .routes(routes!(price_books::activate))
        .routes(routes!(price_books::compare))
        .routes(routes!(charges::refund))
        .routes(routes!(couriers::create, couriers::list))
        .routes(routes!(couriers::get))
        .routes(routes!(couriers::suspend))
        .routes(routes!(couriers::reinstate))
        .routes(routes!(jobs::set_status))
        .routes(routes!(jobs::reassign))
        .routes(routes!(merchants::settings, merchants::change_settings))
        .routes(routes!(merchants::create, merchants::list))
        .routes(routes!(merchants::show))
        .routes(routes!(merchants::create_key))
        .routes(routes!(merchants::invite))
        .routes(routes!(operators::invite))
        .routes(routes!(merchants::revoke_key))
        .routes(routes!(audit::list))
        .routes(routes!(bookings::list))
        .routes(routes!(payments::mismatches))
}

/// The operator API as served: every request names its operator by token first.
pub fn with_operator_layers(state: AppState) -> Router<AppState> {
    Router::from(routes())
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
    let client = crate::middleware::client_address(&state, &request);
    match state.operators.check_from(presented, client) {
        Ok(operator) => {
            request.extensions_mut().insert(operator);
            next.run(request).await
        }
        Err(OperatorRefusal::Credentials(refusal)) => {
            record_failed_sign_in(&state, client, &refusal).await;
            ApiError::AdminAuth(refusal).into_response()
        }
        Err(OperatorRefusal::TooManyFailures(retry_after)) => {
            ApiError::RateLimited { retry_after }.into_response()
        }
    }
}

/// Puts a failed sign-in in the audit trail (at most `COURIER_OPERATOR_FAILURE_LIMIT` per
/// client address and window get this far). Never the token presented.
pub(crate) async fn record_failed_sign_in(state: &AppState, client: IpAddr, refusal: &AuthError) {
    let record = AuditRecord {
        operator: "unknown",
        action: AuditAction::SignInFailed,
        target_type: "client_address",
        target_id: client.to_string(),
        merchant_id: None,
        before: None,
        after: Some(serde_json::json!({ "refusal": match refusal {
            AuthError::Missing => "missing",
            AuthError::Malformed => "malformed",
            _ => "invalid",
        } })),
        occurred_at: courier_core::infra::clock::now(),
    };
    if let Err(error) = state.audit.record_on_its_own(&record).await {
        tracing::warn!(%error, %client, "a failed operator sign-in could not be audited");
    }
}
