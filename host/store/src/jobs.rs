use chrono::{DateTime, Utc};
use sqlx::{PgPool, Postgres, QueryBuilder};
use uuid::Uuid;

use courier_domain::{Environment, JobStatus, Vehicle};

use crate::text_columns::{Text, column};

/// A job as stored (and, as JSON, as a booking between its phases keeps it).
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize, serde::Deserialize)]
pub struct JobRow {
    pub id: Uuid,
    pub merchant_id: Uuid,
    #[sqlx(try_from = "Text<Environment>")]
    pub environment: Environment,
    pub quote_id: Uuid,
    pub reference: String,
    pub tracking_token: String,
    #[sqlx(try_from = "Text<JobStatus>")]
    pub status: JobStatus,
    pub market_id: String,
    pub currency: String,
    pub price_amount_minor: i64,
    pub tax_amount_minor: i64,
    #[sqlx(try_from = "Text<Vehicle>")]
    pub vehicle: Vehicle,
    pub pickup: serde_json::Value,
    pub dropoff: serde_json::Value,
    pub items: serde_json::Value,
    pub items_subtotal_minor: i64,
    pub discount_minor: i64,
    pub items_total_minor: i64,
    pub notify_customer: bool,
    pub customer_notified_at: Option<DateTime<Utc>>,
    pub proof_photo_required: bool,
    pub proof_signature_required: bool,
    pub proof: Option<serde_json::Value>,
    pub courier_id: Option<Uuid>,
    pub booked_at: DateTime<Utc>,
    pub scheduled_for: Option<DateTime<Utc>>,
    pub search_opens_at: Option<DateTime<Utc>>,
    pub assigned_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
    pub cancellation_reason: Option<String>,
    /// When the job last entered `searching`, when it did after booking.
    pub search_opened_at: Option<DateTime<Utc>>,
    /// When the parcel will be ready at the pickup; none: as soon as the job is due.
    #[serde(default)]
    pub pickup_ready_at: Option<DateTime<Utc>>,
}

/// A `jobs` row as the query macros read it from `SELECT *`, its names still text: [`JobRow`]'s
/// conversion reads them, and a name this code does not know is a decode error.
pub(crate) struct JobRecord {
    pub(crate) id: Uuid,
    pub(crate) merchant_id: Uuid,
    pub(crate) environment: String,
    pub(crate) quote_id: Uuid,
    pub(crate) reference: String,
    pub(crate) tracking_token: String,
    pub(crate) status: String,
    pub(crate) market_id: String,
    pub(crate) currency: String,
    pub(crate) price_amount_minor: i64,
    pub(crate) tax_amount_minor: i64,
    pub(crate) vehicle: String,
    pub(crate) pickup: serde_json::Value,
    pub(crate) dropoff: serde_json::Value,
    pub(crate) items: serde_json::Value,
    pub(crate) items_subtotal_minor: i64,
    pub(crate) discount_minor: i64,
    pub(crate) items_total_minor: i64,
    pub(crate) notify_customer: bool,
    pub(crate) customer_notified_at: Option<DateTime<Utc>>,
    pub(crate) proof_photo_required: bool,
    pub(crate) proof_signature_required: bool,
    pub(crate) proof: Option<serde_json::Value>,
    pub(crate) courier_id: Option<Uuid>,
    pub(crate) booked_at: DateTime<Utc>,
    pub(crate) scheduled_for: Option<DateTime<Utc>>,
    pub(crate) search_opens_at: Option<DateTime<Utc>>,
    pub(crate) assigned_at: Option<DateTime<Utc>>,
    pub(crate) completed_at: Option<DateTime<Utc>>,
    pub(crate) cancellation_reason: Option<String>,
    pub(crate) search_opened_at: Option<DateTime<Utc>>,
    pub(crate) pickup_ready_at: Option<DateTime<Utc>>,
}

impl TryFrom<JobRecord> for JobRow {
    type Error = sqlx::Error;

    fn try_from(record: JobRecord) -> Result<Self, Self::Error> {
        Ok(JobRow {
            environment: column("environment", &record.environment)?,
            status: column("status", &record.status)?,
            vehicle: column("vehicle", &record.vehicle)?,
            id: record.id,
            merchant_id: record.merchant_id,
            quote_id: record.quote_id,
            reference: record.reference,
            tracking_token: record.tracking_token,
            market_id: record.market_id,
            currency: record.currency,
            price_amount_minor: record.price_amount_minor,
            tax_amount_minor: record.tax_amount_minor,
            pickup: record.pickup,
            dropoff: record.dropoff,
            items: record.items,
            items_subtotal_minor: record.items_subtotal_minor,
            discount_minor: record.discount_minor,
            items_total_minor: record.items_total_minor,
            notify_customer: record.notify_customer,
            customer_notified_at: record.customer_notified_at,
            proof_photo_required: record.proof_photo_required,
            proof_signature_required: record.proof_signature_required,
            proof: record.proof,
            courier_id: record.courier_id,
            booked_at: record.booked_at,
            scheduled_for: record.scheduled_for,
            search_opens_at: record.search_opens_at,
            assigned_at: record.assigned_at,
            completed_at: record.completed_at,
            cancellation_reason: record.cancellation_reason,
            search_opened_at: record.search_opened_at,
            pickup_ready_at: record.pickup_ready_at,
        })
    }
}

