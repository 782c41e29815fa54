//! Couriers, by operators: create (the credential is shown once), list, read, suspend,
//! reinstate. Every change is in the audit trail.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::error::ApiError;
use crate::extract::{ApiJson, ApiQuery};
use crate::state::AppState;
use courier_core::auth::operators::Operator;
use courier_core::couriers::{CourierError, CourierView, CreatedCourier, NewCourier};

fn courier_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| CourierError::NotFound.into())
}

#[utoipa::path(
    post,
    path = "/couriers",
    operation_id = "createCourier",
    tag = "admin",
    summary = "Add a courier; its credential is shown only in this response",
    request_body = NewCourier,
    responses(
        (status = 201, description = "The courier, with its credential", body = CreatedCourier),
        (status = 422, description = "courier.invalid_name courier.invalid_phone request.unknown_vehicle courier.unknown_market courier.vehicle_not_offered"),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    ApiJson(body): ApiJson<NewCourier>,
) -> Result<(StatusCode, Json<CreatedCourier>), ApiError> {
    let created = state.couriers.create(&operator.name, &body).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

#[utoipa::path(
    get,
    path = "/couriers",
    operation_id = "listCouriers",
    tag = "admin",
    summary = "Couriers, optionally of one market",
    params(("market" = Option<String>, Query, description = "Only this market's couriers")),
    responses(
        (status = 200, description = "Couriers", body = Vec<CourierView>),
        (status = 422, description = "request.invalid_query payment.raw_card_number"),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<HashMap<String, String>>,
) -> Result<Json<Vec<CourierView>>, ApiError> {
    let market = query.get("market").map(String::as_str);
    Ok(Json(state.couriers.list(market).await?))
}

#[utoipa::path(
    get,
    path = "/couriers/{id}",
    operation_id = "getCourier",
    tag = "admin",
    params(("id" = Uuid, Path, description = "The courier's id")),
    responses(
        (status = 200, description = "The courier", body = CourierView),
        (status = 404, description = "courier.not_found"),
    )
)]
pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<CourierView>, ApiError> {
    Ok(Json(state.couriers.get(courier_id(&id)?).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SuspendBody {
    /// Up to 500 characters; kept with the courier and in the audit trail.
    #[schema(max_length = 500)]
    reason: Option<String>,
}

#[utoipa::path(
    post,
    path = "/couriers/{id}/suspend",
    operation_id = "suspendCourier",
    tag = "admin",
    summary = "Suspend a courier: refused by the courier API, offline, its open offer withdrawn",
    params(("id" = Uuid, Path, description = "The courier's id")),
    request_body = SuspendBody,
    responses(
        (status = 200, description = "The courier, suspended (suspending again changes nothing)", body = CourierView),
        (status = 404, description = "courier.not_found"),
        (status = 422, description = "courier.invalid_reason"),
    )
)]
pub async fn suspend(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<SuspendBody>,
) -> Result<Json<CourierView>, ApiError> {
    let courier = state
        .couriers
        .suspend(&operator.name, courier_id(&id)?, body.reason.as_deref())
        .await?;
    Ok(Json(courier))
}

#[utoipa::path(
    post,
    path = "/couriers/{id}/reinstate",
    operation_id = "reinstateCourier",
    tag = "admin",
    summary = "Reinstate a suspended courier (offline until it goes online)",
    params(("id" = Uuid, Path, description = "The courier's id")),
    responses(
        (status = 200, description = "The courier, active", body = CourierView),
        (status = 404, description = "courier.not_found"),
    )
)]
pub async fn reinstate(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    Path(id): Path<String>,
) -> Result<Json<CourierView>, ApiError> {
    let courier = state
        .couriers
        .reinstate(&operator.name, courier_id(&id)?)
        .await?;
    Ok(Json(courier))
}
