//! The sandbox simulator: test-environment jobs move on their own like real deliveries.
//!
//! Every test job gets a *run* in its booking's transaction, with the scenario the merchant
//! chose (`Courier-Sandbox-Scenario`, or later `POST /v1/sandbox/jobs/{id}/scenario`). A
//! worker on every instance claims due runs with `FOR UPDATE SKIP LOCKED` and takes their next
//! step in the same transaction as the job move it makes, through the same functions the
//! courier and operator APIs use (same checks, events and charge settlements). Simulated
//! couriers drive real routes of the market's road network for the job's vehicle; their
//! positions are read off the route by time, at `COURIER_SANDBOX_SPEED`, so the
//! courier-position endpoint and the tracking page move. Live jobs never get a run.

mod config;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use courier_geo::LatLon;
use serde::Serialize;
use sqlx::{PgConnection, PgPool};
use thiserror::Error;
use uuid::Uuid;

pub use config::SandboxConfig;
use courier_domain::sandbox::leg;
use courier_domain::sandbox::plan::{
    self, Scenario, Stage, Step, next_step, real_duration, wait_before,
};

use crate::auth::Merchant;
use crate::dispatch::point;
use crate::infra::clock::now;
use crate::jobs::fulfilment::{Fulfilment, FulfilmentError, SimulatedMove};
use crate::markets::Markets;
use courier_domain::JobStatus;
use courier_domain::job::proof::{Proof, ProofFile, ProofKind};
use courier_domain::job::transitions;
use courier_store::fulfilment::lock_job;
use courier_store::jobs::JobRow;
use courier_store::sandbox::{self as store, RunRow};

use courier_domain::error::Code;
use courier_domain::error::ErrorCode;

pub const UNKNOWN_SCENARIO: Code = Code::new(
    422,
    "sandbox.unknown_scenario",
    "Not one of the six scenario names (header or body).",
);
pub const TEST_ONLY: Code = Code::new(
    422,
    "sandbox.test_only",
    "`Courier-Sandbox-Scenario` sent with a live key.",
);
pub const SCENARIO_LOCKED: Code = Code::new(
    409,
    "sandbox.scenario_locked",
    "A scenario chosen once a courier is on the job, or after it ended.",
);
pub const NOTHING_TO_ADVANCE: Code = Code::new(
    409,
    "sandbox.nothing_to_advance",
    "The job has ended, is still `pending`, or was taken over by someone other than the simulator.",
);
pub const ROUTE_UNAVAILABLE: Code = Code::new(
    503,
    "sandbox.route_unavailable",
    "The market's road network is still loading (advance again shortly).",
);

/// `reason` of a simulated return.
pub const RETURN_REASON: &str = "recipient_unavailable";
/// `reason` of a simulated cancellation by operations.
pub const CANCEL_REASON: &str = "cancelled_by_operations";
/// Due runs stepped per pass.
const RUNS_PER_PASS: usize = 200;
/// Couriers whose positions are written per pass.
const POSITIONS_PER_PASS: i64 = 5000;
/// Straight-line distance from the pickup at which a simulated courier starts its drive.
const APPROACH_KM: f64 = 1.5;
const KM_PER_DEGREE_OF_LATITUDE: f64 = 111.2;
/// The file a simulated delivery keeps as its photo and signature, when they are required.
const PROOF_IMAGE: &[u8] = include_bytes!("proof.png");

