//! The replay: orders revealed at their placement time, couriers on and off duty as the
//! instance says, on a virtual clock of whole minutes. The policy is the live dispatcher's
//! today: each order, as soon as it is placed (or, when no courier is free, as soon as one
//! is), goes to the free courier on duty with the shortest trip to its restaurant, one order
//! per courier, who drives there at once and waits until it is ready. An order that can no
//! longer be delivered within the instance's maximum click-to-door is given up.

use super::instance::{Instance, Place};
use super::solution::{Assignment, Delivery, Move, Solution};

/// Where a courier is and when it is free again.
struct CourierState {
    at: Place,
    free_at: i64,
}

/// Replays `instance` under today's policy.
pub fn simulate(instance: &Instance) -> Solution {
    let p = &instance.parameters;
    // Half of each service before the pickup or drop-off, half after (rounded so that the two
    // halves make the whole).
    let (pickup_before, dropoff_before) = ((p.pickup_service + 1) / 2, (p.dropoff_service + 1) / 2);
    let (pickup_after, dropoff_after) = (
        p.pickup_service - pickup_before,
        p.dropoff_service - dropoff_before,
    );
    let mut couriers: Vec<CourierState> = instance
        .couriers
        .iter()
        .enumerate()
        .map(|(c, courier)| CourierState {
            at: Place::Start(c),
            free_at: courier.on_at,
        })
        .collect();
    let mut solution = Solution::default();
    let mut moves: Vec<Vec<Move>> = vec![Vec::new(); couriers.len()];
    let mut waiting: Vec<usize> = Vec::new();
    let mut next_order = 0;
    let mut now = i64::MIN;
    loop {
        // The next moment anything can change: an order placed, a courier free or on duty.
        let next_placement = instance.orders.get(next_order).map(|o| o.placed_at);
        let next_free = couriers
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
            let nearest = couriers
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
            let dropoff = Place::Dropoff(o);
            let pickup_at = order.ready_at.max(now + trip + pickup_before);
            let leaves_restaurant = pickup_at + pickup_after;
            let arrives = leaves_restaurant + instance.minutes_between(&restaurant, &dropoff);
            let dropoff_at = arrives + dropoff_before;
            let state = &mut couriers[c];
            moves[c].push(Move {
                courier: c,
                departs_at: now,
                from: state.at.clone(),
                to: restaurant.clone(),
            });
            moves[c].push(Move {
                courier: c,
                departs_at: leaves_restaurant,
                from: restaurant,
                to: dropoff.clone(),
            });
            state.at = dropoff;
            state.free_at = dropoff_at + dropoff_after;
            solution.assignments.push(Assignment {
                at: now,
                pickup_at,
                courier: c,
                orders: vec![o],
            });
            solution.deliveries.push(Delivery {
                order: o,
                pickup_at,
                dropoff_at,
                courier: c,
            });
        }
        waiting = still_waiting;
    }
    solution.moves = moves.into_iter().flatten().collect();
    solution
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
        let solution = simulate(&instance);
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
        let solution = simulate(&instance);
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
        assert_eq!(simulate(&tight).assignments.len(), 2, "o3 is given up");
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
        let solution = simulate(&instance);
        assert_eq!(solution.assignments[0].courier, 1);
        assert_eq!(solution.assignments[0].at, 20);
    }
}
