//! The planner on a busy city's snapshot: open jobs and couriers on duty scattered over a
//! 12 km square, a few hundred pickups, planned with travel at 320 metres a minute (straight
//! lines). Prints, for each size, the time one plan takes on one core (median and worst of a
//! few rounds) and what it commits.
//!
//!   cargo bench -p courier-domain --bench planner        (PLANNER_BENCH_SIZES=100,1000)

use std::time::{Duration, Instant};

use courier_domain::dispatch::planner::{
    PlanCourier, PlanJob, PlannerSettings, ServiceTimes, plan,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const SIDE_METRES: f64 = 12_000.0;
const METRES_PER_MINUTE: f64 = 320.0;
const ROUNDS: usize = 5;

type Point = (i64, i64);

fn travel(a: &Point, b: &Point) -> i64 {
    let metres = (((a.0 - b.0).pow(2) + (a.1 - b.1).pow(2)) as f64).sqrt();
    (metres / METRES_PER_MINUTE).ceil() as i64
}

fn point(rng: &mut StdRng) -> Point {
    (
        rng.random_range(0.0..SIDE_METRES) as i64,
        rng.random_range(0.0..SIDE_METRES) as i64,
    )
}

fn main() {
    let sizes: Vec<usize> = std::env::var("PLANNER_BENCH_SIZES")
        .unwrap_or_else(|_| "100,300,1000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let service = ServiceTimes {
        pickup_before: 2,
        pickup_after: 2,
        dropoff_before: 2,
        dropoff_after: 2,
    };
    let settings = PlannerSettings {
        max_bundle: 4,
        bundle_window: 10,
        max_detour: 10,
        commit_within: 1,
        food_wait_weight: 2,
        scarcity_horizon: 10,
        late_by: 0,
    };
    println!("| open jobs | couriers | pickups | plan p50 | plan max | routes committed |");
    println!("|---|---|---|---|---|---|");
    for size in sizes {
        let mut rng = StdRng::seed_from_u64(7);
        let pickups: Vec<Point> = (0..(size / 3).max(1)).map(|_| point(&mut rng)).collect();
        let now = 600;
        let jobs: Vec<PlanJob<Point>> = (0..size)
            .map(|_| {
                let placed_at = now - rng.random_range(0..20);
                PlanJob {
                    pickup: pickups[rng.random_range(0..pickups.len())],
                    dropoff: point(&mut rng),
                    placed_at,
                    ready_at: placed_at + rng.random_range(5..25),
                    deadline: placed_at + 90,
                }
            })
            .collect();
        let couriers: Vec<PlanCourier<Point>> = (0..size)
            .map(|_| PlanCourier {
                at: point(&mut rng),
                free_at: now + rng.random_range(-10..20),
                off_at: now + 240,
                job_cost: 0,
                refused: Vec::new(),
            })
            .collect();
        let mut times = Vec::new();
        let mut committed = 0;
        for _ in 0..ROUNDS {
            let started = Instant::now();
            let routes = plan(now, &jobs, &couriers, travel, &service, &settings);
            times.push(started.elapsed());
            committed = routes.len();
        }
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "| {size} | {size} | {} | {:.1} ms | {:.1} ms | {committed} |",
            pickups.len(),
            ms(times[ROUNDS / 2]),
            ms(times[ROUNDS - 1]),
        );
    }
}
