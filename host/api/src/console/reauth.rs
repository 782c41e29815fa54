//! Re-authentication before a sensitive change (making or revoking a key, changing the
//! account's settings): past the service's window since the person last gave their password,
//! the form is answered with a page asking for it, which sends the same form again with it.

use std::net::IpAddr;

use askama::Template;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::respond::{SessionBar, field, message, page, token};
use crate::state::AppState;
use courier_core::auth::ConsoleSession;

/// The field the password comes back in (not `password`, which browsers would save against
/// whatever form it sits in).
const FIELD: &str = "reauthentication";

#[derive(Template)]
#[template(path = "console/reauthenticate.html")]
struct ReauthenticatePage<'a> {
    session: Option<SessionBar>,
    what: &'a str,
    window: String,
    problem: Option<&'a str>,
    action: &'a str,
    fields: Vec<(&'a str, &'a str)>,
    email: &'a str,
    back: &'a str,
}

/// Whether `given` confirms the session's person: a code of their second factor (six digits,
/// or a recovery code), when they have one, or else their password (never six digits: it has
/// at least ten characters).
async fn confirms(
    state: &AppState,
    session: &ConsoleSession,
    given: &str,
) -> Result<bool, sqlx::Error> {
    let person = session.person.id;
    let looks_like_code = given.trim().len() == 6
        && given.trim().chars().all(|c| c.is_ascii_digit())
        || courier_core::team::second_factor::is_recovery_code(given);
    if looks_like_code
        && state.teams.has_second_factor(person).await?
        && state.teams.check_second_factor(person, given).await?
    {
        return Ok(true);
    }
    state.teams.check_password(person, given).await
}

/// Whether a sensitive form (`what` it does, posted to `action`, `back` the page it came from)
/// may act: the person gave their password within the window, or gives it now in the form.
/// Otherwise the page to answer: asking for it (401), or saying it was wrong (401, the
/// address's failure budget spent).
pub(super) async fn confirmed(
    state: &AppState,
    (headers, client): (&HeaderMap, IpAddr),
    session: &ConsoleSession,
    fields: &[(String, String)],
    (what, action, back): (&str, &str, &str),
) -> Result<(), Response> {
    let sessions = &state.console_sessions;
    if sessions.recently_authenticated(session) {
        return Ok(());
    }
    let ask = |problem: Option<&str>| {
        let kept = fields
            .iter()
            .filter(|(name, _)| name != FIELD && name != "username")
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let window = state
            .config
            .team
            .reauthentication
            .as_secs()
            .div_ceil(60)
            .max(1);
        page(
            StatusCode::UNAUTHORIZED,
            ReauthenticatePage {
                session: Some(SessionBar::from(session)),
                what,
                window: format!("{window} minute{}", if window == 1 { "" } else { "s" }),
                problem,
                action,
                fields: kept,
                email: &session.person.email,
                back,
            }
            .render(),
        )
    };
    let Some(password) = field(fields, FIELD).filter(|p| !p.is_empty()) else {
        return Err(ask(None));
    };
    let unavailable = |error: sqlx::Error| {
        tracing::error!(%error, "a console re-authentication failed");
        message(
            StatusCode::SERVICE_UNAVAILABLE,
            Some(session),
            "Try again shortly",
            "The console cannot check your password just now; nothing was done.",
        )
    };
    match confirms(state, session, password).await {
        Ok(true) => {}
        Ok(false) => {
            state.auth_failures.spend(client, std::time::Instant::now());
            return Err(ask(Some(
                "That is neither your password nor a code of yours; nothing was done.",
            )));
        }
        Err(error) => return Err(unavailable(error)),
    }
    if let Some(token) = token(headers) {
        sessions.reauthenticated(token).await.map_err(unavailable)?;
    }
    Ok(())
}
