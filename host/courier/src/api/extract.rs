//! Extractors whose rejections are `ApiError`s, so malformed input gets the common error body.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::error::{ApiError, RequestError};

/// `axum::Json` with the service's refusals.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(json_rejection(rejection).into()),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> RequestError {
    match rejection {
        JsonRejection::MissingJsonContentType(_) => RequestError::UnsupportedMediaType,
        JsonRejection::JsonDataError(e) => RequestError::InvalidBody(e.body_text()),
        JsonRejection::JsonSyntaxError(e) => RequestError::MalformedJson(e.body_text()),
        JsonRejection::BytesRejection(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            RequestError::BodyTooLarge
        }
        other => RequestError::MalformedJson(other.body_text()),
    }
}

/// `axum::extract::Query` with the service's refusals.
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(Self(value)),
            Err(rejection) => Err(query_rejection(rejection).into()),
        }
    }
}

fn query_rejection(rejection: QueryRejection) -> RequestError {
    RequestError::InvalidQuery(rejection.body_text())
}
