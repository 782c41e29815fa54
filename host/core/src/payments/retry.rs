//! The retry worker: provider calls that found the provider unreachable are made again when
//! due. Due rows are claimed with `FOR UPDATE SKIP LOCKED` and a lease, so every instance can
//! run a worker: a row is worked on by one instance at a time, and a row whose instance died
//! is taken up by another once the lease runs out. A call in flight keeps the row leased to
//! its caller, and every call carries the charge's idempotency key for its move, so a retry
//! and a capture asked for at the same moment reach the provider as one request, and the
//! answer is recorded once.

use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use super::{PaymentError, Payments, ProviderAnswer};
use crate::infra::workers::{Pass, Workers};
use courier_domain::charge::{ChargeStatus, Move};
use courier_plugins::{LookupFailure, PaymentStatus};
use courier_store::charges as store;

/// Due retries taken per claim: small, so a shutdown waits for little.
const CLAIM_BATCH: i64 = 5;
const WORKER: &str = "retry worker";

impl Payments {
    /// Runs the retry worker among `workers`; it looks for due retries every `base` (at most
    /// every second).
    pub fn run_retries(self: &Arc<Self>, workers: &Workers) {
        let payments = Arc::clone(self);
        let poll = self
            .retry
            .base
            .clamp(Duration::from_millis(10), Duration::from_secs(1));
        workers.run("charge retries", poll, move || {
            let payments = Arc::clone(&payments);
            async move {
                let claimed = payments.run_due_retries().await?;
                Ok::<_, PaymentError>(Pass::of(claimed, CLAIM_BATCH))
            }
        });
    }

    /// Claims the due retries and makes each call once, then the unanswered refunds and the
    /// abandoned bookings' releases that are due; returns the largest claim (a full one asks
    /// for another pass at once).
    pub async fn run_due_retries(&self) -> Result<usize, PaymentError> {
        // Only the environments whose adapter this process has: another instance may have one
        // this one lacks, and a call this one cannot make would only hold the row.
        let environments = self.environments_served();
        // Events the provider sent before what they confirm was recorded apply first: the
        // retry they would have spared is then dropped.
        let events = self.apply_due_events().await?;
        let due =
            store::claim_due_retries(&self.pool, &environments, CLAIM_BATCH, self.retry.lease)
                .await?;
        for row in &due {
            if let Err(error) = self
                .retry_charge(row.charge_id, row.operation, row.attempts)
                .await
            {
                tracing::warn!(%error, charge_id = %row.charge_id, "charge retry failed");
            }
        }
        let refunds = self.run_due_refunds().await?;
        let abandoned = self.release_abandoned_holds().await?;
        Ok(due.len().max(refunds).max(events).max(abandoned))
    }

    async fn retry_charge(
        &self,
        charge_id: Uuid,
        requested: Move,
        attempts: i32,
    ) -> Result<(), PaymentError> {
        if requested == Move::Void {
            let charge = {
                let mut conn = self.pool.acquire().await?;
                store::charge(&mut conn, charge_id).await?
            };
            if let Some(failed) = charge.filter(|c| c.status == ChargeStatus::Failed) {
                return self.release_late_hold(failed, attempts).await;
            }
        }
        let max = i32::try_from(self.retry.max_attempts).unwrap_or(i32::MAX);
        if matches!(requested, Move::Authorise | Move::Capture | Move::Void) {
            // Past the retry count, or once the provider has accepted the move and not yet
            // confirmed it, the provider is asked what it did before it is asked to do it
            // again: its idempotency keys are kept for a day, and a capture it made long ago,
            // asked for anew, would be refused rather than answered; a pending one would only
            // be answered pending again.
            if self
                .read_back(charge_id, requested, attempts >= max)
                .await?
            {
                return Ok(());
            }
        }
        let mut tx = self.pool.begin().await?;
        let Some(charge) = store::lock_charge(&mut tx, charge_id).await? else {
            store::delete_retry(&mut tx, charge_id).await?;
            tx.commit().await?;
            return Ok(());
        };
        let charge = match self.advance(tx, charge, requested, WORKER, true).await {
            Ok(charge) => charge,
            Err(PaymentError::InvalidMove(invalid)) => {
                // The charge moved on some other way: nothing is left to retry.
                tracing::info!(%invalid, %charge_id, "dropping a retry that no longer applies");
                let mut conn = self.pool.acquire().await?;
                store::delete_retry(&mut conn, charge_id).await?;
                return Ok(());
            }
            Err(other) => return Err(other),
        };
        // Only the hold's retry is followed by the move asked for meanwhile: a capture or
        // release answered pending keeps `after_hold` until confirmed, and is asked about
        // again by its own retry.
        if requested == Move::Authorise
            && charge.status == ChargeStatus::Authorised
            && charge.after_hold.is_some()
        {
            self.follow_hold(charge_id, WORKER).await?;
        }
        Ok(())
    }

