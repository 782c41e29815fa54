//! Couriers, by operators: create (the credential is shown once), list, read, suspend,
//! reinstate. Every change is in the audit trail.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use uuid::Uuid;

use super::Operator;
use crate::api::{ApiError, ApiJson, ApiQuery, AppState};
use crate::couriers::{CourierError, CourierView, CreatedCourier, NewCourier};

fn courier_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| CourierError::NotFound.into())
}

pub async fn create(
    State(state): State<AppState>,
    Extension(operator): Extension<Operator>,
    ApiJson(body): ApiJson<NewCourier>,
) -> Result<(StatusCode, Json<CreatedCourier>), ApiError> {
    let created = state.couriers.create(&operator.name, &body).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

pub async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<HashMap<String, String>>,
) -> Result<Json<Vec<CourierView>>, ApiError> {
    let market = query.get("market").map(String::as_str);
    Ok(Json(state.couriers.list(market).await?))
}

pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<CourierView>, ApiError> {
    Ok(Json(state.couriers.get(courier_id(&id)?).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuspendBody {
    reason: Option<String>,
}

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