impl JobRow {
    /// When the job's search opened (or opens, for a scheduled job).
    pub fn search_start(&self) -> chrono::DateTime<chrono::Utc> {
        self.search_opened_at
            .or(self.search_opens_at)
            .unwrap_or(self.booked_at)
    }

    /// When the job is due, which its dispatch deadline counts from: its search opening, its
    /// scheduled time or its parcel's ready time, whichever is last.
    pub fn due_at(&self) -> DateTime<Utc> {
        [self.scheduled_for, self.pickup_ready_at]
            .into_iter()
            .flatten()
            .fold(self.search_start(), DateTime::max)
    }
}

/// Marks the quote used, at the booking time ([`crate::writes::Writes`]).
pub fn mark_quote_used<'a>(
    quote_id: Uuid,
    at: DateTime<Utc>,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        query
            .push("UPDATE quotes SET used_at = ")
            .push_bind(at)
            .push(" WHERE id = ")
            .push_bind(quote_id);
    }
}

/// Inserts newly booked jobs, one row each ([`crate::writes::Writes`]).
pub fn insert_jobs<'a>(
    jobs: Vec<&'a JobRow>,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        query.push(
            "INSERT INTO jobs (id, merchant_id, environment, quote_id, reference, tracking_token, \
             status, market_id, currency, price_amount_minor, tax_amount_minor, vehicle, pickup, \
             dropoff, items, items_subtotal_minor, discount_minor, items_total_minor, \
             notify_customer, proof_photo_required, proof_signature_required, booked_at, \
             scheduled_for, search_opens_at, pickup_ready_at) ",
        );
        query.push_values(jobs, |mut row, j| {
            row.push_bind(j.id)
                .push_bind(j.merchant_id)
                .push_bind(j.environment.as_str())
                .push_bind(j.quote_id)
                .push_bind(&j.reference)
                .push_bind(&j.tracking_token)
                .push_bind(j.status.as_str())
                .push_bind(&j.market_id)
                .push_bind(&j.currency)
                .push_bind(j.price_amount_minor)
                .push_bind(j.tax_amount_minor)
                .push_bind(j.vehicle.as_str())
                .push_bind(&j.pickup)
                .push_bind(&j.dropoff)
                .push_bind(&j.items)
                .push_bind(j.items_subtotal_minor)
                .push_bind(j.discount_minor)
                .push_bind(j.items_total_minor)
                .push_bind(j.notify_customer)
                .push_bind(j.proof_photo_required)
                .push_bind(j.proof_signature_required)
                .push_bind(j.booked_at)
                .push_bind(j.scheduled_for)
                .push_bind(j.search_opens_at)
                .push_bind(j.pickup_ready_at);
        });
    }
}

/// The merchant's own job in that environment; another merchant's job is not found.
pub async fn find(
    pool: &PgPool,
    merchant_id: Uuid,
    environment: Environment,
    id: Uuid,
) -> Result<Option<JobRow>, sqlx::Error> {
    // By the primary key alone, the owner checked here: with the owner in the statement, a
    // table not yet analyzed (a new database, a burst of bookings) is read through the
    // merchant's index, every one of the merchant's jobs, on every read (BENCHMARKS.md).
    let job = find_any(pool, id).await?;
    Ok(job.filter(|j| j.merchant_id == merchant_id && j.environment == environment))
}

/// The jobs `courier_id` was put on at or after `since`, the latest first (500 at most).
pub async fn of_courier_since(
    pool: &PgPool,
    courier_id: Uuid,
    since: DateTime<Utc>,
) -> Result<Vec<JobRow>, sqlx::Error> {
    sqlx::query_as!(
        JobRecord,
        "SELECT * FROM jobs WHERE courier_id = $1 AND assigned_at >= $2 \
         ORDER BY assigned_at DESC LIMIT 500",
        courier_id,
        since,
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(JobRow::try_from)
    .collect()
}

/// Any merchant's job, in either environment: for operators.
pub async fn find_any(pool: &PgPool, id: Uuid) -> Result<Option<JobRow>, sqlx::Error> {
    sqlx::query_as!(JobRecord, "SELECT * FROM jobs WHERE id = $1", id)
        .fetch_optional(pool)
        .await?
        .map(JobRow::try_from)
        .transpose()
}

pub struct ListFilter<'a> {
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub statuses: &'a [&'a str],
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub limit: i64,
    pub offset: i64,
    /// `total` counts matches up to this many, no further.
    pub count_up_to: i64,
}

