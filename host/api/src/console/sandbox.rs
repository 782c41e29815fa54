//! The sandbox page, for test sessions: book a test delivery between two addresses with a
//! scenario, then watch its run play out (the page reloads itself while it runs), take its
//! next step at once, or change its scenario while no courier is on it. The same operations as
//! the API's quotes, bookings and `/v1/sandbox` routes, for the session's merchant.

use askama::Template;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};
use uuid::Uuid;

use super::respond::{
    SessionBar, field, message, over_budget, page, permitted_form, refused_unless, see_other,
    signed_in, when,
};
use crate::error::ApiError;
use crate::state::AppState;
use courier_core::auth::ConsoleSession;
use courier_core::jobs::booking;
use courier_core::quotes::{self, QuoteContext};
use courier_core::rate_limit::Budget;
use courier_core::sandbox::{RunView, SandboxError};
use courier_domain::Environment;
use courier_domain::quote::QuoteRequest;
use courier_domain::sandbox::Scenario;
use courier_domain::team::Permission;

/// How often a running page reloads itself, in seconds.
const RELOAD_SECONDS: u32 = 3;

/// What the booking form holds, kept when it is refused.
#[derive(Default)]
struct Booking {
    pickup: String,
    pickup_name: String,
    pickup_phone: String,
    dropoff: String,
    dropoff_name: String,
    dropoff_phone: String,
    vehicle: String,
    scenario: String,
}

impl Booking {
    fn from_fields(fields: &[(String, String)]) -> Self {
        let text = |name: &str| field(fields, name).unwrap_or("").trim().to_owned();
        Booking {
            pickup: text("pickup"),
            pickup_name: text("pickup_name"),
            pickup_phone: text("pickup_phone"),
            dropoff: text("dropoff"),
            dropoff_name: text("dropoff_name"),
            dropoff_phone: text("dropoff_phone"),
            vehicle: text("vehicle"),
            scenario: text("scenario"),
        }
    }
}

#[derive(Template)]
#[template(path = "console/sandbox.html")]
struct SandboxPage {
    session: Option<SessionBar>,
    form: Booking,
    vehicles: Vec<&'static str>,
    scenarios: Vec<&'static str>,
    problem: Option<String>,
}

#[derive(Template)]
#[template(path = "console/sandbox_run.html")]
struct RunPage {
    session: Option<SessionBar>,
    csrf: String,
    run: RunView,
    next_at: String,
    /// Seconds between reloads while the run goes on by itself.
    reload: Option<u32>,
    scenarios: Vec<&'static str>,
    notice: Option<String>,
}

/// The sandbox is the test environment's: a live session finds no such page (the answer
/// to give it; `None` for a test session).
fn live_refusal(session: &ConsoleSession) -> Option<Response> {
    match session.merchant.environment {
        Environment::Test => None,
        Environment::Live => Some(message(
            StatusCode::NOT_FOUND,
            Some(session),
            "No sandbox here",
            "The sandbox is for test keys: sign in with a ck_test_ key to book test deliveries.",
        )),
    }
}

fn scenarios() -> Vec<&'static str> {
    Scenario::ALL.iter().map(|s| s.as_str()).collect()
}

fn booking_page(
    session: &ConsoleSession,
    status: StatusCode,
    form: Booking,
    problem: Option<String>,
) -> Response {
    page(
        status,
        SandboxPage {
            session: Some(SessionBar::from(session)),
            form,
            vehicles: courier_domain::Vehicle::ALL
                .map(courier_domain::Vehicle::as_str)
                .to_vec(),
            scenarios: scenarios(),
            problem,
        }
        .render(),
    )
}

#[utoipa::path(
    get,
    path = "/console/sandbox",
    operation_id = "consoleSandbox",
    tag = "console",
    summary = "The sandbox (test sessions): the form to book a test delivery between two addresses with a scenario",
    security(()),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 404, description = "A page: a live session has no sandbox", content_type = "text/html", body = String),
    )
)]
pub async fn sandbox_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    if let Some(refused) = refused_unless(&session, Permission::UseSandbox, "the sandbox") {
        return refused;
    }
    if let Some(answer) = live_refusal(&session) {
        return answer;
    }
    let form = Booking {
        scenario: Scenario::HappyPath.as_str().into(),
        ..Booking::default()
    };
    booking_page(&session, StatusCode::OK, form, None)
}

/// The first place the markets find for `address`, as a stop's coordinates; or why not, with
/// the status to answer (422 for an address no market knows, 503 while the search cannot run).
fn place(state: &AppState, address: &str) -> Result<(f64, f64), (StatusCode, String)> {
    if address.is_empty() {
        return Err((
            StatusCode::UNPROCESSABLE_ENTITY,
            "give both addresses".into(),
        ));
    }
    match state.markets.search_places(address, None, 1) {
        Ok(found) => found
            .first()
            .map(|p| (p.latitude, p.longitude))
            .ok_or_else(|| {
                let why = format!("no place is called {address:?} in any market");
                (StatusCode::UNPROCESSABLE_ENTITY, why)
            }),
        Err(error) => Err((
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the address search is unavailable just now ({error})"),
        )),
    }
}

