//! The replay: orders revealed at their placement time, couriers on and off duty as the
//! instance says, on a virtual clock of whole minutes, under one of two policies:
//!
//! - [`Policy::Nearest`], the first dispatcher's: each order, as soon as it is placed (or,
//!   when no courier is free, as soon as one is), goes to the free courier on duty with the
//!   shortest trip to its restaurant, one order per courier, who drives there at once and
//!   waits until it is ready;
//! - [`Policy::Planner`]: the planner ([`crate::dispatch::planner`]) run every minute over
//!   the open orders and the couriers on duty (and those coming on within the look-ahead),
//!   its committed routes given out as they are.
//!
//! The first dispatcher gives an order up once it can no longer be delivered within the
//! instance's maximum click-to-door. The planner delivers it late rather than not at all, up
//! to [`PlannerSettings::late_by`] past the maximum, each late delivery counting for less than
//! any on time: the benchmark's evaluator counts every order delivered, and some instances
//! hold orders whose food is ready only after the maximum has passed.

use super::instance::{Instance, Place};
use super::solution::{Assignment, Delivery, Move, Solution};
use crate::dispatch::planner::{self, PlanCourier, PlanJob, PlannerSettings, ServiceTimes};

/// Which dispatcher the replay runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Nearest,
    Planner(PlannerSettings),
}

impl Policy {
    /// The planner as the benchmark runs it: bundles of up to four, ready within ten
    /// minutes of each other, each drop-off delayed fifteen minutes at most; re-planned every
    /// minute; a minute of food waiting weighing two of click-to-door; bundles sized by the
    /// couriers free within ten minutes; an order past the maximum click-to-door delivered
    /// up to four hours late rather than not at all.
    pub const PLANNER: Policy = Policy::Planner(PlannerSettings {
        max_bundle: 4,
        bundle_window: 10,
        max_detour: 15,
        commit_within: 1,
        food_wait_weight: 2,
        scarcity_horizon: 10,
        late_by: 240,
    });
}

/// Couriers coming on duty within this many minutes are planned for already.
const LOOK_AHEAD: i64 = 15;

/// Where a courier is, when it is free again, and how many orders it has taken.
struct CourierState {
    at: Place,
    free_at: i64,
    orders: usize,
}

impl CourierState {
    /// Whether one more order raises the courier's pay: its per-order pay would pass the
    /// hourly guarantee of its shift.
    fn paid_per_order(&self, instance: &Instance, c: usize) -> bool {
        let p = &instance.parameters;
        let courier = &instance.couriers[c];
        let hours = (courier.off_at - courier.on_at) as f64 / 60.0;
        (self.orders + 1) as f64 * p.pay_per_order > hours * p.pay_per_hour
    }
}

/// What an order that raises a courier's pay counts for, in minutes of click-to-door.
const PAID_JOB_COST: i64 = 20;

/// The replay as it goes: where each courier is, and the solution so far.
struct Replay<'i> {
    instance: &'i Instance,
    service: ServiceTimes,
    couriers: Vec<CourierState>,
    /// Each courier's moves, in the order they are made.
    moves: Vec<Vec<Move>>,
    solution: Solution,
}

impl<'i> Replay<'i> {
    /// Every courier where it starts, free once on duty; nothing given out yet.
    fn new(instance: &'i Instance) -> Self {
        let couriers: Vec<CourierState> = instance
            .couriers
            .iter()
            .enumerate()
            .map(|(c, courier)| CourierState {
                at: Place::Start(c),
                free_at: courier.on_at,
                orders: 0,
            })
            .collect();
        Self {
            instance,
            service: service_times(instance),
            moves: vec![Vec::new(); couriers.len()],
            couriers,
            solution: Solution::default(),
        }
    }

