//! `GET /admin/v1/bookings/unfinished`: live bookings left between their provider call and
//! their outcome, for operators to see what the recovery worker has not finished yet.

use axum::Json;
use axum::extract::State;

use crate::error::ApiError;
use crate::state::AppState;
use courier_core::jobs::booking::recovery::{self, UnfinishedBooking};

#[utoipa::path(
    get,
    path = "/bookings/unfinished",
    operation_id = "listUnfinishedBookings",
    tag = "admin",
    summary = "Bookings between their provider call and their outcome, oldest first (up to 200)",
    responses(
        (status = 200, description = "The unfinished bookings", body = [UnfinishedBooking]),
    )
)]
pub async fn list(State(state): State<AppState>) -> Result<Json<Vec<UnfinishedBooking>>, ApiError> {
    Ok(Json(recovery::unfinished(&state.booking).await?))
}
