//! Booking a job against a quote, exactly once per quote and per `Idempotency-Key`.
//!
//! One transaction: claim the idempotency key (a twin with the same key waits here, then
//! replays the stored response), lock the quote, check it, insert the job, mark the quote
//! used, record `job.booked`, place the card hold, store the response, commit. A refusal
//! rolls everything back, the key included: only successful bookings are remembered, and a
//! refused request may be retried with the same key.
//!
//! Each statement is a round trip inside an open transaction that holds the quote's lock, so
//! steps that always go together share a statement (the quote with its merchant's settings;
//! the job with marking its quote used, its event, its sandbox run and the key's stored
//! response; the charge's writes in `store::payments`).

use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use thiserror::Error;
use uuid::Uuid;

use super::reference::{new_reference, new_tracking_token};
use super::views::JobView;
use crate::auth::Merchant;
use crate::domain::booking::{
    BookingRequest, BookingRequestError, Contact, StopRole, normalise_phone,
};
use crate::domain::{Environment, JobStatus};
use crate::events::{self, EventBell, EventDetails, EventName, JobFacts, NewEvent};
use crate::markets::Markets;
use crate::payments::{HoldError, Payments};
use crate::sandbox::Scenario;
use crate::store::jobs::{self as store, JobRow, KeyClaim};
use crate::store::quotes::QuoteRow;
use crate::store::writes::Writes;

/// Search opens this long before a scheduled job's time.
pub const SEARCH_LEAD: chrono::Duration = chrono::Duration::minutes(20);
/// Longest accepted `Idempotency-Key`.
pub const MAX_KEY_LENGTH: usize = 255;
/// How close (degrees) a booked stop must be to the quoted point: numeric strings and
/// numbers of the same value parse alike, so this only absorbs float formatting.
const SAME_POINT_DEGREES: f64 = 1e-7;

