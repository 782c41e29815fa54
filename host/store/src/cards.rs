//! Cards on file (the provider's references, never numbers) and the provider customer each
//! merchant's cards belong to.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use courier_domain::Environment;
use courier_domain::charge::CardStatus;

use crate::text_columns::Text;

/// A card on file as stored (the provider's reference, never the number).
#[derive(Clone, Debug)]
pub struct CardRow {
    pub id: Uuid,
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub provider_ref: String,
    pub customer_id: String,
    pub brand: String,
    pub last_four: String,
    pub expiry_month: i32,
    pub expiry_year: i32,
    pub status: CardStatus,
    pub is_default: bool,
    pub attached_at: DateTime<Utc>,
    pub dead_reason: Option<String>,
    pub died_at: Option<DateTime<Utc>>,
    pub removed_at: Option<DateTime<Utc>>,
}

impl CardRow {
    /// Active and not removed: a card a booking may charge.
    pub fn is_working(&self) -> bool {
        self.status == CardStatus::Active && self.removed_at.is_none()
    }
}

// ---- customers -------------------------------------------------------------------------

pub async fn customer(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    environment: Environment,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT customer_id FROM payment_customers WHERE merchant_id = $1 AND environment = $2",
        merchant_id,
        environment.as_str(),
    )
    .fetch_optional(conn)
    .await
}

/// Keeps the first customer id a merchant was given in an environment; returns the kept one.
pub async fn keep_customer(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    environment: Environment,
    customer_id: &str,
) -> Result<String, sqlx::Error> {
    sqlx::query!(
        "INSERT INTO payment_customers (merchant_id, environment, customer_id) \
         VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        merchant_id,
        environment.as_str(),
        customer_id,
    )
    .execute(&mut *conn)
    .await?;
    Ok(customer(conn, merchant_id, environment)
        .await?
        .unwrap_or_else(|| customer_id.to_owned()))
}

/// The merchant the provider's customer `customer_id` was kept for.
pub async fn merchant_of_customer(
    conn: &mut PgConnection,
    environment: Environment,
    customer_id: &str,
) -> Result<Option<Uuid>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT merchant_id FROM payment_customers WHERE environment = $1 AND customer_id = $2",
        environment.as_str(),
        customer_id,
    )
    .fetch_optional(conn)
    .await
}

// ---- cards -----------------------------------------------------------------------------

