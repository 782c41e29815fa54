//! The console's pages: sign-in and sign-out, the jobs list, a job's page and its cancel form.

use askama::Template;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use chrono::NaiveDate;
use serde::Deserialize;
use uuid::Uuid;

use super::respond::{
    SessionBar, asset, cookie, field, message, money, open_session, page, refused_unless,
    retry_after, see_other, session, signed_form, signed_form_any, signed_in, signed_out_form,
    token, when,
};
use crate::state::AppState;
use courier_core::auth::ConsoleSession;
use courier_core::jobs::{JobRow, ListFilter};
use courier_core::payments::ChargeView;
use courier_core::team::SignInRefusal;
use courier_core::tracking::map::MapView;
use courier_domain::JobStatus;
use courier_domain::job::proof::ProofKind;
use courier_domain::team::Permission;

/// Jobs per page of the list.
const PAGE_SIZE: i64 = 25;

pub(super) fn address(stop: &serde_json::Value) -> String {
    stop.get("address")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
        .to_owned()
}

#[utoipa::path(
    get,
    path = "/console/",
    operation_id = "consoleStart",
    tag = "console",
    summary = "The merchant console: to its jobs when signed in, else to sign in",
    security(()),
    responses((status = 303, description = "To /console/jobs or /console/sign-in"))
)]
pub async fn start(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match session(&state, &headers).await {
        Ok(Some(_)) => see_other("/console/jobs"),
        Ok(None) => see_other("/console/sign-in"),
        Err(page) => page,
    }
}

#[utoipa::path(
    get,
    path = "/console/console.css",
    operation_id = "consoleStylesheet",
    tag = "console",
    summary = "The console's stylesheet",
    security(()),
    responses((status = 200, description = "CSS", content_type = "text/css", body = String))
)]
pub async fn stylesheet() -> Response {
    asset(
        "text/css; charset=utf-8",
        include_str!("../../templates/console/console.css"),
    )
}

#[utoipa::path(
    get,
    path = "/console/live.js",
    operation_id = "consoleLiveUpdates",
    tag = "console",
    summary = "The consoles' one script: live updates of the parts of a page marked `data-live` (every page reads the same without it)",
    security(()),
    responses((status = 200, description = "JavaScript", content_type = "text/javascript", body = String))
)]
pub async fn live_updates() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../../templates/console/live.js"),
    )
}

#[utoipa::path(
    get,
    path = "/console/card-form.js",
    operation_id = "consoleCardFormScript",
    tag = "console",
    summary = "Drives the payment provider's card form on the page that adds a live card",
    security(()),
    responses((status = 200, description = "JavaScript", content_type = "text/javascript", body = String))
)]
pub async fn card_form_script() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../../templates/console/card-form.js"),
    )
}

#[utoipa::path(
    get,
    path = "/console/passkeys.js",
    operation_id = "consolePasskeysScript",
    tag = "console",
    summary = "Adds and uses passkeys through the browser's `navigator.credentials` on the pages that offer them (the app's codes work without it)",
    security(()),
    responses((status = 200, description = "JavaScript", content_type = "text/javascript", body = String))
)]
pub async fn passkeys_script() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../../templates/console/passkeys.js"),
    )
}

#[derive(Template)]
#[template(path = "console/sign_in.html")]
struct SignInPage<'a> {
    session: Option<SessionBar>,
    problem: Option<&'a str>,
    email: &'a str,
}

#[utoipa::path(
    get,
    path = "/console/sign-in",
    operation_id = "consoleSignInPage",
    tag = "console",
    summary = "The console's sign-in form (an e-mail address and a password)",
    security(()),
    responses(
        (status = 200, description = "The form", content_type = "text/html", body = String),
        (status = 303, description = "Signed in already: to /console/jobs"),
    )
)]
pub async fn sign_in_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match session(&state, &headers).await {
        Ok(Some(_)) => see_other("/console/jobs"),
        Ok(None) => page(
            StatusCode::OK,
            SignInPage {
                session: None,
                problem: None,
                email: "",
            }
            .render(),
        ),
        Err(page) => page,
    }
}

