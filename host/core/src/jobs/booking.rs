//! Booking a job against a quote, exactly once per quote and per `Idempotency-Key`.
//!
//! **At once** (the sandbox, whose hold is a bounded computation without network): one read
//! without locks (the key, the quote with its merchant's settings, the card), the checks
//! and the hold, then one statement outside any explicit transaction that claims the key
//! with its stored answer, marks the quote used while it is unused, and writes the job, its
//! event, its sandbox run and its charge, committing as it ends. Whatever changed since the
//! read is waited for there (a twin holding the key, another booking of the quote) and, when
//! it won, the statement gives up whole. Reads and writes are sent in batches
//! ([`batches`]): the bookings reading while a read is in flight are read by the next one,
//! and those approved while a write is in flight are written by the next, one statement and
//! one commit for all of them, or, when any of them lost its key or quote meanwhile, none,
//! and each is then written on its own. A hold not approved on the spot (a decline, an adapter
//! failure) is booked again the way below, which records it.
//!
//! **Without network, not approved on the spot** (a decline, an adapter failure), in one
//! transaction: claim the idempotency key (a twin with the same key waits here, then replays
//! the stored answer), lock the quote, check it, choose the card, make the hold and write its
//! outcome. Refusals roll everything back, the key included, so the request may be corrected
//! and sent again with the same key.
//!
//! **With network** (a real provider, which answers in hundreds of milliseconds or seconds),
//! in three phases, so no transaction stays open and no pooled connection is held while the
//! provider answers. The key, the quote and the card are read as above, without locks, and
//! checked; refusals write nothing. Then:
//!
//!   1. one statement with its commit claims the key (without an answer yet), reserves the
//!      quote while it is unused, and writes a booking attempt that carries the prepared job
//!      and the provider idempotency key of the hold, named after the job it prepared (so
//!      every retry of this booking reaches the provider with the same key, and a booking
//!      made later with the same `Idempotency-Key`, once ours has forgotten it, never reaches
//!      the provider's saved answer for this one); a twin that took the key or the quote
//!      first makes it write nothing;
//!   2. ask the provider for the hold;
//!   3. write the outcome and delete the attempt: an approved hold in one statement with its
//!      commit (the job, its event, its authorised charge and the stored answer, undone whole
//!      when the attempt was finished or marked for abandoning elsewhere first), any other
//!      outcome in a transaction that locks the attempt.
//!
//!   Phases 2 and 3 run in a task of their own: a client that goes away, or a request that
//!   times out, does not interrupt them. An attempt interrupted all the same (a crash) is
//!   finished by the [`recovery`] worker with the same key, as this request would have.
//!   The same key sent while its booking is between phases gets 409
//!   `idempotency.in_progress`.
//!
//! The hold's outcome is stored under the key either way: the booking (201), or the decline
//! (replayed as 422 `payment.card_declined`; the quote is free again, so book it with a new
//! key once a working card is attached). An unreachable provider books the job with its
//! charge `pending`, retried later with the same hold key; so does a hold the provider
//! accepted and confirms later (`pending`), which its event or a read-back ends.
//!
//! Each statement is a round trip inside an open transaction that holds the quote's lock, so
//! steps that always go together share a statement: the key's claim with the quote's lock,
//! its merchant's settings and the card; the job with marking its quote used, its event, its
//! sandbox run, the key's stored response and, when the hold was approved on the spot, its
//! charge and the charge's moves.

mod batches;
pub mod recovery;

pub use batches::BookingBatches;
use batches::{ApprovedAttempt, Reservation, job_writes};

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};
use thiserror::Error;
use uuid::Uuid;

