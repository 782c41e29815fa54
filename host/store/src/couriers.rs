//! Couriers, their credentials, whether they are online, and where they are.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use courier_domain::Vehicle;
use courier_domain::dispatch::CourierStatus;

use crate::text_columns::Text;

/// A courier as stored (the credential's secret only as its keyed hash).
#[derive(Clone, Debug)]
pub struct CourierRow {
    pub id: Uuid,
    pub name: String,
    pub phone: String,
    pub vehicle: Vehicle,
    pub market_id: String,
    pub status: CourierStatus,
    pub online: bool,
    pub credential_key: String,
    pub secret_hash: Vec<u8>,
    pub created_at: DateTime<Utc>,
    pub suspended_at: Option<DateTime<Utc>>,
    pub suspension_reason: Option<String>,
    /// This shift, offers may carry several jobs (a route): the courier said so going online.
    pub takes_routes: bool,
}

pub async fn insert(conn: &mut PgConnection, courier: &CourierRow) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO couriers (id, name, phone, vehicle, market_id, status, online, \
         credential_key, secret_hash, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        courier.id,
        &courier.name,
        &courier.phone,
        courier.vehicle.as_str(),
        &courier.market_id,
        courier.status.as_str(),
        courier.online,
        &courier.credential_key,
        &courier.secret_hash,
        courier.created_at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn find(pool: &PgPool, id: Uuid) -> Result<Option<CourierRow>, sqlx::Error> {
    sqlx::query_as!(CourierRow, "SELECT id, name, phone, vehicle AS \"vehicle: Text<Vehicle>\", market_id, status AS \"status: Text<CourierStatus>\", online, credential_key, secret_hash, created_at, suspended_at, suspension_reason, takes_routes FROM couriers WHERE id = $1", id,)
        .fetch_optional(pool)
        .await
}

/// The courier, locked for this transaction.
pub async fn lock(conn: &mut PgConnection, id: Uuid) -> Result<Option<CourierRow>, sqlx::Error> {
    sqlx::query_as!(
        CourierRow,
        "SELECT id, name, phone, vehicle AS \"vehicle: Text<Vehicle>\", market_id, status AS \"status: Text<CourierStatus>\", online, credential_key, secret_hash, created_at, suspended_at, suspension_reason, takes_routes FROM couriers WHERE id = $1 FOR UPDATE",
        id,
    )
    .fetch_optional(conn)
    .await
}

pub async fn find_by_key(pool: &PgPool, key: &str) -> Result<Option<CourierRow>, sqlx::Error> {
    sqlx::query_as!(
        CourierRow,
        "SELECT id, name, phone, vehicle AS \"vehicle: Text<Vehicle>\", market_id, status AS \"status: Text<CourierStatus>\", online, credential_key, secret_hash, created_at, suspended_at, suspension_reason, takes_routes FROM couriers WHERE credential_key = $1",
        key,
    )
    .fetch_optional(pool)
    .await
}

/// All couriers, or a market's, newest first.
pub async fn list(pool: &PgPool, market: Option<&str>) -> Result<Vec<CourierRow>, sqlx::Error> {
    sqlx::query_as!(
        CourierRow,
        "SELECT id, name, phone, vehicle AS \"vehicle: Text<Vehicle>\", market_id, status AS \"status: Text<CourierStatus>\", online, credential_key, secret_hash, created_at, suspended_at, suspension_reason, takes_routes FROM couriers WHERE $1::text IS NULL OR market_id = $1 \
         ORDER BY created_at DESC, id DESC",
        market,
    )
    .fetch_all(pool)
    .await
}

/// A courier by name, for a form's list.
#[derive(Clone, Debug)]
pub struct CourierNamed {
    pub id: Uuid,
    pub name: String,
    pub vehicle: Vehicle,
}

/// The suspended couriers of `market`, by name, up to `limit`.
pub async fn suspended_in_market(
    pool: &PgPool,
    market: &str,
    limit: i64,
) -> Result<Vec<CourierNamed>, sqlx::Error> {
    sqlx::query_as!(
        CourierNamed,
        "SELECT id, name, vehicle AS \"vehicle: Text<Vehicle>\" FROM couriers \
         WHERE market_id = $1 AND status = 'suspended' ORDER BY name, id LIMIT $2",
        market,
        limit,
    )
    .fetch_all(pool)
    .await
}

/// Suspends (with a reason, and offline) or reinstates a courier.
pub async fn set_status(
    conn: &mut PgConnection,
    id: Uuid,
    status: CourierStatus,
    at: Option<DateTime<Utc>>,
    reason: Option<&str>,
) -> Result<CourierRow, sqlx::Error> {
    sqlx::query_as!(
        CourierRow,
        "UPDATE couriers SET status = $2, suspended_at = $3, suspension_reason = $4, \
         online = CASE WHEN $2 = 'suspended' THEN false ELSE online END \
         WHERE id = $1 RETURNING id, name, phone, vehicle AS \"vehicle: Text<Vehicle>\", market_id, status AS \"status: Text<CourierStatus>\", online, credential_key, secret_hash, created_at, suspended_at, suspension_reason, takes_routes",
        id,
        status.as_str(),
        at,
        reason,
    )
    .fetch_one(conn)
    .await
}

/// Puts the courier online (saying whether it takes routes this shift) or offline.
pub async fn set_online(
    conn: &mut PgConnection,
    id: Uuid,
    online: bool,
    takes_routes: bool,
) -> Result<CourierRow, sqlx::Error> {
    sqlx::query_as!(
        CourierRow,
        "UPDATE couriers SET online = $2, takes_routes = $3 WHERE id = $1 RETURNING id, name, phone, vehicle AS \"vehicle: Text<Vehicle>\", market_id, status AS \"status: Text<CourierStatus>\", online, credential_key, secret_hash, created_at, suspended_at, suspension_reason, takes_routes",
        id,
        online,
        takes_routes,
    )
    .fetch_one(conn)
    .await
}

/// Keeps the courier's latest position, and adds it to its trail unless the trail has a point
/// less than `trail_every` older.
pub async fn report_position(
    pool: &PgPool,
    id: Uuid,
    latitude: f64,
    longitude: f64,
    seen_at: DateTime<Utc>,
    trail_every: chrono::Duration,
) -> Result<(), sqlx::Error> {
    // One statement: one round trip on a path every courier's phone takes every few seconds.
    sqlx::query!(
        "WITH latest AS ( \
           INSERT INTO courier_positions (courier_id, latitude, longitude, seen_at) \
           VALUES ($1, $2, $3, $4) ON CONFLICT (courier_id) DO UPDATE \
           SET latitude = $2, longitude = $3, seen_at = $4) \
         INSERT INTO courier_trail_points (courier_id, seen_at, latitude, longitude) \
         SELECT $1, $4, $2, $3 WHERE NOT EXISTS ( \
           SELECT 1 FROM courier_trail_points WHERE courier_id = $1 \
             AND seen_at > $4::timestamptz - make_interval(secs => $5)) \
         ON CONFLICT DO NOTHING",
        id,
        latitude,
        longitude,
        seen_at,
        trail_every.as_seconds_f64(),
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// A point of a courier's trail.
#[derive(Clone, Debug)]
pub struct TrailPoint {
    pub seen_at: DateTime<Utc>,
    pub latitude: f64,
    pub longitude: f64,
}

/// The courier's trail since `since`, oldest first, its latest `limit` points.
pub async fn trail_since(
    pool: &PgPool,
    id: Uuid,
    since: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<TrailPoint>, sqlx::Error> {
    let mut points = sqlx::query_as!(
        TrailPoint,
        "SELECT seen_at, latitude, longitude FROM courier_trail_points \
         WHERE courier_id = $1 AND seen_at >= $2 ORDER BY seen_at DESC LIMIT $3",
        id,
        since,
        limit,
    )
    .fetch_all(pool)
    .await?;
    points.reverse();
    Ok(points)
}

/// Deletes trail points seen before `before`; how many.
pub async fn prune_trails(pool: &PgPool, before: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    let done = sqlx::query!(
        "DELETE FROM courier_trail_points WHERE seen_at < $1",
        before
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}

/// A courier who could be offered jobs: its vehicle and last known position.
#[derive(Clone, Debug)]
pub struct AvailableCourier {
    pub id: Uuid,
    pub vehicle: Vehicle,
    /// Offers may carry several jobs.
    pub takes_routes: bool,
    pub latitude: f64,
    pub longitude: f64,
}

/// Up to `limit` couriers of `market` who could be offered jobs: online, active, a position
/// seen since `fresh_since`, no job under way and no open offer; by id.
pub async fn available_in_market(
    conn: &mut PgConnection,
    market: &str,
    fresh_since: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<AvailableCourier>, sqlx::Error> {
    sqlx::query_as!(
        AvailableCourier,
        "SELECT c.id, c.vehicle AS \"vehicle: Text<Vehicle>\", c.takes_routes, p.latitude, \
           p.longitude \
         FROM couriers c JOIN courier_positions p ON p.courier_id = c.id \
         WHERE c.market_id = $1 AND c.status = 'active' AND c.online AND p.seen_at >= $2 \
           AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.courier_id = c.id \
                           AND j.status IN ('assigned', 'in_transit')) \
           AND NOT EXISTS (SELECT 1 FROM courier_offers o WHERE o.courier_id = c.id \
                           AND o.status = 'open') \
         ORDER BY c.id LIMIT $3",
        market,
        fresh_since,
        limit,
    )
    .fetch_all(conn)
    .await
}

/// Up to `limit` couriers of `market` whose apps take routes, online, active, seen since
/// `fresh_since`, with no open offer, and with jobs assigned of which none is collected yet:
/// those that may be at a pickup, waiting for parcels; by id.
pub async fn collecting_in_market(
    conn: &mut PgConnection,
    market: &str,
    fresh_since: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<AvailableCourier>, sqlx::Error> {
    sqlx::query_as!(
        AvailableCourier,
        "SELECT c.id, c.vehicle AS \"vehicle: Text<Vehicle>\", c.takes_routes, p.latitude, \
           p.longitude \
         FROM couriers c JOIN courier_positions p ON p.courier_id = c.id \
         WHERE c.market_id = $1 AND c.status = 'active' AND c.online AND c.takes_routes \
           AND p.seen_at >= $2 \
           AND EXISTS (SELECT 1 FROM jobs j WHERE j.courier_id = c.id \
                       AND j.status = 'assigned') \
           AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.courier_id = c.id \
                           AND j.status = 'in_transit') \
           AND NOT EXISTS (SELECT 1 FROM courier_offers o WHERE o.courier_id = c.id \
                           AND o.status = 'open') \
         ORDER BY c.id LIMIT $3",
        market,
        fresh_since,
        limit,
    )
    .fetch_all(conn)
    .await
}

/// A courier online in a market, for the operator's map: where last seen (nothing when not
/// seen since the freshness cut-off), and whether a job is under way.
#[derive(Clone, Debug)]
pub struct OnlineCourier {
    pub id: Uuid,
    pub name: String,
    pub vehicle: Vehicle,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    pub seen_at: Option<DateTime<Utc>>,
    pub busy: bool,
}

/// The active couriers online in `market` seen since `fresh_since`, nearest `(latitude,
/// longitude)` in a straight line first, up to `limit`.
pub async fn nearest_online(
    pool: &PgPool,
    market: &str,
    (latitude, longitude): (f64, f64),
    fresh_since: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<OnlineCourier>, sqlx::Error> {
    // Degrees of longitude shrink with latitude: scaled, the order is the distance's.
    sqlx::query_as!(
        OnlineCourier,
        "SELECT c.id, c.name, c.vehicle AS \"vehicle: Text<Vehicle>\", \
           p.latitude AS \"latitude?\", p.longitude AS \"longitude?\", p.seen_at AS \"seen_at?\", \
           EXISTS (SELECT 1 FROM jobs j WHERE j.courier_id = c.id \
                   AND j.status IN ('assigned', 'in_transit')) AS \"busy!\" \
         FROM couriers c JOIN courier_positions p ON p.courier_id = c.id \
         WHERE c.market_id = $1 AND c.online AND c.status = 'active' AND p.seen_at >= $2 \
         ORDER BY (p.latitude - $3) ^ 2 + ((p.longitude - $4) * cos(radians($3))) ^ 2, c.id \
         LIMIT $5",
        market,
        fresh_since,
        latitude,
        longitude,
        limit,
    )
    .fetch_all(pool)
    .await
}

/// The couriers of `ids` (those a board lists), with where each was seen since `fresh_since`
/// and whether it has a job under way, by name.
pub async fn on_board(
    pool: &PgPool,
    ids: &[Uuid],
    fresh_since: DateTime<Utc>,
) -> Result<Vec<OnlineCourier>, sqlx::Error> {
    sqlx::query_as!(
        OnlineCourier,
        "SELECT c.id, c.name, c.vehicle AS \"vehicle: Text<Vehicle>\", \
           p.latitude AS \"latitude?\", p.longitude AS \"longitude?\", p.seen_at AS \"seen_at?\", \
           EXISTS (SELECT 1 FROM jobs j WHERE j.courier_id = c.id \
                   AND j.status IN ('assigned', 'in_transit')) AS \"busy!\" \
         FROM couriers c \
         LEFT JOIN courier_positions p ON p.courier_id = c.id AND p.seen_at >= $2 \
         WHERE c.id = ANY($1) \
         ORDER BY c.name, c.id",
        ids,
        fresh_since,
    )
    .fetch_all(pool)
    .await
}