#[utoipa::path(
    post,
    path = "/console/sign-in",
    operation_id = "consoleSignIn",
    tag = "console",
    summary = "Signs in: form fields `email` and `password`; sets the session cookie. The session opens in the person's first team (by merchant name), in the test environment",
    security(()),
    request_body(content = String, description = "`email=…&password=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Signed in: to /console/jobs, with the session cookie"),
        (status = 400, description = "A page: a field is missing", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form was sent from another site (its `Sec-Fetch-Site` or `Origin` is not this service's), or the person is in no merchant's team", content_type = "text/html", body = String),
        (status = 401, description = "A page: the address and password do not match an account", content_type = "text/html", body = String),
        (status = 413, description = "A page: the form is too large", content_type = "text/html", body = String),
        (status = 429, description = "A page: too many failed sign-ins from this address, or of this account (with Retry-After)", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn sign_in(State(state): State<AppState>, request: Request) -> Response {
    let posted = match signed_out_form(&state, request).await {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    let (fields, client) = (&posted.fields, posted.client);
    let email = field(fields, "email").unwrap_or("").trim();
    let password = field(fields, "password").unwrap_or("");
    let again = |status: StatusCode, problem: &str| {
        page(
            status,
            SignInPage {
                session: None,
                problem: Some(problem),
                email,
            }
            .render(),
        )
    };
    if email.is_empty() || password.is_empty() {
        return again(
            StatusCode::BAD_REQUEST,
            "Enter both your e-mail address and your password.",
        );
    }
    let person = match state.teams.sign_in(email, password).await {
        Ok(person) => person,
        Err(SignInRefusal::Wrong) => {
            state.auth_failures.spend(client, std::time::Instant::now());
            return again(
                StatusCode::UNAUTHORIZED,
                "That address and password do not match an account.",
            );
        }
        Err(SignInRefusal::Blocked { until }) => {
            state.auth_failures.spend(client, std::time::Instant::now());
            let mut response = again(
                StatusCode::TOO_MANY_REQUESTS,
                "Too many sign-ins to this account failed; it is closed to sign-ins for a \
                 while. Try again later.",
            );
            let wait = (until - courier_core::infra::clock::now())
                .to_std()
                .unwrap_or_default();
            retry_after(&mut response, wait);
            return response;
        }
        Err(SignInRefusal::Store(error)) => {
            tracing::error!(%error, "a console sign-in failed");
            return again(
                StatusCode::SERVICE_UNAVAILABLE,
                "The console cannot check accounts just now; try again shortly.",
            );
        }
    };
    let opened = match state.teams.memberships(person.id).await {
        Ok(teams) => match teams.first() {
            Some(team) => open_session(&state, &person, team.merchant_id, &posted).await,
            None => {
                return again(
                    StatusCode::FORBIDDEN,
                    "Your account is in no merchant's team any more. Ask a team's owner for \
                     an invitation.",
                );
            }
        },
        Err(error) => Err(error),
    };
    opened.unwrap_or_else(|error| {
        tracing::error!(%error, "opening a console session failed");
        again(
            StatusCode::SERVICE_UNAVAILABLE,
            "The console cannot reach its database just now; try again shortly.",
        )
    })
}

#[utoipa::path(
    post,
    path = "/console/sign-out",
    operation_id = "consoleSignOut",
    tag = "console",
    summary = "Signs out: form field `csrf`; ends the session",
    security(()),
    request_body(content = String, description = "`csrf=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "To /console/sign-in, the cookie cleared"),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
    )
)]
pub async fn sign_out(State(state): State<AppState>, request: Request) -> Response {
    let headers = request.headers().clone();
    if let Err(answer) = signed_form_any(&state, request).await {
        return answer;
    }
    if let Some(token) = token(&headers)
        && let Err(error) = state.console_sessions.close(token).await
    {
        tracing::error!(%error, "ending a console session failed");
    }
    let mut response = see_other("/console/sign-in");
    response
        .headers_mut()
        .insert(header::SET_COOKIE, cookie(&state, None));
    response
}

struct ListedJob {
    id: Uuid,
    reference: String,
    status: &'static str,
    booked_at: String,
    /// When the parcel will be ready at the pickup, or empty.
    ready: String,
    dropoff: String,
    price: String,
}

#[derive(Template)]
#[template(path = "console/jobs.html")]
struct JobsPage {
    session: Option<SessionBar>,
    statuses: Vec<(&'static str, bool)>,
    from: String,
    to: String,
    jobs: Vec<ListedJob>,
    shown: String,
    page: i64,
    previous: Option<String>,
    next: Option<String>,
}

/// The jobs list's filters, as the page's form sends them: `status` once per ticked box (or
/// comma-separated, as the API takes it), `from`, `to`, `page`.
#[derive(Default)]
pub struct JobsQuery {
    statuses: Vec<JobStatus>,
    from: Option<String>,
    to: Option<String>,
    page: Option<String>,
}

impl JobsQuery {
    /// Read from the query's pairs; a status the service does not know is left out.
    fn from_pairs(pairs: Vec<(String, String)>) -> Self {
        let mut query = JobsQuery::default();
        for (name, value) in pairs {
            match name.as_str() {
                "status" => {
                    for status in value.split(',').filter_map(|s| JobStatus::parse(s.trim())) {
                        if !query.statuses.contains(&status) {
                            query.statuses.push(status);
                        }
                    }
                }
                "from" => query.from = Some(value),
                "to" => query.to = Some(value),
                "page" => query.page = Some(value),
                _ => {}
            }
        }
        query
    }
}

fn date(text: Option<&str>) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(text?.trim(), "%Y-%m-%d").ok()
}

#[utoipa::path(
    get,
    path = "/console/jobs",
    operation_id = "consoleJobs",
    tag = "console",
    summary = "The signed-in merchant's jobs, newest first, with the API's filters and paging",
    security(()),
    params(
        ("status" = Option<String>, Query, description = "A status; repeated, or comma-separated, for several"),
        ("from" = Option<String>, Query, description = "Booked on or after this day (YYYY-MM-DD)"),
        ("to" = Option<String>, Query, description = "Booked before this day (YYYY-MM-DD)"),
        ("page" = Option<i64>, Query, description = "From 1"),
    ),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn jobs_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    // A query that cannot be read is no filter.
    let query = query
        .map(|Query(pairs)| JobsQuery::from_pairs(pairs))
        .unwrap_or_default();
    let statuses: Vec<&str> = query.statuses.iter().map(|s| s.as_str()).collect();
    let from = date(query.from.as_deref());
    let to = date(query.to.as_deref());
    let depth = i64::from(state.config.jobs_list_depth);
    let page_number = query
        .page
        .as_deref()
        .and_then(|p| p.parse::<i64>().ok())
        .filter(|p| *p >= 1)
        .unwrap_or(1)
        .min(depth / PAGE_SIZE + 1);
    let offset = (page_number - 1) * PAGE_SIZE;
    let filter = ListFilter {
        merchant_id: session.merchant.merchant_id,
        environment: session.merchant.environment,
        statuses: &statuses,
        from: from
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|d| d.and_utc()),
        // "Booked before" a day includes that day.
        to: to
            .and_then(|d| d.succ_opt())
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|d| d.and_utc()),
        limit: PAGE_SIZE.min(depth - offset).max(0),
        offset,
        count_up_to: depth + 1,
    };
    let (rows, total) = match state.jobs.list(&filter).await {
        Ok(found) => found,
        Err(error) => {
            tracing::error!(%error, "the console's jobs list failed");
            return message(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(&session),
                "Try again shortly",
                "The jobs cannot be read just now.",
            );
        }
    };
    let link = |page: i64| {
        let mut query = form_urlencoded::Serializer::new(String::new());
        if !statuses.is_empty() {
            query.append_pair("status", &statuses.join(","));
        }
        if let Some(from) = from {
            query.append_pair("from", &from.to_string());
        }
        if let Some(to) = to {
            query.append_pair("to", &to.to_string());
        }
        query.append_pair("page", &page.to_string());
        format!("/console/jobs?{}", query.finish())
    };
    let shown_to = offset + i64::try_from(rows.len()).unwrap_or(0);
    let shown = if total > depth {
        format!("Jobs {}–{shown_to} of more than {depth}", offset + 1)
    } else {
        format!("Jobs {}–{shown_to} of {total}", offset + 1)
    };
    let body = JobsPage {
        session: Some(SessionBar::from(&session)),
        statuses: JobStatus::ALL
            .iter()
            .map(|s| (s.as_str(), statuses.contains(&s.as_str())))
            .collect(),
        from: from.map(|d| d.to_string()).unwrap_or_default(),
        to: to.map(|d| d.to_string()).unwrap_or_default(),
        jobs: rows.iter().map(listed).collect(),
        shown,
        page: page_number,
        previous: (page_number > 1).then(|| link(page_number - 1)),
        next: (shown_to < total.min(depth)).then(|| link(page_number + 1)),
    };
    page(StatusCode::OK, body.render())
}

