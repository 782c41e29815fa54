//! Courier's SQL, one module per table group. Queries only: rules live in `courier-domain`.
//!
//! Statements are written with sqlx's compile-checked macros (`query!`, `query_as!`,
//! `query_scalar!`), checked against the migrated schema through `.sqlx/`. These are not, and
//! why; each runs against a real PostgreSQL in this crate's `tests/`:
//!
//! - **Writes joined into one statement** ([`writes::Writes`]): each write is a
//!   data-modifying `WITH` part, and which parts a statement has, and how many rows each
//!   inserts, is known only at run time (a booking with or without a charge, a batch of any
//!   size), while the macros check one fixed text. The parts: [`jobs::insert_jobs`],
//!   [`jobs::mark_quote_used`], [`events::insert`], [`events::insert_many`],
//!   [`events::insert_if`], [`sandbox::upsert`], [`charges::insert_charges`],
//!   [`charges::insert_moves`], [`bookings::attempts::insert_attempts`],
//!   [`bookings::attempts::delete_attempt`], [`bookings::attempts::release_quote`],
//!   [`bookings::write::store_response`]; the statements: [`bookings::write::run_booking_statement`]
//!   (a booking's whole write) and [`fulfilment::move_job_along`] (a job's move).
//! - **Optional filters**: [`jobs::list`] and its count, whose `WHERE` has only the filters
//!   asked for.
//! - **Statements planned anew at every call** ([`dispatch::unoffered_searches`],
//!   [`webhooks::claim_due`]): the macros prepare a named statement whose plan is kept, and a
//!   plan kept from when the table was small reads the whole table once it has grown.
//! - **An identifier** ([`cluster::create_database_if_missing`]): `CREATE DATABASE` takes a
//!   name, which cannot be a bound parameter.

pub mod abandoned_holds;
pub mod audit;
pub mod board;
pub mod bookings;
pub mod cards;
pub mod charges;
pub mod cluster;
pub mod console;
pub mod courier_actions;
pub mod courier_sessions;
pub mod couriers;
pub mod customer_texts;
pub mod dispatch;
pub mod embedded;
pub mod events;
pub mod form_answers;
pub mod fulfilment;
pub mod jobs;
pub mod mail;
pub mod merchants;
pub mod operations;
pub mod operator_console;
pub mod operators;
pub mod passkeys;
pub mod people;
pub mod price_books;
pub mod provider_events;
pub mod quotes;
pub mod reconciliation;
pub mod refunds;
pub mod sandbox;
pub mod scratch;
pub mod secret_key;
pub mod text_columns;
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
