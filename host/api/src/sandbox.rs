//! The sandbox's own endpoints, for test keys only (a live key finds no such route):
//! `GET /v1/sandbox/jobs/{id}`, `POST /v1/sandbox/jobs/{id}/scenario`,
//! `POST /v1/sandbox/jobs/{id}/advance`; and the `Courier-Sandbox-Scenario` booking header.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::{Extension, Json};
use serde::Deserialize;
use utoipa::ToSchema;

use super::error::{ApiError, RequestError};
use super::extract::{ApiJson, job_id};
use super::state::AppState;
use courier_core::auth::Merchant;
use courier_core::sandbox::{RunView, SandboxError};
use courier_domain::Environment;
use courier_domain::sandbox::Scenario;

pub const SCENARIO_HEADER: &str = "courier-sandbox-scenario";

/// The scenario a booking asks for, if any; only test keys may ask.
pub fn scenario_header(
    headers: &HeaderMap,
    merchant: &Merchant,
) -> Result<Option<Scenario>, ApiError> {
    let Some(raw) = headers.get(SCENARIO_HEADER) else {
        return Ok(None);
    };
    if merchant.environment != Environment::Test {
        return Err(SandboxError::TestOnly.into());
    }
    let name = raw.to_str().unwrap_or_default().trim();
    Scenario::parse(name)
        .map(Some)
        .ok_or_else(|| SandboxError::UnknownScenario(name.to_owned()).into())
}

/// Live keys see no sandbox routes at all.
fn test_only(merchant: &Merchant) -> Result<(), ApiError> {
    match merchant.environment {
        Environment::Test => Ok(()),
        Environment::Live => Err(RequestError::RouteNotFound.into()),
    }
}

#[utoipa::path(
    get,
    path = "/sandbox/jobs/{id}",
    operation_id = "getSandboxRun",
    tag = "sandbox",
    summary = "Where a test job's simulated delivery is (test keys only)",
    params(("id" = uuid::Uuid, Path, description = "The job's id")),
    responses(
        (status = 200, description = "The job's run", body = RunView),
        (status = 404, description = "not_found job.not_found"),
    )
)]
pub async fn show(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
) -> Result<Json<RunView>, ApiError> {
    test_only(&merchant)?;
    Ok(Json(state.sandbox.view(&merchant, job_id(&id)?).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioBody {
    #[schema(value_type = courier_domain::sandbox::Scenario)]
    scenario: String,
}

#[utoipa::path(
    post,
    path = "/sandbox/jobs/{id}/scenario",
    operation_id = "chooseSandboxScenario",
    tag = "sandbox",
    summary = "Change a test job's scenario, until a courier is on it (test keys only)",
    params(("id" = uuid::Uuid, Path, description = "The job's id")),
    request_body = ScenarioBody,
    responses(
        (status = 200, description = "The job's run, rescheduled", body = RunView),
        (status = 404, description = "not_found job.not_found"),
        (status = 409, description = "sandbox.scenario_locked"),
        (status = 422, description = "sandbox.unknown_scenario"),
    )
)]
pub async fn choose_scenario(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ScenarioBody>,
) -> Result<Json<RunView>, ApiError> {
    test_only(&merchant)?;
    let view = state
        .sandbox
        .choose_scenario(&merchant, job_id(&id)?, &body.scenario)
        .await?;
    Ok(Json(view))
}

#[utoipa::path(
    post,
    path = "/sandbox/jobs/{id}/advance",
    operation_id = "advanceSandboxRun",
    tag = "sandbox",
    summary = "Take a test job's next steps now, up to the next one that moves it (test keys only)",
    params(("id" = uuid::Uuid, Path, description = "The job's id")),
    responses(
        (status = 200, description = "The job's run after the move", body = RunView),
        (status = 404, description = "not_found job.not_found"),
        (status = 409, description = "sandbox.nothing_to_advance job.invalid_transition"),
        (status = 503, description = "sandbox.route_unavailable"),
    )
)]
pub async fn advance(
    State(state): State<AppState>,
    Extension(merchant): Extension<Merchant>,
    Path(id): Path<String>,
) -> Result<Json<RunView>, ApiError> {
    test_only(&merchant)?;
    Ok(Json(state.sandbox.advance(&merchant, job_id(&id)?).await?))
}
