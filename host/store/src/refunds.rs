//! Refunds (`refunds`): written before the provider is asked, settled with its answer.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use courier_domain::Environment;

/// A refund asked for by an operator.
#[derive(Clone, Debug)]
pub struct RefundRow {
    pub id: Uuid,
    pub charge_id: Uuid,
    pub amount_minor: i64,
    /// The provider idempotency key, fixed when the refund was asked for.
    pub idempotency_key: String,
    /// `requested`, `succeeded` or `declined`.
    pub status: String,
    pub operator: String,
    pub provider_ref: Option<String>,
    pub decline_code: Option<String>,
    pub attempts: i32,
}

pub const REQUESTED: &str = "requested";
pub const SUCCEEDED: &str = "succeeded";
pub const DECLINED: &str = "declined";

/// Writes a refund under the caller's `request_key`, requested and leased to its caller for
/// `lease`; should the caller never settle it, the retry worker takes it up once the lease has
/// run out. False when another refund holds `request_key` already (nothing written).
pub async fn insert(
    conn: &mut PgConnection,
    refund: &RefundRow,
    request_key: &str,
    lease: std::time::Duration,
) -> Result<bool, sqlx::Error> {
    let written = sqlx::query!(
        "INSERT INTO refunds (id, charge_id, amount_minor, idempotency_key, status, operator, \
         requested_at, leased_until, due_at, request_key) \
         VALUES ($1, $2, $3, $4, 'requested', $5, now(), now() + make_interval(secs => $6), \
         now(), $7) \
         ON CONFLICT (request_key) WHERE request_key IS NOT NULL DO NOTHING",
        refund.id,
        refund.charge_id,
        refund.amount_minor,
        refund.idempotency_key,
        refund.operator,
        lease.as_secs_f64(),
        request_key,
    )
    .execute(conn)
    .await?;
    Ok(written.rows_affected() == 1)
}

/// The refund asked for under the caller's `request_key`, whichever its charge.
pub async fn by_request_key(
    conn: &mut PgConnection,
    request_key: &str,
) -> Result<Option<RefundRow>, sqlx::Error> {
    sqlx::query_as!(
        RefundRow,
        "SELECT id, charge_id, amount_minor, idempotency_key, status, operator, provider_ref, \
         decline_code, attempts FROM refunds WHERE request_key = $1",
        request_key,
    )
    .fetch_optional(conn)
    .await
}

/// The charge's refunds not settled yet (the charge locked by the caller), oldest first.
pub async fn unsettled_of_charge(
    conn: &mut PgConnection,
    charge_id: Uuid,
) -> Result<Vec<RefundRow>, sqlx::Error> {
    sqlx::query_as!(
        RefundRow,
        "SELECT id, charge_id, amount_minor, idempotency_key, status, operator, provider_ref, \
         decline_code, attempts FROM refunds WHERE charge_id = $1 AND status = 'requested' \
         ORDER BY requested_at, id",
        charge_id,
    )
    .fetch_all(conn)
    .await
}

/// Leases an unsettled refund to the caller for `lease` (its call is about to be made).
/// None when it is settled, or leased to another caller whose lease still runs.
pub async fn lease(
    conn: &mut PgConnection,
    id: Uuid,
    lease: std::time::Duration,
) -> Result<Option<RefundRow>, sqlx::Error> {
    sqlx::query_as!(
        RefundRow,
        "UPDATE refunds SET leased_until = now() + make_interval(secs => $2) \
         WHERE id = $1 AND status = 'requested' \
           AND (leased_until IS NULL OR leased_until < now()) \
         RETURNING id, charge_id, amount_minor, idempotency_key, status, operator, \
         provider_ref, decline_code, attempts",
        id,
        lease.as_secs_f64(),
    )
    .fetch_optional(conn)
    .await
}

/// The refund, locked for the rest of the transaction.
pub async fn lock(conn: &mut PgConnection, id: Uuid) -> Result<Option<RefundRow>, sqlx::Error> {
    sqlx::query_as!(
        RefundRow,
        "SELECT id, charge_id, amount_minor, idempotency_key, status, operator, provider_ref, \
         decline_code, attempts FROM refunds WHERE id = $1 FOR UPDATE",
        id,
    )
    .fetch_optional(conn)
    .await
}

