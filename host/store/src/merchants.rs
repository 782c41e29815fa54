use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use courier_domain::Environment;
use courier_domain::limits::LimitOverrides;

use crate::text_columns::Text;

/// A merchant's account settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct AccountSettings {
    /// `notify_customer` of bookings that do not say (the spec's "account setting").
    pub notify_customer: bool,
    pub proof_photo_required: bool,
    pub proof_signature_required: bool,
    /// The sender of the customer's SMS; null: the service's default sender.
    pub sms_sender_name: Option<String>,
    /// Requests per minute, shared by all the merchant's keys; null: the service's default (`COURIER_RATE_LIMIT_*`).
    pub rate_limit_quotes_per_minute: Option<i32>,
    pub rate_limit_bookings_per_minute: Option<i32>,
    pub rate_limit_reads_per_minute: Option<i32>,
    /// Where the merchant is written to about billing; told to the payment provider's card form.
    pub contact_email: Option<String>,
    /// Minutes from when a job is due to its parcel's being ready, for bookings that do not
    /// send `pickup_ready_at`; null: ready as soon as due.
    pub preparation_minutes: Option<i32>,
}

pub async fn insert_merchant(
    conn: &mut PgConnection,
    id: Uuid,
    name: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!("INSERT INTO merchants (id, name) VALUES ($1, $2)", id, name,)
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
    sqlx::query!(
        "INSERT INTO api_keys (id, merchant_id, key, environment, secret_hash, label) \
         VALUES ($1, $2, $3, $4, $5, $6)",
        new.id,
        new.merchant_id,
        new.key,
        new.environment.as_str(),
        new.secret_hash,
        new.label,
    )
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
    pub limits: LimitOverrides,
}

impl AccountSettings {
    /// The merchant's own request budgets, where set.
    pub fn limit_overrides(&self) -> LimitOverrides {
        limit_overrides(
            self.rate_limit_quotes_per_minute,
            self.rate_limit_bookings_per_minute,
            self.rate_limit_reads_per_minute,
        )
    }
}

/// A merchant's request budgets as stored (quotes, bookings, reads per minute): null or out
/// of range is no override.
pub fn limit_overrides(
    quotes: Option<i32>,
    bookings: Option<i32>,
    reads: Option<i32>,
) -> LimitOverrides {
    let per_minute = |value: Option<i32>| value.and_then(|v| u32::try_from(v).ok());
    LimitOverrides {
        quotes_per_minute: per_minute(quotes),
        bookings_per_minute: per_minute(bookings),
        reads_per_minute: per_minute(reads),
    }
}

/// A key with what authenticating with it needs: its merchant's request budgets too.
pub async fn find_api_key(pool: &PgPool, key: &str) -> Result<Option<StoredApiKey>, sqlx::Error> {
    let row = sqlx::query!(
        "SELECT k.id, k.merchant_id, k.environment AS \"environment: Text<Environment>\", \
                k.secret_hash, k.revoked_at IS NOT NULL AS \"revoked!\", \
                m.rate_limit_quotes_per_minute, m.rate_limit_bookings_per_minute, \
                m.rate_limit_reads_per_minute \
         FROM api_keys k JOIN merchants m ON m.id = k.merchant_id WHERE k.key = $1",
        key,
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| StoredApiKey {
        id: r.id,
        merchant_id: r.merchant_id,
        environment: r.environment.0,
        secret_hash: r.secret_hash,
        revoked: r.revoked,
        limits: limit_overrides(
            r.rate_limit_quotes_per_minute,
            r.rate_limit_bookings_per_minute,
            r.rate_limit_reads_per_minute,
        ),
    }))
}