#[derive(Debug, Error, ErrorCode)]
pub enum SandboxError {
    #[error(
        "{0:?} is not a sandbox scenario; use happy_path, no_courier, courier_reassigned, \
         returned, cancelled_by_operations or manual"
    )]
    #[code(UNKNOWN_SCENARIO)]
    UnknownScenario(String),
    #[error("Courier-Sandbox-Scenario is for test keys only")]
    #[code(TEST_ONLY)]
    TestOnly,
    #[error("the scenario can only be chosen before a courier is on the job")]
    #[code(SCENARIO_LOCKED)]
    ScenarioLocked,
    #[error("nothing to advance: {0}")]
    #[code(NOTHING_TO_ADVANCE)]
    NothingToAdvance(&'static str),
    #[error("no such job")]
    #[code(courier_domain::job::JOB_NOT_FOUND)]
    JobNotFound,
    #[error("the market's road network cannot route this job yet")]
    #[code(ROUTE_UNAVAILABLE)]
    RouteUnavailable,
    #[error(transparent)]
    #[code(via)]
    Fulfilment(#[from] FulfilmentError),
    #[error(transparent)]
    #[code(fault)]
    Store(#[from] sqlx::Error),
}

/// A test job's run as `GET /v1/sandbox/jobs/{id}` shows it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RunView {
    pub job_id: Uuid,
    #[schema(value_type = courier_domain::JobStatus)]
    pub status: String,
    #[schema(value_type = Scenario)]
    pub scenario: &'static str,
    #[schema(value_type = plan::Stage)]
    pub stage: &'static str,
    /// The simulated courier on the job (the id its events carry), if any.
    pub courier_id: Option<Uuid>,
    /// Null once the run is done.
    #[schema(value_type = Option<plan::Step>)]
    pub next_step: Option<&'static str>,
    /// When the next step is due; null in manual mode, once done, or with the simulator off.
    pub next_step_at: Option<DateTime<Utc>>,
}

/// What a step did: the job it moved, if any, and where the run's courier now is, if the
/// step put one on the road.
#[derive(Default)]
struct Taken {
    moved: Option<JobRow>,
    position: Option<(Uuid, f64, f64)>,
}

pub struct Simulator {
    pool: PgPool,
    markets: Arc<Markets>,
    fulfilment: Fulfilment,
    config: SandboxConfig,
    /// The dispatch deadline, in simulated seconds (the no-courier scenario fails at it).
    deadline_seconds: f64,
}

impl Simulator {
    pub fn new(
        pool: PgPool,
        markets: Arc<Markets>,
        fulfilment: Fulfilment,
        config: SandboxConfig,
        deadline: chrono::Duration,
    ) -> Self {
        Self {
            pool,
            markets,
            fulfilment,
            config,
            deadline_seconds: deadline.num_milliseconds() as f64 / 1000.0,
        }
    }

    /// Whether test jobs move on their own here (`COURIER_SANDBOX_SPEED` above 0).
    pub fn is_running(&self) -> bool {
        self.config.speed > 0.0
    }

    /// Steps due runs and moves simulated couriers every `COURIER_SANDBOX_INTERVAL_MS`, until
    /// the workers stop; nothing when the simulator is off.
    pub fn run(self: Arc<Self>, workers: &crate::infra::workers::Workers) {
        if !self.is_running() {
            return;
        }
        let every = self.config.interval;
        workers.run("sandbox simulation", every, move || {
            let simulator = Arc::clone(&self);
            async move {
                if let Err(error) = simulator.run_due_steps().await {
                    tracing::warn!(%error, "sandbox simulation failed; retrying");
                }
                simulator.report_positions().await?;
                Ok::<_, SandboxError>(crate::infra::workers::Pass::Partial)
            }
        });
    }

    /// `GET /v1/sandbox/jobs/{id}`: read without locks, so it never waits on a step.
    pub async fn view(&self, merchant: &Merchant, job_id: Uuid) -> Result<RunView, SandboxError> {
        let job = courier_store::jobs::find(
            &self.pool,
            merchant.merchant_id,
            merchant.environment,
            job_id,
        )
        .await?
        .ok_or(SandboxError::JobNotFound)?;
        let run = store::find(&self.pool, job_id)
            .await?
            .ok_or(SandboxError::JobNotFound)?;
        Ok(view(&run, &job))
    }

    /// `POST /v1/sandbox/jobs/{id}/scenario`: until a courier is on the job.
    pub async fn choose_scenario(
        &self,
        merchant: &Merchant,
        job_id: Uuid,
        name: &str,
    ) -> Result<RunView, SandboxError> {
        let scenario =
            Scenario::parse(name).ok_or_else(|| SandboxError::UnknownScenario(name.to_owned()))?;
        let mut tx = self.pool.begin().await?;
        let mut run = store::lock_own(&mut tx, merchant.merchant_id, job_id)
            .await?
            .ok_or(SandboxError::JobNotFound)?;
        let job = lock_job(&mut tx, job_id)
            .await?
            .ok_or(SandboxError::JobNotFound)?;
        let open = matches!(job.status, JobStatus::Pending | JobStatus::Searching);
        if run.stage != Stage::Searching || !open {
            return Err(SandboxError::ScenarioLocked);
        }
        run.scenario = scenario;
        self.schedule(&mut run, &job);
        store::save(&mut tx, &run).await?;
        tx.commit().await?;
        Ok(view(&run, &job))
    }

    /// `POST /v1/sandbox/jobs/{id}/advance`: takes the run's next steps now, up to and
    /// including the next one that moves the job.
    pub async fn advance(
        &self,
        merchant: &Merchant,
        job_id: Uuid,
    ) -> Result<RunView, SandboxError> {
        let mut tx = self.fulfilment.begin_move().await?;
        let mut run = store::lock_own(&mut tx, merchant.merchant_id, job_id)
            .await?
            .ok_or(SandboxError::JobNotFound)?;
        // The job is locked once and the run saved once, however many steps it takes: the
        // steps before the one that moves the job change only the run.
        let mut job = lock_job(&mut tx, job_id)
            .await?
            .ok_or(SandboxError::JobNotFound)?;
        let courier_before = run.courier_id;
        let mut taken = Taken::default();
        for _ in 0..Stage::ALL.len() {
            if run.stage == Stage::Done {
                break;
            }
            taken = self.step(&mut tx, &mut run, &job, now(), true).await?;
            if let Some(moved) = &taken.moved {
                job = moved.clone();
                break;
            }
        }
        if taken.moved.is_none() {
            return Err(SandboxError::NothingToAdvance(
                "the job has ended, or someone other than the simulator has taken it over",
            ));
        }
        let retired = retired_courier(courier_before, &run);
        store::save_with_positions(&mut tx, &run, retired, taken.position, now()).await?;
        tx.commit().await?;
        self.fulfilment.settle_ended(&job).await;
        Ok(view(&run, &job))
    }

    async fn run_due_steps(&self) -> Result<(), SandboxError> {
        let mut passed = Vec::new();
        while passed.len() < RUNS_PER_PASS {
            let mut tx = self.fulfilment.begin_maybe_move().await?;
            let now = now();
            let Some(mut run) = store::claim_due(&mut tx, now, &passed).await? else {
                break;
            };
            passed.push(run.job_id);
            match self.take_step(&mut tx, &mut run, now, false).await {
                Ok(moved) => {
                    if moved.is_some() {
                        tx.recorded();
                    }
                    tx.commit().await?;
                    if let Some(job) = moved {
                        self.fulfilment.settle_ended(&job).await;
                    }
                }
                Err(error) => {
                    drop(tx);
                    tracing::warn!(%error, job_id = %run.job_id, "a sandbox step failed; will retry");
                    let retry_at = now
                        + chrono::Duration::from_std(self.config.interval)
                            .unwrap_or(chrono::Duration::seconds(1))
                            .max(chrono::Duration::seconds(1));
                    store::postpone(&self.pool, run.job_id, retry_at).await?;
                }
            }
        }
        Ok(())
    }

    /// Writes where every simulated courier on a job is now.
    async fn report_positions(&self) -> Result<(), sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        let runs = store::under_way(&mut conn, POSITIONS_PER_PASS).await?;
        let now = now();
        let (mut ids, mut lats, mut lons) = (Vec::new(), Vec::new(), Vec::new());
        for run in &runs {
            if let (Some(courier), Some(at)) = (run.courier_id, self.position(run, now)) {
                ids.push(courier);
                lats.push(at.lat);
                lons.push(at.lon);
            }
        }
        if !ids.is_empty() {
            store::report_positions(&mut conn, &ids, &lats, &lons, now).await?;
        }
        Ok(())
    }

    /// Where the run's courier is at `now`: along its leg, by the time spent on the stage.
    fn position(&self, run: &RunRow, now: DateTime<Utc>) -> Option<LatLon> {
        let shape = leg::from_json(run.leg.as_ref()?);
        let elapsed = (now - run.stage_started_at).num_milliseconds() as f64 / 1000.0;
        let leg_seconds = f64::from(run.leg_seconds.unwrap_or(0));
        let fraction = leg::fraction_done(elapsed, self.config.speed, leg_seconds);
        leg::point_along(&shape, fraction)
    }

    /// Locks the run's job, takes [`Self::step`] and saves the run. Returns the job when the
    /// step moved it (its charge is settled after commit).
    async fn take_step(
        &self,
        conn: &mut PgConnection,
        run: &mut RunRow,
        now: DateTime<Utc>,
        forced: bool,
    ) -> Result<Option<JobRow>, SandboxError> {
        let job = lock_job(conn, run.job_id)
            .await?
            .ok_or(SandboxError::JobNotFound)?;
        let courier_before = run.courier_id;
        let taken = self.step(conn, run, &job, now, forced).await?;
        let retired = retired_courier(courier_before, run);
        store::save_with_positions(conn, run, retired, taken.position, now).await?;
        Ok(taken.moved)
    }

    /// Brings the run in line with `job` (locked by the caller), then takes its next step if
    /// it is due (or at once when `forced`). The run is changed in memory only: the caller
    /// saves it.
    async fn step(
        &self,
        conn: &mut PgConnection,
        run: &mut RunRow,
        job: &JobRow,
        now: DateTime<Utc>,
        forced: bool,
    ) -> Result<Taken, SandboxError> {
        if self.follow_job(run, job, now) {
            self.schedule(run, job);
            return Ok(Taken::default());
        }
        let scenario = run.scenario;
        let Some(step) = next_step(scenario, run.stage, run.reassigned) else {
            return Ok(Taken::default());
        };
        if job.status == JobStatus::Pending {
            if forced {
                return Err(SandboxError::NothingToAdvance(
                    "the job is pending: its search opens twenty minutes before scheduled_for",
                ));
            }
            self.schedule(run, job);
            // Due, but the scheduler has not opened the search yet: look again shortly.
            if run.next_at.is_some_and(|at| at <= now) {
                run.next_at = Some(now + chrono::Duration::seconds(1));
            }
            return Ok(Taken::default());
        }
        if !forced {
            self.schedule(run, job);
            if run.next_at.is_none_or(|due| due > now) {
                return Ok(Taken::default());
            }
        }
        let moved = self.perform(conn, run, job, step, now).await?;
        let current = moved.as_ref().unwrap_or(job);
        self.schedule(run, current);
        let position = match (run.courier_id, self.position(run, now)) {
            (Some(courier), Some(at)) if run.stage != Stage::Done => {
                Some((courier, at.lat, at.lon))
            }
            _ => None,
        };
        Ok(Taken { moved, position })
    }

    /// Someone else moved the job (the merchant cancelled it, operations changed it, a
    /// deadline failed it): the run follows. Returns whether the run changed.
    fn follow_job(&self, run: &mut RunRow, job: &JobRow, now: DateTime<Utc>) -> bool {
        let status = job.status;
        let stage = run.stage;
        let next = if stage == Stage::Done {
            return false;
        } else if transitions::is_final(status) {
            Stage::Done
        } else if stage == Stage::Searching {
            match status {
                JobStatus::Pending | JobStatus::Searching => return false,
                // Someone other than the simulator took the job.
                _ => Stage::Done,
            }
        } else if status == JobStatus::Searching {
            // Operations released the courier: the search starts again.
            Stage::Searching
        } else if job.courier_id != run.courier_id {
            Stage::Done
        } else if status == JobStatus::InTransit
            && matches!(stage, Stage::ToPickup | Stage::AtPickup)
        {
            // Marked collected by hand: drive on from the pickup.
            let Some(leg) = self.drive(job, Trip::PickupToDropoff) else {
                return false;
            };
            set_stage(run, Stage::ToDropoff, leg, now);
            return true;
        } else {
            return false;
        };
        if next == Stage::Searching {
            run.courier_id = None;
        }
        set_stage(run, next, Leg::none(), now);
        true
    }

    async fn perform(
        &self,
        conn: &mut PgConnection,
        run: &mut RunRow,
        job: &JobRow,
        step: Step,
        now: DateTime<Utc>,
    ) -> Result<Option<JobRow>, SandboxError> {
        let moved = match step {
            Step::Assign | Step::Reassign => {
                let courier = Uuid::new_v4();
                let leg = self.approach(job)?;
                let action = if step == Step::Assign {
                    SimulatedMove::Assign(courier)
                } else {
                    run.reassigned = true;
                    SimulatedMove::Reassign(courier)
                };
                let moved = self.fulfilment.simulated_move(conn, job, action).await?;
                run.courier_id = Some(courier);
                set_stage(run, Stage::ToPickup, leg, now);
                Some(moved)
            }
            Step::ArriveAtPickup => {
                set_stage(run, Stage::AtPickup, standing_at(&job.pickup)?, now);
                None
            }
            Step::Collect => {
                let leg = self
                    .drive(job, Trip::PickupToDropoff)
                    .ok_or(SandboxError::RouteUnavailable)?;
                let moved = self
                    .fulfilment
                    .simulated_move(conn, job, SimulatedMove::Collect)
                    .await?;
                set_stage(run, Stage::ToDropoff, leg, now);
                Some(moved)
            }
            Step::ArriveAtDropoff => {
                set_stage(run, Stage::AtDropoff, standing_at(&job.dropoff)?, now);
                None
            }
            Step::DriveBack => {
                let leg = self
                    .drive(job, Trip::DropoffToPickup)
                    .ok_or(SandboxError::RouteUnavailable)?;
                set_stage(run, Stage::Returning, leg, now);
                None
            }
            Step::Deliver => {
                let proof = simulated_proof(job, now);
                let action = SimulatedMove::Deliver(&proof);
                Some(self.fulfilment.simulated_move(conn, job, action).await?)
            }
            Step::Return => {
                let action = SimulatedMove::Return(RETURN_REASON);
                Some(self.fulfilment.simulated_move(conn, job, action).await?)
            }
            Step::CancelByOperations => {
                let action = SimulatedMove::CancelByOperations(CANCEL_REASON);
                Some(self.fulfilment.simulated_move(conn, job, action).await?)
            }
            Step::Fail => Some(
                self.fulfilment
                    .simulated_move(conn, job, SimulatedMove::Fail)
                    .await?,
            ),
        };
        if step.moves_job()
            && moved
                .as_ref()
                .is_some_and(|j| transitions::is_final(j.status))
        {
            set_stage(run, Stage::Done, Leg::none(), now);
        }
        Ok(moved)
    }

    /// When the run's next step is due, from its stage's start (for the search, from when
    /// the job's search opened); none in manual mode, once done, or with the simulator off.
    fn schedule(&self, run: &mut RunRow, job: &JobRow) {
        let scenario = run.scenario;
        let stage = run.stage;
        run.next_at = match next_step(scenario, stage, run.reassigned) {
            Some(step) if scenario.runs_by_itself() && self.is_running() => {
                let start = if stage == Stage::Searching {
                    job.search_start()
                } else {
                    run.stage_started_at
                };
                let leg_seconds = f64::from(run.leg_seconds.unwrap_or(0));
                let wait = wait_before(step, leg_seconds, self.deadline_seconds);
                Some(start + real_duration(wait, self.config.speed))
            }
            _ => None,
        };
    }

    /// A simulated courier's drive to the pickup, from a point on the road network about
    /// `APPROACH_KM` away (the first of eight directions that routes, starting from one the
    /// job's id picks); from the pickup itself when none does.
    fn approach(&self, job: &JobRow) -> Result<Leg, SandboxError> {
        let pickup = point(&job.pickup).ok_or(SandboxError::RouteUnavailable)?;
        let vehicle = job.vehicle;
        let market = self
            .markets
            .get(&job.market_id)
            .ok_or(SandboxError::RouteUnavailable)?;
        let first = usize::from(job.id.as_bytes()[0]) % 8;
        for direction in (0..8).map(|i| (first + i) % 8) {
            let angle = std::f64::consts::FRAC_PI_4 * direction as f64;
            let dlat = APPROACH_KM / KM_PER_DEGREE_OF_LATITUDE * angle.cos();
            let dlon = APPROACH_KM / KM_PER_DEGREE_OF_LATITUDE * angle.sin()
                / pickup.lat.to_radians().cos().max(0.01);
            let start = LatLon::new(pickup.lat + dlat, pickup.lon + dlon);
            if let Ok(route) = market.route(vehicle, start, pickup) {
                return Ok(Leg::of_route(&route.shape, route.duration_seconds));
            }
        }
        if market.network().is_err() {
            return Err(SandboxError::RouteUnavailable);
        }
        Ok(Leg::still(pickup))
    }

    /// The road route between the job's stops for its vehicle.
    fn drive(&self, job: &JobRow, trip: Trip) -> Option<Leg> {
        let (pickup, dropoff) = (point(&job.pickup)?, point(&job.dropoff)?);
        let (from, to) = match trip {
            Trip::PickupToDropoff => (pickup, dropoff),
            Trip::DropoffToPickup => (dropoff, pickup),
        };
        let market = self.markets.get(&job.market_id)?;
        let route = market.route(job.vehicle, from, to).ok()?;
        Some(Leg::of_route(&route.shape, route.duration_seconds))
    }
}

