//! Passkeys in the console: a person whose second factor is on adds passkeys on their
//! second-factor page and gives the second factor with one at sign-in, instead of typing a
//! code. The browser's part needs JavaScript (`/console/passkeys.js` calls
//! `navigator.credentials`); the requests are forms, answered with JSON. Without JavaScript the
//! app's codes work as before.

use axum::Json;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use uuid::Uuid;

use super::respond::{cookie, field, see_other, signed_form_any, signed_out_form, token};
use crate::error::ApiError;
use crate::state::AppState;
use courier_core::team::PasskeyRefusal;

/// The refusal as the API answers one: `{code, message}` with its status.
fn refused(why: PasskeyRefusal) -> Response {
    ApiError::from(why).into_response()
}

/// The browser's answer, and the ceremony it answers, from a form's fields.
fn answer_of(fields: &[(String, String)]) -> Option<(Uuid, Value)> {
    let ceremony = Uuid::parse_str(field(fields, "ceremony")?.trim()).ok()?;
    let answer = serde_json::from_str(field(fields, "credential")?).ok()?;
    Some((ceremony, answer))
}

fn not_an_answer() -> Response {
    refused(PasskeyRefusal::NoAnswer)
}

fn not_waiting() -> Response {
    refused(PasskeyRefusal::NotWaiting)
}

#[utoipa::path(
    post,
    path = "/console/account/passkeys/options",
    operation_id = "consolePasskeyOptions",
    tag = "console",
    summary = "Begins adding a passkey: form field `csrf`; answers JSON `{ceremony, options}`, the options for `navigator.credentials.create`",
    security(()),
    request_body(content = String, description = "`csrf=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "`{ceremony, options}`", content_type = "application/json", body = Object),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 404, description = "passkey.unavailable"),
        (status = 409, description = "passkey.needs_second_factor"),
    )
)]
pub async fn registration_options(State(state): State<AppState>, request: Request) -> Response {
    let (session, _) = match signed_form_any(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    match state
        .teams
        .passkeys()
        .start_registration(&session.person)
        .await
    {
        Ok(ceremony) => {
            Json(json!({"ceremony": ceremony.id, "options": ceremony.options})).into_response()
        }
        Err(why) => refused(why),
    }
}

#[utoipa::path(
    post,
    path = "/console/account/passkeys",
    operation_id = "consoleAddPasskey",
    tag = "console",
    summary = "Finishes adding a passkey: form fields `csrf`, `ceremony`, `name` (1 to 60 characters), `credential` (the browser's answer, as JSON); answers JSON `{id, name}`",
    security(()),
    request_body(content = String, description = "`csrf=…&ceremony=…&name=…&credential=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 201, description = "`{id, name}`: added", content_type = "application/json", body = Object),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 400, description = "passkey.no_answer"),
        (status = 401, description = "passkey.rejected"),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 404, description = "passkey.unavailable"),
        (status = 409, description = "passkey.already_added"),
        (status = 410, description = "passkey.expired"),
        (status = 422, description = "passkey.invalid_name"),
    )
)]
pub async fn add(State(state): State<AppState>, request: Request) -> Response {
    let (session, fields) = match signed_form_any(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let Some((ceremony, answer)) = answer_of(&fields) else {
        return not_an_answer();
    };
    let name = field(&fields, "name").unwrap_or("");
    match state
        .teams
        .passkeys()
        .finish_registration(session.person.id, ceremony, &answer, name)
        .await
    {
        Ok(added) => (
            StatusCode::CREATED,
            Json(json!({"id": added.id, "name": added.name})),
        )
            .into_response(),
        Err(why) => refused(why),
    }
}

#[utoipa::path(
    post,
    path = "/console/account/passkeys/{id}/remove",
    operation_id = "consoleRemovePasskey",
    tag = "console",
    summary = "Removes one of the person's passkeys: form field `csrf`",
    security(()),
    params(("id" = String, Path, description = "The passkey's id")),
    request_body(content = String, description = "`csrf=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Removed (or none such): to /console/account/second-factor; or not signed in: to /console/sign-in"),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
    )
)]
pub async fn remove(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let (session, _) = match signed_form_any(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    if let Ok(id) = Uuid::parse_str(&id)
        && let Err(error) = state.teams.passkeys().remove(session.person.id, id).await
    {
        tracing::error!(%error, "removing a passkey failed");
    }
    see_other("/console/account/second-factor")
}

/// The person whose sign-in waits for its second factor, from the request's cookie.
async fn waiting(state: &AppState, headers: &HeaderMap) -> Result<Uuid, Response> {
    let token = token(headers).ok_or_else(not_waiting)?;
    match state.console_sessions.waiting_for_code(token).await {
        Ok(Some(person)) => Ok(person),
        Ok(None) => Err(not_waiting()),
        Err(error) => Err(refused(PasskeyRefusal::Store(error))),
    }
}

#[utoipa::path(
    post,
    path = "/console/sign-in/passkey/options",
    operation_id = "consoleSignInPasskeyOptions",
    tag = "console",
    summary = "After the password, begins giving the second factor with a passkey; answers JSON `{ceremony, options}`, the options for `navigator.credentials.get`",
    security(()),
    responses(
        (status = 200, description = "`{ceremony, options}`", content_type = "application/json", body = Object),
        (status = 401, description = "passkey.not_waiting"),
        (status = 403, description = "A page: sent from another site", content_type = "text/html", body = String),
        (status = 404, description = "passkey.none passkey.unavailable"),
        (status = 429, description = "A page: too many failed attempts from this address", content_type = "text/html", body = String),
    )
)]
pub async fn sign_in_options(State(state): State<AppState>, request: Request) -> Response {
    let headers = request.headers().clone();
    if let Err(refused) = signed_out_form(&state, request).await {
        return refused;
    }
    let person = match waiting(&state, &headers).await {
        Ok(person) => person,
        Err(answer) => return answer,
    };
    match state.teams.passkeys().start_authentication(person).await {
        Ok(Some(ceremony)) => {
            Json(json!({"ceremony": ceremony.id, "options": ceremony.options})).into_response()
        }
        Ok(None) => refused(PasskeyRefusal::NoPasskey),
        Err(why) => refused(why),
    }
}

