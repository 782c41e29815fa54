//! What reconciliation reads of our side (charges, bookings between their phases, calls past
//! the retry count) and what it found (`payment_mismatches`).

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use courier_domain::Environment;
use courier_domain::charge::{ChargeStatus, Move};

use crate::charges::ChargeRow;
use crate::text_columns::Text;

/// The environment's charges raised at or after `since`, oldest first.
pub async fn charges_since(
    pool: &PgPool,
    environment: Environment,
    since: DateTime<Utc>,
) -> Result<Vec<ChargeRow>, sqlx::Error> {
    sqlx::query_as!(
        ChargeRow,
        "SELECT id, merchant_id, environment AS \"environment: Text<Environment>\", job_id, payment_method_id, status AS \"status: Text<ChargeStatus>\", currency, amount_minor, refunded_amount_minor, authorisation_ref, payment_ref, after_hold, decline_code, last_error, raised_at, authorised_at, captured_at, voided_at, failed_at, refunded_at, updated_at, hold_key, provider_failures \
         FROM charges WHERE environment = $1 AND raised_at >= $2 ORDER BY raised_at",
        environment.as_str(),
        since,
    )
    .fetch_all(pool)
    .await
}

/// Of the provider references `references`, those a charge of the environment was authorised
/// with, and the hold keys of `hold_keys` a charge or a booking between its phases carries:
/// what the provider's payments belong to.
pub async fn known_payments(
    pool: &PgPool,
    environment: Environment,
    references: &[String],
    hold_keys: &[String],
) -> Result<(Vec<String>, Vec<String>), sqlx::Error> {
    let known_references = sqlx::query_scalar!(
        "SELECT authorisation_ref AS \"reference!\" FROM charges \
         WHERE environment = $1 AND authorisation_ref = ANY($2)",
        environment.as_str(),
        references,
    )
    .fetch_all(pool)
    .await?;
    let known_keys = sqlx::query_scalar!(
        "SELECT hold_key AS \"hold_key!\" FROM charges WHERE environment = $1 AND hold_key = ANY($2) \
         UNION SELECT hold_key FROM booking_attempts WHERE environment = $1 AND hold_key = ANY($2)",
        environment.as_str(),
        hold_keys,
    )
    .fetch_all(pool)
    .await?;
    Ok((known_references, known_keys))
}

/// A provider call made again and again without an answer.
#[derive(Clone, Debug)]
pub struct UnansweredCall {
    pub charge_id: Uuid,
    pub operation: Move,
    pub attempts: i32,
    pub status: ChargeStatus,
    pub authorisation_ref: Option<String>,
}

/// The environment's provider calls made `attempts` times or more without an answer.
pub async fn unanswered_calls(
    pool: &PgPool,
    environment: Environment,
    attempts: i32,
) -> Result<Vec<UnansweredCall>, sqlx::Error> {
    sqlx::query_as!(
        UnansweredCall,
        "SELECT r.charge_id, r.operation AS \"operation: Text<Move>\", r.attempts, \
         c.status AS \"status: Text<ChargeStatus>\", c.authorisation_ref \
         FROM charge_retries r JOIN charges c ON c.id = r.charge_id \
         WHERE c.environment = $1 AND r.attempts >= $2 ORDER BY r.charge_id",
        environment.as_str(),
        attempts,
    )
    .fetch_all(pool)
    .await
}

/// A disagreement found by a check.
#[derive(Clone, Debug)]
pub struct NewMismatch {
    pub kind: String,
    pub subject: String,
    pub charge_id: Option<Uuid>,
    pub provider_ref: Option<String>,
    pub ours: String,
    pub theirs: String,
}

/// A recorded disagreement.
#[derive(Clone, Debug)]
pub struct MismatchRow {
    pub id: Uuid,
    pub environment: Environment,
    pub kind: String,
    pub subject: String,
    pub charge_id: Option<Uuid>,
    pub provider_ref: Option<String>,
    pub ours: String,
    pub theirs: String,
    pub first_seen_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
}

/// Records one check of the environment that started at `started`: each of `found` is opened
/// (or, open already, seen again), and every open mismatch about one of `checked` (subjects
/// the check compared), or of one of `whole_kinds` (kinds the check looked for everywhere),
/// that was not found again is resolved. A check that started before another recorded its
/// findings neither resolves nor rewrites them: what the later one saw is newer. Answers how
/// many are open.
pub async fn record_check(
    pool: &PgPool,
    environment: Environment,
    checked: &[String],
    whole_kinds: &[&str],
    found: &[NewMismatch],
    started: DateTime<Utc>,
) -> Result<i64, sqlx::Error> {
    let mut tx = pool.begin().await?;
    for mismatch in found {
        sqlx::query!(
            "INSERT INTO payment_mismatches AS m (id, environment, kind, subject, charge_id, \
             provider_ref, ours, theirs, first_seen_at, last_seen_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) \
             ON CONFLICT (environment, kind, subject) WHERE resolved_at IS NULL \
             DO UPDATE SET ours = EXCLUDED.ours, theirs = EXCLUDED.theirs, \
             provider_ref = EXCLUDED.provider_ref, last_seen_at = EXCLUDED.last_seen_at \
             WHERE m.last_seen_at <= EXCLUDED.last_seen_at",
            Uuid::new_v4(),
            environment.as_str(),
            mismatch.kind,
            mismatch.subject,
            mismatch.charge_id,
            mismatch.provider_ref,
            mismatch.ours,
            mismatch.theirs,
            started,
        )
        .execute(&mut *tx)
        .await?;
    }
    let whole_kinds: Vec<String> = whole_kinds.iter().map(|k| (*k).to_owned()).collect();
    sqlx::query!(
        "UPDATE payment_mismatches SET resolved_at = $3 \
         WHERE environment = $1 AND resolved_at IS NULL \
           AND (subject = ANY($2) OR kind = ANY($4)) AND last_seen_at < $3",
        environment.as_str(),
        checked,
        started,
        &whole_kinds,
    )
    .execute(&mut *tx)
    .await?;
    let open = sqlx::query_scalar!(
        "SELECT count(*) AS \"open!\" FROM payment_mismatches \
         WHERE environment = $1 AND resolved_at IS NULL",
        environment.as_str(),
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(open)
}

/// The open mismatches, newest first, up to `limit`.
pub async fn open_mismatches(pool: &PgPool, limit: i64) -> Result<Vec<MismatchRow>, sqlx::Error> {
    sqlx::query_as!(
        MismatchRow,
        "SELECT id, environment AS \"environment: Text<Environment>\", kind, subject, charge_id, \
         provider_ref, ours, theirs, first_seen_at, last_seen_at \
         FROM payment_mismatches WHERE resolved_at IS NULL \
         ORDER BY first_seen_at DESC, id LIMIT $1",
        limit,
    )
    .fetch_all(pool)
    .await
}
