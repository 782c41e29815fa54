//! Sessions of the couriers' app (`courier_sessions`) and the one-time sign-in codes
//! operators give couriers (`courier_sign_in_codes`), each keyed by the SHA-256 of its secret.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

pub struct NewCourierSession<'a> {
    pub token_hash: &'a [u8],
    pub courier_id: Uuid,
    pub csrf_token: &'a str,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

pub async fn insert(pool: &PgPool, session: &NewCourierSession<'_>) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO courier_sessions (token_hash, courier_id, csrf_token, created_at, \
         expires_at) VALUES ($1, $2, $3, $4, $5)",
        session.token_hash,
        session.courier_id,
        session.csrf_token,
        session.created_at,
        session.expires_at,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// A session that has not expired (it may have ended early: `ended_because`).
#[derive(Clone, Debug)]
pub struct CourierSessionRow {
    pub courier_id: Uuid,
    pub csrf_token: String,
    pub expires_at: DateTime<Utc>,
    /// `signed_out` or `suspended`; None while the session lasts.
    pub ended_because: Option<String>,
}

/// The session of `token_hash`, unless it has expired.
pub async fn find(
    pool: &PgPool,
    token_hash: &[u8],
    now: DateTime<Utc>,
) -> Result<Option<CourierSessionRow>, sqlx::Error> {
    sqlx::query_as!(
        CourierSessionRow,
        "SELECT courier_id, csrf_token, expires_at, ended_because FROM courier_sessions \
         WHERE token_hash = $1 AND expires_at > $2",
        token_hash,
        now,
    )
    .fetch_optional(pool)
    .await
}

/// Ends the session of `token_hash` (`because`: signed_out or suspended), unless it ended
/// already; also drops the sessions and codes that have expired.
pub async fn end(
    pool: &PgPool,
    token_hash: &[u8],
    because: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE courier_sessions SET ended_at = $3, ended_because = $2 \
         WHERE token_hash = $1 AND ended_at IS NULL",
        token_hash,
        because,
        now,
    )
    .execute(pool)
    .await?;
    sqlx::query!("DELETE FROM courier_sessions WHERE expires_at <= $1", now)
        .execute(pool)
        .await?;
    sqlx::query!(
        "DELETE FROM courier_sign_in_codes WHERE expires_at <= $1",
        now
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Ends every live session of the courier (`because`: suspended) and drops its unused sign-in
/// code, in the transaction that suspends it.
pub async fn end_all_of_courier(
    conn: &mut PgConnection,
    courier_id: Uuid,
    because: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE courier_sessions SET ended_at = $3, ended_because = $2 \
         WHERE courier_id = $1 AND ended_at IS NULL",
        courier_id,
        because,
        now,
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        "DELETE FROM courier_sign_in_codes WHERE courier_id = $1",
        courier_id
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Keeps `code_hash` as the courier's one sign-in code, replacing any it had.
pub async fn replace_code(
    conn: &mut PgConnection,
    courier_id: Uuid,
    code_hash: &[u8],
    issued_by: &str,
    now: DateTime<Utc>,
    expires_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "DELETE FROM courier_sign_in_codes WHERE courier_id = $1",
        courier_id
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!(
        "INSERT INTO courier_sign_in_codes (code_hash, courier_id, issued_by, created_at, \
         expires_at) VALUES ($1, $2, $3, $4, $5)",
        code_hash,
        courier_id,
        issued_by,
        now,
        expires_at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Uses up the sign-in code of `code_hash`: its courier, or None when no such code is
/// unexpired. Of two sign-ins with one code, one gets it.
pub async fn use_code(
    pool: &PgPool,
    code_hash: &[u8],
    now: DateTime<Utc>,
) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar!(
        "DELETE FROM courier_sign_in_codes WHERE code_hash = $1 AND expires_at > $2 \
         RETURNING courier_id",
        code_hash,
        now,
    )
    .fetch_optional(pool)
    .await
}