fn listed(job: &JobRow) -> ListedJob {
    ListedJob {
        id: job.id,
        reference: job.reference.clone(),
        status: job.status.as_str(),
        booked_at: when(job.booked_at),
        ready: job.pickup_ready_at.map(when).unwrap_or_default(),
        dropoff: address(&job.dropoff),
        price: money(&job.currency, job.price_amount_minor),
    }
}

struct JobFacts {
    id: Uuid,
    reference: String,
    status: &'static str,
    price: String,
    vehicle: &'static str,
    pickup: String,
    /// When the parcel will be ready at the pickup, if the merchant said.
    pickup_ready: Option<String>,
    dropoff: String,
    tracking_url: String,
    cancellation_reason: Option<String>,
    cancellable: bool,
}

struct ChargeFacts {
    status: &'static str,
    amount: String,
    refunded: String,
    last_error: Option<String>,
    /// Each move: when, from, to, amount, who, the provider's note.
    moves: Vec<MoveFacts>,
}

struct MoveFacts {
    at: String,
    from: String,
    to: String,
    amount: String,
    actor: String,
    detail: String,
}

/// What was recorded at the door.
struct ProofFacts {
    outcome: String,
    recipient: String,
    note: String,
    recorded: String,
    photo: bool,
    signature: bool,
}