/// A refusal of the API's as the form shows it: its message and its code.
fn refusal(error: impl Into<ApiError>) -> (StatusCode, String) {
    let api: ApiError = error.into();
    let (status, code) = api.status_and_code();
    (status, format!("{api} ({code})"))
}

/// Quotes and books the form's delivery as the API does; answers the job's id.
async fn book(
    state: &AppState,
    session: &ConsoleSession,
    form: &Booking,
) -> Result<Uuid, (StatusCode, String)> {
    let scenario = Scenario::parse(&form.scenario).ok_or_else(|| {
        let why = "choose a scenario from the list".to_owned();
        (StatusCode::UNPROCESSABLE_ENTITY, why)
    })?;
    let pickup = place(state, &form.pickup)?;
    let dropoff = place(state, &form.dropoff)?;
    let now = courier_core::infra::clock::now();
    let mut asked = json!({
        "pickup": {"latitude": pickup.0, "longitude": pickup.1},
        "dropoff": {"latitude": dropoff.0, "longitude": dropoff.1},
    });
    if !form.vehicle.is_empty() {
        asked["vehicle"] = json!(form.vehicle);
    }
    let request = QuoteRequest::parse(&asked, now).map_err(refusal)?;
    let context = QuoteContext {
        markets: &state.markets,
        price_books: &state.price_books,
        writer: &state.quote_writer,
        lifetime: state.config.quote_lifetime,
        dispatch_deadline: state.config.dispatch.deadline,
    };
    let quote = quotes::create(&context, &session.merchant, request, now)
        .await
        .map_err(refusal)?;
    let stop = |at: (f64, f64), address: &str, name: &str, phone: &str| {
        json!({
            "latitude": at.0, "longitude": at.1, "address": address,
            "contact_name": name, "contact_phone": phone,
        })
    };
    let body = json!({
        "quote_id": quote.id,
        "pickup": stop(pickup, &form.pickup, &form.pickup_name, &form.pickup_phone),
        "dropoff": stop(dropoff, &form.dropoff, &form.dropoff_name, &form.dropoff_phone),
    });
    // A fresh key: each form sent is its own booking (its quote can be booked only once).
    let key = format!("console-sandbox-{}", Uuid::new_v4());
    let booked = booking::book(
        &state.booking,
        &session.merchant,
        &key,
        &body,
        Some(scenario),
        now,
    )
    .await
    .map_err(refusal)?;
    match booked
        .body
        .get("id")
        .and_then(Value::as_str)
        .map(Uuid::parse_str)
    {
        Some(Ok(id)) if booked.status == 201 => Ok(id),
        _ => {
            let status = StatusCode::from_u16(booked.status).unwrap_or(StatusCode::BAD_GATEWAY);
            // A stored refusal, as the API would answer it again: `{code, message}`.
            let said = booked.body["message"].as_str().unwrap_or("not booked");
            let code = booked.body["code"].as_str().unwrap_or_default();
            Err((status, format!("{said} ({code})")))
        }
    }
}

