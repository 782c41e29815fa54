//! A courier as operators see it: who, where last seen, its shift's state, the jobs it has
//! had today; for roles that move couriers, suspend or reinstate, and a one-time code to sign
//! in to the couriers' app.

use askama::Template;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chrono::{Duration, Utc};
use uuid::Uuid;

use super::super::respond::{page, when};
use super::super::second_factor::qr_svg;
use super::{OperatorBar, message, permitted_form, signed_in, unavailable};
use crate::state::AppState;
use courier_core::couriers::{CodeRefusal, CourierError, CourierView};
use courier_core::infra::clock::now;
use courier_core::jobs::JobRow;
use courier_domain::JobStatus;
use courier_domain::dispatch::CourierStatus;
use courier_domain::operators::OpsPermission;
use courier_domain::tracking::wording;
use courier_geo::LatLon;

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

/// The courier's trail of the last 24 hours on the market's streets.
struct TrailFacts {
    view_box: String,
    streets: String,
    path: String,
    last: courier_core::tracking::map::Point,
    description: String,
}

#[derive(Template)]
#[template(path = "console/ops_courier.html")]
struct CourierPage {
    session: Option<OperatorBar>,
    courier: CourierFacts,
    trail: Option<TrailFacts>,
    jobs: Vec<JobLine>,
    delivered: usize,
    /// Its day: jobs finished, their road distance, what they earned where the market says.
    day: Option<DayFacts>,
    may_move: bool,
}

/// What a courier finished in the last 24 hours, as its app's Today shows it.
struct DayFacts {
    delivered: i64,
    returned: i64,
    distance: String,
    earned: Option<String>,
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
    summary = "A courier: who, its state, where it was last seen and where it has been in the last 24 hours (on the market's streets), its jobs of the last 24 hours; for roles that move couriers, suspend or reinstate",
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
    let (courier, jobs, trail, seen, day) = tokio::join!(
        state.couriers.get(id),
        state.jobs.of_courier_since(id, since),
        state.couriers.trail_since(id, since),
        state
            .jobs
            .courier_position(id, chrono::DateTime::<Utc>::UNIX_EPOCH),
        state.jobs.courier_day(id, since),
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
    // The trail too: a failure to read it leaves it out.
    let trail = trail.ok().and_then(|points| {
        let first = points.first().map(|p| p.seen_at)?;
        let path: Vec<LatLon> = points
            .iter()
            .map(|p| LatLon::new(p.latitude, p.longitude))
            .collect();
        let map = state.tracking.trail_map(&courier.market, &path)?;
        let description = format!(
            "{} positions from {} to {}, {} in straight lines between them; the dark dot is the latest.",
            points.len(),
            when(first),
            when(points.last()?.seen_at),
            wording::distance(map.distance_metres),
        );
        Some(TrailFacts {
            view_box: map.view_box,
            streets: map.streets,
            path: map.trail,
            last: map.last,
            description,
        })
    });
    // Its day too: a failure to read it leaves it out.
    let day = day.ok().map(|day| DayFacts {
        delivered: day.delivered,
        returned: day.returned,
        distance: format!("{:.1} km", day.distance_metres as f64 / 1000.0),
        earned: state
            .couriers
            .earned(
                &courier.market,
                day.delivered + day.returned,
                day.distance_metres,
            )
            .map(|e| e.formatted()),
    });
    let body = CourierPage {
        session: Some(OperatorBar::from(&session)),
        trail,
        day,
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

#[derive(Template)]
#[template(path = "console/ops_sign_in_code.html")]
struct SignInCodePage {
    session: Option<OperatorBar>,
    courier_id: Uuid,
    name: String,
    code: String,
    link: String,
    qr: String,
    until: String,
}

#[utoipa::path(
    post,
    path = "/ops/couriers/{id}/sign-in-code",
    operation_id = "opsConsoleCourierSignInCode",
    tag = "console",
    summary = "A one-time code for the courier to sign in to the couriers' app (a code, a link and its QR code; 15 minutes; any earlier unused code stops working), recorded in the audit trail without the code",
    security(()),
    params(("id" = String, Path, description = "The courier's id")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`"),
    responses(
        (status = 200, description = "The page with the code", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /ops/sign-in"),
        (status = 403, description = "A page: the form has no valid token, or the role may not move couriers", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such courier", content_type = "text/html", body = String),
        (status = 409, description = "A page: the courier is suspended", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn sign_in_code(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let (session, _) = match permitted_form(
        &state,
        request,
        OpsPermission::MoveJobs,
        "giving couriers sign-in codes",
    )
    .await
    {
        Ok(signed) => signed,
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
    let courier = match state.couriers.get(id).await {
        Ok(courier) => courier,
        Err(CourierError::NotFound) => return not_found(),
        Err(error) => {
            tracing::error!(%error, "reading a courier failed");
            return unavailable(Some(&session));
        }
    };
    let issued = match state
        .courier_app_sessions
        .issue_code(&session.operator.name, id)
        .await
    {
        Ok(issued) => issued,
        Err(CodeRefusal::Suspended) => {
            return message(
                StatusCode::CONFLICT,
                Some(&session),
                "The courier is suspended",
                "A suspended courier cannot sign in to the app. Reinstate it first.",
            );
        }
        Err(CodeRefusal::NotFound) => return not_found(),
        Err(CodeRefusal::Store(error)) => {
            tracing::error!(%error, "giving a courier a sign-in code failed");
            return unavailable(Some(&session));
        }
    };
    let link = format!(
        "{}/courier/sign-in?code={}",
        state.config.public_url().trim_end_matches('/'),
        issued.code
    );
    let body = SignInCodePage {
        session: Some(OperatorBar::from(&session)),
        courier_id: id,
        name: courier.name,
        qr: qr_svg(&link, "QR code of the sign-in link"),
        code: issued.code,
        link,
        until: when(issued.expires_at),
    };
    page(StatusCode::OK, body.render())
}
