//! A courier as operators see it: who, where last seen, its shift's state, the jobs it has
//! had today; for roles that move couriers, suspend or reinstate.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chrono::{Duration, Utc};
use uuid::Uuid;

use super::super::respond::{page, when};
use super::{OperatorBar, message, signed_in, unavailable};
use crate::state::AppState;
use courier_core::couriers::{CourierError, CourierView};
use courier_core::infra::clock::now;
use courier_core::jobs::JobRow;
use courier_domain::JobStatus;
use courier_domain::dispatch::CourierStatus;
use courier_domain::operators::OpsPermission;

/// How far back "today" reaches: the last 24 hours, whatever the market's time zone.
const TODAY_HOURS: i64 = 24;

struct CourierFacts {
    id: Uuid,
    name: String,
    phone: String,
    vehicle: &'static str,
    market: String,
    status: &'static str,
    suspended: bool,
    suspension: Option<String>,
    online: bool,
    takes_routes: bool,
    joined: String,
    /// When and where it was last seen, if ever.
    seen: Option<String>,
}

struct JobLine {
    id: Uuid,
    reference: String,
    status: &'static str,
    assigned: String,
    finished: String,
}

#[derive(Template)]
#[template(path = "console/ops_courier.html")]
struct CourierPage {
    session: Option<OperatorBar>,
    courier: CourierFacts,
    jobs: Vec<JobLine>,
    delivered: usize,
    may_move: bool,
}

fn facts(c: CourierView, seen: Option<String>) -> CourierFacts {
    CourierFacts {
        id: c.id,
        name: c.name,
        phone: c.phone,
        vehicle: c.vehicle.as_str(),
        market: c.market,
        status: c.status.as_str(),
        suspended: c.status == CourierStatus::Suspended,
        suspension: c.suspension_reason,
        online: c.online,
        takes_routes: c.takes_routes,
        joined: when(c.created_at),
        seen,
    }
}

fn line(job: &JobRow) -> JobLine {
    JobLine {
        id: job.id,
        reference: job.reference.clone(),
        status: job.status.as_str(),
        assigned: job.assigned_at.map(when).unwrap_or_default(),
        finished: job.completed_at.map(when).unwrap_or_default(),
    }
}

#[utoipa::path(
    get,
    path = "/ops/couriers/{id}",
    operation_id = "opsConsoleCourier",
    tag = "console",
    summary = "A courier: who, its state, where it was last seen, its jobs of the last 24 hours; for roles that move couriers, suspend or reinstate",
    security(()),
    params(("id" = String, Path, description = "The courier's id")),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /ops/sign-in"),
        (status = 404, description = "A page: no such courier", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn courier_page(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let not_found = || {
        message(
            StatusCode::NOT_FOUND,
            Some(&session),
            "No such courier",
            "There is no courier with that id.",
        )
    };
    let Ok(id) = Uuid::parse_str(&id) else {
        return not_found();
    };
    let since = now() - Duration::hours(TODAY_HOURS);
    let (courier, jobs, seen) = tokio::join!(
        state.couriers.get(id),
        state.jobs.of_courier_since(id, since),
        state
            .jobs
            .courier_position(id, chrono::DateTime::<Utc>::UNIX_EPOCH),
    );
    let courier = match courier {
        Ok(courier) => courier,
        Err(CourierError::NotFound) => return not_found(),
        Err(error) => {
            tracing::error!(%error, "the operator console's courier page failed");
            return unavailable(Some(&session));
        }
    };
    let jobs = match jobs {
        Ok(jobs) => jobs,
        Err(error) => {
            tracing::error!(%error, "reading a courier's jobs failed");
            return unavailable(Some(&session));
        }
    };
    // Where it was seen is a view of the courier, not the courier: a failure leaves it out.
    let seen = seen.ok().flatten().map(|at| {
        format!(
            "{} at {:.5}, {:.5}",
            when(at.seen_at),
            at.latitude,
            at.longitude
        )
    });
    let body = CourierPage {
        session: Some(OperatorBar::from(&session)),
        delivered: jobs
            .iter()
            .filter(|j| j.status == JobStatus::Delivered)
            .count(),
        jobs: jobs.iter().map(line).collect(),
        courier: facts(courier, seen),
        may_move: session.may(OpsPermission::MoveJobs),
    };
    page(StatusCode::OK, body.render())
}
