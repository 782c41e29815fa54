//! People's passkeys (`passkeys`) and the WebAuthn ceremonies waiting for a browser's answer
//! (`passkey_ceremonies`).

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

pub struct NewPasskey<'a> {
    pub id: Uuid,
    pub person_id: Uuid,
    pub credential_id: &'a [u8],
    pub name: &'a str,
    pub passkey: &'a Value,
    pub now: DateTime<Utc>,
}

/// Keeps a passkey; false when its credential is kept already (registered twice).
pub async fn insert(pool: &PgPool, passkey: &NewPasskey<'_>) -> Result<bool, sqlx::Error> {
    let done = sqlx::query!(
        "INSERT INTO passkeys (id, person_id, credential_id, name, passkey, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (credential_id) DO NOTHING",
        passkey.id,
        passkey.person_id,
        passkey.credential_id,
        passkey.name,
        passkey.passkey,
        passkey.now,
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A person's passkey.
#[derive(Clone, Debug)]
pub struct PasskeyRow {
    pub id: Uuid,
    pub name: String,
    pub passkey: Value,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
}

/// The person's passkeys, oldest first.
pub async fn of_person(pool: &PgPool, person_id: Uuid) -> Result<Vec<PasskeyRow>, sqlx::Error> {
    sqlx::query_as!(
        PasskeyRow,
        "SELECT id, name, passkey, created_at, last_used_at FROM passkeys \
         WHERE person_id = $1 ORDER BY created_at, id",
        person_id,
    )
    .fetch_all(pool)
    .await
}

/// Notes a passkey's use, with what its last use changed (its signature counter).
pub async fn used(
    pool: &PgPool,
    id: Uuid,
    passkey: &Value,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE passkeys SET passkey = $2, last_used_at = $3 WHERE id = $1",
        id,
        passkey,
        now,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Removes the person's passkey; false when they have no such one.
pub async fn remove(pool: &PgPool, person_id: Uuid, id: Uuid) -> Result<bool, sqlx::Error> {
    let done = sqlx::query!(
        "DELETE FROM passkeys WHERE id = $1 AND person_id = $2",
        id,
        person_id,
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Removes all the person's passkeys (their second factor was turned off).
pub async fn remove_all(pool: &PgPool, person_id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query!("DELETE FROM passkeys WHERE person_id = $1", person_id)
        .execute(pool)
        .await?;
    Ok(())
}

/// Keeps a ceremony's state until `expires_at`.
pub async fn begin_ceremony(
    pool: &PgPool,
    id: Uuid,
    person_id: Uuid,
    purpose: &str,
    state: &Value,
    expires_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO passkey_ceremonies (id, person_id, purpose, state, expires_at) \
         VALUES ($1, $2, $3, $4, $5)",
        id,
        person_id,
        purpose,
        state,
        expires_at,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Takes (and so ends) the person's ceremony of `purpose`: its state, or None when there is no
/// such ceremony, it has expired, or it was taken already. Expired ones are dropped too.
pub async fn take_ceremony(
    pool: &PgPool,
    id: Uuid,
    person_id: Uuid,
    purpose: &str,
    now: DateTime<Utc>,
) -> Result<Option<Value>, sqlx::Error> {
    let state = sqlx::query_scalar!(
        "DELETE FROM passkey_ceremonies WHERE id = $1 AND person_id = $2 AND purpose = $3 \
         AND expires_at > $4 RETURNING state",
        id,
        person_id,
        purpose,
        now,
    )
    .fetch_optional(pool)
    .await?;
    sqlx::query!("DELETE FROM passkey_ceremonies WHERE expires_at <= $1", now)
        .execute(pool)
        .await?;
    Ok(state)
}
