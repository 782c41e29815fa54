//! Sessions of the operator console (`operator_sessions`), keyed by the SHA-256 of their token.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

/// A session that has not expired (whether its operator token still stands is the caller's
/// to check, against `credential_check`).
#[derive(Clone, Debug)]
pub struct OperatorSessionRow {
    pub operator: String,
    pub credential_check: Vec<u8>,
    pub csrf_token: String,
    pub expires_at: DateTime<Utc>,
}

pub async fn insert(
    pool: &PgPool,
    token_hash: &[u8],
    row: &OperatorSessionRow,
    created_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO operator_sessions (token_hash, operator, credential_check, csrf_token, \
         created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)",
        token_hash,
        row.operator,
        row.credential_check,
        row.csrf_token,
        created_at,
        row.expires_at,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// The session of `token_hash`, while it has not expired.
pub async fn live(
    pool: &PgPool,
    token_hash: &[u8],
    now: DateTime<Utc>,
) -> Result<Option<OperatorSessionRow>, sqlx::Error> {
    sqlx::query_as!(
        OperatorSessionRow,
        "SELECT operator, credential_check, csrf_token, expires_at FROM operator_sessions \
         WHERE token_hash = $1 AND expires_at > $2",
        token_hash,
        now,
    )
    .fetch_optional(pool)
    .await
}

/// Ends a session (sign-out); also drops the expired ones.
pub async fn end(pool: &PgPool, token_hash: &[u8], now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "DELETE FROM operator_sessions WHERE token_hash = $1 OR expires_at <= $2",
        token_hash,
        now,
    )
    .execute(pool)
    .await?;
    Ok(())
}
