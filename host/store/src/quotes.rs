use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use courier_domain::{Environment, Vehicle};

use crate::text_columns::Text;

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

/// Inserts a quote (see [`insert_many`]).
pub async fn insert(pool: &PgPool, q: &QuoteRow) -> Result<(), sqlx::Error> {
    insert_many(pool, std::slice::from_ref(q)).await
}

/// Inserts quotes in one statement and one transaction, all of them or none: a row the
/// database refuses fails the whole statement.
///
/// The commit does not wait for the disk: a quote is an offer, made again for the asking,
/// and that wait (the WAL flush) was a quarter of a quote's time in the database. A crash of
/// the database in the fraction of a second before the background flush may lose one; its
/// booking then answers that the quote does not exist. A booked quote is never lost: the
/// booking's own commit waits for the disk, which flushes every commit made before it.
pub async fn insert_many<'e>(
    db: impl sqlx::PgExecutor<'e>,
    rows: &[QuoteRow],
) -> Result<(), sqlx::Error> {
    fn column<'a, T>(rows: &'a [QuoteRow], field: impl Fn(&'a QuoteRow) -> T) -> Vec<T> {
        rows.iter().map(field).collect()
    }
    let ids = column(rows, |q| q.id);
    let merchant_ids = column(rows, |q| q.merchant_id);
    let environments = column(rows, |q| q.environment.as_str());
    let market_ids = column(rows, |q| q.market_id.as_str());
    let currencies = column(rows, |q| q.currency.as_str());
    let vehicles = column(rows, |q| q.vehicle.as_str());
    let pickup_latitudes = column(rows, |q| q.pickup_latitude);
    let pickup_longitudes = column(rows, |q| q.pickup_longitude);
    let pickup_postcodes = column(rows, |q| q.pickup_postcode.as_deref());
    let dropoff_latitudes = column(rows, |q| q.dropoff_latitude);
    let dropoff_longitudes = column(rows, |q| q.dropoff_longitude);
    let dropoff_postcodes = column(rows, |q| q.dropoff_postcode.as_deref());
    let weights = column(rows, |q| q.weight_grams);
    let scheduled_fors = column(rows, |q| q.scheduled_for);
    let priced_fors = column(rows, |q| q.priced_for);
    let demands = column(rows, |q| q.demand_permille);
    let distances = column(rows, |q| q.distance_metres);
    let durations = column(rows, |q| q.duration_seconds);
    let totals = column(rows, |q| q.total_amount_minor);
    let breakdowns = column(rows, |q| &q.breakdown);
    let versions = column(rows, |q| q.price_book_version);
    let created_ats = column(rows, |q| q.created_at);
    let expires_ats = column(rows, |q| q.expires_at);
    // `set_config(..., true)` lasts until the end of the statement's own transaction: its
    // commit is the one it affects, and no other statement of the connection.
    sqlx::query!(
        "INSERT INTO quotes (id, merchant_id, environment, market_id, currency, vehicle, \
         pickup_latitude, pickup_longitude, pickup_postcode, dropoff_latitude, \
         dropoff_longitude, dropoff_postcode, weight_grams, scheduled_for, priced_for, \
         demand_permille, distance_metres, duration_seconds, total_amount_minor, breakdown, \
         price_book_version, created_at, expires_at) \
         SELECT q.* FROM UNNEST($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], \
         $6::text[], $7::float8[], $8::float8[], $9::text[], $10::float8[], $11::float8[], \
         $12::text[], $13::int4[], $14::timestamptz[], $15::timestamptz[], $16::int8[], \
         $17::int4[], $18::int4[], $19::int8[], $20::jsonb[], $21::int4[], \
         $22::timestamptz[], $23::timestamptz[]) AS q, \
         (SELECT set_config('synchronous_commit', 'off', true)) AS commit_without_waiting",
        &ids,
        &merchant_ids,
        &environments as &[&str],
        &market_ids as &[&str],
        &currencies as &[&str],
        &vehicles as &[&str],
        &pickup_latitudes,
        &pickup_longitudes,
        &pickup_postcodes as &[Option<&str>],
        &dropoff_latitudes,
        &dropoff_longitudes,
        &dropoff_postcodes as &[Option<&str>],
        &weights,
        &scheduled_fors as &[Option<DateTime<Utc>>],
        &priced_fors,
        &demands,
        &distances,
        &durations,
        &totals,
        &breakdowns as &[&serde_json::Value],
        &versions,
        &created_ats,
        &expires_ats,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// A quote by its id.
pub async fn find(pool: &PgPool, id: Uuid) -> Result<Option<QuoteRow>, sqlx::Error> {
    sqlx::query_as!(
        QuoteRow,
        "SELECT id, merchant_id, environment AS \"environment: Text<Environment>\", market_id, currency, vehicle AS \"vehicle: Text<Vehicle>\", pickup_latitude, pickup_longitude, pickup_postcode, dropoff_latitude, dropoff_longitude, dropoff_postcode, weight_grams, scheduled_for, priced_for, demand_permille, distance_metres, duration_seconds, total_amount_minor, breakdown, price_book_version, created_at, expires_at, used_at FROM quotes WHERE id = $1",
        id,
    )
    .fetch_optional(pool)
    .await
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
