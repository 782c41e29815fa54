//! The public tracking page: what a merchant's customer sees at `tracking_url`, without
//! signing in. It shows the status in words with a timeline, the pickup and drop-off areas
//! (never contact names, phones or the courier), an estimated arrival from the market's road
//! routing, and a map drawn from the service's own route geometry; the page polls its state
//! until the job ends. A token is unknown, or expired once its job ended more than
//! `COURIER_TRACKING_TTL_SECS` ago: both read as "not found", alike. [`board`] draws a whole
//! market the same way for operators, with its couriers and searching jobs.

pub mod board;
pub mod map;
pub mod route_map;
pub mod suggest;
mod view;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use courier_geo::{LatLon, Route};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

pub use view::{StepView, TrackingState};

use crate::jobs::POSITION_FRESHNESS;
use crate::markets::{Market, Markets};
use courier_domain::JobStatus;
use courier_domain::tracking::eta::TravelTimes;
use courier_domain::tracking::timeline::Milestones;
use courier_domain::tracking::wording;
use courier_store::jobs::{self as jobs_store, JobRow};
use courier_store::tracking as store;
use map::MapInput;

use courier_domain::error::Code;

pub const TRACKING_NOT_FOUND: Code = Code::new(
    404,
    "tracking.not_found",
    "Tracking state (`GET /track/{token}/state`) of an unknown token, or of a job that ended more than `COURIER_TRACKING_TTL_SECS` ago.",
);

/// `COURIER_TRACKING_*`.
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct TrackingConfig {
    /// How long a job's tracking page stays up after the job ended (7 days); later its link
    /// answers the same 404 as an unknown one.
    #[arg(id = "tracking-ttl-secs", long = "tracking-ttl-secs", env = "COURIER_TRACKING_TTL_SECS",
          default_value = "604800", value_parser = ttl)]
    pub ttl: chrono::Duration,
    /// How often an open tracking page asks for its state (at least 250).
    #[arg(id = "tracking-poll-ms", long = "tracking-poll-ms", env = "COURIER_TRACKING_POLL_MS",
          default_value = "5000", value_parser = poll_interval)]
    pub poll_interval: std::time::Duration,
    /// A courier's trail (the operators' courier page) keeps a point at most this often,
    /// however often its phone reports (15000).
    #[arg(id = "tracking-trail-every-ms", long = "tracking-trail-every-ms",
          env = "COURIER_TRACKING_TRAIL_EVERY_MS", default_value = "15000",
          value_parser = trail_every)]
    pub trail_every: chrono::Duration,
    /// How many of each kind (couriers, jobs searching, jobs under way) the tables beside a
    /// market board's map list unless asked for all (100); the map draws every one.
    #[arg(id = "tracking-board-rows", long = "tracking-board-rows",
          env = "COURIER_TRACKING_BOARD_ROWS", default_value = "100",
          value_parser = crate::infra::settings::positive_u32)]
    pub board_rows: u32,
    /// A market board's map draws each courier and job while it would draw at most this many
    /// marks in all (300); more, and it draws them grouped by area, each group opening a
    /// closer map of its part of the market.
    #[arg(id = "tracking-board-marks", long = "tracking-board-marks",
          env = "COURIER_TRACKING_BOARD_MARKS", default_value = "300",
          value_parser = crate::infra::settings::positive_u32)]
    pub board_marks: u32,
    /// The most of each kind (couriers online, jobs searching, jobs under way) a market board
    /// reads (50000): past it the board says "at least" and draws those read.
    #[arg(id = "tracking-board-read", long = "tracking-board-read",
          env = "COURIER_TRACKING_BOARD_READ", default_value = "50000",
          value_parser = crate::infra::settings::positive_u32)]
    pub board_read: u32,
}

impl Default for TrackingConfig {
    fn default() -> Self {
        crate::infra::settings::from_lookup(|_| None).expect("the defaults are valid")
    }
}

fn ttl(raw: &str) -> Result<chrono::Duration, String> {
    crate::infra::settings::whole(raw)
        .map(|secs| chrono::Duration::seconds(secs as i64))
        .map_err(|_| format!("{raw:?} must not be negative"))
}

fn trail_every(raw: &str) -> Result<chrono::Duration, String> {
    crate::infra::settings::whole(raw).map(|ms| chrono::Duration::milliseconds(ms as i64))
}

fn poll_interval(raw: &str) -> Result<std::time::Duration, String> {
    // Faster than this, open pages would load the service more than they help anyone.
    match crate::infra::settings::whole(raw)? {
        ms if ms >= 250 => Ok(std::time::Duration::from_millis(ms)),
        _ => Err("must be at least 250".to_owned()),
    }
}

/// Journeys kept in memory; past this, the cache starts afresh (it only saves routing work).
const JOURNEY_CACHE_CAPACITY: usize = 4096;

