//! The couriers' app, `/courier/`: a phone's pages for a whole shift, rendered here from
//! templates (`templates/courier/`) and usable without JavaScript; the script adds live
//! offers, the phone's position, the signature pad and an outbox for dead zones (a service
//! worker that keeps what could not be sent and sends it when the network is back).
//!
//! A courier signs in with its credential or an operator's one-time code (one field,
//! `credential`); the session is a cookie (`HttpOnly`, `SameSite=Strict`, `Secure` when the
//! public URL is https) that lasts a shift (`COURIER_APP_SESSION_MS`), ends at sign-out, and
//! ends at once when the courier is suspended (the next page says so). Every form carries the
//! session's CSRF token; every move carries an action id, the courier API's
//! `Idempotency-Key`, so a form sent twice (a double tap, the outbox) moves the job once.
//! Every move is the courier API's own ([`courier_core::jobs::fulfilment::Fulfilment`]).

pub(crate) mod home;
pub(crate) mod moves;

use askama::Template;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde::Deserialize;

use super::respond::{
    asset, cookie_value, field, form, page, retry_after, see_other, session_cookie, signed_out_form,
};
use crate::state::AppState;
use courier_core::couriers::{CourierAppSession, EndedBecause, SessionLookup, SignInRefusal};

/// The session cookie's name.
const COOKIE: &str = "courier_app";
/// What the app's pages may load: the console's rules, and also the photo being sent shown
/// from the phone (`blob:`), the manifest, and the service worker.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; \
     img-src 'self' blob: data:; script-src 'self'; connect-src 'self'; worker-src 'self'; \
     manifest-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// A page of the app: the console's page with the app's policy.
fn app_page(status: StatusCode, html: Result<String, askama::Error>) -> Response {
    let mut response = page(status, html);
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    response
}

#[derive(Template)]
#[template(path = "courier/message.html")]
struct MessagePage<'a> {
    signed_in: bool,
    heading: &'a str,
    text: &'a str,
    back: &'a str,
    back_label: &'a str,
}

/// A page that says what happened, in words, with the way on.
fn message(status: StatusCode, signed_in: bool, heading: &str, text: &str) -> Response {
    let (back, back_label) = if signed_in {
        ("/courier/", "Back to the shift")
    } else {
        ("/courier/sign-in", "Sign in")
    };
    app_page(
        status,
        MessagePage {
            signed_in,
            heading,
            text,
            back,
            back_label,
        }
        .render(),
    )
}

/// The page for a database that does not answer: nothing was done, try again.
fn unavailable(signed_in: bool) -> Response {
    message(
        StatusCode::SERVICE_UNAVAILABLE,
        signed_in,
        "Try again shortly",
        "The service cannot reach its database just now. Nothing was changed.",
    )
}

/// The `Set-Cookie` value of a session (`token`), or of its end (None).
fn cookie(state: &AppState, token: Option<&str>) -> HeaderValue {
    session_cookie(
        (COOKIE, "/courier"),
        &state.config.public_url(),
        state.courier_app_sessions.lifetime(),
        token,
    )
}

/// `response`, clearing the session cookie.
fn forgetting_session(state: &AppState, mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::SET_COOKIE, cookie(state, None));
    response
}

/// The request's live session, or the answer to give without one: to the sign-in page, or
/// the page saying the courier was suspended.
async fn signed_in(state: &AppState, headers: &HeaderMap) -> Result<CourierAppSession, Response> {
    let Some(token) = cookie_value(headers, COOKIE) else {
        return Err(see_other("/courier/sign-in"));
    };
    match state.courier_app_sessions.find(token).await {
        Ok(Some(SessionLookup::Live(session))) => {
            let decision = crate::middleware::courier_budget(state, session.courier.id);
            if decision.allowed {
                Ok(*session)
            } else {
                Err(too_many_requests(decision.retry_after))
            }
        }
        Ok(Some(SessionLookup::Ended {
            because: EndedBecause::Suspended,
            suspension_reason,
        })) => Err(forgetting_session(state, suspended(suspension_reason))),
        Ok(_) => Err(forgetting_session(state, see_other("/courier/sign-in"))),
        Err(error) => {
            tracing::error!(%error, "looking up a courier app session failed");
            Err(unavailable(false))
        }
    }
}