    /// Gives courier `c`, at `now`, `orders` of one restaurant: it leaves for the restaurant
    /// at `departs_at`, collects them at `pickup_at`, and drops each off at its time in
    /// `dropoffs_at`, in order.
    fn give(
        &mut self,
        now: i64,
        c: usize,
        orders: Vec<usize>,
        (departs_at, pickup_at): (i64, i64),
        dropoffs_at: &[i64],
    ) {
        let restaurant = Place::Restaurant(self.instance.orders[orders[0]].restaurant);
        let state = &mut self.couriers[c];
        let moves = &mut self.moves[c];
        moves.push(Move {
            courier: c,
            departs_at,
            from: state.at.clone(),
            to: restaurant.clone(),
        });
        let mut leaves = pickup_at + self.service.pickup_after;
        let mut from = restaurant;
        for (&o, &dropoff_at) in orders.iter().zip(dropoffs_at) {
            let to = Place::Dropoff(o);
            moves.push(Move {
                courier: c,
                departs_at: leaves,
                from,
                to: to.clone(),
            });
            self.solution.deliveries.push(Delivery {
                order: o,
                pickup_at,
                dropoff_at,
                courier: c,
            });
            leaves = dropoff_at + self.service.dropoff_after;
            from = to;
        }
        state.at = from;
        state.free_at = leaves;
        state.orders += orders.len();
        self.solution.assignments.push(Assignment {
            at: now,
            pickup_at,
            courier: c,
            orders,
        });
    }

    fn finish(mut self) -> Solution {
        self.solution.moves = self.moves.into_iter().flatten().collect();
        self.solution
    }
}

/// Replays `instance` under `policy`.
pub fn simulate(instance: &Instance, policy: &Policy) -> Solution {
    match policy {
        Policy::Nearest => nearest(instance),
        Policy::Planner(settings) => planned(instance, settings),
    }
}

/// The service times as the benchmark splits them: half before the pickup or drop-off, half
/// after (rounded so that the two halves make the whole).
fn service_times(instance: &Instance) -> ServiceTimes {
    let p = &instance.parameters;
    let (pickup_before, dropoff_before) = ((p.pickup_service + 1) / 2, (p.dropoff_service + 1) / 2);
    ServiceTimes {
        pickup_before,
        pickup_after: p.pickup_service - pickup_before,
        dropoff_before,
        dropoff_after: p.dropoff_service - dropoff_before,
    }
}

/// Replays `instance` with the planner run every minute.
fn planned(instance: &Instance, settings: &PlannerSettings) -> Solution {
    let p = &instance.parameters;
    let mut replay = Replay::new(instance);
    let mut open: Vec<usize> = Vec::new();
    let mut next_order = 0;
    let Some(first) = instance.orders.first() else {
        return replay.finish();
    };
    let mut now = first.placed_at;
    loop {
        while let Some(order) = instance.orders.get(next_order) {
            if order.placed_at > now {
                break;
            }
            open.push(next_order);
            next_order += 1;
        }
        open.retain(|&o| {
            now - instance.orders[o].placed_at < p.max_click_to_door + settings.late_by
        });
        if open.is_empty() {
            match instance.orders.get(next_order) {
                Some(order) => {
                    now = order.placed_at;
                    continue;
                }
                None => break,
            }
        }
        let on_duty: Vec<usize> = (0..replay.couriers.len())
            .filter(|&c| {
                let courier = &instance.couriers[c];
                courier.on_at <= now + LOOK_AHEAD && courier.off_at >= now
            })
            .collect();
        let jobs: Vec<PlanJob<Place>> = open
            .iter()
            .map(|&o| {
                let order = &instance.orders[o];
                PlanJob {
                    pickup: Place::Restaurant(order.restaurant),
                    dropoff: Place::Dropoff(o),
                    placed_at: order.placed_at,
                    ready_at: order.ready_at,
                    deadline: order.placed_at + p.max_click_to_door,
                }
            })
            .collect();
        let fleet: Vec<PlanCourier<Place>> = on_duty
            .iter()
            .map(|&c| PlanCourier {
                at: replay.couriers[c].at.clone(),
                free_at: replay.couriers[c].free_at,
                off_at: instance.couriers[c].off_at,
                job_cost: if replay.couriers[c].paid_per_order(instance, c) {
                    PAID_JOB_COST
                } else {
                    0
                },
                refused: Vec::new(),
            })
            .collect();
        let routes = planner::plan(
            now,
            &jobs,
            &fleet,
            |a, b| instance.minutes_between(a, b),
            &replay.service,
            settings,
        );
        let mut given = vec![false; open.len()];
        for route in routes {
            let c = on_duty[route.courier];
            let orders: Vec<usize> = route.jobs.iter().map(|&j| open[j]).collect();
            for &j in &route.jobs {
                given[j] = true;
            }
            replay.give(
                now,
                c,
                orders,
                (route.departs_at, route.pickup_at),
                &route.dropoffs_at,
            );
        }
        let mut kept = given.iter();
        open.retain(|_| !kept.next().copied().unwrap_or(false));
        now += 1;
    }
    replay.finish()
}

