//! A booking's last step: the statement that claims each booking's idempotency key with its
//! stored answer, marks its quote used and writes the job with what goes with it, all or
//! nothing; and the key's stored answer, for the bookings written in a transaction.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool, Postgres, QueryBuilder};
use uuid::Uuid;

use courier_domain::Environment;

use crate::events;
use crate::writes::Writes;

/// A booking's idempotency key, with the answer it stores for replays; none while the
/// booking waits for its provider (replays then answer that it is in progress).
pub struct ClaimedKey<'a> {
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub key: &'a str,
    pub request_hash: &'a [u8],
    pub answer: Option<(i32, &'a serde_json::Value)>,
}

/// How [`run_booking_statement`] ended.
#[derive(Debug, PartialEq, Eq)]
pub enum BookingWritten {
    /// Everything written and committed; `events_waiting`: an event it recorded awaits the
    /// webhook fan-out (see [`ending`]).
    Written { events_waiting: bool },
    /// A twin committed the key first (read it with [`super::claim::taken_key`]); nothing written.
    KeyTaken,
    /// The quote was booked meanwhile; nothing written.
    QuoteTaken,
}

/// SQLSTATE of `booking_conflict` (migration 0110).
const BOOKING_CONFLICT: &str = "CB409";

/// A booking's key with its stored answer, and the quote it marks used.
pub struct KeyAndQuote<'a> {
    pub key: ClaimedKey<'a>,
    pub quote_id: Uuid,
    pub used_at: DateTime<Utc>,
}

/// Books in one statement outside any explicit transaction, so in one round trip with its
/// commit: claims each booking's key with its stored answer, marks its quote used and makes
/// `writes` (the jobs and what goes with them), all or nothing. What [`super::claim::find_booking`] read is
/// checked where it could have changed: a twin holding a key is waited for, as is a
/// concurrent booking of a quote, and any of them having won writes nothing. With several
/// bookings, the outcome says the first conflict found.
pub async fn run_booking_statement<'a>(
    conn: &mut PgConnection,
    bookings: &'a [KeyAndQuote<'a>],
    writes: Writes<'a>,
) -> Result<BookingWritten, sqlx::Error> {
    let count = i64::try_from(bookings.len()).expect("a batch fits an i64");
    let claim = move |query: &mut QueryBuilder<'a, Postgres>| {
        query.push(
            "INSERT INTO idempotency_keys (merchant_id, environment, key, request_hash, \
             response_status, response_body) ",
        );
        query.push_values(bookings, |mut row, b| {
            row.push_bind(b.key.merchant_id)
                .push_bind(b.key.environment.as_str())
                .push_bind(b.key.key)
                .push_bind(b.key.request_hash)
                .push_bind(b.key.answer.map(|(status, _)| status))
                .push_bind(b.key.answer.map(|(_, body)| body));
        });
        query.push(" ON CONFLICT DO NOTHING RETURNING 1");
    };
    // Only once every key is claimed: a key found taken undoes the statement anyway, and
    // its quote's row is then neither waited for nor locked.
    let mark = move |query: &mut QueryBuilder<'a, Postgres>| {
        query.push("UPDATE quotes SET used_at = booked.used_at FROM (");
        query.push_values(bookings, |mut row, b| {
            row.push_bind(b.quote_id).push_bind(b.used_at);
        });
        query
            .push(
                ") AS booked (id, used_at) WHERE quotes.id = booked.id \
                   AND quotes.used_at IS NULL AND (SELECT count(*) FROM claimed) = ",
            )
            .push_bind(count)
            .push(" RETURNING 1");
    };
    let statement = Writes::new()
        .named("claimed", claim)
        .named("marked", mark)
        .then(writes);
    // A quote named twice is marked once, so it counts as taken.
    let ended = ending(
        conn,
        statement,
        &format!(
            "booking_conflict(CASE \
               WHEN (SELECT count(*) FROM claimed) < {count} THEN 'key_taken' \
               WHEN (SELECT count(*) FROM marked) < {count} THEN 'quote_taken' END)"
        ),
    )
    .await;
    match ended {
        Ok(events_waiting) => Ok(BookingWritten::Written { events_waiting }),
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some(BOOKING_CONFLICT) => {
            Ok(match e.message() {
                "key_taken" => BookingWritten::KeyTaken,
                _ => BookingWritten::QuoteTaken,
            })
        }
        Err(e) => Err(e),
    }
}

