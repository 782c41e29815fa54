//! Holds of abandoned bookings whose release is awaited (`abandoned_holds`): the provider
//! accepted the release without confirming it, and may yet say it failed.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

use courier_domain::Environment;

use crate::text_columns::Text;

/// An abandoned booking's hold whose release is not confirmed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AbandonedHold {
    pub environment: Environment,
    pub reference: String,
    pub hold_key: String,
    pub round: i32,
    pub attempts: i32,
    pub last_error: Option<String>,
    pub released_at: Option<DateTime<Utc>>,
    /// A release request is due or under way (its answer not yet written).
    pub requesting: bool,
}

/// Keeps the hold `reference` of an abandoned booking, its release (round 1) accepted and
/// awaited. Kept once: a repeat of the abandoning changes nothing.
pub async fn awaiting_release(
    conn: &mut PgConnection,
    environment: Environment,
    reference: &str,
    hold_key: &str,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    keep(conn, environment, reference, hold_key, at, None).await
}

/// Keeps the hold `reference` that the provider placed under `hold_key` for a booking that
/// holds no money (it failed, or was abandoned, before its hold was heard of), its release
/// due now. Kept once.
pub async fn to_release(
    conn: &mut PgConnection,
    environment: Environment,
    reference: &str,
    hold_key: &str,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    keep(conn, environment, reference, hold_key, at, Some(at)).await
}

async fn keep(
    conn: &mut PgConnection,
    environment: Environment,
    reference: &str,
    hold_key: &str,
    at: DateTime<Utc>,
    due_at: Option<DateTime<Utc>>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO abandoned_holds (environment, reference, hold_key, abandoned_at, due_at) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (environment, reference) DO NOTHING",
        environment.as_str(),
        reference,
        hold_key,
        at,
        due_at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The abandoned hold the provider knows by `reference`, locked for the transaction.
pub async fn lock(
    conn: &mut PgConnection,
    environment: Environment,
    reference: &str,
) -> Result<Option<AbandonedHold>, sqlx::Error> {
    sqlx::query_as!(
        AbandonedHold,
        "SELECT environment AS \"environment: Text<Environment>\", reference, hold_key, round, \
         attempts, last_error, released_at, due_at IS NOT NULL AS \"requesting!\" \
         FROM abandoned_holds WHERE environment = $1 AND reference = $2 FOR UPDATE",
        environment.as_str(),
        reference,
    )
    .fetch_optional(conn)
    .await
}

/// The provider confirmed the release.
pub async fn released(
    conn: &mut PgConnection,
    environment: Environment,
    reference: &str,
    at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE abandoned_holds SET released_at = $3, due_at = NULL, leased_until = NULL \
         WHERE environment = $1 AND reference = $2",
        environment.as_str(),
        reference,
        at,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The provider said release `round` failed (`why`): the next round is due now, unless a
/// later round was asked for already.
pub async fn release_failed(
    conn: &mut PgConnection,
    environment: Environment,
    reference: &str,
    why: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE abandoned_holds SET round = round + 1, attempts = 0, due_at = now(), \
         leased_until = NULL, last_error = $3 \
         WHERE environment = $1 AND reference = $2 AND released_at IS NULL AND due_at IS NULL",
        environment.as_str(),
        reference,
        why,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The provider said the last round failed too: nothing more is asked (the round moves past
/// the last, so operators see it is theirs to release).
pub async fn given_up(
    conn: &mut PgConnection,
    environment: Environment,
    reference: &str,
    why: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE abandoned_holds SET round = round + 1, due_at = NULL, leased_until = NULL, \
         last_error = $3 WHERE environment = $1 AND reference = $2 AND released_at IS NULL",
        environment.as_str(),
        reference,
        why,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The release request of the hold's round was accepted, to be confirmed by event: none is
/// due. (A confirmation that came meanwhile is kept.)
pub async fn asked(
    conn: &mut PgConnection,
    environment: Environment,
    reference: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE abandoned_holds SET due_at = NULL, leased_until = NULL \
         WHERE environment = $1 AND reference = $2",
        environment.as_str(),
        reference,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The release request found the provider unreachable: asked again at `due`.
pub async fn ask_again(
    conn: &mut PgConnection,
    environment: Environment,
    reference: &str,
    due: DateTime<Utc>,
    why: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE abandoned_holds SET attempts = attempts + 1, due_at = $3, leased_until = NULL, \
         last_error = $4 WHERE environment = $1 AND reference = $2 AND released_at IS NULL",
        environment.as_str(),
        reference,
        due,
        why,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Claims up to `limit` holds of `environments` whose release request is due, for `lease`
/// (one instance at a time; one that dies leaves them to the others).
pub async fn claim_due(
    pool: &PgPool,
    environments: &[&str],
    limit: i64,
    lease: std::time::Duration,
) -> Result<Vec<AbandonedHold>, sqlx::Error> {
    sqlx::query_as!(
        AbandonedHold,
        "UPDATE abandoned_holds SET leased_until = now() + make_interval(secs => $2) \
         WHERE (environment, reference) IN ( \
           SELECT environment, reference FROM abandoned_holds \
           WHERE due_at <= now() AND (leased_until IS NULL OR leased_until < now()) \
             AND environment = ANY($3) \
           ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED) \
         RETURNING environment AS \"environment: Text<Environment>\", reference, hold_key, \
           round, attempts, last_error, released_at, due_at IS NOT NULL AS \"requesting!\"",
        limit,
        lease.as_secs_f64(),
        environments as &[&str],
    )
    .fetch_all(pool)
    .await
}

/// An abandoned booking's hold whose release the provider has not confirmed, as operators see
/// it.
#[derive(Clone, Debug)]
pub struct UnreleasedHold {
    pub environment: Environment,
    pub reference: String,
    pub hold_key: String,
    pub round: i32,
    pub attempts: i32,
    pub last_error: Option<String>,
    pub abandoned_at: DateTime<Utc>,
    /// When its next release request is due; none while an answer is awaited.
    pub due_at: Option<DateTime<Utc>>,
}

/// The holds whose release is not confirmed, most rounds first, then oldest; at most `limit`.
pub async fn unreleased(pool: &PgPool, limit: i64) -> Result<Vec<UnreleasedHold>, sqlx::Error> {
    sqlx::query_as!(
        UnreleasedHold,
        "SELECT environment AS \"environment: Text<Environment>\", reference, hold_key, round, \
         attempts, last_error, abandoned_at, due_at \
         FROM abandoned_holds WHERE released_at IS NULL \
         ORDER BY round DESC, abandoned_at LIMIT $1",
        limit,
    )
    .fetch_all(pool)
    .await
}