/// Replays `instance` under the first dispatcher's policy.
fn nearest(instance: &Instance) -> Solution {
    let p = &instance.parameters;
    let mut replay = Replay::new(instance);
    let ServiceTimes {
        pickup_before,
        pickup_after,
        dropoff_before,
        ..
    } = replay.service;
    let mut waiting: Vec<usize> = Vec::new();
    let mut next_order = 0;
    let mut now = i64::MIN;
    loop {
        // The next moment anything can change: an order placed, a courier free or on duty.
        let next_placement = instance.orders.get(next_order).map(|o| o.placed_at);
        let next_free = replay
            .couriers
            .iter()
            .map(|c| c.free_at)
            .filter(|&t| t > now)
            .min();
        now = match (next_placement, next_free, waiting.is_empty()) {
            (None, _, true) => break,
            (None, None, false) => break,
            (Some(a), Some(b), _) => a.min(b),
            (Some(a), None, _) => a,
            (None, Some(b), false) => b,
        };
        while let Some(order) = instance.orders.get(next_order) {
            if order.placed_at > now {
                break;
            }
            waiting.push(next_order);
            next_order += 1;
        }
        waiting.retain(|&o| now - instance.orders[o].placed_at < p.max_click_to_door);
        let mut still_waiting = Vec::new();
        for &o in &waiting {
            let order = &instance.orders[o];
            let restaurant = Place::Restaurant(order.restaurant);
            let nearest = replay
                .couriers
                .iter()
                .enumerate()
                .filter(|(c, state)| instance.couriers[*c].on_at <= now && state.free_at <= now)
                .map(|(c, state)| (instance.minutes_between(&state.at, &restaurant), c))
                .filter(|&(trip, c)| {
                    let pickup = order.ready_at.max(now + trip + pickup_before);
                    pickup <= instance.couriers[c].off_at
                })
                .min();
            let Some((trip, c)) = nearest else {
                still_waiting.push(o);
                continue;
            };
            let pickup_at = order.ready_at.max(now + trip + pickup_before);
            let to_door = instance.minutes_between(&restaurant, &Place::Dropoff(o));
            let dropoff_at = pickup_at + pickup_after + to_door + dropoff_before;
            replay.give(now, c, vec![o], (now, pickup_at), &[dropoff_at]);
        }
        waiting = still_waiting;
    }
    replay.finish()
}

#[cfg(test)]
mod tests {
    use super::super::instance::{Courier, Order, Parameters, Point, Restaurant};
    use super::*;

    fn instance(couriers: Vec<Courier>, orders: Vec<Order>) -> Instance {
        Instance {
            orders,
            restaurants: vec![Restaurant {
                id: "r1".into(),
                at: Point { x: 0.0, y: 0.0 },
            }],
            couriers,
            parameters: Parameters {
                metres_per_minute: 100.0,
                pickup_service: 4,
                dropoff_service: 4,
                target_click_to_door: 40,
                max_click_to_door: 90,
                pay_per_order: 10.0,
                pay_per_hour: 15.0,
            },
        }
    }

    fn courier(id: &str, x: f64, on_at: i64, off_at: i64) -> Courier {
        Courier {
            id: id.into(),
            start: Point { x, y: 0.0 },
            on_at,
            off_at,
        }
    }

    fn order(id: &str, placed_at: i64, ready_at: i64) -> Order {
        Order {
            id: id.into(),
            dropoff: Point { x: 0.0, y: 1000.0 },
            placed_at,
            restaurant: 0,
            ready_at,
        }
    }

    #[test]
    fn the_nearest_free_courier_drives_there_at_once_and_waits_for_the_food() {
        let instance = instance(
            vec![
                courier("far", 2000.0, 0, 120),
                courier("near", 250.0, 0, 120),
            ],
            vec![order("o1", 10, 30)],
        );
        let solution = simulate(&instance, &Policy::Nearest);
        assert_eq!(
            solution.assignments,
            [Assignment {
                at: 10,
                pickup_at: 30,
                courier: 1,
                orders: vec![0],
            }]
        );
        // 3 minutes there (250 m at 100 m/min, rounded up), waits for 30; 10 to the door,
        // arriving at 32 + 10 and dropping off 2 minutes later.
        assert_eq!(solution.deliveries[0].dropoff_at, 30 + 2 + 10 + 2);
        assert_eq!(solution.moves.len(), 2);
        assert_eq!(solution.moves[1].departs_at, 32);
    }

