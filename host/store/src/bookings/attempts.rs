//! Bookings between their phases (`booking_attempts`): written with the key's claim and the
//! quote's reservation, deleted with the outcome.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool, Postgres, QueryBuilder};
use uuid::Uuid;

use courier_domain::Environment;

use crate::text_columns::Text;

/// A booking whose card hold was asked for, and whose outcome is not written yet.
#[derive(Clone, Debug)]
pub struct AttemptRow {
    pub id: Uuid,
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub idempotency_key: String,
    pub quote_id: Uuid,
    pub payment_method_id: Uuid,
    pub hold_key: String,
    /// The prepared job (`JobRow` as JSON).
    pub job: serde_json::Value,
    pub created_at: DateTime<Utc>,
    /// Times the attempt was claimed after its lease ran out.
    pub recoveries: i32,
    /// Marked for abandoning: it only ever finishes as abandoned, its hold released.
    pub abandoning: bool,
    /// Older than the bound the claim was given: to be abandoned, not tried again.
    pub overdue: bool,
}

/// Inserts attempts, each leased to the request that makes it for `lease` from the
/// database's clock, the clock every claim compares with ([`crate::writes::Writes`]).
pub fn insert_attempts<'a>(
    attempts: Vec<&'a AttemptRow>,
    lease: std::time::Duration,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        query.push(
            "INSERT INTO booking_attempts (id, merchant_id, environment, idempotency_key, \
             quote_id, payment_method_id, hold_key, job, created_at, leased_until) ",
        );
        query.push_values(attempts, |mut row, a| {
            row.push_bind(a.id)
                .push_bind(a.merchant_id)
                .push_bind(a.environment.as_str())
                .push_bind(&a.idempotency_key)
                .push_bind(a.quote_id)
                .push_bind(a.payment_method_id)
                .push_bind(&a.hold_key)
                .push_bind(&a.job)
                .push_bind(a.created_at)
                .push("now() + make_interval(secs => ")
                .push_bind_unseparated(lease.as_secs_f64())
                .push_unseparated(")");
        });
    }
}

pub fn delete_attempt<'a>(id: Uuid) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        query
            .push("DELETE FROM booking_attempts WHERE id = ")
            .push_bind(id);
    }
}

/// Makes a reserved quote bookable again (its booking was declined) ([`crate::writes::Writes`]).
pub fn release_quote<'a>(
    quote_id: Uuid,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        query
            .push("UPDATE quotes SET used_at = NULL WHERE id = ")
            .push_bind(quote_id);
    }
}

/// The attempt, locked for the rest of the transaction; None once its outcome is written.
pub async fn lock_attempt(
    conn: &mut PgConnection,
    id: Uuid,
) -> Result<Option<AttemptRow>, sqlx::Error> {
    sqlx::query_as!(
        AttemptRow,
        "SELECT id, merchant_id, environment AS \"environment: Text<Environment>\", idempotency_key, quote_id, payment_method_id, hold_key, job, created_at, recoveries, abandoning_since IS NOT NULL AS \"abandoning!\", false AS \"overdue!\" FROM booking_attempts WHERE id = $1 FOR UPDATE",
        id,
    )
    .fetch_optional(conn)
    .await
}

/// Whether a booking between its phases asked for the hold `hold_key` in `environment`.
pub async fn holds_under(
    conn: &mut PgConnection,
    environment: Environment,
    hold_key: &str,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT EXISTS (SELECT 1 FROM booking_attempts \
         WHERE environment = $1 AND hold_key = $2) AS \"exists!\"",
        environment.as_str(),
        hold_key,
    )
    .fetch_one(conn)
    .await
}

/// Marks the attempt for abandoning (once; the mark stays), on `conn`'s transaction. False
/// when the attempt is gone: its outcome was written meanwhile, and nothing is to be undone.
pub async fn mark_abandoning(conn: &mut PgConnection, id: Uuid) -> Result<bool, sqlx::Error> {
    let marked = sqlx::query_scalar!(
        "UPDATE booking_attempts SET abandoning_since = coalesce(abandoning_since, now()) \
         WHERE id = $1 RETURNING id",
        id,
    )
    .fetch_optional(conn)
    .await?;
    Ok(marked.is_some())
}

/// Claims one attempt of `environments` whose lease ran out (its request died or lost the
/// provider's answer), leasing it to the caller for `lease` from now, when its work starts;
/// an attempt another instance is claiming is skipped. `overdue` says whether it was made
/// more than `give_up_after` ago. Both times are the database's.
pub async fn claim_interrupted(
    pool: &PgPool,
    environments: &[&str],
    lease: std::time::Duration,
    give_up_after: std::time::Duration,
) -> Result<Option<AttemptRow>, sqlx::Error> {
    sqlx::query_as!(
        AttemptRow,
        "UPDATE booking_attempts SET leased_until = now() + make_interval(secs => $2), \
         recoveries = recoveries + 1 \
         WHERE id = ( \
           SELECT id FROM booking_attempts \
           WHERE leased_until < now() AND environment = ANY($1) \
           ORDER BY leased_until LIMIT 1 FOR UPDATE SKIP LOCKED) \
         RETURNING id, merchant_id, environment AS \"environment: Text<Environment>\", idempotency_key, quote_id, payment_method_id, hold_key, job, created_at, recoveries, abandoning_since IS NOT NULL AS \"abandoning!\", created_at < now() - make_interval(secs => $3) AS \"overdue!\"",
        environments as &[&str],
        lease.as_secs_f64(),
        give_up_after.as_secs_f64(),
    )
    .fetch_optional(pool)
    .await
}

/// A booking between its phases, as operators see it.
#[derive(Clone, Debug)]
pub struct UnfinishedAttempt {
    pub id: Uuid,
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub idempotency_key: String,
    pub created_at: DateTime<Utc>,
    pub leased_until: DateTime<Utc>,
    pub recoveries: i32,
    pub abandoning_since: Option<DateTime<Utc>>,
}

/// Every booking between its phases, oldest first, up to `limit`.
pub async fn unfinished(pool: &PgPool, limit: i64) -> Result<Vec<UnfinishedAttempt>, sqlx::Error> {
    sqlx::query_as!(
        UnfinishedAttempt,
        "SELECT id, merchant_id, environment AS \"environment: Text<Environment>\", idempotency_key, created_at, leased_until, recoveries, abandoning_since \
         FROM booking_attempts ORDER BY created_at LIMIT $1",
        limit,
    )
    .fetch_all(pool)
    .await
}

/// The stored answer of a key, once its booking is settled.
pub async fn stored_response(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    environment: Environment,
    key: &str,
) -> Result<Option<(i32, serde_json::Value)>, sqlx::Error> {
    let row = sqlx::query!(
        "SELECT response_status, response_body FROM idempotency_keys \
         WHERE merchant_id = $1 AND environment = $2 AND key = $3",
        merchant_id,
        environment.as_str(),
        key,
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.and_then(|r| r.response_status.zip(r.response_body)))
}
