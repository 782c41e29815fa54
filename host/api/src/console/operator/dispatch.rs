//! Moving jobs and couriers by hand from a market's board (the operations role's, and
//! admins'): putting a courier on a job, setting a job's status with a reason, suspending and
//! reinstating couriers. Each is the operator API's, with its rules and its audit record under
//! the operator's address; the answer is the board again (303), saying what was done, or the
//! job's page when the form was sent from there (`back=job`).

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use uuid::Uuid;

use super::super::respond::{field, see_other};
use super::{message, permitted_form};
use crate::state::AppState;
use courier_core::auth::operator_sessions::OperatorSession;
use courier_domain::JobStatus;
use courier_domain::error::{Answer, ErrorCode};
use courier_domain::operators::OpsPermission;

/// The page a form's answer goes back to.
enum Back {
    Board(String),
    Job(Uuid),
}

/// The job's page when the form was sent from there, else the board.
fn back_to(fields: &[(String, String)], market: &str, job: Option<Uuid>) -> Back {
    match (field(fields, "back"), job) {
        (Some("job"), Some(job)) => Back::Job(job),
        _ => Back::Board(market.to_owned()),
    }
}

/// What moving something by hand answered: done (back, saying so), or refused.
fn answered<T, E: ErrorCode + std::fmt::Display>(
    session: &OperatorSession,
    back: &Back,
    done: &str,
    result: Result<T, E>,
) -> Response {
    match result {
        Ok(_) => see_other(&match back {
            Back::Board(market) => format!("/ops/markets/{market}?done={done}#by-hand"),
            Back::Job(job) => format!("/ops/jobs/{job}?done={done}#steer"),
        }),
        Err(refusal) => match refusal.answer() {
            Answer::Refused(code) => {
                let said = code
                    .fixed_message
                    .map_or_else(|| refusal.to_string(), str::to_owned);
                message(
                    StatusCode::from_u16(code.status).unwrap_or(StatusCode::UNPROCESSABLE_ENTITY),
                    Some(session),
                    "Not done",
                    &format!("{said} ({}). Nothing was changed.", code.code),
                )
            }
            Answer::Fault(fault) => {
                tracing::error!(error = %fault, "moving a job or courier by hand failed");
                message(
                    StatusCode::SERVICE_UNAVAILABLE,
                    Some(session),
                    "Try again shortly",
                    "The console cannot reach its database just now; nothing was changed.",
                )
            }
        },
    }
}

/// A form of a session whose role moves jobs and couriers.
async fn mover_form(
    state: &AppState,
    request: Request,
) -> Result<(OperatorSession, Vec<(String, String)>), Response> {
    permitted_form(
        state,
        request,
        OpsPermission::MoveJobs,
        "moving jobs and couriers",
    )
    .await
}

/// The id in form field `name`, or None when it is not one.
fn id_field(fields: &[(String, String)], name: &str) -> Option<Uuid> {
    field(fields, name).and_then(|raw| Uuid::parse_str(raw.trim()).ok())
}

fn not_an_id(session: &OperatorSession, what: &str) -> Response {
    message(
        StatusCode::BAD_REQUEST,
        Some(session),
        "Not done",
        &format!("Choose {what} from the list."),
    )
}

#[utoipa::path(
    post,
    path = "/ops/markets/{market}/assign",
    operation_id = "opsConsoleAssign",
    tag = "console",
    summary = "Puts a courier on a job (searching, assigned or in transit): form fields `csrf`, `job`, `courier` (ids), `reason` (optional, kept in the audit trail), `back` (`job`: answer with the job's page); the operator API's reassignment",
    security(()),
    params(("market" = String, Path, description = "The market's id")),
    request_body(content = String, description = "`csrf=…&job=…&courier=…&reason=…&back=job`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Done: to the market's board (or the job's page), saying so"),
        (status = 400, description = "A page: the job or courier is not an id", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form did not carry the session's token, or the operator's role does not move jobs", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such job or courier", content_type = "text/html", body = String),
        (status = 409, description = "A page: the job cannot take a courier now", content_type = "text/html", body = String),
        (status = 422, description = "A page: the courier is not available, or the reason is too long", content_type = "text/html", body = String),
    )
)]
pub async fn assign(
    State(state): State<AppState>,
    Path(market): Path<String>,
    request: Request,
) -> Response {
    let (session, fields) = match mover_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let (Some(job), Some(courier)) = (id_field(&fields, "job"), id_field(&fields, "courier"))
    else {
        return not_an_id(&session, "a job and a courier");
    };
    let result = state
        .fulfilment
        .reassign(
            &session.operator.name,
            job,
            courier,
            field(&fields, "reason"),
        )
        .await;
    let back = back_to(&fields, &market, Some(job));
    answered(&session, &back, "assigned", result)
}