fn push_filter<'a>(query: &mut QueryBuilder<'a, Postgres>, filter: &'a ListFilter<'a>) {
    query
        .push(" WHERE merchant_id = ")
        .push_bind(filter.merchant_id)
        .push(" AND environment = ")
        .push_bind(filter.environment.as_str());
    if !filter.statuses.is_empty() {
        query
            .push(" AND status = ANY(")
            .push_bind(filter.statuses)
            .push(")");
    }
    if let Some(from) = filter.from {
        query.push(" AND booked_at >= ").push_bind(from);
    }
    if let Some(to) = filter.to {
        query.push(" AND booked_at < ").push_bind(to);
    }
}

/// One page of the merchant's jobs, newest first, and how many match, counted up to
/// `filter.count_up_to`.
pub async fn list(
    pool: &PgPool,
    filter: &ListFilter<'_>,
) -> Result<(Vec<JobRow>, i64), sqlx::Error> {
    let mut query = QueryBuilder::new("SELECT * FROM jobs");
    push_filter(&mut query, filter);
    query
        .push(" ORDER BY booked_at DESC, id DESC LIMIT ")
        .push_bind(filter.limit)
        .push(" OFFSET ")
        .push_bind(filter.offset);
    let rows = query.build_query_as().fetch_all(pool).await?;
    let mut count = QueryBuilder::new("SELECT count(*) FROM (SELECT 1 FROM jobs");
    push_filter(&mut count, filter);
    count
        .push(" LIMIT ")
        .push_bind(filter.count_up_to)
        .push(") AS matches");
    let total: i64 = count.build_query_scalar().fetch_one(pool).await?;
    Ok((rows, total))
}

/// Opens the search of pending jobs whose time has come; returns how many moved. One
/// statement, so concurrent workers on several instances never move a job twice.
pub async fn open_due_searches(pool: &PgPool, now: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    let moved = sqlx::query!(
        "UPDATE jobs SET status = 'searching', search_opened_at = $1 WHERE id IN ( \
             SELECT id FROM jobs WHERE status = 'pending' AND search_opens_at <= $1 \
             ORDER BY search_opens_at LIMIT 500 FOR UPDATE SKIP LOCKED)",
        now,
    )
    .execute(pool)
    .await?;
    Ok(moved.rows_affected())
}

/// The latest position of a courier, if seen since `fresh_since`.
pub async fn courier_position(
    pool: &PgPool,
    courier_id: Uuid,
    fresh_since: DateTime<Utc>,
) -> Result<Option<(f64, f64, DateTime<Utc>)>, sqlx::Error> {
    let position = sqlx::query!(
        "SELECT latitude, longitude, seen_at FROM courier_positions \
         WHERE courier_id = $1 AND seen_at >= $2",
        courier_id,
        fresh_since,
    )
    .fetch_optional(pool)
    .await?;
    Ok(position.map(|p| (p.latitude, p.longitude, p.seen_at)))
}

/// A job searching for a courier, for the operator's map.
#[derive(Clone, Debug)]
pub struct SearchingJob {
    pub id: Uuid,
    pub reference: String,
    pub merchant_id: Uuid,
    pub merchant_name: String,
    pub environment: Environment,
    pub vehicle: Vehicle,
    /// Where its pickup is (the stop's coordinates only: the map needs no more of it).
    pub pickup_latitude: Option<f64>,
    pub pickup_longitude: Option<f64>,
    /// When it last entered `searching`.
    pub searching_since: DateTime<Utc>,
    /// When its parcel will be ready, if the merchant said.
    pub pickup_ready_at: Option<DateTime<Utc>>,
    /// Whether a courier has the job's offer open now.
    pub offered: bool,
}

/// The jobs of `ids` (the searching ones a board lists), the longest searching first.
pub async fn searching_on_board(
    pool: &PgPool,
    ids: &[Uuid],
) -> Result<Vec<SearchingJob>, sqlx::Error> {
    sqlx::query_as!(
        SearchingJob,
        "SELECT j.id, j.reference, j.merchant_id, m.name AS merchant_name, \
           j.environment AS \"environment: Text<Environment>\", \
           j.vehicle AS \"vehicle: Text<Vehicle>\", \
           (j.pickup->>'latitude')::float8 AS pickup_latitude, \
           (j.pickup->>'longitude')::float8 AS pickup_longitude, \
           coalesce(j.search_opened_at, j.search_opens_at, j.booked_at) AS \"searching_since!\", \
           j.pickup_ready_at, EXISTS (SELECT 1 FROM courier_offers o WHERE o.job_id = j.id \
                   AND o.status = 'open') AS \"offered!\" \
         FROM jobs j JOIN merchants m ON m.id = j.merchant_id \
         WHERE j.id = ANY($1) \
         ORDER BY coalesce(j.search_opened_at, j.search_opens_at, j.booked_at), j.id",
        ids,
    )
    .fetch_all(pool)
    .await
}

