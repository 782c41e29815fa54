//! The operator console, `/ops/`: pages for operators, who sign in with their e-mail address
//! and password, then their second factor (set up at the first sign-in: every operator has
//! one), under the merchant console's session rules: a cookie (`HttpOnly`, `SameSite=Strict`,
//! `Secure` when the public URL is https) naming a stored session that ends at sign-out, at
//! expiry (`COURIER_CONSOLE_SESSION_MS`), or when its person is no longer an operator; the
//! session's CSRF token on every form; failed sign-ins spending the address's and the
//! account's budgets. Each operator's role says what they may do (what they may not is not
//! offered); every action is the operator API's, recorded in the audit trail under the
//! operator's address.

pub(crate) mod account;
pub(crate) mod audit;
pub(crate) mod couriers;
pub(crate) mod desk;
pub(crate) mod dispatch;
mod histogram;
pub(crate) mod jobs;
pub(crate) mod market;
pub(crate) mod merchants;
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
use courier_core::auth::operator_sessions::{OperatorSession, SecondFactorStep};
use courier_domain::operators::OpsPermission;

/// The session cookie's name.
const COOKIE: &str = "courier_ops";

/// What the layout shows of the session: who, in which role, and what the role opens.
pub(super) struct OperatorBar {
    pub operator: String,
    pub name: String,
    pub role: &'static str,
    pub csrf: String,
    /// The session is complete (its second factor given): the console's links are shown.
    pub complete: bool,
    pub may_manage_price_books: bool,
    pub may_refund: bool,
}

impl From<&OperatorSession> for OperatorBar {
    fn from(session: &OperatorSession) -> Self {
        OperatorBar {
            operator: session.operator.name.clone(),
            name: session.name.clone(),
            role: session.role.label(),
            csrf: session.csrf_token.clone(),
            complete: session.owes.is_none(),
            may_manage_price_books: session.may(OpsPermission::ManagePriceBooks),
            may_refund: session.may(OpsPermission::Refund),
        }
    }
}

/// Whether the page's session may upload and activate price books (for templates).
pub(super) fn may_manage_price_books(session: &Option<OperatorBar>) -> bool {
    session.as_ref().is_some_and(|s| s.may_manage_price_books)
}

/// Whether the page's session may refund charges (for templates).
pub(super) fn may_refund(session: &Option<OperatorBar>) -> bool {
    session.as_ref().is_some_and(|s| s.may_refund)
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

/// The request's live session, complete or not; None when signed out.
async fn session(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Option<OperatorSession>, Response> {
    let Some(token) = token(headers) else {
        return Ok(None);
    };
    state.operator_sessions.find(token).await.map_err(|error| {
        tracing::error!(%error, "looking up an operator console session failed");
        unavailable(None)
    })
}

/// The page for a database that does not answer: nothing was read, try again.
pub(super) fn unavailable(session: Option<&OperatorSession>) -> Response {
    message(
        StatusCode::SERVICE_UNAVAILABLE,
        session,
        "Try again shortly",
        "The console cannot reach its database just now.",
    )
}

/// Where a session that still owes its second factor goes.
fn owed_step(step: SecondFactorStep) -> Response {
    match step {
        SecondFactorStep::Code => see_other("/ops/sign-in/code"),
        SecondFactorStep::Setup => see_other("/ops/second-factor"),
    }
}

/// The request's complete session, or the answer to give without one: to the sign-in page,
/// or to the second factor a session still owes.
async fn signed_in(state: &AppState, headers: &HeaderMap) -> Result<OperatorSession, Response> {
    let session = session(state, headers)
        .await?
        .ok_or_else(|| see_other("/ops/sign-in"))?;
    match session.owes {
        None => Ok(session),
        Some(step) => Err(owed_step(step)),
    }
}

/// A posted form of a complete session, carrying the session's CSRF token: the session and
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

/// A posted form of any session, complete or still owing its second factor (signing out,
/// giving the code), carrying the session's CSRF token.
async fn any_signed_form(
    state: &AppState,
    request: Request,
) -> Result<(OperatorSession, Vec<(String, String)>), Response> {
    let session = session(state, request.headers())
        .await?
        .ok_or_else(|| see_other("/ops/sign-in"))?;
    let fields = form(request).await?;
    match token_refusal(&session, field(&fields, "csrf")) {
        Some(refusal) => Err(refusal),
        None => Ok((session, fields)),
    }
}

/// [`signed_form`], of a session whose role may do `permission` (`what`, in words, for the
/// page that refuses it).
async fn permitted_form(
    state: &AppState,
    request: Request,
    permission: OpsPermission,
    what: &str,
) -> Result<(OperatorSession, Vec<(String, String)>), Response> {
    let (session, fields) = signed_form(state, request).await?;
    if !session.may(permission) {
        return Err(not_allowed(&session, what));
    }
    Ok((session, fields))
}

/// The page refusing what the session's role may not do.
fn not_allowed(session: &OperatorSession, what: &str) -> Response {
    message(
        StatusCode::FORBIDDEN,
        Some(session),
        "Not for your role",
        &format!(
            "Your role ({}: {}) does not include {what}. Ask an operator with the Admin role.",
            session.role.label(),
            session.role.summary()
        ),
    )
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
    // Sent to the console's own address, which may be another than the service's.
    session_cookie(
        (COOKIE, "/ops"),
        &state.config.ops_public_url(),
        state.operator_sessions.lifetime(),
        token,
    )
}
