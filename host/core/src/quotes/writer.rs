//! Quotes written together. Under load, the quotes priced while a write is in flight are
//! written by the next one, several rows in one statement and one commit: the database's work
//! per statement and per commit (executor start-up, constraint checks, the commit record, a
//! backend woken and a connection lent and returned) is shared by the batch. A quote alone is
//! written at once, as a batch of one.
//!
//! Each quote is answered only once its row is committed, so its booking, on any instance,
//! finds it. A batch is written whole or not at all; when the database refuses one for any
//! reason but being away, each of its quotes is written alone, so one bad row fails only its
//! own request.

use sqlx::PgPool;
use tokio::sync::{mpsc, oneshot};

use crate::infra::db::availability;
use courier_store::quotes::{self as store, QuoteRow};

/// The most quotes one statement writes. Batches are written one at a time: measured, that
/// cost the least CPU per quote and gave the most quotes per second (two or three at once
/// made smaller batches); quotes never wait on one another's locks.
const BATCH_MOST: usize = 128;
/// Quotes waiting for a batch; past this, pricing a quote waits for room.
const QUEUE: usize = 4096;

/// Writes quotes in batches (see the module's description). Cloning shares the writer.
#[derive(Clone)]
pub struct QuoteWriter {
    queue: mpsc::Sender<Waiting>,
    pool: PgPool,
}

struct Waiting {
    row: QuoteRow,
    written: oneshot::Sender<Outcome>,
}

enum Outcome {
    Written,
    Failed(sqlx::Error),
    /// The batch was refused; the quote is to be written alone.
    WriteAlone(Box<QuoteRow>),
}

impl QuoteWriter {
    /// A writer on `pool`, its batches written one at a time by a task on the current
    /// runtime. The task ends once every clone of the writer is dropped and the quotes
    /// waiting are written.
    pub fn start(pool: PgPool) -> Self {
        let (queue, waiting) = mpsc::channel(QUEUE);
        tokio::spawn(write_batches(pool.clone(), waiting));
        QuoteWriter { queue, pool }
    }

    /// Writes `row`, answering once it is committed.
    pub async fn write(&self, row: QuoteRow) -> Result<(), sqlx::Error> {
        let (written, outcome) = oneshot::channel();
        if let Err(refused) = self.queue.send(Waiting { row, written }).await {
            // The writer's task is gone (the runtime is stopping): write it here.
            return store::insert(&self.pool, &refused.0.row).await;
        }
        match outcome.await {
            Ok(Outcome::Written) => Ok(()),
            Ok(Outcome::Failed(error)) => Err(error),
            Ok(Outcome::WriteAlone(row)) => store::insert(&self.pool, &row).await,
            // The writer's task ended without answering (it panicked): whether the row was
            // committed is unknown, so the quote is not offered.
            Err(_) => Err(sqlx::Error::WorkerCrashed),
        }
    }
}

async fn write_batches(pool: PgPool, mut waiting: mpsc::Receiver<Waiting>) {
    let mut batch = Vec::new();
    while waiting.recv_many(&mut batch, BATCH_MOST).await > 0 {
        write_batch(&pool, std::mem::take(&mut batch)).await;
    }
}

async fn write_batch(pool: &PgPool, batch: Vec<Waiting>) {
    let (rows, answers): (Vec<QuoteRow>, Vec<_>) = batch
        .into_iter()
        .map(|waiting| (waiting.row, waiting.written))
        .unzip();
    let result = store::insert_many(pool, &rows).await;
    // A request that gave up meanwhile has dropped its receiver; its quote stays written.
    match result {
        Ok(()) => {
            for answer in answers {
                let _ = answer.send(Outcome::Written);
            }
        }
        Err(error) if rows.len() == 1 || availability::is_unavailable(&error) => {
            // Every quote of the batch meets the same database: each is answered with the
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
            tracing::warn!(%error, quotes = rows.len(), "a batch of quotes was refused; writing each alone");
            for (answer, row) in answers.into_iter().zip(rows) {
                let _ = answer.send(Outcome::WriteAlone(Box::new(row)));
            }
        }
    }
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