impl ProofFacts {
    fn of(stored: &serde_json::Value) -> Self {
        let text = |name: &str| stored[name].as_str().unwrap_or("").to_owned();
        ProofFacts {
            outcome: text("outcome").replace('_', " "),
            recipient: text("recipient_name"),
            note: text("note"),
            recorded: stored["recorded_at"]
                .as_str()
                .and_then(|at| at.parse::<chrono::DateTime<chrono::Utc>>().ok())
                .map(when)
                .unwrap_or_default(),
            photo: stored["has_photo"].as_bool().unwrap_or(false),
            signature: stored["has_signature"].as_bool().unwrap_or(false),
        }
    }
}

/// An event sent for the job, with its deliveries.
struct EventFacts {
    name: String,
    occurred: String,
    deliveries: Vec<EventDeliveryFacts>,
}

struct EventDeliveryFacts {
    link: String,
    url: String,
    status: &'static str,
    attempts: i32,
    response: String,
}

#[derive(Template)]
#[template(path = "console/job.html")]
struct JobPage {
    session: Option<SessionBar>,
    csrf: String,
    job: JobFacts,
    timeline: Vec<(&'static str, String)>,
    charge: Option<ChargeFacts>,
    proof: Option<ProofFacts>,
    events: Vec<EventFacts>,
    notice: Option<&'static str>,
    /// The tracking page's map of the job, when its market can draw it.
    map: Option<MapView>,
    /// Seconds between reads of the page's moving part while the job is under way.
    live: Option<u32>,
}

/// How often a job page under way reads its moving part again, in seconds.
const JOB_LIVE_SECONDS: u32 = 5;

/// A job's id from the path; anything else is a job that does not exist.
fn job_id(id: &str) -> Option<Uuid> {
    Uuid::parse_str(id).ok()
}

async fn show_job(
    state: &AppState,
    session: &ConsoleSession,
    id: &str,
    notice: Option<&'static str>,
) -> Response {
    let not_found = || {
        message(
            StatusCode::NOT_FOUND,
            Some(session),
            "No such job",
            "There is no job with this id in this environment.",
        )
    };
    let Some(id) = job_id(id) else {
        return not_found();
    };
    let found = state.jobs.find(&session.merchant, id).await;
    let job = match found {
        Ok(Some(job)) => job,
        Ok(None) => return not_found(),
        Err(error) => {
            tracing::error!(%error, "the console's job page failed");
            return message(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(session),
                "Try again shortly",
                "The job cannot be read just now.",
            );
        }
    };
    // The charge (then its moves), the events and the map: three independent reads at once.
    let charge_and_moves = async {
        let charge = state.payments.charge_of_job(job.id).await.ok().flatten();
        let moves = match &charge {
            Some(c) => state.payments.moves_of(c.id).await.unwrap_or_else(|error| {
                tracing::warn!(%error, "the console's job page could not read the charge's moves");
                Vec::new()
            }),
            None => Vec::new(),
        };
        (charge, moves)
    };
    let owner = super::webhooks::owner(session);
    let events = state.webhooks.endpoints();
    let now = courier_core::infra::clock::now();
    let ((charge, moves), events, tracked) = tokio::join!(
        charge_and_moves,
        events.job_events(owner, job.id),
        state.tracking.state_of_job(&job, now),
    );
    let charge = charge.map(|c: ChargeView| ChargeFacts {
        status: c.status.as_str(),
        amount: money(&c.currency, c.amount_minor),
        refunded: if c.refunded_amount_minor > 0 {
            money(&c.currency, c.refunded_amount_minor)
        } else {
            String::new()
        },
        moves: moves
            .into_iter()
            .map(|m| MoveFacts {
                at: when(m.at),
                from: m.from_status.unwrap_or_else(|| "—".to_owned()),
                to: m.to_status,
                amount: m
                    .amount_minor
                    .map(|a| money(&c.currency, a))
                    .unwrap_or_default(),
                actor: m.actor,
                detail: m.detail.unwrap_or_default(),
            })
            .collect(),
        last_error: c.last_error,
    });
    // The events are a view of the job too: a failure to read them leaves them out.
    let events = match events {
        Ok(events) => events,
        Err(error) => {
            tracing::warn!(%error, "the console's job page could not read the job's events");
            Vec::new()
        }
    };
    let events = events
        .into_iter()
        .map(|e| EventFacts {
            name: e.name,
            occurred: when(e.occurred_at),
            deliveries: e
                .deliveries
                .into_iter()
                .map(|d| EventDeliveryFacts {
                    link: format!(
                        "/console/webhooks/{}/deliveries/{}",
                        d.endpoint_id, d.delivery_id
                    ),
                    url: d.url,
                    status: d.status.as_str(),
                    attempts: d.attempts,
                    response: d
                        .response_status_code
                        .map_or_else(|| "—".to_owned(), |s| s.to_string()),
                })
                .collect(),
        })
        .collect();
    let proof = job.proof.as_ref().map(ProofFacts::of);
    let mut timeline = vec![("Booked", when(job.booked_at))];
    if let Some(at) = job.assigned_at {
        timeline.push(("Courier assigned", when(at)));
    }
    if let Some(at) = job.completed_at {
        timeline.push(("Finished", when(at)));
    }
    // What the person's role may not do is not offered.
    let cancellable = session.may(Permission::CancelJobs)
        && matches!(
            job.status,
            JobStatus::Pending | JobStatus::Searching | JobStatus::Assigned
        );
    let ended = matches!(
        job.status,
        JobStatus::Delivered | JobStatus::Returned | JobStatus::Cancelled | JobStatus::Failed
    );
    // The map is a view of the job, not the job: a failure to draw it leaves it out.
    let map = match tracked {
        Ok(tracked) => Some(tracked.map),
        Err(error) => {
            tracing::warn!(%error, "the console's job map could not be drawn");
            None
        }
    };
    let body = JobPage {
        session: Some(SessionBar::from(session)),
        csrf: session.csrf_token.clone(),
        job: JobFacts {
            id: job.id,
            reference: job.reference.clone(),
            status: job.status.as_str(),
            price: money(&job.currency, job.price_amount_minor),
            vehicle: job.vehicle.as_str(),
            pickup: address(&job.pickup),
            pickup_ready: job.pickup_ready_at.map(when),
            dropoff: address(&job.dropoff),
            tracking_url: format!("{}/track/{}", state.config.public_url(), job.tracking_token),
            cancellation_reason: job.cancellation_reason.clone(),
            cancellable,
        },
        timeline,
        charge,
        proof,
        events,
        notice,
        map,
        live: (!ended).then_some(JOB_LIVE_SECONDS),
    };
    page(StatusCode::OK, body.render())
}

#[utoipa::path(
    get,
    path = "/console/jobs/{id}",
    operation_id = "consoleJob",
    tag = "console",
    summary = "A job of the signed-in merchant: status, the tracking page's map, timeline, charge, cancel form; its moving part follows the job while it is under way",
    security(()),
    params(
        ("id" = String, Path, description = "The job's id"),
        ("done" = Option<String>, Query, description = "`cancelled`: says the job was just cancelled"),
    ),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 404, description = "A page: no such job in the session's environment (another merchant's jobs alike)", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn job_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    done: Result<Query<Done>, QueryRejection>,
) -> Response {
    let notice = match done.map(|Query(d)| d.done) {
        Ok(Some(done)) if done == "cancelled" => Some("The job is cancelled."),
        _ => None,
    };
    match signed_in(&state, &headers).await {
        Ok(session) => show_job(&state, &session, &id, notice).await,
        Err(answer) => answer,
    }
}

