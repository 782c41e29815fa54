//! Customer texts: the outbox rows and the job's `customer_notified_at`.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use courier_domain::Environment;

/// A text to record.
pub struct NewText<'a> {
    pub id: Uuid,
    pub job_id: Uuid,
    pub kind: &'a str,
    pub environment: Environment,
    pub to_phone: &'a str,
    pub sender: &'a str,
    pub body: &'a str,
    pub status: &'a str,
    pub skip_reason: Option<&'a str>,
    pub created_at: DateTime<Utc>,
}

/// A queued text, claimed for sending.
#[derive(Debug, sqlx::FromRow)]
pub struct DueText {
    pub id: Uuid,
    pub job_id: Uuid,
    pub to_phone: String,
    pub sender: String,
    pub body: String,
    pub attempts: i32,
}

/// Records a text unless the job already has one of this kind; true when recorded.
pub async fn insert(conn: &mut PgConnection, text: &NewText<'_>) -> Result<bool, sqlx::Error> {
    let done = sqlx::query!(
        "INSERT INTO customer_texts (id, job_id, kind, environment, to_phone, sender, body, \
         status, skip_reason, due_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, \
                 CASE WHEN $8 = 'queued' THEN $10::timestamptz END, $10) \
         ON CONFLICT (job_id, kind) DO NOTHING",
        text.id,
        text.job_id,
        text.kind,
        text.environment.as_str(),
        text.to_phone,
        text.sender,
        text.body,
        text.status,
        text.skip_reason,
        text.created_at,
    )
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Sets the job's `customer_notified_at`, keeping the first time if it was set already.
pub async fn mark_job_notified(
    conn: &mut PgConnection,
    job_id: Uuid,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE jobs SET customer_notified_at = COALESCE(customer_notified_at, $2) WHERE id = $1",
        job_id,
        at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Takes up to `limit` due texts for `lease`; another instance skips them meanwhile, and
/// takes them over if the lease runs out (this instance died mid-send).
pub async fn claim_due(
    pool: &PgPool,
    limit: i64,
    lease: std::time::Duration,
) -> Result<Vec<DueText>, sqlx::Error> {
    sqlx::query_as!(
        DueText,
        "UPDATE customer_texts SET leased_until = now() + make_interval(secs => $2) \
         WHERE id IN ( \
           SELECT id FROM customer_texts \
           WHERE status = 'queued' AND due_at <= now() \
             AND (leased_until IS NULL OR leased_until < now()) \
           ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED) \
         RETURNING id, job_id, to_phone, sender, body, attempts",
        limit,
        lease.as_secs_f64(),
    )
    .fetch_all(pool)
    .await
}

/// The gateway took the text: it is sent, and the job says when.
pub async fn mark_sent(
    pool: &PgPool,
    text: &DueText,
    provider_message_id: Option<&str>,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    let updated = sqlx::query!(
        "UPDATE customer_texts SET status = 'sent', attempts = attempts + 1, sent_at = $2, \
         provider_message_id = $3, leased_until = NULL, due_at = NULL, last_error = NULL \
         WHERE id = $1 AND status = 'queued'",
        text.id,
        at,
        provider_message_id,
    )
    .execute(&mut *tx)
    .await?;
    if updated.rows_affected() == 1 {
        mark_job_notified(&mut tx, text.job_id, at).await?;
    }
    tx.commit().await
}

/// An attempt failed: try again at `due_at`, or (with `due_at` None) give up.
pub async fn mark_attempt_failed(
    pool: &PgPool,
    id: Uuid,
    due_at: Option<DateTime<Utc>>,
    error: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE customer_texts SET attempts = attempts + 1, last_error = $3, \
         leased_until = NULL, due_at = $2, \
         status = CASE WHEN $2::timestamptz IS NULL THEN 'failed' ELSE status END \
         WHERE id = $1 AND status = 'queued'",
        id,
        due_at,
        error,
    )
    .execute(pool)
    .await?;
    Ok(())
}
