//! The recovery worker: finishes bookings left between their phases by a crash, a timeout or
//! a lost answer, so each ends as an uninterrupted booking would have.
//!
//! An attempt whose lease has run out is claimed (`FOR UPDATE SKIP LOCKED`, leased again, so
//! every instance can run this worker and each attempt is worked on by one at a time). The
//! provider is asked for the hold again with the attempt's own idempotency key: it answers
//! with what it did the first time, or does it now. The outcome is then written exactly as
//! the request would have written it. An attempt that cannot be written (its prepared job no
//! longer reads, or its writes keep failing) is abandoned: the hold is released at the
//! provider first, and only then is the booking refused, so no money stays held for a
//! booking that does not exist.

use std::time::Duration;

use thiserror::Error;
use uuid::Uuid;

use super::{ABANDONED, BookingContext, BookingError, Prepared, complete, hold};
use crate::auth::Merchant;
use crate::infra::workers::{Pass, Workers};
use crate::payments::ProviderAnswer;
use courier_store::bookings::{self as attempts, AttemptRow};
use courier_store::jobs as store;
use courier_store::payments as payment_store;
use courier_store::writes::Writes;

/// Attempts taken per claim: small, so a shutdown waits for little.
const CLAIM_BATCH: i64 = 5;
/// Recoveries after which an attempt whose writes keep failing is abandoned.
const MAX_RECOVERIES: i32 = 10;

/// Why an attempt was not finished this time (it is tried again once its lease runs out).
#[derive(Debug, Error)]
enum NotFinished {
    #[error("every place for a provider call is taken")]
    ProviderBusy,
    #[error("the provider did not say whether it holds money for the attempt: {0}")]
    HoldUnknown(String),
    #[error("the provider did not release the attempt's hold: {0}")]
    NotReleased(String),
    #[error(transparent)]
    Booking(#[from] BookingError),
    #[error(transparent)]
    Store(#[from] sqlx::Error),
}

/// Runs the recovery worker among `workers`; it looks for interrupted attempts every `poll`.
pub fn run(context: BookingContext, workers: &Workers, poll: Duration) {
    workers.run("booking recovery", poll, move || {
        let context = context.clone();
        async move {
            let claimed = recover_due(&context).await?;
            Ok::<_, sqlx::Error>(Pass::of(claimed, CLAIM_BATCH))
        }
    });
}

/// Claims the interrupted attempts and finishes each; returns how many were claimed.
pub async fn recover_due(context: &BookingContext) -> Result<usize, sqlx::Error> {
    let due =
        attempts::claim_interrupted(&context.pool, CLAIM_BATCH, context.payments.call_lease())
            .await?;
    for attempt in &due {
        match recover(context, attempt).await {
            Ok(()) => tracing::info!(attempt = %attempt.id, "interrupted booking finished"),
            Err(error) => {
                tracing::warn!(%error, attempt = %attempt.id, "interrupted booking not finished yet")
            }
        }
    }
    Ok(due.len())
}

async fn recover(context: &BookingContext, attempt: &AttemptRow) -> Result<(), NotFinished> {
    let environment = attempt.environment;
    let merchant = Merchant {
        merchant_id: attempt.merchant_id,
        environment,
        key_id: Uuid::nil(),
    };
    let card = {
        let mut conn = context.pool.acquire().await?;
        payment_store::card_by_id(&mut conn, attempt.payment_method_id).await?
    };
    let slot = context
        .payments
        .call_slot(environment)
        .map_err(|_| NotFinished::ProviderBusy)?;
    let job = serde_json::from_value(attempt.job.clone());
    let prepared = match job {
        Ok(job) => Prepared {
            job,
            card,
            hold_key: attempt.hold_key.clone(),
        },
        Err(error) => {
            tracing::error!(%error, attempt = %attempt.id, "an interrupted booking's job does not read");
            return abandon(context, &merchant, attempt, &card, slot).await;
        }
    };
    let answer = hold(context, &merchant, slot, &prepared).await;
    match complete(context, &merchant, attempt, &prepared, answer).await {
        // The merchant's answer (a booking or a refusal) is stored: done.
        Ok(_) | Err(BookingError::Hold(_) | BookingError::InProgress | BookingError::Abandoned) => {
            Ok(())
        }
        Err(error) if attempt.recoveries >= MAX_RECOVERIES => {
            tracing::error!(%error, attempt = %attempt.id, "an interrupted booking keeps failing; abandoning it");
            let slot = context
                .payments
                .call_slot(environment)
                .map_err(|_| NotFinished::ProviderBusy)?;
            abandon(context, &merchant, attempt, &prepared.card, slot).await
        }
        Err(error) => Err(error.into()),
    }
}

/// Releases whatever the provider holds for the attempt, then refuses its booking: the
/// quote is free again, and the key answers 409 `booking.abandoned`.
async fn abandon(
    context: &BookingContext,
    merchant: &Merchant,
    attempt: &AttemptRow,
    card: &courier_store::payments::CardRow,
    slot: crate::payments::CallSlot,
) -> Result<(), NotFinished> {
    let amount = attempt.job["price_amount_minor"]
        .as_i64()
        .unwrap_or_default();
    let currency = attempt.job["currency"].as_str().unwrap_or_default();
    // The same key: the provider answers with the hold it made, if it made one.
    let held = context
        .payments
        .authorise(
            merchant.environment,
            slot,
            card,
            amount,
            currency,
            &attempt.hold_key,
        )
        .await;
    match held {
        ProviderAnswer::Approved(authorisation) => {
            let slot = context
                .payments
                .call_slot(merchant.environment)
                .map_err(|_| NotFinished::ProviderBusy)?;
            let released = context
                .payments
                .release(
                    merchant.environment,
                    slot,
                    &authorisation,
                    &format!("{}_release", attempt.hold_key),
                )
                .await;
            match released {
                ProviderAnswer::Approved(_) => {}
                ProviderAnswer::Declined(d) => return Err(NotFinished::NotReleased(d.code)),
                ProviderAnswer::Unreachable(m) => return Err(NotFinished::NotReleased(m)),
            }
        }
        ProviderAnswer::Declined(_) => {}
        // Whether money is held is not known: ask again next time.
        ProviderAnswer::Unreachable(message) => return Err(NotFinished::HoldUnknown(message)),
    }
    let mut tx = context.pool.begin().await?;
    if attempts::lock_attempt(&mut tx, attempt.id).await?.is_none() {
        return Ok(());
    }
    let stored = serde_json::json!({"refusal": ABANDONED});
    Writes::new()
        .and(store::store_response(
            merchant.merchant_id,
            merchant.environment,
            &attempt.idempotency_key,
            409,
            &stored,
        ))
        .and(attempts::release_quote(attempt.quote_id))
        .and(attempts::delete_attempt(attempt.id))
        .execute(&mut tx)
        .await?;
    tx.commit().await?;
    Ok(())
}