/// What a form just did, said once on the page it leads to.
#[derive(Deserialize)]
pub struct Done {
    done: Option<String>,
}

#[utoipa::path(
    post,
    path = "/console/jobs/{id}/cancel",
    operation_id = "consoleCancelJob",
    tag = "console",
    summary = "Cancels a job: form fields `csrf` and `reason` (optional)",
    security(()),
    params(("id" = String, Path, description = "The job's id")),
    request_body(content = String, description = "`csrf=…&reason=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Cancelled: to the job's page (`?done=cancelled`); or not signed in: to /console/sign-in"),
        (status = 403, description = "A page: the form did not carry the session's token, or the person's role may not cancel jobs", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such job", content_type = "text/html", body = String),
        (status = 409, description = "A page: the job can no longer be cancelled", content_type = "text/html", body = String),
    )
)]
pub async fn cancel_job(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let (session, fields) = match signed_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    if let Some(refused) = refused_unless(&session, Permission::CancelJobs, "cancelling jobs") {
        return refused;
    }
    let Some(job) = job_id(&id) else {
        return show_job(&state, &session, &id, None).await;
    };
    let reason = field(&fields, "reason")
        .map(str::trim)
        .filter(|r| !r.is_empty());
    match state
        .fulfilment
        .cancel_by_merchant(&session.merchant, job, reason)
        .await
    {
        // Post/redirect/get: reloading the page does not send the form again.
        Ok(_) => see_other(&format!("/console/jobs/{job}?done=cancelled")),
        Err(error) => {
            let api = crate::error::ApiError::from(error);
            let (status, _) = api.status_and_code();
            if status == StatusCode::NOT_FOUND {
                return show_job(&state, &session, &id, None).await;
            }
            message(
                status,
                Some(&session),
                "Not cancelled",
                &api.public_message(),
            )
        }
    }
}

