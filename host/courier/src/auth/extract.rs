//! `Merchant` as an axum extractor: every handler that takes one requires credentials.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use super::Merchant;
use crate::api::{ApiError, AppState};

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
