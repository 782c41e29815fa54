//! Forgotten passwords: a link mailed to the account's address (never shown on a page), used
//! once to choose a new password, which ends every session of the person and signs them in.

use askama::Template;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::respond::{SessionBar, field, message, open_session, page, see_other, signed_out_form};
use crate::state::AppState;
use courier_core::team::{ResetAsker, ResetRefusal, ResetState};
use courier_domain::team::MIN_PASSWORD_CHARS;

#[derive(Template)]
#[template(path = "console/password_reset.html")]
struct ResetPage<'a> {
    session: Option<SessionBar>,
    notice: Option<&'a str>,
    problem: Option<&'a str>,
    /// The link's token, on the page that sets the password.
    token: Option<&'a str>,
    email: &'a str,
    min_password: usize,
}

impl<'a> ResetPage<'a> {
    fn asking() -> Self {
        ResetPage {
            session: None,
            notice: None,
            problem: None,
            token: None,
            email: "",
            min_password: MIN_PASSWORD_CHARS,
        }
    }
}

fn unavailable(error: &dyn std::fmt::Display) -> Response {
    tracing::error!(%error, "a password-reset page failed");
    message(
        StatusCode::SERVICE_UNAVAILABLE,
        None,
        "Try again shortly",
        "The console cannot reach its database just now; nothing was done.",
    )
}

fn closed(state: &ResetState) -> Option<Response> {
    let (status, heading, text) = match state {
        ResetState::Open { .. } => return None,
        ResetState::Used => (
            StatusCode::GONE,
            "This link was used",
            "It has set a password already, and works only once. Sign in, or ask for another link.",
        ),
        ResetState::Expired => (
            StatusCode::GONE,
            "This link has expired",
            "Ask for another link from the sign-in page.",
        ),
        ResetState::Unknown => (
            StatusCode::NOT_FOUND,
            "No such link",
            "This link does not reset a password. Check that it was copied whole.",
        ),
    };
    Some(message(status, None, heading, text))
}

#[utoipa::path(
    get,
    path = "/console/password-reset",
    operation_id = "consolePasswordResetPage",
    tag = "console",
    summary = "The form that asks for a password-reset link (an e-mail address)",
    security(()),
    responses((status = 200, description = "The form", content_type = "text/html", body = String))
)]
pub async fn reset_request_page() -> Response {
    page(StatusCode::OK, ResetPage::asking().render())
}

#[utoipa::path(
    post,
    path = "/console/password-reset",
    operation_id = "consoleRequestPasswordReset",
    tag = "console",
    summary = "Mails a password-reset link to the account of form field `email`, if there is one: the page says the same either way",
    security(()),
    request_body(content = String, description = "`email=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "A page: a link is on its way if an account has the address", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form was sent from another site", content_type = "text/html", body = String),
        (status = 429, description = "A page: too many attempts from this address (with Retry-After)", content_type = "text/html", body = String),
    )
)]
pub async fn request_reset(State(state): State<AppState>, request: Request) -> Response {
    let posted = match signed_out_form(&state, request).await {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    let (fields, client) = (&posted.fields, posted.client);
    // Each request spends the address's budget, so no address mails an inbox without end.
    state.auth_failures.spend(client, std::time::Instant::now());
    let email = field(fields, "email").unwrap_or("").trim();
    if let Err(error) = state
        .teams
        .request_password_reset(email, ResetAsker::Person)
        .await
    {
        return unavailable(&error);
    }
    let notice = if state.teams.mails() {
        "If a Courier account has this address, a link to choose a new password is on its way \
         to it (at most one every five minutes). It works once, for an hour."
    } else {
        "This service sends no mail: ask its operator for a password-reset link (they make one \
         with `courier person password-reset`)."
    };
    let body = ResetPage {
        notice: Some(notice),
        ..ResetPage::asking()
    };
    page(StatusCode::OK, body.render())
}

#[utoipa::path(
    get,
    path = "/console/password-reset/{token}",
    operation_id = "consolePasswordReset",
    tag = "console",
    summary = "A password-reset link: the form to choose a new password",
    security(()),
    params(("token" = String, Path, description = "The link's token")),
    responses(
        (status = 200, description = "The form", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such link", content_type = "text/html", body = String),
        (status = 410, description = "A page: the link was used or has expired", content_type = "text/html", body = String),
    )
)]
pub async fn reset_page(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    let found = match state.teams.password_reset(&token).await {
        Ok(found) => found,
        Err(error) => return unavailable(&error),
    };
    if let Some(closed) = closed(&found) {
        return closed;
    }
    let ResetState::Open { email } = found else {
        return unavailable(&"an open link");
    };
    let body = ResetPage {
        token: Some(&token),
        email: &email,
        ..ResetPage::asking()
    };
    page(StatusCode::OK, body.render())
}

