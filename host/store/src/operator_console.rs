//! Sessions of the operator console (`operator_sessions`), keyed by the SHA-256 of their token:
//! each a person's, who is an operator while it lasts.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use courier_domain::operators::OperatorRole;

use crate::text_columns::Text;

pub struct NewOperatorSession<'a> {
    pub token_hash: &'a [u8],
    pub person_id: Uuid,
    /// The person's address, as the audit trail names them.
    pub operator: &'a str,
    pub csrf_token: &'a str,
    pub second_factor_pending: bool,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

pub async fn insert(pool: &PgPool, session: &NewOperatorSession<'_>) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO operator_sessions (token_hash, person_id, operator, csrf_token, \
         second_factor_pending, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        session.token_hash,
        session.person_id,
        session.operator,
        session.csrf_token,
        session.second_factor_pending,
        session.created_at,
        session.expires_at,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// A session that has not expired, of a person who is an operator now, with their role now.
#[derive(Clone, Debug)]
pub struct OperatorSessionRow {
    pub person_id: Uuid,
    pub operator: String,
    pub name: String,
    pub role: OperatorRole,
    pub csrf_token: String,
    pub second_factor_pending: bool,
    /// Whether the person has a second factor to give (else they set one up first).
    pub has_second_factor: bool,
    pub expires_at: DateTime<Utc>,
}

/// The session of `token_hash`, while it has not expired and its person is an operator.
pub async fn live(
    pool: &PgPool,
    token_hash: &[u8],
    now: DateTime<Utc>,
) -> Result<Option<OperatorSessionRow>, sqlx::Error> {
    sqlx::query_as!(
        OperatorSessionRow,
        "SELECT s.person_id, s.operator, p.name, o.role AS \"role: Text<OperatorRole>\", \
           s.csrf_token, s.second_factor_pending, \
           p.totp_enabled_at IS NOT NULL AS \"has_second_factor!\", s.expires_at \
         FROM operator_sessions s \
         JOIN operator_members o ON o.person_id = s.person_id \
         JOIN people p ON p.id = s.person_id \
         WHERE s.token_hash = $1 AND s.expires_at > $2",
        token_hash,
        now,
    )
    .fetch_optional(pool)
    .await
}

/// The second factor was given: the session opens the console.
pub async fn second_factor_given(pool: &PgPool, token_hash: &[u8]) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE operator_sessions SET second_factor_pending = false WHERE token_hash = $1",
        token_hash,
    )
    .execute(pool)
    .await?;
    Ok(())
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
