//! Whether the database is away, and keeping the pool off read-only servers.
//!
//! The service needs a writable primary. A server in recovery (a standby, or a primary being
//! restarted) or otherwise read-only is treated like an unreachable one: new connections to
//! it are refused, and once a statement has met one (SQLSTATE `25006`), every pooled
//! connection is checked before use for a while and dropped if it is on such a server. The
//! pool then connects again to whatever `DATABASE_URL` resolves to now.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::PgConnection;

/// SQLSTATE `read_only_sql_transaction`: a write on a read-only server.
const READ_ONLY: &str = "25006";

/// How long after a statement met a read-only server pooled connections are checked.
const WATCHFUL_FOR: Duration = Duration::from_secs(30);

/// When (milliseconds since the epoch) a statement last met a read-only server; 0: never.
static READ_ONLY_MET_AT: AtomicU64 = AtomicU64::new(0);

/// Whether `error` says the database is away rather than that the request failed in it: no
/// connection to be had, the server refusing or closing connections (SQLSTATE class 08,
/// connection exceptions, and 57P, shutting down or restarting: a connection the server
/// closed while idle reports its `57P01` on the next query), or a read-only server.
pub fn is_unavailable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => true,
        sqlx::Error::Database(e) => e.code().is_some_and(|code| {
            code.starts_with("08") || code.starts_with("57P") || code == READ_ONLY
        }),
        _ => false,
    }
}

/// Takes note of `error`: after a read-only server was met, pooled connections are checked
/// before use (see [`keep_before_use`]).
pub fn take_note(error: &sqlx::Error) {
    if let sqlx::Error::Database(e) = error
        && e.code().as_deref() == Some(READ_ONLY)
    {
        READ_ONLY_MET_AT.store(millis_now(), Ordering::Relaxed);
        tracing::warn!("a statement met a read-only database server; checking pooled connections");
    }
}

/// The pool's check of a new connection: one to a read-only server is refused (the pool
/// tries again until its acquire timeout).
pub async fn accept_new(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    if on_read_only_server(conn).await? {
        return Err(sqlx::Error::Io(std::io::Error::other(
            "the database server is read-only (in recovery, or a standby)",
        )));
    }
    Ok(())
}

/// How long a pooled connection may sit unused before it is checked again before use.
const CHECK_AFTER_IDLE: Duration = Duration::from_secs(1);

/// The pool's check before lending a connection, in place of a ping on every lending: one
/// unused for [`CHECK_AFTER_IDLE`] is checked (a connection the server closed meanwhile
/// fails the check and is replaced), and while watchful, every one; one on a read-only
/// server is dropped. A connection in steady use was answered a moment ago (the pool pings
/// each on its return).
pub async fn keep_before_use(
    conn: &mut PgConnection,
    idle_for: Duration,
) -> Result<bool, sqlx::Error> {
    if idle_for < CHECK_AFTER_IDLE && !watchful(millis_now()) {
        return Ok(true);
    }
    Ok(!on_read_only_server(conn).await?)
}

async fn on_read_only_server(conn: &mut PgConnection) -> Result<bool, sqlx::Error> {
    courier_store::read_only_server(conn).await
}

fn watchful(now_ms: u64) -> bool {
    within_watch(READ_ONLY_MET_AT.load(Ordering::Relaxed), now_ms)
}

fn within_watch(met_ms: u64, now_ms: u64) -> bool {
    met_ms != 0
        && now_ms.saturating_sub(met_ms) < u64::try_from(WATCHFUL_FOR.as_millis()).unwrap_or(0)
}

fn millis_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_trouble_and_read_only_servers_are_unavailability() {
        assert!(is_unavailable(&sqlx::Error::PoolTimedOut));
        assert!(is_unavailable(&sqlx::Error::Io(std::io::Error::other(
            "reset"
        ))));
        assert!(!is_unavailable(&sqlx::Error::RowNotFound));
    }

    #[test]
    fn the_watch_lasts_its_period_after_a_read_only_server_was_met() {
        let met = 1_000_000;
        assert!(!within_watch(0, met), "never met: not watchful");
        assert!(within_watch(met, met));
        assert!(within_watch(met, met + 29_999));
        assert!(!within_watch(met, met + 30_000));
    }
}
