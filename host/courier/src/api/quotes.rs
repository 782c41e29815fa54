//! `POST /v1/quotes`

use axum::Extension;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::Value;

use super::{ApiError, ApiJson, AppState};
use crate::auth::Merchant;
use crate::domain::quote::QuoteRequest;
use crate::quotes::{self, Quote, QuoteContext};

pub async fn create(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    ApiJson(body): ApiJson<Value>,
) -> Result<(StatusCode, Json<Quote>), ApiError> {
    let now = crate::clock::now();
    let request = QuoteRequest::parse(&body, now)?;
    let context = QuoteContext {
        markets: &state.markets,
        price_books: &state.price_books,
        pool: &state.pool,
        lifetime: state.config.quote_lifetime,
    };
    let quote = quotes::create(&context, &merchant, request, now).await?;
    Ok((StatusCode::CREATED, Json(quote)))
}
