//! Offers of jobs to couriers, and the due work of dispatch.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use courier_domain::dispatch::OfferStatus;

use crate::text_columns::Text;

use super::jobs::{JobRecord, JobRow};

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
}

/// Inserts an open offer; false when the job or the courier already has one (another
/// dispatcher was first) or the courier was offered this job before.
pub async fn insert_offer(conn: &mut PgConnection, offer: &OfferRow) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query!(
        "INSERT INTO courier_offers (id, job_id, courier_id, travel_seconds, status, offered_at, \
         expires_at) VALUES ($1, $2, $3, $4, 'open', $5, $6) ON CONFLICT DO NOTHING",
        offer.id,
        offer.job_id,
        offer.courier_id,
        offer.travel_seconds,
        offer.offered_at,
        offer.expires_at,
    )
    .execute(conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
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

/// The job of the courier's offer, if the offer is the courier's.
pub async fn job_of_offer(
    conn: &mut PgConnection,
    offer_id: Uuid,
    courier_id: Uuid,
) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT job_id FROM courier_offers WHERE id = $1 AND courier_id = $2",
        offer_id,
        courier_id,
    )
    .fetch_optional(conn)
    .await
}

/// The courier's offer, locked for this transaction.
pub async fn lock_offer(
    conn: &mut PgConnection,
    id: Uuid,
    courier_id: Uuid,
) -> Result<Option<OfferRow>, sqlx::Error> {
    sqlx::query_as!(
        OfferRow,
        "SELECT id, job_id, courier_id, travel_seconds, status AS \"status: Text<OfferStatus>\", offered_at, expires_at, answered_at FROM courier_offers WHERE id = $1 AND courier_id = $2 FOR UPDATE",
        id,
        courier_id,
    )
    .fetch_optional(conn)
    .await
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

/// Withdraws the courier's open offer, if any (the courier went offline or was suspended).
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

/// The courier's open offers with their jobs, soonest to expire first.
pub async fn open_offers(
    pool: &PgPool,
    courier_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Vec<(OfferRow, JobRow)>, sqlx::Error> {
    let offers: Vec<OfferRow> = sqlx::query_as!(
        OfferRow,
        "SELECT id, job_id, courier_id, travel_seconds, status AS \"status: Text<OfferStatus>\", offered_at, expires_at, answered_at FROM courier_offers WHERE courier_id = $1 AND status = 'open' \
         AND expires_at > $2 ORDER BY expires_at",
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

/// Up to `limit` searching jobs with no open offer (test jobs too unless `live_only`) whose
/// parcel is ready by `ready_by`, those that have searched longest first; nothing is locked. Only jobs with an active courier
/// online in their market on their vehicle: the others have no one to be offered to, and
/// would otherwise take a transaction each at every pass until one comes online.
///
/// Planned anew at each pass, for the table as it is (an unnamed statement, not kept): the
/// searching jobs grow from nothing in bursts, and a plan kept from when there were few read
/// every searching job on each call once there were thousands (BENCHMARKS.md, "Dispatch
/// claims by key").
pub async fn unoffered_searches(
    conn: &mut PgConnection,
    live_only: bool,
    ready_by: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT id FROM jobs j WHERE status = 'searching' \
         AND (environment = 'live' OR NOT $1) \
         AND (pickup_ready_at IS NULL OR pickup_ready_at <= $3) \
         AND NOT EXISTS (SELECT 1 FROM courier_offers o WHERE o.job_id = j.id \
                         AND o.status = 'open') \
         AND EXISTS (SELECT 1 FROM couriers c WHERE c.market_id = j.market_id \
                     AND c.vehicle = j.vehicle AND c.status = 'active' AND c.online) \
         ORDER BY coalesce(search_opened_at, search_opens_at, booked_at) LIMIT $2",
    )
    .bind(live_only)
    .bind(limit)
    .bind(ready_by)
    .persistent(false)
    .fetch_all(conn)
    .await
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
