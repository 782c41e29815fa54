//! Requests' rows sent to the database together. Under load, the rows handed in while a
//! statement is in flight go into the next one: the database's work per statement and per
//! commit (executor start-up, constraint checks, the commit record, a backend woken, a
//! connection lent and returned) is shared by the batch. A row alone is sent at once, as a
//! batch of one, unless its kind has a window (below).
//!
//! The batches' task keeps its connection from one batch to the next, and gives it back to
//! the pool only when it met an error: a connection given back is pinged (sqlx does so on
//! every return), a round trip per batch (and per booking, when bookings come one at a time)
//! that the task need not make.
//!
//! The task has a connection of its own (a pool of one beside the main pool), on which each
//! statement is planned once, for any values (`plan_cache_mode = force_generic_plan`).
//! PostgreSQL would otherwise plan a batch's statement anew at every call: planned for the
//! array lengths it is given, a batch of a few rows looks cheaper than the one plan for any
//! batch, so the one plan is never chosen. The booking reads were planned at every call,
//! about 250 µs each; a batch's statements are lookups by key and inserts, whose one plan is
//! the same index lookups at any table size (BENCHMARKS.md, "Statements planned once").
//!
//! A kind of row may have a window ([`ManyAtOnce::window`]): while its rows come faster than
//! the window (the batch before was sent less than a window ago), a batch waits up to the
//! window for company before it is sent. At a few hundred rows a second, too few for
//! statements to overlap, most rows would otherwise go alone, each paying a statement and a
//! commit. At a slower pace no row waits. Only rows whose requests wait far longer anyway (a
//! live booking's writes, on either side of its provider's hundreds of milliseconds) have one.
//!
//! Each request is answered only once its batch's statement is done (for writes: committed).
//! A batch is done whole or not at all; when the database refuses one for any reason but
//! being away, each of its rows goes back to its request to be sent alone, so one bad row (or
//! one lost race) fails only its own request.

use std::future::Future;
use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, PgPool, Postgres};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::availability;

/// Rows waiting for a batch; past this, handing in a row waits for room.
const QUEUE: usize = 4096;

/// How a kind of row is sent many at once.
pub trait ManyAtOnce: Send + Sync + 'static {
    type Row: Send + 'static;
    /// What each row's request is given once its batch is done.
    type Answer: Send + 'static;
    /// The most rows one statement takes.
    const MOST: usize;
    /// How long a batch waits for company while rows come faster than this (see the
    /// module's description); zero sends every batch at once.
    fn window(&self) -> Duration {
        Duration::ZERO
    }
    /// Sends every row of `rows` in one statement (writes: with its commit), all or none,
    /// on `conn`, which is outside any transaction.
    fn run_many(
        &self,
        conn: &mut PgConnection,
        rows: &[Self::Row],
    ) -> impl Future<Output = Result<Batch<Self::Answer>, sqlx::Error>> + Send;
}

/// How a batch's statement ended, when the database answered.
pub enum Batch<A> {
    /// Done for every row: their answers, in the rows' order.
    Done(Vec<A>),
    /// Nothing done: one of the rows cannot be taken as it is (a lost race, a row the
    /// database refuses). Each is then sent alone.
    Refused,
}

/// What became of a row handed in.
#[derive(Debug)]
pub enum Batched<R, A> {
    /// Done (committed) with its batch: the row, and its answer.
    Done(R, A),
    /// Not done: its batch was refused, or the batches are stopping. The caller sends it
    /// alone, the way it would without batches, and so learns what was wrong with it.
    OnItsOwn(R),
}

/// Sends rows in batches, one batch at a time (see the module's description). Cloning
/// shares the batches.
pub struct Batches<W: ManyAtOnce> {
    queue: mpsc::Sender<Waiting<W::Row, W::Answer>>,
}

impl<W: ManyAtOnce> Clone for Batches<W> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
        }
    }
}

struct Waiting<R, A> {
    row: R,
    done: oneshot::Sender<Outcome<R, A>>,
}

enum Outcome<R, A> {
    Done(R, A),
    Failed(sqlx::Error),
    OnItsOwn(R),
}

impl<W: ManyAtOnce> Batches<W> {
    /// Batches on the server of `pool`, sent one at a time by a task on the current runtime,
    /// on a connection of the task's own. The task ends once every clone is dropped and the
    /// rows waiting are sent.
    pub fn start(pool: &PgPool, many: W) -> Self {
        let (queue, waiting) = mpsc::channel(QUEUE);
        tokio::spawn(run_batches(own_connection(pool), many, waiting));
        Batches { queue }
    }

    /// Sends `row` with the rows handed in beside it, answering once its batch is done.
    pub async fn send(&self, row: W::Row) -> Result<Batched<W::Row, W::Answer>, sqlx::Error> {
        let (done, outcome) = oneshot::channel();
        if let Err(refused) = self.queue.send(Waiting { row, done }).await {
            // The batches' task is gone (the runtime is stopping).
            return Ok(Batched::OnItsOwn(refused.0.row));
        }
        match outcome.await {
            Ok(Outcome::Done(row, answer)) => Ok(Batched::Done(row, answer)),
            Ok(Outcome::Failed(error)) => Err(error),
            Ok(Outcome::OnItsOwn(row)) => Ok(Batched::OnItsOwn(row)),
            // The task ended without answering (it panicked): whether the row was committed
            // is unknown, so the request fails.
            Err(_) => Err(sqlx::Error::WorkerCrashed),
        }
    }
}

