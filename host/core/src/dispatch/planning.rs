//! A market's open jobs and available couriers, planned by the domain's planner on the
//! market's road network: which courier is offered which jobs, in which order of stops.
//! Pure given the market: the snapshot is read and the offers written by the dispatcher.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use courier_domain::Vehicle;
use courier_domain::dispatch::planner::{
    self, PlanCourier, PlanJob, PlannerSettings, ServiceTimes,
};
use courier_geo::LatLon;
use courier_store::couriers::AvailableCourier;
use courier_store::jobs::JobRow;

use super::config::DispatchConfig;
use crate::markets::Market;

/// A point as the planner tells places apart: whole micro-degrees.
type Spot = (i64, i64);

/// Collecting at the pickup, and handing over at the drop-off, each take this long.
const AT_STOP_SECONDS: i64 = 60;
/// A courier who cannot collect a parcel within this of its being due is not sent for it.
const LATEST_PICKUP_SECONDS: i64 = 3600;
/// The travel time of a pair with no road route, or farther apart than the search radius:
/// past every deadline, so never planned.
const UNREACHABLE_SECONDS: i64 = 1 << 30;
const METRES_PER_DEGREE_OF_LATITUDE: f64 = 111_200.0;

fn spot(point: LatLon) -> Spot {
    (
        (point.lat * 1e6).round() as i64,
        (point.lon * 1e6).round() as i64,
    )
}

/// A route to offer: the courier, and its jobs in drop-off order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct PlannedRoute {
    pub courier_id: Uuid,
    pub jobs: Vec<Uuid>,
    /// The courier's trip to the pickup.
    pub travel_seconds: i64,
}

/// What the planner is told of the service's settings.
pub(super) fn settings(config: &DispatchConfig) -> PlannerSettings {
    PlannerSettings {
        max_bundle: config.max_bundle,
        bundle_window: config.bundle_window.num_seconds(),
        max_detour: config.max_detour.num_seconds(),
        // Told when a courier leaving now would wait no longer than this for the parcel.
        commit_within: config.ready_wait.num_seconds(),
    }
}

const SERVICE: ServiceTimes = ServiceTimes {
    pickup_before: 0,
    pickup_after: AT_STOP_SECONDS,
    dropoff_before: AT_STOP_SECONDS,
    dropoff_after: 0,
};

/// The routes to offer now in `market`, each vehicle's jobs planned for its couriers.
/// `offered_before`: (job, courier) pairs never to be offered again.
pub(super) fn plan(
    market: &Market,
    now: DateTime<Utc>,
    jobs: &[JobRow],
    couriers: &[AvailableCourier],
    offered_before: &HashSet<(Uuid, Uuid)>,
    config: &DispatchConfig,
) -> Vec<PlannedRoute> {
    let mut vehicles: Vec<Vehicle> = jobs.iter().map(|j| j.vehicle).collect();
    vehicles.sort_by_key(|v| v.as_str());
    vehicles.dedup();
    vehicles
        .into_iter()
        .flat_map(|vehicle| {
            let jobs: Vec<&JobRow> = jobs.iter().filter(|j| j.vehicle == vehicle).collect();
            let on = |routes: bool| -> Vec<&AvailableCourier> {
                couriers
                    .iter()
                    .filter(|c| c.vehicle == vehicle && c.takes_routes == routes)
                    .collect()
            };
            let fleet = Fleet {
                market,
                vehicle,
                now,
                offered_before,
                config,
            };
            // Couriers whose apps take routes first; what they are not given now goes to
            // the others, one job each.
            let routes = fleet.plan(&jobs, &on(true), settings(config));
            let given: HashSet<Uuid> = routes.iter().flat_map(|r| r.jobs.clone()).collect();
            let left: Vec<&JobRow> = jobs
                .into_iter()
                .filter(|j| !given.contains(&j.id))
                .collect();
            let single = PlannerSettings {
                max_bundle: 1,
                ..settings(config)
            };
            let singles = fleet.plan(&left, &on(false), single);
            routes.into_iter().chain(singles).collect::<Vec<_>>()
        })
        .collect()
}

/// One vehicle's planning in a market.
struct Fleet<'a> {
    market: &'a Market,
    vehicle: Vehicle,
    now: DateTime<Utc>,
    offered_before: &'a HashSet<(Uuid, Uuid)>,
    config: &'a DispatchConfig,
}

impl Fleet<'_> {
    fn plan(
        &self,
        jobs: &[&JobRow],
        couriers: &[&AvailableCourier],
        settings: PlannerSettings,
    ) -> Vec<PlannedRoute> {
        if jobs.is_empty() || couriers.is_empty() {
            return Vec::new();
        }
        plan_vehicle(self, jobs, couriers, settings)
    }
}