/// How many jobs of the other environment than `shown` search in `market` (none when both
/// are shown).
pub async fn searching_elsewhere(
    pool: &PgPool,
    market: &str,
    shown: Option<Environment>,
) -> Result<i64, sqlx::Error> {
    let Some(shown) = shown else {
        return Ok(0);
    };
    sqlx::query_scalar!(
        "SELECT count(*) AS \"count!\" FROM jobs \
         WHERE status = 'searching' AND market_id = $1 AND environment <> $2",
        market,
        shown.as_str(),
    )
    .fetch_one(pool)
    .await
}

/// A job under way (assigned or in transit), for the operator's map.
#[derive(Clone, Debug)]
pub struct JobUnderWay {
    pub id: Uuid,
    pub reference: String,
    pub merchant_name: String,
    pub environment: Environment,
    pub status: JobStatus,
    pub courier_id: Option<Uuid>,
    pub courier_name: Option<String>,
    /// Where its stops are (their coordinates only: the map needs no more of them).
    pub pickup_latitude: Option<f64>,
    pub pickup_longitude: Option<f64>,
    pub dropoff_latitude: Option<f64>,
    pub dropoff_longitude: Option<f64>,
    pub assigned_at: Option<DateTime<Utc>>,
}

/// The jobs of `ids` (the ones under way a board lists), the longest under way first.
pub async fn under_way_on_board(
    pool: &PgPool,
    ids: &[Uuid],
) -> Result<Vec<JobUnderWay>, sqlx::Error> {
    sqlx::query_as!(
        JobUnderWay,
        "SELECT j.id, j.reference, m.name AS merchant_name, \
           j.environment AS \"environment: Text<Environment>\", \
           j.status AS \"status: Text<JobStatus>\", j.courier_id, \
           c.name AS \"courier_name?\", \
           (j.pickup->>'latitude')::float8 AS pickup_latitude, \
           (j.pickup->>'longitude')::float8 AS pickup_longitude, \
           (j.dropoff->>'latitude')::float8 AS dropoff_latitude, \
           (j.dropoff->>'longitude')::float8 AS dropoff_longitude, j.assigned_at \
         FROM jobs j JOIN merchants m ON m.id = j.merchant_id \
         LEFT JOIN couriers c ON c.id = j.courier_id \
         WHERE j.id = ANY($1) \
         ORDER BY j.assigned_at, j.id",
        ids,
    )
    .fetch_all(pool)
    .await
}

/// The road distance, pickup to drop-off, each of `ids` was quoted for.
pub async fn quoted_metres(pool: &PgPool, ids: &[Uuid]) -> Result<Vec<(Uuid, i64)>, sqlx::Error> {
    let rows = sqlx::query!(
        "SELECT j.id, q.distance_metres::bigint AS \"distance_metres!\" \
         FROM jobs j JOIN quotes q ON q.id = j.quote_id WHERE j.id = ANY($1)",
        ids,
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.id, r.distance_metres))
        .collect())
}

/// What a courier finished since a moment: jobs delivered and returned, and their length by
/// road (pickup to drop-off, as quoted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CourierDay {
    pub delivered: i64,
    pub returned: i64,
    pub distance_metres: i64,
}

/// [`CourierDay`] of `courier_id` since `since`.
pub async fn courier_day(
    pool: &PgPool,
    courier_id: Uuid,
    since: DateTime<Utc>,
) -> Result<CourierDay, sqlx::Error> {
    let day = sqlx::query!(
        "SELECT count(*) FILTER (WHERE j.status = 'delivered') AS \"delivered!\", \
           count(*) FILTER (WHERE j.status = 'returned') AS \"returned!\", \
           coalesce(sum(q.distance_metres), 0)::bigint AS \"distance_metres!\" \
         FROM jobs j JOIN quotes q ON q.id = j.quote_id \
         WHERE j.courier_id = $1 AND j.assigned_at >= $2 \
           AND j.status IN ('delivered', 'returned') AND j.completed_at >= $2",
        courier_id,
        since,
    )
    .fetch_one(pool)
    .await?;
    Ok(CourierDay {
        delivered: day.delivered,
        returned: day.returned,
        distance_metres: day.distance_metres,
    })
}
