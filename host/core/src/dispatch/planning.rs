//! A market's open jobs and available couriers, planned by the domain's planner on the
//! market's road network: which courier is offered which jobs, in which order of stops.
//! Pure given the market: the snapshot is read and the offers written by the dispatcher.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use courier_domain::Vehicle;
use courier_domain::dispatch::OfferReason;
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
    /// Why each job of it is offered, in the order of `jobs`.
    pub reasons: Vec<OfferReason>,
}

/// What the planner is told for `vehicle` in `market`: the market's bundle limits for it
/// where it sets them, else the service's.
fn settings(market: &Market, vehicle: Vehicle, config: &DispatchConfig) -> PlannerSettings {
    let limits = market.definition.bundle_limits(vehicle);
    PlannerSettings {
        max_bundle: limits.max_jobs.unwrap_or(config.max_bundle),
        bundle_window: limits.window.unwrap_or(config.bundle_window).num_seconds(),
        max_detour: limits.max_detour.unwrap_or(config.max_detour).num_seconds(),
        // Told when a courier leaving now would wait no longer than this for the parcel.
        commit_within: config.ready_wait.num_seconds(),
        food_wait_weight: FOOD_WAIT_WEIGHT,
        scarcity_horizon: SCARCITY_HORIZON_SECONDS,
        // A search fails at its dispatch deadline: nothing is planned to arrive past it.
        late_by: 0,
    }
}

const SERVICE: ServiceTimes = ServiceTimes {
    pickup_before: 0,
    pickup_after: AT_STOP_SECONDS,
    dropoff_before: AT_STOP_SECONDS,
    dropoff_after: 0,
};

/// What a market's plan is made from.
pub(super) struct Snapshot<'a> {
    /// Searching jobs with no open offer.
    pub jobs: &'a [JobRow],
    /// Couriers free for an offer.
    pub couriers: &'a [AvailableCourier],
    /// Couriers whose apps take routes, with jobs assigned and none collected yet: the jobs.
    pub collecting: &'a [(AvailableCourier, Vec<JobRow>)],
    /// (job, courier) pairs never to be offered again.
    pub offered_before: &'a HashSet<(Uuid, Uuid)>,
}

/// The routes to offer now in `market`, each vehicle's jobs planned for its couriers.
pub(super) fn plan(
    market: &Market,
    now: DateTime<Utc>,
    snapshot: &Snapshot<'_>,
    config: &DispatchConfig,
) -> Vec<PlannedRoute> {
    let mut vehicles: Vec<Vehicle> = snapshot.jobs.iter().map(|j| j.vehicle).collect();
    vehicles.sort_by_key(|v| v.as_str());
    vehicles.dedup();
    vehicles
        .into_iter()
        .flat_map(|vehicle| {
            let settings = settings(market, vehicle, config);
            let mut fleet = Fleet {
                roads: Roads::new(market, vehicle, config.radius_km * 1000.0),
                now,
                offered_before: snapshot.offered_before,
            };
            let mut jobs: Vec<&JobRow> = snapshot
                .jobs
                .iter()
                .filter(|j| j.vehicle == vehicle)
                .collect();
            let on = |routes: bool| -> Vec<&AvailableCourier> {
                snapshot
                    .couriers
                    .iter()
                    .filter(|c| c.vehicle == vehicle && c.takes_routes == routes)
                    .collect()
            };
            // A courier at a pickup first: no trip is cheaper than none. Then the couriers
            // whose apps take routes; what they are not given goes to the others, one each.
            let mut routes = Vec::new();
            for (courier, holding) in snapshot
                .collecting
                .iter()
                .filter(|(c, _)| c.vehicle == vehicle)
            {
                if let Some(joined) = fleet.join(courier, holding, &jobs, &settings) {
                    jobs.retain(|j| !joined.jobs.contains(&j.id));
                    routes.push(joined);
                }
            }
            let planned = fleet.plan(&jobs, &on(true), settings);
            jobs.retain(|j| !planned.iter().any(|r| r.jobs.contains(&j.id)));
            routes.extend(planned);
            let single = PlannerSettings {
                max_bundle: 1,
                ..settings
            };
            routes.extend(fleet.plan(&jobs, &on(false), single));
            routes
        })
        .collect()
}

/// A second a parcel waits at its pickup weighs two of click-to-door besides its own, as in
/// the benchmark's replay (docs/couriers-and-dispatch.md, "The planner").
const FOOD_WAIT_WEIGHT: i64 = 2;

/// Couriers free within this count in how scarce couriers are, as in the benchmark.
const SCARCITY_HORIZON_SECONDS: i64 = 600;

/// A courier standing within this of a pickup is at it.
const AT_PICKUP_METRES: f64 = 150.0;

/// The places of one vehicle's plan and the road travel times between them, each routed
/// once.
struct Roads<'a> {
    market: &'a Market,
    vehicle: Vehicle,
    radius_metres: f64,
    places: HashMap<Spot, LatLon>,
    routed: RefCell<HashMap<(Spot, Spot), i64>>,
}

impl<'a> Roads<'a> {
    fn new(market: &'a Market, vehicle: Vehicle, radius_metres: f64) -> Self {
        Self {
            market,
            vehicle,
            radius_metres,
            places: HashMap::new(),
            routed: RefCell::new(HashMap::new()),
        }
    }

    fn place(&mut self, point: LatLon) -> Spot {
        let key = spot(point);
        self.places.insert(key, point);
        key
    }

