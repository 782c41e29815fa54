//! The courier and their shift: `GET /me`, going online and offline, reporting positions.

use axum::extract::State;
use axum::{Extension, Json};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::caller::Courier;
use crate::error::{ApiError, RequestError};
use crate::extract::{ApiJson, OptionalJson};
use crate::state::AppState;
use courier_core::couriers::CourierView;
use courier_domain::numeric::Numeric;

#[utoipa::path(
    get,
    path = "/me",
    operation_id = "getCourierSelf",
    tag = "couriers",
    summary = "The calling courier",
    responses((status = 200, description = "The courier", body = CourierView))
)]
pub(super) async fn me(
    State(state): State<AppState>,
    Extension(c): Courier,
) -> Result<Json<CourierView>, ApiError> {
    Ok(Json(state.couriers.get(c.courier_id).await?))
}

/// Going online; the body may be left out.
#[derive(Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct OnlineBody {
    /// The courier's app shows offers of several jobs (`jobs` and `stops` of an offer):
    /// offers may then be routes. Left out or false: one job per offer.
    #[serde(default)]
    routes: bool,
}

#[utoipa::path(
    post,
    path = "/online",
    operation_id = "goOnline",
    tag = "couriers",
    summary = "Start taking offers",
    request_body(content = Option<OnlineBody>, description = "Optional: whether offers may be routes of several jobs"),
    responses(
        (status = 200, description = "The courier, online", body = CourierView),
        (status = 422, description = "request.invalid_body"),
    )
)]
pub(super) async fn go_online(
    State(state): State<AppState>,
    Extension(c): Courier,
    OptionalJson(body): OptionalJson<OnlineBody>,
) -> Result<Json<CourierView>, ApiError> {
    Ok(Json(
        state
            .couriers
            .set_online(c.courier_id, true, body.routes)
            .await?,
    ))
}

#[utoipa::path(
    post,
    path = "/offline",
    operation_id = "goOffline",
    tag = "couriers",
    summary = "Stop taking offers; the open offer is withdrawn",
    responses((status = 200, description = "The courier, offline", body = CourierView))
)]
pub(super) async fn go_offline(
    State(state): State<AppState>,
    Extension(c): Courier,
) -> Result<Json<CourierView>, ApiError> {
    Ok(Json(
        state
            .couriers
            .set_online(c.courier_id, false, false)
            .await?,
    ))
}

/// Where the courier is; each coordinate a number or a numeric string.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct PositionBody {
    #[schema(value_type = f64, minimum = -90, maximum = 90)]
    latitude: Numeric<f64>,
    #[schema(value_type = f64, minimum = -180, maximum = 180)]
    longitude: Numeric<f64>,
}

/// The position as kept.
#[derive(Serialize, ToSchema)]
pub(super) struct PositionView {
    latitude: f64,
    longitude: f64,
    seen_at: DateTime<Utc>,
}

#[utoipa::path(
    post,
    path = "/position",
    operation_id = "reportCourierPosition",
    tag = "couriers",
    summary = "Where the courier is now",
    request_body = PositionBody,
    responses(
        (status = 200, description = "The position as kept", body = PositionView),
        (status = 422, description = "request.invalid_location"),
    )
)]
pub(super) async fn report_position(
    State(state): State<AppState>,
    Extension(c): Courier,
    ApiJson(body): ApiJson<PositionBody>,
) -> Result<Json<PositionView>, ApiError> {
    let (latitude, longitude) = (body.latitude.0, body.longitude.0);
    if !courier_geo::LatLon::new(latitude, longitude).is_valid() {
        return Err(RequestError::InvalidLocation(
            "latitude and longitude must be a point on Earth".into(),
        )
        .into());
    }
    let seen_at = state
        .couriers
        .report_position(c.courier_id, latitude, longitude)
        .await?;
    Ok(Json(PositionView {
        latitude,
        longitude,
        seen_at,
    }))
}
