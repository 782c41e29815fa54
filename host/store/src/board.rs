//! A market's board counted by area: how many couriers online, jobs searching and jobs under
//! way fall in each cell of a grid laid over the map, where their middle is, and how pressed
//! each cell is. A busy city is drawn from these counts, not from a row per mark.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use courier_domain::Environment;

/// An area of the map, in degrees.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    pub south: f64,
    pub west: f64,
    pub north: f64,
    pub east: f64,
}

/// A grid over `bounds`: `columns` west to east, `rows` south to north.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    pub bounds: Bounds,
    pub columns: i32,
    pub rows: i32,
    /// Whether only what lies inside `bounds` is counted (a part of the market); otherwise
    /// the whole market is, and what lies outside the grid falls in no cell of it.
    pub only_inside: bool,
}

/// What one cell holds of one kind. `column` runs 1..=columns and `row` 1..=rows inside the
/// grid (0 or one past the last outside it); both are None for what has no position.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub column: Option<i32>,
    pub row: Option<i32>,
    pub count: i64,
    /// The middle of what it holds.
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    /// Couriers: how many are on a job. Jobs: 0.
    pub busy: i64,
    /// Jobs searching: the largest share of its dispatch time any of them has used. Else None.
    pub worst_share: Option<f64>,
}

/// The couriers online in `market` seen since `fresh_since`, by cell; those not seen lately
/// fall in no cell (counted only over the whole market).
pub async fn couriers_online(
    pool: &PgPool,
    market: &str,
    fresh_since: DateTime<Utc>,
    grid: &Grid,
) -> Result<Vec<Cell>, sqlx::Error> {
    let b = grid.bounds;
    sqlx::query_as!(
        Cell,
        "SELECT width_bucket(p.longitude, $3, $5, $6) AS column, \
           width_bucket(p.latitude, $2, $4, $7) AS row, count(*) AS \"count!\", \
           avg(p.latitude) AS latitude, avg(p.longitude) AS longitude, \
           count(*) FILTER (WHERE EXISTS (SELECT 1 FROM jobs j WHERE j.courier_id = c.id \
             AND j.status IN ('assigned', 'in_transit'))) AS \"busy!\", \
           NULL::float8 AS worst_share \
         FROM couriers c \
         LEFT JOIN courier_positions p ON p.courier_id = c.id AND p.seen_at >= $9 \
         WHERE c.market_id = $1 AND c.online AND c.status = 'active' \
           AND (NOT $8 OR (p.latitude BETWEEN $2 AND $4 AND p.longitude BETWEEN $3 AND $5)) \
         GROUP BY 1, 2",
        market,
        b.south,
        b.west,
        b.north,
        b.east,
        grid.columns,
        grid.rows,
        grid.only_inside,
        fresh_since,
    )
    .fetch_all(pool)
    .await
}

/// The jobs searching in `market` (of `environment` only, when given), by cell of their
/// pickup, each cell with the largest share of its dispatch time (`deadline` after it is due:
/// when it started searching or when its parcel is ready, the later) one of them has used.
pub async fn jobs_searching(
    pool: &PgPool,
    market: &str,
    environment: Option<Environment>,
    grid: &Grid,
    now: DateTime<Utc>,
    deadline: chrono::Duration,
) -> Result<Vec<Cell>, sqlx::Error> {
    let b = grid.bounds;
    let deadline_seconds = deadline.num_milliseconds() as f64 / 1000.0;
    sqlx::query_as!(
        Cell,
        // Each row's coordinates are read from its stop once (`OFFSET 0` keeps the planner
        // from reading them again for each use); the shares are in floating point seconds.
        "SELECT width_bucket(s.longitude, $3, $5, $6) AS column, \
           width_bucket(s.latitude, $2, $4, $7) AS row, count(*) AS \"count!\", \
           avg(s.latitude) AS latitude, avg(s.longitude) AS longitude, 0::bigint AS \"busy!\", \
           max(greatest(date_part('epoch', $10 - s.since), 0) \
             / greatest(date_part('epoch', s.due - s.since) + $11, 0.001)) AS worst_share \
         FROM (SELECT (j.pickup->>'latitude')::float8 AS latitude, \
                 (j.pickup->>'longitude')::float8 AS longitude, \
                 coalesce(j.search_opened_at, j.search_opens_at, j.booked_at) AS since, \
                 greatest(j.pickup_ready_at, \
                   coalesce(j.search_opened_at, j.search_opens_at, j.booked_at)) AS due \
               FROM jobs j WHERE j.status = 'searching' AND j.market_id = $1 \
                 AND ($9::text IS NULL OR j.environment = $9) OFFSET 0) s \
         WHERE NOT $8 OR (s.latitude BETWEEN $2 AND $4 AND s.longitude BETWEEN $3 AND $5) \
         GROUP BY 1, 2",
        market,
        b.south,
        b.west,
        b.north,
        b.east,
        grid.columns,
        grid.rows,
        grid.only_inside,
        environment.map(Environment::as_str),
        now,
        deadline_seconds,
    )
    .fetch_all(pool)
    .await
}

/// The jobs under way in `market` (of `environment` only, when given), by cell of their next
/// stop: the pickup until collected, then the drop-off.
pub async fn jobs_under_way(
    pool: &PgPool,
    market: &str,
    environment: Option<Environment>,
    grid: &Grid,
) -> Result<Vec<Cell>, sqlx::Error> {
    let b = grid.bounds;
    sqlx::query_as!(
        Cell,
        "SELECT width_bucket(s.longitude, $3, $5, $6) AS column, \
           width_bucket(s.latitude, $2, $4, $7) AS row, count(*) AS \"count!\", \
           avg(s.latitude) AS latitude, avg(s.longitude) AS longitude, 0::bigint AS \"busy!\", \
           NULL::float8 AS worst_share \
         FROM (SELECT (n.stop->>'latitude')::float8 AS latitude, \
                 (n.stop->>'longitude')::float8 AS longitude \
               FROM jobs j, LATERAL (SELECT CASE WHEN j.status = 'assigned' THEN j.pickup \
                 ELSE j.dropoff END AS stop) n \
               WHERE j.status IN ('assigned', 'in_transit') AND j.market_id = $1 \
                 AND ($9::text IS NULL OR j.environment = $9) OFFSET 0) s \
         WHERE NOT $8 OR (s.latitude BETWEEN $2 AND $4 AND s.longitude BETWEEN $3 AND $5) \
         GROUP BY 1, 2",
        market,
        b.south,
        b.west,
        b.north,
        b.east,
        grid.columns,
        grid.rows,
        grid.only_inside,
        environment.map(Environment::as_str),
    )
    .fetch_all(pool)
    .await
}
