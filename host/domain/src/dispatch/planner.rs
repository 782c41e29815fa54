//! The planner: which courier takes which open jobs, in which order of stops, and when each
//! courier is to be told, planned over every open job and courier at once. Pure: a snapshot
//! in, a plan out, on one clock whose unit is the travel function's (minutes in the
//! benchmark's replay, seconds live).
//!
//! What it optimises, in this order: jobs delivered within their deadline; then jobs
//! delivered late, within [`PlannerSettings::late_by`] past it, rather than not at all; then
//! click-to-door
//! (booking to drop-off; of it, what is still to come, since what a job has waited is the same
//! whoever takes it) and the food's wait at the pickup once ready (weighed by
//! [`PlannerSettings::food_wait_weight`], from now on for the same reason), with what a job
//! costs with each courier ([`PlanCourier::job_cost`]) and the couriers' time on the road
//! counted as so much of it. Each round:
//!
//! 1. **Bundles.** Jobs at the same pickup whose parcels are ready within
//!    [`PlannerSettings::bundle_window`] of each other ride together, up to a size that grows
//!    as couriers grow scarce (open jobs per courier free within
//!    [`PlannerSettings::scarcity_horizon`]), never past
//!    [`PlannerSettings::max_bundle`], and only while no job's drop-off is delayed by more
//!    than [`PlannerSettings::max_detour`] against riding alone. Drop-offs go in the order
//!    that adds least.
//! 2. **Assignment.** Couriers and bundles are matched at once (the assignment problem,
//!    solved by Kuhn–Munkres), every pair scored by what it delivers and how soon. A courier
//!    leaves just in time to meet the parcel as it becomes ready: none is sent to wait at a
//!    pickup when starting later serves as well, and a courier still busy can win a bundle it
//!    serves best, so no other courier is sent for it.
//! 3. **Commitment.** Only a pair whose courier is free and must leave within
//!    [`PlannerSettings::commit_within`] is committed; the rest are planned again next round,
//!    when later bookings may improve them (the rolling horizon).
//!
//! Before a round, a courier already at a pickup with parcels of it not yet collected may be
//! given one more job of that pickup ([`join_at_pickup`]): no trip is cheaper than none.

use std::collections::HashMap;
use std::hash::Hash;

use pathfinding::prelude::{Matrix, kuhn_munkres};

/// An open job: booked, not yet given to a courier.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanJob<P> {
    pub pickup: P,
    pub dropoff: P,
    pub placed_at: i64,
    /// When the parcel can be collected.
    pub ready_at: i64,
    /// The latest drop-off that still counts as delivered.
    pub deadline: i64,
}

/// A courier on duty: where it will be free, and when.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanCourier<P> {
    pub at: P,
    pub free_at: i64,
    /// No pickup after this.
    pub off_at: i64,
    /// What one more job costs with this courier, in the clock's units of click-to-door: none
    /// while its pay is a guarantee that more jobs do not raise.
    pub job_cost: i64,
    /// Jobs (indexes into the snapshot's) never to be given to this courier: offered to it
    /// before and turned down or let run out.
    pub refused: Vec<usize>,
}

/// Time spent at a stop, before the pickup or drop-off counts as made and after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceTimes {
    pub pickup_before: i64,
    pub pickup_after: i64,
    pub dropoff_before: i64,
    pub dropoff_after: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannerSettings {
    /// Jobs in one bundle at most (1: no bundles).
    pub max_bundle: usize,
    /// Jobs ride together only when their parcels are ready within this of each other.
    pub bundle_window: i64,
    /// The most riding in a bundle may delay a job's drop-off, against riding alone.
    pub max_detour: i64,
    /// A pair is committed when its courier must leave within this; the planner runs again
    /// at least this often.
    pub commit_within: i64,
    /// What a unit of time a parcel waits at its pickup from now on (the food going cold)
    /// weighs, as so many units of click-to-door besides the click-to-door it adds.
    pub food_wait_weight: i64,
    /// Couriers free within this of now are the ones counted in how scarce couriers are
    /// (open jobs per courier), which sizes bundles: one busy far longer frees no one soon.
    pub scarcity_horizon: i64,
    /// How far past its deadline a job may still be dropped off, as a late delivery that
    /// counts for less than any on-time one and more than any difference in minutes (0: a job
    /// that cannot be on time is not planned).
    pub late_by: i64,
}

