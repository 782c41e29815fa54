//! The console's webhook pages: the merchant's endpoints in the session's environment, adding
//! one (its signing secret shown once), each endpoint's recent deliveries and each delivery's
//! request and last answer, and resuming, rotating the secret of and deleting an endpoint.

use askama::Template;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chrono::{DateTime, Utc};
use serde_json::json;
use uuid::Uuid;

use super::respond::{SessionBar, field, message, page, permitted_form, see_other, signed_in};
use super::webhook_health::HealthView;
use crate::state::AppState;
use courier_core::auth::ConsoleSession;
use courier_core::webhooks::{
    AttemptRecord, DeliveryDetail, DeliveryRecord, Endpoint, FailureWarning, LogSearch,
    MAX_OVERLAP, Owner, Recovery, TestEvent, WebhookError,
};
use courier_domain::event::EventName;
use courier_domain::team::Permission;
use courier_domain::webhook::DeliveryStatus;

pub(super) fn owner(session: &ConsoleSession) -> Owner {
    Owner {
        merchant_id: session.merchant.merchant_id,
        environment: session.merchant.environment,
    }
}

/// A moment, or a dash for one that has not come.
fn when(at: Option<DateTime<Utc>>) -> String {
    at.map_or_else(|| "—".to_owned(), super::respond::when)
}

struct EndpointFacts {
    id: Uuid,
    url: String,
    description: String,
    status: &'static str,
    events: String,
    /// The subscribed events as the edit form's field holds them (comma-separated; empty for
    /// every event).
    events_field: String,
    /// Until when the previous signing secret still signs beside the current one.
    previous_secret_until: Option<String>,
    last_success: String,
    failures: i32,
    suspended: bool,
    suspension_reason: Option<String>,
}

impl From<&Endpoint> for EndpointFacts {
    fn from(e: &Endpoint) -> Self {
        EndpointFacts {
            id: e.id,
            url: e.url.clone(),
            description: e.description.clone().unwrap_or_default(),
            status: e.status.as_str(),
            events: if e.events.is_empty() {
                "every event".to_owned()
            } else {
                e.events.join(", ")
            },
            events_field: e.events.join(", "),
            previous_secret_until: e.previous_secret_expires_at.map(super::respond::when),
            last_success: when(e.last_succeeded_at),
            failures: e.consecutive_failures,
            suspended: e.status.as_str() != "active",
            suspension_reason: e.suspension_reason.clone(),
        }
    }
}

#[derive(Template)]
#[template(path = "console/webhooks.html")]
struct WebhooksPage<'a> {
    session: Option<SessionBar>,
    csrf: String,
    endpoints: Vec<EndpointFacts>,
    /// The endpoint just added, and its signing secret.
    secret: Option<(String, String)>,
    problem: Option<String>,
    url: &'a str,
    events: &'a str,
    description: &'a str,
    event_names: String,
}

