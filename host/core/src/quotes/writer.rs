//! Quotes written together ([`crate::infra::db::batches`]): the quotes priced while a write
//! is in flight go into the next one, several rows in one statement and one commit. Each
//! quote is answered only once its row is committed, so its booking, on any instance, finds
//! it.

use sqlx::{PgConnection, PgPool};

use crate::infra::db::batches::{Batch, Batched, Batches, ManyAtOnce};
use courier_store::quotes::{self as store, QuoteRow};

/// Writes quotes in batches. Cloning shares the writer.
#[derive(Clone)]
pub struct QuoteWriter {
    batches: Batches<ManyQuotes>,
    pool: PgPool,
}

struct ManyQuotes;

impl ManyAtOnce for ManyQuotes {
    type Row = QuoteRow;
    type Answer = ();
    /// Batches are written one at a time: measured, that cost the least CPU per quote and
    /// gave the most quotes per second (two or three at once made smaller batches); quotes
    /// never wait on one another's locks.
    const MOST: usize = 128;

    async fn run_many(
        &self,
        conn: &mut PgConnection,
        rows: &[QuoteRow],
    ) -> Result<Batch<()>, sqlx::Error> {
        store::insert_many(conn, rows).await?;
        Ok(Batch::Done(vec![(); rows.len()]))
    }
}

impl QuoteWriter {
    /// A writer on `pool`, its batches written by a task on the current runtime.
    pub fn start(pool: PgPool) -> Self {
        QuoteWriter {
            batches: Batches::start(&pool, ManyQuotes),
            pool,
        }
    }

    /// Writes `row`, answering once it is committed.
    pub async fn write(&self, row: QuoteRow) -> Result<(), sqlx::Error> {
        match self.batches.send(row).await? {
            Batched::Done(..) => Ok(()),
            Batched::OnItsOwn(row) => store::insert(&self.pool, &row).await,
        }
    }
}
