//! The one place where every refusal becomes `{code, message}` with its HTTP status.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use thiserror::Error;

use crate::auth::AuthError;

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
}

#[derive(Debug, Error)]
pub enum ApiError {
    #[error(transparent)]
    Auth(#[from] AuthError),
    #[error(transparent)]
    Request(#[from] RequestError),
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
            ApiError::Internal => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
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
