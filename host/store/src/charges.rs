//! Charges: one per job, the moves that brought each where it is, and the provider calls to
//! try again.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool, Postgres, QueryBuilder};
use uuid::Uuid;

use courier_domain::Environment;
use courier_domain::charge::{ChargeStatus, Move};

use crate::text_columns::Text;

/// A charge as stored.
#[derive(Clone, Debug)]
pub struct ChargeRow {
    pub id: Uuid,
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub job_id: Uuid,
    pub payment_method_id: Uuid,
    pub status: ChargeStatus,
    pub currency: String,
    pub amount_minor: i64,
    pub refunded_amount_minor: i64,
    pub authorisation_ref: Option<String>,
    pub payment_ref: Option<String>,
    pub after_hold: Option<String>,
    pub decline_code: Option<String>,
    pub last_error: Option<String>,
    pub raised_at: DateTime<Utc>,
    pub authorised_at: Option<DateTime<Utc>>,
    pub captured_at: Option<DateTime<Utc>>,
    pub voided_at: Option<DateTime<Utc>>,
    pub failed_at: Option<DateTime<Utc>>,
    pub refunded_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
    /// The provider idempotency key of the hold, when the booking chose it.
    pub hold_key: Option<String>,
    /// Captures and releases the provider accepted, then reported failed: each makes the
    /// next request of that move under a key of its own.
    pub provider_failures: i32,
}

/// A provider call to try again.
#[derive(Clone, Debug)]
pub struct RetryRow {
    pub charge_id: Uuid,
    pub operation: Move,
    pub attempts: i32,
    pub due_at: DateTime<Utc>,
}

// ---- charges ---------------------------------------------------------------------------

/// Inserts a charge as it stands with the moves that brought it there, oldest first (the
/// first from no status), in one statement. False, and nothing written, when the job has a
/// charge already.
pub async fn raise_charge(
    conn: &mut PgConnection,
    c: &ChargeRow,
    moves: &[NewMove<'_>],
) -> Result<bool, sqlx::Error> {
    let from: Vec<Option<&str>> = moves
        .iter()
        .map(|m| m.from_status.map(ChargeStatus::as_str))
        .collect();
    let to: Vec<&str> = moves.iter().map(|m| m.to_status.as_str()).collect();
    let amounts: Vec<Option<i64>> = moves.iter().map(|m| m.amount_minor).collect();
    let provider_refs: Vec<Option<&str>> = moves.iter().map(|m| m.provider_ref).collect();
    let details: Vec<Option<&str>> = moves.iter().map(|m| m.detail).collect();
    let actors: Vec<&str> = moves.iter().map(|m| m.actor).collect();
    let ats: Vec<DateTime<Utc>> = moves.iter().map(|m| m.at).collect();
    let raised = sqlx::query!(
        "WITH raised AS ( \
           INSERT INTO charges (id, merchant_id, environment, job_id, payment_method_id, status, \
           currency, amount_minor, refunded_amount_minor, authorisation_ref, last_error, \
           raised_at, authorised_at, updated_at, hold_key) \
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) \
           ON CONFLICT (job_id) DO NOTHING RETURNING id) \
         INSERT INTO charge_moves (charge_id, from_status, to_status, amount_minor, \
           provider_ref, detail, actor, at) \
         SELECT raised.id, m.from_status, m.to_status, m.amount_minor, m.provider_ref, \
           m.detail, m.actor, m.at \
         FROM raised, UNNEST($16::text[], $17::text[], $18::int8[], $19::text[], $20::text[], \
           $21::text[], $22::timestamptz[]) WITH ORDINALITY \
           AS m(from_status, to_status, amount_minor, provider_ref, detail, actor, at, n) \
         ORDER BY m.n",
        c.id,
        c.merchant_id,
        c.environment.as_str(),
        c.job_id,
        c.payment_method_id,
        c.status.as_str(),
        &c.currency,
        c.amount_minor,
        c.refunded_amount_minor,
        c.authorisation_ref.as_deref(),
        c.last_error.as_deref(),
        c.raised_at,
        c.authorised_at,
        c.updated_at,
        c.hold_key.as_deref(),
        &from as &[Option<&str>],
        &to as &[&str],
        &amounts as &[Option<i64>],
        &provider_refs as &[Option<&str>],
        &details as &[Option<&str>],
        &actors as &[&str],
        &ats as &[DateTime<Utc>],
    )
    .execute(conn)
    .await?;
    Ok(raised.rows_affected() > 0)
}

/// Inserts the charges of jobs written by the same statement ([`crate::writes::Writes`]):
/// unlike [`raise_charge`], no charge can exist for such a job yet, so none is looked for. Goes
/// with [`insert_moves`] for the moves that brought it to its status.
pub fn insert_charges<'a>(
    charges: Vec<&'a ChargeRow>,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        query.push(
            "INSERT INTO charges (id, merchant_id, environment, job_id, payment_method_id, \
             status, currency, amount_minor, refunded_amount_minor, authorisation_ref, \
             last_error, raised_at, authorised_at, updated_at, hold_key) ",
        );
        query.push_values(charges, |mut row, c| {
            row.push_bind(c.id)
                .push_bind(c.merchant_id)
                .push_bind(c.environment.as_str())
                .push_bind(c.job_id)
                .push_bind(c.payment_method_id)
                .push_bind(c.status.as_str())
                .push_bind(&c.currency)
                .push_bind(c.amount_minor)
                .push_bind(c.refunded_amount_minor)
                .push_bind(c.authorisation_ref.as_deref())
                .push_bind(c.last_error.as_deref())
                .push_bind(c.raised_at)
                .push_bind(c.authorised_at)
                .push_bind(c.updated_at)
                .push_bind(c.hold_key.as_deref());
        });
    }
}

