//! An operator's account in the operator console: the invitation that makes one, the code
//! asked after the password, and the second factor every operator sets up at their first
//! sign-in (a QR code, then recovery codes shown once).

use askama::Template;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;

use super::super::respond::{field, page, see_other, signed_out_form, when};
use super::super::second_factor::qr_svg;
use super::super::team::{form_refusal, refusal_spends_budget};
use super::{OperatorBar, any_signed_form, cookie, message, owed_step, session, token};
use crate::state::AppState;
use courier_core::auth::operator_sessions::{OperatorSession, SecondFactorStep};
use courier_core::operator_accounts::{OperatorInvitationRow, OperatorInvitationState};
use courier_core::team::{AcceptRefusal, FactorRefusal};
use courier_domain::team::MIN_PASSWORD_CHARS;

fn unavailable(session: Option<&OperatorSession>, error: &dyn std::fmt::Display) -> Response {
    tracing::error!(%error, "an operator account page failed");
    message(
        StatusCode::SERVICE_UNAVAILABLE,
        session,
        "Try again shortly",
        "The console cannot reach its database just now; nothing was done.",
    )
}

/// The session of a request that owes `step`; else where it should be instead.
async fn owing(
    state: &AppState,
    headers: &HeaderMap,
    step: SecondFactorStep,
) -> Result<OperatorSession, Response> {
    let session = session(state, headers)
        .await?
        .ok_or_else(|| see_other("/ops/sign-in"))?;
    match session.owes {
        Some(owed) if owed == step => Ok(session),
        Some(owed) => Err(owed_step(owed)),
        None => Err(see_other("/ops/")),
    }
}

#[derive(Template)]
#[template(path = "console/ops_code.html")]
struct CodePage<'a> {
    session: Option<OperatorBar>,
    problem: Option<&'a str>,
}

#[utoipa::path(
    get,
    path = "/ops/sign-in/code",
    operation_id = "opsConsoleCodePage",
    tag = "console",
    summary = "After an operator's password: the form for the code from their app, or a recovery code",
    security(()),
    responses(
        (status = 200, description = "The form", content_type = "text/html", body = String),
        (status = 303, description = "No session owing a code: to /ops/sign-in, /ops/second-factor or /ops/markets"),
    )
)]
pub async fn code_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match owing(&state, &headers, SecondFactorStep::Code).await {
        Ok(session) => page(
            StatusCode::OK,
            CodePage {
                session: Some(OperatorBar::from(&session)),
                problem: None,
            }
            .render(),
        ),
        Err(answer) => answer,
    }
}

#[utoipa::path(
    post,
    path = "/ops/sign-in/code",
    operation_id = "opsConsoleCode",
    tag = "console",
    summary = "Finishes an operator's sign-in with their second factor: form fields `csrf`, `code` (six digits from the app, or a recovery code)",
    security(()),
    request_body(content = String, description = "`csrf=…&code=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Signed in: to /ops/markets; or no session owing a code: to where it belongs"),
        (status = 401, description = "A page: the code does not match (the address's failure budget is spent)", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 429, description = "A page: too many failed attempts from this address (with Retry-After)", content_type = "text/html", body = String),
    )
)]
pub async fn check_code(State(state): State<AppState>, request: Request) -> Response {
    let headers = request.headers().clone();
    let client = super::super::respond::client(&state, &request);
    if let Some(refused) = super::super::respond::budget_refusal(&state, client) {
        return refused;
    }
    let (session, fields) = match any_signed_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    match session.owes {
        Some(SecondFactorStep::Code) => {}
        Some(other) => return owed_step(other),
        None => return see_other("/ops/"),
    }
    let code = field(&fields, "code").unwrap_or("").trim();
    match state
        .teams
        .check_second_factor(session.person_id, code)
        .await
    {
        Ok(true) => {}
        Ok(false) => {
            state.auth_failures.spend(client, std::time::Instant::now());
            return page(
                StatusCode::UNAUTHORIZED,
                CodePage {
                    session: Some(OperatorBar::from(&session)),
                    problem: Some(
                        "That code does not match. Use the newest code your app shows, or one \
                         of your recovery codes.",
                    ),
                }
                .render(),
            );
        }
        Err(error) => return unavailable(Some(&session), &error),
    }
    completed(&state, &headers, &session, see_other("/ops/")).await
}

/// Marks the request's session complete and answers `then`, its cookie renewed.
async fn completed(
    state: &AppState,
    headers: &HeaderMap,
    session: &OperatorSession,
    mut then: Response,
) -> Response {
    let Some(token) = token(headers) else {
        return see_other("/ops/sign-in");
    };
    match state.operator_sessions.second_factor_given(token).await {
        Ok(()) => {
            then.headers_mut()
                .insert(header::SET_COOKIE, cookie(state, Some(token)));
            then
        }
        Err(error) => unavailable(Some(session), &error),
    }
}

