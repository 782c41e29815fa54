//! The features' batches against a real PostgreSQL: a row the database refuses fails alone and
//! the rest of its batch is written, a batch's statements are planned on a connection of
//! their own, and a kind with a window waits for company only while rows come fast.

use chrono::Utc;
use sqlx::PgPool;

use courier_core::infra::db::batches::{Batch, Batched, Batches, ManyAtOnce};
use courier_core::quotes::QuoteWriter;
use courier_store::quotes::{self, QuoteRow};
use courier_store::scratch::{fresh_database_url, merchant, quote, quote_row};

async fn database() -> PgPool {
    PgPool::connect(&fresh_database_url().await).await.unwrap()
}

/// The quote writer: quotes written at once share a statement, and a row the database
/// refuses fails only its own write; the others are written on its own after the batch fails.
#[tokio::test]
async fn a_refused_quote_fails_alone_and_the_rest_of_its_batch_is_written() {
    let pool = database().await;
    let merchant_id = merchant(&pool).await;
    let now = Utc::now();
    let taken = quote(&pool, merchant_id, now).await;
    let writer = QuoteWriter::start(pool.clone());
    let rows: Vec<QuoteRow> = (0..6).map(|_| quote_row(merchant_id, now)).collect();
    // The test's runtime has one thread: every write is queued before the writer's task runs
    // again and takes them, so the refused row shares a batch with the others.
    let write = |row: &QuoteRow| {
        let (writer, row) = (writer.clone(), row.clone());
        tokio::spawn(async move { writer.write(row).await })
    };
    let writes: Vec<_> = rows.iter().map(write).collect();
    let refused = write(&taken);
    refused.await.unwrap().expect_err("the taken id is refused");
    for (row, written) in rows.iter().zip(writes) {
        written.await.unwrap().expect("the others are written");
        assert!(quotes::find(&pool, row.id).await.unwrap().is_some());
    }
}

/// What a batch's statement sees of its connection's planning.
struct PlanningOfTheBatch;

impl ManyAtOnce for PlanningOfTheBatch {
    type Row = ();
    type Answer = String;
    const MOST: usize = 8;

    async fn run_many(
        &self,
        conn: &mut sqlx::PgConnection,
        rows: &[()],
    ) -> Result<Batch<String>, sqlx::Error> {
        let (setting,): (String,) = sqlx::query_as("SHOW plan_cache_mode")
            .fetch_one(conn)
            .await?;
        Ok(Batch::Done(vec![setting; rows.len()]))
    }
}

/// A batch's statements run on a connection of the batches' own, planned once for any values;
/// the pool they were started from plans as before.
#[tokio::test]
async fn a_batchs_statements_are_planned_once_on_a_connection_of_its_own() {
    let pool = database().await;
    let batches = Batches::start(&pool, PlanningOfTheBatch);
    let Batched::Done((), setting) = batches.send(()).await.unwrap() else {
        panic!("the batch was done");
    };
    assert_eq!(setting, "force_generic_plan");
    let (main,): (String,) = sqlx::query_as("SHOW plan_cache_mode")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(main, "auto");
}

/// Rows whose answer is the size of the batch they went in, with a window.
struct SizeOfTheBatch {
    window: std::time::Duration,
}

impl ManyAtOnce for SizeOfTheBatch {
    type Row = ();
    type Answer = usize;
    const MOST: usize = 8;

    fn window(&self) -> std::time::Duration {
        self.window
    }

    async fn run_many(
        &self,
        conn: &mut sqlx::PgConnection,
        rows: &[()],
    ) -> Result<Batch<usize>, sqlx::Error> {
        sqlx::query("SELECT 1").execute(conn).await?;
        Ok(Batch::Done(vec![rows.len(); rows.len()]))
    }
}

/// How many rows went in the batch of a row sent now.
fn send_one(batches: &Batches<SizeOfTheBatch>) -> tokio::task::JoinHandle<usize> {
    let batches = batches.clone();
    tokio::spawn(async move {
        match batches.send(()).await.unwrap() {
            Batched::Done((), size) => size,
            Batched::OnItsOwn(()) => panic!("the batch was done"),
        }
    })
}

const WINDOW: std::time::Duration = std::time::Duration::from_millis(300);
const SOON: std::time::Duration = std::time::Duration::from_millis(50);

/// With a window, a row coming soon after a batch started waits for company: the next row,
/// handed in well inside the window, shares its statement. Without one, each goes alone.
#[tokio::test]
async fn rows_coming_faster_than_the_window_wait_for_company() {
    let pool = database().await;
    for (window, together) in [(WINDOW, 2), (std::time::Duration::ZERO, 1)] {
        let batches = Batches::start(&pool, SizeOfTheBatch { window });
        assert_eq!(
            send_one(&batches).await.unwrap(),
            1,
            "the first row goes at once"
        );
        let second = send_one(&batches);
        tokio::time::sleep(SOON).await;
        let third = send_one(&batches);
        assert_eq!(second.await.unwrap(), together, "window {window:?}");
        assert_eq!(third.await.unwrap(), together, "window {window:?}");
    }
}

/// After a quiet spell longer than the window, a row is sent at once: the row handed in soon
/// after it finds it gone and goes in a batch of its own.
#[tokio::test]
async fn a_row_after_a_quiet_spell_is_sent_at_once() {
    let pool = database().await;
    let batches = Batches::start(&pool, SizeOfTheBatch { window: WINDOW });
    assert_eq!(send_one(&batches).await.unwrap(), 1);
    tokio::time::sleep(WINDOW + SOON).await;
    let first = send_one(&batches);
    tokio::time::sleep(SOON).await;
    let second = send_one(&batches);
    assert_eq!(first.await.unwrap(), 1, "sent without waiting");
    assert_eq!(second.await.unwrap(), 1);
}
