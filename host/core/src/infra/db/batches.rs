//! Rows written together. Under load, the rows handed in while a write is in flight are
//! written by the next one, in one statement and one commit: the database's work per
//! statement and per commit (executor start-up, constraint checks, the commit record, a
//! backend woken, a connection lent and returned) is shared by the batch. A row alone is
//! written at once, as a batch of one.
//!
//! Each request is answered only once its row is committed. A batch is written whole or not
//! at all; when the database refuses one for any reason but being away, each of its rows goes
//! back to its request to be written alone, so one bad row (or one lost race) fails only its
//! own request.

use std::future::Future;

use sqlx::PgPool;
use tokio::sync::{mpsc, oneshot};

use super::availability;

/// Rows waiting for a batch; past this, handing in a row waits for room.
const QUEUE: usize = 4096;

/// How a kind of row is written many at once.
pub trait WriteMany: Send + Sync + 'static {
    type Row: Send + 'static;
    /// The most rows one statement writes.
    const MOST: usize;
    /// Writes every row of `rows` in one statement with its commit, all or none.
    fn write_many(
        &self,
        pool: &PgPool,
        rows: &[Self::Row],
    ) -> impl Future<Output = Result<Batch, sqlx::Error>> + Send;
}

/// How a batch's statement ended, when the database answered.
pub enum Batch {
    /// Every row committed.
    Written,
    /// Nothing written: one of the rows cannot be written as it is (a lost race, a row the
    /// database refuses). Each is then written alone.
    Refused,
}

/// What became of a row handed in.
#[derive(Debug)]
pub enum Batched<R> {
    /// Committed with its batch.
    Written(R),
    /// Not written: its batch was refused, or the writer is stopping. The caller writes it
    /// alone, the way it would without batches, and so learns what was wrong with it.
    WriteAlone(R),
}

/// Writes rows in batches, one batch at a time (see the module's description). Cloning
/// shares the writer.
pub struct Batches<W: WriteMany> {
    queue: mpsc::Sender<Waiting<W::Row>>,
}

impl<W: WriteMany> Clone for Batches<W> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
        }
    }
}

struct Waiting<R> {
    row: R,
    written: oneshot::Sender<Outcome<R>>,
}

enum Outcome<R> {
    Written(R),
    Failed(sqlx::Error),
    WriteAlone(R),
}

impl<W: WriteMany> Batches<W> {
    /// A writer on `pool`, its batches written one at a time by a task on the current
    /// runtime. The task ends once every clone of the writer is dropped and the rows waiting
    /// are written.
    pub fn start(pool: PgPool, writer: W) -> Self {
        let (queue, waiting) = mpsc::channel(QUEUE);
        tokio::spawn(write_batches(pool, writer, waiting));
        Batches { queue }
    }

    /// Writes `row` with the rows handed in beside it, answering once it is committed.
    pub async fn write(&self, row: W::Row) -> Result<Batched<W::Row>, sqlx::Error> {
        let (written, outcome) = oneshot::channel();
        if let Err(refused) = self.queue.send(Waiting { row, written }).await {
            // The writer's task is gone (the runtime is stopping).
            return Ok(Batched::WriteAlone(refused.0.row));
        }
        match outcome.await {
            Ok(Outcome::Written(row)) => Ok(Batched::Written(row)),
            Ok(Outcome::Failed(error)) => Err(error),
            Ok(Outcome::WriteAlone(row)) => Ok(Batched::WriteAlone(row)),
            // The writer's task ended without answering (it panicked): whether the row was
            // committed is unknown, so the request fails.
            Err(_) => Err(sqlx::Error::WorkerCrashed),
        }
    }
}

async fn write_batches<W: WriteMany>(
    pool: PgPool,
    writer: W,
    mut waiting: mpsc::Receiver<Waiting<W::Row>>,
) {
    let mut batch = Vec::new();
    while waiting.recv_many(&mut batch, W::MOST).await > 0 {
        write_batch(&pool, &writer, std::mem::take(&mut batch)).await;
    }
}

async fn write_batch<W: WriteMany>(pool: &PgPool, writer: &W, batch: Vec<Waiting<W::Row>>) {
    let (rows, answers): (Vec<W::Row>, Vec<_>) = batch
        .into_iter()
        .map(|waiting| (waiting.row, waiting.written))
        .unzip();
    let result = writer.write_many(pool, &rows).await;
    // A request that gave up meanwhile has dropped its receiver; its row stays written.
    match result {
        Ok(Batch::Written) => {
            for (answer, row) in answers.into_iter().zip(rows) {
                let _ = answer.send(Outcome::Written(row));
            }
        }
        Ok(Batch::Refused) => {
            for (answer, row) in answers.into_iter().zip(rows) {
                let _ = answer.send(Outcome::WriteAlone(row));
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
                tracing::debug!(%error, rows = rows.len(), "a batch was refused; writing each row alone");
            }
            for (answer, row) in answers.into_iter().zip(rows) {
                let _ = answer.send(Outcome::WriteAlone(row));
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
