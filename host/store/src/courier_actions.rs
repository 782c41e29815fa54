//! The keys couriers' moves were made under (`courier_actions`), each recorded in its move's
//! transaction.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// What a key was first used for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyedAction {
    pub action: String,
    pub target_id: Uuid,
}

/// Records `key` for the courier's `action` on `target_id`, in the move's transaction: None
/// when the key is new (recorded now), else what it was first used for. Of two transactions
/// recording one key, the second waits for the first and then sees its record.
pub async fn record(
    conn: &mut PgConnection,
    courier_id: Uuid,
    key: &str,
    action: &KeyedAction,
    now: DateTime<Utc>,
) -> Result<Option<KeyedAction>, sqlx::Error> {
    let inserted = sqlx::query!(
        "INSERT INTO courier_actions (courier_id, key, action, target_id, created_at) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (courier_id, key) DO NOTHING",
        courier_id,
        key,
        action.action,
        action.target_id,
        now,
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if inserted == 1 {
        return Ok(None);
    }
    sqlx::query_as!(
        KeyedAction,
        "SELECT action, target_id FROM courier_actions WHERE courier_id = $1 AND key = $2",
        courier_id,
        key,
    )
    .fetch_optional(conn)
    .await
}

/// Drops the keys recorded before `before`; returns how many.
pub async fn prune(pool: &PgPool, before: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    Ok(
        sqlx::query!("DELETE FROM courier_actions WHERE created_at < $1", before)
            .execute(pool)
            .await?
            .rows_affected(),
    )
}