#[utoipa::path(
    post,
    path = "/console/sign-in/passkey",
    operation_id = "consoleSignInPasskey",
    tag = "console",
    summary = "Finishes a sign-in's second factor with a passkey: form fields `ceremony`, `credential` (the browser's answer, as JSON); answers JSON `{next}`, where the console opens",
    security(()),
    request_body(content = String, description = "`ceremony=…&credential=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "`{next}`: signed in, the session's cookie renewed", content_type = "application/json", body = Object),
        (status = 400, description = "passkey.no_answer"),
        (status = 401, description = "passkey.not_waiting passkey.rejected"),
        (status = 403, description = "A page: sent from another site", content_type = "text/html", body = String),
        (status = 404, description = "passkey.unavailable"),
        (status = 410, description = "passkey.expired"),
        (status = 429, description = "A page: too many failed attempts from this address", content_type = "text/html", body = String),
    )
)]
pub async fn sign_in(State(state): State<AppState>, request: Request) -> Response {
    let headers = request.headers().clone();
    let posted = match signed_out_form(&state, request).await {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    let person = match waiting(&state, &headers).await {
        Ok(person) => person,
        Err(answer) => return answer,
    };
    let Some((ceremony, answer)) = answer_of(&posted.fields) else {
        return not_an_answer();
    };
    match state
        .teams
        .passkeys()
        .finish_authentication(person, ceremony, &answer)
        .await
    {
        Ok(()) => {}
        Err(why @ PasskeyRefusal::Rejected) => {
            state
                .auth_failures
                .spend(posted.client, std::time::Instant::now());
            return refused(why);
        }
        Err(why) => return refused(why),
    }
    let Some(token) = token(&headers) else {
        return not_waiting();
    };
    match state.console_sessions.code_given(token).await {
        Ok(()) => {
            let mut response = Json(json!({"next": "/console/jobs"})).into_response();
            response
                .headers_mut()
                .insert(header::SET_COOKIE, cookie(&state, Some(token)));
            response
        }
        Err(error) => refused(PasskeyRefusal::Store(error)),
    }
}
