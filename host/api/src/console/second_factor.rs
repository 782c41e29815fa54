//! The second factor in the console: the code asked after the password, and the account's
//! TOTP (enrolment with a QR code, recovery codes shown once, turning it off).

use askama::Template;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;

use super::once::ShownOnce;
use super::respond::{
    SessionBar, cookie, field, message, page, see_other, signed_form_any, signed_in_any,
    signed_out_form, token,
};
use crate::state::AppState;
use courier_core::auth::ConsoleSession;
use courier_core::team::{Enrolment, FactorRefusal};

fn unavailable(session: Option<&ConsoleSession>, error: &dyn std::fmt::Display) -> Response {
    tracing::error!(%error, "a second-factor page failed");
    message(
        StatusCode::SERVICE_UNAVAILABLE,
        session,
        "Try again shortly",
        "The console cannot reach its database just now; nothing was done.",
    )
}

#[derive(Template)]
#[template(path = "console/sign_in_code.html")]
struct CodePage<'a> {
    session: Option<SessionBar>,
    problem: Option<&'a str>,
    /// The person has a passkey to use instead of a code.
    passkey: bool,
}

/// Whether `person` may give their second factor with a passkey here.
async fn has_passkey(state: &AppState, person: uuid::Uuid) -> bool {
    state.teams.passkeys().available()
        && state
            .teams
            .passkeys()
            .of(person)
            .await
            .is_ok_and(|kept| !kept.is_empty())
}

#[utoipa::path(
    get,
    path = "/console/sign-in/code",
    operation_id = "consoleSignInCodePage",
    tag = "console",
    summary = "After the password of a person with a second factor: the form for the code from their app, or a recovery code",
    security(()),
    responses(
        (status = 200, description = "The form", content_type = "text/html", body = String),
        (status = 303, description = "No sign-in waiting for a code: to /console/sign-in"),
    )
)]
pub async fn code_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match waiting(&state, &headers).await {
        Ok(Some(person)) => page(
            StatusCode::OK,
            CodePage {
                session: None,
                problem: None,
                passkey: has_passkey(&state, person).await,
            }
            .render(),
        ),
        Ok(None) => see_other("/console/sign-in"),
        Err(answer) => answer,
    }
}

/// The person of the request's sign-in that waits for its code.
async fn waiting(state: &AppState, headers: &HeaderMap) -> Result<Option<uuid::Uuid>, Response> {
    let Some(token) = token(headers) else {
        return Ok(None);
    };
    state
        .console_sessions
        .waiting_for_code(token)
        .await
        .map_err(|error| unavailable(None, &error))
}

#[utoipa::path(
    post,
    path = "/console/sign-in/code",
    operation_id = "consoleSignInCode",
    tag = "console",
    summary = "Finishes a sign-in with the second factor: form field `code` (six digits from the app, or a recovery code)",
    security(()),
    request_body(content = String, description = "`code=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Signed in: to /console/jobs; or no sign-in waiting: to /console/sign-in"),
        (status = 401, description = "A page: the code does not match (the address's failure budget is spent)", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form was sent from another site", content_type = "text/html", body = String),
        (status = 429, description = "A page: too many failed attempts from this address (with Retry-After)", content_type = "text/html", body = String),
    )
)]
pub async fn check_code(State(state): State<AppState>, request: Request) -> Response {
    let headers = request.headers().clone();
    let posted = match signed_out_form(&state, request).await {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    let person = match waiting(&state, &headers).await {
        Ok(Some(person)) => person,
        Ok(None) => return see_other("/console/sign-in"),
        Err(answer) => return answer,
    };
    let code = field(&posted.fields, "code").unwrap_or("");
    match state.teams.check_second_factor(person, code).await {
        Ok(true) => {}
        Ok(false) => {
            state
                .auth_failures
                .spend(posted.client, std::time::Instant::now());
            return page(
                StatusCode::UNAUTHORIZED,
                CodePage {
                    session: None,
                    problem: Some("That code does not match. Use the newest code your app shows, or one of your recovery codes."),
                    passkey: has_passkey(&state, person).await,
                }
                .render(),
            );
        }
        Err(error) => return unavailable(None, &error),
    }
    let Some(token) = token(&headers) else {
        return see_other("/console/sign-in");
    };
    match state.console_sessions.code_given(token).await {
        Ok(()) => {
            let mut response = see_other("/console/jobs");
            // The cookie again, for the session's whole lifetime now.
            response
                .headers_mut()
                .insert(header::SET_COOKIE, cookie(&state, Some(token)));
            response
        }
        Err(error) => unavailable(None, &error),
    }
}

#[derive(Template)]
#[template(path = "console/second_factor.html")]
struct FactorPage<'a> {
    session: Option<SessionBar>,
    notice: Option<&'a str>,
    problem: Option<&'a str>,
    enabled: Option<String>,
    codes_left: i64,
    required_by: Vec<String>,
    /// While enrolling: the secret, its URL and the QR code (an inline SVG).
    enrolment: Option<(Enrolment, String)>,
    /// Just after enrolling: the recovery codes, shown once.
    recovery_codes: Vec<String>,
    /// Whether passkeys can be added here (the service is at a host name), and the person's.
    passkeys_available: bool,
    passkeys: Vec<PasskeyFacts>,
    max_passkey_name: usize,
}