fn event_names() -> String {
    EventName::ALL
        .iter()
        .map(|e| e.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The database is away: a page that says so.
/// The page for a refusal about an endpoint: an unknown one is 404; anything else (the
/// database) a 503, with the cause in the service's log.
fn refused(session: &ConsoleSession, error: WebhookError) -> Response {
    match error {
        WebhookError::NotFound => no_such_endpoint(session),
        error => {
            tracing::error!(%error, "a webhook portal page failed");
            message(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(session),
                "Try again shortly",
                "The endpoints cannot be read just now.",
            )
        }
    }
}

async fn list_page(
    state: &AppState,
    session: &ConsoleSession,
    status: StatusCode,
    added: Option<(String, String)>,
    problem: Option<String>,
    (url, events, description): (&str, &str, &str),
) -> Response {
    let endpoints = match state.webhooks.endpoints().list(owner(session)).await {
        Ok(endpoints) => endpoints,
        Err(error) => return refused(session, error),
    };
    page(
        status,
        WebhooksPage {
            session: Some(SessionBar::from(session)),
            csrf: session.csrf_token.clone(),
            endpoints: endpoints.iter().map(EndpointFacts::from).collect(),
            secret: added,
            problem,
            url,
            events,
            description,
            event_names: event_names(),
        }
        .render(),
    )
}

#[utoipa::path(
    get,
    path = "/console/webhooks",
    operation_id = "consoleWebhooks",
    tag = "console",
    summary = "The signed-in merchant's webhook endpoints, and the form to add one",
    security(()),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn webhooks_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match signed_in(&state, &headers).await {
        Ok(session) => list_page(&state, &session, StatusCode::OK, None, None, ("", "", "")).await,
        Err(answer) => answer,
    }
}

#[utoipa::path(
    post,
    path = "/console/webhooks",
    operation_id = "consoleAddWebhook",
    tag = "console",
    summary = "Adds an endpoint: form fields `csrf`, `url`, `events` (comma-separated, empty for every event); its signing secret is shown once",
    security(()),
    request_body(content = String, description = "`csrf=…&url=…&events=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 201, description = "The endpoints, with the new one's signing secret (shown only here)", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 422, description = "The form again, saying what is wrong (the URL, an event, too many endpoints)", content_type = "text/html", body = String),
    )
)]
pub async fn add_webhook(State(state): State<AppState>, request: Request) -> Response {
    let (session, fields) = match permitted_form(
        &state,
        request,
        Permission::ManageWebhooks,
        "changing webhooks",
    )
    .await
    {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let url = field(&fields, "url").unwrap_or("").trim();
    let events = field(&fields, "events").unwrap_or("").trim();
    let description = field(&fields, "description").unwrap_or("");
    // The API's own checks, on the API's own body.
    let body = json!({"url": url, "events": event_list(events), "description": description});
    match state
        .webhooks
        .endpoints()
        .create(owner(&session), &body)
        .await
    {
        Ok(endpoint) => {
            let secret = endpoint.signing_secret.clone().unwrap_or_default();
            let mut page = list_page(
                &state,
                &session,
                StatusCode::CREATED,
                Some((endpoint.url, secret)),
                None,
                ("", "", ""),
            )
            .await;
            // Its signing secret is on this page only: never kept for the form's repeats.
            page.extensions_mut().insert(super::once::ShownOnce);
            page
        }
        Err(error @ WebhookError::Store(_)) => refused(&session, error),
        Err(refusal) => {
            list_page(
                &state,
                &session,
                StatusCode::UNPROCESSABLE_ENTITY,
                None,
                Some(refusal.to_string()),
                (url, events, description),
            )
            .await
        }
    }
}

/// The event names of a form's comma-separated field.
fn event_list(field: &str) -> Vec<&str> {
    field
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect()
}

struct DeliveryFacts {
    id: Uuid,
    /// Delivered, failed or cancelled: it can be sent again.
    finished: bool,
    event: String,
    status: &'static str,
    attempts: i32,
    occurred: String,
    delivered: String,
    response: String,
    error: String,
}

impl From<&DeliveryRecord> for DeliveryFacts {
    fn from(d: &DeliveryRecord) -> Self {
        DeliveryFacts {
            id: d.id,
            finished: d.status.as_str() != "pending",
            event: d.event.clone(),
            status: d.status.as_str(),
            attempts: d.attempts,
            occurred: when(Some(d.occurred_at)),
            delivered: when(d.delivered_at),
            response: d
                .response_status_code
                .map_or_else(|| "—".to_owned(), |s| s.to_string()),
            error: d.last_error.clone().unwrap_or_default(),
        }
    }
}

/// Which part of the delivery log a page shows: `?status=` one status (empty: every one),
/// `?before=` the delivery the previous page ended with.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct LogQuery {
    #[serde(default)]
    status: String,
    #[serde(default)]
    before: String,
    #[serde(default)]
    event: String,
    #[serde(default)]
    reference: String,
}

