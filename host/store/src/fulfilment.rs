//! The moves of jobs, their proof files, and the settlements their endings owe.

use chrono::{DateTime, Utc};
use courier_domain::JobStatus;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use courier_domain::job::proof::ProofKind;
use courier_domain::job::transitions::Settlement;

use crate::text::Text;

use super::jobs::{JobRecord, JobRow};

/// The job, locked for this transaction.
pub async fn lock_job(conn: &mut PgConnection, id: Uuid) -> Result<Option<JobRow>, sqlx::Error> {
    sqlx::query_as!(JobRecord, "SELECT * FROM jobs WHERE id = $1 FOR UPDATE", id,)
        .fetch_optional(conn)
        .await?
        .map(JobRow::try_from)
        .transpose()
}

/// Writes a job's new state, only if it is still in `from`: a job moved meanwhile is left
/// alone (None), so two moves racing from one state cannot both happen.
pub async fn move_job(
    conn: &mut PgConnection,
    job: &JobRow,
    from: JobStatus,
) -> Result<Option<JobRow>, sqlx::Error> {
    sqlx::query_as!(
        JobRecord,
        "UPDATE jobs SET status = $3, courier_id = $4, assigned_at = $5, completed_at = $6, \
         cancellation_reason = $7, proof = $8, search_opened_at = $9 \
         WHERE id = $1 AND status = $2 RETURNING *",
        job.id,
        from.as_str(),
        job.status.as_str(),
        job.courier_id,
        job.assigned_at,
        job.completed_at,
        job.cancellation_reason.as_deref(),
        job.proof.as_ref(),
        job.search_opened_at,
    )
    .fetch_optional(conn)
    .await?
    .map(JobRow::try_from)
    .transpose()
}

/// A job's courier, changed by hand; returns the job after it.
pub async fn set_courier(
    conn: &mut PgConnection,
    job_id: Uuid,
    courier_id: Uuid,
    at: DateTime<Utc>,
) -> Result<JobRow, sqlx::Error> {
    sqlx::query_as!(
        JobRecord,
        "UPDATE jobs SET courier_id = $2, assigned_at = $3 WHERE id = $1 RETURNING *",
        job_id,
        courier_id,
        at,
    )
    .fetch_one(conn)
    .await
    .and_then(JobRow::try_from)
}

/// The jobs under way of a courier (assigned or in transit), oldest assignment first.
pub async fn courier_jobs(pool: &PgPool, courier_id: Uuid) -> Result<Vec<JobRow>, sqlx::Error> {
    sqlx::query_as!(
        JobRecord,
        "SELECT * FROM jobs WHERE courier_id = $1 AND status IN ('assigned', 'in_transit') \
         ORDER BY assigned_at, id",
        courier_id,
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(JobRow::try_from)
    .collect()
}

/// A proof file as stored.
#[derive(Clone, Debug)]
pub struct ProofFileRow {
    pub job_id: Uuid,
    pub kind: ProofKind,
    pub content_type: String,
    pub size_bytes: i32,
    pub bytes: Vec<u8>,
    pub created_at: DateTime<Utc>,
}

pub async fn insert_proof_file(
    conn: &mut PgConnection,
    file: &ProofFileRow,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO proof_files (job_id, kind, content_type, size_bytes, bytes, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
        file.job_id,
        file.kind.as_str(),
        &file.content_type,
        file.size_bytes,
        &file.bytes,
        file.created_at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn proof_file(
    pool: &PgPool,
    job_id: Uuid,
    kind: ProofKind,
) -> Result<Option<ProofFileRow>, sqlx::Error> {
    sqlx::query_as!(
        ProofFileRow,
        "SELECT job_id, kind AS \"kind: Text<ProofKind>\", content_type, size_bytes, bytes, created_at FROM proof_files WHERE job_id = $1 AND kind = $2",
        job_id,
        kind.as_str(),
    )
    .fetch_optional(pool)
    .await
}

/// Records what the job's ending owes its charge, due at `due_at` if not done before.
pub async fn owe_settlement(
    conn: &mut PgConnection,
    job_id: Uuid,
    operation: Settlement,
    due_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO job_settlements (job_id, operation, due_at) VALUES ($1, $2, $3) \
         ON CONFLICT (job_id) DO UPDATE SET operation = $2, due_at = $3, leased_until = NULL",
        job_id,
        operation.as_str(),
        due_at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// A settlement still owed.
#[derive(Clone, Debug)]
pub struct SettlementRow {
    pub job_id: Uuid,
    pub operation: Settlement,
}

/// Claims due settlements for `lease`: one instance works on each at a time, and a row whose
/// instance died is taken up again once the lease runs out.
pub async fn claim_due_settlements(
    pool: &PgPool,
    limit: i64,
    lease: std::time::Duration,
) -> Result<Vec<SettlementRow>, sqlx::Error> {
    sqlx::query_as!(
        SettlementRow,
        "UPDATE job_settlements SET leased_until = now() + make_interval(secs => $2) \
         WHERE job_id IN ( \
           SELECT job_id FROM job_settlements \
           WHERE due_at <= now() AND (leased_until IS NULL OR leased_until < now()) \
           ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED) \
         RETURNING job_id, operation AS \"operation: Text<Settlement>\"",
        limit,
        lease.as_secs_f64(),
    )
    .fetch_all(pool)
    .await
}

/// Forgets a settlement once done, if it still asks for `operation`.
pub async fn settled(
    pool: &PgPool,
    job_id: Uuid,
    operation: Settlement,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "DELETE FROM job_settlements WHERE job_id = $1 AND operation = $2",
        job_id,
        operation.as_str(),
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Keeps why a settlement could not be done yet; it is tried again after `retry_at`.
pub async fn settlement_failed(
    pool: &PgPool,
    job_id: Uuid,
    error: &str,
    retry_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE job_settlements SET last_error = $2, due_at = $3, leased_until = NULL \
         WHERE job_id = $1",
        job_id,
        error,
        retry_at,
    )
    .execute(pool)
    .await?;
    Ok(())
}
