//! Couriers an operator might put on a job by hand: those online in its market with a fresh
//! position, the nearest in a straight line read nearest first and routed, nearest by road
//! first, each with its trip to where the job needs a courier (the
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
use courier_store::jobs as jobs_store;
use courier_store::jobs::JobRow;

/// Couriers routed by road: the nearest in a straight line.
const ROUTED: i64 = 20;
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

impl Tracking {
    /// Up to [`SUGGESTED`] couriers for `job` (not the one on it), by trip by road, those the
    /// roads do not join last.
    pub async fn suggestions(
        &self,
        market: &Market,
        job: &JobRow,
        now: DateTime<Utc>,
    ) -> Result<Vec<Suggestion>, sqlx::Error> {
        let fresh_since = now - POSITION_FRESHNESS;
        // Where the job needs its courier: the pickup until collected, then the courier
        // holding the parcel, where last seen.
        let target = match (job.status, job.courier_id) {
            (JobStatus::InTransit, Some(holder)) => {
                jobs_store::courier_position(&self.pool, holder, fresh_since)
                    .await?
                    .map(|(lat, lon, _)| LatLon::new(lat, lon))
            }
            (JobStatus::InTransit, None) => None,
            _ => point(&job.pickup),
        };
        let Some(target) = target else {
            return Ok(Vec::new());
        };
        // One more than routed: the courier on the job may be among them.
        let nearest = couriers_store::nearest_online(
            &self.pool,
            market.id(),
            (target.lat, target.lon),
            fresh_since,
            ROUTED + 1,
        )
        .await?;
        Ok(rank(market, target, job.courier_id, &nearest))
    }
}

/// `couriers` (nearest first) other than `current` with a position, the [`ROUTED`] nearest
/// routed to `target`, nearest by road first.
fn rank(
    market: &Market,
    target: LatLon,
    current: Option<Uuid>,
    couriers: &[OnlineCourier],
) -> Vec<Suggestion> {
    let mut suggestions: Vec<Suggestion> = couriers
        .iter()
        .filter(|c| Some(c.id) != current)
        .filter_map(|c| {
            let at = LatLon::new(c.latitude?, c.longitude?);
            at.is_valid().then_some((c, at))
        })
        .take(ROUTED as usize)
        .map(|(c, at)| {
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
