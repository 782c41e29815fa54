//! The sandbox simulator's runs, one per test-environment job.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool, Postgres, QueryBuilder};
use uuid::Uuid;

use courier_domain::sandbox::plan::{Scenario, Stage};

use super::jobs::JobRow;
use super::text_columns::Text;
use super::writes::Writes;

#[derive(Clone, Debug)]
pub struct RunRow {
    pub job_id: Uuid,
    pub scenario: Scenario,
    pub stage: Stage,
    pub courier_id: Option<Uuid>,
    pub reassigned: bool,
    pub leg: Option<serde_json::Value>,
    pub leg_seconds: Option<i32>,
    pub stage_started_at: DateTime<Utc>,
    pub next_at: Option<DateTime<Utc>>,
}

impl RunRow {
    /// The run written for a newly booked test job.
    pub fn new(job: &JobRow, scenario: Scenario, now: DateTime<Utc>) -> Self {
        RunRow {
            job_id: job.id,
            scenario,
            stage: Stage::Searching,
            courier_id: None,
            reassigned: false,
            leg: None,
            leg_seconds: None,
            stage_started_at: now,
            // The worker works out the real due time when it first looks.
            next_at: scenario.runs_by_itself().then(|| job.search_start()),
        }
    }
}

/// Writes a run: a new one (in its booking's transaction) or its new state.
pub async fn save(conn: &mut PgConnection, run: &RunRow) -> Result<(), sqlx::Error> {
    Writes::new().and(upsert(vec![run])).execute(conn).await
}

/// [`save`] as one write of a statement that makes others ([`Writes`]), for several runs.
pub fn upsert<'a>(
    runs: Vec<&'a RunRow>,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        query.push(
            "INSERT INTO sandbox_runs (job_id, scenario, stage, courier_id, reassigned, leg, \
             leg_seconds, stage_started_at, next_at) ",
        );
        query.push_values(runs, |mut row, r| {
            row.push_bind(r.job_id)
                .push_bind(r.scenario.as_str())
                .push_bind(r.stage.as_str())
                .push_bind(r.courier_id)
                .push_bind(r.reassigned)
                .push_bind(&r.leg)
                .push_bind(r.leg_seconds)
                .push_bind(r.stage_started_at)
                .push_bind(r.next_at);
        });
        query.push(
            " ON CONFLICT (job_id) DO UPDATE SET scenario = EXCLUDED.scenario, \
             stage = EXCLUDED.stage, courier_id = EXCLUDED.courier_id, \
             reassigned = EXCLUDED.reassigned, leg = EXCLUDED.leg, \
             leg_seconds = EXCLUDED.leg_seconds, stage_started_at = EXCLUDED.stage_started_at, \
             next_at = EXCLUDED.next_at",
        );
    }
}

pub async fn find(pool: &PgPool, job_id: Uuid) -> Result<Option<RunRow>, sqlx::Error> {
    sqlx::query_as!(
        RunRow,
        "SELECT job_id, scenario AS \"scenario: Text<Scenario>\", stage AS \"stage: Text<Stage>\", \
         courier_id, reassigned, leg, leg_seconds, stage_started_at, next_at \
         FROM sandbox_runs WHERE job_id = $1",
        job_id,
    )
    .fetch_optional(pool)
    .await
}

/// The run of the merchant's own test job, locked for this transaction. The job is found by
/// its key alone and its owner compared after: joined on both, a planner without fresh
/// statistics picked the merchant's index and walked all of the merchant's jobs.
pub async fn lock_own(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    job_id: Uuid,
) -> Result<Option<RunRow>, sqlx::Error> {
    sqlx::query_as!(
        RunRow,
        "SELECT r.job_id, r.scenario AS \"scenario: Text<Scenario>\", r.stage AS \"stage: Text<Stage>\", \
         r.courier_id, r.reassigned, r.leg, r.leg_seconds, r.stage_started_at, r.next_at \
         FROM sandbox_runs r \
         WHERE r.job_id = $1 \
           AND (SELECT j.merchant_id = $2 AND j.environment = 'test' FROM jobs j WHERE j.id = r.job_id) \
         FOR UPDATE",
        job_id,
        merchant_id,
    )
    .fetch_optional(conn)
    .await
}

