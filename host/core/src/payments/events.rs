//! The payment provider's notifications (`POST /v1/provider-events/{environment}`).
//!
//! The environment's adapter verifies each notification with its configured secret and reads
//! its events (`verify-event`); an unverifiable one is refused and logged. Every event is kept
//! by the provider's id before the answer (`provider_events`), so a notification sent again
//! is applied once, and then applied:
//!
//! - to the charge whose payment it names: a pending hold placed or failed, a capture or a
//!   release made, or failed (kept at the longest wait and shown to operators);
//! - to the refund whose pending answer named it: paid, or failed (declined);
//! - to the hold of an abandoned booking whose release is awaited: released, or failed (its
//!   release asked for again under a new key; see `abandoned_holds`);
//! - a hold no charge heard of, found by its request's key (see `late_hold`): released unless
//!   a booking still under way may take it;
//! - a card the provider stored for a customer the service keeps: kept as the merchant's card.
//!
//! An event that matches nothing yet (the provider can notify before its answer to the call is
//! recorded) is tried again by the retry worker at the retries' backoff, for a day. Applying is
//! idempotent: a move already made is left as it is.

use std::sync::Arc;

use chrono::Duration as ChronoDuration;
use courier_plugins::{Decline, EventKind, EventRefusal, ProviderEvent};
use serde::Serialize;
use sqlx::PgConnection;

use super::abandoned_holds::HoldEvent;
use super::cards::CardSource;
use super::{PaymentError, Payments, ProviderAnswer, SYSTEM, Settled, now};
use crate::events::EventTransaction;
use courier_domain::Environment;
use courier_domain::charge::contains_card_number;
use courier_domain::charge::state::{self, ChargeStatus, Decision, Move};
use courier_store::cards as card_store;
use courier_store::charges::{self as store, ChargeRow, NewMove};
use courier_store::provider_events::{self as kept, ProviderEventRow};
use courier_store::refunds::{self, REQUESTED, SUCCEEDED};

/// Unapplied events looked at per pass of the retry worker.
const SWEEP_BATCH: i64 = 20;
/// How long an event that matches nothing is tried again.
const KEPT_TRYING: ChronoDuration = ChronoDuration::days(1);
/// The decline a refund the provider reports failed is recorded with.
const REFUND_FAILED: &str = "processing_error";

/// What `POST /v1/provider-events/{environment}` answers.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct EventsReceived {
    /// Events the notification held.
    pub received: usize,
    /// Of those, events already received before (by the provider's id): not applied again.
    pub duplicates: usize,
}

impl Payments {
    /// Verifies a notification of `environment`'s provider with its adapter, keeps each new
    /// event and applies it.
    pub async fn receive_provider_events(
        &self,
        environment: Environment,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    ) -> Result<EventsReceived, PaymentError> {
        let gateway = self.gateway(environment)?;
        // A check, not a call: it takes a place of its own, never one a booking needs.
        let _check = Arc::clone(&self.event_checks)
            .try_acquire_owned()
            .map_err(|_| PaymentError::ProviderBusy)?;
        let events = match gateway.verify_event(&headers, &body).await? {
            Ok(events) => events,
            Err(EventRefusal::Unverified(reason)) => {
                tracing::warn!(environment = environment.as_str(), %reason,
                    "a provider notification was refused: it does not verify");
                return Err(PaymentError::EventUnverified);
            }
            Err(EventRefusal::Unsupported) => return Err(PaymentError::EventsUnsupported),
        };
        let at = now();
        let mut new = Vec::new();
        // Kept before anything is answered: once the provider hears 200 it never sends them
        // again.
        let mut tx = self.pool.begin().await?;
        for event in &events {
            let row = ProviderEventRow {
                environment,
                event_id: event.id.clone(),
                reference: event.reference.clone(),
                kind: kind_name(&event.kind).to_owned(),
                event: serde_json::to_value(event).map_err(|e| sqlx::Error::Encode(e.into()))?,
                tries: 0,
            };
            if kept::keep(&mut tx, &row, at).await? {
                new.push(event.id.clone());
            }
        }
        tx.commit().await?;
        for id in &new {
            // A failure here leaves the event due: the retry worker applies it.
            if let Err(error) = self.apply_kept_event(environment, id).await {
                tracing::warn!(%error, event = %id, "a provider event is kept, to be applied later");
            }
        }
        Ok(EventsReceived {
            received: events.len(),
            duplicates: events.len() - new.len(),
        })
    }