/// The page of a suspended courier, signed out.
fn suspended(reason: Option<String>) -> Response {
    let text = match reason {
        Some(reason) => format!(
            "Your operator suspended you ({reason}), so you are signed out and get no offers. \
             Call your operator."
        ),
        None => "Your operator suspended you, so you are signed out and get no offers. Call \
                 your operator."
            .to_owned(),
    };
    message(StatusCode::FORBIDDEN, false, "You are suspended", &text)
}

/// A posted form of a live session, carrying its CSRF token: the session and the fields.
async fn signed_form(
    state: &AppState,
    request: Request,
) -> Result<(CourierAppSession, Vec<(String, String)>), Response> {
    let session = signed_in(state, request.headers()).await?;
    let fields = form(request).await?;
    match csrf_refusal(&session, field(&fields, "csrf")) {
        Some(refusal) => Err(refusal),
        None => Ok((session, fields)),
    }
}

/// The refusal of a form without the session's token; None when it has it.
fn csrf_refusal(session: &CourierAppSession, token: Option<&str>) -> Option<Response> {
    match token {
        Some(token) if session.accepts(token) => None,
        _ => Some(message(
            StatusCode::FORBIDDEN,
            true,
            "This form has expired",
            "The form did not carry this session's token. Go back to the shift and try again.",
        )),
    }
}

#[derive(Template)]
#[template(path = "courier/sign_in.html")]
struct SignInPage<'a> {
    signed_in: bool,
    /// What the field holds: a code from an operator's link.
    credential: &'a str,
    error: Option<&'a str>,
}

/// `?code=` of an operator's sign-in link.
#[derive(Deserialize)]
pub struct SignInLink {
    code: Option<String>,
}

#[utoipa::path(
    get,
    path = "/courier/sign-in",
    operation_id = "courierAppSignInPage",
    tag = "courier app",
    summary = "The couriers' app: its sign-in page (one field, `credential`: the courier's credential or an operator's one-time code)",
    security(()),
    params(("code" = Option<String>, Query, description = "An operator's one-time code, filled in (the link the operator's console shows)")),
    responses((status = 200, description = "The page", content_type = "text/html", body = String))
)]
pub async fn sign_in_page(link: Result<Query<SignInLink>, QueryRejection>) -> Response {
    let code = link
        .ok()
        .and_then(|Query(link)| link.code)
        .unwrap_or_default();
    let code: String = code.chars().take(32).collect();
    app_page(
        StatusCode::OK,
        SignInPage {
            signed_in: false,
            credential: &code,
            error: None,
        }
        .render(),
    )
}

