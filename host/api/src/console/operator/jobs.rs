//! A job as operators see it, whoever's it is: what its merchant sees of it (status, stops,
//! timeline, charge) and what only operators do: the offers made to couriers, and to whom;
//! and, for roles that move jobs, the ways to steer it: a courier put on it from the couriers
//! nearest by road, or a move to another status (back to searching, cancelled…), each with a
//! reason (the forms of [`super::dispatch`]).

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use uuid::Uuid;

use super::super::pages::address;
use super::super::respond::{money, page, when};
use super::market::done_words;
use super::{OperatorBar, message, signed_in, unavailable};
use crate::state::AppState;
use courier_core::dispatch::JobOffer;
use courier_core::infra::clock::now;
use courier_core::jobs::JobRow;
use courier_core::tracking::suggest::Suggestion;
use courier_domain::JobStatus;
use courier_domain::dispatch::OfferReason;
use courier_domain::job::transitions::{self, Actor};
use courier_domain::operators::OpsPermission;
use courier_domain::tracking::wording;

struct JobFacts {
    id: Uuid,
    reference: String,
    status: &'static str,
    market: String,
    merchant: String,
    merchant_id: Uuid,
    environment: &'static str,
    vehicle: &'static str,
    price: String,
    pickup: String,
    pickup_ready: Option<String>,
    dropoff: String,
    /// The courier on the job: its id, and its name and phone.
    courier: Option<(Uuid, String)>,
    cancellation_reason: Option<String>,
    tracking_url: String,
}

struct OfferFacts {
    courier: String,
    courier_id: Uuid,
    vehicle: String,
    trip: String,
    offered: String,
    status: &'static str,
    /// When it was answered, or, while open, when it expires.
    settled: String,
    /// The other jobs offered with it, as one route.
    bundled: i64,
    /// Why the planner made it, in words; empty when not kept.
    why: String,
}

/// Why an offer was made, in words: the planner's reason kept with it.
fn why_offered(reason: Option<serde_json::Value>) -> String {
    let Some(reason) = reason.and_then(|r| serde_json::from_value::<OfferReason>(r).ok()) else {
        return String::new();
    };
    let clock = |at: chrono::DateTime<chrono::Utc>| at.format("%H:%M:%S").to_string();
    match reason {
        OfferReason::AtPickup => {
            "The courier was at this pickup collecting other parcels: no trip is cheaper."
                .to_owned()
        }
        OfferReason::Planned {
            couriers_free,
            jobs_open,
            departs_at,
            pickup_at,
            dropoff_at,
        } => format!(
            "Planned over {jobs_open} open {} and {couriers_free} free {} of its vehicle at once: \
             to leave at {}, collect at {} and drop off at {} (UTC).",
            if jobs_open == 1 { "job" } else { "jobs" },
            if couriers_free == 1 {
                "courier"
            } else {
                "couriers"
            },
            clock(departs_at),
            clock(pickup_at),
            clock(dropoff_at),
        ),
    }
}

impl From<JobOffer> for OfferFacts {
    fn from(o: JobOffer) -> Self {
        let settled = match o.answered_at {
            Some(at) => when(at),
            None => format!("expires {}", when(o.expires_at)),
        };
        OfferFacts {
            courier: o.courier_name,
            courier_id: o.courier_id,
            vehicle: o.vehicle,
            trip: minutes(o.travel_seconds),
            offered: when(o.offered_at),
            status: o.status.as_str(),
            settled,
            bundled: o.others_on_route,
            why: why_offered(o.reason),
        }
    }
}

/// A trip's length in whole minutes, rounded up: "under a minute" below one.
fn minutes(seconds: i32) -> String {
    match seconds {
        s if s < 60 => "under a minute".to_owned(),
        s => format!("{} min", (s + 59) / 60),
    }
}

struct ChargeFacts {
    status: &'static str,
    amount: String,
    refunded: String,
    last_error: Option<String>,
}

/// A courier the page suggests putting on the job.
struct SuggestionFacts {
    id: Uuid,
    name: String,
    vehicle: &'static str,
    doing: &'static str,
    /// The trip by road, in words, or that the roads do not join.
    trip: String,
}