#[utoipa::path(
    post,
    path = "/console/password-reset/{token}",
    operation_id = "consoleResetPassword",
    tag = "console",
    summary = "Sets a new password with a reset link: form fields `password` and `password_again`; every session of the person ends, and they are signed in",
    security(()),
    params(("token" = String, Path, description = "The link's token")),
    request_body(content = String, description = "`password=…&password_again=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Set: to /console/jobs, signed in, with the session cookie"),
        (status = 403, description = "A page: the form was sent from another site", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such link", content_type = "text/html", body = String),
        (status = 410, description = "A page: the link was used or has expired", content_type = "text/html", body = String),
        (status = 422, description = "A page: the password cannot be used, or the two differ", content_type = "text/html", body = String),
    )
)]
pub async fn reset_password(
    State(state): State<AppState>,
    Path(token): Path<String>,
    request: Request,
) -> Response {
    let posted = match signed_out_form(&state, request).await {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    let fields = &posted.fields;
    let found = match state.teams.password_reset(&token).await {
        Ok(found) => found,
        Err(error) => return unavailable(&error),
    };
    if let Some(closed) = closed(&found) {
        return match found {
            ResetState::Used => posted.used_link(&state, closed).await,
            _ => closed,
        };
    }
    let ResetState::Open { email } = found else {
        return unavailable(&"an open link");
    };
    let again = |problem: &str| {
        let body = ResetPage {
            problem: Some(problem),
            token: Some(&token),
            email: &email,
            ..ResetPage::asking()
        };
        page(StatusCode::UNPROCESSABLE_ENTITY, body.render())
    };
    let password = field(fields, "password").unwrap_or("");
    if field(fields, "password_again") != Some(password) {
        return again("The two passwords differ; type the same password twice.");
    }
    let person = match state.teams.reset_password(&token, password).await {
        Ok(person) => person,
        Err(ResetRefusal::WeakPassword(weak)) => return again(&weak.explain()),
        Err(ResetRefusal::Used) => {
            let used = closed(&ResetState::Used).unwrap_or_else(|| unavailable(&"used"));
            return posted.used_link(&state, used).await;
        }
        Err(ResetRefusal::Expired) => {
            return closed(&ResetState::Expired).unwrap_or_else(|| unavailable(&"expired"));
        }
        Err(ResetRefusal::Unknown) => {
            return closed(&ResetState::Unknown).unwrap_or_else(|| unavailable(&"unknown"));
        }
        Err(ResetRefusal::Store(error)) => return unavailable(&error),
    };
    let teams = match state.teams.memberships(person.id).await {
        Ok(teams) => teams,
        Err(error) => return unavailable(&error),
    };
    // Set, but in no team: the sign-in page says so.
    let Some(team) = teams.first() else {
        return see_other("/console/sign-in");
    };
    open_session(&state, &person, team.merchant_id, &posted)
        .await
        .unwrap_or_else(|error| {
            tracing::error!(%error, "opening a console session after a reset failed");
            see_other("/console/sign-in")
        })
}
