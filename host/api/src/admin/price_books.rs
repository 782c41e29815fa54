//! Price books per market: upload (validated), list, activate (hot swap; rollback is activating
//! an earlier upload).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::error::{ApiError, RequestError};
use crate::extract::ApiJson;
use crate::state::AppState;
use courier_core::auth::operators::Operator;
use courier_core::pricing::{Activation, Comparison, UploadSummary};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadBody {
    /// The component (`.wasm`), base64.
    #[schema(content_encoding = "base64")]
    component_base64: String,
    /// The settings document the book is run with.
    #[schema(value_type = Object)]
    settings: serde_json::Value,
}

#[utoipa::path(
    post,
    path = "/markets/{market}/price-books",
    operation_id = "uploadPriceBook",
    tag = "admin",
    summary = "Upload a price book (validated before it is kept; not yet active)",
    params(("market" = String, Path, description = "The market's id")),
    request_body = UploadBody,
    responses(
        (status = 201, description = "The upload, with its version", body = UploadSummary),
        (status = 404, description = "market.not_found"),
        (status = 422, description = "request.invalid_body price_book.rejected price_book.invalid_settings"),
    )
)]
pub async fn upload(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path(market): Path<String>,
    ApiJson(body): ApiJson<UploadBody>,
) -> Result<(StatusCode, Json<UploadSummary>), ApiError> {
    let component = STANDARD
        .decode(body.component_base64.trim())
        .map_err(|e| RequestError::InvalidBody(format!("component_base64 is not base64: {e}")))?;
    let summary = state
        .price_books
        .upload(&market, component, body.settings, &operator.name)
        .await?;
    Ok((StatusCode::CREATED, Json(summary)))
}

#[utoipa::path(
    get,
    path = "/markets/{market}/price-books",
    operation_id = "listPriceBooks",
    tag = "admin",
    summary = "The market's price-book uploads",
    params(("market" = String, Path, description = "The market's id")),
    responses(
        (status = 200, description = "Every upload of the market", body = Vec<UploadSummary>),
        (status = 404, description = "market.not_found"),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    Path(market): Path<String>,
) -> Result<Json<Vec<UploadSummary>>, ApiError> {
    Ok(Json(state.price_books.list(&market).await?))
}

#[utoipa::path(
    post,
    path = "/markets/{market}/price-books/{version}/activate",
    operation_id = "activatePriceBook",
    tag = "admin",
    summary = "Make an upload the market's book in force (an earlier one: a rollback)",
    params(
        ("market" = String, Path, description = "The market's id"),
        ("version" = i32, Path, minimum = 1, description = "The upload's version; anything else is an upload that does not exist"),
    ),
    responses(
        (status = 200, description = "Activated under a new price-book version", body = Activation),
        (status = 404, description = "market.not_found price_book.version_not_found"),
    )
)]
pub async fn activate(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path((market, version)): Path<(String, String)>,
) -> Result<Json<Activation>, ApiError> {
    let version = state.price_books.parse_version(&market, &version)?;
    Ok(Json(
        state
            .price_books
            .activate(&market, version, &operator.name)
            .await?,
    ))
}

#[utoipa::path(
    get,
    path = "/markets/{market}/price-books/{version}/comparison",
    operation_id = "comparePriceBook",
    tag = "admin",
    summary = "Re-price the market's recent quotes under an upload, before activating it",
    params(
        ("market" = String, Path, description = "The market's id"),
        ("version" = i32, Path, minimum = 1, description = "The upload's version; anything else is an upload that does not exist"),
    ),
    responses(
        (status = 200, description = "How the prices would move", body = Comparison),
        (status = 404, description = "market.not_found price_book.version_not_found"),
        (status = 422, description = "price_book.rejected price_book.invalid_settings"),
    )
)]
pub async fn compare(
    State(state): State<AppState>,
    Path((market, version)): Path<(String, String)>,
) -> Result<Json<Comparison>, ApiError> {
    let version = state.price_books.parse_version(&market, &version)?;
    Ok(Json(state.price_books.compare(&market, version).await?))
}
