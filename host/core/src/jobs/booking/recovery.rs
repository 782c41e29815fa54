//! The recovery worker: finishes bookings left between their phases by a crash, a timeout or
//! a lost answer, so each ends as an uninterrupted booking would have.
//!
//! An attempt whose lease has run out is claimed, one at a time and leased when its work
//! starts (`FOR UPDATE SKIP LOCKED`, leases on the database's clock), so every instance can
//! run this worker and each attempt is worked on by one at a time. An instance claims only
//! the attempts of environments whose adapter it has: one without the live adapter (a
//! misconfigured instance, or one rolled out before it) leaves live attempts to those that
//! can finish them. The provider is asked for the hold again with the attempt's own
//! idempotency key: it answers with what it did the first time, or does it now. The outcome
//! is then written exactly as the request would have written it.
//!
//! An attempt that cannot be written (its prepared job no longer reads, its writes keep
//! failing, or it is still unfinished [`crate::payments::CallLimits::abandon_after`] after it
//! was made) is abandoned, in three steps that each survive a crash: it is marked for
//! abandoning (from then on it only ever ends abandoned, whoever finds it); the hold is
//! released at the provider; then the booking is refused. No money stays held for a booking
//! that does not exist, and no booking is written on a hold that was released.

use std::time::Duration;

use thiserror::Error;
use uuid::Uuid;

use super::{ABANDONED, BookingContext, BookingError, Prepared, complete, hold};
use crate::auth::Merchant;
use crate::infra::workers::{Pass, Workers};
use crate::payments::{ProviderAnswer, release_key};
use courier_store::abandoned_holds;
use courier_store::bookings::attempts::{self, AttemptRow};
use courier_store::bookings::write;
use courier_store::cards;
use courier_store::writes::Writes;

/// Attempts worked per pass: few, so a shutdown waits for little.
const CLAIM_BATCH: usize = 5;
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
            Ok::<_, sqlx::Error>(Pass::of(claimed, CLAIM_BATCH as i64))
        }
    });
}

/// Claims the interrupted attempts this instance can finish, one at a time, and finishes
/// each; returns how many were claimed.
pub async fn recover_due(context: &BookingContext) -> Result<usize, sqlx::Error> {
    let environments = context.payments.environments_served();
    if environments.is_empty() {
        return Ok(0);
    }
    let mut claimed = 0;
    while claimed < CLAIM_BATCH {
        let Some(attempt) = attempts::claim_interrupted(
            &context.pool,
            &environments,
            context.payments.call_lease(),
            context.payments.abandon_after(),
        )
        .await?
        else {
            break;
        };
        claimed += 1;
        match recover(context, &attempt).await {
            Ok(()) => tracing::info!(attempt = %attempt.id, "interrupted booking finished"),
            Err(error) => {
                tracing::warn!(%error, attempt = %attempt.id, "interrupted booking not finished yet")
            }
        }
    }
    Ok(claimed)
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
        cards::card_by_id(&mut conn, attempt.payment_method_id).await?
    };
    if attempt.abandoning {
        return abandon(context, &merchant, attempt, &card).await;
    }
    if attempt.overdue || attempt.recoveries > MAX_RECOVERIES {
        tracing::error!(attempt = %attempt.id, recoveries = attempt.recoveries,
            "an interrupted booking could not be finished in time; abandoning it");
        return abandon(context, &merchant, attempt, &card).await;
    }
    let prepared = match serde_json::from_value(attempt.job.clone()) {
        Ok(job) => Prepared {
            job,
            card,
            hold_key: attempt.hold_key.clone(),
        },
        Err(error) => {
            tracing::error!(%error, attempt = %attempt.id, "an interrupted booking's job does not read; abandoning it");
            return abandon(context, &merchant, attempt, &card).await;
        }
    };
    let slot = context
        .payments
        .call_slot(environment)
        .map_err(|_| NotFinished::ProviderBusy)?;
    let answer = hold(context, &merchant, slot, &prepared).await;
    if let ProviderAnswer::InFlight(message) = answer {
        // Another call with the attempt's key is still under way at the provider (its
        // process died mid-call): its outcome decides the booking. Asked again next time.
        // A hold accepted and confirmed later is an outcome: booked with its charge pending.
        return Err(NotFinished::HoldUnknown(message));
    }
    match complete(context, &merchant, attempt, &prepared, answer).await {
        // The merchant's answer (a booking or a refusal) is stored, or the attempt is being
        // abandoned: done here.
        Ok(_) | Err(BookingError::Hold(_) | BookingError::InProgress | BookingError::Abandoned) => {
            Ok(())
        }
        // Tried again once the lease runs out; abandoned after MAX_RECOVERIES.
        Err(error) => Err(error.into()),
    }
}