    /// Makes the capture or release asked for while the charge's hold was pending, now that
    /// it is placed.
    pub(super) async fn follow_hold(
        &self,
        charge_id: Uuid,
        actor: &str,
    ) -> Result<(), PaymentError> {
        let mut tx = self.pool.begin().await?;
        if let Some(charge) = store::lock_charge(&mut tx, charge_id).await?
            && charge.status == ChargeStatus::Authorised
            && let Some(follow) = charge.after_hold.as_deref().and_then(Move::parse)
        {
            self.advance(tx, charge, follow, actor, false).await?;
        }
        Ok(())
    }

    /// Reads the charge's payment back from the provider and, when it shows `requested` done
    /// (held or taken in full, or released), records it as the provider's answer. True when it did.
    /// Only past the retry count, or while the charge awaits the provider's confirmation.
    async fn read_back(
        &self,
        charge_id: Uuid,
        requested: Move,
        past_count: bool,
    ) -> Result<bool, PaymentError> {
        let charge = {
            let mut conn = self.pool.acquire().await?;
            store::charge(&mut conn, charge_id).await?
        };
        let awaiting = charge
            .as_ref()
            .and_then(|c| c.last_error.as_deref())
            .is_some_and(|e| e.starts_with(super::AWAITING));
        if !past_count && !awaiting {
            return Ok(false);
        }
        let Some((reference, environment, amount, currency)) = charge.and_then(|c| {
            Some((
                c.authorisation_ref?,
                c.environment,
                c.amount_minor,
                c.currency,
            ))
        }) else {
            return Ok(false);
        };
        let gateway = self.gateway(environment)?;
        let slot = self.call_slot(environment)?;
        let lookup = reference.clone();
        let state = match super::run(
            gateway,
            slot,
            move |g| async move { g.retrieve(&lookup).await },
        )
        .await?
        {
            Ok(state) => state,
            Err(LookupFailure::NotFound | LookupFailure::Unreachable(_)) => return Ok(false),
        };
        // Only the charge's own money: a payment in another currency is never taken for it.
        let ours = state.currency.eq_ignore_ascii_case(&currency);
        let done = ours
            && match requested {
                Move::Capture => {
                    state.status == PaymentStatus::Captured && state.captured_minor == amount
                }
                Move::Void => state.status == PaymentStatus::Released,
                Move::Authorise => {
                    state.status == PaymentStatus::Held && state.amount_minor == amount
                }
                _ => false,
            };
        if !done {
            return Ok(false);
        }
        let mut tx = self.pool.begin().await?;
        let Some(mut charge) = store::lock_charge(&mut tx, charge_id).await? else {
            return Ok(false);
        };
        tracing::info!(charge = %charge_id, operation = requested.as_str(),
            "the provider's record shows the move made; recorded from it");
        self.settle(
            &mut tx,
            &mut charge,
            requested,
            ProviderAnswer::Approved(reference),
            WORKER,
            0,
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    }
}
