//! The console's home, what needs a person now across every market, and its search: a job by
//! reference, merchants by name, couriers by name or phone.

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::super::respond::{page, when};
use super::market::environment_shown;
use super::{OperatorBar, signed_in, unavailable};
use crate::state::AppState;
use courier_core::infra::clock::now;
use courier_core::operations::{
    CourierAwayWithJobs, FoundCourier, FoundJob, FoundMerchant, SearchNearDeadline,
    SuspendedEndpoint,
};
use courier_domain::dispatch::CourierStatus;

/// A booking is left to its recovery worker this long before it needs a person.
const BOOKING_UNFINISHED_FOR: chrono::Duration = chrono::Duration::minutes(1);

struct SearchLine {
    id: String,
    reference: String,
    market: String,
    merchant: String,
    merchant_id: String,
    environment: &'static str,
    fails: String,
    offered: bool,
}

struct CourierLine {
    id: String,
    name: String,
    phone: String,
    market: String,
    why: &'static str,
    jobs: i64,
    seen: String,
}

impl From<CourierAwayWithJobs> for CourierLine {
    fn from(c: CourierAwayWithJobs) -> Self {
        CourierLine {
            id: c.id.to_string(),
            name: c.name,
            phone: c.phone,
            market: c.market_id,
            why: match c.status {
                CourierStatus::Suspended => "suspended",
                _ => "offline",
            },
            jobs: c.jobs,
            seen: c.seen_at.map_or_else(|| "never".to_owned(), when),
        }
    }
}

struct EndpointLine {
    merchant: String,
    merchant_id: String,
    environment: &'static str,
    url: String,
    failures: i32,
    failed: String,
}

impl From<SuspendedEndpoint> for EndpointLine {
    fn from(e: SuspendedEndpoint) -> Self {
        EndpointLine {
            merchant: e.merchant_name,
            merchant_id: e.merchant_id.to_string(),
            environment: e.environment.as_str(),
            url: e.url,
            failures: e.consecutive_failures,
            failed: e.last_failed_at.map(when).unwrap_or_default(),
        }
    }
}

struct BookingLine {
    merchant_id: String,
    merchant: String,
    environment: &'static str,
    started: String,
    recoveries: i32,
    abandoning: bool,
}

#[derive(Template)]
#[template(path = "console/ops_home.html")]
struct HomePage {
    session: Option<OperatorBar>,
    as_of: String,
    environment: &'static str,
    searches: Vec<SearchLine>,
    couriers: Vec<CourierLine>,
    endpoints: Vec<EndpointLine>,
    mismatches: usize,
    unreleased_holds: usize,
    bookings: Vec<BookingLine>,
}

impl HomePage {
    fn nothing(&self) -> bool {
        self.searches.is_empty()
            && self.couriers.is_empty()
            && self.endpoints.is_empty()
            && self.mismatches == 0
            && self.unreleased_holds == 0
            && self.bookings.is_empty()
    }
}

#[utoipa::path(
    get,
    path = "/ops/",
    operation_id = "opsConsoleHome",
    tag = "console",
    summary = "The operator console's home: what needs a person now (searches in the last quarter of their dispatch deadline, couriers offline or suspended with jobs, suspended webhook endpoints, payment mismatches, holds not released, bookings left unfinished); signed out, to sign in",
    security(()),
    params(("environment" = Option<String>, Query, description = "Whose searches and endpoints: `live` (the default), `test` or `all`")),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /ops/sign-in"),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn home(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let (shown, environment) = environment_shown(&query, "environment");
    let at = now();
    let read = tokio::try_join!(
        state.desk.needs_a_person(at, environment),
        state.payments.mismatches(),
        state.payments.unreleased_holds(),
        courier_core::jobs::booking::recovery::unfinished(&state.booking),
    );
    let (needs, mismatches, unreleased, bookings) = match read {
        Ok(read) => read,
        Err(error) => {
            tracing::error!(%error, "reading what needs a person failed");
            return unavailable(Some(&session));
        }
    };
    let in_environment = |name: &str| environment.is_none_or(|e| e.as_str() == name);
    let mut booking_lines = Vec::new();
    // Each merchant read once, however many of its bookings are unfinished.
    let mut names: std::collections::HashMap<uuid::Uuid, String> = Default::default();
    for b in bookings {
        if b.created_at > at - BOOKING_UNFINISHED_FOR || !in_environment(b.environment) {
            continue;
        }
        // Its merchant by name; a failure to read it leaves the id.
        let merchant = match names.get(&b.merchant_id) {
            Some(name) => name.clone(),
            None => {
                let name = state
                    .merchants
                    .show(b.merchant_id)
                    .await
                    .map_or_else(|_| b.merchant_id.to_string(), |m| m.name);
                names.insert(b.merchant_id, name.clone());
                name
            }
        };
        booking_lines.push(BookingLine {
            merchant_id: b.merchant_id.to_string(),
            merchant,
            environment: b.environment,
            started: when(b.created_at),
            recoveries: b.recoveries,
            abandoning: b.abandoning_since.is_some(),
        });
    }
    let body = HomePage {
        session: Some(OperatorBar::from(&session)),
        as_of: when(at),
        environment: shown,
        searches: needs
            .searches
            .into_iter()
            .map(|j: SearchNearDeadline| SearchLine {
                fails: when(state.desk.fails_at(j.due_at)),
                id: j.id.to_string(),
                reference: j.reference,
                market: j.market_id,
                merchant: j.merchant_name,
                merchant_id: j.merchant_id.to_string(),
                environment: j.environment.as_str(),
                offered: j.offered,
            })
            .collect(),
        couriers: needs.couriers.into_iter().map(CourierLine::from).collect(),
        endpoints: needs
            .endpoints
            .into_iter()
            .map(EndpointLine::from)
            .collect(),
        mismatches: mismatches
            .iter()
            .filter(|m| in_environment(m.environment))
            .count(),
        unreleased_holds: unreleased
            .iter()
            .filter(|h| in_environment(h.environment.as_str()))
            .count(),
        bookings: booking_lines,
    };
    page(StatusCode::OK, body.render())
}

#[derive(Template)]
#[template(path = "console/ops_search.html")]
struct SearchPage {
    session: Option<OperatorBar>,
    typed: String,
    jobs: Vec<FoundJob>,
    merchants: Vec<FoundMerchant>,
    couriers: Vec<FoundCourier>,
    /// Something was typed and nothing found.
    none: bool,
}

#[utoipa::path(
    get,
    path = "/ops/search",
    operation_id = "opsConsoleSearch",
    tag = "console",
    summary = "Search: a job by its reference (any case, with or without `CR` and dashes), merchants by name, couriers by name or phone (4 digits or more, however spaced); 100 of each at most",
    security(()),
    params(("q" = Option<String>, Query, description = "What to look for")),
    responses(
        (status = 200, description = "The page, with what was found", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /ops/sign-in"),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn search(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let typed = query.get("q").map(|q| q.trim()).unwrap_or_default();
    let found = match state.desk.search(typed).await {
        Ok(found) => found,
        Err(error) => {
            tracing::error!(%error, "the operator console's search failed");
            return unavailable(Some(&session));
        }
    };
    let body = SearchPage {
        session: Some(OperatorBar::from(&session)),
        typed: typed.to_owned(),
        none: !typed.is_empty() && found.is_empty(),
        jobs: found.jobs,
        merchants: found.merchants,
        couriers: found.couriers,
    };
    page(StatusCode::OK, body.render())
}