    /// Applies the kept events that are due (matched nothing before, or whose applying
    /// failed); returns how many were looked at.
    pub(super) async fn apply_due_events(&self) -> Result<usize, PaymentError> {
        let environments = self.environments_served();
        let due = {
            let mut conn = self.pool.acquire().await?;
            kept::due(&mut conn, &environments, now() - KEPT_TRYING, SWEEP_BATCH).await?
        };
        for (environment, id) in &due {
            if let Err(error) = self.apply_kept_event(*environment, id).await {
                tracing::warn!(%error, event = %id, "a provider event is not applied yet");
            }
        }
        Ok(due.len())
    }

    /// Applies one kept event unless it is applied (or being applied elsewhere). An event that
    /// matches nothing yet is tried again later.
    async fn apply_kept_event(
        &self,
        environment: Environment,
        event_id: &str,
    ) -> Result<(), PaymentError> {
        let mut tx = self.pool.begin().await?;
        let Some(row) = kept::lock_unapplied(&mut tx, environment, event_id).await? else {
            return Ok(());
        };
        let event: ProviderEvent =
            serde_json::from_value(row.event).map_err(|e| sqlx::Error::Decode(e.into()))?;
        let mut follow = None;
        let applied = match &event.kind {
            EventKind::Refunded | EventKind::RefundFailed(_) => {
                self.apply_to_refund(environment, &event).await?
            }
            EventKind::CardStored(card) => {
                let gateway = self.gateway(environment)?;
                let Some(merchant_id) =
                    card_store::merchant_of_customer(&mut tx, environment, &event.reference)
                        .await?
                else {
                    return self.not_yet(tx, environment, event_id, row.tries).await;
                };
                if contains_card_number(&card.reference)
                    && !gateway.is_own_reference(&card.reference)
                {
                    tracing::error!(event = %event_id,
                        "a stored-card event names a card number; not kept");
                } else {
                    self.keep_card(
                        (merchant_id, environment),
                        event.reference.clone(),
                        card,
                        CardSource::ProviderEvent,
                    )
                    .await?;
                }
                true
            }
            _ => {
                let Some(mut charge) =
                    store::lock_charge_by_authorisation(&mut tx, environment, &event.reference)
                        .await?
                else {
                    // No charge: the hold of an abandoned booking, or one not written yet, or
                    // one whose answer was never heard (found by its request's key).
                    let met = Self::apply_to_abandoned_hold(&mut tx, environment, &event).await?;
                    let applied = match (met, &event.kind, &event.request_key) {
                        (HoldEvent::Applied, ..) => true,
                        (HoldEvent::NoHold, EventKind::Held, Some(key)) => {
                            Self::apply_unmatched_hold(&mut tx, environment, &event, key).await?
                        }
                        _ => false,
                    };
                    if !applied {
                        return self.not_yet(tx, environment, event_id, row.tries).await;
                    }
                    kept::applied(&mut tx, environment, event_id, now()).await?;
                    tx.commit().await?;
                    return Ok(());
                };
                let applied = self.apply_to_charge(&mut tx, &mut charge, &event).await?;
                if let Some(Settled::Declined(Decline {
                    card_finished: Some(finish),
                    ..
                })) = &applied
                {
                    let mut tx = EventTransaction::wrap(tx, &self.wakeup);
                    if Self::mark_card_dead(&mut tx, charge.payment_method_id, *finish).await? {
                        tx.recorded();
                    }
                    kept::applied(&mut tx, environment, event_id, now()).await?;
                    tx.commit().await?;
                    return Ok(());
                }
                if matches!(event.kind, EventKind::Held)
                    && charge.status == ChargeStatus::Authorised
                    && charge.after_hold.is_some()
                {
                    follow = Some(charge.id);
                }
                match applied {
                    Some(_) => true,
                    None => return self.not_yet(tx, environment, event_id, row.tries).await,
                }
            }
        };
        if applied {
            kept::applied(&mut tx, environment, event_id, now()).await?;
        }
        tx.commit().await?;
        if let Some(charge_id) = follow {
            // A capture or a release asked for while the hold was pending follows the hold.
            self.follow_hold(charge_id, SYSTEM).await?;
        }
        Ok(())
    }