#[utoipa::path(
    get,
    path = "/console/jobs/{id}/proof/{kind}",
    operation_id = "consoleProofFile",
    tag = "console",
    summary = "A job's proof of delivery file (`photo` or `signature`), to the signed-in merchant only",
    security(()),
    params(
        ("id" = String, Path, description = "The job's id"),
        ("kind" = String, Path, description = "`photo` or `signature`"),
    ),
    responses(
        (status = 200, description = "The file as the courier's app sent it", content(
            (String = "image/jpeg"), (String = "image/png"), (String = "image/webp")
        )),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 404, description = "A page: no such job, or no such file of it", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn proof_file(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((id, kind)): Path<(String, String)>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let none = || {
        message(
            StatusCode::NOT_FOUND,
            Some(&session),
            "No such file",
            "This job has no such proof of delivery.",
        )
    };
    let (Some(id), Some(kind)) = (job_id(&id), ProofKind::parse(&kind)) else {
        return none();
    };
    let unavailable = |error: &dyn std::fmt::Display| {
        tracing::error!(%error, "a console proof file failed");
        message(
            StatusCode::SERVICE_UNAVAILABLE,
            Some(&session),
            "Try again shortly",
            "The file cannot be read just now.",
        )
    };
    // The job first: only the session's own job's files, in its environment.
    let job = match state.jobs.find(&session.merchant, id).await {
        Ok(Some(job)) => job,
        Ok(None) => return none(),
        Err(error) => return unavailable(&error),
    };
    let file = match state.jobs.proof_file(job.id, kind).await {
        Ok(Some(file)) => file,
        Ok(None) => return none(),
        Err(error) => return unavailable(&error),
    };
    crate::jobs::proof_file_response(&file.content_type, file.bytes).unwrap_or_else(none)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(query: &str) -> Vec<(String, String)> {
        form_urlencoded::parse(query.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }

    #[test]
    fn several_statuses_come_ticked_or_comma_separated_and_unknown_ones_are_left_out() {
        let ticked = JobsQuery::from_pairs(pairs("status=pending&status=searching&page=2"));
        assert_eq!(ticked.statuses, [JobStatus::Pending, JobStatus::Searching]);
        assert_eq!(ticked.page.as_deref(), Some("2"));
        let joined = JobsQuery::from_pairs(pairs("status=pending,lost,searching,pending"));
        assert_eq!(joined.statuses, [JobStatus::Pending, JobStatus::Searching]);
        assert!(JobsQuery::from_pairs(pairs("status=")).statuses.is_empty());
    }
}