impl From<Suggestion> for SuggestionFacts {
    fn from(s: Suggestion) -> Self {
        SuggestionFacts {
            id: s.courier_id,
            name: s.name,
            vehicle: s.vehicle.as_str(),
            doing: if s.busy { "on another job" } else { "free" },
            trip: match (s.trip_seconds, s.trip_metres) {
                (Some(seconds), Some(metres)) => format!(
                    "{} by road ({})",
                    wording::duration(seconds),
                    wording::distance(metres)
                ),
                _ => "no road route from where it is".to_owned(),
            },
        }
    }
}

/// The ways an operator whose role moves jobs may steer this one.
struct Steer {
    market: String,
    /// Couriers to put on the job (empty when it cannot take one now, or none is near).
    suggestions: Vec<SuggestionFacts>,
    /// Whether the job can take a (new) courier now.
    reassignable: bool,
    /// Where the courier must go, in words.
    trip_to: &'static str,
    /// The statuses the job may be moved to by hand, with what each does.
    moves: Vec<(&'static str, &'static str)>,
    /// What the last form did.
    done: Option<&'static str>,
}

/// What moving a job from `from` to `to` by hand does, in words.
fn move_words(from: JobStatus, to: JobStatus) -> &'static str {
    use JobStatus::*;
    match (from, to) {
        (Assigned, Searching) => {
            "Back to searching: the courier comes off it, another is offered it"
        }
        (_, Searching) => "Searching now: offered to couriers at once",
        (_, Cancelled) => "Cancel: the hold on the card is released",
        (_, Failed) => "Failed: no courier; the hold on the card is released",
        (_, InTransit) => "Collected: the courier has the parcel",
        (_, Delivered) => "Delivered: the charge is captured",
        (_, Returned) => "Returned to the merchant: the charge is captured",
        _ => "Set this status",
    }
}

/// The statuses an operator may move a job in `from` to, with their words.
fn moves_from(from: JobStatus) -> Vec<(&'static str, &'static str)> {
    JobStatus::ALL
        .into_iter()
        .filter(|&to| transitions::check(Actor::Operator, from, to).is_ok())
        .map(|to| (to.as_str(), move_words(from, to)))
        .collect()
}