    async fn not_yet(
        &self,
        mut tx: sqlx::Transaction<'_, sqlx::Postgres>,
        environment: Environment,
        event_id: &str,
        tries: i32,
    ) -> Result<(), PaymentError> {
        let wait = self
            .retry
            .delay_after(tries.saturating_add(1).unsigned_abs());
        let next = now() + ChronoDuration::from_std(wait).unwrap_or(KEPT_TRYING);
        kept::not_yet(&mut tx, environment, event_id, next).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Applies a hold, capture or release event to the charge whose payment it names; None
    /// when the charge is not where the event can apply yet (its hold still pending).
    async fn apply_to_charge(
        &self,
        tx: &mut PgConnection,
        charge: &mut ChargeRow,
        event: &ProviderEvent,
    ) -> Result<Option<Settled>, PaymentError> {
        let reference = event.reference.clone();
        let (requested, answer) = match &event.kind {
            EventKind::Held => (Move::Authorise, ProviderAnswer::Approved(reference)),
            EventKind::HoldFailed(decline) => {
                (Move::Authorise, ProviderAnswer::Declined(decline.clone()))
            }
            EventKind::Captured => (Move::Capture, ProviderAnswer::Approved(reference)),
            EventKind::Released => (Move::Void, ProviderAnswer::Approved(reference)),
            EventKind::CaptureFailed(reason) => {
                return Ok(self
                    .failed_at_provider(tx, charge, Move::Capture, reason)
                    .await?);
            }
            EventKind::ReleaseFailed(reason) => {
                return Ok(self
                    .failed_at_provider(tx, charge, Move::Void, reason)
                    .await?);
            }
            _ => unreachable!("refund and card events are applied elsewhere"),
        };
        let waits_for_hold = charge.status == ChargeStatus::Pending && requested != Move::Authorise;
        if waits_for_hold {
            return Ok(None);
        }
        // A hold or a capture moves the charge's whole amount; any move is in its currency.
        let whole = matches!(requested, Move::Authorise | Move::Capture);
        if let Some(other) = other_money(
            event,
            whole.then_some(charge.amount_minor),
            &charge.currency,
        ) {
            tracing::error!(charge = %charge.id, event = %event.id, %other,
                operation = requested.as_str(),
                "the provider reports a move of other money than the charge's; not recorded \
                 (reconciliation reports the difference)");
            return Ok(Some(Settled::GaveUp));
        }
        if matches!(event.kind, EventKind::Held) && charge.status == ChargeStatus::Failed {
            // Placed after the charge was given up: no job takes that money; released.
            return Ok(Some(
                Self::keep_late_hold(tx, charge, &event.reference).await?,
            ));
        }
        if !matches!(
            state::decide(charge.status, requested),
            Ok(Decision::Apply(_))
        ) {
            // Made already, or the charge moved on another way: nothing to record.
            return Ok(Some(Settled::Moved));
        }
        let settled = self
            .settle(tx, charge, requested, answer, SYSTEM, 0)
            .await?;
        tracing::info!(charge = %charge.id, operation = requested.as_str(), event = %event.id,
            "recorded from the provider's event");
        Ok(Some(settled))
    }

    /// A capture or release the provider reports failed: the charge keeps its hold, and the
    /// move is shown to operators at once and asked for again at the longest wait, under a
    /// key of its own. A capture already recorded as made (its confirmation came first) is
    /// taken back: nothing was taken, and the charge is `authorised` again.
    async fn failed_at_provider(
        &self,
        tx: &mut PgConnection,
        charge: &mut ChargeRow,
        requested: Move,
        reason: &str,
    ) -> Result<Option<Settled>, sqlx::Error> {
        match (charge.status, requested) {
            (ChargeStatus::Authorised, _) => {}
            (ChargeStatus::Pending, _) => return Ok(None),
            (ChargeStatus::Captured, Move::Capture) => {
                let Ok(Decision::Apply(to)) = state::decide(charge.status, Move::CaptureReversed)
                else {
                    return Ok(Some(Settled::Moved));
                };
                let at = now();
                let detail = format!("the provider reports the capture failed: {reason}");
                charge.status = to;
                charge.captured_at = None;
                charge.payment_ref = None;
                charge.updated_at = at;
                store::write_move(
                    tx,
                    charge,
                    &NewMove {
                        charge_id: charge.id,
                        from_status: Some(ChargeStatus::Captured),
                        to_status: to,
                        amount_minor: Some(charge.amount_minor),
                        provider_ref: None,
                        detail: Some(&detail),
                        actor: SYSTEM,
                        at,
                    },
                )
                .await?;
            }
            (ChargeStatus::Refunded, Move::Capture) => {
                // Money given back that was never taken: no move can say it; reconciliation
                // reports it, and operators must settle it with the provider.
                tracing::error!(charge = %charge.id, %reason,
                    "the provider reports the capture of a refunded charge failed; an operator \
                     must look");
                return Ok(Some(Settled::Moved));
            }
            _ => return Ok(Some(Settled::Moved)),
        }
        charge.provider_failures = charge.provider_failures.saturating_add(1);
        let max = i32::try_from(self.retry.max_attempts).unwrap_or(i32::MAX);
        let delay = self.retry.delay_after(max.unsigned_abs());
        let due = now() + ChronoDuration::from_std(delay).unwrap_or_default();
        tracing::error!(charge = %charge.id, operation = requested.as_str(), %reason,
            "the provider reports the move failed; an operator must look");
        store::schedule_retry(tx, charge.id, requested, max, due, reason).await?;
        charge.last_error = Some(super::failed_at_provider(requested));
        charge.updated_at = now();
        store::update_charge(tx, charge).await?;
        Ok(Some(Settled::WillRetry))
    }

    /// Applies a refund event to the refund whose pending answer named it; false when no
    /// refund names it yet.
    async fn apply_to_refund(
        &self,
        environment: Environment,
        event: &ProviderEvent,
    ) -> Result<bool, PaymentError> {
        let refund = {
            let mut conn = self.pool.acquire().await?;
            refunds::pending(&mut conn, environment, &event.reference).await?
        };
        let Some(refund) = refund else {
            return Ok(false);
        };
        if let (SUCCEEDED, EventKind::RefundFailed(reason)) = (refund.status.as_str(), &event.kind)
        {
            self.refund_failed_after_paid(refund.id, REFUND_FAILED, reason)
                .await?;
            return Ok(true);
        }
        if refund.status != REQUESTED {
            return Ok(true);
        }
        let answer = match &event.kind {
            EventKind::Refunded => {
                let currency = {
                    let mut conn = self.pool.acquire().await?;
                    store::charge(&mut conn, refund.charge_id)
                        .await?
                        .map(|c| c.currency)
                        .unwrap_or_default()
                };
                if let Some(other) = other_money(event, Some(refund.amount_minor), &currency) {
                    tracing::error!(refund = %refund.id, event = %event.id, %other,
                        "the provider reports a refund of other money; not recorded");
                    return Ok(true);
                }
                ProviderAnswer::Approved(event.reference.clone())
            }
            _ => ProviderAnswer::Declined(Decline {
                code: REFUND_FAILED.to_owned(),
                card_finished: None,
            }),
        };
        match self.settle_refund(&refund, answer).await {
            Ok(_) | Err(PaymentError::CardDeclined { .. }) => Ok(true),
            Err(other) => Err(other),
        }
    }
}

/// How the money an event names differs from `amount_minor` (when the move is of a known
/// amount) in `currency`, if it does; an event that names no amount or currency differs in
/// nothing it did not say.
fn other_money(event: &ProviderEvent, amount_minor: Option<i64>, currency: &str) -> Option<String> {
    if let (Some(said), Some(ours)) = (event.amount_minor, amount_minor)
        && said != ours
    {
        return Some(format!("amount {said}, not {ours}"));
    }
    match event.currency.as_deref() {
        Some(said) if !said.eq_ignore_ascii_case(currency) => {
            Some(format!("currency {said}, not {currency}"))
        }
        _ => None,
    }
}

fn kind_name(kind: &EventKind) -> &'static str {
    match kind {
        EventKind::Held => "held",
        EventKind::HoldFailed(_) => "hold-failed",
        EventKind::Captured => "captured",
        EventKind::CaptureFailed(_) => "capture-failed",
        EventKind::Released => "released",
        EventKind::ReleaseFailed(_) => "release-failed",
        EventKind::Refunded => "refunded",
        EventKind::RefundFailed(_) => "refund-failed",
        EventKind::CardStored(_) => "card-stored",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_of_other_money_is_told_apart() {
        let event = |amount_minor, currency: Option<&str>| ProviderEvent {
            id: "e".into(),
            reference: "r".into(),
            kind: EventKind::Held,
            amount_minor,
            currency: currency.map(str::to_owned),
            request_key: None,
        };
        assert_eq!(
            other_money(&event(Some(500), Some("EUR")), Some(500), "EUR"),
            None
        );
        assert_eq!(
            other_money(&event(Some(500), Some("eur")), Some(500), "EUR"),
            None
        );
        assert_eq!(other_money(&event(None, None), Some(500), "EUR"), None);
        assert_eq!(other_money(&event(Some(7), None), None, "EUR"), None);
        assert_eq!(
            other_money(&event(Some(501), Some("EUR")), Some(500), "EUR").as_deref(),
            Some("amount 501, not 500")
        );
        assert_eq!(
            other_money(&event(Some(500), Some("USD")), Some(500), "EUR").as_deref(),
            Some("currency USD, not EUR")
        );
        assert_eq!(
            other_money(&event(Some(9), Some("USD")), None, "EUR").as_deref(),
            Some("currency USD, not EUR")
        );
    }

    #[test]
    fn every_kind_is_named_as_the_contract_names_it() {
        let card = courier_plugins::AttachedCard {
            reference: "r".into(),
            card: courier_plugins::Card {
                brand: "visa".into(),
                last_four: "4242".into(),
                expiry_month: 1,
                expiry_year: 2030,
            },
        };
        let decline = Decline {
            code: "card_declined".into(),
            card_finished: None,
        };
        let kinds = [
            EventKind::Held,
            EventKind::HoldFailed(decline),
            EventKind::Captured,
            EventKind::CaptureFailed("x".into()),
            EventKind::Released,
            EventKind::ReleaseFailed("x".into()),
            EventKind::Refunded,
            EventKind::RefundFailed("x".into()),
            EventKind::CardStored(card),
        ];
        for kind in kinds {
            // The name kept is the one the event serialises with.
            let value = serde_json::to_value(&kind).unwrap();
            assert_eq!(value["kind"], kind_name(&kind));
        }
    }
}
