//! Extractors whose rejections are `ApiError`s, so malformed input gets the common error body.

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use courier_domain::charge::{contains_card_number, json_contains_card_number};
use serde::de::DeserializeOwned;
use serde_json::Value;

use axum::http::header::AUTHORIZATION;
use uuid::Uuid;

use super::error::{ApiError, RequestError};
use super::state::AppState;
use courier_core::auth::Merchant;

/// Every handler that takes a `Merchant` requires credentials.
impl FromRequestParts<AppState> for Merchant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        // The /v1 middleware has usually verified the caller already.
        if let Some(merchant) = parts.extensions.get::<Merchant>() {
            return Ok(*merchant);
        }
        let header = parts.headers.get(AUTHORIZATION).map(|v| v.as_bytes());
        Ok(state.authenticator.authenticate(header).await?)
    }
}

/// A job id from a path. Ids in paths are UUIDs; anything else names no job (404, like an
/// unknown one).
pub fn job_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::JobNotFound)
}

/// `axum::Json` with the service's refusals: the body as a document ([`ApiDocument`]), then
/// as `T`.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let ApiDocument(document) = ApiDocument::from_request(req, state).await?;
        Ok(Self(shaped(document)?))
    }
}

/// [`ApiJson`] for a body that may be left out: an empty body (whatever its content type
/// says) is `T::default()`.
pub struct OptionalJson<T>(pub T);

impl<S, T> FromRequest<S> for OptionalJson<T>
where
    T: DeserializeOwned + Default,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let json = is_json(req.headers());
        let body = Bytes::from_request(req, state).await.map_err(|rejection| {
            match rejection.status() {
                StatusCode::PAYLOAD_TOO_LARGE => RequestError::BodyTooLarge,
                _ => RequestError::MalformedJson(rejection.body_text()),
            }
        })?;
        if body.trim_ascii().is_empty() {
            return Ok(Self(T::default()));
        }
        if !json {
            return Err(RequestError::UnsupportedMediaType.into());
        }
        Ok(Self(from_document(parse_json(&body)?)?))
    }
}

/// A JSON body as a document, for handlers that read its fields themselves. Parsed once, with
/// no path kept (a syntax error has its line and column); PostgreSQL text cannot hold NUL, so
/// it is refused here and never reaches a query; a card number is refused before anything
/// could quote it.
pub struct ApiDocument(pub Value);

impl<S: Send + Sync> FromRequest<S> for ApiDocument {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let UnscannedDocument(document) = UnscannedDocument::from_request(req, state).await?;
        Ok(Self(checked(document)?))
    }
}

/// A JSON body as a document that may hold a card number in a field the handler checks
/// itself (a card reference whose provider writes references as digits). The handler must scan
/// every other field with [`from_document`] before it reads anything.
pub struct UnscannedDocument(pub Value);

impl<S: Send + Sync> FromRequest<S> for UnscannedDocument {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json(req.headers()) {
            return Err(RequestError::UnsupportedMediaType.into());
        }
        let body = Bytes::from_request(req, state).await.map_err(|rejection| {
            match rejection.status() {
                StatusCode::PAYLOAD_TOO_LARGE => RequestError::BodyTooLarge,
                _ => RequestError::MalformedJson(rejection.body_text()),
            }
        })?;
        Ok(Self(parse_json(&body)?))
    }
}

/// A body parsed as JSON, or why it is not.
pub fn parse_json(body: &[u8]) -> Result<Value, RequestError> {
    serde_json::from_slice(body).map_err(|e| {
        RequestError::MalformedJson(format!("Failed to parse the request body as JSON: {e}"))
    })
}

/// `application/json`, or a type of the `+json` family, as `axum::Json` accepts.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<mime::Mime>().ok())
        .is_some_and(|mime| {
            mime.type_() == "application"
                && (mime.subtype() == "json" || mime.suffix().is_some_and(|name| name == "json"))
        })
}

/// A parsed JSON body as `T`, with the checks of [`ApiDocument`].
pub fn from_document<T: DeserializeOwned>(document: Value) -> Result<T, RequestError> {
    shaped(checked(document)?)
}

/// The document, unless it holds NUL or a card number.
fn checked(document: Value) -> Result<Value, RequestError> {
    if holds_nul(&document) {
        return Err(RequestError::InvalidBody(NUL_REFUSAL.into()));
    }
    if json_contains_card_number(&document) {
        return Err(RequestError::CardNumber);
    }
    Ok(document)
}

/// A checked document as `T`; shape errors name where in the body they are.
fn shaped<T: DeserializeOwned>(document: Value) -> Result<T, RequestError> {
    serde_path_to_error::deserialize(document).map_err(|e| {
        let path = e.path().to_string();
        RequestError::InvalidBody(if path == "." {
            e.inner().to_string()
        } else {
            format!("{path}: {}", e.inner())
        })
    })
}

const NUL_REFUSAL: &str = "text may not contain the NUL character (\\u0000)";

fn holds_nul(value: &Value) -> bool {
    match value {
        Value::String(text) => text.contains('\0'),
        Value::Array(items) => items.iter().any(holds_nul),
        Value::Object(fields) => fields
            .iter()
            .any(|(name, field)| name.contains('\0') || holds_nul(field)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
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
        let query = parts.uri.query().unwrap_or_default().as_bytes();
        for (name, value) in form_urlencoded::parse(query) {
            if name.contains('\0') || value.contains('\0') {
                return Err(RequestError::InvalidQuery(NUL_REFUSAL.into()).into());
            }
            if contains_card_number(&name) || contains_card_number(&value) {
                return Err(RequestError::CardNumber.into());
            }
        }
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(Self(value)),
            Err(rejection) => Err(query_rejection(rejection).into()),
        }
    }
}

fn query_rejection(rejection: QueryRejection) -> RequestError {
    RequestError::InvalidQuery(rejection.body_text())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::holds_nul;

    #[test]
    fn nul_is_found_in_any_string_or_name() {
        assert!(!holds_nul(
            &json!({"name": "Ada", "items": [{"n": 1}], "ok": true})
        ));
        assert!(holds_nul(&json!({"name": "A\u{0}da"})));
        assert!(holds_nul(&json!({"items": [{"name": ["x", "\u{0}"]}]})));
        assert!(holds_nul(&json!({"na\u{0}me": 1})));
    }
}
