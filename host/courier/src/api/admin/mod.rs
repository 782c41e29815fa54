//! The operator API under `/admin/v1`, authenticated with a bearer token.

mod couriers;
mod jobs;
mod merchants;
mod price_books;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use subtle::ConstantTimeEq;

use super::{ApiError, AppState};
use crate::auth::AuthError;

/// Price-book components arrive base64-encoded in JSON; allow for a few megabytes.
const UPLOAD_BODY_LIMIT: usize = 16 << 20;

/// The operator behind an admin request, for the records.
#[derive(Clone, Debug)]
pub struct Operator {
    pub name: String,
}

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
        .fallback(super::middleware::route_not_found)
        .layer(axum::middleware::from_fn_with_state(
            state,
            require_operator,
        ))
}

/// `Authorization: Bearer <COURIER_ADMIN_TOKEN>`. With no token configured the API is closed.
async fn require_operator(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .map(|v| v.as_bytes().to_vec());
    match check_token(state.config.admin_token.as_deref(), presented.as_deref()) {
        Ok(operator) => {
            request.extensions_mut().insert(operator);
            next.run(request).await
        }
        Err(e) => ApiError::AdminAuth(e).into_response(),
    }
}

fn check_token(configured: Option<&str>, header: Option<&[u8]>) -> Result<Operator, AuthError> {
    let header = header.ok_or(AuthError::Missing)?;
    let header = std::str::from_utf8(header).map_err(|_| AuthError::Malformed)?;
    let (scheme, token) = header.trim().split_once(' ').ok_or(AuthError::Malformed)?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(AuthError::Malformed);
    }
    let configured = configured.ok_or(AuthError::Invalid)?;
    if bool::from(token.trim().as_bytes().ct_eq(configured.as_bytes())) {
        Ok(Operator {
            name: "admin".to_owned(),
        })
    } else {
        Err(AuthError::Invalid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configured_bearer_token_is_required() {
        let ok = check_token(Some("s3cret"), Some(b"Bearer s3cret"));
        assert_eq!(ok.unwrap().name, "admin");
        assert_eq!(
            check_token(Some("s3cret"), None).unwrap_err(),
            AuthError::Missing
        );
        assert_eq!(
            check_token(Some("s3cret"), Some(b"Basic s3cret")).unwrap_err(),
            AuthError::Malformed
        );
        assert_eq!(
            check_token(Some("s3cret"), Some(b"Bearer s3cre")).unwrap_err(),
            AuthError::Invalid
        );
        // No token configured: closed to everyone.
        assert_eq!(
            check_token(None, Some(b"Bearer x")).unwrap_err(),
            AuthError::Invalid
        );
    }
}
