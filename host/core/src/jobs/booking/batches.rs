//! Bookings read and written together ([`crate::infra::db::batches`]). The attempts'
//! reservations and finishes have a window (`COURIER_BOOKING_BATCH_WINDOW_MS`): their bookings
//! wait for a provider anyway, so a millisecond or two spent waiting for company costs them
//! little and spares statements and commits.
//!
//! - **Reads**: the bookings asking while a read is in flight are read by the next one, each
//!   its key, its quote and its card, in one statement.
//! - **Attempts** (holds asked of a provider over the network): the first phases of the
//!   bookings reserving while a reservation is in flight go into the next one (their keys
//!   claimed without an answer, their quotes reserved, their attempts), and so do the last
//!   phases of the attempts whose holds were approved (their jobs with what goes with them,
//!   their stored answers, their attempts deleted), each one statement and one commit for
//!   all, or, when any lost its key, its quote or its attempt meanwhile, none; each is then
//!   written on its own.
//! - **Writes**: the bookings approved while a write is in flight go into the next one, their
//!   keys, quotes, jobs, events, sandbox runs and charges in one statement and one commit.
//!   Each booking is answered only once it is committed. A batch lands whole or not at all:
//!   when any of its bookings lost its key or its quote to another booking meanwhile, nothing
//!   of it is written, and each booking is written again on its own, which finds out which one
//!   lost and how.

use std::time::Duration;

use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::events;
use crate::infra::db::batches::{Batch, Batched, Batches, ManyAtOnce};
use crate::payments;
use courier_domain::Environment;
use courier_domain::event::NewEvent;
use courier_store::bookings::attempts::{self, AttemptRow};
use courier_store::bookings::claim::{self, BookingAsked, BookingLookup};
use courier_store::bookings::write::{self, BookingWritten, ClaimedKey, KeyAndQuote};
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
            key: ClaimedKey {
                merchant_id: self.merchant_id,
                environment: self.environment,
                key: &self.key,
                request_hash: &self.request_hash,
                answer: Some((201, &self.body)),
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

/// A booking's first phase when its hold goes over the network: its key, claimed without an
/// answer, its quote reserved, and its attempt.
pub struct Reservation {
    pub request_hash: Vec<u8>,
    pub attempt: AttemptRow,
}

impl Reservation {
    fn key_and_quote(&self) -> KeyAndQuote<'_> {
        KeyAndQuote {
            key: ClaimedKey {
                merchant_id: self.attempt.merchant_id,
                environment: self.attempt.environment,
                key: &self.attempt.idempotency_key,
                request_hash: &self.request_hash,
                answer: None,
            },
            quote_id: self.attempt.quote_id,
            used_at: self.attempt.created_at,
        }
    }
}

/// Writes `reservations` in one statement with its commit, each attempt leased for `lease`
/// ([`write::run_booking_statement`]).
pub async fn reserve_attempts(
    conn: &mut PgConnection,
    reservations: &[Reservation],
    lease: Duration,
) -> Result<BookingWritten, sqlx::Error> {
    let keys: Vec<KeyAndQuote> = reservations
        .iter()
        .map(Reservation::key_and_quote)
        .collect();
    let attempts = reservations.iter().map(|r| &r.attempt).collect();
    let writes = Writes::new().and(attempts::insert_attempts(attempts, lease));
    write::run_booking_statement(conn, &keys, writes).await
}

/// An attempt whose hold was approved, with everything its last statement writes.
pub struct ApprovedAttempt {
    pub attempt_id: Uuid,
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub key: String,
    /// The answer, stored under the key for replays.
    pub body: Value,
    pub job: JobRow,
    pub event: NewEvent,
    pub run: Option<RunRow>,
    pub charge: ChargeRow,
}

/// Writes the outcomes of `approved` and deletes their attempts, in one statement with its
/// commit ([`write::finish_attempts`]). `None` when any attempt was finished or marked for
/// abandoning elsewhere first: nothing written; otherwise whether an event it recorded awaits
/// the webhook fan-out.
pub async fn finish_approved_attempts(
    conn: &mut PgConnection,
    approved: &[ApprovedAttempt],
) -> Result<Option<bool>, sqlx::Error> {
    let ids: Vec<Uuid> = approved.iter().map(|a| a.attempt_id).collect();
    let answers: Vec<ClaimedKey> = approved
        .iter()
        .map(|a| ClaimedKey {
            merchant_id: a.merchant_id,
            environment: a.environment,
            key: &a.key,
            request_hash: &[],
            answer: Some((201, &a.body)),
        })
        .collect();
    let moves: Vec<_> = approved
        .iter()
        .flat_map(|a| payments::raising_moves(&a.charge))
        .collect();
    let writes = job_writes(
        approved.iter().map(|a| &a.job).collect(),
        approved.iter().map(|a| &a.event).collect(),
        approved.iter().filter_map(|a| a.run.as_ref()).collect(),
        approved.iter().map(|a| &a.charge).collect(),
        moves.iter().collect(),
    )
    .and(write::store_responses(&answers));
    write::finish_attempts(conn, &ids, writes).await
}

