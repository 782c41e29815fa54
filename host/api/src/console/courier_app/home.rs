//! The shift page, `/courier/`: online or offline, the open offers with their routes, the
//! stops of the jobs under way in order, and the day so far; with the shift's own moves
//! (going online and offline, the phone's position) and the page's state for live updates.

use askama::Template;
use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration, Utc};
use courier_geo::LatLon;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::super::respond::{field, see_other};
use super::{app_page, message, signed_form, signed_in, unavailable};
use crate::state::AppState;
use courier_core::couriers::{CourierAppSession, Earnings, OfferedRoute, StopKind};
use courier_core::infra::clock::now;
use courier_core::jobs::{CourierDay, JobRow};
use courier_core::tracking::map::Point;
use courier_core::tracking::route_map::RouteMap;
use courier_domain::JobStatus;

/// How far back "today" reaches: the last 24 hours, as on the operators' courier page.
const TODAY_HOURS: i64 = 24;
/// A position older than this is not drawn as where the courier is.
const POSITION_FRESH_MINUTES: i64 = 10;

/// A map of stops in order, as the template draws it.
pub(super) struct StopMap {
    pub view_box: String,
    pub streets: String,
    pub route: String,
    /// Each stop's number and place.
    pub stops: Vec<(usize, Point, &'static str)>,
    pub courier: Option<Point>,
    pub description: String,
}

fn stop_map(map: RouteMap, kinds: &[StopKind], what: &str) -> StopMap {
    let description = format!(
        "{what}: {} stops in order{}, {}.",
        kinds.len(),
        if map.courier.is_some() {
            ", from where you are"
        } else {
            ""
        },
        length(map.distance_metres, map.duration_seconds)
    );
    StopMap {
        view_box: map.view_box,
        streets: map.streets,
        route: map.route,
        stops: map
            .stops
            .into_iter()
            .zip(kinds)
            .enumerate()
            .map(|(i, (point, kind))| (i + 1, point, kind.as_str()))
            .collect(),
        courier: map.courier,
        description,
    }
}

/// "3.2 km, about 12 min".
fn length(metres: u32, seconds: u32) -> String {
    format!(
        "{:.1} km, about {}",
        f64::from(metres) / 1000.0,
        minutes(seconds)
    )
}

fn minutes(seconds: u32) -> String {
    format!("{} min", seconds.div_ceil(60).max(1))
}

/// A stop in a list: where, and for which job.
pub(super) struct StopLine {
    pub kind: &'static str,
    pub label: &'static str,
    pub reference: String,
    pub address: String,
    pub postcode: Option<String>,
}

fn label(kind: StopKind) -> &'static str {
    match kind {
        StopKind::Pickup => "Pickup",
        StopKind::Dropoff => "Drop-off",
    }
}

