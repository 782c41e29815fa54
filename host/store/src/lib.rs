//! Courier's SQL, one module per table group. Queries only: rules live in `courier-domain`.

pub mod audit;
pub mod bookings;
pub mod cards;
pub mod charges;
pub mod cluster;
pub mod couriers;
pub mod dispatch;
pub mod events;
pub mod fulfilment;
pub mod jobs;
pub mod merchants;
pub mod price_books;
pub mod quotes;
pub mod reconciliation;
pub mod refunds;
pub mod sandbox;
pub mod secret_key;
pub mod text;
pub mod texts;
pub mod tracking;
pub mod webhooks;
pub mod writes;

use sqlx::{PgConnection, PgExecutor, PgPool};

/// The schema's migrations (`migrations/`), applied at start.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// Whether the database answers (the readiness check).
pub async fn ping(pool: &PgPool) -> Result<(), sqlx::Error> {
    sqlx::query!("SELECT 1 AS \"answered!\"")
        .fetch_one(pool)
        .await?;
    Ok(())
}

/// Whether the connection's server takes no writes: in recovery (a standby, or a primary
/// being restarted) or read-only.
pub async fn read_only_server(conn: &mut PgConnection) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' \
         AS \"read_only!\""
    )
    .fetch_one(conn)
    .await
}

/// `NOTIFY channel, payload`: delivered to the listeners when the executor's transaction
/// commits (at once outside one).
pub async fn notify(
    executor: impl PgExecutor<'_>,
    channel: &str,
    payload: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!("SELECT pg_notify($1, $2)", channel, payload,)
        .execute(executor)
        .await?;
    Ok(())
}