/// A simulated courier exists only while on its job: once the job ends or passes to another
/// courier, its last position goes too. This is the courier whose position the step forgets.
fn retired_courier(courier_before: Option<Uuid>, run: &RunRow) -> Option<Uuid> {
    courier_before.filter(|&courier| run.courier_id != Some(courier) || run.stage == Stage::Done)
}

#[derive(Clone, Copy)]
enum Trip {
    PickupToDropoff,
    DropoffToPickup,
}

/// A stage's drive: its road shape (one point when standing still) and its simulated length.
struct Leg {
    shape: Option<serde_json::Value>,
    seconds: Option<i32>,
}

impl Leg {
    fn none() -> Self {
        Self {
            shape: None,
            seconds: None,
        }
    }

    fn still(at: LatLon) -> Self {
        Self::of_route(&[at], 0)
    }

    fn of_route(shape: &[LatLon], seconds: u32) -> Self {
        Self {
            shape: Some(leg::to_json(shape)),
            seconds: Some(i32::try_from(seconds).unwrap_or(i32::MAX)),
        }
    }
}

fn set_stage(run: &mut RunRow, stage: Stage, leg: Leg, now: DateTime<Utc>) {
    run.stage = stage;
    run.leg = leg.shape;
    run.leg_seconds = leg.seconds;
    run.stage_started_at = now;
}