/// A [`LogQuery`] read: None when it names no status, no event or no delivery.
#[derive(Default)]
struct LogFilter {
    status: Option<DeliveryStatus>,
    before: Option<Uuid>,
    event: Option<EventName>,
    /// A job's reference as typed (trimmed; empty is none).
    reference: String,
}

impl LogQuery {
    fn filter(&self) -> Option<LogFilter> {
        let status = match self.status.as_str() {
            "" => None,
            name => Some(DeliveryStatus::parse(name)?),
        };
        let before = match self.before.as_str() {
            "" => None,
            id => Some(Uuid::parse_str(id).ok()?),
        };
        let event = match self.event.as_str() {
            "" => None,
            name => Some(EventName::parse(name)?),
        };
        Some(LogFilter {
            status,
            before,
            event,
            reference: self.reference.trim().chars().take(100).collect(),
        })
    }
}

impl LogFilter {
    /// The query string of this filter, without `before` (each page adds its own).
    fn query(&self) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        if let Some(status) = self.status {
            query.append_pair("status", status.as_str());
        }
        if let Some(event) = self.event {
            query.append_pair("event", event.as_str());
        }
        if !self.reference.is_empty() {
            query.append_pair("reference", &self.reference);
        }
        query.finish()
    }
}

#[derive(Template)]
#[template(path = "console/webhook.html")]
struct WebhookPage {
    session: Option<SessionBar>,
    csrf: String,
    endpoint: EndpointFacts,
    deliveries: Vec<DeliveryFacts>,
    /// The status the log is filtered by ("" for none), and the statuses to choose from.
    status: &'static str,
    statuses: Vec<&'static str>,
    /// The event and the job reference the log is filtered by ("" for none).
    event: &'static str,
    reference: String,
    /// Whether this page is past the first, and the link to the next one.
    paged: bool,
    older: Option<String>,
    secret: Option<String>,
    notice: Option<String>,
    /// The settings form: as sent and refused, or the endpoint's own.
    edit: EditForm,
    /// Failing often enough to be warned about: how often, and when it is suspended.
    warning: Option<FailureWarning>,
    /// What a test event may be named.
    event_names: Vec<&'static str>,
}

/// The endpoint's settings form.
#[derive(Clone, Debug, Default)]
struct EditForm {
    url: String,
    events: String,
    description: String,
    problem: Option<String>,
}

/// What an endpoint's page shows beside the endpoint: a secret just issued, what an action
/// did, or its settings form as sent and refused.
#[derive(Default)]
struct Shown {
    secret: Option<String>,
    notice: Option<String>,
    refused_edit: Option<EditForm>,
}

impl Shown {
    fn notice(notice: impl Into<String>) -> Self {
        Self {
            notice: Some(notice.into()),
            ..Self::default()
        }
    }
}

/// A signed form about one of the session's endpoints: the session, the form's fields, and the
/// endpoint's id (a malformed one answers as an unknown endpoint does).
async fn endpoint_form(
    state: &AppState,
    request: Request,
    id: &str,
) -> Result<(ConsoleSession, Vec<(String, String)>, Uuid), Response> {
    let (session, fields) = permitted_form(
        state,
        request,
        Permission::ManageWebhooks,
        "changing webhooks",
    )
    .await?;
    match Uuid::parse_str(id) {
        Ok(endpoint) => Ok((session, fields, endpoint)),
        Err(_) => Err(no_such_endpoint(&session)),
    }
}

fn no_such_endpoint(session: &ConsoleSession) -> Response {
    message(
        StatusCode::NOT_FOUND,
        Some(session),
        "No such endpoint",
        "There is no endpoint with this id in this environment.",
    )
}

async fn endpoint_page(
    state: &AppState,
    session: &ConsoleSession,
    id: &str,
    shown: Shown,
) -> Response {
    endpoint_log_page(state, session, id, &LogFilter::default(), shown).await
}

