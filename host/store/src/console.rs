//! Sessions of the merchant console (`console_sessions`), keyed by the SHA-256 of their token.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use courier_domain::Environment;
use courier_domain::limits::LimitOverrides;

use crate::text_columns::Text;

/// A live session: its key is not revoked and it has not expired.
#[derive(Clone, Debug)]
pub struct SessionRow {
    pub merchant_id: Uuid,
    pub key_id: Uuid,
    pub environment: Environment,
    pub key: String,
    pub csrf_token: String,
    pub expires_at: DateTime<Utc>,
    /// The merchant's own request budgets, which the session spends as its keys do.
    pub limits: LimitOverrides,
}

pub async fn insert(
    pool: &PgPool,
    token_hash: &[u8],
    merchant_id: Uuid,
    key_id: Uuid,
    csrf_token: &str,
    created_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO console_sessions (token_hash, merchant_id, key_id, csrf_token, created_at, \
         expires_at) VALUES ($1, $2, $3, $4, $5, $6)",
        token_hash,
        merchant_id,
        key_id,
        csrf_token,
        created_at,
        expires_at,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// The session of `token_hash`, while it has not expired and its key is not revoked.
pub async fn live(
    pool: &PgPool,
    token_hash: &[u8],
    now: DateTime<Utc>,
) -> Result<Option<SessionRow>, sqlx::Error> {
    let row = sqlx::query!(
        "SELECT s.merchant_id, s.key_id, k.environment AS \"environment: Text<Environment>\", \
         k.key, s.csrf_token, s.expires_at, m.rate_limit_quotes_per_minute, \
         m.rate_limit_bookings_per_minute, m.rate_limit_reads_per_minute \
         FROM console_sessions s JOIN api_keys k ON k.id = s.key_id \
         JOIN merchants m ON m.id = s.merchant_id \
         WHERE s.token_hash = $1 AND s.expires_at > $2 AND k.revoked_at IS NULL",
        token_hash,
        now,
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| SessionRow {
        merchant_id: r.merchant_id,
        key_id: r.key_id,
        environment: r.environment.0,
        key: r.key,
        csrf_token: r.csrf_token,
        expires_at: r.expires_at,
        limits: crate::merchants::limit_overrides(
            r.rate_limit_quotes_per_minute,
            r.rate_limit_bookings_per_minute,
            r.rate_limit_reads_per_minute,
        ),
    }))
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