#[utoipa::path(
    post,
    path = "/courier/sign-in",
    operation_id = "courierAppSignIn",
    tag = "courier app",
    summary = "Sign in to the couriers' app: 303 to the shift with the session cookie",
    security(()),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`credential`: `crk_…` or a one-time code"),
    responses(
        (status = 303, description = "Signed in: to /courier/"),
        (status = 401, description = "A page: not a credential or a code in use", content_type = "text/html", body = String),
        (status = 403, description = "A page: the courier is suspended, or the form came from another site", content_type = "text/html", body = String),
        (status = 429, description = "A page: too many failed sign-ins from this address", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn sign_in(State(state): State<AppState>, request: Request) -> Response {
    let posted = match signed_out_form(&state, request).await {
        Ok(posted) => posted,
        Err(refusal) => return refusal,
    };
    let typed = field(&posted.fields, "credential").unwrap_or_default();
    match state.courier_app_sessions.sign_in(typed).await {
        Ok(signed_in) => {
            let mut response = see_other("/courier/");
            response
                .headers_mut()
                .insert(header::SET_COOKIE, cookie(&state, Some(&signed_in.token)));
            response
        }
        Err(SignInRefusal::Unknown) => {
            state
                .auth_failures
                .spend(posted.client, std::time::Instant::now());
            app_page(
                StatusCode::UNAUTHORIZED,
                SignInPage {
                    signed_in: false,
                    credential: "",
                    error: Some(
                        "That is not a courier credential or a sign-in code in use. A code \
                         works once, for 15 minutes: ask your operator for a new one.",
                    ),
                }
                .render(),
            )
        }
        Err(SignInRefusal::Suspended) => suspended(None),
        Err(SignInRefusal::Unavailable) => unavailable(false),
    }
}

#[utoipa::path(
    post,
    path = "/courier/sign-out",
    operation_id = "courierAppSignOut",
    tag = "courier app",
    summary = "Sign out of the couriers' app (the shift's online state is left as it is)",
    security(()),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`"),
    responses(
        (status = 303, description = "To the sign-in page, the cookie cleared"),
        (status = 403, description = "A page: the form has no valid token", content_type = "text/html", body = String),
    )
)]
pub async fn sign_out(State(state): State<AppState>, request: Request) -> Response {
    let token = cookie_value(request.headers(), COOKIE).map(str::to_owned);
    if let Err(refusal) = signed_form(&state, request).await {
        return refusal;
    }
    if let Some(token) = token
        && let Err(error) = state.courier_app_sessions.sign_out(&token).await
    {
        tracing::error!(%error, "ending a courier app session failed");
        return unavailable(true);
    }
    forgetting_session(&state, see_other("/courier/sign-in"))
}

#[utoipa::path(
    get,
    path = "/courier/app.css",
    operation_id = "courierAppStylesheet",
    tag = "courier app",
    summary = "The couriers' app's stylesheet",
    security(()),
    responses((status = 200, description = "CSS", content_type = "text/css", body = String))
)]
pub async fn stylesheet() -> Response {
    asset(
        "text/css; charset=utf-8",
        include_str!("../../../templates/courier/app.css"),
    )
}

#[utoipa::path(
    get,
    path = "/courier/app.js",
    operation_id = "courierAppScript",
    tag = "courier app",
    summary = "The couriers' app's script: live offers, the phone's position, the signature pad, the outbox's state (every page works without it)",
    security(()),
    responses((status = 200, description = "JavaScript", content_type = "text/javascript", body = String))
)]
pub async fn script() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../../../templates/courier/app.js"),
    )
}

#[utoipa::path(
    get,
    path = "/courier/outbox.js",
    operation_id = "courierAppServiceWorker",
    tag = "courier app",
    summary = "The couriers' app's service worker: keeps the last shift page for when the network is down, and keeps each move that could not be sent (photo included) until it can be",
    security(()),
    responses((status = 200, description = "JavaScript", content_type = "text/javascript", body = String))
)]
pub async fn service_worker() -> Response {
    let mut response = asset(
        "text/javascript; charset=utf-8",
        include_str!("../../../templates/courier/outbox.js"),
    );
    // A new worker is picked up at the next page, not five minutes later.
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[utoipa::path(
    get,
    path = "/courier/manifest.webmanifest",
    operation_id = "courierAppManifest",
    tag = "courier app",
    summary = "The couriers' app's web app manifest: installable, standalone",
    security(()),
    responses((status = 200, description = "The manifest", content_type = "application/manifest+json", body = Object))
)]
pub async fn manifest() -> Response {
    asset(
        "application/manifest+json",
        include_str!("../../../templates/courier/manifest.webmanifest"),
    )
}

#[utoipa::path(
    get,
    path = "/courier/icon.svg",
    operation_id = "courierAppIcon",
    tag = "courier app",
    summary = "The couriers' app's icon",
    security(()),
    responses((status = 200, description = "SVG", content_type = "image/svg+xml", body = String))
)]
pub async fn icon() -> Response {
    asset(
        "image/svg+xml",
        include_str!("../../../templates/courier/icon.svg"),
    )
}

#[utoipa::path(
    get,
    path = "/courier/icon-192.png",
    operation_id = "courierAppIcon192",
    tag = "courier app",
    summary = "The couriers' app's icon, 192 pixels square (for installers that take no SVG)",
    security(()),
    responses((status = 200, description = "PNG", content_type = "image/png", body = Vec<u8>))
)]
pub async fn icon_192() -> Response {
    asset(
        "image/png",
        &include_bytes!("../../../templates/courier/icon-192.png")[..],
    )
}

#[utoipa::path(
    get,
    path = "/courier/icon-512.png",
    operation_id = "courierAppIcon512",
    tag = "courier app",
    summary = "The couriers' app's icon, 512 pixels square (for installers that take no SVG)",
    security(()),
    responses((status = 200, description = "PNG", content_type = "image/png", body = Vec<u8>))
)]
pub async fn icon_512() -> Response {
    asset(
        "image/png",
        &include_bytes!("../../../templates/courier/icon-512.png")[..],
    )
}

/// The page for a courier past its budget of requests.
fn too_many_requests(wait: std::time::Duration) -> Response {
    let mut response = message(
        StatusCode::TOO_MANY_REQUESTS,
        true,
        "Too many requests",
        "The app sent more than it may for now. Wait a moment, then try again.",
    );
    retry_after(&mut response, wait);
    response
}
