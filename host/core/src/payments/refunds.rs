//! Refunds, on an operator's request: money given back from a captured charge, in part or in
//! full, over one or more refunds.
//!
//! A refund is written (`refunds`, `requested`) before the provider is asked, with a provider
//! idempotency key fixed at that moment, never derived from what was refunded before (which
//! moves as other refunds land). So:
//!
//! - an answer lost after the provider paid is asked for again under the same key, and the
//!   provider answers with the refund it made: paid once, recorded once;
//! - the operator's request carries its own key (`Idempotency-Key`, or the console form's
//!   one-time token), kept on the refund: the same request sent again finds that refund,
//!   answered or not, and answers it (asking the provider again under the refund's key while
//!   it is unanswered), rather than paying a second refund. A repeat that arrives while the
//!   first call is in flight is told so (409 `idempotency.in_progress`) and pays nothing;
//! - an unanswered refund is asked again by the retry worker of every instance, at the charge
//!   retries' backoff, until the provider answers; it is never given up (the money may have
//!   gone), and past the retry count it is reported by reconciliation;
//! - what is promised by unsettled refunds counts against what is left to give back.

use std::sync::Arc;

use courier_plugins::RefundRequest;
use uuid::Uuid;

use super::{ChargeView, PaymentError, Payments, ProviderAnswer, now, run};
use crate::audit::{self, AuditAction, AuditRecord};
use courier_domain::charge::state::{self, ChargeStatus, Move};
use courier_store::charges::{self as store, ChargeRow, NewMove};
use courier_store::refunds::{self, DECLINED, REQUESTED, RefundRow, SUCCEEDED};

/// Due refunds taken per claim.
const CLAIM_BATCH: i64 = 5;

/// Where a refund stands once the provider answered.
#[derive(Clone, Debug)]
pub enum RefundOutcome {
    /// The provider paid it: the charge with it recorded.
    Paid(ChargeView),
    /// The provider accepted it and says later how it ended (its notification, or the
    /// retry worker asking again): the charge as it stands, the refund not yet counted.
    AwaitingProvider(ChargeView),
}

impl Payments {
    /// Gives back `amount_minor` of a captured charge, once per `request_key` (the caller's
    /// `Idempotency-Key`). Answers the charge with the refund recorded; 503
    /// `payment.provider_unreachable` when the provider did not answer (the refund is kept,
    /// asked again by the retry worker, and found by the same request sent again).
    pub async fn refund(
        &self,
        charge_id: Uuid,
        amount_minor: i64,
        operator: &str,
        request_key: &str,
    ) -> Result<RefundOutcome, PaymentError> {
        if amount_minor <= 0 {
            return Err(PaymentError::InvalidRefundAmount);
        }
        let mut tx = self.pool.begin().await?;
        // Locked first: requests for one charge take their turn, so a repeat sees the first.
        let charge = store::lock_charge(&mut tx, charge_id)
            .await?
            .ok_or(PaymentError::ChargeNotFound)?;
        let (refund, slot) = match refunds::by_request_key(&mut tx, request_key).await? {
            Some(first) if first.charge_id != charge.id || first.amount_minor != amount_minor => {
                return Err(PaymentError::RefundKeyReused);
            }
            Some(first) if first.status != REQUESTED => {
                tx.commit().await?;
                return answered(&charge, &first);
            }
            // The same request again, its refund not answered yet: asked again under the
            // refund's key, unless its call is in flight (that caller records the answer).
            Some(first) => {
                let slot = self.call_slot(charge.environment)?;
                match refunds::lease(&mut tx, first.id, self.call_lease).await? {
                    Some(leased) => (leased, slot),
                    None => return Err(PaymentError::RefundInProgress),
                }
            }
            None => {
                // Refused before anything is written: no adapter, or no place for the call.
                let slot = self.call_slot(charge.environment)?;
                let unsettled = refunds::unsettled_of_charge(&mut tx, charge.id).await?;
                let promised: i64 = unsettled.iter().map(|r| r.amount_minor).sum();
                check_refund(&charge, amount_minor, promised)?;
                let id = Uuid::new_v4();
                let refund = RefundRow {
                    id,
                    charge_id: charge.id,
                    amount_minor,
                    idempotency_key: format!("refund_{id}"),
                    status: REQUESTED.to_owned(),
                    operator: operator.to_owned(),
                    provider_ref: None,
                    decline_code: None,
                    attempts: 0,
                };
                // Another charge's refund took the key meanwhile (this charge is locked).
                if !refunds::insert(&mut tx, &refund, request_key, self.call_lease).await? {
                    return Err(PaymentError::RefundKeyReused);
                }
                (refund, slot)
            }
        };
        tx.commit().await?;
        let answer = self.ask_refund(&charge, &refund, slot).await?;
        self.settle_refund(&refund, answer).await
    }

