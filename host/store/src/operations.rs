//! What the operators' desk reads across jobs, couriers, merchants and endpoints: what needs
//! a person now, and search.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use courier_domain::dispatch::CourierStatus;
use courier_domain::{Environment, JobStatus};

use crate::text_columns::Text;

/// A job searching for a courier, with when its search fails.
#[derive(Clone, Debug)]
pub struct SearchNearDeadline {
    pub id: Uuid,
    pub reference: String,
    pub market_id: String,
    pub merchant_id: Uuid,
    pub merchant_name: String,
    pub environment: Environment,
    /// When it became due for a courier: searching, scheduled and ready, the latest.
    pub due_at: DateTime<Utc>,
    pub offered: bool,
}

/// Jobs searching (of `environment` only, when given) that became due at or before
/// `due_by`, the earliest first, up to `limit`.
pub async fn searches_due_by(
    pool: &PgPool,
    due_by: DateTime<Utc>,
    environment: Option<Environment>,
    limit: i64,
) -> Result<Vec<SearchNearDeadline>, sqlx::Error> {
    // The dispatch deadline's own measure (`claim_overdue_searches`).
    sqlx::query_as!(
        SearchNearDeadline,
        "SELECT j.id, j.reference, j.market_id, j.merchant_id, m.name AS merchant_name, \
           j.environment AS \"environment: Text<Environment>\", \
           greatest(coalesce(j.search_opened_at, j.search_opens_at, j.booked_at), \
                    j.scheduled_for, j.pickup_ready_at) AS \"due_at!\", \
           EXISTS (SELECT 1 FROM courier_offers o WHERE o.job_id = j.id \
                   AND o.status = 'open') AS \"offered!\" \
         FROM jobs j JOIN merchants m ON m.id = j.merchant_id \
         WHERE j.status = 'searching' AND ($2::text IS NULL OR j.environment = $2) \
           AND greatest(coalesce(j.search_opened_at, j.search_opens_at, j.booked_at), \
                        j.scheduled_for, j.pickup_ready_at) <= $1 \
         ORDER BY 7, j.id LIMIT $3",
        due_by,
        environment.map(Environment::as_str),
        limit,
    )
    .fetch_all(pool)
    .await
}

/// A courier who cannot be reached for the jobs it holds: offline or suspended.
#[derive(Clone, Debug)]
pub struct CourierAwayWithJobs {
    pub id: Uuid,
    pub name: String,
    pub phone: String,
    pub market_id: String,
    pub status: CourierStatus,
    pub jobs: i64,
    /// When its position was last seen.
    pub seen_at: Option<DateTime<Utc>>,
}

/// Couriers offline or suspended with jobs assigned or in transit, the most jobs first.
pub async fn couriers_away_with_jobs(
    pool: &PgPool,
    limit: i64,
) -> Result<Vec<CourierAwayWithJobs>, sqlx::Error> {
    sqlx::query_as!(
        CourierAwayWithJobs,
        "SELECT c.id, c.name, c.phone, c.market_id, \
           c.status AS \"status: Text<CourierStatus>\", count(j.id) AS \"jobs!\", \
           max(p.seen_at) AS seen_at \
         FROM couriers c JOIN jobs j ON j.courier_id = c.id \
           AND j.status IN ('assigned', 'in_transit') \
         LEFT JOIN courier_positions p ON p.courier_id = c.id \
         WHERE NOT c.online OR c.status <> 'active' \
         GROUP BY c.id ORDER BY 6 DESC, c.name, c.id LIMIT $1",
        limit,
    )
    .fetch_all(pool)
    .await
}

/// A merchant's webhook endpoint that stopped being sent to.
#[derive(Clone, Debug)]
pub struct SuspendedEndpoint {
    pub id: Uuid,
    pub merchant_id: Uuid,
    pub merchant_name: String,
    pub environment: Environment,
    pub url: String,
    pub consecutive_failures: i32,
    pub last_failed_at: Option<DateTime<Utc>>,
}

/// Suspended webhook endpoints (of `environment` only, when given), the latest failed first.
pub async fn suspended_endpoints(
    pool: &PgPool,
    environment: Option<Environment>,
    limit: i64,
) -> Result<Vec<SuspendedEndpoint>, sqlx::Error> {
    sqlx::query_as!(
        SuspendedEndpoint,
        "SELECT w.id, w.merchant_id, m.name AS merchant_name, \
           w.environment AS \"environment: Text<Environment>\", w.url, \
           w.consecutive_failures, w.last_failed_at \
         FROM webhook_endpoints w JOIN merchants m ON m.id = w.merchant_id \
         WHERE w.status = 'suspended' AND ($1::text IS NULL OR w.environment = $1) \
         ORDER BY w.last_failed_at DESC NULLS LAST, w.id LIMIT $2",
        environment.map(Environment::as_str),
        limit,
    )
    .fetch_all(pool)
    .await
}

/// A job found by its reference.
#[derive(Clone, Debug)]
pub struct FoundJob {
    pub id: Uuid,
    pub reference: String,
    pub merchant_name: String,
    pub environment: Environment,
    pub status: JobStatus,
    pub booked_at: DateTime<Utc>,
}

/// The job with `reference` (as stored: upper case).
pub async fn job_by_reference(
    pool: &PgPool,
    reference: &str,
) -> Result<Option<FoundJob>, sqlx::Error> {
    sqlx::query_as!(
        FoundJob,
        "SELECT j.id, j.reference, m.name AS merchant_name, \
           j.environment AS \"environment: Text<Environment>\", \
           j.status AS \"status: Text<JobStatus>\", j.booked_at \
         FROM jobs j JOIN merchants m ON m.id = j.merchant_id \
         WHERE j.reference = $1",
        reference,
    )
    .fetch_optional(pool)
    .await
}

/// A merchant found by name.
#[derive(Clone, Debug)]
pub struct FoundMerchant {
    pub id: Uuid,
    pub name: String,
    pub created_at: DateTime<Utc>,
}

/// Merchants whose name holds `words` (any case), the shortest names first, up to `limit`.
pub async fn merchants_named(
    pool: &PgPool,
    words: &str,
    limit: i64,
) -> Result<Vec<FoundMerchant>, sqlx::Error> {
    sqlx::query_as!(
        FoundMerchant,
        "SELECT id, name, created_at FROM merchants \
         WHERE strpos(lower(name), lower($1)) > 0 \
         ORDER BY length(name), name, id LIMIT $2",
        words,
        limit,
    )
    .fetch_all(pool)
    .await
}

/// A courier found by name or phone.
#[derive(Clone, Debug)]
pub struct FoundCourier {
    pub id: Uuid,
    pub name: String,
    pub phone: String,
    pub market_id: String,
    pub status: CourierStatus,
    pub online: bool,
}

/// Couriers whose name holds `words` (any case), or whose phone's digits hold `digits` (when
/// at least four are given), by name, up to `limit`.
pub async fn couriers_named_or_called(
    pool: &PgPool,
    words: &str,
    digits: Option<&str>,
    limit: i64,
) -> Result<Vec<FoundCourier>, sqlx::Error> {
    sqlx::query_as!(
        FoundCourier,
        "SELECT id, name, phone, market_id, status AS \"status: Text<CourierStatus>\", online \
         FROM couriers \
         WHERE strpos(lower(name), lower($1)) > 0 \
            OR ($2::text IS NOT NULL \
                AND strpos(regexp_replace(phone, '[^0-9]', '', 'g'), $2) > 0) \
         ORDER BY name, id LIMIT $3",
        words,
        digits,
        limit,
    )
    .fetch_all(pool)
    .await
}