/// A committed route: one pickup, then each job's drop-off in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub courier: usize,
    /// Indexes into the snapshot's jobs, in drop-off order.
    pub jobs: Vec<usize>,
    /// When the courier leaves for the pickup (the moment to tell it at the latest).
    pub departs_at: i64,
    /// When the parcels are collected.
    pub pickup_at: i64,
    /// When each job is dropped off, in the order of `jobs`.
    pub dropoffs_at: Vec<i64>,
}

/// The couriers each bundle is matched among at most: its best by score. Bounds the
/// assignment problem to the couriers that matter, however large the fleet.
const CANDIDATES: usize = 20;

/// A courier who can serve a bundle in time, and how.
struct Pair {
    courier: usize,
    bundle: usize,
    weight: i64,
    departs_at: i64,
    timing: Timing,
}

/// When each stop of a bundle happens for a courier who arrives at the pickup at `arrives`.
struct Timing {
    pickup_at: i64,
    dropoffs_at: Vec<i64>,
}

fn timing<P>(
    jobs: &[PlanJob<P>],
    bundle: &[usize],
    arrives: i64,
    service: &ServiceTimes,
    travel: &impl Fn(&P, &P) -> i64,
) -> Timing {
    let ready = bundle.iter().map(|&j| jobs[j].ready_at).max().unwrap_or(0);
    let pickup_at = ready.max(arrives + service.pickup_before);
    let mut leaves = pickup_at + service.pickup_after;
    let mut at = &jobs[bundle[0]].pickup;
    let mut dropoffs_at = Vec::with_capacity(bundle.len());
    for &j in bundle {
        let dropoff_at = leaves + travel(at, &jobs[j].dropoff) + service.dropoff_before;
        dropoffs_at.push(dropoff_at);
        leaves = dropoff_at + service.dropoff_after;
        at = &jobs[j].dropoff;
    }
    Timing {
        pickup_at,
        dropoffs_at,
    }
}

fn on_time<P>(jobs: &[PlanJob<P>], bundle: &[usize], timing: &Timing) -> bool {
    late_within(jobs, bundle, timing, 0) == Some(0)
}

/// How many of `bundle`'s jobs are dropped off after their deadline, or `None` when one is
/// later than `late_by` past it.
fn late_within<P>(
    jobs: &[PlanJob<P>],
    bundle: &[usize],
    timing: &Timing,
    late_by: i64,
) -> Option<usize> {
    let mut late = 0;
    for (&j, &at) in bundle.iter().zip(&timing.dropoffs_at) {
        if at > jobs[j].deadline + late_by.max(0) {
            return None;
        }
        late += usize::from(at > jobs[j].deadline);
    }
    Some(late)
}

