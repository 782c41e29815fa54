//! Offers of jobs to couriers, and the due work of dispatch.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use courier_domain::dispatch::OfferStatus;

use crate::text_columns::Text;

use super::jobs::{JobRecord, JobRow};

/// One job's offer to one courier. The offers made together to a courier are a route: they
/// share `route_id`, the id of the route's first offer, which is the id the courier answers.
#[derive(Clone, Debug)]
pub struct OfferRow {
    pub id: Uuid,
    pub job_id: Uuid,
    pub courier_id: Uuid,
    pub travel_seconds: i32,
    pub status: OfferStatus,
    pub offered_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub answered_at: Option<DateTime<Utc>>,
    pub route_id: Uuid,
    /// On a route's first offer: its stops in order, `[{"job_id", "stop": "pickup" |
    /// "dropoff"}]`; none on the others and on offers made one job at a time.
    pub stops: Option<serde_json::Value>,
    /// Why it was made (`courier_domain::dispatch::OfferReason`), when the planner said.
    pub reason: Option<serde_json::Value>,
}

/// Inserts an open offer; false when the job already has one, the courier already has an
/// open route (for a route's first offer), or the courier was offered this job before.
pub async fn insert_offer(conn: &mut PgConnection, offer: &OfferRow) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query!(
        "INSERT INTO courier_offers (id, job_id, courier_id, travel_seconds, status, offered_at, \
         expires_at, route_id, stops, reason) VALUES ($1, $2, $3, $4, 'open', $5, $6, $7, $8, $9) \
         ON CONFLICT DO NOTHING",
        offer.id,
        offer.job_id,
        offer.courier_id,
        offer.travel_seconds,
        offer.offered_at,
        offer.expires_at,
        offer.route_id,
        offer.stops,
        offer.reason,
    )
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// Takes `market`'s planning for this transaction if no other transaction has it: one
/// instance plans a market at a time; false, and the caller skips the market, otherwise.
pub async fn try_plan_market(conn: &mut PgConnection, market: &str) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT pg_try_advisory_xact_lock(hashtextextended('dispatch_planner:' || $1, 0)) \
         AS \"taken!\"",
        market,
    )
    .fetch_one(conn)
    .await
}

/// Up to `limit` searching jobs of `market` with no open offer (test jobs too unless
/// `live_only`) whose parcel is ready by `ready_by`, those that have searched longest first;
/// nothing is locked.
pub async fn open_searches(
    conn: &mut PgConnection,
    market: &str,
    live_only: bool,
    ready_by: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<JobRow>, sqlx::Error> {
    sqlx::query_as!(
        JobRecord,
        "SELECT * FROM jobs j WHERE status = 'searching' AND market_id = $1 \
         AND (environment = 'live' OR NOT $2) \
         AND (pickup_ready_at IS NULL OR pickup_ready_at <= $3) \
         AND NOT EXISTS (SELECT 1 FROM courier_offers o WHERE o.job_id = j.id \
                         AND o.status = 'open') \
         ORDER BY coalesce(search_opened_at, search_opens_at, booked_at), id LIMIT $4",
        market,
        live_only,
        ready_by,
        limit,
    )
    .fetch_all(conn)
    .await?
    .into_iter()
    .map(JobRow::try_from)
    .collect()
}

/// The jobs assigned to `couriers` and not yet collected, by courier.
pub async fn assigned_jobs(
    conn: &mut PgConnection,
    couriers: &[Uuid],
) -> Result<Vec<JobRow>, sqlx::Error> {
    sqlx::query_as!(
        JobRecord,
        "SELECT * FROM jobs WHERE courier_id = ANY($1) AND status = 'assigned' \
         ORDER BY courier_id, assigned_at, id",
        couriers,
    )
    .fetch_all(conn)
    .await?
    .into_iter()
    .map(JobRow::try_from)
    .collect()
}

/// Which of `jobs` were offered to which couriers before: (job, courier).
pub async fn offered_pairs(
    conn: &mut PgConnection,
    jobs: &[Uuid],
) -> Result<Vec<(Uuid, Uuid)>, sqlx::Error> {
    let pairs = sqlx::query!(
        "SELECT job_id, courier_id FROM courier_offers WHERE job_id = ANY($1)",
        jobs,
    )
    .fetch_all(conn)
    .await?;
    Ok(pairs
        .into_iter()
        .map(|p| (p.job_id, p.courier_id))
        .collect())
}

/// The jobs of the courier's route `route_id`, in no order; nothing is locked.
pub async fn route_jobs(
    conn: &mut PgConnection,
    route_id: Uuid,
    courier_id: Uuid,
) -> Result<Vec<Uuid>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT job_id FROM courier_offers WHERE route_id = $1 AND courier_id = $2",
        route_id,
        courier_id,
    )
    .fetch_all(conn)
    .await
}

/// The offers of the courier's route `route_id`, locked for this transaction, its first
/// offer first.
pub async fn lock_route(
    conn: &mut PgConnection,
    route_id: Uuid,
    courier_id: Uuid,
) -> Result<Vec<OfferRow>, sqlx::Error> {
    sqlx::query_as!(
        OfferRow,
        "SELECT id, job_id, courier_id, travel_seconds, status AS \"status: Text<OfferStatus>\", offered_at, expires_at, answered_at, route_id, stops, reason FROM courier_offers WHERE route_id = $1 AND courier_id = $2 ORDER BY id <> route_id, id FOR UPDATE",
        route_id,
        courier_id,
    )
    .fetch_all(conn)
    .await
}

