//! The merchant's cards and charges: the cards on file with their status and the default, a
//! test card added from the sandbox's designated cards (test keys only: a live card is added
//! through the provider's own form, `card_form`), the default changed, a card removed; and the
//! recent charges, one per job.

use askama::Template;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use uuid::Uuid;

use super::respond::{
    SessionBar, field, message, money, page, permitted_form, see_other, signed_in, when,
};
use crate::error::ApiError;
use crate::state::AppState;
use courier_core::auth::ConsoleSession;
use courier_core::payments::PaymentError;
use courier_domain::Environment;
use courier_domain::team::Permission;

/// The sandbox's designated cards (the API's description, section 4), as a person picks one.
const SANDBOX_CARDS: [(&str, &str); 6] = [
    ("4242424242424242", "Works"),
    ("4000000000000002", "Declined, no reason; never retried"),
    (
        "4000000000009995",
        "Declined for insufficient funds (about the moment, not the card)",
    ),
    ("4000000000000069", "Expired; card finished"),
    ("4000000000009987", "Reported lost; taken out of use"),
    (
        "4000000000000119",
        "Provider unreachable; not a decline; retried",
    ),
];

struct ListedCard {
    id: Uuid,
    name: String,
    expiry: String,
    status: String,
    is_default: bool,
    usable: bool,
    attached: String,
    dead_reason: String,
}

struct ListedCharge {
    job_id: Uuid,
    status: String,
    amount: String,
    refunded: String,
    raised: String,
    captured: String,
    note: String,
}

#[derive(Template)]
#[template(path = "console/cards.html")]
struct CardsPage<'a> {
    session: Option<SessionBar>,
    test: bool,
    sandbox_cards: &'a [(&'a str, &'a str)],
    cards: Vec<ListedCard>,
    charges: Vec<ListedCharge>,
    notice: Option<&'a str>,
    problem: Option<String>,
    /// The cards are read again every few seconds: a provider's card is on its way.
    live: bool,
}

/// What the page says after a form was sent (PRG).
#[derive(Deserialize, Default)]
pub struct CardsQuery {
    done: Option<String>,
    /// With `done=stored`: how many cards were on file when the provider's form was drawn; the
    /// page follows itself until there are more.
    had: Option<usize>,
}

/// What the cards page says besides the cards.
#[derive(Default)]
struct Said<'a> {
    notice: Option<&'a str>,
    problem: Option<String>,
    /// Cards on file before a provider's card on its way (`CardsQuery::had`).
    awaiting_more_than: Option<usize>,
}

async fn render(
    state: &AppState,
    session: &ConsoleSession,
    status: StatusCode,
    said: Said<'_>,
) -> Response {
    let merchant = &session.merchant;
    let found = async {
        let cards = state.payments.cards(merchant).await?;
        let charges = state.payments.recent_charges(merchant).await?;
        Ok::<_, PaymentError>((cards, charges))
    };
    let (cards, charges) = match found.await {
        Ok(found) => found,
        Err(error) => {
            tracing::error!(%error, "reading cards and charges for the console failed");
            return message(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(session),
                "Try again shortly",
                "The console cannot reach its database just now.",
            );
        }
    };
    let cards: Vec<ListedCard> = cards
        .into_iter()
        .map(|c| {
            let status = c.status.as_str().to_owned();
            ListedCard {
                id: c.id,
                name: format!("{} ending {}", c.brand, c.last_four),
                expiry: format!("{:02}/{}", c.expiry_month, c.expiry_year),
                usable: status == "active",
                status,
                is_default: c.is_default,
                attached: when(c.attached_at),
                dead_reason: c.dead_reason.unwrap_or_default(),
            }
        })
        .collect();
    let charges = charges
        .iter()
        .map(|c| ListedCharge {
            job_id: c.job_id,
            status: c.status.as_str().to_owned(),
            amount: money(&c.currency, c.amount_minor),
            refunded: money(&c.currency, c.refunded_amount_minor),
            raised: when(c.raised_at),
            captured: c.captured_at.map(when).unwrap_or_default(),
            note: c
                .decline_code
                .clone()
                .or_else(|| c.last_error.clone())
                .unwrap_or_default(),
        })
        .collect();
    page(
        status,
        CardsPage {
            session: Some(SessionBar::from(session)),
            test: merchant.environment == Environment::Test,
            sandbox_cards: &SANDBOX_CARDS,
            live: said
                .awaiting_more_than
                .is_some_and(|had| cards.len() <= had),
            cards,
            charges,
            notice: said.notice,
            problem: said.problem,
        }
        .render(),
    )
}