#[derive(Template)]
#[template(path = "console/ops_second_factor.html")]
struct SetupPage<'a> {
    session: Option<OperatorBar>,
    problem: Option<&'a str>,
    /// The key to type, and its QR code (inline SVG); none once set up.
    enrolment: Option<(String, String)>,
    /// Shown once, when set up.
    recovery_codes: Vec<String>,
}

#[utoipa::path(
    get,
    path = "/ops/second-factor",
    operation_id = "opsConsoleSecondFactor",
    tag = "console",
    summary = "An operator without a second factor sets one up before anything else: the app's key as a QR code and as text, and the form for its first code",
    security(()),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "No session owing a second factor's setting up: to /ops/sign-in, /ops/sign-in/code or /ops/markets"),
    )
)]
pub async fn setup_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let session = match owing(&state, &headers, SecondFactorStep::Setup).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    setup(&state, &session, StatusCode::OK, None).await
}

/// The setup page: the enrolment waiting for its first code (a new one if none waits, so a
/// reload shows the same key).
async fn setup(
    state: &AppState,
    session: &OperatorSession,
    status: StatusCode,
    problem: Option<&str>,
) -> Response {
    let enrolment = match state.teams.waiting_totp(session.person_id).await {
        Ok(Some(enrolment)) => Ok(enrolment),
        Ok(None) => {
            state
                .teams
                .start_totp(session.person_id, &session.operator.name)
                .await
        }
        Err(error) => Err(error),
    };
    let enrolment = match enrolment {
        Ok(enrolment) => enrolment,
        Err(error) => return unavailable(Some(session), &error),
    };
    let qr = qr_svg(&enrolment.otpauth_url, "QR code of the app's key");
    page(
        status,
        SetupPage {
            session: Some(OperatorBar::from(session)),
            problem,
            enrolment: Some((enrolment.secret_base32, qr)),
            recovery_codes: Vec::new(),
        }
        .render(),
    )
}

#[utoipa::path(
    post,
    path = "/ops/second-factor/confirm",
    operation_id = "opsConsoleConfirmSecondFactor",
    tag = "console",
    summary = "Turns the operator's second factor on with the app's first code (form fields `csrf`, `code`), completes the sign-in, and shows the recovery codes once",
    security(()),
    request_body(content = String, description = "`csrf=…&code=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "On: the recovery codes, shown only here, and the way into the console", content_type = "text/html", body = String),
        (status = 303, description = "No session owing a second factor's setting up: to where it belongs"),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 422, description = "The page again: the code does not match the key", content_type = "text/html", body = String),
    )
)]
pub async fn confirm(State(state): State<AppState>, request: Request) -> Response {
    let headers = request.headers().clone();
    let (session, fields) = match any_signed_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    match session.owes {
        Some(SecondFactorStep::Setup) => {}
        Some(other) => return owed_step(other),
        None => return see_other("/ops/"),
    }
    let code = field(&fields, "code").unwrap_or("").trim();
    let codes = match state.teams.confirm_totp(session.person_id, code).await {
        Ok(codes) => codes,
        Err(FactorRefusal::WrongCode | FactorRefusal::NotStarted) => {
            return setup(
                &state,
                &session,
                StatusCode::UNPROCESSABLE_ENTITY,
                Some("That code does not match the key. Enter the code your app shows now."),
            )
            .await;
        }
        Err(error) => return unavailable(Some(&session), &error),
    };
    let complete = OperatorSession {
        owes: None,
        ..session.clone()
    };
    let mut shown = page(
        StatusCode::OK,
        SetupPage {
            session: Some(OperatorBar::from(&complete)),
            problem: None,
            enrolment: None,
            recovery_codes: codes,
        }
        .render(),
    );
    // The recovery codes are on this page only.
    shown.extensions_mut().insert(super::super::once::ShownOnce);
    completed(&state, &headers, &session, shown).await
}

#[derive(Template)]
#[template(path = "console/ops_invitation.html")]
struct InvitationPage<'a> {
    session: Option<OperatorBar>,
    token: &'a str,
    email: &'a str,
    role: &'static str,
    role_summary: &'static str,
    expires: String,
    has_account: bool,
    name: &'a str,
    min_password: usize,
    problem: Option<&'a str>,
}

/// The invitation's form, with what was typed and what is wrong with it.
fn invitation_form(
    status: StatusCode,
    token: &str,
    (invitation, has_account): (&OperatorInvitationRow, bool),
    name: &str,
    problem: Option<&str>,
) -> Response {
    page(
        status,
        InvitationPage {
            session: None,
            token,
            email: &invitation.email,
            role: invitation.role.label(),
            role_summary: invitation.role.summary(),
            expires: when(invitation.expires_at),
            has_account,
            name,
            min_password: MIN_PASSWORD_CHARS,
            problem,
        }
        .render(),
    )
}

/// Where joining sends the new operator: to sign in, saying they joined.
const JOINED: &str = "/ops/sign-in?joined=1";

