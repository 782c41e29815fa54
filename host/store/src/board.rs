//! A market's board, read narrow: where each courier online, job searching and job under way
//! is, and what colours it, one short row each (no stop documents, merchants or names of
//! jobs); the service groups them by area and reads the few it lists in full by id.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use courier_domain::Environment;

/// An area of the map, in degrees.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    pub south: f64,
    pub west: f64,
    pub north: f64,
    pub east: f64,
}

/// The environments whose jobs are read: one, or both when None (an array, so that one
/// plan serves every read).
fn environments(environment: Option<Environment>) -> Vec<String> {
    let shown = environment
        .as_ref()
        .map_or(&Environment::ALL[..], std::slice::from_ref);
    shown.iter().map(|e| e.as_str().to_owned()).collect()
}

/// A courier online, where it was seen lately (if it was).
#[derive(Clone, Debug, PartialEq)]
pub struct CourierSpot {
    pub id: Uuid,
    pub name: String,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    /// Whether it has a job under way.
    pub busy: bool,
}

/// The active couriers online in `market` (only those seen since `fresh_since` `within` an
/// area, when given), with where they were seen since `fresh_since`; `limit` of them at most,
/// any.
pub async fn couriers_online(
    pool: &PgPool,
    market: &str,
    fresh_since: DateTime<Utc>,
    within: Option<Bounds>,
    limit: i64,
) -> Result<Vec<CourierSpot>, sqlx::Error> {
    sqlx::query_as!(
        CourierSpot,
        // Whether each is busy from one pass over the jobs under way (hashed), not a probe
        // a courier.
        "SELECT c.id, c.name, p.latitude AS \"latitude?\", p.longitude AS \"longitude?\", \
           coalesce(c.id IN (SELECT j.courier_id FROM jobs j \
             WHERE j.status IN ('assigned', 'in_transit') AND j.courier_id IS NOT NULL), \
             false) AS \"busy!\" \
         FROM couriers c \
         LEFT JOIN courier_positions p ON p.courier_id = c.id AND p.seen_at >= $2 \
         WHERE c.market_id = $1 AND c.online AND c.status = 'active' \
           AND ($3::float8 IS NULL OR (p.latitude BETWEEN $3 AND $5 \
             AND p.longitude BETWEEN $4 AND $6)) \
         LIMIT $7",
        market,
        fresh_since,
        within.map(|b| b.south),
        within.map(|b| b.west),
        within.map(|b| b.north),
        within.map(|b| b.east),
        limit,
    )
    .fetch_all(pool)
    .await
}

/// A job searching, at its pickup.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchSpot {
    pub id: Uuid,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    /// Since when it searches (its search opened, else due to open, else booked).
    pub since: DateTime<Utc>,
    pub pickup_ready_at: Option<DateTime<Utc>>,
}

/// The jobs searching in `market` (of `environment` only, when given; with their pickup
/// `within` an area, when given); `limit` of them at most, any.
pub async fn jobs_searching(
    pool: &PgPool,
    market: &str,
    environment: Option<Environment>,
    within: Option<Bounds>,
    limit: i64,
) -> Result<Vec<SearchSpot>, sqlx::Error> {
    sqlx::query_as!(
        SearchSpot,
        // Each stop's coordinates read once (`OFFSET 0` keeps the planner from reading them
        // again for the area's test).
        "SELECT s.id AS \"id!\", s.latitude, s.longitude, s.since AS \"since!\", \
           s.pickup_ready_at \
         FROM (SELECT j.id, (j.pickup->>'latitude')::float8 AS latitude, \
                 (j.pickup->>'longitude')::float8 AS longitude, \
                 coalesce(j.search_opened_at, j.search_opens_at, j.booked_at) AS since, \
                 j.pickup_ready_at \
               FROM jobs j WHERE j.status = 'searching' AND j.market_id = $1 \
                 AND j.environment = ANY($2) OFFSET 0) s \
         WHERE $3::float8 IS NULL \
           OR (s.latitude BETWEEN $3 AND $5 AND s.longitude BETWEEN $4 AND $6) \
         LIMIT $7",
        market,
        &environments(environment),
        within.map(|b| b.south),
        within.map(|b| b.west),
        within.map(|b| b.north),
        within.map(|b| b.east),
        limit,
    )
    .fetch_all(pool)
    .await
}

/// A job under way, at its next stop: the pickup until collected, then the drop-off.
#[derive(Clone, Debug, PartialEq)]
pub struct UnderWaySpot {
    pub id: Uuid,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    pub assigned_at: Option<DateTime<Utc>>,
}

/// The jobs under way in `market` (of `environment` only, when given; with their next stop
/// `within` an area, when given); `limit` of them at most, any.
pub async fn jobs_under_way(
    pool: &PgPool,
    market: &str,
    environment: Option<Environment>,
    within: Option<Bounds>,
    limit: i64,
) -> Result<Vec<UnderWaySpot>, sqlx::Error> {
    sqlx::query_as!(
        UnderWaySpot,
        "SELECT s.id AS \"id!\", s.latitude, s.longitude, s.assigned_at \
         FROM (SELECT j.id, (n.stop->>'latitude')::float8 AS latitude, \
                 (n.stop->>'longitude')::float8 AS longitude, j.assigned_at \
               FROM jobs j, LATERAL (SELECT CASE WHEN j.status = 'assigned' THEN j.pickup \
                 ELSE j.dropoff END AS stop) n \
               WHERE j.status IN ('assigned', 'in_transit') AND j.market_id = $1 \
                 AND j.environment = ANY($2) OFFSET 0) s \
         WHERE $3::float8 IS NULL \
           OR (s.latitude BETWEEN $3 AND $5 AND s.longitude BETWEEN $4 AND $6) \
         LIMIT $7",
        market,
        &environments(environment),
        within.map(|b| b.south),
        within.map(|b| b.west),
        within.map(|b| b.north),
        within.map(|b| b.east),
        limit,
    )
    .fetch_all(pool)
    .await
}