/// Records charges' moves, numbered in the order given, each charge's oldest first
/// ([`crate::writes::Writes`]).
pub fn insert_moves<'a>(
    moves: Vec<&'a NewMove<'a>>,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        query.push(
            "INSERT INTO charge_moves (charge_id, from_status, to_status, amount_minor, \
             provider_ref, detail, actor, at) ",
        );
        query.push_values(moves, |mut row, m| {
            row.push_bind(m.charge_id)
                .push_bind(m.from_status.map(ChargeStatus::as_str))
                .push_bind(m.to_status.as_str())
                .push_bind(m.amount_minor)
                .push_bind(m.provider_ref)
                .push_bind(m.detail)
                .push_bind(m.actor)
                .push_bind(m.at);
        });
    }
}

/// Writes a charge that moved: every field a move can change, its pending retry dropped (the
/// move settles it) and the move recorded, in one statement.
pub async fn write_move(
    conn: &mut PgConnection,
    c: &ChargeRow,
    m: &NewMove<'_>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "WITH moved AS (UPDATE charges SET status = $2, refunded_amount_minor = $3, authorisation_ref = $4, \
           payment_ref = $5, after_hold = $6, decline_code = $7, last_error = $8, \
           authorised_at = $9, captured_at = $10, voided_at = $11, failed_at = $12, \
           refunded_at = $13, updated_at = $14 \
           WHERE id = $1), \
         settled AS (DELETE FROM charge_retries WHERE charge_id = $1) \
         INSERT INTO charge_moves (charge_id, from_status, to_status, amount_minor, \
           provider_ref, detail, actor, at) VALUES ($1, $15, $16, $17, $18, $19, $20, $21)",
        c.id,
        c.status.as_str(),
        c.refunded_amount_minor,
        c.authorisation_ref.as_deref(),
        c.payment_ref.as_deref(),
        c.after_hold.as_deref(),
        c.decline_code.as_deref(),
        c.last_error.as_deref(),
        c.authorised_at,
        c.captured_at,
        c.voided_at,
        c.failed_at,
        c.refunded_at,
        c.updated_at,
        m.from_status.map(ChargeStatus::as_str),
        m.to_status.as_str(),
        m.amount_minor,
        m.provider_ref,
        m.detail,
        m.actor,
        m.at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Writes every field a move can change.
pub async fn update_charge(conn: &mut PgConnection, c: &ChargeRow) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE charges SET status = $2, refunded_amount_minor = $3, authorisation_ref = $4, \
           payment_ref = $5, after_hold = $6, decline_code = $7, last_error = $8, \
           authorised_at = $9, captured_at = $10, voided_at = $11, failed_at = $12, \
           refunded_at = $13, updated_at = $14, provider_failures = $15 \
         WHERE id = $1",
        c.id,
        c.status.as_str(),
        c.refunded_amount_minor,
        c.authorisation_ref.as_deref(),
        c.payment_ref.as_deref(),
        c.after_hold.as_deref(),
        c.decline_code.as_deref(),
        c.last_error.as_deref(),
        c.authorised_at,
        c.captured_at,
        c.voided_at,
        c.failed_at,
        c.refunded_at,
        c.updated_at,
        c.provider_failures,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The charge of a job, locked for the rest of the transaction.
pub async fn lock_charge_of_job(
    conn: &mut PgConnection,
    job_id: Uuid,
) -> Result<Option<ChargeRow>, sqlx::Error> {
    sqlx::query_as!(
        ChargeRow,
        "SELECT id, merchant_id, environment AS \"environment: Text<Environment>\", job_id, payment_method_id, status AS \"status: Text<ChargeStatus>\", currency, amount_minor, refunded_amount_minor, authorisation_ref, payment_ref, after_hold, decline_code, last_error, raised_at, authorised_at, captured_at, voided_at, failed_at, refunded_at, updated_at, hold_key, provider_failures \
         FROM charges WHERE job_id = $1 FOR UPDATE",
        job_id,
    )
        .fetch_optional(conn)
        .await
}

/// A charge, locked for the rest of the transaction.
pub async fn lock_charge(
    conn: &mut PgConnection,
    id: Uuid,
) -> Result<Option<ChargeRow>, sqlx::Error> {
    sqlx::query_as!(
        ChargeRow,
        "SELECT id, merchant_id, environment AS \"environment: Text<Environment>\", job_id, payment_method_id, status AS \"status: Text<ChargeStatus>\", currency, amount_minor, refunded_amount_minor, authorisation_ref, payment_ref, after_hold, decline_code, last_error, raised_at, authorised_at, captured_at, voided_at, failed_at, refunded_at, updated_at, hold_key, provider_failures \
         FROM charges WHERE id = $1 FOR UPDATE",
        id,
    )
        .fetch_optional(conn)
        .await
}

pub async fn charge(conn: &mut PgConnection, id: Uuid) -> Result<Option<ChargeRow>, sqlx::Error> {
    sqlx::query_as!(
        ChargeRow,
        "SELECT id, merchant_id, environment AS \"environment: Text<Environment>\", job_id, payment_method_id, status AS \"status: Text<ChargeStatus>\", currency, amount_minor, refunded_amount_minor, authorisation_ref, payment_ref, after_hold, decline_code, last_error, raised_at, authorised_at, captured_at, voided_at, failed_at, refunded_at, updated_at, hold_key, provider_failures \
         FROM charges WHERE id = $1",
        id,
    )
        .fetch_optional(conn)
        .await
}

pub async fn charge_of_job(
    conn: &mut PgConnection,
    job_id: Uuid,
) -> Result<Option<ChargeRow>, sqlx::Error> {
    sqlx::query_as!(
        ChargeRow,
        "SELECT id, merchant_id, environment AS \"environment: Text<Environment>\", job_id, payment_method_id, status AS \"status: Text<ChargeStatus>\", currency, amount_minor, refunded_amount_minor, authorisation_ref, payment_ref, after_hold, decline_code, last_error, raised_at, authorised_at, captured_at, voided_at, failed_at, refunded_at, updated_at, hold_key, provider_failures \
         FROM charges WHERE job_id = $1",
        job_id,
    )
        .fetch_optional(conn)
        .await
}

/// The merchant's most recent charges in an environment, newest first.
pub async fn recent_charges(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    environment: Environment,
    limit: i64,
) -> Result<Vec<ChargeRow>, sqlx::Error> {
    sqlx::query_as!(
        ChargeRow,
        "SELECT id, merchant_id, environment AS \"environment: Text<Environment>\", job_id, payment_method_id, status AS \"status: Text<ChargeStatus>\", currency, amount_minor, refunded_amount_minor, authorisation_ref, payment_ref, after_hold, decline_code, last_error, raised_at, authorised_at, captured_at, voided_at, failed_at, refunded_at, updated_at, hold_key, provider_failures \
         FROM charges WHERE merchant_id = $1 AND environment = $2 \
         ORDER BY raised_at DESC, id DESC LIMIT $3",
        merchant_id,
        environment.as_str(),
        limit,
    )
    .fetch_all(conn)
    .await
}

/// One recorded move of a charge.
#[derive(Clone, Copy, Debug)]
pub struct NewMove<'a> {
    pub charge_id: Uuid,
    pub from_status: Option<ChargeStatus>,
    pub to_status: ChargeStatus,
    pub amount_minor: Option<i64>,
    pub provider_ref: Option<&'a str>,
    pub detail: Option<&'a str>,
    pub actor: &'a str,
    pub at: DateTime<Utc>,
}