/// The page of an invitation that cannot be used.
fn closed(state: &OperatorInvitationState) -> Option<Response> {
    let (status, heading, text) = match state {
        OperatorInvitationState::Open { .. } => return None,
        OperatorInvitationState::Used { .. } => (
            StatusCode::GONE,
            "This invitation was used",
            "It works only once. Sign in with the account it made, or ask an operator with the \
             Admin role for a new invitation.",
        ),
        OperatorInvitationState::Expired => (
            StatusCode::GONE,
            "This invitation has expired",
            "Ask the operator who invited you for a new one.",
        ),
        OperatorInvitationState::Unknown => (
            StatusCode::NOT_FOUND,
            "No such invitation",
            "Check that the whole link was copied.",
        ),
    };
    Some(message(status, None, heading, text))
}

#[utoipa::path(
    get,
    path = "/ops/invitations/{token}",
    operation_id = "opsConsoleInvitation",
    tag = "console",
    summary = "An operator invitation's link: the form to set a name and password (or give the existing account's password) and become an operator",
    security(()),
    params(("token" = String, Path, description = "The invitation's token, from its link")),
    responses(
        (status = 200, description = "The form", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such invitation", content_type = "text/html", body = String),
        (status = 410, description = "A page: the invitation was used or has expired", content_type = "text/html", body = String),
    )
)]
pub async fn invitation_page(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    let found = match state.operator_accounts.invitation(&token).await {
        Ok(found) => found,
        Err(error) => return unavailable(None, &error),
    };
    if let Some(closed) = closed(&found) {
        return closed;
    }
    let OperatorInvitationState::Open {
        invitation,
        has_account,
    } = found
    else {
        return unavailable(None, &"an open invitation");
    };
    invitation_form(StatusCode::OK, &token, (&invitation, has_account), "", None)
}

#[utoipa::path(
    post,
    path = "/ops/invitations/{token}",
    operation_id = "opsConsoleAcceptInvitation",
    tag = "console",
    summary = "Uses an operator invitation: form fields `name`, `password` and `password_again` (a new account), or `password` (the address's existing account); then to sign in",
    security(()),
    params(("token" = String, Path, description = "The invitation's token, from its link")),
    request_body(content = String, description = "`name=…&password=…&password_again=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "An operator now (or the same form sent again within two minutes of its use): to /ops/sign-in"),
        (status = 401, description = "A page: the existing account's password is wrong", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form was sent from another site", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such invitation", content_type = "text/html", body = String),
        (status = 409, description = "A page: an account was made at the address a moment ago", content_type = "text/html", body = String),
        (status = 410, description = "A page: the invitation was used (more than two minutes ago) or has expired", content_type = "text/html", body = String),
        (status = 422, description = "A page: the name or password cannot be used, or the two passwords differ", content_type = "text/html", body = String),
        (status = 429, description = "A page: too many failed attempts from this address (with Retry-After)", content_type = "text/html", body = String),
    )
)]
pub async fn accept_invitation(
    State(state): State<AppState>,
    Path(token): Path<String>,
    request: Request,
) -> Response {
    let posted = match signed_out_form(&state, request).await {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    let found = match state.operator_accounts.invitation(&token).await {
        Ok(found) => found,
        Err(error) => return unavailable(None, &error),
    };
    if let OperatorInvitationState::Used { just_now: true } = found {
        // The form sent again (a double click, a reload) right after it made the operator:
        // on to signing in, as the first answer went.
        return see_other(JOINED);
    }
    if let Some(closed) = closed(&found) {
        return closed;
    }
    let OperatorInvitationState::Open {
        invitation,
        has_account,
    } = found
    else {
        return unavailable(None, &"an open invitation");
    };
    let fields = &posted.fields;
    let name = field(fields, "name").unwrap_or("");
    let password = field(fields, "password").unwrap_or("");
    let again = |status: StatusCode, problem: &str| {
        invitation_form(
            status,
            &token,
            (&invitation, has_account),
            name,
            Some(problem),
        )
    };
    if !has_account && field(fields, "password_again") != Some(password) {
        return again(
            StatusCode::UNPROCESSABLE_ENTITY,
            "The two passwords differ; type the same password twice.",
        );
    }
    match state.operator_accounts.accept(&token, name, password).await {
        // Joining does not sign in: the sign-in asks for the second factor, set up first.
        Ok(_) => see_other(JOINED),
        Err(refusal) => match form_refusal(&refusal) {
            Some((status, problem)) => {
                if refusal_spends_budget(&refusal) {
                    state
                        .auth_failures
                        .spend(posted.client, std::time::Instant::now());
                }
                again(status, &problem)
            }
            None => match refusal {
                // Used by the same form sent twice at once: the other answer made the operator.
                AcceptRefusal::Used => Some(see_other(JOINED)),
                AcceptRefusal::Expired | AcceptRefusal::Withdrawn => {
                    closed(&OperatorInvitationState::Expired)
                }
                AcceptRefusal::Store(error) => Some(unavailable(None, &error)),
                _ => closed(&OperatorInvitationState::Unknown),
            }
            .unwrap_or_else(|| unavailable(None, &"a closed invitation")),
        },
    }
}