/// Standing at one of the job's stops.
fn standing_at(stop: &serde_json::Value) -> Result<Leg, SandboxError> {
    point(stop)
        .map(Leg::still)
        .ok_or(SandboxError::RouteUnavailable)
}

fn view(run: &RunRow, job: &JobRow) -> RunView {
    let scenario = run.scenario;
    let stage = run.stage;
    RunView {
        job_id: run.job_id,
        status: job.status.as_str().to_owned(),
        scenario: scenario.as_str(),
        stage: stage.as_str(),
        courier_id: run.courier_id.filter(|_| stage != Stage::Done),
        next_step: next_step(scenario, stage, run.reassigned).map(Step::as_str),
        next_step_at: run.next_at,
    }
}

/// Handed to the drop-off contact, with the files the job requires.
fn simulated_proof(job: &JobRow, now: DateTime<Utc>) -> Proof {
    let mut files = Vec::new();
    for (required, kind) in [
        (job.proof_photo_required, ProofKind::Photo),
        (job.proof_signature_required, ProofKind::Signature),
    ] {
        if required {
            files.push(ProofFile {
                kind,
                content_type: "image/png".to_owned(),
                bytes: PROOF_IMAGE.to_vec(),
            });
        }
    }
    Proof {
        outcome: "handed_to_recipient".to_owned(),
        recipient_name: job.dropoff["contact_name"].as_str().map(str::to_owned),
        note: Some("Simulated delivery (sandbox)".to_owned()),
        recorded_at: now,
        files,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(courier_id: Option<Uuid>, stage: Stage) -> RunRow {
        RunRow {
            job_id: Uuid::new_v4(),
            scenario: Scenario::HappyPath,
            stage,
            courier_id,
            reassigned: false,
            leg: None,
            leg_seconds: None,
            stage_started_at: Utc::now(),
            next_at: None,
        }
    }

    #[test]
    fn a_step_forgets_the_position_of_a_courier_replaced_or_done() {
        let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
        // Still on the job: kept.
        let driving = run(Some(first), Stage::ToDropoff);
        assert_eq!(retired_courier(Some(first), &driving), None);
        // Another courier took the job, or the search started again: the first goes.
        let reassigned = run(Some(second), Stage::ToPickup);
        assert_eq!(retired_courier(Some(first), &reassigned), Some(first));
        let searching = run(None, Stage::Searching);
        assert_eq!(retired_courier(Some(first), &searching), Some(first));
        // The run is done: its courier goes.
        let done = run(Some(first), Stage::Done);
        assert_eq!(retired_courier(Some(first), &done), Some(first));
        // No courier before: nothing to forget.
        assert_eq!(retired_courier(None, &reassigned), None);
    }
}