/// A passkey as the page lists it.
struct PasskeyFacts {
    id: uuid::Uuid,
    name: String,
    added: String,
    used: String,
}

async fn render(
    state: &AppState,
    session: &ConsoleSession,
    status: StatusCode,
    said: (Option<&str>, Option<&str>),
    enrolment: Option<Enrolment>,
    recovery_codes: Vec<String>,
) -> Response {
    let read = tokio::try_join!(
        state.teams.second_factor(session.person.id),
        state.teams.passkeys().of(session.person.id),
    );
    let (factor, passkeys) = match read {
        Ok(read) => read,
        Err(error) => return unavailable(Some(session), &error),
    };
    let enrolment = enrolment.map(|e| {
        let qr = qr_svg(&e.otpauth_url, "QR code of the app's key");
        (e, qr)
    });
    page(
        status,
        FactorPage {
            session: Some(SessionBar::from(session)),
            notice: said.0,
            problem: said.1,
            enabled: factor.enabled_at.map(super::respond::when),
            codes_left: factor.recovery_codes_left,
            required_by: factor.required_by,
            enrolment,
            recovery_codes,
            passkeys_available: state.teams.passkeys().available(),
            passkeys: passkeys
                .into_iter()
                .map(|p| PasskeyFacts {
                    id: p.id,
                    name: p.name,
                    added: super::respond::when(p.created_at),
                    used: p
                        .last_used_at
                        .map_or_else(|| "never".to_owned(), super::respond::when),
                })
                .collect(),
            max_passkey_name: courier_core::team::MAX_PASSKEY_NAME_CHARS,
        }
        .render(),
    )
}

/// The QR code of `url` as an inline SVG (no image to load, so the page's policy holds),
/// named `label` (the service's own words) for people who cannot see it.
pub(super) fn qr_svg(url: &str, label: &str) -> String {
    let Ok(code) = qrcode::QrCode::new(url.as_bytes()) else {
        return String::new();
    };
    let svg = code
        .render::<qrcode::render::svg::Color<'_>>()
        .min_dimensions(200, 200)
        .dark_color(qrcode::render::svg::Color("#000000"))
        .light_color(qrcode::render::svg::Color("#ffffff"))
        .build();
    // The document's own declaration has no place inside HTML.
    match svg.find("<svg") {
        Some(at) => svg[at..].replacen(
            "<svg",
            // The labels are the service's own words; a quote would end the attribute.
            &format!(
                "<svg role=\"img\" aria-label=\"{}\"",
                label.replace('"', "")
            ),
            1,
        ),
        None => String::new(),
    }
}

#[utoipa::path(
    get,
    path = "/console/account/second-factor",
    operation_id = "consoleSecondFactor",
    tag = "console",
    summary = "The person's second factor: whether it is on, recovery codes left, which teams require it; forms to set it up or turn it off",
    security(()),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
    )
)]
pub async fn factor_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let session = match signed_in_any(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let waiting = match state.teams.waiting_totp(session.person.id).await {
        Ok(waiting) => waiting,
        Err(error) => return unavailable(Some(&session), &error),
    };
    let notice = session
        .needs_second_factor
        .then_some("Your team requires a second factor: set one up to go on.");
    render(
        &state,
        &session,
        StatusCode::OK,
        (notice, None),
        waiting,
        Vec::new(),
    )
    .await
}

