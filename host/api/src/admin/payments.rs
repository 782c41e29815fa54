//! `GET /admin/v1/payments/mismatches`: where reconciliation found the provider and our
//! records disagreeing, or a money move the provider has not answered, still open.

use axum::Json;
use axum::extract::State;

use crate::error::ApiError;
use crate::state::AppState;
use courier_core::payments::reconcile::MismatchView;

#[utoipa::path(
    get,
    path = "/payments/mismatches",
    operation_id = "listPaymentMismatches",
    tag = "admin",
    summary = "Open payment mismatches from reconciliation, newest first (up to 200)",
    responses(
        (status = 200, description = "The open mismatches", body = [MismatchView]),
    )
)]
pub async fn mismatches(
    State(state): State<AppState>,
) -> Result<Json<Vec<MismatchView>>, ApiError> {
    Ok(Json(state.payments.mismatches().await?))
}
