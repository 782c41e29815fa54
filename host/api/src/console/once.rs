//! Forms that act once. Every form the merchant console draws carries a random `once` token
//! beside its CSRF token ([`once_token`]). The first post of a token claims it for the
//! session's merchant and environment, acts, and keeps its answer: a redirect's target as it
//! is, a page by sending the browser to fetch it (`GET /console/answers/{once}`: redirect after
//! post, so a reload reads and never acts again). A repeat of the post (a reload, a double
//! click, the back button) acts on nothing and is sent to that same answer. A page that shows
//! a secret (a new key's, an endpoint's signing secret) or draws a provider's form is answered
//! at once and not kept, so the secret is shown once: its repeat says what happened and where
//! to look. A refused post (4xx, 5xx) gives its token back: it changed nothing, and the form
//! corrected may be sent again.

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use uuid::Uuid;

use super::respond::{
    CONTENT_SECURITY_POLICY, MAX_FORM_BYTES, message, page, see_other, session, signed_in,
};
use crate::state::AppState;
use courier_core::auth::{ConsoleSession, KeptAnswer};

/// A fresh token for one drawn form (the templates call it for each form they draw).
pub(crate) fn once_token() -> String {
    Uuid::new_v4().to_string()
}

/// Marks an answer page that must be shown once only (it shows a secret): never kept.
#[derive(Clone, Copy, Debug)]
pub(super) struct ShownOnce;

/// The most of a page kept for a form's repeats.
const MOST_KEPT: usize = 1 << 20;

/// The layer: a merchant console post with a `once` token is acted on once.
pub(crate) async fn answer_once(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path().to_owned();
    let console_form = request.method() == Method::POST
        && path.starts_with("/console/")
        && !matches!(path.as_str(), "/console/sign-in" | "/console/sign-out");
    if !console_form {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_FORM_BYTES).await else {
        return message(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            "Too much to read",
            "The form sent more than the console takes.",
        );
    };
    let once = form_urlencoded::parse(&bytes)
        .find(|(name, _)| name == "once")
        .and_then(|(_, value)| Uuid::parse_str(&value).ok());
    let request = Request::from_parts(parts, Body::from(bytes));
    let Some(once) = once else {
        return next.run(request).await;
    };
    // Without a session the form is refused as it always is; the token is no one's.
    let Ok(Some(session)) = session(&state, request.headers()).await else {
        return next.run(request).await;
    };
    let sessions = &state.console_sessions;
    match sessions.claim_form(&session, once, &path).await {
        Ok(None) => {}
        Ok(Some(first)) => return repeat(&session, once, &first),
        Err(error) => return unavailable(&session, &error),
    }
    let response = next.run(request).await;
    let status = response.status();
    let kept = if status.is_client_error() || status.is_server_error() {
        // Refused: it changed nothing, and the form may be sent again.
        sessions.release_form(&session, once).await
    } else if status.is_redirection() {
        let location = response
            .headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok());
        sessions.answer_form(&session, once, location, None).await
    } else if shown_once(&response) {
        sessions.answer_form(&session, once, None, None).await
    } else {
        let (parts, body) = response.into_parts();
        let Ok(html) = axum::body::to_bytes(body, MOST_KEPT).await else {
            return unavailable(&session, &"the answer page could not be read");
        };
        let html = String::from_utf8_lossy(&html).into_owned();
        if let Err(error) = sessions
            .answer_form(&session, once, None, Some(&html))
            .await
        {
            // Acted, but its answer cannot be kept: shown now rather than lost.
            tracing::error!(%error, "a console form's answer could not be kept");
            return Response::from_parts(parts, Body::from(html));
        }
        return see_other(&answer_path(once));
    };
    if let Err(error) = kept {
        tracing::error!(%error, "a console form's claim could not be updated");
    }
    response
}

/// Whether `response` must not be kept: it shows a secret, or it is a page with a policy of
/// its own (a provider's card form), which only the post that drew it may show.
fn shown_once(response: &Response) -> bool {
    response.extensions().get::<ShownOnce>().is_some()
        || response.headers().get(header::CONTENT_SECURITY_POLICY)
            != Some(&HeaderValue::from_static(CONTENT_SECURITY_POLICY))
}

fn answer_path(once: Uuid) -> String {
    format!("/console/answers/{once}")
}

/// The answer to a form sent again: its first answer, or where to look.
fn repeat(session: &ConsoleSession, once: Uuid, first: &KeptAnswer) -> Response {
    if let Some(location) = &first.location {
        return see_other(location);
    }
    if first.page.is_some() {
        return see_other(&answer_path(once));
    }
    let text = if first.answered {
        format!(
            "This form was sent before and acted on then; what it did shows on {}. A secret it \
             showed was shown that once.",
            first.form_path
        )
    } else {
        format!(
            "This form was sent before and is still being acted on, or its answer was lost: \
             look at {} before sending it again.",
            first.form_path
        )
    };
    message(
        StatusCode::CONFLICT,
        Some(session),
        "This form was already sent",
        &text,
    )
}

fn unavailable(session: &ConsoleSession, error: &dyn std::fmt::Display) -> Response {
    tracing::error!(%error, "a console form could not be claimed");
    message(
        StatusCode::SERVICE_UNAVAILABLE,
        Some(session),
        "Try again shortly",
        "The console cannot reach its database just now; nothing was done.",
    )
}

#[utoipa::path(
    get,
    path = "/console/answers/{once}",
    operation_id = "consoleFormAnswer",
    tag = "console",
    summary = "The page a merchant console form's post answered (redirect after post): the post answers 303 here, and so does any repeat of it",
    security(()),
    params(("once" = String, Path, description = "The form's `once` token")),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 404, description = "A page: no kept answer of this session's merchant and environment by that token", content_type = "text/html", body = String),
    )
)]
pub async fn form_answer(
    State(state): State<AppState>,
    Path(once): Path<String>,
    headers: HeaderMap,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let kept = match Uuid::parse_str(&once) {
        Ok(once) => state.console_sessions.form_answer(&session, once).await,
        Err(_) => Ok(None),
    };
    match kept {
        Ok(Some(KeptAnswer {
            page: Some(html), ..
        })) => page(StatusCode::OK, Ok(html)),
        Ok(_) => message(
            StatusCode::NOT_FOUND,
            Some(&session),
            "No such answer",
            "There is no answer of yours to show here (answers are kept for a day).",
        ),
        Err(error) => unavailable(&session, &error),
    }
}