/// Runs `statement` ending with `check` (a call of `booking_conflict`), and says whether an
/// event it recorded awaits the webhook fan-out: false when it recorded none through a part
/// named [`events::RECORDED`], or only events no endpoint can take (written fanned out).
async fn ending(
    conn: &mut PgConnection,
    statement: Writes<'_>,
    check: &str,
) -> Result<bool, sqlx::Error> {
    if !statement.has(events::RECORDED) {
        statement
            .execute_ending(conn, &format!("SELECT {check}"))
            .await?;
        return Ok(false);
    }
    let last = format!(
        "SELECT {check} AS checked, EXISTS (SELECT 1 FROM {} WHERE waiting) AS waiting",
        events::RECORDED
    );
    let ended: Option<(bool, bool)> = statement.fetch_optional(conn, &last).await?;
    Ok(ended.is_some_and(|(_, waiting)| waiting))
}

/// Writes attempts' outcomes (`writes`: the jobs and what goes with them, the keys' stored
/// answers) and deletes the attempts, in one statement outside any explicit transaction, so
/// in one round trip with its commit, all or nothing. `None` when any attempt was gone or
/// marked for abandoning by then (another process is finishing it; its lock is waited for):
/// nothing written. Otherwise whether an event it recorded awaits the webhook fan-out.
pub async fn finish_attempts<'a>(
    conn: &mut PgConnection,
    attempt_ids: &'a [Uuid],
    writes: Writes<'a>,
) -> Result<Option<bool>, sqlx::Error> {
    let count = attempt_ids.len();
    let finished = move |query: &mut QueryBuilder<'a, Postgres>| {
        query
            .push("DELETE FROM booking_attempts WHERE id = ANY(")
            .push_bind(attempt_ids)
            .push(") AND abandoning_since IS NULL RETURNING 1");
    };
    let ended = ending(
        conn,
        Writes::new().named("finished", finished).then(writes),
        &format!(
            "booking_conflict(CASE WHEN (SELECT count(*) FROM finished) < {count} \
               THEN 'attempt_gone' END)"
        ),
    )
    .await;
    match ended {
        Ok(events_waiting) => Ok(Some(events_waiting)),
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some(BOOKING_CONFLICT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Stores the responses of the bookings that claimed these keys, for their replays
/// ([`Writes`]).
pub fn store_responses<'a>(
    answers: &'a [ClaimedKey<'a>],
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        query.push(
            "UPDATE idempotency_keys k SET response_status = a.status, \
             response_body = a.body FROM (",
        );
        query.push_values(answers, |mut row, a| {
            row.push_bind(a.merchant_id)
                .push_bind(a.environment.as_str())
                .push_bind(a.key)
                .push_bind(a.answer.map(|(status, _)| status))
                .push_bind(a.answer.map(|(_, body)| body));
        });
        query.push(
            ") AS a (merchant_id, environment, key, status, body) \
             WHERE k.merchant_id = a.merchant_id AND k.environment = a.environment \
               AND k.key = a.key",
        );
    }
}

/// Stores the response of the booking that claimed the key, for its replays ([`Writes`]).
pub fn store_response<'a>(
    merchant_id: Uuid,
    environment: Environment,
    key: &'a str,
    status: i32,
    body: &'a serde_json::Value,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        query
            .push("UPDATE idempotency_keys SET response_status = ")
            .push_bind(status)
            .push(", response_body = ")
            .push_bind(body)
            .push(" WHERE merchant_id = ")
            .push_bind(merchant_id)
            .push(" AND environment = ")
            .push_bind(environment.as_str())
            .push(" AND key = ")
            .push_bind(key);
    }
}

/// Forgets keys older than `before`.
pub async fn expire_keys(pool: &PgPool, before: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    Ok(
        sqlx::query!("DELETE FROM idempotency_keys WHERE created_at < $1", before,)
            .execute(pool)
            .await?
            .rows_affected(),
    )
}
