//! What the public tracking page reads: a job by its token, and the job's events.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use crate::jobs::{JobRecord, JobRow};

/// The job whose tracking token is `token` (the unique index on `tracking_token` answers it).
pub async fn find_by_token(pool: &PgPool, token: &str) -> Result<Option<JobRow>, sqlx::Error> {
    sqlx::query_as!(
        JobRecord,
        "SELECT * FROM jobs WHERE tracking_token = $1",
        token,
    )
    .fetch_optional(pool)
    .await?
    .map(JobRow::try_from)
    .transpose()
}

/// The job's events (name, when), oldest first.
pub async fn job_events(
    pool: &PgPool,
    job_id: Uuid,
) -> Result<Vec<(String, DateTime<Utc>)>, sqlx::Error> {
    let events = sqlx::query!(
        "SELECT name, occurred_at FROM events WHERE job_id = $1 ORDER BY occurred_at",
        job_id,
    )
    .fetch_all(pool)
    .await?;
    Ok(events
        .into_iter()
        .map(|e| (e.name, e.occurred_at))
        .collect())
}