/// What never changes for a job: the pickup to drop-off route and the two areas.
struct Journey {
    route: Option<Route>,
    pickup_area: String,
    dropoff_area: String,
}

pub struct Tracking {
    pool: PgPool,
    markets: Arc<Markets>,
    config: TrackingConfig,
    journeys: Mutex<HashMap<Uuid, Arc<Journey>>>,
}

impl Tracking {
    pub fn new(pool: PgPool, markets: Arc<Markets>, config: TrackingConfig) -> Self {
        Self {
            pool,
            markets,
            config,
            journeys: Mutex::new(HashMap::new()),
        }
    }

    /// The state of the job tracked by `token`; `None` for an unknown or expired token.
    pub async fn state(
        &self,
        token: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<TrackingState>, sqlx::Error> {
        if !is_token_shaped(token) {
            return Ok(None);
        }
        let Some(job) = store::find_by_token(&self.pool, token).await? else {
            return Ok(None);
        };
        let events = store::job_events(&self.pool, job.id).await?;
        let milestones = milestones(&job, &events);
        if view::is_ended(Some(job.status)) {
            let ended_at = milestones.ended_at.unwrap_or(job.booked_at);
            if ended_at + self.config.ttl <= now {
                return Ok(None);
            }
        }
        self.state_of(&job, milestones, now).await.map(Some)
    }

    /// What the tracking page would show of `job`, however long ago it ended: for the
    /// merchant's console, which has read the job for its merchant and draws the same map.
    pub async fn state_of_job(
        &self,
        job: &JobRow,
        now: DateTime<Utc>,
    ) -> Result<TrackingState, sqlx::Error> {
        let events = store::job_events(&self.pool, job.id).await?;
        let milestones = milestones(job, &events);
        self.state_of(job, milestones, now).await
    }

    async fn state_of(
        &self,
        job: &JobRow,
        milestones: Milestones,
        now: DateTime<Utc>,
    ) -> Result<TrackingState, sqlx::Error> {
        let status = Some(job.status);
        let market = self.markets.get(&job.market_id).map(Arc::as_ref);
        let journey = self.journey(job, market);
        let courier = match (status, job.courier_id) {
            (Some(JobStatus::Assigned | JobStatus::InTransit), Some(courier_id)) => {
                jobs_store::courier_position(&self.pool, courier_id, now - POSITION_FRESHNESS)
                    .await?
                    .map(|(lat, lon, _)| LatLon::new(lat, lon))
            }
            _ => None,
        };
        let (pickup, dropoff) = (stop_point(&job.pickup), stop_point(&job.dropoff));
        let next_stop = match status {
            Some(JobStatus::Assigned) => pickup,
            _ => dropoff,
        };
        let courier_leg = match (market, courier, next_stop) {
            (Some(market), Some(from), Some(to)) => market.route(job.vehicle, from, to).ok(),
            _ => None,
        };
        let description = map_description(status, &journey, courier, courier_leg.as_ref());
        let network = market.and_then(|m| m.network().ok());
        let streets = |visible: &map::Visible| {
            network.map_or_else(Vec::new, |network| {
                network.streets_in(
                    visible.south_west,
                    visible.north_east,
                    visible.street_tolerance_metres(),
                    map::MAX_STREET_POINTS,
                )
            })
        };
        let map = map::draw(
            &MapInput {
                pickup: pickup.unwrap_or(LatLon::new(0.0, 0.0)),
                dropoff: dropoff.unwrap_or(LatLon::new(0.0, 0.0)),
                route: journey.route.as_ref().map(|r| r.shape.as_slice()),
                courier_leg: courier_leg.as_ref().map(|r| r.shape.as_slice()),
                courier,
                streets: Some(&streets),
            },
            description,
        );
        let facts = view::Facts {
            reference: job.reference.clone(),
            status_name: job.status.as_str().to_owned(),
            status,
            milestones,
            scheduled_for: job.scheduled_for,
            pickup_area: journey.pickup_area.clone(),
            dropoff_area: journey.dropoff_area.clone(),
            travel: TravelTimes {
                journey: journey.route.as_ref().map(|r| r.duration_seconds),
                courier_to_next_stop: courier_leg.as_ref().map(|r| r.duration_seconds),
            },
            proof_outcome: job
                .proof
                .as_ref()
                .and_then(|proof| proof["outcome"].as_str())
                .map(wording::proof_outcome),
            zone: market.map_or(chrono_tz::UTC, |m| m.definition.timezone),
        };
        let poll_ms = u64::try_from(self.config.poll_interval.as_millis()).unwrap_or(u64::MAX);
        Ok(view::build(facts, map, poll_ms, now))
    }

    /// The job's journey, routed once per job while its market's network is loaded.
    fn journey(&self, job: &JobRow, market: Option<&Market>) -> Arc<Journey> {
        if let Some(known) = self.cached(job.id) {
            return known;
        }
        let (pickup, dropoff) = (stop_point(&job.pickup), stop_point(&job.dropoff));
        let route = match (market, pickup, dropoff) {
            (Some(market), Some(from), Some(to)) => market.route(job.vehicle, from, to).ok(),
            _ => None,
        };
        let journey = Arc::new(Journey {
            route,
            pickup_area: area(market, pickup, &job.pickup),
            dropoff_area: area(market, dropoff, &job.dropoff),
        });
        // Not kept while the network is loading: the next poll finds the road route.
        if market.is_some_and(|m| m.network().is_ok()) {
            let mut journeys = self.journeys.lock().expect("journey cache lock");
            if journeys.len() >= JOURNEY_CACHE_CAPACITY {
                journeys.clear();
            }
            journeys.insert(job.id, Arc::clone(&journey));
        }
        journey
    }

    fn cached(&self, job_id: Uuid) -> Option<Arc<Journey>> {
        self.journeys
            .lock()
            .expect("journey cache lock")
            .get(&job_id)
            .cloned()
    }
}

/// Tokens are 43 URL-safe base64 characters (256 bits); anything else is not looked up.
fn is_token_shaped(token: &str) -> bool {
    token.len() == 43
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn stop_point(stop: &Value) -> Option<LatLon> {
    let point = LatLon::new(stop["latitude"].as_f64()?, stop["longitude"].as_f64()?);
    point.is_valid().then_some(point)
}

/// A stop's area: the street (never the house number) and the postcode, from the market's
/// own map; the market's name when neither is known.
fn area(market: Option<&Market>, point: Option<LatLon>, stop: &Value) -> String {
    let places = market
        .and_then(|m| m.network().ok())
        .map(|network| network.places());
    let street = places
        .zip(point)
        .and_then(|(places, at)| places.street_at(at))
        .map(|place| place.name);
    let postcode = stop["postcode"]
        .as_str()
        .map(str::trim)
        .filter(|p| !p.is_empty() && p.len() <= 16)
        .map(str::to_owned)
        .or_else(|| {
            places
                .zip(point)
                .and_then(|(places, at)| places.reverse(at))
                .and_then(|place| place.postcode)
        });
    match (street, postcode) {
        (Some(street), Some(postcode)) => format!("{street}, {postcode}"),
        (Some(street), None) => street,
        (None, Some(postcode)) => postcode,
        (None, None) => {
            market.map_or_else(|| "Not known".to_owned(), |m| m.definition.name.clone())
        }
    }
}

/// When each step happened: the job's own timestamps, else its latest event of the kind.
fn milestones(job: &JobRow, events: &[(String, DateTime<Utc>)]) -> Milestones {
    let last = |names: &[&str]| {
        events
            .iter()
            .rev()
            .find(|(name, _)| names.contains(&name.as_str()))
            .map(|(_, at)| *at)
    };
    Milestones {
        booked_at: Some(job.booked_at),
        assigned_at: job.assigned_at.or_else(|| last(&["job.courier_assigned"])),
        picked_up_at: last(&["job.picked_up"]),
        ended_at: job.completed_at.or_else(|| {
            last(&[
                "job.delivered",
                "job.returned",
                "job.cancelled",
                "job.failed",
            ])
        }),
    }
}

/// The map in words: its text alternative.
fn map_description(
    status: Option<JobStatus>,
    journey: &Journey,
    courier: Option<LatLon>,
    courier_leg: Option<&Route>,
) -> String {
    let mut words = match &journey.route {
        Some(route) => format!(
            "Map of the route from {} to {}, {} by road.",
            journey.pickup_area,
            journey.dropoff_area,
            wording::distance(route.distance_metres)
        ),
        None => format!(
            "Map from {} to {}, drawn as a straight line.",
            journey.pickup_area, journey.dropoff_area
        ),
    };
    let next_stop = match status {
        Some(JobStatus::Assigned) => "the pickup",
        Some(JobStatus::InTransit) => "the drop-off",
        _ => return words,
    };
    words.push(' ');
    match (courier, courier_leg) {
        (Some(_), Some(leg)) => words.push_str(&format!(
            "The courier is {} from {next_stop} by road.",
            wording::distance(leg.distance_metres)
        )),
        (Some(_), None) => words.push_str("The courier's position is marked."),
        (None, _) => words.push_str("The courier's position is not known right now."),
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_token_shaped_strings_are_looked_up() {
        let token = format!("{}abc", "A-_z".repeat(10));
        assert!(is_token_shaped(&token));
        assert!(!is_token_shaped(&token[1..]));
        assert!(!is_token_shaped(&format!("{}%", &token[1..])));
        assert!(!is_token_shaped(""));
    }
}