#[utoipa::path(
    post,
    path = "/ops/markets/{market}/status",
    operation_id = "opsConsoleSetStatus",
    tag = "console",
    summary = "Sets a job's status by hand: form fields `csrf`, `job` (its id), `status`, `reason` (required), `back` (`job`: answer with the job's page); the operator API's",
    security(()),
    params(("market" = String, Path, description = "The market's id")),
    request_body(content = String, description = "`csrf=…&job=…&status=…&reason=…&back=job`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Done: to the market's board (or the job's page), saying so"),
        (status = 400, description = "A page: the job is not an id, or the status not a job status", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form did not carry the session's token, or the operator's role does not move jobs", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such job", content_type = "text/html", body = String),
        (status = 409, description = "A page: the job cannot move to that status", content_type = "text/html", body = String),
        (status = 422, description = "A page: no reason was given", content_type = "text/html", body = String),
    )
)]
pub async fn set_status(
    State(state): State<AppState>,
    Path(market): Path<String>,
    request: Request,
) -> Response {
    let (session, fields) = match mover_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let Some(job) = id_field(&fields, "job") else {
        return not_an_id(&session, "a job (its id)");
    };
    let Some(to) = JobStatus::parse(field(&fields, "status").unwrap_or("").trim()) else {
        return not_an_id(&session, "a status");
    };
    let result = state
        .fulfilment
        .set_status_by_hand(&session.operator.name, job, to, field(&fields, "reason"))
        .await;
    let back = back_to(&fields, &market, Some(job));
    answered(&session, &back, "status_set", result)
}

#[utoipa::path(
    post,
    path = "/ops/markets/{market}/couriers/{action}",
    operation_id = "opsConsoleCourierAction",
    tag = "console",
    summary = "`suspend` a courier (form fields `csrf`, `courier`, `reason`) or `reinstate` one (`csrf`, `courier`); the operator API's",
    security(()),
    params(
        ("market" = String, Path, description = "The market's id"),
        ("action" = String, Path, description = "`suspend` or `reinstate`"),
    ),
    request_body(content = String, description = "`csrf=…&courier=…&reason=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Done: to the market's board, saying so"),
        (status = 400, description = "A page: the courier is not an id", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form did not carry the session's token, or the operator's role does not move couriers", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such courier, or no such action", content_type = "text/html", body = String),
        (status = 422, description = "A page: the reason is too long", content_type = "text/html", body = String),
    )
)]
pub async fn courier_action(
    State(state): State<AppState>,
    Path((market, action)): Path<(String, String)>,
    request: Request,
) -> Response {
    let (session, fields) = match mover_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let Some(courier) = id_field(&fields, "courier") else {
        return not_an_id(&session, "a courier");
    };
    let operator = &session.operator.name;
    let back = back_to(&fields, &market, None);
    match action.as_str() {
        "suspend" => {
            let result = state
                .couriers
                .suspend(operator, courier, field(&fields, "reason"))
                .await;
            answered(&session, &back, "suspended", result)
        }
        "reinstate" => {
            let result = state.couriers.reinstate(operator, courier).await;
            answered(&session, &back, "reinstated", result)
        }
        _ => message(
            StatusCode::NOT_FOUND,
            Some(&session),
            "No such action",
            "A courier is suspended or reinstated.",
        ),
    }
}
