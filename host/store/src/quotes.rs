use chrono::{DateTime, Utc};
use sqlx::{PgPool, Postgres, QueryBuilder};
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

pub async fn insert(pool: &PgPool, quote: &QuoteRow) -> Result<(), sqlx::Error> {
    let mut query: QueryBuilder<Postgres> = QueryBuilder::new(
        "INSERT INTO quotes (id, merchant_id, environment, market_id, currency, vehicle, \
         pickup_latitude, pickup_longitude, pickup_postcode, dropoff_latitude, \
         dropoff_longitude, dropoff_postcode, weight_grams, scheduled_for, priced_for, \
         demand_permille, distance_metres, duration_seconds, total_amount_minor, breakdown, \
         price_book_version, created_at, expires_at) ",
    );
    query.push_values([quote], |mut row, q| {
        row.push_bind(q.id)
            .push_bind(q.merchant_id)
            .push_bind(q.environment.as_str())
            .push_bind(&q.market_id)
            .push_bind(&q.currency)
            .push_bind(q.vehicle.as_str())
            .push_bind(q.pickup_latitude)
            .push_bind(q.pickup_longitude)
            .push_bind(&q.pickup_postcode)
            .push_bind(q.dropoff_latitude)
            .push_bind(q.dropoff_longitude)
            .push_bind(&q.dropoff_postcode)
            .push_bind(q.weight_grams)
            .push_bind(q.scheduled_for)
            .push_bind(q.priced_for)
            .push_bind(q.demand_permille)
            .push_bind(q.distance_metres)
            .push_bind(q.duration_seconds)
            .push_bind(q.total_amount_minor)
            .push_bind(&q.breakdown)
            .push_bind(q.price_book_version)
            .push_bind(q.created_at)
            .push_bind(q.expires_at);
    });
    query.build().execute(pool).await?;
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