/// A key as operators see it: never its secret or hash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[schema(as = ApiKey)]
pub struct KeyRow {
    #[serde(skip)]
    pub id: Uuid,
    pub merchant_id: Uuid,
    pub key: String,
    #[schema(value_type = courier_domain::Environment)]
    pub environment: Environment,
    pub label: String,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

pub async fn keys_of(
    conn: &mut PgConnection,
    merchant_id: Uuid,
) -> Result<Vec<KeyRow>, sqlx::Error> {
    sqlx::query_as!(
        KeyRow,
        "SELECT id, merchant_id, key, environment AS \"environment: Text<Environment>\", label, created_at, last_used_at, revoked_at FROM api_keys WHERE merchant_id = $1          ORDER BY created_at, key",
        merchant_id,
    )
    .fetch_all(conn)
    .await
}

/// The key, locked for this transaction.
pub async fn lock_key(conn: &mut PgConnection, key: &str) -> Result<Option<KeyRow>, sqlx::Error> {
    sqlx::query_as!(
        KeyRow,
        "SELECT id, merchant_id, key, environment AS \"environment: Text<Environment>\", label, created_at, last_used_at, revoked_at FROM api_keys WHERE key = $1 FOR UPDATE",
        key,
    )
    .fetch_optional(conn)
    .await
}

pub async fn find_key(conn: &mut PgConnection, id: Uuid) -> Result<KeyRow, sqlx::Error> {
    sqlx::query_as!(
        KeyRow,
        "SELECT id, merchant_id, key, environment AS \"environment: Text<Environment>\", label, created_at, last_used_at, revoked_at FROM api_keys WHERE id = $1",
        id,
    )
        .fetch_one(conn)
        .await
}

pub async fn revoke_key(
    conn: &mut PgConnection,
    id: Uuid,
    at: DateTime<Utc>,
) -> Result<KeyRow, sqlx::Error> {
    sqlx::query_as!(
        KeyRow,
        "UPDATE api_keys SET revoked_at = $2 WHERE id = $1 RETURNING id, merchant_id, key, environment AS \"environment: Text<Environment>\", label, created_at, last_used_at, revoked_at",
        id,
        at,
    )
    .fetch_one(conn)
    .await
}

/// Marks keys used at `at`, in one statement; a later mark is never overwritten.
pub async fn mark_keys_used(
    pool: &PgPool,
    ids: &[Uuid],
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE api_keys SET last_used_at = GREATEST(last_used_at, $2) WHERE id = ANY($1)",
        ids,
        at,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// A merchant in the operators' list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, sqlx::FromRow, utoipa::ToSchema)]
#[schema(as = MerchantSummary)]
pub struct MerchantRow {
    pub id: Uuid,
    pub name: String,
    pub created_at: DateTime<Utc>,
}

pub async fn list_merchants(pool: &PgPool) -> Result<Vec<MerchantRow>, sqlx::Error> {
    sqlx::query_as!(
        MerchantRow,
        "SELECT id, name, created_at FROM merchants ORDER BY created_at DESC, id",
    )
    .fetch_all(pool)
    .await
}

pub async fn find_merchant(
    conn: &mut PgConnection,
    id: Uuid,
) -> Result<Option<MerchantRow>, sqlx::Error> {
    sqlx::query_as!(
        MerchantRow,
        "SELECT id, name, created_at FROM merchants WHERE id = $1",
        id,
    )
    .fetch_optional(conn)
    .await
}

/// Locks the merchant row for this transaction; false when there is no such merchant.
pub async fn lock_merchant(conn: &mut PgConnection, id: Uuid) -> Result<bool, sqlx::Error> {
    let found = sqlx::query_scalar!(
        "SELECT 1 AS \"found!\" FROM merchants WHERE id = $1 FOR SHARE",
        id,
    )
    .fetch_optional(conn)
    .await?;
    Ok(found.is_some())
}

/// The merchant's settings; `lock` also locks its row for this transaction.
pub async fn settings(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    lock: bool,
) -> Result<Option<AccountSettings>, sqlx::Error> {
    if lock {
        sqlx::query_as!(
            AccountSettings,
            "SELECT notify_customer_default AS notify_customer, proof_photo_required, \
         proof_signature_required, sms_sender_name, rate_limit_quotes_per_minute, \
         rate_limit_bookings_per_minute, rate_limit_reads_per_minute, contact_email, \
         preparation_minutes FROM merchants WHERE id = $1 FOR UPDATE",
            merchant_id,
        )
        .fetch_optional(conn)
        .await
    } else {
        sqlx::query_as!(
            AccountSettings,
            "SELECT notify_customer_default AS notify_customer, proof_photo_required, \
         proof_signature_required, sms_sender_name, rate_limit_quotes_per_minute, \
         rate_limit_bookings_per_minute, rate_limit_reads_per_minute, contact_email, \
         preparation_minutes FROM merchants WHERE id = $1",
            merchant_id,
        )
        .fetch_optional(conn)
        .await
    }
}

pub async fn write_settings(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    settings: &AccountSettings,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE merchants SET notify_customer_default = $2, proof_photo_required = $3, \
             proof_signature_required = $4, sms_sender_name = $5, \
             rate_limit_quotes_per_minute = $6, rate_limit_bookings_per_minute = $7, \
             rate_limit_reads_per_minute = $8, contact_email = $9, preparation_minutes = $10 \
         WHERE id = $1",
        merchant_id,
        settings.notify_customer,
        settings.proof_photo_required,
        settings.proof_signature_required,
        settings.sms_sender_name.as_deref(),
        settings.rate_limit_quotes_per_minute,
        settings.rate_limit_bookings_per_minute,
        settings.rate_limit_reads_per_minute,
        settings.contact_email.as_deref(),
        settings.preparation_minutes,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The merchant's billing contact, if they gave one.
pub async fn contact_email(
    conn: &mut PgConnection,
    merchant_id: Uuid,
) -> Result<Option<String>, sqlx::Error> {
    let row = sqlx::query_scalar!(
        "SELECT contact_email FROM merchants WHERE id = $1",
        merchant_id
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.flatten())
}