/// Settles a refund: `succeeded` with the provider's reference, or `declined` with its code.
pub async fn settle(
    conn: &mut PgConnection,
    id: Uuid,
    status: &str,
    provider_ref: Option<&str>,
    decline_code: Option<&str>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE refunds SET status = $2, provider_ref = $3, decline_code = $4, \
         settled_at = now(), leased_until = NULL, due_at = NULL WHERE id = $1",
        id,
        status,
        provider_ref,
        decline_code,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Records a call that got no answer, or an answer that the provider will confirm later (its
/// `pending_ref`, which the confirmation names): asked again at `due_at`, by whoever comes
/// first.
pub async fn unanswered(
    conn: &mut PgConnection,
    id: Uuid,
    attempts: i32,
    due_at: DateTime<Utc>,
    last_error: &str,
    pending_ref: Option<&str>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE refunds SET attempts = $2, due_at = $3, last_error = $4, leased_until = NULL, \
         provider_ref = COALESCE($5, provider_ref) WHERE id = $1",
        id,
        attempts,
        due_at,
        last_error,
        pending_ref,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Claims up to `limit` unanswered refunds of charges in `environments` that are due, leasing
/// each for `lease`; a refund another instance holds is skipped.
pub async fn claim_due(
    pool: &PgPool,
    environments: &[&str],
    limit: i64,
    lease: std::time::Duration,
) -> Result<Vec<RefundRow>, sqlx::Error> {
    sqlx::query_as!(
        RefundRow,
        "UPDATE refunds SET leased_until = now() + make_interval(secs => $2) \
         WHERE id IN ( \
           SELECT r.id FROM refunds r JOIN charges c ON c.id = r.charge_id \
           WHERE r.status = 'requested' AND r.due_at <= now() \
             AND (r.leased_until IS NULL OR r.leased_until < now()) \
             AND c.environment = ANY($3) \
           ORDER BY r.due_at LIMIT $1 FOR UPDATE OF r SKIP LOCKED) \
         RETURNING id, charge_id, amount_minor, idempotency_key, status, operator, \
         provider_ref, decline_code, attempts",
        limit,
        lease.as_secs_f64(),
        environments as &[&str],
    )
    .fetch_all(pool)
    .await
}

/// A refund asked again and again without an answer, for reconciliation.
#[derive(Clone, Debug)]
pub struct UnansweredRefund {
    pub id: Uuid,
    pub charge_id: Uuid,
    pub amount_minor: i64,
    pub attempts: i32,
}

/// The environment's refunds asked `attempts` times or more without an answer.
pub async fn unanswered_in(
    pool: &PgPool,
    environment: Environment,
    attempts: i32,
) -> Result<Vec<UnansweredRefund>, sqlx::Error> {
    sqlx::query_as!(
        UnansweredRefund,
        "SELECT r.id, r.charge_id, r.amount_minor, r.attempts FROM refunds r \
         JOIN charges c ON c.id = r.charge_id \
         WHERE c.environment = $1 AND r.status = 'requested' AND r.attempts >= $2 \
         ORDER BY r.requested_at",
        environment.as_str(),
        attempts,
    )
    .fetch_all(pool)
    .await
}

/// The refund whose pending answer named `reference`.
pub async fn pending(
    conn: &mut PgConnection,
    environment: Environment,
    reference: &str,
) -> Result<Option<RefundRow>, sqlx::Error> {
    sqlx::query_as!(
        RefundRow,
        "SELECT r.id, r.charge_id, r.amount_minor, r.idempotency_key, r.status, r.operator, \
         r.provider_ref, r.decline_code, r.attempts FROM refunds r \
         JOIN charges c ON c.id = r.charge_id \
         WHERE r.provider_ref = $2 AND c.environment = $1",
        environment.as_str(),
        reference,
    )
    .fetch_optional(conn)
    .await
}
