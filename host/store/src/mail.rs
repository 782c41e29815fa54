//! The mail outbox (`mail_outbox`): mail owed to people, written in the transaction that owes
//! it, sent by whichever instance claims it.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

pub struct NewMail<'a> {
    pub id: Uuid,
    pub to_address: &'a str,
    pub subject: &'a str,
    pub body: &'a str,
    pub kind: &'a str,
    pub now: DateTime<Utc>,
}

/// Queues a mail, due at once.
pub async fn insert(conn: &mut PgConnection, mail: &NewMail<'_>) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO mail_outbox (id, to_address, subject, body, kind, status, due_at, created_at) \
         VALUES ($1, $2, $3, $4, $5, 'queued', $6, $6)",
        mail.id,
        mail.to_address,
        mail.subject,
        mail.body,
        mail.kind,
        mail.now,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The addresses of `merchant_id`'s owners.
pub async fn owner_addresses(
    conn: &mut PgConnection,
    merchant_id: Uuid,
) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT p.email FROM merchant_members t JOIN people p ON p.id = t.person_id \
         WHERE t.merchant_id = $1 AND t.role = 'owner' ORDER BY p.email_key",
        merchant_id,
    )
    .fetch_all(conn)
    .await
}

/// The addresses of `merchant_id`'s members whose role is one of `roles`.
pub async fn addresses_with_roles(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    roles: &[&str],
) -> Result<Vec<String>, sqlx::Error> {
    let roles: Vec<String> = roles.iter().map(|r| (*r).to_owned()).collect();
    sqlx::query_scalar!(
        "SELECT p.email FROM merchant_members t JOIN people p ON p.id = t.person_id \
         WHERE t.merchant_id = $1 AND t.role = ANY($2) ORDER BY p.email_key",
        merchant_id,
        &roles,
    )
    .fetch_all(conn)
    .await
}

/// A mail claimed for sending.
#[derive(Clone, Debug)]
pub struct DueMail {
    pub id: Uuid,
    pub to_address: String,
    pub subject: String,
    pub body: String,
    pub kind: String,
    pub attempts: i32,
}

/// Takes up to `limit` due mails for `lease`; another instance skips them meanwhile, and takes
/// them over if the lease runs out (this instance died mid-send).
pub async fn claim_due(
    pool: &PgPool,
    limit: i64,
    lease: std::time::Duration,
) -> Result<Vec<DueMail>, sqlx::Error> {
    sqlx::query_as!(
        DueMail,
        "UPDATE mail_outbox SET leased_until = now() + make_interval(secs => $2) \
         WHERE id IN ( \
           SELECT id FROM mail_outbox \
           WHERE status = 'queued' AND due_at <= now() \
             AND (leased_until IS NULL OR leased_until < now()) \
           ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED) \
         RETURNING id, to_address, subject, body, kind, attempts",
        limit,
        lease.as_secs_f64(),
    )
    .fetch_all(pool)
    .await
}

/// The relay took the mail.
pub async fn mark_sent(pool: &PgPool, id: Uuid, at: DateTime<Utc>) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE mail_outbox SET status = 'sent', attempts = attempts + 1, sent_at = $2, \
         leased_until = NULL, due_at = NULL, last_error = NULL \
         WHERE id = $1 AND status = 'queued'",
        id,
        at,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// An attempt failed: try again at `due_at`, or (with `due_at` None) give up.
pub async fn mark_attempt_failed(
    pool: &PgPool,
    id: Uuid,
    due_at: Option<DateTime<Utc>>,
    error: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE mail_outbox SET attempts = attempts + 1, last_error = $3, \
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
