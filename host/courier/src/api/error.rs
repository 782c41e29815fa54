//! The one place where every refusal becomes `{code, message}` with its HTTP status.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use thiserror::Error;

use crate::auth::AuthError;
use crate::markets::RoutingError;

/// Problems with the request itself, independent of any resource.
#[derive(Debug, Error)]
pub enum RequestError {
    #[error("no such route")]
    RouteNotFound,
    #[error("this route does not accept that method")]
    MethodNotAllowed,
    #[error("the body must be JSON with `Content-Type: application/json`")]
    UnsupportedMediaType,
    #[error("the body is not valid JSON: {0}")]
    MalformedJson(String),
    #[error("the body does not have the expected shape: {0}")]
    InvalidBody(String),
    #[error("the body is larger than this service accepts")]
    BodyTooLarge,
    #[error("the query string is not valid: {0}")]
    InvalidQuery(String),
    #[error("pickup: {0}")]
    InvalidPickup(String),
    #[error("drop-off: {0}")]
    InvalidDropoff(String),
    #[error("{0}")]
    InvalidLocation(String),
    #[error("{0:?} is not a vehicle; use bicycle, electric_bicycle, motorcycle, car or van")]
    UnknownVehicle(String),
    #[error("`limit` must be a whole number from 1 to {max}")]
    InvalidLimit { max: usize },
}

#[derive(Debug, Error)]
pub enum ApiError {
    #[error(transparent)]
    Auth(#[from] AuthError),
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error(transparent)]
    Routing(#[from] RoutingError),
    #[error("the database is unavailable; try again shortly")]
    DatabaseUnavailable,
    #[error("internal error")]
    Internal,
}

impl From<sqlx::Error> for ApiError {
    fn from(error: sqlx::Error) -> Self {
        match error {
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => {
                tracing::warn!(%error, "database unavailable");
                ApiError::DatabaseUnavailable
            }
            other => {
                tracing::error!(error = %other, "database error");
                ApiError::Internal
            }
        }
    }
}

impl ApiError {
    /// Status and stable code of every refusal.
    pub fn status_and_code(&self) -> (StatusCode, &'static str) {
        use RequestError as R;
        match self {
            ApiError::Auth(AuthError::Missing) => {
                (StatusCode::UNAUTHORIZED, "auth.missing_credentials")
            }
            ApiError::Auth(AuthError::Malformed) => {
                (StatusCode::UNAUTHORIZED, "auth.malformed_credentials")
            }
            ApiError::Auth(AuthError::Invalid) => {
                (StatusCode::UNAUTHORIZED, "auth.invalid_credentials")
            }
            ApiError::Auth(AuthError::Unavailable) | ApiError::DatabaseUnavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                "service.database_unavailable",
            ),
            ApiError::Request(R::RouteNotFound) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::Request(R::MethodNotAllowed) => {
                (StatusCode::METHOD_NOT_ALLOWED, "request.method_not_allowed")
            }
            ApiError::Request(R::UnsupportedMediaType) => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "request.unsupported_media_type",
            ),
            ApiError::Request(R::MalformedJson(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.malformed_json")
            }
            ApiError::Request(R::InvalidBody(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.invalid_body")
            }
            ApiError::Request(R::BodyTooLarge) => {
                (StatusCode::PAYLOAD_TOO_LARGE, "request.body_too_large")
            }
            ApiError::Request(R::InvalidQuery(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.invalid_query")
            }
            ApiError::Request(R::InvalidPickup(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.invalid_pickup")
            }
            ApiError::Request(R::InvalidDropoff(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.invalid_dropoff")
            }
            ApiError::Request(R::InvalidLocation(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.invalid_location")
            }
            ApiError::Request(R::UnknownVehicle(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.unknown_vehicle")
            }
            ApiError::Request(R::InvalidLimit { .. }) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.invalid_limit")
            }
            ApiError::Routing(error) => routing_status_and_code(error),
            ApiError::Internal => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }
}

fn routing_status_and_code(error: &RoutingError) -> (StatusCode, &'static str) {
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    match error {
        RoutingError::OriginNotCovered => (unprocessable, "pricing.origin_not_covered"),
        RoutingError::DestinationNotCovered => (unprocessable, "pricing.destination_not_covered"),
        RoutingError::VehicleNotAvailable(_) => (unprocessable, "pricing.vehicle_not_available"),
        RoutingError::NoRoute(_) => (unprocessable, "pricing.no_route"),
        RoutingError::NotReady => (StatusCode::SERVICE_UNAVAILABLE, "lookup.not_ready"),
        RoutingError::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "lookup.unavailable"),
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: &'a str,
    message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let body = ErrorBody {
            code,
            message: self.to_string(),
        };
        let mut response = (status, Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"courier\", charset=\"UTF-8\""),
            );
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_errors_leak_nothing() {
        let error = ApiError::from(sqlx::Error::RowNotFound);
        assert_eq!(error.to_string(), "internal error");
        assert_eq!(error.status_and_code().1, "internal");
    }

    #[test]
    fn unauthorised_responses_carry_a_challenge() {
        let response = ApiError::Auth(AuthError::Missing).into_response();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert!(response.headers().contains_key(header::WWW_AUTHENTICATE));
    }
}
