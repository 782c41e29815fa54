//! Provider events (`provider_events`): the payment provider's verified notifications, each
//! kept once by its id, and applied once what they confirm is known.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use courier_domain::Environment;

use crate::text_columns::Text;

/// A notification as kept.
#[derive(Clone, Debug)]
pub struct ProviderEventRow {
    pub environment: Environment,
    pub event_id: String,
    pub reference: String,
    pub kind: String,
    /// The event as the adapter read it.
    pub event: serde_json::Value,
    pub tries: i32,
}

/// Keeps a notification, due to be applied now. False, and nothing written, when one with
/// its id was kept before.
pub async fn keep(
    conn: &mut PgConnection,
    event: &ProviderEventRow,
    at: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let kept = sqlx::query_scalar!(
        "INSERT INTO provider_events (environment, event_id, reference, kind, event, \
         received_at, next_try_at) VALUES ($1, $2, $3, $4, $5, $6, $6) \
         ON CONFLICT (environment, event_id) DO NOTHING RETURNING 1 AS \"kept!\"",
        event.environment.as_str(),
        event.event_id,
        event.reference,
        event.kind,
        event.event,
        at,
    )
    .fetch_optional(conn)
    .await?;
    Ok(kept.is_some())
}

/// Locks a kept notification that is not applied yet; None when it is (or another caller
/// holds it, and applies it).
pub async fn lock_unapplied(
    conn: &mut PgConnection,
    environment: Environment,
    event_id: &str,
) -> Result<Option<ProviderEventRow>, sqlx::Error> {
    sqlx::query_as!(
        ProviderEventRow,
        "SELECT environment AS \"environment: Text<Environment>\", event_id, reference, kind, \
         event, tries FROM provider_events \
         WHERE environment = $1 AND event_id = $2 AND applied_at IS NULL \
         FOR UPDATE SKIP LOCKED",
        environment.as_str(),
        event_id,
    )
    .fetch_optional(conn)
    .await
}

/// Marks a notification applied.
pub async fn applied(
    conn: &mut PgConnection,
    environment: Environment,
    event_id: &str,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE provider_events SET applied_at = $3, next_try_at = NULL \
         WHERE environment = $1 AND event_id = $2",
        environment.as_str(),
        event_id,
        at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Records that a notification matched nothing yet: tried again at `next_try_at`.
pub async fn not_yet(
    conn: &mut PgConnection,
    environment: Environment,
    event_id: &str,
    next_try_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE provider_events SET tries = tries + 1, next_try_at = $3 \
         WHERE environment = $1 AND event_id = $2",
        environment.as_str(),
        event_id,
        next_try_at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The ids of up to `limit` unapplied notifications in `environments` that are due, received
/// since `since` (older ones are left to operators).
pub async fn due(
    conn: &mut PgConnection,
    environments: &[&str],
    since: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<(Environment, String)>, sqlx::Error> {
    let rows = sqlx::query!(
        "SELECT environment AS \"environment: Text<Environment>\", event_id FROM provider_events \
         WHERE applied_at IS NULL AND next_try_at <= now() AND received_at >= $2 \
           AND environment = ANY($1) \
         ORDER BY next_try_at LIMIT $3",
        environments as &[&str],
        since,
        limit,
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.environment.into(), r.event_id))
        .collect())
}
