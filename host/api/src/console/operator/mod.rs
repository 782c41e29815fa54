//! The operator console, `/ops/`: pages for people, signed in with an operator token (form
//! field `token`), under the merchant console's session rules: a cookie (`HttpOnly`,
//! `SameSite=Strict`, `Secure` when the public URL is https) naming a stored session that ends
//! at sign-out, at expiry (`COURIER_CONSOLE_SESSION_MS`), or when its operator token is no
//! longer configured; the session's CSRF token on every form; failed sign-ins spending the
//! address's operator failure budget. Every action is the operator API's, recorded in the
//! audit trail under the operator's name.

pub(crate) mod audit;
mod histogram;
pub(crate) mod market;
pub(crate) mod pages;
pub(crate) mod payments;
pub(crate) mod plugins;
pub(crate) mod price_books;

use askama::Template;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;

use super::respond::{cookie_value, field, form, page, see_other, session_cookie};
use crate::state::AppState;
use courier_core::auth::operator_sessions::OperatorSession;

/// The session cookie's name.
const COOKIE: &str = "courier_ops";

/// What the layout shows of the session.
pub(super) struct OperatorBar {
    pub operator: String,
    pub csrf: String,
}

impl From<&OperatorSession> for OperatorBar {
    fn from(session: &OperatorSession) -> Self {
        OperatorBar {
            operator: session.operator.name.clone(),
            csrf: session.csrf_token.clone(),
        }
    }
}

#[derive(Template)]
#[template(path = "console/ops_message.html")]
struct MessagePage<'a> {
    session: Option<OperatorBar>,
    heading: &'a str,
    text: &'a str,
    back: &'a str,
    back_label: &'a str,
}

/// A page that says what went wrong, in words, with the way back.
pub(super) fn message(
    status: StatusCode,
    session: Option<&OperatorSession>,
    heading: &str,
    text: &str,
) -> Response {
    let (back, back_label) = match session {
        Some(_) => ("/ops/markets", "Back to the markets"),
        None => ("/ops/sign-in", "Sign in"),
    };
    page(
        status,
        MessagePage {
            session: session.map(OperatorBar::from),
            heading,
            text,
            back,
            back_label,
        }
        .render(),
    )
}

/// The session cookie's token, if the request has one.
fn token(headers: &HeaderMap) -> Option<&str> {
    cookie_value(headers, COOKIE)
}

/// The request's live session; None when signed out.
async fn session(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Option<OperatorSession>, Response> {
    let Some(token) = token(headers) else {
        return Ok(None);
    };
    state
        .operator_sessions
        .find(token, &state.operators)
        .await
        .map_err(|error| {
            tracing::error!(%error, "looking up an operator console session failed");
            message(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                "Try again shortly",
                "The console cannot reach its database just now.",
            )
        })
}

/// The request's session, or the answer to give without one: to the sign-in page.
async fn signed_in(state: &AppState, headers: &HeaderMap) -> Result<OperatorSession, Response> {
    session(state, headers)
        .await?
        .ok_or_else(|| see_other("/ops/sign-in"))
}

/// A posted form of a signed-in session, carrying the session's CSRF token: the session and
/// the form's fields, or the answer to give instead.
async fn signed_form(
    state: &AppState,
    request: Request,
) -> Result<(OperatorSession, Vec<(String, String)>), Response> {
    let session = signed_in(state, request.headers()).await?;
    let fields = form(request).await?;
    match token_refusal(&session, field(&fields, "csrf")) {
        Some(refusal) => Err(refusal),
        None => Ok((session, fields)),
    }
}

/// The answer to a form that did not carry the session's CSRF token; `None` if it did.
fn token_refusal(session: &OperatorSession, token: Option<&str>) -> Option<Response> {
    match token {
        Some(token) if session.accepts(token) => None,
        _ => Some(message(
            StatusCode::FORBIDDEN,
            Some(session),
            "This form has expired",
            "The form did not carry this session's token. Reload the page and send it again.",
        )),
    }
}

/// The `Set-Cookie` value of a session (`token`), or of its end (None).
fn cookie(state: &AppState, token: Option<&str>) -> HeaderValue {
    session_cookie(
        state,
        (COOKIE, "/ops"),
        state.operator_sessions.lifetime(),
        token,
    )
}