async fn endpoint_log_page(
    state: &AppState,
    session: &ConsoleSession,
    id: &str,
    filter: &LogFilter,
    shown: Shown,
) -> Response {
    let Ok(id) = Uuid::parse_str(id) else {
        return no_such_endpoint(session);
    };
    let endpoints = state.webhooks.endpoints();
    let search = LogSearch {
        status: filter.status,
        event: filter.event.map(EventName::as_str),
        reference: (!filter.reference.is_empty()).then_some(filter.reference.as_str()),
        before: filter.before,
    };
    // Two independent reads, on two connections at once.
    let read = tokio::try_join!(
        endpoints.list(owner(session)),
        endpoints.delivery_log(owner(session), id, &search),
    );
    let (listed, (deliveries, more)) = match read {
        Ok(read) => read,
        Err(error) => return refused(session, error),
    };
    let Some(endpoint) = listed.iter().find(|e| e.id == id) else {
        return no_such_endpoint(session);
    };
    let status = filter.status.map_or("", DeliveryStatus::as_str);
    let older = more.then(|| deliveries.last()).flatten().map(|last| {
        let mut link = format!("/console/webhooks/{id}?before={}", last.id);
        let query = filter.query();
        if !query.is_empty() {
            link.push('&');
            link.push_str(&query);
        }
        link
    });
    let warning = endpoints.failure_warning(endpoint);
    let facts = EndpointFacts::from(endpoint);
    let (status_code, edit) = match shown.refused_edit {
        Some(form) => (StatusCode::UNPROCESSABLE_ENTITY, form),
        None => (
            StatusCode::OK,
            EditForm {
                url: facts.url.clone(),
                events: facts.events_field.clone(),
                description: facts.description.clone(),
                problem: None,
            },
        ),
    };
    page(
        status_code,
        WebhookPage {
            session: Some(SessionBar::from(session)),
            csrf: session.csrf_token.clone(),
            endpoint: facts,
            deliveries: deliveries.iter().map(DeliveryFacts::from).collect(),
            status,
            statuses: ["pending", "delivered", "failed", "cancelled"].into(),
            event: filter.event.map_or("", EventName::as_str),
            reference: filter.reference.clone(),
            paged: filter.before.is_some(),
            older,
            secret: shown.secret,
            notice: shown.notice,
            edit,
            warning,
            event_names: EventName::ALL.iter().map(|e| e.as_str()).collect(),
        }
        .render(),
    )
}

#[utoipa::path(
    get,
    path = "/console/webhooks/{id}",
    operation_id = "consoleWebhook",
    tag = "console",
    summary = "An endpoint: its status (with a warning once it fails often enough to be suspended soon), its delivery log (event, status, attempts, response, error; 50 a page, newest first), and its forms",
    security(()),
    params(
        ("id" = String, Path, description = "The endpoint's id"),
        ("status" = Option<String>, Query, description = "Only deliveries of this status: `pending`, `delivered`, `failed` or `cancelled`"),
        ("event" = Option<String>, Query, description = "Only deliveries of this event (`job.delivered`…)"),
        ("reference" = Option<String>, Query, description = "Only deliveries of events about the job with this reference"),
        ("before" = Option<String>, Query, description = "The page after this delivery (the `Older deliveries` link)"),
    ),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 400, description = "A page: not a status, or not a delivery id", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such endpoint in the session's environment (another merchant's alike)", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn webhook_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    query: Result<Query<LogQuery>, QueryRejection>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let Some(filter) = query.ok().and_then(|Query(query)| query.filter()) else {
        return message(
            StatusCode::BAD_REQUEST,
            Some(&session),
            "Not a filter of the log",
            "Filter the deliveries by pending, delivered, failed or cancelled; page with the page's own link.",
        );
    };
    endpoint_log_page(&state, &session, &id, &filter, Shown::default()).await
}