use super::fulfilment::job_event;
use super::views::JobView;
use crate::auth::Merchant;
use crate::events::{EventTransaction, FanOutWakeup};
use crate::idempotency::{IN_PROGRESS, KEY_REUSED, KeyError};
use crate::infra::db::batches::Batched;
use crate::markets::Markets;
use crate::payments::{self, CallSlot, HoldError, Payments, ProviderAnswer, RecordedHold};
use courier_domain::booking::{
    BookingRequest, BookingRequestError, Contact, StopRole, normalise_phone,
};
use courier_domain::event::{EventDetails, EventName, NewEvent};
use courier_domain::job::ready::ReadyWindow;
use courier_domain::job::reference::{new_reference, new_tracking_token};
use courier_domain::sandbox::Scenario;
use courier_domain::{Environment, JobStatus};
use courier_store::bookings::attempts::{self, AttemptRow};
use courier_store::bookings::claim::{self, BookingAsked, BookingClaim, BookingLookup, TakenKey};
use courier_store::bookings::write::{self, BookingWritten};
use courier_store::cards::CardRow;
use courier_store::jobs::{self as store, JobRow};
use courier_store::quotes::QuoteRow;
use courier_store::sandbox::RunRow;
use courier_store::writes::Writes;

use courier_domain::error::Code;
use courier_domain::error::ErrorCode;

pub const BOOKING_ABANDONED: Code = Code::new(
    409,
    "booking.abandoned",
    "The key's booking was interrupted and could not be completed; whatever the provider held was released first. Book again with a new key.",
);

/// Search opens this long before a scheduled job's time.
pub const SEARCH_LEAD: chrono::Duration = chrono::Duration::minutes(20);
/// How close (degrees) a booked stop must be to the quoted point: numeric strings and
/// numbers of the same value parse alike, so this only absorbs float formatting.
const SAME_POINT_DEGREES: f64 = 1e-7;
/// What a declined booking stores under its key (replayed as the decline).
const DECLINED: &str = "card_declined";
/// A booking whose hold the provider refused for good (the service's configuration).
const PROVIDER_REFUSED: &str = "provider_refused";
/// What a booking that could not be completed stores under its key.
const ABANDONED: &str = "abandoned";

