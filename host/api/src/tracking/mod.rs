//! The public tracking page: `GET /track/{token}` (HTML) and `GET /track/{token}/state`
//! (the JSON the page polls). No credentials: the unguessable token is the key. Unknown and
//! expired tokens answer alike: a 404 page, or 404 `tracking.not_found`.

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

mod page;

use super::error::ApiError;
use super::middleware::PageForPeople;
use super::state::AppState;
use courier_core::tracking;

/// The page answers HTML whatever happens: its refusals are pages for people, without a code.
#[utoipa::path(
    get,
    path = "/track/{token}",
    operation_id = "getTrackingPage",
    tag = "tracking",
    summary = "The public tracking page",
    security(()),
    params(("token" = String, Path, description = "The job's tracking token, from its tracking_url")),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 404, description = "A page for people: unknown link, or the delivery ended a while ago", content_type = "text/html", body = String),
        (status = 503, description = "A page for people: the database is unavailable, or too many lookups at once (with Retry-After)", content_type = "text/html", body = String),
        (status = 500, description = "A page for people: something failed on our side", content_type = "text/html", body = String),
    )
)]
pub async fn page(
    State(state): State<AppState>,
    token: Result<Path<String>, PathRejection>,
) -> Response {
    let found = match token {
        Ok(Path(token)) => match state.tracking_slots.try_acquire() {
            Ok(_slot) => state
                .tracking
                .state(&token, courier_core::infra::clock::now())
                .await
                .map_err(ApiError::from),
            Err(_) => Err(ApiError::Busy),
        },
        Err(_) => Ok(None),
    };
    let (status, html) = match &found {
        Ok(Some(view)) => (StatusCode::OK, page::render_page(view)),
        Ok(None) => (StatusCode::NOT_FOUND, page::render_not_found()),
        Err(e) => (e.status_and_code().0, page::render_unavailable()),
    };
    let mut response = match html {
        Ok(html) => (status, page_headers(), Html(html)).into_response(),
        Err(error) => {
            tracing::error!(%error, "rendering a tracking page failed");
            (StatusCode::INTERNAL_SERVER_ERROR, page_headers()).into_response()
        }
    };
    if matches!(found, Err(ApiError::Busy)) {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response.extensions_mut().insert(PageForPeople);
    response
}

#[utoipa::path(
    get,
    path = "/track/{token}/state",
    operation_id = "getTrackingState",
    tag = "tracking",
    summary = "What the tracking page shows, as data; the page polls it",
    security(()),
    params(("token" = String, Path, description = "The job's tracking token, from its tracking_url")),
    responses(
        (status = 200, description = "The tracked job's state: areas only, never names or phones", body = tracking::TrackingState),
        (status = 404, description = "tracking.not_found"),
        (status = 503, description = "service.database_unavailable service.busy"),
    )
)]
pub async fn state(
    State(state): State<AppState>,
    token: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let Ok(Path(token)) = token else {
        return Err(ApiError::TrackingNotFound);
    };
    let Ok(_slot) = state.tracking_slots.try_acquire() else {
        return Err(ApiError::Busy);
    };
    let view = state
        .tracking
        .state(&token, courier_core::infra::clock::now())
        .await?
        .ok_or(ApiError::TrackingNotFound)?;
    Ok((page_headers(), Json(view)).into_response())
}

/// A request path for the log: a tracking token is a key, so it is left out.
pub fn loggable_path(path: &str) -> std::borrow::Cow<'_, str> {
    match path.strip_prefix("/track/") {
        Some(rest) => {
            let after_token = rest.find('/').map_or("", |i| &rest[i..]);
            format!("/track/…{after_token}").into()
        }
        None => path.into(),
    }
}

/// The token in the address is the key: never cached, never sent on as a referrer, never
/// indexed; and nothing loads from anywhere.
fn page_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(page::content_security_policy()),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        "x-robots-tag",
        HeaderValue::from_static("noindex, nofollow"),
    );
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_stay_out_of_the_log() {
        assert_eq!(loggable_path("/track/abcDEF_-123"), "/track/…");
        assert_eq!(loggable_path("/track/abcDEF_-123/state"), "/track/…/state");
        assert_eq!(loggable_path("/v1/jobs"), "/v1/jobs");
    }
}