#[utoipa::path(
    post,
    path = "/console/webhooks/{id}/{action}",
    operation_id = "consoleWebhookAction",
    tag = "console",
    summary = "`resume` deliveries to a suspended endpoint, `rotate` its signing secret (the new one shown once; field `overlap`: seconds the old one keeps signing, 0 to 86400), `edit` its settings (fields `url`, `events` comma-separated, `description`), or `delete` it: form field `csrf`",
    security(()),
    params(
        ("id" = String, Path, description = "The endpoint's id"),
        ("action" = String, Path, description = "`resume`, `rotate`, `edit` or `delete`"),
    ),
    request_body(content = String, description = "`csrf=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The endpoint's page, after the action (a rotated secret shown only here)", content_type = "text/html", body = String),
        (status = 303, description = "Deleted: to /console/webhooks; or not signed in: to /console/sign-in"),
        (status = 400, description = "A page: `overlap` is not a number of seconds", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such endpoint, or no such action", content_type = "text/html", body = String),
        (status = 422, description = "The endpoint's page, its settings form saying what is wrong (the URL, an event, the description, an overlap past a day)", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn webhook_action(
    State(state): State<AppState>,
    Path((id, action)): Path<(String, String)>,
    request: Request,
) -> Response {
    let (session, fields, endpoint) = match endpoint_form(&state, request, &id).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let endpoints = state.webhooks.endpoints();
    let done = match action.as_str() {
        "resume" => endpoints
            .resume(owner(&session), endpoint)
            .await
            .map(|_| Shown::notice("Deliveries are resumed.")),
        "rotate" => {
            let Some(overlap) = field(&fields, "overlap")
                .unwrap_or("0")
                .parse::<u64>()
                .ok()
                .map(std::time::Duration::from_secs)
                .filter(|overlap| *overlap <= MAX_OVERLAP)
            else {
                return message(
                    StatusCode::BAD_REQUEST,
                    Some(&session),
                    "Not a time",
                    "Choose how long the old secret keeps signing from the list.",
                );
            };
            endpoints
                .rotate_secret(owner(&session), endpoint, overlap)
                .await
                .map(|e| Shown {
                    notice: Some(match e.previous_secret_expires_at {
                        Some(until) => format!(
                            "The signing secret is rotated. Until {} each delivery is signed \
                             with both secrets.",
                            super::respond::when(until)
                        ),
                        None => "The signing secret is rotated. The old secret signs nothing \
                                 from now on."
                            .to_owned(),
                    }),
                    secret: e.signing_secret,
                    refused_edit: None,
                })
        }
        "edit" => {
            let form = EditForm {
                url: field(&fields, "url").unwrap_or("").trim().to_owned(),
                events: field(&fields, "events").unwrap_or("").trim().to_owned(),
                description: field(&fields, "description").unwrap_or("").to_owned(),
                problem: None,
            };
            let body = json!({
                "url": form.url,
                "events": event_list(&form.events),
                "description": form.description,
            });
            match endpoints.edit(owner(&session), endpoint, &body).await {
                Ok(_) => Ok(Shown::notice(
                    "The settings are saved; the signing secret is unchanged.",
                )),
                Err(error @ (WebhookError::NotFound | WebhookError::Store(_))) => Err(error),
                Err(refusal) => Ok(Shown {
                    refused_edit: Some(EditForm {
                        problem: Some(refusal.to_string()),
                        ..form
                    }),
                    ..Shown::default()
                }),
            }
        }
        "delete" => {
            return match endpoints.delete(owner(&session), endpoint).await {
                Ok(()) => see_other("/console/webhooks"),
                Err(error) => refused(&session, error),
            };
        }
        _ => return no_such_endpoint(&session),
    };
    match done {
        Ok(shown) => {
            let shows_secret = shown.secret.is_some();
            let mut page = endpoint_page(&state, &session, &id, shown).await;
            if shows_secret {
                // A rotated secret is on this page only: never kept for the form's repeats.
                page.extensions_mut().insert(super::once::ShownOnce);
            }
            page
        }
        Err(error) => refused(&session, error),
    }
}

#[derive(Template)]
#[template(path = "console/webhook_health.html")]
struct HealthPage {
    session: Option<SessionBar>,
    endpoint: EndpointFacts,
    health: HealthView,
}

#[utoipa::path(
    get,
    path = "/console/webhooks/{id}/health",
    operation_id = "consoleWebhookHealth",
    tag = "console",
    summary = "An endpoint's health over the last day: the share of attempts that succeeded, the time to answer (median, 95th percentile), and both hour by hour, drawn as SVG and tabled",
    security(()),
    params(("id" = String, Path, description = "The endpoint's id")),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 404, description = "A page: no such endpoint in the session's environment (another merchant's alike)", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn health_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let Ok(endpoint_id) = Uuid::parse_str(&id) else {
        return no_such_endpoint(&session);
    };
    let endpoints = state.webhooks.endpoints();
    // The day's attempts are read each time (tens of milliseconds for an endpoint sent
    // a hundred thousand a day): a page of its own, not the delivery log's.
    let read = tokio::try_join!(
        endpoints.list(owner(&session)),
        endpoints.health(owner(&session), endpoint_id, Utc::now()),
    );
    let (listed, health) = match read {
        Ok(read) => read,
        Err(error) => return refused(&session, error),
    };
    let Some(endpoint) = listed.iter().find(|e| e.id == endpoint_id) else {
        return no_such_endpoint(&session);
    };
    page(
        StatusCode::OK,
        HealthPage {
            session: Some(SessionBar::from(&session)),
            endpoint: EndpointFacts::from(endpoint),
            health: HealthView::of(&health),
        }
        .render(),
    )
}

/// One delivery as the log shows it: the request as sent, and what its last attempt heard.
struct DeliveryDetailFacts {
    id: Uuid,
    finished: bool,
    event: String,
    status: &'static str,
    attempts: i32,
    occurred: String,
    created: String,
    delivered: String,
    next_attempt: String,
    last_attempt: String,
    /// The moment the last attempt signed, as the signature's `t` carries it (Unix seconds).
    signed_at: Option<i64>,
    body: String,
    response: String,
    took: String,
    excerpt: Option<String>,
    error: Option<String>,
}

impl From<&DeliveryDetail> for DeliveryDetailFacts {
    fn from(d: &DeliveryDetail) -> Self {
        // Stored as sent: shown indented when it is JSON (it always is), as text otherwise.
        let body = serde_json::from_slice::<serde_json::Value>(&d.body)
            .ok()
            .and_then(|value| serde_json::to_string_pretty(&value).ok())
            .unwrap_or_else(|| String::from_utf8_lossy(&d.body).into_owned());
        DeliveryDetailFacts {
            id: d.id,
            finished: d.status.as_str() != "pending",
            event: d.event_name.clone(),
            status: d.status.as_str(),
            attempts: d.attempts,
            occurred: when(Some(d.occurred_at)),
            created: when(Some(d.created_at)),
            delivered: when(d.delivered_at),
            next_attempt: when(d.next_attempt_at),
            last_attempt: when(d.last_attempt_at),
            signed_at: d.last_attempt_at.map(|at| at.timestamp()),
            body,
            response: d
                .response_status_code
                .map_or_else(|| "—".to_owned(), |s| s.to_string()),
            took: d
                .response_ms
                .map_or_else(|| "—".to_owned(), |ms| format!("{ms} ms")),
            excerpt: d.response_excerpt.clone(),
            error: d.last_error.clone(),
        }
    }
}

/// One attempt as the delivery's page lists it.
struct AttemptFacts {
    number: i32,
    at: String,
    succeeded: bool,
    response: String,
    took: String,
    error: String,
    excerpt: Option<String>,
}

impl From<&AttemptRecord> for AttemptFacts {
    fn from(a: &AttemptRecord) -> Self {
        AttemptFacts {
            number: a.attempt,
            at: when(Some(a.attempted_at)),
            succeeded: a.error.is_none() && a.status_code.is_some_and(|s| (200..300).contains(&s)),
            response: a
                .status_code
                .map_or_else(|| "—".to_owned(), |s| s.to_string()),
            took: a
                .response_ms
                .map_or_else(|| "—".to_owned(), |ms| format!("{ms} ms")),
            error: a.error.clone().unwrap_or_default(),
            excerpt: a.excerpt.clone().filter(|e| !e.is_empty()),
        }
    }
}

#[derive(Template)]
#[template(path = "console/webhook_delivery.html")]
struct DeliveryPage {
    session: Option<SessionBar>,
    csrf: String,
    endpoint_id: Uuid,
    url: String,
    delivery: DeliveryDetailFacts,
    /// Every attempt kept, newest first.
    attempts: Vec<AttemptFacts>,
    /// Attempts made but not kept (made before attempts were recorded one by one).
    unlisted: i32,
}

#[utoipa::path(
    get,
    path = "/console/webhooks/{id}/deliveries/{delivery}",
    operation_id = "consoleWebhookDelivery",
    tag = "console",
    summary = "One delivery: the request as sent (method, URL, headers, body), what its last attempt heard back (status, time to answer, the start of the answer, the error), and every attempt with its answer",
    security(()),
    params(
        ("id" = String, Path, description = "The endpoint's id"),
        ("delivery" = String, Path, description = "The delivery's id"),
    ),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 404, description = "A page: no such delivery of an endpoint in the session's environment (another merchant's alike)", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn delivery_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((id, delivery)): Path<(String, String)>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let (Ok(endpoint_id), Ok(delivery_id)) = (Uuid::parse_str(&id), Uuid::parse_str(&delivery))
    else {
        return no_such_endpoint(&session);
    };
    let endpoints = state.webhooks.endpoints();
    let (delivery, attempts) = match tokio::try_join!(
        endpoints.delivery(owner(&session), endpoint_id, delivery_id),
        endpoints.attempts(owner(&session), endpoint_id, delivery_id),
    ) {
        Ok(read) => read,
        Err(error) => return refused(&session, error),
    };
    page(
        StatusCode::OK,
        DeliveryPage {
            session: Some(SessionBar::from(&session)),
            csrf: session.csrf_token.clone(),
            endpoint_id,
            url: delivery.url.clone(),
            unlisted: (delivery.attempts - attempts.len() as i32).max(0),
            attempts: attempts.iter().map(AttemptFacts::from).collect(),
            delivery: DeliveryDetailFacts::from(&delivery),
        }
        .render(),
    )
}