    /// Seconds by road for the vehicle; pairs farther apart than the radius in a straight
    /// line, or with no route, are unreachable.
    fn travel(&self, from: &Spot, to: &Spot) -> i64 {
        if from == to {
            return 0;
        }
        *self
            .routed
            .borrow_mut()
            .entry((*from, *to))
            .or_insert_with(|| {
                let (a, b) = (self.places[from], self.places[to]);
                if straight_metres(a, b) > self.radius_metres {
                    return UNREACHABLE_SECONDS;
                }
                self.market
                    .route(self.vehicle, a, b)
                    .map_or(UNREACHABLE_SECONDS, |route| {
                        i64::from(route.duration_seconds)
                    })
            })
    }

    /// `jobs` as the planner sees them, with their stops placed; a job whose stops cannot be
    /// read is left out (to fail at its deadline) and logged.
    fn jobs<'j>(&mut self, jobs: &[&'j JobRow]) -> Vec<(&'j JobRow, PlanJob<Spot>)> {
        let mut planned = Vec::with_capacity(jobs.len());
        for &job in jobs {
            let (Some(pickup), Some(dropoff)) = (point(&job.pickup), point(&job.dropoff)) else {
                tracing::error!(job_id = %job.id, "a job has no readable stops");
                continue;
            };
            let (pickup, dropoff) = (self.place(pickup), self.place(dropoff));
            let due = job.due_at().timestamp();
            let deadline = due
                + LATEST_PICKUP_SECONDS
                + SERVICE.pickup_after
                + self.travel(&pickup, &dropoff)
                + SERVICE.dropoff_before;
            planned.push((
                job,
                PlanJob {
                    pickup,
                    dropoff,
                    placed_at: job.booked_at.timestamp(),
                    ready_at: due,
                    deadline,
                },
            ));
        }
        planned
    }
}

/// One vehicle's planning in a market.
struct Fleet<'a> {
    roads: Roads<'a>,
    now: DateTime<Utc>,
    offered_before: &'a HashSet<(Uuid, Uuid)>,
}

impl Fleet<'_> {
    /// The indexes of `jobs` offered to `courier` before.
    fn refused(&self, courier: &AvailableCourier, jobs: &[(&JobRow, PlanJob<Spot>)]) -> Vec<usize> {
        jobs.iter()
            .enumerate()
            .filter(|(_, (job, _))| self.offered_before.contains(&(job.id, courier.id)))
            .map(|(j, _)| j)
            .collect()
    }

    /// One more of `open` for a courier at the pickup of the jobs it `holding`s, if one fits.
    fn join(
        &mut self,
        courier: &AvailableCourier,
        holding: &[JobRow],
        open: &[&JobRow],
        settings: &PlannerSettings,
    ) -> Option<PlannedRoute> {
        let held: Vec<&JobRow> = holding.iter().collect();
        let held = self.roads.jobs(&held);
        let at = self
            .roads
            .place(LatLon::new(courier.latitude, courier.longitude));
        let pickup = held.first()?.1.pickup;
        let at_pickup = held.iter().all(|(_, job)| job.pickup == pickup)
            && straight_metres(self.roads.places[&at], self.roads.places[&pickup])
                <= AT_PICKUP_METRES;
        if !at_pickup {
            return None;
        }
        let open = self.roads.jobs(open);
        let refused = self.refused(courier, &open);
        let held: Vec<PlanJob<Spot>> = held.into_iter().map(|(_, job)| job).collect();
        let candidates: Vec<PlanJob<Spot>> = open.iter().map(|(_, job)| job.clone()).collect();
        let joined = planner::join_at_pickup(
            self.now.timestamp(),
            &held,
            &candidates,
            &refused,
            |a, b| self.roads.travel(a, b),
            &SERVICE,
            settings,
        )?;
        Some(PlannedRoute {
            courier_id: courier.id,
            jobs: vec![open[joined].0.id],
            travel_seconds: 0,
            reasons: vec![OfferReason::AtPickup],
        })
    }

    fn plan(
        &mut self,
        jobs: &[&JobRow],
        couriers: &[&AvailableCourier],
        settings: PlannerSettings,
    ) -> Vec<PlannedRoute> {
        if jobs.is_empty() || couriers.is_empty() {
            return Vec::new();
        }
        let planned = self.roads.jobs(jobs);
        let courier_spots: Vec<Spot> = couriers
            .iter()
            .map(|c| self.roads.place(LatLon::new(c.latitude, c.longitude)))
            .collect();
        let now = self.now.timestamp();
        let plan_couriers: Vec<PlanCourier<Spot>> = couriers
            .iter()
            .zip(&courier_spots)
            .map(|(courier, &at)| PlanCourier {
                at,
                free_at: now,
                off_at: i64::MAX,
                // Couriers' pay is not known to the service: every job costs the same.
                job_cost: 0,
                refused: self.refused(courier, &planned),
            })
            .collect();
        let plan_jobs: Vec<PlanJob<Spot>> = planned.iter().map(|(_, job)| job.clone()).collect();
        let roads = &self.roads;
        let routes = planner::plan(
            now,
            &plan_jobs,
            &plan_couriers,
            |a, b| roads.travel(a, b),
            &SERVICE,
            &settings,
        );
        let moment = |at: i64| DateTime::from_timestamp(at, 0).unwrap_or(self.now);
        routes
            .into_iter()
            .map(|route| PlannedRoute {
                courier_id: couriers[route.courier].id,
                travel_seconds: roads.travel(
                    &courier_spots[route.courier],
                    &plan_jobs[route.jobs[0]].pickup,
                ),
                jobs: route.jobs.iter().map(|&j| planned[j].0.id).collect(),
                reasons: route
                    .dropoffs_at
                    .iter()
                    .map(|&dropoff_at| OfferReason::Planned {
                        couriers_free: couriers.len(),
                        jobs_open: plan_jobs.len(),
                        departs_at: moment(route.departs_at),
                        pickup_at: moment(route.pickup_at),
                        dropoff_at: moment(dropoff_at),
                    })
                    .collect(),
            })
            .collect()
    }
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