/// Plans `jobs` for `couriers` at `now`: the routes to commit now.
pub fn plan<P: Eq + Hash>(
    now: i64,
    jobs: &[PlanJob<P>],
    couriers: &[PlanCourier<P>],
    travel: impl Fn(&P, &P) -> i64,
    service: &ServiceTimes,
    settings: &PlannerSettings,
) -> Vec<Route> {
    let available: Vec<usize> = (0..couriers.len())
        .filter(|&c| couriers[c].off_at >= now)
        .collect();
    if jobs.is_empty() || available.is_empty() {
        return Vec::new();
    }
    // Couriers who turned down every job, or are busy past the horizon, count for nothing in
    // how scarce couriers are.
    let willing = available
        .iter()
        .filter(|&&c| couriers[c].refused.len() < jobs.len())
        .filter(|&&c| couriers[c].free_at <= now + settings.scarcity_horizon)
        .count()
        .max(1);
    let target = jobs
        .len()
        .div_ceil(willing)
        .clamp(1, settings.max_bundle.max(1));
    let bundles = bundles(now, jobs, target, &travel, service, settings);
    // One job more delivered outweighs any difference in minutes among the pairs; one
    // delivered late, half as much.
    let span = jobs
        .iter()
        .map(|j| (j.deadline - j.placed_at).max(0))
        .max()
        .unwrap_or(0)
        + settings.late_by.max(0);
    let delivered_weight = 4 * (span + 1) * (1 + settings.food_wait_weight.max(0));
    // Every courier that can serve a bundle in time, scored; each bundle keeps its best few.
    let mut candidates: Vec<Pair> = Vec::new();
    for (column, bundle) in bundles.iter().enumerate() {
        let mut serving: Vec<Pair> = available
            .iter()
            .filter_map(|&c| {
                let courier = &couriers[c];
                if bundle.iter().any(|j| courier.refused.contains(j)) {
                    return None;
                }
                let starts = courier.free_at.max(now);
                let trip = travel(&courier.at, &jobs[bundle[0]].pickup);
                let timing = timing(jobs, bundle, starts + trip, service, &travel);
                if timing.pickup_at > courier.off_at {
                    return None;
                }
                let late = late_within(jobs, bundle, &timing, settings.late_by)?;
                // Click-to-door still to come: what a job has waited already is the same
                // whoever takes it, and counting it would pass over the jobs waiting longest.
                let to_door: i64 = timing.dropoffs_at.iter().map(|at| at - now).sum();
                // The same for the food: what it has waited already is no one's to save.
                let food_waits: i64 = bundle
                    .iter()
                    .map(|&j| (timing.pickup_at - jobs[j].ready_at.max(now)).max(0))
                    .sum();
                let count = i64::try_from(bundle.len()).unwrap_or(i64::MAX);
                let late = i64::try_from(late).unwrap_or(i64::MAX);
                Some(Pair {
                    courier: c,
                    bundle: column,
                    weight: count * (delivered_weight - courier.job_cost)
                        - late * (delivered_weight / 2)
                        - to_door
                        - settings.food_wait_weight * food_waits
                        - trip,
                    // Leaves as late as still meets the parcel when it is ready.
                    departs_at: (timing.pickup_at - service.pickup_before - trip).max(starts),
                    timing,
                })
            })
            .collect();
        if serving.len() > CANDIDATES {
            serving.select_nth_unstable_by_key(CANDIDATES - 1, |p| std::cmp::Reverse(p.weight));
            serving.truncate(CANDIDATES);
        }
        candidates.extend(serving);
    }
    // The couriers some bundle wants, as the rows; a column for each bundle, then one per row
    // for leaving that courier without one.
    let mut rows: Vec<usize> = candidates.iter().map(|p| p.courier).collect();
    rows.sort_unstable();
    rows.dedup();
    if rows.is_empty() {
        return Vec::new();
    }
    let row_of: HashMap<usize, usize> = rows.iter().enumerate().map(|(r, &c)| (c, r)).collect();
    // Far below any pair, yet summed over every row without overflow.
    let unplanned = -(1_i64 << 40);
    let mut weights = Matrix::new(rows.len(), bundles.len() + rows.len(), 0_i64);
    for row in 0..rows.len() {
        for column in 0..bundles.len() {
            weights[(row, column)] = unplanned;
        }
    }
    let mut pairs: HashMap<(usize, usize), Pair> = HashMap::new();
    for pair in candidates {
        let row = row_of[&pair.courier];
        weights[(row, pair.bundle)] = pair.weight;
        pairs.insert((row, pair.bundle), pair);
    }
    let (_, matched) = kuhn_munkres(&weights);
    let mut routes = Vec::new();
    for (row, column) in matched.into_iter().enumerate() {
        let Some(pair) = pairs.remove(&(row, column)) else {
            continue;
        };
        let free_now = couriers[pair.courier].free_at <= now;
        if free_now && pair.departs_at <= now + settings.commit_within {
            routes.push(Route {
                courier: pair.courier,
                jobs: bundles[column].clone(),
                departs_at: pair.departs_at,
                pickup_at: pair.timing.pickup_at,
                dropoffs_at: pair.timing.dropoffs_at,
            });
        }
    }
    routes.sort_by_key(|r| (r.departs_at, r.courier));
    routes
}