#[utoipa::path(
    post,
    path = "/console/webhooks/{id}/deliveries/{delivery}/resend",
    operation_id = "consoleResendDelivery",
    tag = "console",
    summary = "Sends a finished delivery again, at once (one more attempt): form field `csrf`",
    security(()),
    params(
        ("id" = String, Path, description = "The endpoint's id"),
        ("delivery" = String, Path, description = "The delivery's id"),
    ),
    request_body(content = String, description = "`csrf=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The endpoint's page, the delivery due again", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such endpoint or finished delivery", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn resend_delivery(
    State(state): State<AppState>,
    Path((id, delivery)): Path<(String, String)>,
    request: Request,
) -> Response {
    let (session, _) = match permitted_form(
        &state,
        request,
        Permission::ManageWebhooks,
        "resending deliveries",
    )
    .await
    {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let (Ok(endpoint), Ok(delivery)) = (Uuid::parse_str(&id), Uuid::parse_str(&delivery)) else {
        return no_such_endpoint(&session);
    };
    match state
        .webhooks
        .endpoints()
        .resend(owner(&session), endpoint, delivery)
        .await
    {
        Ok(()) => {
            endpoint_page(
                &state,
                &session,
                &id,
                Shown::notice("The delivery is sent again."),
            )
            .await
        }
        Err(error) => refused(&session, error),
    }
}

#[utoipa::path(
    post,
    path = "/console/webhooks/{id}/recover",
    operation_id = "consoleRecoverDeliveries",
    tag = "console",
    summary = "Sends again, once each, every delivery not delivered (failed, or cancelled by a suspension) whose event occurred since a time: form fields `csrf`, `since` (YYYY-MM-DDTHH:MM, UTC)",
    security(()),
    params(("id" = String, Path, description = "The endpoint's id")),
    request_body(content = String, description = "`csrf=…&since=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The endpoint's page, saying how many are sent again", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 400, description = "A page: `since` is not a time", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such endpoint", content_type = "text/html", body = String),
        (status = 409, description = "A page: the endpoint is suspended or disabled; resume it first", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn recover_deliveries(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let (session, fields, endpoint) = match endpoint_form(&state, request, &id).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let since = field(&fields, "since").and_then(|text| {
        chrono::NaiveDateTime::parse_from_str(text.trim(), "%Y-%m-%dT%H:%M")
            .or_else(|_| chrono::NaiveDateTime::parse_from_str(text.trim(), "%Y-%m-%dT%H:%M:%S"))
            .ok()
    });
    let Some(since) = since else {
        return message(
            StatusCode::BAD_REQUEST,
            Some(&session),
            "Not a time",
            "Give the time to recover from as a date and a time (UTC).",
        );
    };
    match state
        .webhooks
        .endpoints()
        .recover_undelivered(owner(&session), endpoint, since.and_utc())
        .await
    {
        Ok(Recovery::SentAgain(count)) => {
            let notice = match count {
                0 => "Every delivery since then was delivered or is on its way.".to_owned(),
                1 => "1 delivery not delivered since then is sent again.".to_owned(),
                n => format!("{n} deliveries not delivered since then are sent again."),
            };
            endpoint_page(&state, &session, &id, Shown::notice(notice)).await
        }
        Ok(Recovery::NotActive) => message(
            StatusCode::CONFLICT,
            Some(&session),
            "The endpoint is not active",
            "Nothing is sent to a suspended or disabled endpoint: resume it first, then recover \
             its deliveries.",
        ),
        Err(error) => refused(&session, error),
    }
}

#[utoipa::path(
    post,
    path = "/console/webhooks/{id}/test-event",
    operation_id = "consoleSendTestEvent",
    tag = "console",
    summary = "Sends the endpoint, and only it, a test event (made-up facts: reference `test-event`, currency `XTS`): form fields `csrf`, `event` (an event name)",
    security(()),
    params(("id" = String, Path, description = "The endpoint's id")),
    request_body(content = String, description = "`csrf=…&event=job.booked`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The endpoint's page: the test event is on its way (its delivery shows in the log), or not sent because the endpoint is suspended", content_type = "text/html", body = String),
        (status = 303, description = "Not signed in: to /console/sign-in"),
        (status = 400, description = "A page: `event` is not an event name", content_type = "text/html", body = String),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such endpoint", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn send_test_event(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let (session, fields, endpoint) = match endpoint_form(&state, request, &id).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let name = field(&fields, "event").unwrap_or_default();
    let notice = match state
        .webhooks
        .endpoints()
        .send_test_event(owner(&session), endpoint, name)
        .await
    {
        Ok(TestEvent::Sent(_)) => {
            "The test event is on its way: its delivery shows below within seconds."
        }
        Ok(TestEvent::Suspended) => {
            "The endpoint is suspended, so the test event was not sent: resume it first."
        }
        Err(WebhookError::UnknownEvent(_)) => {
            return message(
                StatusCode::BAD_REQUEST,
                Some(&session),
                "Not an event",
                "Choose one of the events in the list.",
            );
        }
        Err(error) => return refused(&session, error),
    };
    endpoint_page(&state, &session, &id, Shown::notice(notice)).await
}