#[derive(Debug, Error)]
pub enum BookingError {
    #[error("the Idempotency-Key header is required")]
    MissingKey,
    #[error("the Idempotency-Key header must be 1 to {MAX_KEY_LENGTH} visible characters")]
    InvalidKey,
    #[error("this Idempotency-Key was used for a different request")]
    KeyReused,
    #[error(transparent)]
    Request(#[from] BookingRequestError),
    #[error("there is no quote with that id")]
    QuoteNotFound,
    #[error("the quote expired at {0}")]
    QuoteExpired(DateTime<Utc>),
    #[error("the quote has already been booked")]
    QuoteAlreadyUsed,
    #[error("{0} must be the quoted point")]
    StopMismatch(&'static str),
    #[error("scheduled_for must be what the quote was priced for")]
    ScheduleMismatch,
    #[error(transparent)]
    Hold(#[from] HoldError),
    #[error(transparent)]
    Store(#[from] sqlx::Error),
}

/// A booking's answer: a fresh one, or the stored one replayed.
pub struct BookingResponse {
    pub status: u16,
    pub body: Value,
}

pub struct BookingContext<'a> {
    pub pool: &'a PgPool,
    pub payments: &'a Payments,
    pub markets: &'a Markets,
    pub public_url: &'a str,
    /// Rung once the booking (and its `job.booked`) is committed.
    pub bell: &'a EventBell,
}

/// `Idempotency-Key`: present, 1–255 visible ASCII characters.
pub fn check_key(key: Option<&str>) -> Result<&str, BookingError> {
    let key = key.ok_or(BookingError::MissingKey)?;
    let visible = key.bytes().all(|b| b.is_ascii_graphic());
    if key.is_empty() || key.len() > MAX_KEY_LENGTH || !visible {
        return Err(BookingError::InvalidKey);
    }
    Ok(key)
}

/// Books the job `body` describes. A test job also gets its sandbox run, with `scenario`
/// (the happy path when None).
pub async fn book(
    context: &BookingContext<'_>,
    merchant: &Merchant,
    key: &str,
    body: &Value,
    scenario: Option<Scenario>,
    now: DateTime<Utc>,
) -> Result<BookingResponse, BookingError> {
    // serde_json keeps object keys sorted, so equal bodies hash alike whatever their order.
    let request_hash = Sha256::digest(body.to_string().as_bytes()).to_vec();
    let request = BookingRequest::parse(body, now);
    let mut tx = context.pool.begin().await?;
    match store::claim_key(
        &mut tx,
        merchant.merchant_id,
        merchant.environment,
        key,
        &request_hash,
    )
    .await?
    {
        KeyClaim::Claimed => {}
        KeyClaim::Taken {
            request_hash: earlier,
            response,
        } => {
            tx.rollback().await?;
            if earlier != request_hash {
                return Err(BookingError::KeyReused);
            }
            let (status, body) = response.expect("a committed key has its response");
            return Ok(BookingResponse {
                status: u16::try_from(status).unwrap_or(500),
                body,
            });
        }
    }
    let mut request = request?;
    let store::QuoteToBook {
        quote,
        notify_customer_default,
        proof_photo_required,
        proof_signature_required,
    } = store::lock_quote(&mut tx, request.quote_id)
        .await?
        .filter(|q| {
            q.quote.merchant_id == merchant.merchant_id
                && q.quote.environment == merchant.environment.as_str()
        })
        .ok_or(BookingError::QuoteNotFound)?;
    if quote.used_at.is_some() {
        return Err(BookingError::QuoteAlreadyUsed);
    }
    if quote.expires_at <= now {
        return Err(BookingError::QuoteExpired(quote.expires_at));
    }
    check_against_quote(&request, &quote)?;
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
        environment: merchant.environment.as_str().to_owned(),
        quote_id: quote.id,
        reference: new_reference(),
        tracking_token: new_tracking_token(),
        status: match request.scheduled_for {
            None => JobStatus::Searching,
            Some(_) => JobStatus::Pending,
        }
        .as_str()
        .to_owned(),
        market_id: quote.market_id.clone(),
        currency: quote.currency.clone(),
        price_amount_minor: quote.total_amount_minor,
        tax_amount_minor: tax_of(&quote),
        vehicle: quote.vehicle.clone(),
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
    };
    let run = (merchant.environment == Environment::Test)
        .then(|| crate::sandbox::new_run(&job, scenario.unwrap_or_default(), now));
    let event = booked_event(&job, merchant, now);
    let body =
        serde_json::to_value(JobView::new(&job, context.public_url)).expect("jobs serialise");
    let mut writes = Writes::new()
        .and(store::mark_quote_used(quote.id, job.booked_at))
        .and(store::insert_job(&job))
        .and(events::insert(Uuid::new_v4(), &event))
        .and(store::store_response(
            merchant.merchant_id,
            merchant.environment,
            key,
            201,
            &body,
        ));
    if let Some(run) = &run {
        writes = writes.and(crate::store::sandbox::upsert(run));
    }
    writes.execute(&mut tx).await?;
    // Last before commit: a refusal anywhere above never reaches the card, and a refused hold
    // takes everything above back with it, the stored response included.
    context
        .payments
        .hold_for_job(
            &mut tx,
            merchant,
            job.id,
            job.price_amount_minor,
            &job.currency,
        )
        .await?;
    tx.commit().await?;
    context.bell.ring();
    Ok(BookingResponse { status: 201, body })
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

fn booked_event(job: &JobRow, merchant: &Merchant, now: DateTime<Utc>) -> NewEvent {
    NewEvent {
        name: EventName::JobBooked,
        merchant_id: merchant.merchant_id,
        environment: merchant.environment,
        occurred_at: now,
        job: Some(JobFacts {
            id: job.id,
            reference: job.reference.clone(),
            market: job.market_id.clone(),
            currency: job.currency.clone(),
            price_amount_minor: job.price_amount_minor,
            tax_amount_minor: job.tax_amount_minor,
            scheduled_for: job.scheduled_for,
        }),
        details: EventDetails::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idempotency_keys_are_checked() {
        assert!(matches!(check_key(None), Err(BookingError::MissingKey)));
        assert!(matches!(check_key(Some("")), Err(BookingError::InvalidKey)));
        assert!(matches!(
            check_key(Some("has space")),
            Err(BookingError::InvalidKey)
        ));
        assert!(matches!(
            check_key(Some(&"k".repeat(256))),
            Err(BookingError::InvalidKey)
        ));
        assert_eq!(check_key(Some("order-1234_ab")).unwrap(), "order-1234_ab");
    }
}
