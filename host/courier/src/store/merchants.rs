use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::domain::Environment;

pub async fn insert_merchant(
    conn: &mut PgConnection,
    id: Uuid,
    name: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO merchants (id, name) VALUES ($1, $2)")
        .bind(id)
        .bind(name)
        .execute(conn)
        .await?;
    Ok(())
}

pub struct NewApiKey<'a> {
    pub id: Uuid,
    pub merchant_id: Uuid,
    pub key: &'a str,
    pub environment: Environment,
    pub secret_hash: &'a [u8],
    pub label: &'a str,
}

pub async fn insert_api_key(
    conn: &mut PgConnection,
    new: &NewApiKey<'_>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO api_keys (id, merchant_id, key, environment, secret_hash, label) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(new.id)
    .bind(new.merchant_id)
    .bind(new.key)
    .bind(new.environment.as_str())
    .bind(new.secret_hash)
    .bind(new.label)
    .execute(conn)
    .await?;
    Ok(())
}

pub struct StoredApiKey {
    pub id: Uuid,
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub secret_hash: Vec<u8>,
    pub revoked: bool,
}

pub async fn find_api_key(pool: &PgPool, key: &str) -> Result<Option<StoredApiKey>, sqlx::Error> {
    let row: Option<(Uuid, Uuid, String, Vec<u8>, bool)> = sqlx::query_as(
        "SELECT id, merchant_id, environment, secret_hash, revoked_at IS NOT NULL \
         FROM api_keys WHERE key = $1",
    )
    .bind(key)
    .fetch_optional(pool)
    .await?;
    Ok(
        row.and_then(|(id, merchant_id, environment, secret_hash, revoked)| {
            Some(StoredApiKey {
                id,
                merchant_id,
                environment: Environment::parse(&environment)?,
                secret_hash,
                revoked,
            })
        }),
    )
}

const SETTINGS_COLUMNS: &str = "notify_customer_default AS notify_customer, \
     proof_photo_required, proof_signature_required";

pub async fn settings(
    pool: &PgPool,
    merchant_id: Uuid,
) -> Result<Option<crate::merchants::AccountSettings>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {SETTINGS_COLUMNS} FROM merchants WHERE id = $1"
    ))
    .bind(merchant_id)
    .fetch_optional(pool)
    .await
}

pub async fn change_settings(
    pool: &PgPool,
    merchant_id: Uuid,
    change: &crate::merchants::SettingsChange,
) -> Result<Option<crate::merchants::AccountSettings>, sqlx::Error> {
    sqlx::query_as(&format!(
        "UPDATE merchants SET \
             notify_customer_default = COALESCE($2, notify_customer_default), \
             proof_photo_required = COALESCE($3, proof_photo_required), \
             proof_signature_required = COALESCE($4, proof_signature_required) \
         WHERE id = $1 RETURNING {SETTINGS_COLUMNS}"
    ))
    .bind(merchant_id)
    .bind(change.notify_customer)
    .bind(change.proof_photo_required)
    .bind(change.proof_signature_required)
    .fetch_optional(pool)
    .await
}