/// A courier at a pickup with parcels of it not yet collected (`holding`, in drop-off order):
/// which of the `open` jobs (indexes) should join them now, if any. One of the same pickup,
/// ready within the bundle window of the parcels held, not `refused` by the courier, whose
/// drop-off fits where it delays no job by more than the allowed detour and every job is
/// still on time; of those, the one that adds least to the drop-offs.
pub fn join_at_pickup<P: Eq + Hash + Clone>(
    now: i64,
    holding: &[PlanJob<P>],
    open: &[PlanJob<P>],
    refused: &[usize],
    travel: impl Fn(&P, &P) -> i64,
    service: &ServiceTimes,
    settings: &PlannerSettings,
) -> Option<usize> {
    let first = holding.first()?;
    if holding.len() >= settings.max_bundle {
        return None;
    }
    let held: Vec<usize> = (0..holding.len()).collect();
    let earliest = holding.iter().map(|j| j.ready_at).min()?;
    let latest = holding.iter().map(|j| j.ready_at).max()?;
    let before: i64 = timing(holding, &held, now, service, &travel)
        .dropoffs_at
        .iter()
        .sum();
    let mut best: Option<(i64, usize)> = None;
    for (j, job) in open.iter().enumerate() {
        let in_window =
            job.ready_at.max(latest) - job.ready_at.min(earliest) <= settings.bundle_window;
        if refused.contains(&j) || job.pickup != first.pickup || !in_window {
            continue;
        }
        let mut jobs = holding.to_vec();
        jobs.push(job.clone());
        let Some(joined) =
            with_dropoff(now, &jobs, &held, holding.len(), &travel, service, settings)
        else {
            continue;
        };
        let after: i64 = timing(&jobs, &joined, now, service, &travel)
            .dropoffs_at
            .iter()
            .sum();
        let added = after - before;
        if best.is_none_or(|(least, _)| added < least) {
            best = Some((added, j));
        }
    }
    best.map(|(_, j)| j)
}

/// The round's bundles: every job in exactly one, jobs of one bundle sharing a pickup.
fn bundles<P: Eq + Hash>(
    now: i64,
    jobs: &[PlanJob<P>],
    target: usize,
    travel: &impl Fn(&P, &P) -> i64,
    service: &ServiceTimes,
    settings: &PlannerSettings,
) -> Vec<Vec<usize>> {
    let mut by_pickup: HashMap<&P, Vec<usize>> = HashMap::new();
    for (j, job) in jobs.iter().enumerate() {
        by_pickup.entry(&job.pickup).or_default().push(j);
    }
    let mut groups: Vec<Vec<usize>> = by_pickup.into_values().collect();
    // The same bundles whatever order the map keeps.
    groups.sort_by_key(|g| g.iter().min().copied());
    let mut bundles = Vec::new();
    for mut group in groups {
        group.sort_by_key(|&j| (jobs[j].ready_at, j));
        let mut current: Vec<usize> = Vec::new();
        for j in group {
            let joined = (!current.is_empty()
                && current.len() < target
                && jobs[j].ready_at - jobs[current[0]].ready_at <= settings.bundle_window)
                .then(|| with_dropoff(now, jobs, &current, j, travel, service, settings))
                .flatten();
            match joined {
                Some(bundle) => current = bundle,
                None => {
                    if !current.is_empty() {
                        bundles.push(std::mem::take(&mut current));
                    }
                    current.push(j);
                }
            }
        }
        if !current.is_empty() {
            bundles.push(current);
        }
    }
    bundles
}