#[derive(Debug, Error, ErrorCode)]
pub enum BookingError {
    #[error(transparent)]
    #[code(via)]
    Key(#[from] KeyError),
    #[error("this Idempotency-Key was used for a different request")]
    #[code(KEY_REUSED)]
    KeyReused,
    #[error(
        "a booking with this Idempotency-Key is still waiting for the payment provider; \
         send it again in a moment for its answer"
    )]
    #[code(IN_PROGRESS)]
    InProgress,
    #[error(
        "this booking could not be completed and holds no money; book again with a new \
         Idempotency-Key"
    )]
    #[code(BOOKING_ABANDONED)]
    Abandoned,
    #[error(transparent)]
    #[code(via)]
    Request(#[from] BookingRequestError),
    #[error("there is no quote with that id")]
    #[code(courier_domain::booking::QUOTE_NOT_FOUND)]
    QuoteNotFound,
    #[error("the quote expired at {0}")]
    #[code(courier_domain::booking::QUOTE_EXPIRED)]
    QuoteExpired(DateTime<Utc>),
    #[error("the quote has already been booked")]
    #[code(courier_domain::booking::QUOTE_ALREADY_USED)]
    QuoteAlreadyUsed,
    #[error("{0} must be the quoted point")]
    #[code(courier_domain::booking::STOP_MISMATCH)]
    StopMismatch(&'static str),
    #[error("scheduled_for must be what the quote was priced for")]
    #[code(courier_domain::booking::SCHEDULE_MISMATCH)]
    ScheduleMismatch,
    #[error(transparent)]
    #[code(via)]
    Hold(#[from] HoldError),
    #[error(transparent)]
    #[code(fault)]
    Store(#[from] sqlx::Error),
}

/// A booking's answer: a fresh one, or the stored one replayed.
pub struct BookingResponse {
    pub status: u16,
    pub body: Value,
}

/// What booking needs of the service. Cheap to clone.
#[derive(Clone)]
pub struct BookingContext {
    pub pool: PgPool,
    pub payments: Arc<Payments>,
    pub markets: Arc<Markets>,
    pub public_url: Arc<str>,
    /// Woken once the booking (and its `job.booked`) is committed.
    pub wakeup: FanOutWakeup,
    /// Reads and writes the bookings whose hold needs no network together.
    pub batches: BookingBatches,
    /// How long a search may last (`COURIER_DISPATCH_DEADLINE_SECS`): bounds a parcel's
    /// ready time.
    pub dispatch_deadline: chrono::Duration,
}

/// A booking checked and ready for its hold.
struct Prepared {
    job: JobRow,
    card: CardRow,
    hold_key: String,
}

impl Prepared {
    fn hold_terms<'a>(&'a self, merchant: &'a Merchant) -> payments::HoldTerms<'a> {
        payments::HoldTerms {
            merchant,
            job_id: self.job.id,
            card: &self.card,
            amount_minor: self.job.price_amount_minor,
            currency: &self.job.currency,
            hold_key: &self.hold_key,
        }
    }
}

/// Books the job `body` describes. A test job also gets its sandbox run, with `scenario`
/// (the happy path when None).
pub async fn book(
    context: &BookingContext,
    merchant: &Merchant,
    key: &str,
    body: &Value,
    scenario: Option<Scenario>,
    now: DateTime<Utc>,
) -> Result<BookingResponse, BookingError> {
    // serde_json keeps object keys sorted, so equal bodies hash alike whatever their order.
    let request_hash = Sha256::digest(body.to_string().as_bytes()).to_vec();
    match context.payments.uses_network(merchant.environment) {
        Ok(true) => {
            return book_with_provider(context, merchant, key, &request_hash, body, now).await;
        }
        Ok(false) => {
            if let Some(answer) = book_approved_on_the_spot(
                context,
                merchant,
                key,
                &request_hash,
                body,
                scenario,
                now,
            )
            .await?
            {
                return Ok(answer);
            }
        }
        // Said after the request's own refusals, by the transaction below.
        Err(_) => {}
    }
    let request = BookingRequest::parse(body, now);
    let mut tx = EventTransaction::begin(&context.pool, &context.wakeup).await?;
    let quote_id = request.as_ref().ok().map(|r| r.quote_id);
    let (quote, card) = match claim::claim_booking(
        &mut tx,
        merchant.merchant_id,
        merchant.environment,
        key,
        &request_hash,
        quote_id,
    )
    .await?
    {
        BookingClaim::Claimed { quote, card } => (quote, card),
        BookingClaim::Taken(taken) => {
            tx.rollback().await?;
            return answer_taken(taken, &request_hash);
        }
    };
    let prepared = prepare(context, merchant, request?, quote, card, now)?;
    context.payments.uses_network(merchant.environment)?;
    // Taken before anything is committed: when every place is taken, nothing is written.
    let slot = context
        .payments
        .call_slot(merchant.environment)
        .map_err(|_| HoldError::ProviderBusy)?;
    let answer = hold(context, merchant, slot, &prepared).await;
    let answer = record(
        &mut tx, context, merchant, key, &prepared, answer, scenario, None,
    )
    .await?;
    // The job and its `job.booked`, or the decline and the card's death.
    tx.recorded();
    tx.commit().await?;
    answer
}

/// The key, the quote and the card of a booking, read without locks with the bookings
/// reading beside it (or on its own when their batch failed).
async fn read_booking(
    context: &BookingContext,
    merchant: &Merchant,
    key: &str,
    quote_id: Option<Uuid>,
) -> Result<BookingLookup, BookingError> {
    let asked = BookingAsked {
        merchant_id: merchant.merchant_id,
        environment: merchant.environment,
        key: key.to_owned(),
        quote_id,
    };
    Ok(match context.batches.read(asked).await? {
        Batched::Done(_, found) => found,
        Batched::OnItsOwn(_) => {
            claim::find_booking(
                &mut *context.pool.acquire().await?,
                merchant.merchant_id,
                merchant.environment,
                key,
                quote_id,
            )
            .await?
        }
    })
}

/// A booking whose hold goes to a provider over the network, in its three phases (see the
/// module's description), each phase's writes one statement with its commit.
async fn book_with_provider(
    context: &BookingContext,
    merchant: &Merchant,
    key: &str,
    request_hash: &[u8],
    body: &Value,
    now: DateTime<Utc>,
) -> Result<BookingResponse, BookingError> {
    let request = BookingRequest::parse(body, now);
    let found = read_booking(
        context,
        merchant,
        key,
        request.as_ref().ok().map(|r| r.quote_id),
    )
    .await?;
    if let Some(taken) = found.taken {
        return answer_taken(taken, request_hash);
    }
    let prepared = prepare(context, merchant, request?, found.quote, found.card, now)?;
    // Taken before anything is committed: when every place is taken, nothing is written.
    let slot = context
        .payments
        .call_slot(merchant.environment)
        .map_err(|_| HoldError::ProviderBusy)?;
    let attempt = AttemptRow {
        id: Uuid::new_v4(),
        merchant_id: merchant.merchant_id,
        environment: merchant.environment,
        idempotency_key: key.to_owned(),
        quote_id: prepared.job.quote_id,
        payment_method_id: prepared.card.id,
        hold_key: prepared.hold_key.clone(),
        job: serde_json::to_value(&prepared.job).expect("jobs serialise"),
        created_at: now,
        recoveries: 0,
        abandoning: false,
        overdue: false,
    };
    // Phase 1: the key claimed without an answer yet, the quote reserved, the attempt.
    let reservation = Reservation {
        request_hash: request_hash.to_owned(),
        attempt,
    };
    let attempt = match context.batches.reserve(reservation).await? {
        Batched::Done(reserved, ()) => reserved.attempt,
        // Its batch gave up: written on its own, which tells whether it lost its key or its quote.
        Batched::OnItsOwn(reservation) => {
            let mut conn = context.pool.acquire().await?;
            let lease = context.payments.call_lease();
            let alone = std::slice::from_ref(&reservation);
            match batches::reserve_attempts(&mut conn, alone, lease).await? {
                BookingWritten::Written { .. } => reservation.attempt,
                BookingWritten::KeyTaken => {
                    let taken = claim::taken_key(
                        &mut conn,
                        merchant.merchant_id,
                        merchant.environment,
                        key,
                    )
                    .await?;
                    return answer_taken(taken, request_hash);
                }
                BookingWritten::QuoteTaken => return Err(BookingError::QuoteAlreadyUsed),
            }
        }
    };
    let context = context.clone();
    let merchant = *merchant;
    let finishing = tokio::spawn(async move {
        let answer = hold(&context, &merchant, slot, &prepared).await;
        if let ProviderAnswer::InFlight(message) = &answer {
            // A call with this hold's key is still under way at the provider: its outcome
            // is not known. The attempt stays for the recovery worker, which asks again.
            // (A hold the provider accepted and answers later, `pending`, is an outcome: the
            // job is booked with its charge `pending` until the provider's event or a
            // read-back says how the hold ended.)
            tracing::warn!(error = %message, attempt = %attempt.id,
                "the provider is still working on this hold; left to the recovery worker");
            return Err(BookingError::InProgress);
        }
        complete(&context, &merchant, &attempt, &prepared, answer).await
    });
    match finishing.await {
        Ok(answer) => answer,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// A booking whose hold needs no network, approved on the spot, written by one statement
/// with its commit: one read (the key, the quote, the card), the hold, one write. `None`
/// when the hold was not approved: the transaction in [`book`] then records the decline or
/// the pending charge. Refusals write nothing, as in the transaction.
async fn book_approved_on_the_spot(
    context: &BookingContext,
    merchant: &Merchant,
    key: &str,
    request_hash: &[u8],
    body: &Value,
    scenario: Option<Scenario>,
    now: DateTime<Utc>,
) -> Result<Option<BookingResponse>, BookingError> {
    let request = BookingRequest::parse(body, now);
    let quote_id = request.as_ref().ok().map(|r| r.quote_id);
    let found = read_booking(context, merchant, key, quote_id).await?;
    if let Some(taken) = found.taken {
        return answer_taken(taken, request_hash).map(Some);
    }
    let prepared = prepare(context, merchant, request?, found.quote, found.card, now)?;
    let slot = context
        .payments
        .call_slot(merchant.environment)
        .map_err(|_| HoldError::ProviderBusy)?;
    let ProviderAnswer::Approved(reference) = hold(context, merchant, slot, &prepared).await else {
        return Ok(None);
    };
    let charge = prepared.hold_terms(merchant).charge(Some(reference));
    let Prepared { job, .. } = prepared;
    let Booked { run, event, body } = booked(context, &job, merchant, scenario);
    let approved = batches::ApprovedBooking {
        merchant_id: merchant.merchant_id,
        environment: merchant.environment,
        key: key.to_owned(),
        request_hash: request_hash.to_owned(),
        body,
        job,
        event,
        run,
        charge,
    };
    let (booked, events_waiting) = match context.batches.write(approved).await? {
        Batched::Done(booked, events_waiting) => (booked, events_waiting),
        // Its batch gave up: written on its own, which tells whether it lost its key or its quote.
        Batched::OnItsOwn(approved) => {
            let mut conn = context.pool.acquire().await?;
            match batches::write_approved_bookings(&mut conn, std::slice::from_ref(&approved))
                .await?
            {
                BookingWritten::Written { events_waiting } => (approved, events_waiting),
                BookingWritten::KeyTaken => {
                    let taken = claim::taken_key(
                        &mut conn,
                        merchant.merchant_id,
                        merchant.environment,
                        key,
                    )
                    .await?;
                    return answer_taken(taken, request_hash).map(Some);
                }
                BookingWritten::QuoteTaken => return Err(BookingError::QuoteAlreadyUsed),
            }
        }
    };
    if events_waiting {
        context.wakeup.wake();
    }
    Ok(Some(BookingResponse {
        status: 201,
        body: booked.body,
    }))
}

/// The answer to a request whose key an earlier request holds: its stored answer, if the
/// bodies match.
fn answer_taken(taken: TakenKey, request_hash: &[u8]) -> Result<BookingResponse, BookingError> {
    if taken.request_hash != request_hash {
        return Err(BookingError::KeyReused);
    }
    replay(taken.response)
}

/// Phase 1's checks, on what the key's claim found: the quote (locked) checked, the phones
/// made usable, the card required and the job made.
fn prepare(
    context: &BookingContext,
    merchant: &Merchant,
    mut request: BookingRequest,
    quote: Option<claim::QuoteToBook>,
    card: Option<CardRow>,
    now: DateTime<Utc>,
) -> Result<Prepared, BookingError> {
    let claim::QuoteToBook {
        quote,
        notify_customer_default,
        proof_photo_required,
        proof_signature_required,
        preparation_minutes,
    } = quote
        .filter(|q| {
            q.quote.merchant_id == merchant.merchant_id
                && q.quote.environment == merchant.environment
        })
        .ok_or(BookingError::QuoteNotFound)?;
    if quote.used_at.is_some() {
        return Err(BookingError::QuoteAlreadyUsed);
    }
    if quote.expires_at <= now {
        return Err(BookingError::QuoteExpired(quote.expires_at));
    }
    check_against_quote(&request, &quote)?;
    let pickup_ready_at = ReadyWindow::new(now, request.scheduled_for, context.dispatch_deadline)
        .ready_at(request.pickup_ready_at, preparation_minutes)
        .map_err(BookingRequestError::from)?;
    let country = context
        .markets
        .get(&quote.market_id)
        .and_then(|m| m.definition.country.clone());
    for (role, contact) in [
        (StopRole::Pickup, &mut request.pickup),
        (StopRole::Dropoff, &mut request.dropoff),
    ] {
        contact.contact_phone = normalise_phone(&contact.contact_phone, country.as_deref())
            .ok_or_else(|| {
                BookingRequestError::InvalidStop(format!(
                    "{}: contact_phone is not a usable phone number",
                    role.as_str()
                ))
            })?;
    }
    let job = JobRow {
        id: Uuid::new_v4(),
        merchant_id: merchant.merchant_id,
        environment: merchant.environment,
        quote_id: quote.id,
        reference: new_reference(),
        tracking_token: new_tracking_token(),
        status: match request.scheduled_for {
            None => JobStatus::Searching,
            Some(_) => JobStatus::Pending,
        },
        market_id: quote.market_id.clone(),
        currency: quote.currency.clone(),
        price_amount_minor: quote.total_amount_minor,
        tax_amount_minor: tax_of(&quote),
        vehicle: quote.vehicle,
        pickup: contact_json(&request.pickup),
        dropoff: contact_json(&request.dropoff),
        items: serde_json::to_value(&request.items).expect("items serialise"),
        items_subtotal_minor: request.items_subtotal_minor,
        discount_minor: request.discount_minor,
        items_total_minor: request.items_total_minor,
        notify_customer: request.notify_customer.unwrap_or(notify_customer_default),
        customer_notified_at: None,
        proof_photo_required,
        proof_signature_required,
        proof: None,
        courier_id: None,
        booked_at: now,
        scheduled_for: request.scheduled_for,
        search_opens_at: request.scheduled_for.map(|at| (at - SEARCH_LEAD).max(now)),
        assigned_at: None,
        completed_at: None,
        cancellation_reason: None,
        search_opened_at: None,
        pickup_ready_at,
    };
    if job.price_amount_minor <= 0 {
        return Err(HoldError::InvalidAmount.into());
    }
    // Last: a refusal anywhere above is answered before a missing card.
    let card = card.ok_or(HoldError::NoPaymentMethod)?;
    Ok(Prepared {
        hold_key: payments::hold_key(job.id),
        job,
        card,
    })
}

/// Phase 2: the provider's answer to the hold.
async fn hold(
    context: &BookingContext,
    merchant: &Merchant,
    slot: CallSlot,
    prepared: &Prepared,
) -> ProviderAnswer {
    context
        .payments
        .authorise(
            merchant.environment,
            slot,
            &prepared.card,
            prepared.job.price_amount_minor,
            &prepared.job.currency,
            &prepared.hold_key,
        )
        .await
}

/// Phase 3 of an attempt: writes its outcome unless another process did (the recovery
/// worker, or this request if it is the worker), and answers what is stored. An attempt
/// marked for abandoning is left to its abandoning, whatever the provider answered.
async fn complete(
    context: &BookingContext,
    merchant: &Merchant,
    attempt: &AttemptRow,
    prepared: &Prepared,
    answer: ProviderAnswer,
) -> Result<BookingResponse, BookingError> {
    if let ProviderAnswer::Approved(reference) = &answer {
        match finish_approved(context, merchant, attempt, prepared, reference).await {
            Ok(Some(answer)) => return Ok(answer),
            // Finished or being abandoned elsewhere: the transaction below says how.
            Ok(None) => {}
            // Perhaps written all the same (an answer lost on the way): the transaction
            // below finds out.
            Err(e) => tracing::warn!(error = %e, attempt = %attempt.id,
                "the booking's outcome was not written at once; written again"),
        }
    }
    let mut tx = EventTransaction::begin(&context.pool, &context.wakeup).await?;
    let locked = attempts::lock_attempt(&mut tx, attempt.id).await?;
    if locked.as_ref().is_some_and(|locked| locked.abandoning) {
        // Being abandoned elsewhere: it ends refused, once its hold is released.
        tx.commit().await?;
        return Err(BookingError::InProgress);
    }
    if locked.is_none() {
        let stored = attempts::stored_response(
            &mut tx,
            merchant.merchant_id,
            merchant.environment,
            &attempt.idempotency_key,
        )
        .await?;
        tx.commit().await?;
        return replay(stored);
    }
    let answer = record(
        &mut tx,
        context,
        merchant,
        &attempt.idempotency_key,
        prepared,
        answer,
        None,
        Some(attempt),
    )
    .await?;
    tx.recorded();
    tx.commit().await?;
    answer
}

/// Phase 3 of an attempt whose hold was approved, in one statement with its commit, shared
/// with the attempts finishing beside it: the job, its `job.booked`, its charge authorised
/// with its moves and the stored 201, with the attempt deleted. None when the attempt was
/// finished or marked for abandoning elsewhere first (nothing written).
async fn finish_approved(
    context: &BookingContext,
    merchant: &Merchant,
    attempt: &AttemptRow,
    prepared: &Prepared,
    reference: &str,
) -> Result<Option<BookingResponse>, BookingError> {
    let job = &prepared.job;
    let Booked { run, event, body } = booked(context, job, merchant, None);
    let charge = prepared
        .hold_terms(merchant)
        .charge(Some(reference.to_owned()));
    let approved = ApprovedAttempt {
        attempt_id: attempt.id,
        merchant_id: merchant.merchant_id,
        environment: merchant.environment,
        key: attempt.idempotency_key.clone(),
        body,
        job: job.clone(),
        event,
        run,
        charge,
    };
    let (finished, events_waiting) = match context.batches.finish(approved).await? {
        Batched::Done(finished, events_waiting) => (finished, events_waiting),
        // Its batch gave up: written on its own, which tells whether this attempt was gone.
        Batched::OnItsOwn(approved) => {
            let mut conn = context.pool.acquire().await?;
            let alone = std::slice::from_ref(&approved);
            match batches::finish_approved_attempts(&mut conn, alone).await? {
                Some(events_waiting) => (approved, events_waiting),
                None => return Ok(None),
            }
        }
    };
    // Only events an endpoint can take wake the fan-out: the others were written fanned out.
    if events_waiting {
        context.wakeup.wake();
    }
    Ok(Some(BookingResponse {
        status: 201,
        body: finished.body,
    }))
}

/// Writes the hold's outcome on `conn`, and gives the answer to send once it is committed:
/// the job, its `job.booked`, its charge and the stored 201 (approved, or unreachable with
/// the charge pending); or the decline, stored under the key, with the card buried when it
/// is finished. An attempt's reserved quote is released on a decline, and the attempt
/// deleted either way. `Err` only when the writes failed (roll back).
#[allow(clippy::too_many_arguments)]
async fn record(
    conn: &mut PgConnection,
    context: &BookingContext,
    merchant: &Merchant,
    key: &str,
    prepared: &Prepared,
    answer: ProviderAnswer,
    scenario: Option<Scenario>,
    attempt: Option<&AttemptRow>,
) -> Result<Result<BookingResponse, BookingError>, BookingError> {
    let job = &prepared.job;
    if let ProviderAnswer::Refused(_) = answer {
        // Nothing is held and nothing is booked; the key replays the refusal, and the quote
        // is free for another key once an operator has fixed the configuration.
        let stored = json!({"refusal": PROVIDER_REFUSED});
        let mut writes = Writes::new().and(write::store_response(
            merchant.merchant_id,
            merchant.environment,
            key,
            503,
            &stored,
        ));
        if let Some(attempt) = attempt {
            writes = writes
                .and(attempts::release_quote(attempt.quote_id))
                .and(attempts::delete_attempt(attempt.id));
        }
        writes.execute(conn).await?;
        return Ok(Err(HoldError::ProviderRefused.into()));
    }
    if let ProviderAnswer::Declined(decline) = answer {
        let stored = json!({"refusal": DECLINED, "decline_code": decline.code});
        let mut writes = Writes::new().and(write::store_response(
            merchant.merchant_id,
            merchant.environment,
            key,
            422,
            &stored,
        ));
        if let Some(attempt) = attempt {
            writes = writes
                .and(attempts::release_quote(attempt.quote_id))
                .and(attempts::delete_attempt(attempt.id));
        }
        writes.execute(conn).await?;
        if let Some(finish) = decline.card_finished {
            Payments::mark_card_dead(conn, prepared.card.id, finish).await?;
        }
        return Ok(Err(HoldError::Declined {
            decline_code: decline.code,
        }
        .into()));
    }
    let Booked { run, event, body } = booked(context, job, merchant, scenario);
    // Without an attempt, the job is made by this very statement, so it has no charge yet:
    // an approved hold's charge and its moves join the statement.
    let terms = prepared.hold_terms(merchant);
    let charge = match (attempt, &answer) {
        (None, ProviderAnswer::Approved(reference)) => Some(terms.charge(Some(reference.clone()))),
        _ => None,
    };
    let moves = charge
        .as_ref()
        .map(payments::raising_moves)
        .unwrap_or_default();
    let mut writes = job_writes(
        vec![job],
        vec![&event],
        run.iter().collect(),
        charge.iter().collect(),
        moves.iter().collect(),
    )
    .and(write::store_response(
        merchant.merchant_id,
        merchant.environment,
        key,
        201,
        &body,
    ));
    match attempt {
        // Reserved in phase 1.
        Some(attempt) => writes = writes.and(attempts::delete_attempt(attempt.id)),
        None => writes = writes.and(store::mark_quote_used(job.quote_id, job.booked_at)),
    }
    writes.execute(conn).await?;
    if charge.is_some() {
        return Ok(Ok(BookingResponse { status: 201, body }));
    }
    let recorded = context.payments.record_hold(conn, &terms, answer).await?;
    debug_assert!(matches!(recorded, RecordedHold::Held(_)));
    Ok(Ok(BookingResponse { status: 201, body }))
}

/// What a booked job's statement writes beside it: its sandbox run, its `job.booked`, and
/// the answer stored under its key.
struct Booked {
    run: Option<RunRow>,
    event: NewEvent,
    body: Value,
}

fn booked(
    context: &BookingContext,
    job: &JobRow,
    merchant: &Merchant,
    scenario: Option<Scenario>,
) -> Booked {
    Booked {
        run: sandbox_run(job, merchant, scenario),
        event: job_event(
            job,
            EventName::JobBooked,
            EventDetails::default(),
            job.booked_at,
        ),
        body: serde_json::to_value(JobView::new(job, &context.public_url)).expect("jobs serialise"),
    }
}

/// A test job's sandbox run, with `scenario` (the happy path when None); live jobs have none.
fn sandbox_run(job: &JobRow, merchant: &Merchant, scenario: Option<Scenario>) -> Option<RunRow> {
    (merchant.environment == Environment::Test)
        .then(|| RunRow::new(job, scenario.unwrap_or_default(), job.booked_at))
}

/// The stored answer of a settled key; none yet means its booking is between phases.
fn replay(response: Option<(i32, Value)>) -> Result<BookingResponse, BookingError> {
    let Some((status, body)) = response else {
        return Err(BookingError::InProgress);
    };
    match body["refusal"].as_str() {
        Some(DECLINED) => Err(HoldError::Declined {
            decline_code: body["decline_code"].as_str().unwrap_or_default().to_owned(),
        }
        .into()),
        Some(ABANDONED) => Err(BookingError::Abandoned),
        Some(PROVIDER_REFUSED) => Err(HoldError::ProviderRefused.into()),
        _ => Ok(BookingResponse {
            status: u16::try_from(status).unwrap_or(500),
            body,
        }),
    }
}

fn check_against_quote(request: &BookingRequest, quote: &QuoteRow) -> Result<(), BookingError> {
    let same = |contact: &Contact, lat: f64, lon: f64| {
        (contact.latitude - lat).abs() <= SAME_POINT_DEGREES
            && (contact.longitude - lon).abs() <= SAME_POINT_DEGREES
    };
    if !same(
        &request.pickup,
        quote.pickup_latitude,
        quote.pickup_longitude,
    ) {
        return Err(BookingError::StopMismatch("pickup"));
    }
    if !same(
        &request.dropoff,
        quote.dropoff_latitude,
        quote.dropoff_longitude,
    ) {
        return Err(BookingError::StopMismatch("dropoff"));
    }
    if request.scheduled_for != quote.scheduled_for {
        return Err(BookingError::ScheduleMismatch);
    }
    Ok(())
}

/// The tax in the quote's breakdown.
fn tax_of(quote: &QuoteRow) -> i64 {
    quote
        .breakdown
        .as_array()
        .into_iter()
        .flatten()
        .filter(|line| line["code"] == "tax")
        .filter_map(|line| line["amount_minor"].as_i64())
        .sum()
}

fn contact_json(contact: &Contact) -> Value {
    serde_json::to_value(contact).expect("contacts serialise")
}