fn plan_vehicle(
    fleet: &Fleet<'_>,
    jobs: &[&JobRow],
    couriers: &[&AvailableCourier],
    settings: PlannerSettings,
) -> Vec<PlannedRoute> {
    let Fleet {
        market,
        vehicle,
        now,
        offered_before,
        config,
    } = *fleet;
    let mut places: HashMap<Spot, LatLon> = HashMap::new();
    let mut place = |point: LatLon| {
        let key = spot(point);
        places.insert(key, point);
        key
    };
    // Jobs whose stops cannot be read are left to fail at their deadline (logged once here).
    let stops: Vec<(&JobRow, Spot, Spot)> = jobs
        .iter()
        .filter_map(|job| match (point(&job.pickup), point(&job.dropoff)) {
            (Some(pickup), Some(dropoff)) => Some((*job, place(pickup), place(dropoff))),
            _ => {
                tracing::error!(job_id = %job.id, "a searching job has no readable stops");
                None
            }
        })
        .collect();
    let courier_spots: Vec<Spot> = couriers
        .iter()
        .map(|c| place(LatLon::new(c.latitude, c.longitude)))
        .collect();
    let radius_metres = config.radius_km * 1000.0;
    let routed: RefCell<HashMap<(Spot, Spot), i64>> = RefCell::new(HashMap::new());
    let travel = |from: &Spot, to: &Spot| -> i64 {
        if from == to {
            return 0;
        }
        *routed.borrow_mut().entry((*from, *to)).or_insert_with(|| {
            let (a, b) = (places[from], places[to]);
            if straight_metres(a, b) > radius_metres {
                return UNREACHABLE_SECONDS;
            }
            market
                .route(vehicle, a, b)
                .map_or(UNREACHABLE_SECONDS, |route| {
                    i64::from(route.duration_seconds)
                })
        })
    };
    let clock = |at: DateTime<Utc>| at.timestamp();
    let plan_jobs: Vec<PlanJob<Spot>> = stops
        .iter()
        .map(|&(job, pickup, dropoff)| {
            let due = clock(job.due_at());
            PlanJob {
                pickup,
                dropoff,
                placed_at: clock(job.booked_at),
                ready_at: due,
                deadline: due
                    + LATEST_PICKUP_SECONDS
                    + SERVICE.pickup_after
                    + travel(&pickup, &dropoff)
                    + SERVICE.dropoff_before,
            }
        })
        .collect();
    let plan_couriers: Vec<PlanCourier<Spot>> = couriers
        .iter()
        .zip(&courier_spots)
        .map(|(courier, &at)| PlanCourier {
            at,
            free_at: clock(now),
            off_at: i64::MAX,
            // Couriers' pay is not known to the service: every job costs the same.
            job_cost: 0,
            refused: stops
                .iter()
                .enumerate()
                .filter(|(_, (job, _, _))| offered_before.contains(&(job.id, courier.id)))
                .map(|(j, _)| j)
                .collect(),
        })
        .collect();
    let routes = planner::plan(
        clock(now),
        &plan_jobs,
        &plan_couriers,
        travel,
        &SERVICE,
        &settings,
    );
    routes
        .into_iter()
        .map(|route| PlannedRoute {
            courier_id: couriers[route.courier].id,
            travel_seconds: travel(
                &courier_spots[route.courier],
                &plan_jobs[route.jobs[0]].pickup,
            ),
            jobs: route.jobs.iter().map(|&j| stops[j].0.id).collect(),
        })
        .collect()
}

/// A stop's point as booked.
pub fn point(stop: &serde_json::Value) -> Option<LatLon> {
    Some(LatLon::new(
        stop["latitude"].as_f64()?,
        stop["longitude"].as_f64()?,
    ))
}

/// Straight-line distance on a small patch of the Earth.
fn straight_metres(a: LatLon, b: LatLon) -> f64 {
    let north = (a.lat - b.lat) * METRES_PER_DEGREE_OF_LATITUDE;
    let east = (a.lon - b.lon)
        * METRES_PER_DEGREE_OF_LATITUDE
        * ((a.lat + b.lat) / 2.0).to_radians().cos();
    north.hypot(east)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn straight_lines_shrink_east_with_latitude() {
        let equator = straight_metres(LatLon::new(0.0, 0.0), LatLon::new(0.0, 0.01));
        let north = straight_metres(LatLon::new(60.0, 0.0), LatLon::new(60.0, 0.01));
        assert!((equator - 1112.0).abs() < 1.0, "{equator}");
        assert!((north - 556.0).abs() < 1.0, "{north}");
    }
}
