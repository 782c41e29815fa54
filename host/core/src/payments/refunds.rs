//! Refunds, on an operator's request: money given back from a captured charge, in part or in
//! full, over one or more refunds.
//!
//! A refund is written (`refunds`, `requested`) before the provider is asked, with a provider
//! idempotency key fixed at that moment, never derived from what was refunded before (which
//! moves as other refunds land). So:
//!
//! - an answer lost after the provider paid is asked for again under the same key, and the
//!   provider answers with the refund it made: paid once, recorded once;
//! - the operator's retry of a refund still unanswered (the same charge and amount) finds it
//!   and asks again under its key, rather than paying a second refund;
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
    /// Gives back `amount_minor` of a captured charge. Answers the charge with the refund
    /// recorded; 503 `payment.provider_unreachable` when the provider did not answer (the
    /// refund is kept, asked again by the retry worker, and found by the same request sent
    /// again).
    pub async fn refund(
        &self,
        charge_id: Uuid,
        amount_minor: i64,
        operator: &str,
    ) -> Result<RefundOutcome, PaymentError> {
        if amount_minor <= 0 {
            return Err(PaymentError::InvalidRefundAmount);
        }
        let mut tx = self.pool.begin().await?;
        let charge = store::lock_charge(&mut tx, charge_id)
            .await?
            .ok_or(PaymentError::ChargeNotFound)?;
        // Refused before anything is written: no adapter, or no place for the call.
        let slot = self.call_slot(charge.environment)?;
        let unsettled = refunds::unsettled_of_charge(&mut tx, charge.id).await?;
        let refund = match unsettled.iter().find(|r| r.amount_minor == amount_minor) {
            // The operator's retry of a refund that was not answered: the same refund.
            Some(again) => match refunds::lease(&mut tx, again.id, self.call_lease).await? {
                Some(leased) => leased,
                // Its call is in flight elsewhere; that caller records the answer.
                None => return Err(PaymentError::ProviderUnreachable),
            },
            None => {
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
                refunds::insert(&mut tx, &refund, self.call_lease).await?;
                refund
            }
        };
        tx.commit().await?;
        let answer = self.ask_refund(&charge, &refund, slot).await?;
        self.settle_refund(&refund, answer).await
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
            return match current.status.as_str() {
                DECLINED => Err(PaymentError::CardDeclined {
                    decline_code: current.decline_code.unwrap_or_default(),
                }),
                _ => Ok(RefundOutcome::Paid((&charge).into())),
            };
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