/// `bundle` with `job`'s drop-off where it adds least, if it still delivers every job on
/// time from the pickup and delays none by more than the allowed detour.
fn with_dropoff<P>(
    now: i64,
    jobs: &[PlanJob<P>],
    bundle: &[usize],
    job: usize,
    travel: &impl Fn(&P, &P) -> i64,
    service: &ServiceTimes,
    settings: &PlannerSettings,
) -> Option<Vec<usize>> {
    // Judged for a courier already at the pickup: what the bundle itself costs.
    let alone = |j: usize| timing(jobs, &[j], now, service, travel).dropoffs_at[0];
    let mut best: Option<(i64, Vec<usize>)> = None;
    for position in 0..=bundle.len() {
        let mut candidate = bundle.to_vec();
        candidate.insert(position, job);
        let after = timing(jobs, &candidate, now, service, travel);
        if !on_time(jobs, &candidate, &after) {
            continue;
        }
        let detoured = candidate
            .iter()
            .zip(&after.dropoffs_at)
            .any(|(&j, &at)| at - alone(j) > settings.max_detour);
        if detoured {
            continue;
        }
        let total: i64 = after.dropoffs_at.iter().sum();
        if best.as_ref().is_none_or(|(t, _)| total < *t) {
            best = Some((total, candidate));
        }
    }
    best.map(|(_, bundle)| bundle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Places on a line, one unit of travel per unit of distance.
    fn travel(a: &i64, b: &i64) -> i64 {
        (a - b).abs()
    }

    const SERVICE: ServiceTimes = ServiceTimes {
        pickup_before: 2,
        pickup_after: 2,
        dropoff_before: 2,
        dropoff_after: 2,
    };

    const SETTINGS: PlannerSettings = PlannerSettings {
        max_bundle: 3,
        bundle_window: 10,
        max_detour: 15,
        commit_within: 1,
        food_wait_weight: 0,
        scarcity_horizon: 1000,
        late_by: 0,
    };

    fn job(pickup: i64, dropoff: i64, placed_at: i64, ready_at: i64) -> PlanJob<i64> {
        PlanJob {
            pickup,
            dropoff,
            placed_at,
            ready_at,
            deadline: placed_at + 90,
        }
    }

    fn courier(at: i64, free_at: i64) -> PlanCourier<i64> {
        PlanCourier {
            at,
            free_at,
            off_at: 1000,
            job_cost: 0,
            refused: Vec::new(),
        }
    }

    #[test]
    fn a_courier_leaves_just_in_time_for_a_parcel_not_ready_yet() {
        let jobs = [job(10, 20, 0, 30)];
        // 10 away: it must leave at 18 to be there at 28 and collect at 30.
        assert!(plan(0, &jobs, &[courier(0, 0)], travel, &SERVICE, &SETTINGS).is_empty());
        let routes = plan(17, &jobs, &[courier(0, 0)], travel, &SERVICE, &SETTINGS);
        assert_eq!(
            routes,
            [Route {
                courier: 0,
                jobs: vec![0],
                departs_at: 18,
                pickup_at: 30,
                dropoffs_at: vec![30 + 2 + 10 + 2],
            }]
        );
    }

    #[test]
    fn the_assignment_serves_everyone_not_only_the_first() {
        // Greedily, the courier at 0 would take the job at 1, sending the one at 2 to -40.
        let jobs = [job(1, 2, 0, 0), job(-40, -41, 0, 0)];
        let couriers = [courier(0, 0), courier(2, 0)];
        let routes = plan(0, &jobs, &couriers, travel, &SERVICE, &SETTINGS);
        let taken: Vec<(usize, Vec<usize>)> =
            routes.iter().map(|r| (r.courier, r.jobs.clone())).collect();
        assert_eq!(taken, [(0, vec![1]), (1, vec![0])]);
    }

    #[test]
    fn scarce_couriers_carry_bundles_from_one_pickup() {
        let jobs = [job(5, 9, 0, 0), job(5, 8, 0, 3), job(5, 50, 0, 1)];
        let routes = plan(0, &jobs, &[courier(5, 0)], travel, &SERVICE, &SETTINGS);
        assert_eq!(routes.len(), 1);
        // Three jobs for one courier: all three ride, the nearer drop-offs first.
        assert_eq!(routes[0].jobs, [1, 0, 2]);
        assert_eq!(routes[0].pickup_at, 3);
        let gaps: Vec<i64> = routes[0]
            .dropoffs_at
            .windows(2)
            .map(|w| w[1] - w[0])
            .collect();
        assert!(gaps.iter().all(|&g| g >= 4), "{gaps:?}");
        // With couriers enough, each takes one.
        let couriers = [courier(5, 0), courier(5, 0), courier(5, 0)];
        let routes = plan(0, &jobs, &couriers, travel, &SERVICE, &SETTINGS);
        assert!(routes.iter().all(|r| r.jobs.len() == 1), "{routes:?}");
    }

    #[test]
    fn no_bundle_makes_a_job_late_or_detours_past_the_bound() {
        let mut far = job(5, -100, 0, 0);
        far.deadline = 400;
        let jobs = [job(5, 15, 0, 0), far];
        let routes = plan(0, &jobs, &[courier(5, 0)], travel, &SERVICE, &SETTINGS);
        // Opposite ways: either drop-off first delays the other past the detour allowed, so
        // one rides alone.
        assert_eq!(routes.len(), 1);
        assert_eq!(routes[0].jobs.len(), 1);
        let late = [PlanJob {
            deadline: 5,
            ..job(5, 50, 0, 0)
        }];
        assert!(plan(0, &late, &[courier(5, 0)], travel, &SERVICE, &SETTINGS).is_empty());
    }

    #[test]
    fn a_busy_courier_that_serves_best_is_waited_for() {
        // The busy courier is free at 3 right at the pickup; the free one is 60 away.
        let jobs = [job(0, 5, 0, 10)];
        let couriers = [courier(60, 0), courier(0, 3)];
        assert!(plan(0, &jobs, &couriers, travel, &SERVICE, &SETTINGS).is_empty());
        let routes = plan(8, &jobs, &couriers, travel, &SERVICE, &SETTINGS);
        assert_eq!(routes[0].courier, 1);
    }

    #[test]
    fn a_job_goes_to_the_courier_it_costs_least_with_when_all_else_is_close() {
        let jobs = [job(10, 20, 0, 0)];
        let paid_per_job = PlanCourier {
            job_cost: 5,
            ..courier(9, 0)
        };
        // One minute nearer is not worth five of cost.
        let routes = plan(
            0,
            &jobs,
            &[paid_per_job, courier(11 + 1, 0)],
            travel,
            &SERVICE,
            &SETTINGS,
        );
        assert_eq!(routes[0].courier, 1);
    }

    #[test]
    fn a_courier_at_the_pickup_takes_one_more_parcel_of_it() {
        // Holding a parcel for 20: another for 22 from the same pickup joins it rather than
        // one for 60, which adds more; one from elsewhere is not at this pickup.
        let holding = [job(10, 20, 0, 0)];
        let open = [job(10, 60, 0, 0), job(30, 22, 0, 0), job(10, 22, 0, 2)];
        let joined = join_at_pickup(0, &holding, &open, &[], travel, &SERVICE, &SETTINGS);
        assert_eq!(joined, Some(2));
        // Turned down before: not again.
        let refused = join_at_pickup(0, &holding, &open, &[2], travel, &SERVICE, &SETTINGS);
        assert_eq!(refused, Some(0));
        let both = join_at_pickup(0, &holding, &open, &[0, 2], travel, &SERVICE, &SETTINGS);
        assert_eq!(both, None);
    }

    #[test]
    fn a_full_or_far_apart_bundle_takes_nothing_more() {
        let open = [job(10, 22, 0, 0)];
        let full = [job(10, 20, 0, 0), job(10, 21, 0, 0), job(10, 23, 0, 0)];
        assert_eq!(
            join_at_pickup(0, &full, &open, &[], travel, &SERVICE, &SETTINGS),
            None
        );
        // Ready 11 after the parcel held: past the bundle window of 10.
        let later = [job(10, 22, 0, 11)];
        assert_eq!(
            join_at_pickup(
                0,
                &[job(10, 20, 0, 0)],
                &later,
                &[],
                travel,
                &SERVICE,
                &SETTINGS
            ),
            None
        );
        assert_eq!(
            join_at_pickup(0, &[], &open, &[], travel, &SERVICE, &SETTINGS),
            None
        );
    }

    #[test]
    fn a_courier_is_never_given_a_job_it_turned_down() {
        let jobs = [job(10, 20, 0, 0)];
        let declined = PlanCourier {
            refused: vec![0],
            ..courier(10, 0)
        };
        let routes = plan(
            0,
            &jobs,
            &[declined, courier(30, 0)],
            travel,
            &SERVICE,
            &SETTINGS,
        );
        assert_eq!(routes.len(), 1);
        assert_eq!(routes[0].courier, 1);
        let alone = PlanCourier {
            refused: vec![0],
            ..courier(10, 0)
        };
        assert!(plan(0, &jobs, &[alone], travel, &SERVICE, &SETTINGS).is_empty());
    }

    #[test]
    fn a_job_that_cannot_be_on_time_is_delivered_late_only_when_allowed_and_after_those_that_can() {
        let mut late = job(50, 60, 0, 0);
        late.deadline = 10;
        let on_time = job(50, 40, 0, 0);
        let strict = plan(
            0,
            &[late.clone()],
            &[courier(50, 0)],
            travel,
            &SERVICE,
            &SETTINGS,
        );
        assert!(strict.is_empty());
        let lenient = PlannerSettings {
            late_by: 10,
            max_bundle: 1,
            ..SETTINGS
        };
        let routes = plan(
            0,
            &[late.clone()],
            &[courier(50, 0)],
            travel,
            &SERVICE,
            &lenient,
        );
        assert_eq!(routes.len(), 1);
        // Dropped off at 16, within 10 past its deadline.
        assert_eq!(routes[0].dropoffs_at, [16]);
        // One courier, one of each: the job that can still be on time goes first.
        let routes = plan(
            0,
            &[late.clone(), on_time],
            &[courier(52, 0)],
            travel,
            &SERVICE,
            &lenient,
        );
        assert_eq!(routes[0].jobs, [1]);
        // Later than allowed: not planned.
        late.deadline = 5;
        assert!(plan(0, &[late], &[courier(50, 0)], travel, &SERVICE, &lenient).is_empty());
    }

    #[test]
    fn only_couriers_free_soon_make_couriers_plentiful() {
        // Three jobs at one pickup; three couriers, two busy for long: one courier free soon
        // for three jobs, so they ride together.
        let jobs = [job(5, 9, 0, 0), job(5, 8, 0, 1), job(5, 10, 0, 2)];
        let couriers = [courier(5, 0), courier(500, 400), courier(500, 400)];
        let horizon = PlannerSettings {
            scarcity_horizon: 10,
            ..SETTINGS
        };
        let routes = plan(0, &jobs, &couriers, travel, &SERVICE, &horizon);
        assert_eq!(routes.len(), 1);
        assert_eq!(routes[0].jobs.len(), 3);
        // Counting every courier on duty, one job each.
        let routes = plan(0, &jobs, &couriers, travel, &SERVICE, &SETTINGS);
        assert!(routes.iter().all(|r| r.jobs.len() == 1), "{routes:?}");
    }

    #[test]
    fn no_pickup_after_the_courier_goes_off_duty() {
        let jobs = [job(10, 20, 0, 0)];
        let leaving = PlanCourier {
            off_at: 5,
            ..courier(0, 0)
        };
        assert!(plan(0, &jobs, &[leaving], travel, &SERVICE, &SETTINGS).is_empty());
    }
}