fn text(stop: &Value, name: &str) -> Option<String> {
    stop[name]
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

pub(super) struct OfferCard {
    pub id: Uuid,
    /// RFC 3339, for the countdown.
    pub expires_at: String,
    pub expires_in: String,
    pub job_count: usize,
    pub stops: Vec<StopLine>,
    pub map: StopMap,
    pub to_first_stop: String,
    pub route: String,
    /// When the parcels will be ready, where the merchants said.
    pub ready: Vec<String>,
    /// What the courier earns for it, where the market says.
    pub earns: Option<String>,
    pub accept_action: Uuid,
    pub decline_action: Uuid,
}

/// A stop of the jobs under way, with what to do there.
pub(super) struct StopCard {
    pub number: usize,
    pub kind: &'static str,
    pub label: &'static str,
    pub job_id: Uuid,
    pub reference: String,
    pub address: String,
    pub postcode: Option<String>,
    pub contact_name: String,
    pub contact_phone: Option<String>,
    pub notes: Option<String>,
    pub items: Vec<String>,
    /// A `geo:` link: the phone's navigation, at the stop.
    pub navigate: String,
    pub ready: Option<String>,
    /// At a pickup not yet collected: the action id of "collected".
    pub collect_action: Option<Uuid>,
    /// At the drop-off of a job collected: the delivery form is open.
    pub deliver: bool,
}

pub(super) struct Today {
    pub delivered: i64,
    pub returned: i64,
    pub distance: String,
    /// What the jobs finished earned, where the market says what couriers earn.
    pub earned: Option<String>,
}

#[derive(Template)]
#[template(path = "courier/home.html")]
struct HomePage {
    signed_in: bool,
    csrf: String,
    name: String,
    market: String,
    vehicle: &'static str,
    online: bool,
    offers: Vec<OfferCard>,
    stops: Vec<StopCard>,
    route_map: Option<StopMap>,
    today: Today,
    /// What the page shows, summed up: the script reloads when the service's differs.
    version: String,
}

/// A short time of day, as the phone's owner reads it (UTC: the service knows no zone).
fn clock(at: DateTime<Utc>) -> String {
    at.format("%H:%M UTC").to_string()
}

fn offer_card(
    state: &AppState,
    session: &CourierAppSession,
    offer: &OfferedRoute,
    courier: Option<LatLon>,
    now: DateTime<Utc>,
    earns: Option<String>,
) -> OfferCard {
    let kinds: Vec<StopKind> = offer.stops.iter().map(|(_, kind)| *kind).collect();
    let places: Vec<&Value> = offer
        .stops
        .iter()
        .map(|(job, kind)| kind.of(&offer.jobs[*job]))
        .collect();
    let map = state.tracking.route_map(
        &session.courier.market,
        session.courier.vehicle,
        courier,
        &places,
    );
    let to_first_stop = map
        .to_first_stop_seconds
        .map_or_else(|| minutes(offer.travel_seconds.max(0) as u32), minutes);
    let route = length(map.distance_metres, map.duration_seconds);
    let left = (offer.expires_at - now).num_seconds().max(0);
    OfferCard {
        id: offer.id,
        expires_at: offer.expires_at.to_rfc3339(),
        expires_in: format!("{}:{:02}", left / 60, left % 60),
        job_count: offer.jobs.len(),
        stops: offer
            .stops
            .iter()
            .map(|(job, kind)| {
                let job = &offer.jobs[*job];
                let stop = kind.of(job);
                StopLine {
                    kind: kind.as_str(),
                    label: label(*kind),
                    reference: job.reference.clone(),
                    address: text(stop, "address").unwrap_or_default(),
                    postcode: text(stop, "postcode"),
                }
            })
            .collect(),
        map: stop_map(map, &kinds, "The offered route"),
        to_first_stop,
        route,
        ready: offer
            .jobs
            .iter()
            .filter_map(|j| {
                j.pickup_ready_at
                    .map(|at| format!("{} ready at {}", j.reference, clock(at)))
            })
            .collect(),
        earns,
        accept_action: Uuid::new_v4(),
        decline_action: Uuid::new_v4(),
    }
}

/// The stops still to make for the jobs under way: the pickups of jobs not yet collected,
/// then every drop-off, each job in the order it was taken.
fn stops_under_way(jobs: &[JobRow]) -> Vec<(usize, StopKind)> {
    let pickups = jobs
        .iter()
        .enumerate()
        .filter(|(_, j)| j.status == JobStatus::Assigned)
        .map(|(i, _)| (i, StopKind::Pickup));
    let dropoffs = (0..jobs.len()).map(|i| (i, StopKind::Dropoff));
    pickups.chain(dropoffs).collect()
}

fn stop_card(number: usize, job: &JobRow, kind: StopKind) -> StopCard {
    let stop = kind.of(job);
    let (lat, lon) = (
        stop["latitude"].as_f64().unwrap_or_default(),
        stop["longitude"].as_f64().unwrap_or_default(),
    );
    let items = match kind {
        StopKind::Pickup => job
            .items
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| {
                        Some(format!(
                            "{} × {}",
                            item["quantity"].as_i64().unwrap_or(1),
                            item["name"].as_str()?
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default(),
        StopKind::Dropoff => Vec::new(),
    };
    StopCard {
        number,
        kind: kind.as_str(),
        label: label(kind),
        job_id: job.id,
        reference: job.reference.clone(),
        address: text(stop, "address").unwrap_or_default(),
        postcode: text(stop, "postcode"),
        contact_name: text(stop, "contact_name").unwrap_or_default(),
        contact_phone: text(stop, "contact_phone"),
        notes: text(stop, "notes"),
        items,
        navigate: format!("geo:{lat:.6},{lon:.6}?q={lat:.6},{lon:.6}"),
        ready: (kind == StopKind::Pickup)
            .then_some(job.pickup_ready_at)
            .flatten()
            .map(clock),
        collect_action: (kind == StopKind::Pickup && job.status == JobStatus::Assigned)
            .then(Uuid::new_v4),
        deliver: kind == StopKind::Dropoff && job.status == JobStatus::InTransit,
    }
}

/// What the page shows, summed up: the open offers and the jobs' states.
fn version(online: bool, offers: &[OfferedRoute], jobs: &[JobRow]) -> String {
    let mut hash = Sha256::new();
    hash.update([u8::from(online)]);
    for offer in offers {
        hash.update(offer.id.as_bytes());
        for job in &offer.jobs {
            hash.update(job.id.as_bytes());
        }
    }
    for job in jobs {
        hash.update(job.id.as_bytes());
        hash.update(job.status.as_str().as_bytes());
    }
    hash.finalize()[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Everything the shift page reads.
struct Shift {
    offers: Vec<OfferedRoute>,
    jobs: Vec<JobRow>,
    day: CourierDay,
    position: Option<LatLon>,
    /// What each offer earns, where the market says.
    offers_earn: Vec<Option<Earnings>>,
}

async fn read_shift(
    state: &AppState,
    courier_id: Uuid,
    market: &str,
    now: DateTime<Utc>,
) -> Result<Shift, sqlx::Error> {
    let (offers, jobs, day, position) = tokio::try_join!(
        state.couriers.open_offers(courier_id),
        state.couriers.jobs_under_way(courier_id),
        state
            .jobs
            .courier_day(courier_id, now - Duration::hours(TODAY_HOURS)),
        state
            .jobs
            .courier_position(courier_id, now - Duration::minutes(POSITION_FRESH_MINUTES)),
    )?;
    let offers_earn = state.couriers.offers_earn(market, &offers).await?;
    Ok(Shift {
        offers,
        jobs,
        day,
        position: position.map(|p| LatLon::new(p.latitude, p.longitude)),
        offers_earn,
    })
}

#[utoipa::path(
    get,
    path = "/courier/",
    operation_id = "courierAppShift",
    tag = "courier app",
    summary = "The couriers' app: the shift (online or not, offers with their routes, the stops of the jobs under way, the day so far)",
    security(()),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /courier/sign-in"),
        (status = 403, description = "A page: the courier was suspended and is signed out", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn shift_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let now = now();
    let market = &session.courier.market;
    let shift = match read_shift(&state, session.courier.id, market, now).await {
        Ok(shift) => shift,
        Err(error) => {
            tracing::error!(%error, "reading a courier's shift failed");
            return unavailable(true);
        }
    };
    let offers = shift
        .offers
        .iter()
        .zip(&shift.offers_earn)
        .map(|(offer, earns)| {
            let earns = earns.map(|e| e.formatted());
            offer_card(&state, &session, offer, shift.position, now, earns)
        })
        .collect();
    let under_way = stops_under_way(&shift.jobs);
    let route_map = (!under_way.is_empty()).then(|| {
        let places: Vec<&Value> = under_way
            .iter()
            .map(|(job, kind)| kind.of(&shift.jobs[*job]))
            .collect();
        let kinds: Vec<StopKind> = under_way.iter().map(|(_, kind)| *kind).collect();
        let map = state.tracking.route_map(
            &session.courier.market,
            session.courier.vehicle,
            shift.position,
            &places,
        );
        stop_map(map, &kinds, "Your route")
    });
    let body = HomePage {
        signed_in: true,
        csrf: session.csrf_token.clone(),
        name: session.courier.name.clone(),
        market: session.courier.market.clone(),
        vehicle: session.courier.vehicle.as_str(),
        online: session.courier.online,
        version: version(session.courier.online, &shift.offers, &shift.jobs),
        offers,
        stops: under_way
            .iter()
            .enumerate()
            .map(|(i, (job, kind))| stop_card(i + 1, &shift.jobs[*job], *kind))
            .collect(),
        route_map,
        today: Today {
            delivered: shift.day.delivered,
            returned: shift.day.returned,
            distance: format!("{:.1} km", shift.day.distance_metres as f64 / 1000.0),
            earned: state
                .couriers
                .earned(
                    market,
                    shift.day.delivered + shift.day.returned,
                    shift.day.distance_metres,
                )
                .map(|e| e.formatted()),
        },
    };
    app_page(StatusCode::OK, body.render())
}

/// What the script compares with the page it shows.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ShiftState {
    /// Changes when an offer comes or goes, a job moves, or the shift goes on or off.
    version: String,
    online: bool,
    offers: usize,
    jobs: usize,
}

#[utoipa::path(
    get,
    path = "/courier/state",
    operation_id = "courierAppState",
    tag = "courier app",
    summary = "The couriers' app: what the shift page shows, summed up (the script reloads the page when it changes)",
    security(()),
    responses(
        (status = 200, description = "The shift's state", body = ShiftState),
        (status = 303, description = "Signed out: to /courier/sign-in"),
        (status = 403, description = "A page: the courier was suspended and is signed out", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn shift_state(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let courier_id = session.courier.id;
    let read = tokio::try_join!(
        state.couriers.open_offers(courier_id),
        state.couriers.jobs_under_way(courier_id),
    );
    match read {
        Ok((offers, jobs)) => Json(ShiftState {
            version: version(session.courier.online, &offers, &jobs),
            online: session.courier.online,
            offers: offers.len(),
            jobs: jobs.len(),
        })
        .into_response(),
        Err(error) => {
            tracing::error!(%error, "reading a courier's shift failed");
            unavailable(true)
        }
    }
}

#[utoipa::path(
    post,
    path = "/courier/shift",
    operation_id = "courierAppShiftChange",
    tag = "courier app",
    summary = "The couriers' app: go online (offers may be routes of several jobs) or offline (the open offer is withdrawn)",
    security(()),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`, `online`: `true` or `false`"),
    responses(
        (status = 303, description = "To the shift"),
        (status = 403, description = "A page: the form has no valid token, or the courier is suspended", content_type = "text/html", body = String),
        (status = 422, description = "A page: `online` is neither true nor false", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn change_shift(State(state): State<AppState>, request: Request) -> Response {
    let (session, fields) = match signed_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let online = match field(&fields, "online") {
        Some("true") => true,
        Some("false") => false,
        _ => {
            return message(
                StatusCode::UNPROCESSABLE_ENTITY,
                true,
                "Online or offline?",
                "The form did not say whether to go online or offline.",
            );
        }
    };
    // The app shows routes of several jobs.
    match state
        .couriers
        .set_online(session.courier.id, online, online)
        .await
    {
        Ok(_) => see_other("/courier/"),
        Err(error) => {
            tracing::error!(%error, "changing a courier's shift failed");
            unavailable(true)
        }
    }
}

#[utoipa::path(
    post,
    path = "/courier/position",
    operation_id = "courierAppPosition",
    tag = "courier app",
    summary = "The couriers' app: where the phone is (sent by the script while online)",
    security(()),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`, `latitude`, `longitude`"),
    responses(
        (status = 204, description = "Kept"),
        (status = 303, description = "Signed out: to /courier/sign-in"),
        (status = 403, description = "A page: the form has no valid token, or the courier is suspended", content_type = "text/html", body = String),
        (status = 422, description = "A page: not a point on Earth", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn report_position(State(state): State<AppState>, request: Request) -> Response {
    let (session, fields) = match signed_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let number = |name| field(&fields, name).and_then(|v| v.trim().parse::<f64>().ok());
    let point = match (number("latitude"), number("longitude")) {
        (Some(lat), Some(lon)) if LatLon::new(lat, lon).is_valid() => LatLon::new(lat, lon),
        _ => {
            return message(
                StatusCode::UNPROCESSABLE_ENTITY,
                true,
                "Not a place",
                "The position sent is not a point on Earth.",
            );
        }
    };
    match state
        .couriers
        .report_position(session.courier.id, point.lat, point.lon)
        .await
    {
        Ok(_) => StatusCode::NO_CONTENT.into_response(),
        Err(error) => {
            tracing::error!(%error, "keeping a courier's position failed");
            unavailable(true)
        }
    }
}
