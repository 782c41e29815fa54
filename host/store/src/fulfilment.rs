//! The moves of jobs, their proof files, and the settlements their endings owe.

use chrono::{DateTime, Utc};
use courier_domain::JobStatus;
use sqlx::{PgConnection, PgPool, Postgres, QueryBuilder};
use uuid::Uuid;

use courier_domain::event::NewEvent;

use courier_domain::job::proof::ProofKind;
use courier_domain::job::transitions::Settlement;

use crate::text_columns::Text;

use super::jobs::{JobRecord, JobRow};
use crate::writes::Writes;

/// The job, locked for this transaction.
pub async fn lock_job(conn: &mut PgConnection, id: Uuid) -> Result<Option<JobRow>, sqlx::Error> {
    sqlx::query_as!(JobRecord, "SELECT * FROM jobs WHERE id = $1 FOR UPDATE", id,)
        .fetch_optional(conn)
        .await?
        .map(JobRow::try_from)
        .transpose()
}

/// What a job's move writes beside the job, each only if the job moved.
#[derive(Default)]
pub struct AlongWithMove<'a> {
    /// The job's open offers withdrawn at this time (it leaves `searching`).
    pub offers_withdrawn_at: Option<DateTime<Utc>>,
    /// The event the move raises.
    pub event: Option<&'a NewEvent>,
    /// The settlement the move's ending owes, due at this time.
    pub settlement: Option<(Settlement, DateTime<Utc>)>,
}

/// Writes a job's new state, only if it is still in `from` (a job moved meanwhile is left
/// alone: None, so two moves racing from one state cannot both happen), and what goes `along`
/// with it, in one statement: the offers, the event and the settlement are written only if
/// the job moved.
pub async fn move_job_along<'a>(
    conn: &mut PgConnection,
    job: &'a JobRow,
    from: JobStatus,
    along: AlongWithMove<'a>,
) -> Result<Option<JobRow>, sqlx::Error> {
    let mut writes = Writes::new().named("moved", move |query: &mut QueryBuilder<'a, Postgres>| {
        query.push("UPDATE jobs SET ");
        query
            .separated(", ")
            .push("status = ")
            .push_bind_unseparated(job.status.as_str())
            .push("courier_id = ")
            .push_bind_unseparated(job.courier_id)
            .push("assigned_at = ")
            .push_bind_unseparated(job.assigned_at)
            .push("completed_at = ")
            .push_bind_unseparated(job.completed_at)
            .push("cancellation_reason = ")
            .push_bind_unseparated(job.cancellation_reason.as_deref())
            .push("proof = ")
            .push_bind_unseparated(job.proof.as_ref())
            .push("search_opened_at = ")
            .push_bind_unseparated(job.search_opened_at);
        query
            .push(" WHERE id = ")
            .push_bind(job.id)
            .push(" AND status = ")
            .push_bind(from.as_str())
            .push(" RETURNING *");
    });
    if let Some(at) = along.offers_withdrawn_at {
        let job_id = job.id;
        writes = writes.and(move |query: &mut QueryBuilder<'a, Postgres>| {
            query
                .push("UPDATE courier_offers SET status = 'withdrawn', answered_at = ")
                .push_bind(at)
                .push(" WHERE job_id = ")
                .push_bind(job_id)
                .push(" AND status = 'open' AND EXISTS (SELECT 1 FROM moved)");
        });
    }
    if let Some(event) = along.event {
        writes = writes.and(crate::events::insert_if(Uuid::new_v4(), event, "moved"));
    }
    if let Some((operation, due_at)) = along.settlement {
        let job_id = job.id;
        writes = writes.and(move |query: &mut QueryBuilder<'a, Postgres>| {
            query
                .push("INSERT INTO job_settlements (job_id, operation, due_at) SELECT ")
                .push_bind(job_id)
                .push(", ")
                .push_bind(operation.as_str())
                .push(", ")
                .push_bind(due_at)
                .push(
                    " FROM moved ON CONFLICT (job_id) DO UPDATE SET \
                     operation = EXCLUDED.operation, due_at = EXCLUDED.due_at, \
                     leased_until = NULL",
                );
        });
    }
    writes.fetch_optional(conn, "SELECT * FROM moved").await
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
