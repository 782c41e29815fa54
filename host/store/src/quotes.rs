use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use courier_domain::{Environment, Vehicle};

use crate::text::Text;

/// A quote as stored.
#[derive(Clone, Debug)]
pub struct QuoteRow {
    pub id: Uuid,
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub market_id: String,
    pub currency: String,
    pub vehicle: Vehicle,
    pub pickup_latitude: f64,
    pub pickup_longitude: f64,
    pub pickup_postcode: Option<String>,
    pub dropoff_latitude: f64,
    pub dropoff_longitude: f64,
    pub dropoff_postcode: Option<String>,
    pub weight_grams: i32,
    pub scheduled_for: Option<DateTime<Utc>>,
    pub priced_for: DateTime<Utc>,
    pub demand_permille: i64,
    pub distance_metres: i32,
    pub duration_seconds: i32,
    pub total_amount_minor: i64,
    pub breakdown: serde_json::Value,
    pub price_book_version: i32,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub used_at: Option<DateTime<Utc>>,
}

/// Inserts a quote. Its commit does not wait for the disk: a quote is an offer, made again
/// for the asking, and that wait (the WAL flush) was a quarter of a quote's time in the
/// database. A crash of the database in the fraction of a second before the background flush
/// may lose it; its booking then answers that the quote does not exist. A booked quote is
/// never lost: the booking's own commit waits for the disk, which flushes every commit made
/// before it.
pub async fn insert(pool: &PgPool, q: &QuoteRow) -> Result<(), sqlx::Error> {
    // `set_config(..., true)` lasts until the end of the statement's own transaction: its
    // commit is the one it affects, and no other statement of the connection.
    sqlx::query!(
        "INSERT INTO quotes (id, merchant_id, environment, market_id, currency, vehicle, \
         pickup_latitude, pickup_longitude, pickup_postcode, dropoff_latitude, \
         dropoff_longitude, dropoff_postcode, weight_grams, scheduled_for, priced_for, \
         demand_permille, distance_metres, duration_seconds, total_amount_minor, breakdown, \
         price_book_version, created_at, expires_at) \
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
         $18, $19, $20, $21, $22, $23 \
         FROM (SELECT set_config('synchronous_commit', 'off', true)) AS commit_without_waiting",
        q.id,
        q.merchant_id,
        q.environment.as_str(),
        q.market_id,
        q.currency,
        q.vehicle.as_str(),
        q.pickup_latitude,
        q.pickup_longitude,
        q.pickup_postcode,
        q.dropoff_latitude,
        q.dropoff_longitude,
        q.dropoff_postcode,
        q.weight_grams,
        q.scheduled_for,
        q.priced_for,
        q.demand_permille,
        q.distance_metres,
        q.duration_seconds,
        q.total_amount_minor,
        q.breakdown,
        q.price_book_version,
        q.created_at,
        q.expires_at,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// A market's most recent quotes, newest first.
pub async fn recent_in_market(
    pool: &PgPool,
    market_id: &str,
    limit: i64,
) -> Result<Vec<QuoteRow>, sqlx::Error> {
    sqlx::query_as!(
        QuoteRow,
        "SELECT id, merchant_id, environment AS \"environment: Text<Environment>\", market_id, currency, vehicle AS \"vehicle: Text<Vehicle>\", pickup_latitude, pickup_longitude, pickup_postcode, dropoff_latitude, dropoff_longitude, dropoff_postcode, weight_grams, scheduled_for, priced_for, demand_permille, distance_metres, duration_seconds, total_amount_minor, breakdown, price_book_version, created_at, expires_at, used_at FROM quotes WHERE market_id = $1 ORDER BY created_at DESC LIMIT $2",
        market_id,
        limit,
    )
    .fetch_all(pool)
    .await
}