/// Serialises changes to one merchant's cards in one environment (default and first card).
pub async fn lock_cards(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    environment: Environment,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
        format!("payment_methods:{merchant_id}:{}", environment.as_str()),
    )
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn insert_card(conn: &mut PgConnection, card: &CardRow) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO payment_methods (id, merchant_id, environment, provider_ref, customer_id, \
         brand, last_four, expiry_month, expiry_year, status, is_default, attached_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        card.id,
        card.merchant_id,
        card.environment.as_str(),
        &card.provider_ref,
        &card.customer_id,
        &card.brand,
        &card.last_four,
        card.expiry_month,
        card.expiry_year,
        card.status.as_str(),
        card.is_default,
        card.attached_at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The merchant's cards in an environment, not removed, newest first.
pub async fn list_cards(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    environment: Environment,
) -> Result<Vec<CardRow>, sqlx::Error> {
    sqlx::query_as!(
        CardRow,
        "SELECT id, merchant_id, environment AS \"environment: Text<Environment>\", provider_ref, customer_id, brand, last_four, expiry_month, expiry_year, status AS \"status: Text<CardStatus>\", is_default, attached_at, dead_reason, died_at, removed_at FROM payment_methods \
         WHERE merchant_id = $1 AND environment = $2 AND removed_at IS NULL \
         ORDER BY attached_at DESC, id",
        merchant_id,
        environment.as_str(),
    )
    .fetch_all(conn)
    .await
}

/// One of the merchant's cards in an environment, not removed.
pub async fn card(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    environment: Environment,
    id: Uuid,
) -> Result<Option<CardRow>, sqlx::Error> {
    // By the primary key alone, the owner checked here (as `jobs::find`).
    let card = card_by_id(conn, id).await;
    match card {
        Ok(card) => Ok((card.merchant_id == merchant_id
            && card.environment == environment
            && card.removed_at.is_none())
        .then_some(card)),
        Err(sqlx::Error::RowNotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The merchant's newest card with the provider's reference, whatever its state (working,
/// dead or removed).
pub async fn card_by_reference(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    environment: Environment,
    provider_ref: &str,
) -> Result<Option<CardRow>, sqlx::Error> {
    sqlx::query_as!(
        CardRow,
        "SELECT id, merchant_id, environment AS \"environment: Text<Environment>\", provider_ref, customer_id, brand, last_four, expiry_month, expiry_year, status AS \"status: Text<CardStatus>\", is_default, attached_at, dead_reason, died_at, removed_at FROM payment_methods \
         WHERE merchant_id = $1 AND environment = $2 AND provider_ref = $3 \
         ORDER BY attached_at DESC LIMIT 1",
        merchant_id,
        environment.as_str(),
        provider_ref,
    )
    .fetch_optional(conn)
    .await
}

/// A card by id whatever its state: an open charge keeps using its card.
pub async fn card_by_id(conn: &mut PgConnection, id: Uuid) -> Result<CardRow, sqlx::Error> {
    sqlx::query_as!(CardRow, "SELECT id, merchant_id, environment AS \"environment: Text<Environment>\", provider_ref, customer_id, brand, last_four, expiry_month, expiry_year, status AS \"status: Text<CardStatus>\", is_default, attached_at, dead_reason, died_at, removed_at FROM payment_methods WHERE id = $1", id,)
        .fetch_one(conn)
        .await
}

pub async fn has_default(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    environment: Environment,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT EXISTS (SELECT 1 FROM payment_methods \
         WHERE merchant_id = $1 AND environment = $2 AND is_default) AS \"exists!\"",
        merchant_id,
        environment.as_str(),
    )
    .fetch_one(conn)
    .await
}

pub async fn clear_default(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    environment: Environment,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE payment_methods SET is_default = false \
         WHERE merchant_id = $1 AND environment = $2 AND is_default",
        merchant_id,
        environment.as_str(),
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Makes `id` the default; the caller has cleared the previous one.
pub async fn set_default(conn: &mut PgConnection, id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE payment_methods SET is_default = true WHERE id = $1",
        id,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// With no default left, the most recently attached usable card becomes the default.
pub async fn promote_default(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    environment: Environment,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE payment_methods SET is_default = true WHERE id = ( \
           SELECT id FROM payment_methods \
           WHERE merchant_id = $1 AND environment = $2 AND status = 'active' \
             AND removed_at IS NULL \
             AND NOT EXISTS (SELECT 1 FROM payment_methods d \
                             WHERE d.merchant_id = $1 AND d.environment = $2 AND d.is_default) \
           ORDER BY attached_at DESC, id LIMIT 1)",
        merchant_id,
        environment.as_str(),
    )
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn remove_card(
    conn: &mut PgConnection,
    id: Uuid,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE payment_methods SET removed_at = $2, is_default = false WHERE id = $1",
        id,
        at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks an active card dead; `None` when it was dead already (so the event is raised once).
pub async fn mark_dead(
    conn: &mut PgConnection,
    id: Uuid,
    reason: &str,
    at: DateTime<Utc>,
) -> Result<Option<CardRow>, sqlx::Error> {
    sqlx::query_as!(
        CardRow,
        "UPDATE payment_methods \
         SET status = 'dead', dead_reason = $2, died_at = $3, is_default = false \
         WHERE id = $1 AND status = 'active' RETURNING id, merchant_id, environment AS \"environment: Text<Environment>\", provider_ref, customer_id, brand, last_four, expiry_month, expiry_year, status AS \"status: Text<CardStatus>\", is_default, attached_at, dead_reason, died_at, removed_at",
        id,
        reason,
        at,
    )
    .fetch_optional(conn)
    .await
}

/// The card a new charge goes on: the default, else the most recent usable card.
pub async fn usable_card(
    conn: &mut PgConnection,
    merchant_id: Uuid,
    environment: Environment,
) -> Result<Option<CardRow>, sqlx::Error> {
    sqlx::query_as!(
        CardRow,
        "SELECT id, merchant_id, environment AS \"environment: Text<Environment>\", provider_ref, customer_id, brand, last_four, expiry_month, expiry_year, status AS \"status: Text<CardStatus>\", is_default, attached_at, dead_reason, died_at, removed_at FROM payment_methods \
         WHERE merchant_id = $1 AND environment = $2 AND status = 'active' \
           AND removed_at IS NULL \
         ORDER BY is_default DESC, attached_at DESC, id LIMIT 1",
        merchant_id,
        environment.as_str(),
    )
    .fetch_optional(conn)
    .await
}