    /// How the refund asked for under `request_key` stands, as its request was answered (the
    /// console's page after its form); None when no refund has that key.
    pub async fn refund_answer(
        &self,
        request_key: &str,
    ) -> Result<Option<RefundOutcome>, PaymentError> {
        let mut conn = self.pool.acquire().await?;
        let Some(refund) = refunds::by_request_key(&mut conn, request_key).await? else {
            return Ok(None);
        };
        let charge = store::charge(&mut conn, refund.charge_id)
            .await?
            .ok_or(PaymentError::ChargeNotFound)?;
        if refund.status == REQUESTED {
            return Ok(Some(RefundOutcome::AwaitingProvider((&charge).into())));
        }
        answered(&charge, &refund).map(Some)
    }

    /// Claims the unanswered refunds that are due and asks the provider again for each;
    /// returns how many were claimed.
    pub(super) async fn run_due_refunds(&self) -> Result<usize, PaymentError> {
        let environments = self.environments_served();
        let due =
            refunds::claim_due(&self.pool, &environments, CLAIM_BATCH, self.call_lease).await?;
        for refund in &due {
            let outcome = async {
                let charge = {
                    let mut conn = self.pool.acquire().await?;
                    store::charge(&mut conn, refund.charge_id)
                        .await?
                        .ok_or(PaymentError::ChargeNotFound)?
                };
                let slot = self.call_slot(charge.environment)?;
                let answer = self.ask_refund(&charge, refund, slot).await?;
                self.settle_refund(refund, answer).await
            };
            match outcome.await {
                Ok(_) => tracing::info!(refund = %refund.id, "unanswered refund settled"),
                Err(error) => {
                    tracing::warn!(%error, refund = %refund.id, "refund retry not settled")
                }
            }
        }
        Ok(due.len())
    }

    async fn ask_refund(
        &self,
        charge: &ChargeRow,
        refund: &RefundRow,
        slot: super::CallSlot,
    ) -> Result<ProviderAnswer, PaymentError> {
        let gateway = self.gateway(charge.environment)?;
        let request = RefundRequest {
            payment: charge.payment_ref.clone().unwrap_or_default(),
            amount_minor: refund.amount_minor,
            currency: charge.currency.clone(),
            idempotency_key: refund.idempotency_key.clone(),
        };
        Ok(run(Arc::clone(&gateway), slot, move |g| async move {
            g.refund(&request).await
        })
        .await
        .into())
    }

    /// Records the provider's answer to a refund on the refund and its charge, unless another
    /// caller (with the same key, so the same answer) recorded it first.
    pub(super) async fn settle_refund(
        &self,
        refund: &RefundRow,
        answer: ProviderAnswer,
    ) -> Result<RefundOutcome, PaymentError> {
        let mut tx = self.pool.begin().await?;
        let mut charge = store::lock_charge(&mut tx, refund.charge_id)
            .await?
            .ok_or(PaymentError::ChargeNotFound)?;
        let current = refunds::lock(&mut tx, refund.id)
            .await?
            .ok_or(PaymentError::ChargeNotFound)?;
        if current.status != REQUESTED {
            tx.commit().await?;
            return answered(&charge, &current);
        }
        let pending = matches!(answer, ProviderAnswer::Pending(_));
        let reference = match answer {
            ProviderAnswer::Approved(reference) => reference,
            ProviderAnswer::Declined(decline) => {
                refunds::settle(&mut tx, refund.id, DECLINED, None, Some(&decline.code)).await?;
                tx.commit().await?;
                return Err(PaymentError::CardDeclined {
                    decline_code: decline.code,
                });
            }
            ProviderAnswer::Refused(message) => {
                // Kept, shown to operators at once (as past the retry count), and asked for
                // again only at the longest wait: it goes through once they have fixed it.
                let max = i32::try_from(self.retry.max_attempts).unwrap_or(i32::MAX);
                let delay = self.retry.delay_after(max.unsigned_abs());
                let due = now() + chrono::Duration::from_std(delay).unwrap_or_default();
                refunds::unanswered(&mut tx, refund.id, max, due, &message, None).await?;
                tx.commit().await?;
                return Err(PaymentError::ProviderRefused);
            }
            // A pending refund is never taken for paid before the provider says so: its
            // reference is kept for the provider's event, and it is asked for again with its
            // key until the provider answers what it did.
            ProviderAnswer::Unreachable(message)
            | ProviderAnswer::InFlight(message)
            | ProviderAnswer::Pending(message) => {
                let pending_ref = pending.then_some(message.as_str());
                let attempts = current.attempts.saturating_add(1);
                let max = i32::try_from(self.retry.max_attempts).unwrap_or(i32::MAX);
                let delay = self.retry.delay_after(attempts.min(max).unsigned_abs());
                let due = now() + chrono::Duration::from_std(delay).unwrap_or_default();
                tracing::warn!(refund = %refund.id, attempts, error = %message,
                    "no usable answer from the payment provider to a refund; will ask again");
                refunds::unanswered(&mut tx, refund.id, attempts, due, &message, pending_ref)
                    .await?;
                tx.commit().await?;
                if pending {
                    return Ok(RefundOutcome::AwaitingProvider((&charge).into()));
                }
                return Err(PaymentError::ProviderUnreachable);
            }
        };
        // The provider paid it: recorded whatever happened to the charge meanwhile.
        let from = charge.status;
        let at = now();
        let before = serde_json::json!({
            "status": charge.status,
            "refunded_amount_minor": charge.refunded_amount_minor,
        });
        charge.status = ChargeStatus::Refunded;
        charge.refunded_amount_minor += refund.amount_minor;
        charge.refunded_at = Some(at);
        charge.updated_at = at;
        store::update_charge(&mut tx, &charge).await?;
        store::record_move(
            &mut tx,
            &NewMove {
                charge_id: charge.id,
                from_status: Some(from),
                to_status: ChargeStatus::Refunded,
                amount_minor: Some(refund.amount_minor),
                provider_ref: Some(&reference),
                detail: None,
                actor: &refund.operator,
                at,
            },
        )
        .await?;
        refunds::settle(&mut tx, refund.id, SUCCEEDED, Some(&reference), None).await?;
        audit::record(
            &mut tx,
            &AuditRecord {
                operator: &refund.operator,
                action: AuditAction::ChargeRefunded,
                target_type: "charge",
                target_id: charge.id.to_string(),
                merchant_id: Some(charge.merchant_id),
                before: Some(before),
                after: Some(serde_json::json!({
                    "status": charge.status,
                    "refunded_amount_minor": charge.refunded_amount_minor,
                    "amount_minor": refund.amount_minor,
                    "provider_ref": reference,
                })),
                occurred_at: at,
            },
        )
        .await?;
        tx.commit().await?;
        Ok(RefundOutcome::Paid((&charge).into()))
    }
}