#[utoipa::path(
    post,
    path = "/console/account/second-factor/start",
    operation_id = "consoleStartSecondFactor",
    tag = "console",
    summary = "Starts setting up TOTP: form field `csrf`; the page shows the app's key (QR code and text) and asks for its first code",
    security(()),
    request_body(content = String, description = "`csrf=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The page with the key", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
    )
)]
pub async fn start(State(state): State<AppState>, request: Request) -> Response {
    let (session, _) = match signed_form_any(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    match state
        .teams
        .start_totp(session.person.id, &session.person.email)
        .await
    {
        Ok(enrolment) => {
            let mut response = render(
                &state,
                &session,
                StatusCode::OK,
                (None, None),
                Some(enrolment),
                Vec::new(),
            )
            .await;
            response.extensions_mut().insert(ShownOnce);
            response
        }
        Err(error) => unavailable(Some(&session), &error),
    }
}

#[utoipa::path(
    post,
    path = "/console/account/second-factor/confirm",
    operation_id = "consoleConfirmSecondFactor",
    tag = "console",
    summary = "Turns TOTP on with the app's first code: form fields `csrf` and `code`; the page shows the recovery codes once",
    security(()),
    request_body(content = String, description = "`csrf=…&code=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "On: the page with the recovery codes, shown this once", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 409, description = "A page: no setup is waiting", content_type = "text/html", body = String),
        (status = 422, description = "The page again: the code does not match", content_type = "text/html", body = String),
    )
)]
pub async fn confirm(State(state): State<AppState>, request: Request) -> Response {
    let (session, fields) = match signed_form_any(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let code = field(&fields, "code").unwrap_or("");
    match state.teams.confirm_totp(session.person.id, code).await {
        Ok(codes) => {
            let notice = "Your second factor is on: each sign-in asks for a code from your app.";
            let mut response = render(
                &state,
                &session,
                StatusCode::OK,
                (Some(notice), None),
                None,
                codes,
            )
            .await;
            response.extensions_mut().insert(ShownOnce);
            response
        }
        Err(FactorRefusal::WrongCode) => {
            let waiting = state
                .teams
                .waiting_totp(session.person.id)
                .await
                .ok()
                .flatten();
            let problem =
                "That code does not match: check the app's clock, and type the newest code.";
            let mut response = render(
                &state,
                &session,
                StatusCode::UNPROCESSABLE_ENTITY,
                (None, Some(problem)),
                waiting,
                Vec::new(),
            )
            .await;
            response.extensions_mut().insert(ShownOnce);
            response
        }
        Err(FactorRefusal::NotStarted) => message(
            StatusCode::CONFLICT,
            Some(&session),
            "Nothing to confirm",
            "No setup is waiting for a code: start it again from your account.",
        ),
        Err(error) => unavailable(Some(&session), &error),
    }
}

#[utoipa::path(
    post,
    path = "/console/account/second-factor/disable",
    operation_id = "consoleDisableSecondFactor",
    tag = "console",
    summary = "Turns TOTP off: form fields `csrf` and `password`",
    security(()),
    request_body(content = String, description = "`csrf=…&password=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "Off: the page says so", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 401, description = "The page again: the password is wrong", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 409, description = "The page again: a team of the person's requires a second factor", content_type = "text/html", body = String),
    )
)]
pub async fn disable(State(state): State<AppState>, request: Request) -> Response {
    let (session, fields) = match signed_form_any(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let password = field(&fields, "password").unwrap_or("");
    let (status, said) = match state.teams.disable_totp(session.person.id, password).await {
        Ok(()) => (StatusCode::OK, (Some("Your second factor is off."), None)),
        Err(FactorRefusal::WrongPassword) => (
            StatusCode::UNAUTHORIZED,
            (None, Some("That is not your password; nothing changed.")),
        ),
        Err(FactorRefusal::Required) => (
            StatusCode::CONFLICT,
            (
                None,
                Some("A team of yours requires a second factor: it stays on."),
            ),
        ),
        Err(error) => return unavailable(Some(&session), &error),
    };
    render(&state, &session, status, said, None, Vec::new()).await
}