#[utoipa::path(
    get,
    path = "/console/cards",
    operation_id = "consoleCards",
    tag = "console",
    summary = "The merchant's cards (with the form to add a test card) and recent charges",
    security(()),
    params(
        ("done" = Option<String>, Query, description = "What the last form did: added, stored (by the provider, confirmed later), default or removed"),
        ("had" = Option<usize>, Query, description = "With done=stored: the cards on file when the provider's form was drawn; the list follows itself every 3 s until there are more"),
    ),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn cards_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<CardsQuery>, QueryRejection>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let query = query.map(|q| q.0).unwrap_or_default();
    let notice = match query.done.as_deref() {
        Some("added") => Some("The card is on file."),
        Some("stored") => Some(
            "Your payment provider stored the card: it is listed here once the provider confirms \
             it, usually within seconds.",
        ),
        Some("default") => Some("Deliveries are charged to that card now."),
        Some("removed") => Some("The card is removed."),
        _ => None,
    };
    let awaiting_more_than = query
        .had
        .filter(|_| query.done.as_deref() == Some("stored"));
    let said = Said {
        notice,
        awaiting_more_than,
        ..Said::default()
    };
    render(&state, &session, StatusCode::OK, said).await
}

/// The page again with what went wrong, at the API's status for it.
pub(super) async fn refused(
    state: &AppState,
    session: &ConsoleSession,
    error: PaymentError,
) -> Response {
    let api = ApiError::from(error);
    let (status, _) = api.status_and_code();
    if status == StatusCode::NOT_FOUND {
        return message(
            status,
            Some(session),
            "No such card",
            "There is no such card on file.",
        );
    }
    let said = Said {
        problem: Some(api.public_message()),
        ..Said::default()
    };
    render(state, session, status, said).await
}

#[utoipa::path(
    post,
    path = "/console/cards",
    operation_id = "consoleAddCard",
    tag = "console",
    summary = "Adds a sandbox card (test keys): form fields `card` (a designated number), `make_default` and `csrf`",
    security(()),
    request_body(content = String, description = "`card=…&make_default=on&csrf=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Added: to /console/cards?done=added"),
        (status = 400, description = "A page: no designated card chosen, or a live key", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 422, description = "A page: the card was refused (declined, expired…)", content_type = "text/html", body = String),
        (status = 503, description = "A page: the provider or the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn add_card(State(state): State<AppState>, request: Request) -> Response {
    let (session, fields) =
        match permitted_form(&state, request, Permission::ManageSettings, "adding cards").await {
            Ok(signed) => signed,
            Err(answer) => return answer,
        };
    let chosen =
        field(&fields, "card").and_then(|number| SANDBOX_CARDS.iter().find(|(n, _)| *n == number));
    let (Environment::Test, Some((number, _))) = (session.merchant.environment, chosen) else {
        let problem = if session.merchant.environment == Environment::Live {
            "Live cards are added through your payment provider's card form (Add a card), not here."
        } else {
            "Choose one of the sandbox's cards."
        };
        let said = Said {
            problem: Some(problem.to_owned()),
            ..Said::default()
        };
        return render(&state, &session, StatusCode::BAD_REQUEST, said).await;
    };
    let make_default = field(&fields, "make_default").is_some();
    let reference = format!("pm_sandbox_{number}");
    match state
        .payments
        .attach(&session.merchant, &reference, make_default)
        .await
    {
        Ok(_) => see_other("/console/cards?done=added"),
        Err(error) => refused(&state, &session, error).await,
    }
}

#[utoipa::path(
    post,
    path = "/console/cards/{id}/{action}",
    operation_id = "consoleCardAction",
    tag = "console",
    summary = "Makes a card the default (`default`) or removes it (`remove`): form field `csrf`",
    security(()),
    params(
        ("id" = Uuid, Path, description = "The card's id"),
        ("action" = String, Path, description = "default or remove"),
    ),
    request_body(content = String, description = "`csrf=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Done: to /console/cards?done=default or removed"),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such card (or action)", content_type = "text/html", body = String),
        (status = 422, description = "A page: a finished card cannot be the default", content_type = "text/html", body = String),
    )
)]
pub async fn card_action(
    State(state): State<AppState>,
    Path((id, action)): Path<(String, String)>,
    request: Request,
) -> Response {
    let (session, _) = match permitted_form(
        &state,
        request,
        Permission::ManageSettings,
        "changing cards",
    )
    .await
    {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let Ok(id) = Uuid::parse_str(&id) else {
        return refused(&state, &session, PaymentError::PaymentMethodNotFound).await;
    };
    let merchant = &session.merchant;
    let (done, result) = match action.as_str() {
        "default" => ("default", state.payments.make_default(merchant, id).await),
        "remove" => ("removed", state.payments.remove(merchant, id).await),
        _ => return refused(&state, &session, PaymentError::PaymentMethodNotFound).await,
    };
    match result {
        Ok(()) => see_other(&format!("/console/cards?done={done}")),
        Err(error) => refused(&state, &session, error).await,
    }
}
