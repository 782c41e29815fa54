//! Couriers an operator might put on a job by hand: those online in its market with a fresh
//! position, nearest by road first, each with its trip to where the job needs a courier (the
//! pickup; for a parcel already collected, the courier now holding it).

use chrono::{DateTime, Utc};
use courier_geo::LatLon;
use uuid::Uuid;

use super::Tracking;
use crate::dispatch::point;
use crate::jobs::POSITION_FRESHNESS;
use crate::markets::Market;
use courier_domain::{JobStatus, Vehicle};
use courier_store::couriers::{self as couriers_store, OnlineCourier};
use courier_store::jobs::JobRow;

/// Couriers read from the market: the nearest in a straight line are routed.
const READ: i64 = 500;
/// Couriers routed by road, nearest in a straight line first.
const ROUTED: usize = 20;
/// Suggestions shown.
pub const SUGGESTED: usize = 8;

/// A courier suggested for a job.
#[derive(Clone, Debug, PartialEq)]
pub struct Suggestion {
    pub courier_id: Uuid,
    pub name: String,
    pub vehicle: Vehicle,
    /// On another job already.
    pub busy: bool,
    /// The trip by road on the courier's vehicle; None when the roads do not join.
    pub trip_seconds: Option<u32>,
    pub trip_metres: Option<u32>,
}

/// Where a job needs its (new) courier: the pickup until collected, then the courier holding
/// the parcel, where last seen.
fn meeting_point(job: &JobRow, holder: Option<&OnlineCourier>) -> Option<LatLon> {
    if job.status == JobStatus::InTransit {
        let holder = holder?;
        return Some(LatLon::new(holder.latitude?, holder.longitude?));
    }
    point(&job.pickup)
}

impl Tracking {
    /// Up to [`SUGGESTED`] couriers for `job` (not the one on it), by trip by road, those the
    /// roads do not join last.
    pub async fn suggestions(
        &self,
        market: &Market,
        job: &JobRow,
        now: DateTime<Utc>,
    ) -> Result<Vec<Suggestion>, sqlx::Error> {
        let online = couriers_store::online_in_market(
            &self.pool,
            market.id(),
            now - POSITION_FRESHNESS,
            READ,
        )
        .await?;
        let holder = online.iter().find(|c| Some(c.id) == job.courier_id);
        let Some(target) = meeting_point(job, holder) else {
            return Ok(Vec::new());
        };
        Ok(rank(market, target, job.courier_id, &online))
    }
}

/// `couriers` other than `current` with a position, the [`ROUTED`] nearest in a straight line
/// routed to `target`, nearest by road first.
fn rank(
    market: &Market,
    target: LatLon,
    current: Option<Uuid>,
    couriers: &[OnlineCourier],
) -> Vec<Suggestion> {
    let mut placed: Vec<(f64, &OnlineCourier, LatLon)> = couriers
        .iter()
        .filter(|c| Some(c.id) != current)
        .filter_map(|c| {
            let at = LatLon::new(c.latitude?, c.longitude?);
            at.is_valid().then(|| (at.distance_metres(target), c, at))
        })
        .collect();
    placed.sort_by(|a, b| a.0.total_cmp(&b.0));
    placed.truncate(ROUTED);
    let mut suggestions: Vec<Suggestion> = placed
        .into_iter()
        .map(|(_, c, at)| {
            let route = market.route(c.vehicle, at, target).ok();
            Suggestion {
                courier_id: c.id,
                name: c.name.clone(),
                vehicle: c.vehicle,
                busy: c.busy,
                trip_seconds: route.as_ref().map(|r| r.duration_seconds),
                trip_metres: route.as_ref().map(|r| r.distance_metres),
            }
        })
        .collect();
    // Free couriers before busy ones at the same trip; unjoined roads last.
    suggestions.sort_by_key(|s| (s.trip_seconds.unwrap_or(u32::MAX), s.busy));
    suggestions.truncate(SUGGESTED);
    suggestions
}