/// A pool of one connection beside `pool`, connected when first used, whose statements are
/// each planned once (see the module's description).
fn own_connection(pool: &PgPool) -> PgPool {
    let options = super::options_with(pool, &[("plan_cache_mode", "force_generic_plan")]);
    super::pool_options(1)
        .min_connections(0)
        .connect_lazy_with(options)
}

async fn run_batches<W: ManyAtOnce>(
    pool: PgPool,
    many: W,
    mut waiting: mpsc::Receiver<Waiting<W::Row, W::Answer>>,
) {
    let window = many.window();
    let mut batch = Vec::new();
    let mut held: Option<PoolConnection<Postgres>> = None;
    let mut last_sent: Option<Instant> = None;
    while waiting.recv_many(&mut batch, W::MOST).await > 0 {
        let now = Instant::now();
        if last_sent.is_some_and(|sent| now.duration_since(sent) < window) {
            gather(&mut waiting, &mut batch, W::MOST, now + window).await;
        }
        last_sent = Some(Instant::now());
        let batch = std::mem::take(&mut batch);
        let conn = match held.take() {
            Some(conn) => Ok(conn),
            None => pool.acquire().await,
        };
        // Kept for the next batch: given back, sqlx would ping it (a round trip per batch). A
        // connection that met an error goes back (or is closed) at once.
        held = run_batch(conn, &many, batch).await;
    }
}

/// Adds the rows handed in until `until` to `batch`, up to `most` in all.
async fn gather<T>(
    waiting: &mut mpsc::Receiver<T>,
    batch: &mut Vec<T>,
    most: usize,
    until: Instant,
) {
    while batch.len() < most {
        let room = most - batch.len();
        match tokio::time::timeout_at(until, waiting.recv_many(batch, room)).await {
            Ok(received) if received > 0 => {}
            // The window has passed, or every sender is gone.
            _ => return,
        }
    }
}

/// Runs one batch and answers its requests; gives back the connection if it met no error.
async fn run_batch<W: ManyAtOnce>(
    conn: Result<PoolConnection<Postgres>, sqlx::Error>,
    many: &W,
    batch: Vec<Waiting<W::Row, W::Answer>>,
) -> Option<PoolConnection<Postgres>> {
    let (rows, answers): (Vec<W::Row>, Vec<_>) = batch
        .into_iter()
        .map(|waiting| (waiting.row, waiting.done))
        .unzip();
    let (result, conn) = match conn {
        Ok(mut conn) => (many.run_many(&mut conn, &rows).await, Some(conn)),
        Err(error) => (Err(error), None),
    };
    let conn = conn.filter(|_| result.is_ok());
    // A request that gave up meanwhile has dropped its receiver; its row stays written.
    match result {
        Ok(Batch::Done(done)) if done.len() == rows.len() => {
            for ((answer, row), done) in answers.into_iter().zip(rows).zip(done) {
                let _ = answer.send(Outcome::Done(row, done));
            }
        }
        // Refused, or answered for more or fewer rows than it had (a fault of its statement).
        Ok(Batch::Done(_) | Batch::Refused) => {
            for (answer, row) in answers.into_iter().zip(rows) {
                let _ = answer.send(Outcome::OnItsOwn(row));
            }
        }
        Err(error) if availability::is_unavailable(&error) => {
            // Every row of the batch meets the same database: each is answered with the
            // same error, the first with the error itself.
            availability::take_note(&error);
            let copies: Vec<_> = (1..answers.len()).map(|_| retold(&error)).collect();
            for (answer, error) in answers
                .into_iter()
                .zip(std::iter::once(error).chain(copies))
            {
                let _ = answer.send(Outcome::Failed(error));
            }
        }
        Err(error) => {
            if rows.len() > 1 {
                tracing::debug!(%error, rows = rows.len(), "a batch was refused; sending each row alone");
            }
            for (answer, row) in answers.into_iter().zip(rows) {
                let _ = answer.send(Outcome::OnItsOwn(row));
            }
        }
    }
    conn
}

/// An error that says what `error` says about the database's availability, for another
/// request of the same batch (`sqlx::Error` cannot be cloned).
fn retold(error: &sqlx::Error) -> sqlx::Error {
    match error {
        sqlx::Error::PoolTimedOut => sqlx::Error::PoolTimedOut,
        sqlx::Error::PoolClosed => sqlx::Error::PoolClosed,
        sqlx::Error::Io(io) => sqlx::Error::Io(std::io::Error::new(io.kind(), io.to_string())),
        other => sqlx::Error::Io(std::io::Error::other(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retold_error_still_says_the_database_is_away() {
        for error in [
            sqlx::Error::PoolTimedOut,
            sqlx::Error::PoolClosed,
            sqlx::Error::Io(std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                "refused",
            )),
        ] {
            assert!(availability::is_unavailable(&retold(&error)), "{error}");
        }
        let refused = retold(&sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "connection refused",
        )));
        let sqlx::Error::Io(io) = refused else {
            panic!("an I/O error");
        };
        assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused);
        assert_eq!(io.to_string(), "connection refused");
    }
}
