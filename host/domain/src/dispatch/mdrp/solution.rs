//! A solution: the assignments, each delivered order and each courier's moves, written as the
//! published evaluator reads them (`MDRPInstances.pdf` §2.1), and summed up.

use std::fmt::Write;

use serde::Serialize;

use super::instance::{Instance, Place};

/// An instruction to a courier: pick up `orders` at their restaurant, deliver them in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// When the instruction was given.
    pub at: i64,
    pub pickup_at: i64,
    pub courier: usize,
    pub orders: Vec<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub order: usize,
    pub pickup_at: i64,
    pub dropoff_at: i64,
    pub courier: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    pub courier: usize,
    pub departs_at: i64,
    pub from: Place,
    pub to: Place,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Solution {
    pub assignments: Vec<Assignment>,
    pub deliveries: Vec<Delivery>,
    /// Each courier's moves together, in the order they are made.
    pub moves: Vec<Move>,
}

/// What a solution comes to, in minutes and the instance's money.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub orders: usize,
    pub delivered: usize,
    /// Of those delivered, the ones dropped off past the instance's maximum click-to-door.
    pub delivered_late: usize,
    pub click_to_door_mean: f64,
    pub click_to_door_p90: f64,
    pub ready_to_pickup_mean: f64,
    /// Every courier's pay (the greater of per-order pay and the hourly guarantee), per order
    /// delivered.
    pub cost_per_order: f64,
}

impl Solution {
    /// `solution_info_assignments.txt`.
    pub fn assignments_file(&self, instance: &Instance) -> String {
        let mut text = String::from("assignment_time pickup_time courier orders\n");
        for a in &self.assignments {
            let _ = write!(
                text,
                "{} {} {}",
                a.at, a.pickup_at, instance.couriers[a.courier].id
            );
            for &o in &a.orders {
                let _ = write!(text, " {}", instance.orders[o].id);
            }
            text.push('\n');
        }
        text
    }

    /// `solution_info_orders.txt`: one line per delivered order.
    pub fn orders_file(&self, instance: &Instance) -> String {
        let mut text = String::from(
            "order placement_time restaurant x y ready_time pickup_time dropoff_time courier\n",
        );
        for d in &self.deliveries {
            let order = &instance.orders[d.order];
            let _ = writeln!(
                text,
                "{} {} {} {} {} {} {} {} {}",
                order.id,
                order.placed_at,
                instance.restaurants[order.restaurant].id,
                order.dropoff.x,
                order.dropoff.y,
                order.ready_at,
                d.pickup_at,
                d.dropoff_at,
                instance.couriers[d.courier].id
            );
        }
        text
    }

    /// `solution_info_couriers.txt`.
    pub fn couriers_file(&self, instance: &Instance) -> String {
        let mut text = String::from("courier departure_time origin destination\n");
        for m in &self.moves {
            let _ = writeln!(
                text,
                "{} {} {} {}",
                instance.couriers[m.courier].id,
                m.departs_at,
                instance.name(&m.from),
                instance.name(&m.to)
            );
        }
        text
    }

    pub fn summary(&self, instance: &Instance) -> Summary {
        let mut click_to_door: Vec<f64> = self
            .deliveries
            .iter()
            .map(|d| (d.dropoff_at - instance.orders[d.order].placed_at) as f64)
            .collect();
        click_to_door.sort_by(f64::total_cmp);
        let ready_to_pickup: Vec<f64> = self
            .deliveries
            .iter()
            .map(|d| (d.pickup_at - instance.orders[d.order].ready_at) as f64)
            .collect();
        let p = &instance.parameters;
        let mut delivered_by = vec![0_u32; instance.couriers.len()];
        for d in &self.deliveries {
            delivered_by[d.courier] += 1;
        }
        let pay: f64 = instance
            .couriers
            .iter()
            .zip(&delivered_by)
            .map(|(c, &n)| {
                let hours = (c.off_at - c.on_at) as f64 / 60.0;
                (f64::from(n) * p.pay_per_order).max(hours * p.pay_per_hour)
            })
            .sum();
        let delivered = self.deliveries.len();
        let limit = p.max_click_to_door as f64;
        Summary {
            orders: instance.orders.len(),
            delivered,
            delivered_late: click_to_door.iter().filter(|&&m| m > limit).count(),
            click_to_door_mean: mean(&click_to_door),
            click_to_door_p90: percentile(&click_to_door, 0.9),
            ready_to_pickup_mean: mean(&ready_to_pickup),
            cost_per_order: if delivered == 0 {
                0.0
            } else {
                pay / delivered as f64
            },
        }
    }
}

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

/// The `q` quantile of sorted `values`, interpolated linearly between the nearest ranks (as
/// the evaluator's pandas computes it).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n => {
            let rank = q * (n - 1) as f64;
            let (low, high) = (rank.floor() as usize, rank.ceil() as usize);
            sorted[low] + (sorted[high] - sorted[low]) * (rank - low as f64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_between_ranks_as_pandas_does() {
        let values = [10.0, 20.0, 30.0, 40.0, 50.0];
        assert_eq!(percentile(&values, 0.9), 46.0);
        assert_eq!(percentile(&values, 0.5), 30.0);
        assert_eq!(percentile(&[], 0.9), 0.0);
        assert_eq!(mean(&values), 30.0);
    }
}
