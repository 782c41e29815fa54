//! Jobs: booking (once per quote, idempotent), reading and listing a merchant's own jobs,
//! the courier's position, the worker that opens the search of scheduled jobs, and every
//! move after booking (`transitions`, `fulfilment`, `proof`).

pub mod booking;
pub mod fulfilment;
pub mod reading;
pub mod views;

pub use courier_store::fulfilment::ProofFileRow;
pub use courier_store::jobs::{CourierDay, JobRow, ListFilter};

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::infra::workers::{Pass, Workers};
use courier_store::jobs as store;

/// How long an `Idempotency-Key` is remembered.
pub const IDEMPOTENCY_RETENTION: chrono::Duration = chrono::Duration::hours(24);
/// A courier position older than this is not "lately": the position endpoint answers 204.
pub const POSITION_FRESHNESS: chrono::Duration = chrono::Duration::minutes(2);

/// Moves pending jobs to searching when their time comes (twenty minutes before
/// `scheduled_for`) and forgets old idempotency keys (merchants' and couriers'). Every instance may run it: each due
/// job is moved by one statement that skips rows another instance holds.
pub fn run_scheduler(pool: PgPool, every: Duration, workers: &Workers) {
    workers.run("scheduled job work", every, move || {
        let pool = pool.clone();
        async move {
            run_due_work(&pool, Utc::now()).await?;
            Ok::<_, sqlx::Error>(Pass::Partial)
        }
    });
}

async fn run_due_work(pool: &PgPool, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    let opened = store::open_due_searches(pool, now).await?;
    if opened > 0 {
        tracing::info!(jobs = opened, "searches opened for scheduled jobs");
    }
    courier_store::bookings::write::expire_keys(pool, now - IDEMPOTENCY_RETENTION).await?;
    courier_store::courier_actions::prune(pool, now - IDEMPOTENCY_RETENTION).await?;
    courier_store::couriers::prune_trails(pool, now - crate::couriers::TRAIL_RETENTION).await?;
    Ok(())
}
