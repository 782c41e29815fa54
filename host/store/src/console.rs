//! Sessions of the merchant console (`console_sessions`), keyed by the SHA-256 of their token:
//! a person's, in one of their teams and one environment at a time.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use courier_domain::Environment;
use courier_domain::limits::LimitOverrides;
use courier_domain::team::Role;

use crate::text_columns::Text;

/// A live session: not expired, and its person still in the team it is in.
#[derive(Clone, Debug)]
pub struct SessionRow {
    pub id: Uuid,
    pub person_id: Uuid,
    pub email: String,
    pub name: String,
    pub merchant_id: Uuid,
    pub merchant_name: String,
    pub role: Role,
    pub environment: Environment,
    pub csrf_token: String,
    pub expires_at: DateTime<Utc>,
    pub authenticated_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
    /// The merchant's own request budgets, which the session spends as its keys do.
    pub limits: LimitOverrides,
    /// The team requires a second factor and the person has none yet.
    pub needs_second_factor: bool,
}

pub struct NewSession<'a> {
    pub id: Uuid,
    pub token_hash: &'a [u8],
    pub person_id: Uuid,
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub csrf_token: &'a str,
    pub now: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub user_agent: &'a str,
    pub client_address: &'a str,
    /// Opened by the password of a person with a second factor: waiting for the code.
    pub second_factor_pending: bool,
}

pub async fn insert(pool: &PgPool, session: &NewSession<'_>) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO console_sessions (id, token_hash, person_id, merchant_id, environment, \
         csrf_token, created_at, expires_at, authenticated_at, last_seen_at, user_agent, \
         client_address, second_factor_pending) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $7, $7, $9, $10, $11)",
        session.id,
        session.token_hash,
        session.person_id,
        session.merchant_id,
        session.environment.as_str(),
        session.csrf_token,
        session.now,
        session.expires_at,
        session.user_agent,
        session.client_address,
        session.second_factor_pending,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// The session of `token_hash`, while it has not expired and its person is in its team.
pub async fn live(
    pool: &PgPool,
    token_hash: &[u8],
    now: DateTime<Utc>,
) -> Result<Option<SessionRow>, sqlx::Error> {
    let row = sqlx::query!(
        "SELECT s.id, s.person_id, p.email, p.name, s.merchant_id, m.name AS merchant_name, \
         t.role AS \"role: Text<Role>\", s.environment AS \"environment: Text<Environment>\", \
         s.csrf_token, s.expires_at, s.authenticated_at, s.last_seen_at, \
         m.rate_limit_quotes_per_minute, m.rate_limit_bookings_per_minute, \
         m.rate_limit_reads_per_minute, \
         (m.require_second_factor AND p.totp_enabled_at IS NULL) AS \"needs_second_factor!\" \
         FROM console_sessions s \
         JOIN merchant_members t ON t.person_id = s.person_id AND t.merchant_id = s.merchant_id \
         JOIN people p ON p.id = s.person_id \
         JOIN merchants m ON m.id = s.merchant_id \
         WHERE s.token_hash = $1 AND s.expires_at > $2 AND NOT s.second_factor_pending",
        token_hash,
        now,
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| SessionRow {
        id: r.id,
        person_id: r.person_id,
        email: r.email,
        name: r.name,
        merchant_id: r.merchant_id,
        merchant_name: r.merchant_name,
        role: r.role.0,
        environment: r.environment.0,
        csrf_token: r.csrf_token,
        expires_at: r.expires_at,
        authenticated_at: r.authenticated_at,
        last_seen_at: r.last_seen_at,
        limits: crate::merchants::limit_overrides(
            r.rate_limit_quotes_per_minute,
            r.rate_limit_bookings_per_minute,
            r.rate_limit_reads_per_minute,
        ),
        needs_second_factor: r.needs_second_factor,
    }))
}

/// The person of the session of `token_hash` while it waits for its second factor.
pub async fn waiting_for_code(
    pool: &PgPool,
    token_hash: &[u8],
    now: DateTime<Utc>,
) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT person_id FROM console_sessions \
         WHERE token_hash = $1 AND second_factor_pending AND expires_at > $2",
        token_hash,
        now,
    )
    .fetch_optional(pool)
    .await
}

/// The second factor was given: the session opens pages until `expires_at`.
pub async fn code_given(
    pool: &PgPool,
    token_hash: &[u8],
    now: DateTime<Utc>,
    expires_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE console_sessions SET second_factor_pending = false, authenticated_at = $2, \
         expires_at = $3 WHERE token_hash = $1 AND second_factor_pending",
        token_hash,
        now,
        expires_at,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Notes that the session was used at `now`.
pub async fn seen(pool: &PgPool, id: Uuid, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE console_sessions SET last_seen_at = $2 WHERE id = $1",
        id,
        now
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Moves the session to `merchant_id`'s team and `environment`; false when its person is not
/// in that team (nothing changes).
pub async fn switch(
    pool: &PgPool,
    token_hash: &[u8],
    merchant_id: Uuid,
    environment: Environment,
) -> Result<bool, sqlx::Error> {
    let moved = sqlx::query!(
        "UPDATE console_sessions s SET merchant_id = $2, environment = $3 \
         WHERE s.token_hash = $1 AND EXISTS (SELECT 1 FROM merchant_members t \
           WHERE t.person_id = s.person_id AND t.merchant_id = $2)",
        token_hash,
        merchant_id,
        environment.as_str(),
    )
    .execute(pool)
    .await?;
    Ok(moved.rows_affected() == 1)
}

/// The person gave their password again at `now`.
pub async fn reauthenticated(
    pool: &PgPool,
    token_hash: &[u8],
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE console_sessions SET authenticated_at = $2 WHERE token_hash = $1",
        token_hash,
        now,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// One of a person's sessions, as their sessions page lists it.
#[derive(Clone, Debug)]
pub struct ListedSession {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub user_agent: String,
    pub client_address: String,
}

/// `person_id`'s live sessions, the most recently used first.
pub async fn of_person(
    pool: &PgPool,
    person_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Vec<ListedSession>, sqlx::Error> {
    sqlx::query_as!(
        ListedSession,
        "SELECT id, created_at, last_seen_at, expires_at, user_agent, client_address \
         FROM console_sessions WHERE person_id = $1 AND expires_at > $2 \
         ORDER BY last_seen_at DESC LIMIT 100",
        person_id,
        now,
    )
    .fetch_all(pool)
    .await
}

/// Ends `person_id`'s session `id`; false when they have none by that id.
pub async fn revoke(pool: &PgPool, person_id: Uuid, id: Uuid) -> Result<bool, sqlx::Error> {
    let ended = sqlx::query!(
        "DELETE FROM console_sessions WHERE person_id = $1 AND id = $2",
        person_id,
        id,
    )
    .execute(pool)
    .await?;
    Ok(ended.rows_affected() == 1)
}

/// Ends a session (sign-out); also drops the expired ones.
pub async fn end(pool: &PgPool, token_hash: &[u8], now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "DELETE FROM console_sessions WHERE token_hash = $1 OR expires_at <= $2",
        token_hash,
        now,
    )
    .execute(pool)
    .await?;
    Ok(())
}