/// Answers the route's offers that are still open.
pub async fn answer_route(
    conn: &mut PgConnection,
    route_id: Uuid,
    status: OfferStatus,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE courier_offers SET status = $2, answered_at = $3 \
         WHERE route_id = $1 AND status = 'open'",
        route_id,
        status.as_str(),
        at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Closes the open offers that have run out; returns how many.
pub async fn expire_offers(pool: &PgPool, now: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    let expired = sqlx::query!(
        "UPDATE courier_offers SET status = 'expired', answered_at = $1 WHERE id IN ( \
           SELECT id FROM courier_offers WHERE status = 'open' AND expires_at <= $1 \
           ORDER BY expires_at LIMIT 500 FOR UPDATE SKIP LOCKED)",
        now,
    )
    .execute(pool)
    .await?;
    Ok(expired.rows_affected())
}

pub async fn answer_offer(
    conn: &mut PgConnection,
    id: Uuid,
    status: OfferStatus,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE courier_offers SET status = $2, answered_at = $3 WHERE id = $1",
        id,
        status.as_str(),
        at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Withdraws the courier's open offers, if any (the courier went offline or was suspended).
pub async fn withdraw_courier_offers(
    conn: &mut PgConnection,
    courier_id: Uuid,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE courier_offers SET status = 'withdrawn', answered_at = $2 \
         WHERE courier_id = $1 AND status = 'open'",
        courier_id,
        at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// One offer of a job, with its courier, as operators see it.
#[derive(Clone, Debug)]
pub struct JobOffer {
    pub courier_id: Uuid,
    pub courier_name: String,
    pub vehicle: String,
    pub travel_seconds: i32,
    pub status: OfferStatus,
    pub offered_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub answered_at: Option<DateTime<Utc>>,
    /// The other jobs offered with it, as one route.
    pub others_on_route: i64,
    /// Why the planner made it (`courier_domain::dispatch::OfferReason`), when kept.
    pub reason: Option<serde_json::Value>,
}

/// Every offer of the job, the first made first.
pub async fn offers_of_job(pool: &PgPool, job_id: Uuid) -> Result<Vec<JobOffer>, sqlx::Error> {
    sqlx::query_as!(
        JobOffer,
        "SELECT o.courier_id, c.name AS courier_name, c.vehicle, o.travel_seconds, \
         o.status AS \"status: Text<OfferStatus>\", o.offered_at, o.expires_at, o.answered_at, \
         (SELECT count(*) FROM courier_offers r WHERE r.route_id = o.route_id AND r.id <> o.id) \
         AS \"others_on_route!\", o.reason \
         FROM courier_offers o JOIN couriers c ON c.id = o.courier_id \
         WHERE o.job_id = $1 ORDER BY o.offered_at, o.id",
        job_id,
    )
    .fetch_all(pool)
    .await
}

/// The courier's open offers with their jobs, soonest to expire first, each route's
/// together with its first offer first.
pub async fn open_offers(
    pool: &PgPool,
    courier_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Vec<(OfferRow, JobRow)>, sqlx::Error> {
    let offers: Vec<OfferRow> = sqlx::query_as!(
        OfferRow,
        "SELECT id, job_id, courier_id, travel_seconds, status AS \"status: Text<OfferStatus>\", offered_at, expires_at, answered_at, route_id, stops, reason FROM courier_offers WHERE courier_id = $1 AND status = 'open' \
         AND expires_at > $2 ORDER BY expires_at, route_id, id <> route_id, id",
        courier_id,
        now,
    )
    .fetch_all(pool)
    .await?;
    let mut found = Vec::with_capacity(offers.len());
    for offer in offers {
        let job: JobRow =
            sqlx::query_as!(JobRecord, "SELECT * FROM jobs WHERE id = $1", offer.job_id,)
                .fetch_one(pool)
                .await?
                .try_into()?;
        found.push((offer, job));
    }
    Ok(found)
}

/// Searching jobs past their dispatch deadline (counted from when each is due, see
/// `JobRow::due_at`), locked; others' locked rows are skipped.
pub async fn claim_overdue_searches(
    conn: &mut PgConnection,
    deadline: chrono::Duration,
    now: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<JobRow>, sqlx::Error> {
    sqlx::query_as!(
        JobRecord,
        "SELECT * FROM jobs WHERE status = 'searching' \
         AND greatest(coalesce(search_opened_at, search_opens_at, booked_at), scheduled_for, \
                      pickup_ready_at) \
             <= $1::timestamptz - make_interval(secs => $2) \
         ORDER BY greatest(coalesce(search_opened_at, search_opens_at, booked_at), \
                           scheduled_for, pickup_ready_at) \
         LIMIT $3 FOR UPDATE SKIP LOCKED",
        now,
        deadline.as_seconds_f64(),
        limit,
    )
    .fetch_all(conn)
    .await?
    .into_iter()
    .map(JobRow::try_from)
    .collect()
}

/// Job `id`, locked, if it is still searching with no open offer; `None` as well when another
/// dispatcher holds it (its locked row is skipped), so each job is dispatched by one instance
/// at a time.
pub async fn claim_unoffered_search(
    conn: &mut PgConnection,
    id: Uuid,
) -> Result<Option<JobRow>, sqlx::Error> {
    sqlx::query_as!(
        JobRecord,
        "SELECT * FROM jobs j WHERE id = $1 AND status = 'searching' \
         AND NOT EXISTS (SELECT 1 FROM courier_offers o WHERE o.job_id = j.id \
                         AND o.status = 'open') \
         FOR UPDATE SKIP LOCKED",
        id,
    )
    .fetch_optional(conn)
    .await?
    .map(JobRow::try_from)
    .transpose()
}
