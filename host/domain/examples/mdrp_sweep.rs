//! Replays every MDRP development instance in one process with the planner's settings taken
//! from the environment, and prints the means over instances as `courier dispatch simulate`
//! counts them (not the published evaluator: for trying settings quickly, not for figures to
//! publish; BENCHMARKS.md). One line per instance that leaves orders undelivered with
//! `VERBOSE=1`; `ONLY=NAME_PART` replays the instances whose name holds it.
//!
//! ```sh
//! cargo run --release -p courier-domain --example mdrp_sweep
//! DETOUR=10 SCARCITY_HORIZON=0 cargo run --release -p courier-domain --example mdrp_sweep
//! ```
//!
//! Its last lines: how many undelivered orders no courier could have dropped off within the
//! maximum click-to-door at all (on duty at the ready time, at the restaurant then), and the
//! means.

use std::path::PathBuf;
use std::sync::Mutex;

use courier_domain::dispatch::mdrp::{Instance, Place, Policy, Summary, simulate};

fn setting(name: &str, default: i64) -> i64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Undelivered orders of `instance` that no courier could have dropped off in time.
fn beyond_reach(instance: &Instance, delivered: &[bool]) -> usize {
    let p = &instance.parameters;
    let (before, after) = ((p.pickup_service + 1) / 2, p.pickup_service / 2);
    let dropoff_before = (p.dropoff_service + 1) / 2;
    (0..instance.orders.len())
        .filter(|&o| !delivered[o])
        .filter(|&o| {
            let order = &instance.orders[o];
            let to_door =
                instance.minutes_between(&Place::Restaurant(order.restaurant), &Place::Dropoff(o));
            !instance.couriers.iter().any(|c| {
                let pickup = order.ready_at.max(c.on_at + before);
                pickup <= c.off_at
                    && pickup + after + to_door + dropoff_before
                        <= order.placed_at + p.max_click_to_door
            })
        })
        .count()
}

fn main() {
    let root = std::env::var("MDRP").unwrap_or_else(|_| "../shared/data/mdrp/instances".into());
    let only = std::env::var("ONLY").unwrap_or_default();
    let Policy::Planner(defaults) = Policy::PLANNER else {
        unreachable!("the benchmark's planner")
    };
    let settings = courier_domain::dispatch::planner::PlannerSettings {
        max_bundle: setting("MAX_BUNDLE", defaults.max_bundle as i64) as usize,
        bundle_window: setting("WINDOW", defaults.bundle_window),
        max_detour: setting("DETOUR", defaults.max_detour),
        commit_within: setting("COMMIT", defaults.commit_within),
        food_wait_weight: setting("FOOD_WAIT", defaults.food_wait_weight),
        scarcity_horizon: setting("SCARCITY_HORIZON", defaults.scarcity_horizon),
        late_by: setting("LATE_BY", defaults.late_by),
    };
    let policy = if std::env::var("NEAREST").is_ok() {
        Policy::Nearest
    } else {
        Policy::Planner(settings)
    };
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{root}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(&only))
        })
        .collect();
    dirs.sort();
    let queue = Mutex::new(dirs);
    let results: Mutex<Vec<(String, Summary, usize)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..setting("THREADS", 2) {
            scope.spawn(|| {
                while let Some(dir) = queue.lock().expect("queue").pop() {
                    let instance = Instance::parse(|file| {
                        std::fs::read_to_string(dir.join(file)).map_err(|e| e.to_string())
                    })
                    .unwrap_or_else(|e| panic!("{}: {e:?}", dir.display()));
                    let solution = simulate(&instance, &policy);
                    let mut delivered = vec![false; instance.orders.len()];
                    for d in &solution.deliveries {
                        delivered[d.order] = true;
                    }
                    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
                    results.lock().expect("results").push((
                        name.unwrap_or_default(),
                        solution.summary(&instance),
                        beyond_reach(&instance, &delivered),
                    ));
                }
            });
        }
    });
    let mut rows = results.into_inner().expect("results");
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let undelivered = |s: &Summary| (s.orders - s.delivered) as f64 / s.orders as f64 * 100.0;
    if std::env::var("VERBOSE").is_ok() {
        for (name, s, _) in rows.iter().filter(|(_, s, _)| s.delivered < s.orders) {
            println!(
                "{name} {:.2}% undelivered ({} orders), {} late, click-to-door {:.2} (P90 {:.1}), ready-to-pickup {:.2}, ${:.2} an order",
                undelivered(s),
                s.orders - s.delivered,
                s.delivered_late,
                s.click_to_door_mean,
                s.click_to_door_p90,
                s.ready_to_pickup_mean,
                s.cost_per_order
            );
        }
    }
    let n = rows.len().max(1) as f64;
    let mean = |f: &dyn Fn(&Summary) -> f64| rows.iter().map(|(_, s, _)| f(s)).sum::<f64>() / n;
    println!(
        "undelivered beyond any courier's reach: {}",
        rows.iter().map(|(_, _, b)| b).sum::<usize>()
    );
    println!(
        "{} instances: undelivered {:.3}% ({} orders), late {:.3}%, click-to-door {:.2} (P90 {:.2}), ready-to-pickup {:.2}, ${:.2} an order",
        rows.len(),
        mean(&undelivered),
        rows.iter()
            .map(|(_, s, _)| s.orders - s.delivered)
            .sum::<usize>(),
        mean(&|s| s.delivered_late as f64 / s.orders as f64 * 100.0),
        mean(&|s| s.click_to_door_mean),
        mean(&|s| s.click_to_door_p90),
        mean(&|s| s.ready_to_pickup_mean),
        mean(&|s| s.cost_per_order),
    );
}