pub async fn record_move(conn: &mut PgConnection, m: &NewMove<'_>) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO charge_moves (charge_id, from_status, to_status, amount_minor, \
         provider_ref, detail, actor, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        m.charge_id,
        m.from_status.map(ChargeStatus::as_str),
        m.to_status.as_str(),
        m.amount_minor,
        m.provider_ref,
        m.detail,
        m.actor,
        m.at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

// ---- retries ---------------------------------------------------------------------------

/// Schedules (or reschedules) the charge's next attempt and releases any lease on it.
pub async fn schedule_retry(
    conn: &mut PgConnection,
    charge_id: Uuid,
    operation: Move,
    attempts: i32,
    due_at: DateTime<Utc>,
    last_error: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO charge_retries (charge_id, operation, attempts, due_at, last_error) \
         VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (charge_id) DO UPDATE SET operation = $2, attempts = $3, due_at = $4, \
         last_error = $5, leased_until = NULL",
        charge_id,
        operation.as_str(),
        attempts,
        due_at,
        last_error,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks a provider call as in flight, unless the same call already is: the charge's retry
/// row, due now but leased to the caller for `lease`, so that should the caller never record
/// the answer (it died), the retry worker makes the call again with the same key once the
/// lease runs out. `claimed`: the caller already holds the row's lease (the retry worker).
/// Answers how many calls were made before, or None when the same operation is in flight
/// under someone else's live lease (its caller records the answer).
pub async fn lease_call(
    conn: &mut PgConnection,
    charge_id: Uuid,
    operation: Move,
    lease: std::time::Duration,
    claimed: bool,
) -> Result<Option<i32>, sqlx::Error> {
    sqlx::query_scalar!(
        "INSERT INTO charge_retries AS r (charge_id, operation, attempts, due_at, leased_until) \
         VALUES ($1, $2, 0, now(), now() + make_interval(secs => $3)) \
         ON CONFLICT (charge_id) DO UPDATE SET operation = $2, due_at = now(), \
         leased_until = now() + make_interval(secs => $3) \
         WHERE $4 OR r.operation <> $2 OR r.leased_until IS NULL OR r.leased_until <= now() \
         RETURNING r.attempts",
        charge_id,
        operation.as_str(),
        lease.as_secs_f64(),
        claimed,
    )
    .fetch_optional(conn)
    .await
}

pub async fn delete_retry(conn: &mut PgConnection, charge_id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query!("DELETE FROM charge_retries WHERE charge_id = $1", charge_id,)
        .execute(conn)
        .await?;
    Ok(())
}

/// Claims up to `limit` due retries of charges in `environments` for `lease`: rows another
/// instance is claiming are skipped, and a claimed row is not due again until its lease runs
/// out (so an instance that dies mid-call leaves it to the others).
pub async fn claim_due_retries(
    pool: &PgPool,
    environments: &[&str],
    limit: i64,
    lease: std::time::Duration,
) -> Result<Vec<RetryRow>, sqlx::Error> {
    sqlx::query_as!(
        RetryRow,
        "UPDATE charge_retries SET leased_until = now() + make_interval(secs => $2) \
         WHERE charge_id IN ( \
           SELECT r.charge_id FROM charge_retries r JOIN charges c ON c.id = r.charge_id \
           WHERE r.due_at <= now() AND (r.leased_until IS NULL OR r.leased_until < now()) \
             AND c.environment = ANY($3) \
           ORDER BY r.due_at LIMIT $1 FOR UPDATE OF r SKIP LOCKED) \
         RETURNING charge_id, operation AS \"operation: Text<Move>\", attempts, due_at",
        limit,
        lease.as_secs_f64(),
        environments as &[&str],
    )
    .fetch_all(pool)
    .await
}

/// The charge whose payment the provider knows by `reference`, locked for the rest of the
/// transaction.
pub async fn lock_charge_by_authorisation(
    conn: &mut PgConnection,
    environment: Environment,
    reference: &str,
) -> Result<Option<ChargeRow>, sqlx::Error> {
    sqlx::query_as!(
        ChargeRow,
        "SELECT id, merchant_id, environment AS \"environment: Text<Environment>\", job_id, payment_method_id, status AS \"status: Text<ChargeStatus>\", currency, amount_minor, refunded_amount_minor, authorisation_ref, payment_ref, after_hold, decline_code, last_error, raised_at, authorised_at, captured_at, voided_at, failed_at, refunded_at, updated_at, hold_key, provider_failures \
         FROM charges WHERE environment = $1 AND authorisation_ref = $2 FOR UPDATE",
        environment.as_str(),
        reference,
    )
        .fetch_optional(conn)
        .await
}

// ---- Across merchants (the operator console) -----------------------------------------------

/// A charge as the operator's list shows it, with its merchant's name.
#[derive(Clone, Debug)]
pub struct ListedCharge {
    pub id: Uuid,
    pub merchant_id: Uuid,
    pub merchant_name: String,
    pub environment: Environment,
    pub job_id: Uuid,
    pub status: ChargeStatus,
    pub currency: String,
    pub amount_minor: i64,
    pub refunded_amount_minor: i64,
    pub payment_ref: Option<String>,
    pub decline_code: Option<String>,
    pub raised_at: DateTime<Utc>,
}

/// Which charges the operator's list shows: each filter is optional; `before` pages on
/// (`raised_at`, `id`), newest first.
#[derive(Clone, Debug, Default)]
pub struct ChargeFilter {
    pub merchant_id: Option<Uuid>,
    pub environment: Option<Environment>,
    pub status: Option<ChargeStatus>,
    pub before: Option<(DateTime<Utc>, Uuid)>,
}

/// Every merchant's charges that `filter` lets through, newest first, at most `limit`.
pub async fn charges_across(
    pool: &PgPool,
    filter: &ChargeFilter,
    limit: i64,
) -> Result<Vec<ListedCharge>, sqlx::Error> {
    let (before_at, before_id) = filter.before.unzip();
    sqlx::query_as!(
        ListedCharge,
        "SELECT c.id, c.merchant_id, m.name AS merchant_name, \
           c.environment AS \"environment: Text<Environment>\", c.job_id, \
           c.status AS \"status: Text<ChargeStatus>\", c.currency, c.amount_minor, \
           c.refunded_amount_minor, c.payment_ref, c.decline_code, c.raised_at \
         FROM charges c JOIN merchants m ON m.id = c.merchant_id \
         WHERE ($1::text IS NULL OR c.environment = $1) \
           AND ($2::text IS NULL OR c.status = $2) \
           AND ($3::timestamptz IS NULL OR (c.raised_at, c.id) < ($3, $4)) \
           AND ($6::uuid IS NULL OR c.merchant_id = $6) \
         ORDER BY c.raised_at DESC, c.id DESC LIMIT $5",
        filter.environment.map(Environment::as_str),
        filter.status.map(ChargeStatus::as_str),
        before_at,
        before_id,
        limit,
        filter.merchant_id,
    )
    .fetch_all(pool)
    .await
}

/// A refund as the operator's list shows it.
#[derive(Clone, Debug)]
pub struct ListedRefund {
    pub id: Uuid,
    pub charge_id: Uuid,
    pub merchant_name: String,
    pub environment: Environment,
    pub currency: String,
    pub amount_minor: i64,
    pub status: String,
    pub operator: String,
    pub decline_code: Option<String>,
    pub last_error: Option<String>,
    pub requested_at: DateTime<Utc>,
    pub settled_at: Option<DateTime<Utc>>,
}

/// The newest refunds of every merchant, at most `limit`.
pub async fn recent_refunds(pool: &PgPool, limit: i64) -> Result<Vec<ListedRefund>, sqlx::Error> {
    sqlx::query_as!(
        ListedRefund,
        "SELECT r.id, r.charge_id, m.name AS merchant_name, \
           c.environment AS \"environment: Text<Environment>\", c.currency, r.amount_minor, \
           r.status, r.operator, r.decline_code, r.last_error, r.requested_at, r.settled_at \
         FROM refunds r JOIN charges c ON c.id = r.charge_id \
           JOIN merchants m ON m.id = c.merchant_id \
         ORDER BY r.requested_at DESC, r.id DESC LIMIT $1",
        limit,
    )
    .fetch_all(pool)
    .await
}

/// A move of a charge, as the merchant's console lists it.
#[derive(Clone, Debug)]
pub struct ChargeMoveRow {
    pub from_status: Option<String>,
    pub to_status: String,
    pub amount_minor: Option<i64>,
    pub detail: Option<String>,
    pub actor: String,
    pub at: DateTime<Utc>,
}

/// Every move of the charge, oldest first.
pub async fn moves_of(pool: &PgPool, charge_id: Uuid) -> Result<Vec<ChargeMoveRow>, sqlx::Error> {
    sqlx::query_as!(
        ChargeMoveRow,
        "SELECT from_status, to_status, amount_minor, detail, actor, at FROM charge_moves \
         WHERE charge_id = $1 ORDER BY id",
        charge_id,
    )
    .fetch_all(pool)
    .await
}