#[derive(Template)]
#[template(path = "console/ops_job.html")]
struct JobPage {
    session: Option<OperatorBar>,
    job: JobFacts,
    timeline: Vec<(&'static str, String)>,
    offers: Vec<OfferFacts>,
    charge: Option<ChargeFacts>,
    steer: Option<Steer>,
}

fn timeline(job: &JobRow) -> Vec<(&'static str, String)> {
    let mut timeline = vec![("Booked", when(job.booked_at))];
    if let Some(at) = job.scheduled_for {
        timeline.push(("Scheduled for", when(at)));
    }
    // As the board counts it: from when the search last opened, else from the booking.
    let searching = job.status == JobStatus::Searching;
    if let Some(at) = job
        .search_opened_at
        .or(searching.then_some(job.search_opens_at.unwrap_or(job.booked_at)))
    {
        timeline.push(("Searching for a courier since", when(at)));
    }
    if let Some(at) = job.assigned_at {
        timeline.push(("Courier assigned", when(at)));
    }
    if let Some(at) = job.completed_at {
        timeline.push(("Finished", when(at)));
    }
    timeline
}

#[utoipa::path(
    get,
    path = "/ops/jobs/{id}",
    operation_id = "opsConsoleJob",
    tag = "console",
    summary = "A job, any merchant's: status, stops, timeline, charge, and the offers made to couriers; for roles that move jobs, the couriers nearest by road to put on it and the statuses it may be moved to, each with a reason",
    security(()),
    params(
        ("id" = String, Path, description = "The job's id"),
        ("done" = Option<String>, Query, description = "What the last form did (`assigned`, `status_set`), said on the page"),
    ),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /ops/sign-in"),
        (status = 404, description = "A page: no such job", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn job_page(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let found = match Uuid::parse_str(&id) {
        Ok(id) => state.jobs.find_any(id).await,
        Err(_) => Ok(None),
    };
    let job = match found {
        Ok(Some(job)) => job,
        Ok(None) => {
            return message(
                StatusCode::NOT_FOUND,
                Some(&session),
                "No such job",
                "There is no job with that id.",
            );
        }
        Err(error) => {
            tracing::error!(%error, "the operator console's job page failed");
            return unavailable(Some(&session));
        }
    };
    let (offers, charge, merchant, courier) = tokio::join!(
        state.jobs.offers_of(job.id),
        state.payments.charge_of_job(job.id),
        state.merchants.show(job.merchant_id),
        async {
            match job.courier_id {
                Some(id) => state.couriers.get(id).await.map(Some),
                None => Ok(None),
            }
        },
    );
    let offers = match offers {
        Ok(offers) => offers,
        Err(error) => {
            tracing::error!(%error, "reading a job's offers failed");
            return unavailable(Some(&session));
        }
    };
    // The rest are views of the job, not the job: a failure to read one leaves it out.
    let charge = charge.ok().flatten().map(|c| ChargeFacts {
        status: c.status.as_str(),
        amount: money(&c.currency, c.amount_minor),
        refunded: if c.refunded_amount_minor > 0 {
            money(&c.currency, c.refunded_amount_minor)
        } else {
            String::new()
        },
        last_error: c.last_error,
    });
    let merchant = merchant.map_or_else(|_| job.merchant_id.to_string(), |m| m.name);
    let courier = courier
        .ok()
        .flatten()
        .map(|c| (c.id, format!("{} ({})", c.name, c.phone)));
    let steer = if session.may(OpsPermission::MoveJobs) {
        let done = uri
            .query()
            .and_then(|q| form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "done"))
            .and_then(|(_, v)| done_words(Some(&v)));
        Some(steer(&state, &job, done).await)
    } else {
        None
    };
    let body = JobPage {
        session: Some(OperatorBar::from(&session)),
        steer,
        timeline: timeline(&job),
        offers: offers.into_iter().map(OfferFacts::from).collect(),
        charge,
        job: JobFacts {
            id: job.id,
            reference: job.reference.clone(),
            status: job.status.as_str(),
            market: job.market_id.clone(),
            merchant,
            merchant_id: job.merchant_id,
            environment: job.environment.as_str(),
            vehicle: job.vehicle.as_str(),
            price: money(&job.currency, job.price_amount_minor),
            pickup: address(&job.pickup),
            pickup_ready: job.pickup_ready_at.map(when),
            dropoff: address(&job.dropoff),
            courier,
            cancellation_reason: job.cancellation_reason.clone(),
            tracking_url: format!("{}/track/{}", state.config.public_url(), job.tracking_token),
        },
    };
    page(StatusCode::OK, body.render())
}

/// The ways to steer `job`, with the couriers nearest by road when it can take one.
async fn steer(state: &AppState, job: &JobRow, done: Option<&'static str>) -> Steer {
    let reassignable = transitions::can_reassign(job.status);
    let suggestions = match state.markets.get(&job.market_id) {
        Some(market) if reassignable => state
            .tracking
            .suggestions(market, job, now())
            .await
            .unwrap_or_else(|error| {
                // The forms still work without them: the courier's id can be typed.
                tracing::error!(%error, "suggesting couriers for a job failed");
                Vec::new()
            }),
        _ => Vec::new(),
    };
    Steer {
        market: job.market_id.clone(),
        suggestions: suggestions.into_iter().map(SuggestionFacts::from).collect(),
        reassignable,
        trip_to: if job.status == JobStatus::InTransit {
            "to the courier holding the parcel"
        } else {
            "to the pickup"
        },
        moves: moves_from(job.status),
        done,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operator_is_offered_the_moves_the_transition_table_allows() {
        let to = |from| -> Vec<&str> { moves_from(from).into_iter().map(|(s, _)| s).collect() };
        assert_eq!(
            to(JobStatus::Assigned),
            [
                "searching",
                "in_transit",
                "delivered",
                "cancelled",
                "failed"
            ]
        );
        assert_eq!(to(JobStatus::InTransit), ["delivered", "returned"]);
        assert!(to(JobStatus::Delivered).is_empty());
        assert_eq!(
            move_words(JobStatus::Assigned, JobStatus::Searching),
            "Back to searching: the courier comes off it, another is offered it"
        );
    }

    #[test]
    fn trips_are_told_in_whole_minutes_rounded_up() {
        assert_eq!(minutes(0), "under a minute");
        assert_eq!(minutes(59), "under a minute");
        assert_eq!(minutes(60), "1 min");
        assert_eq!(minutes(61), "2 min");
    }
}
