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

use super::{PaymentError, Payments};
use crate::infra::workers::{Pass, Workers};
use courier_domain::charge::{ChargeStatus, Move};
use courier_store::payments as store;

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

    /// Claims the due retries and makes each call once, then the unanswered refunds that are
    /// due; returns the larger of the two claims (a full one asks for another pass at once).
    pub async fn run_due_retries(&self) -> Result<usize, PaymentError> {
        // Only the environments whose adapter this process has: another instance may have one
        // this one lacks, and a call this one cannot make would only hold the row.
        let environments = self.environments_served();
        let due =
            store::claim_due_retries(&self.pool, &environments, CLAIM_BATCH, self.retry.lease)
                .await?;
        for row in &due {
            if let Err(error) = self.retry_charge(row.charge_id, row.operation).await {
                tracing::warn!(%error, charge_id = %row.charge_id, "charge retry failed");
            }
        }
        let refunds = self.run_due_refunds().await?;
        Ok(due.len().max(refunds))
    }

    async fn retry_charge(&self, charge_id: Uuid, requested: Move) -> Result<(), PaymentError> {
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
        // A capture or void asked for while the hold was pending follows the hold.
        if charge.status == ChargeStatus::Authorised
            && let Some(follow) = charge.after_hold.as_deref().and_then(Move::parse)
        {
            let mut tx = self.pool.begin().await?;
            if let Some(charge) = store::lock_charge(&mut tx, charge_id).await? {
                self.advance(tx, charge, follow, WORKER, false).await?;
            }
        }
        Ok(())
    }
}