/// Reads and writes bookings in batches. Cloning shares them.
#[derive(Clone)]
pub struct BookingBatches {
    reads: Batches<ManyReads>,
    writes: Batches<ManyBookings>,
    reservations: Batches<ManyReservations>,
    finishes: Batches<ManyFinishes>,
}

struct ManyReservations {
    lease: Duration,
    window: Duration,
}

impl ManyAtOnce for ManyReservations {
    type Row = Reservation;
    type Answer = ();
    /// About 20 parameters a booking.
    const MOST: usize = 64;

    /// Its booking then waits for its provider for hundreds of milliseconds.
    fn window(&self) -> Duration {
        self.window
    }

    async fn run_many(
        &self,
        conn: &mut PgConnection,
        rows: &[Reservation],
    ) -> Result<Batch<()>, sqlx::Error> {
        Ok(match reserve_attempts(conn, rows, self.lease).await? {
            BookingWritten::Written { .. } => Batch::Done(vec![(); rows.len()]),
            BookingWritten::KeyTaken | BookingWritten::QuoteTaken => Batch::Refused,
        })
    }
}

struct ManyFinishes {
    window: Duration,
}

impl ManyAtOnce for ManyFinishes {
    type Row = ApprovedAttempt;
    /// Whether an event the batch recorded awaits the webhook fan-out.
    type Answer = bool;
    /// About 80 parameters a booking: far below the protocol's 65,535.
    const MOST: usize = 64;

    /// Its booking has waited for its provider for hundreds of milliseconds.
    fn window(&self) -> Duration {
        self.window
    }

    async fn run_many(
        &self,
        conn: &mut PgConnection,
        rows: &[ApprovedAttempt],
    ) -> Result<Batch<bool>, sqlx::Error> {
        Ok(match finish_approved_attempts(conn, rows).await? {
            Some(events_waiting) => Batch::Done(vec![events_waiting; rows.len()]),
            None => Batch::Refused,
        })
    }
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
    /// Whether an event the batch recorded awaits the webhook fan-out.
    type Answer = bool;
    /// About 80 parameters a booking: far below the protocol's 65,535.
    const MOST: usize = 64;

    async fn run_many(
        &self,
        conn: &mut PgConnection,
        rows: &[ApprovedBooking],
    ) -> Result<Batch<bool>, sqlx::Error> {
        Ok(match write_approved_bookings(conn, rows).await? {
            BookingWritten::Written { events_waiting } => {
                Batch::Done(vec![events_waiting; rows.len()])
            }
            BookingWritten::KeyTaken | BookingWritten::QuoteTaken => Batch::Refused,
        })
    }
}

impl BookingBatches {
    /// Batches on the server of `pool`, sent by tasks on the current runtime.
    /// `lease`: how long an attempt stays its request's before recovery may take it;
    /// `window`: how long the attempts' reservations and finishes wait for company while
    /// they come faster than that ([`ManyAtOnce::window`]).
    pub fn start(pool: &PgPool, lease: Duration, window: Duration) -> Self {
        BookingBatches {
            reads: Batches::start(pool, ManyReads),
            writes: Batches::start(pool, ManyBookings),
            reservations: Batches::start(pool, ManyReservations { lease, window }),
            finishes: Batches::start(pool, ManyFinishes { window }),
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
    ) -> Result<Batched<ApprovedBooking, bool>, sqlx::Error> {
        self.writes.send(booking).await
    }

    /// Reserves with the bookings reserving beside it. `Done` once committed; `OnItsOwn`
    /// when its batch was refused.
    pub async fn reserve(
        &self,
        reservation: Reservation,
    ) -> Result<Batched<Reservation, ()>, sqlx::Error> {
        self.reservations.send(reservation).await
    }

    /// Finishes with the approved attempts finishing beside it. `Done` once committed;
    /// `OnItsOwn` when its batch was refused.
    pub async fn finish(
        &self,
        approved: ApprovedAttempt,
    ) -> Result<Batched<ApprovedAttempt, bool>, sqlx::Error> {
        self.finishes.send(approved).await
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
        .named(events::RECORDED, events::insert_many_telling(events));
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