/// Abandons the attempt: marks it, releases whatever the provider holds for it, then
/// refuses its booking (the quote is free again, and the key answers 409
/// `booking.abandoned`). Interrupted anywhere, it is taken up again from the mark.
async fn abandon(
    context: &BookingContext,
    merchant: &Merchant,
    attempt: &AttemptRow,
    card: &courier_store::cards::CardRow,
) -> Result<(), NotFinished> {
    if !attempt.abandoning {
        let mut conn = context.pool.acquire().await?;
        if !attempts::mark_abandoning(&mut conn, attempt.id).await? {
            // Its outcome was written meanwhile: nothing to undo.
            return Ok(());
        }
    }
    let amount = attempt.job["price_amount_minor"]
        .as_i64()
        .unwrap_or_default();
    let currency = attempt.job["currency"].as_str().unwrap_or_default();
    let slot = context
        .payments
        .call_slot(merchant.environment)
        .map_err(|_| NotFinished::ProviderBusy)?;
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
    // The hold whose release the provider accepted without confirming it.
    let mut awaiting_release = None;
    match held {
        // Accepted, placed or not yet: released by its payment's reference either way (the
        // provider cancels a pending authorisation as it would a placed one).
        ProviderAnswer::Approved(authorisation) | ProviderAnswer::Pending(authorisation) => {
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
                    &release_key(&attempt.hold_key, 1),
                )
                .await;
            match released {
                ProviderAnswer::Approved(_) => {}
                ProviderAnswer::Pending(_) => {
                    // Accepted: the provider cancels it and says so by event. Asked again
                    // under the same key it would only say `pending` again, so the booking
                    // is refused now rather than never, and the hold is kept until the
                    // provider confirms its release (one it reports failed is asked for again
                    // under a new key).
                    tracing::info!(attempt = %attempt.id, %authorisation,
                        "the provider accepted the abandoned booking's release");
                    awaiting_release = Some(authorisation);
                }
                ProviderAnswer::Declined(d) => return Err(NotFinished::NotReleased(d.code)),
                ProviderAnswer::Unreachable(m)
                | ProviderAnswer::InFlight(m)
                | ProviderAnswer::Refused(m) => {
                    return Err(NotFinished::NotReleased(m));
                }
            }
        }
        // A hold declined or refused for good holds nothing.
        ProviderAnswer::Declined(_) | ProviderAnswer::Refused(_) => {}
        // Whether money is held is not known: ask again next time.
        ProviderAnswer::Unreachable(message) | ProviderAnswer::InFlight(message) => {
            return Err(NotFinished::HoldUnknown(message));
        }
    }
    let mut tx = context.pool.begin().await?;
    if attempts::lock_attempt(&mut tx, attempt.id).await?.is_none() {
        return Ok(());
    }
    if let Some(reference) = &awaiting_release {
        abandoned_holds::awaiting_release(
            &mut tx,
            merchant.environment,
            reference,
            &attempt.hold_key,
            crate::infra::clock::now(),
        )
        .await?;
    }
    let stored = serde_json::json!({"refusal": ABANDONED});
    Writes::new()
        .and(write::store_response(
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

/// How many unfinished bookings operators are shown at most.
pub const UNFINISHED_SHOWN: i64 = 200;

/// A live booking between its provider call and its outcome, as operators see it: one that
/// stays here past its lease was interrupted, and is finished or abandoned by the recovery
/// worker of an instance that has its environment's adapter.
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
pub struct UnfinishedBooking {
    pub id: Uuid,
    pub merchant_id: Uuid,
    /// `test` or `live`.
    pub environment: &'static str,
    pub idempotency_key: String,
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// Until then it is left to whoever works on it.
    pub leased_until: chrono::DateTime<chrono::Utc>,
    /// Times a recovery worker took it up.
    pub recoveries: i32,
    /// Set once it is being abandoned: it ends refused, its hold released.
    pub abandoning_since: Option<chrono::DateTime<chrono::Utc>>,
    /// When it is abandoned if still unfinished (`COURIER_BOOKING_ABANDON_AFTER_MS`).
    pub abandoned_by: chrono::DateTime<chrono::Utc>,
}

/// The unfinished bookings, oldest first, up to [`UNFINISHED_SHOWN`].
pub async fn unfinished(context: &BookingContext) -> Result<Vec<UnfinishedBooking>, sqlx::Error> {
    let bound = chrono::Duration::from_std(context.payments.abandon_after()).unwrap_or_default();
    let rows = attempts::unfinished(&context.pool, UNFINISHED_SHOWN).await?;
    Ok(rows
        .into_iter()
        .map(|row| UnfinishedBooking {
            id: row.id,
            merchant_id: row.merchant_id,
            environment: row.environment.as_str(),
            idempotency_key: row.idempotency_key,
            created_at: row.created_at,
            leased_until: row.leased_until,
            recoveries: row.recoveries,
            abandoning_since: row.abandoning_since,
            abandoned_by: row.created_at + bound,
        })
        .collect())
}