impl Payments {
    /// The provider reports a refund it had confirmed failed (Adyen's `REFUND_FAILED` after
    /// `REFUND`, an order it documents): nothing was given back. The refund is declined
    /// (`processing_error`), the charge's refunded amount goes back down (to `captured` when
    /// none is left refunded), and the move is recorded with the provider's reason.
    pub(super) async fn refund_failed_after_paid(
        &self,
        refund_id: Uuid,
        decline_code: &str,
        reason: &str,
    ) -> Result<(), PaymentError> {
        let mut tx = self.pool.begin().await?;
        let Some(refund) = refunds::lock(&mut tx, refund_id).await? else {
            return Ok(());
        };
        let mut charge = store::lock_charge(&mut tx, refund.charge_id)
            .await?
            .ok_or(PaymentError::ChargeNotFound)?;
        if refund.status != SUCCEEDED {
            // Never paid, or taken back already.
            return Ok(());
        }
        let from = charge.status;
        let at = now();
        charge.refunded_amount_minor = (charge.refunded_amount_minor - refund.amount_minor).max(0);
        if charge.refunded_amount_minor == 0 {
            charge.status = ChargeStatus::Captured;
            charge.refunded_at = None;
        }
        charge.updated_at = at;
        store::update_charge(&mut tx, &charge).await?;
        let detail = format!("the provider reports the refund failed: {reason}");
        store::record_move(
            &mut tx,
            &NewMove {
                charge_id: charge.id,
                from_status: Some(from),
                to_status: charge.status,
                amount_minor: Some(refund.amount_minor),
                provider_ref: refund.provider_ref.as_deref(),
                detail: Some(&detail),
                actor: super::SYSTEM,
                at,
            },
        )
        .await?;
        refunds::settle(
            &mut tx,
            refund.id,
            DECLINED,
            refund.provider_ref.as_deref(),
            Some(decline_code),
        )
        .await?;
        tx.commit().await?;
        tracing::error!(refund = %refund.id, charge = %charge.id, %reason,
            "the provider reports a refund it had confirmed failed; taken back from the books");
        Ok(())
    }
}

/// The answer of a settled refund: paid (the charge as it stands), or declined.
fn answered(charge: &ChargeRow, refund: &RefundRow) -> Result<RefundOutcome, PaymentError> {
    match refund.status.as_str() {
        DECLINED => Err(PaymentError::CardDeclined {
            decline_code: refund.decline_code.clone().unwrap_or_default(),
        }),
        _ => Ok(RefundOutcome::Paid(charge.into())),
    }
}

/// Whether `amount_minor` can be refunded from `charge` with `promised` already asked for
/// by refunds not yet settled.
fn check_refund(charge: &ChargeRow, amount_minor: i64, promised: i64) -> Result<(), PaymentError> {
    if state::decide(charge.status, Move::Refund).is_err() {
        return Err(PaymentError::NotRefundable {
            status: charge.status.as_str(),
        });
    }
    let remaining_minor = charge.amount_minor - charge.refunded_amount_minor - promised;
    if amount_minor > remaining_minor {
        return Err(PaymentError::RefundExceedsCaptured {
            remaining_minor: remaining_minor.max(0),
        });
    }
    Ok(())
}
