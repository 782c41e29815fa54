//! A courier's open offers as it sees them: one per route (a job, or several from one
//! pickup), its stops in the order to make them.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use courier_store::dispatch::OfferRow;
use courier_store::jobs::JobRow;

/// Which end of a job a stop is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopKind {
    Pickup,
    Dropoff,
}

impl StopKind {
    pub fn as_str(self) -> &'static str {
        match self {
            StopKind::Pickup => "pickup",
            StopKind::Dropoff => "dropoff",
        }
    }

    /// The job's stop of this kind, as jobs keep it.
    pub fn of(self, job: &JobRow) -> &Value {
        match self {
            StopKind::Pickup => &job.pickup,
            StopKind::Dropoff => &job.dropoff,
        }
    }
}

/// One offer: accepted or declined whole.
#[derive(Clone, Debug)]
pub struct OfferedRoute {
    /// The id to answer it by (its first offer's route id).
    pub id: Uuid,
    pub expires_at: DateTime<Utc>,
    /// The courier's estimated travel to the first pickup.
    pub travel_seconds: i32,
    /// Its jobs, in drop-off order.
    pub jobs: Vec<JobRow>,
    /// Its stops in order: the job (an index into `jobs`) and which end.
    pub stops: Vec<(usize, StopKind)>,
}

/// The courier's open offers, one per route, in the order given. `open` holds each route's
/// offers together, its first offer first (as the store reads them).
pub fn offered_routes(open: &[(OfferRow, JobRow)]) -> Vec<OfferedRoute> {
    let mut routes: Vec<Vec<&(OfferRow, JobRow)>> = Vec::new();
    for entry in open {
        match routes.last_mut() {
            Some(route) if route[0].0.route_id == entry.0.route_id => route.push(entry),
            _ => routes.push(vec![entry]),
        }
    }
    routes
        .into_iter()
        .filter_map(|route| offered(&route))
        .collect()
}

fn offered(route: &[&(OfferRow, JobRow)]) -> Option<OfferedRoute> {
    let (first, _) = route.first()?;
    let job_of = |id: Uuid| route.iter().find(|(o, _)| o.job_id == id).map(|(_, j)| j);
    // The stops as planned (on the route's first offer); without them (an offer made before
    // routes, or a route whose first job was cancelled), each open job's pickup, then each
    // drop-off.
    let planned: Vec<(Uuid, StopKind)> = first
        .stops
        .as_ref()
        .and_then(Value::as_array)
        .map(|stops| {
            stops
                .iter()
                .filter_map(|s| {
                    let kind = match s["stop"].as_str()? {
                        "pickup" => StopKind::Pickup,
                        "dropoff" => StopKind::Dropoff,
                        _ => return None,
                    };
                    Some((s["job_id"].as_str()?.parse().ok()?, kind))
                })
                .collect()
        })
        .unwrap_or_else(|| {
            [StopKind::Pickup, StopKind::Dropoff]
                .iter()
                .flat_map(|kind| route.iter().map(|(o, _)| (o.job_id, *kind)))
                .collect()
        });
    let jobs: Vec<JobRow> = planned
        .iter()
        .filter(|(_, kind)| *kind == StopKind::Dropoff)
        .filter_map(|(job_id, _)| job_of(*job_id).cloned())
        .collect();
    if jobs.is_empty() {
        return None;
    }
    let stops = planned
        .iter()
        .filter_map(|(job_id, kind)| Some((jobs.iter().position(|j| j.id == *job_id)?, *kind)))
        .collect();
    Some(OfferedRoute {
        id: first.route_id,
        expires_at: first.expires_at,
        travel_seconds: first.travel_seconds,
        jobs,
        stops,
    })
}