/// One run whose next step is due, locked; runs other instances hold are skipped.
pub async fn claim_due(
    conn: &mut PgConnection,
    now: DateTime<Utc>,
    passed: &[Uuid],
) -> Result<Option<RunRow>, sqlx::Error> {
    sqlx::query_as!(
        RunRow,
        "SELECT job_id, scenario AS \"scenario: Text<Scenario>\", stage AS \"stage: Text<Stage>\", \
         courier_id, reassigned, leg, leg_seconds, stage_started_at, next_at \
         FROM sandbox_runs WHERE next_at <= $1 AND job_id <> ALL($2) \
         ORDER BY next_at LIMIT 1 FOR UPDATE SKIP LOCKED",
        now,
        passed,
    )
    .fetch_optional(conn)
    .await
}

/// Puts off a run's next step (after a step that failed).
pub async fn postpone(
    pool: &PgPool,
    job_id: Uuid,
    until: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE sandbox_runs SET next_at = $2 WHERE job_id = $1",
        job_id,
        until,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Runs with a simulated courier on the job, for their positions.
pub async fn under_way(conn: &mut PgConnection, limit: i64) -> Result<Vec<RunRow>, sqlx::Error> {
    sqlx::query_as!(
        RunRow,
        "SELECT job_id, scenario AS \"scenario: Text<Scenario>\", stage AS \"stage: Text<Stage>\", \
         courier_id, reassigned, leg, leg_seconds, stage_started_at, next_at \
         FROM sandbox_runs WHERE stage <> 'done' AND courier_id IS NOT NULL \
         ORDER BY job_id LIMIT $1",
        limit,
    )
    .fetch_all(conn)
    .await
}

/// Couriers' latest positions, all at once.
pub async fn report_positions(
    conn: &mut PgConnection,
    couriers: &[Uuid],
    latitudes: &[f64],
    longitudes: &[f64],
    seen_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    Writes::new()
        .and(positions(couriers, latitudes, longitudes, seen_at))
        .execute(conn)
        .await
}

/// [`report_positions`] as one write of a statement that makes others ([`Writes`]).
fn positions<'a>(
    couriers: &'a [Uuid],
    latitudes: &'a [f64],
    longitudes: &'a [f64],
    seen_at: DateTime<Utc>,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        query
            .push("INSERT INTO courier_positions (courier_id, latitude, longitude, seen_at) SELECT id, lat, lon, ")
            .push_bind(seen_at)
            .push(" FROM UNNEST(")
            .push_bind(couriers)
            .push("::uuid[], ")
            .push_bind(latitudes)
            .push("::float8[], ")
            .push_bind(longitudes)
            .push(
                "::float8[]) AS p (id, lat, lon) ON CONFLICT (courier_id) DO UPDATE \
                 SET latitude = excluded.latitude, longitude = excluded.longitude, \
                 seen_at = excluded.seen_at",
            );
    }
}

/// A simulated courier's run and position written as a step of its run ends, in one statement:
/// the run saved, the position of the courier it let go (`retired`) forgotten, and its
/// courier's new position (`position`: latitude, longitude) reported at `seen_at`.
pub async fn save_with_positions(
    conn: &mut PgConnection,
    run: &RunRow,
    retired: Option<Uuid>,
    position: Option<(Uuid, f64, f64)>,
    seen_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let position =
        position.map(|(courier, latitude, longitude)| ([courier], [latitude], [longitude]));
    let mut writes = Writes::new().and(upsert(vec![run]));
    if let Some(courier_id) = retired {
        writes = writes.and(move |query: &mut QueryBuilder<'_, Postgres>| {
            query
                .push("DELETE FROM courier_positions WHERE courier_id = ")
                .push_bind(courier_id);
        });
    }
    if let Some((courier, latitude, longitude)) = &position {
        writes = writes.and(positions(courier, latitude, longitude, seen_at));
    }
    writes.execute(conn).await
}
