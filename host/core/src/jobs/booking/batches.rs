//! Bookings whose hold needs no network, read and written together
//! ([`crate::infra::db::batches`]).
//!
//! - **Reads**: the bookings asking while a read is in flight are read by the next one, each
//!   its key, its quote and its card, in one statement.
//! - **Writes**: the bookings approved while a write is in flight go into the next one, their
//!   keys, quotes, jobs, events, sandbox runs and charges in one statement and one commit.
//!   Each booking is answered only once it is committed. A batch lands whole or not at all:
//!   when any of its bookings lost its key or its quote to another booking meanwhile, nothing
//!   of it is written, and each booking is written again on its own, which finds out which one
//!   lost and how.

use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::events;
use crate::infra::db::batches::{Batch, Batched, Batches, ManyAtOnce};
use crate::payments;
use courier_domain::Environment;
use courier_domain::event::NewEvent;
use courier_store::bookings::claim::{self, BookingAsked, BookingLookup};
use courier_store::bookings::write::{self, AnsweredKey, BookingWritten, KeyAndQuote};
use courier_store::charges::{self, ChargeRow, NewMove};
use courier_store::jobs::{self as store, JobRow};
use courier_store::sandbox::RunRow;
use courier_store::writes::Writes;

/// A booking whose hold was approved on the spot, with everything its statement writes.
pub struct ApprovedBooking {
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub key: String,
    pub request_hash: Vec<u8>,
    /// The answer, stored under the key for replays.
    pub body: Value,
    pub job: JobRow,
    pub event: NewEvent,
    pub run: Option<RunRow>,
    pub charge: ChargeRow,
}

impl ApprovedBooking {
    fn key_and_quote(&self) -> KeyAndQuote<'_> {
        KeyAndQuote {
            key: AnsweredKey {
                merchant_id: self.merchant_id,
                environment: self.environment,
                key: &self.key,
                request_hash: &self.request_hash,
                status: 201,
                body: &self.body,
            },
            quote_id: self.job.quote_id,
            used_at: self.job.booked_at,
        }
    }
}

/// Writes `bookings`, each approved on the spot, in one statement with its commit
/// ([`write::run_booking_statement`]).
pub async fn write_approved_bookings(
    conn: &mut PgConnection,
    bookings: &[ApprovedBooking],
) -> Result<BookingWritten, sqlx::Error> {
    let keys: Vec<KeyAndQuote> = bookings
        .iter()
        .map(ApprovedBooking::key_and_quote)
        .collect();
    let moves: Vec<_> = bookings
        .iter()
        .flat_map(|b| payments::raising_moves(&b.charge))
        .collect();
    let writes = job_writes(
        bookings.iter().map(|b| &b.job).collect(),
        bookings.iter().map(|b| &b.event).collect(),
        bookings.iter().filter_map(|b| b.run.as_ref()).collect(),
        bookings.iter().map(|b| &b.charge).collect(),
        moves.iter().collect(),
    );
    write::run_booking_statement(conn, &keys, writes).await
}

/// Reads and writes bookings in batches. Cloning shares them.
#[derive(Clone)]
pub struct BookingBatches {
    reads: Batches<ManyReads>,
    writes: Batches<ManyBookings>,
}

struct ManyReads;

impl ManyAtOnce for ManyReads {
    type Row = BookingAsked;
    type Answer = BookingLookup;
    const MOST: usize = 64;

    async fn run_many(
        &self,
        conn: &mut PgConnection,
        rows: &[BookingAsked],
    ) -> Result<Batch<BookingLookup>, sqlx::Error> {
        let found = claim::find_bookings(conn, rows).await?;
        Ok(Batch::Done(found))
    }
}

struct ManyBookings;

impl ManyAtOnce for ManyBookings {
    type Row = ApprovedBooking;
    type Answer = ();
    /// About 80 parameters a booking: far below the protocol's 65,535.
    const MOST: usize = 64;

    async fn run_many(
        &self,
        conn: &mut PgConnection,
        rows: &[ApprovedBooking],
    ) -> Result<Batch<()>, sqlx::Error> {
        Ok(match write_approved_bookings(conn, rows).await? {
            BookingWritten::Written => Batch::Done(vec![(); rows.len()]),
            BookingWritten::KeyTaken | BookingWritten::QuoteTaken => Batch::Refused,
        })
    }
}

impl BookingBatches {
    /// Batches on the server of `pool`, sent by tasks on the current runtime.
    pub fn start(pool: &PgPool) -> Self {
        BookingBatches {
            reads: Batches::start(pool, ManyReads),
            writes: Batches::start(pool, ManyBookings),
        }
    }

    /// Reads what `asked` needs with the bookings asking beside it. `Alone` when its batch
    /// failed for a reason of its own (then it is read on its own).
    pub async fn read(
        &self,
        asked: BookingAsked,
    ) -> Result<Batched<BookingAsked, BookingLookup>, sqlx::Error> {
        self.reads.send(asked).await
    }

    /// Writes `booking` with the bookings approved beside it. `Done` once committed;
    /// `Alone` when its batch was refused (see the module's description).
    pub async fn write(
        &self,
        booking: ApprovedBooking,
    ) -> Result<Batched<ApprovedBooking, ()>, sqlx::Error> {
        self.writes.send(booking).await
    }
}

/// Booked jobs' own rows, joined in one statement: the jobs, their `job.booked` events,
/// their sandbox runs and, when their holds were approved before anything was written, their
/// charges and the charges' moves.
pub fn job_writes<'a>(
    jobs: Vec<&'a JobRow>,
    events: Vec<&'a NewEvent>,
    runs: Vec<&'a RunRow>,
    charges: Vec<&'a ChargeRow>,
    moves: Vec<&'a NewMove<'a>>,
) -> Writes<'a> {
    let events = events.into_iter().map(|e| (Uuid::new_v4(), e)).collect();
    let mut writes = Writes::new()
        .and(store::insert_jobs(jobs))
        .and(events::insert_many(events));
    if !runs.is_empty() {
        writes = writes.and(courier_store::sandbox::upsert(runs));
    }
    if !charges.is_empty() {
        writes = writes
            .and(charges::insert_charges(charges))
            .and(charges::insert_moves(moves));
    }
    writes
}