#[utoipa::path(
    post,
    path = "/console/sandbox",
    operation_id = "consoleSandboxBook",
    tag = "console",
    summary = "Books a test delivery (test sessions): form fields `csrf`, `pickup` and `dropoff` (addresses, found with the place search), `pickup_name`, `pickup_phone`, `dropoff_name`, `dropoff_phone`, `vehicle` (empty: the market's smallest), `scenario`",
    security(()),
    request_body(content = String, description = "`csrf=…&pickup=…&dropoff=…&…&scenario=happy_path`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Booked: to the run's page"),
        (status = 400, description = "A page, the form kept: the quote or booking was refused as the API refuses it, with its code", content_type = "text/html", body = String),
        (status = 402, description = "A page, the form kept: the card was declined", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 404, description = "A page: a live session has no sandbox", content_type = "text/html", body = String),
        (status = 422, description = "A page, the form kept: an address no market knows, an unknown scenario or vehicle, a journey or contact the API refuses", content_type = "text/html", body = String),
        (status = 429, description = "A page: the merchant's quotes or bookings budget is spent (with Retry-After)", content_type = "text/html", body = String),
        (status = 503, description = "A page, the form kept: the service could not book just now", content_type = "text/html", body = String),
    )
)]
pub async fn book_test_delivery(State(state): State<AppState>, request: Request) -> Response {
    let (session, fields) = match permitted_form(
        &state,
        request,
        Permission::UseSandbox,
        "booking test deliveries",
    )
    .await
    {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    if let Some(answer) = live_refusal(&session) {
        return answer;
    }
    // It quotes and books, as the API's two requests would: their budgets are spent too.
    for budget in [Budget::Quotes, Budget::Bookings] {
        if let Some(answer) = over_budget(&state, &session, budget) {
            return answer;
        }
    }
    let form = Booking::from_fields(&fields);
    match book(&state, &session, &form).await {
        Ok(job) => see_other(&format!("/console/sandbox/{job}")),
        Err((status, problem)) => booking_page(&session, status, form, Some(problem)),
    }
}

fn run_page(
    state: &AppState,
    session: &ConsoleSession,
    run: RunView,
    notice: Option<String>,
) -> Response {
    // A run goes on by itself only where the simulator runs (`COURIER_SANDBOX_SPEED` > 0).
    let running = state.sandbox.is_running();
    let by_itself = run.next_step_at.filter(|_| running);
    let reload = by_itself.is_some().then_some(RELOAD_SECONDS);
    let next_at = match (run.next_step, by_itself) {
        (None, _) => "none: the run is over".into(),
        (Some(_), Some(at)) => format!("{} (by itself)", when(at)),
        (Some(_), None) if running => "when you take it".into(),
        (Some(_), None) => "when you take it (the simulator is off here)".into(),
    };
    page(
        StatusCode::OK,
        RunPage {
            session: Some(SessionBar::from(session)),
            csrf: session.csrf_token.clone(),
            run,
            next_at,
            reload,
            scenarios: scenarios(),
            notice,
        }
        .render(),
    )
}

fn not_found(session: &ConsoleSession) -> Response {
    message(
        StatusCode::NOT_FOUND,
        Some(session),
        "No such test job",
        "No test job of yours has that id.",
    )
}

/// A sandbox operation's refusal as a page.
fn sandbox_refusal(session: &ConsoleSession, error: SandboxError) -> Response {
    if matches!(error, SandboxError::JobNotFound) {
        return not_found(session);
    }
    let (status, problem) = refusal(error);
    message(status, Some(session), "Not done", &problem)
}

#[utoipa::path(
    get,
    path = "/console/sandbox/{id}",
    operation_id = "consoleSandboxRun",
    tag = "console",
    summary = "A test job's run (test sessions): its status, scenario, stage and next step; reloads itself every 3 seconds while the run goes on by itself",
    security(()),
    params(("id" = String, Path, description = "The job's id")),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 404, description = "A page: no such test job of the merchant's, or a live session", content_type = "text/html", body = String),
    )
)]
pub async fn run_page_of(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    if let Some(refused) = refused_unless(&session, Permission::UseSandbox, "the sandbox") {
        return refused;
    }
    if let Some(answer) = live_refusal(&session) {
        return answer;
    }
    let Ok(job) = Uuid::parse_str(&id) else {
        return not_found(&session);
    };
    match state.sandbox.view(&session.merchant, job).await {
        Ok(run) => run_page(&state, &session, run, None),
        Err(error) => sandbox_refusal(&session, error),
    }
}

#[utoipa::path(
    post,
    path = "/console/sandbox/{id}/{action}",
    operation_id = "consoleSandboxAct",
    tag = "console",
    summary = "Takes a test job's next step now (`advance`, form field `csrf`) or changes its scenario until a courier is on it (`scenario`, form fields `csrf`, `scenario`)",
    security(()),
    params(
        ("id" = String, Path, description = "The job's id"),
        ("action" = String, Path, description = "`advance` or `scenario`"),
    ),
    request_body(content = String, description = "`csrf=…` (and `scenario=…`)", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The run's page after it", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such test job, no such action, or a live session", content_type = "text/html", body = String),
        (status = 409, description = "A page: nothing to advance, or the scenario can no longer change", content_type = "text/html", body = String),
        (status = 422, description = "A page: not a scenario", content_type = "text/html", body = String),
        (status = 503, description = "A page: the market cannot route the job yet", content_type = "text/html", body = String),
    )
)]
pub async fn act(
    State(state): State<AppState>,
    Path((id, action)): Path<(String, String)>,
    request: Request,
) -> Response {
    let (session, fields) = match permitted_form(
        &state,
        request,
        Permission::UseSandbox,
        "moving test deliveries",
    )
    .await
    {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    if let Some(answer) = live_refusal(&session) {
        return answer;
    }
    let Ok(job) = Uuid::parse_str(&id) else {
        return not_found(&session);
    };
    let (done, notice) = match action.as_str() {
        "advance" => (
            state.sandbox.advance(&session.merchant, job).await,
            "The next step is taken.".to_owned(),
        ),
        "scenario" => {
            let scenario = field(&fields, "scenario").unwrap_or_default();
            (
                state
                    .sandbox
                    .choose_scenario(&session.merchant, job, scenario)
                    .await,
                format!("The scenario is now {scenario}."),
            )
        }
        _ => return not_found(&session),
    };
    match done {
        Ok(run) => run_page(&state, &session, run, Some(notice)),
        Err(error) => sandbox_refusal(&session, error),
    }
}