    #[test]
    fn a_busy_fleet_makes_orders_wait_and_gives_up_past_the_maximum() {
        let instance = instance(
            vec![courier("only", 0.0, 0, 300)],
            vec![order("o1", 0, 0), order("o2", 1, 1), order("o3", 2, 2)],
        );
        let solution = simulate(&instance, &Policy::Nearest);
        // The first is dropped off at 16 and the courier is free at 18, at the door, 10
        // minutes from the restaurant: the second starts then, and the third at 46.
        let starts: Vec<i64> = solution.assignments.iter().map(|a| a.at).collect();
        assert_eq!(starts, [0, 18, 46]);
        let tight = Instance {
            parameters: Parameters {
                max_click_to_door: 20,
                ..instance.parameters.clone()
            },
            ..instance
        };
        assert_eq!(
            simulate(&tight, &Policy::Nearest).assignments.len(),
            2,
            "o3 is given up"
        );
    }

    #[test]
    fn the_planner_bundles_orders_when_couriers_are_scarce() {
        let scarce = Instance {
            parameters: Parameters {
                max_click_to_door: 40,
                ..instance(vec![], vec![]).parameters
            },
            ..instance(
                vec![courier("only", 0.0, 0, 300)],
                vec![order("o1", 0, 10), order("o2", 1, 10), order("o3", 2, 11)],
            )
        };
        let planned = simulate(&scarce, &Policy::PLANNER);
        // One courier takes all three at once, ready or nearly, and drops them off in turn at
        // the same door, each within the 40 minutes.
        assert_eq!(planned.assignments.len(), 1, "{planned:?}");
        assert_eq!(planned.assignments[0].pickup_at, 11);
        let mut orders = planned.assignments[0].orders.clone();
        orders.sort_unstable();
        assert_eq!(orders, [0, 1, 2]);
        let dropoffs: Vec<i64> = planned.deliveries.iter().map(|d| d.dropoff_at).collect();
        assert_eq!(dropoffs, [25, 29, 33]);
        // Each move leaves from where the last one arrived.
        for pair in planned.moves.windows(2) {
            assert_eq!(pair[0].to, pair[1].from);
            assert!(pair[0].departs_at <= pair[1].departs_at);
        }
        let nearest = simulate(&scarce, &Policy::Nearest);
        let on_time = |s: &Solution| {
            s.deliveries
                .iter()
                .filter(|d| d.dropoff_at - scarce.orders[d.order].placed_at <= 40)
                .count()
        };
        assert_eq!(on_time(&planned), 3);
        assert!(on_time(&nearest) < 3, "{nearest:?}");
    }

    #[test]
    fn the_planner_delivers_late_rather_than_not_at_all() {
        // Ready 100 minutes after it is placed: past the maximum of 90 whoever takes it.
        let slow_kitchen = instance(
            vec![courier("only", 0.0, 0, 300)],
            vec![order("o1", 0, 100), order("o2", 5, 10)],
        );
        let planned = simulate(&slow_kitchen, &Policy::PLANNER);
        let summary = planned.summary(&slow_kitchen);
        assert_eq!((summary.delivered, summary.delivered_late), (2, 1));
        // The order on time goes first.
        assert_eq!(planned.assignments[0].orders, [1]);
        let Policy::Planner(settings) = Policy::PLANNER else {
            unreachable!()
        };
        let strict = Policy::Planner(PlannerSettings {
            late_by: 0,
            ..settings
        });
        let summary = simulate(&slow_kitchen, &strict).summary(&slow_kitchen);
        assert_eq!((summary.delivered, summary.delivered_late), (1, 0));
    }

    #[test]
    fn no_courier_picks_up_after_its_off_time_or_before_it_is_on() {
        let instance = instance(
            vec![
                courier("leaving", 0.0, 0, 5),
                courier("later", 500.0, 20, 200),
            ],
            vec![order("o1", 0, 10)],
        );
        let solution = simulate(&instance, &Policy::Nearest);
        assert_eq!(solution.assignments[0].courier, 1);
        assert_eq!(solution.assignments[0].at, 20);
    }
}
