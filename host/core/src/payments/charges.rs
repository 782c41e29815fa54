//! Charges: one per job, held at booking, captured on delivery or return, released when the
//! job is cancelled or fails. Which moves a charge may make is decided by the domain
//! (`courier_domain::charge::state`); the provider calls themselves are made in the parent
//! module.

use std::sync::Arc;

use courier_plugins::{Decline, HoldRequest, Outcome, PluginError, VoidRequest};
use sqlx::{PgConnection, Postgres, Transaction};
use uuid::Uuid;

use super::{
    CallSlot, ChargeView, Gateway, HoldError, HoldTerms, PaymentError, Payments, ProviderAnswer,
    RECENT_CHARGES, RecordedHold, SYSTEM, Settled, hold_key, now, raising_moves, run,
};
use crate::auth::Merchant;
use crate::events::EventTransaction;
use courier_domain::Environment;
use courier_domain::charge::state::{self, ChargeStatus, Decision, Move};
use courier_store::cards::CardRow;
use courier_store::charges::{self as store, ChargeRow};

impl Payments {
    /// The charge already made for the merchant's job, if any.
    pub(super) async fn charge_made_for(
        conn: &mut PgConnection,
        merchant: &Merchant,
        job_id: Uuid,
    ) -> Result<Option<ChargeView>, sqlx::Error> {
        Ok(store::charge_of_job(conn, job_id)
            .await?
            .filter(|charge| charge.merchant_id == merchant.merchant_id)
            .map(|charge| (&charge).into()))
    }

    /// Whether the environment's adapter reaches the network. Its calls then run with no
    /// transaction open and no pooled connection held, on the bounded pool of provider calls;
    /// an adapter without network is a bounded computation and runs where it is called.
    pub fn uses_network(&self, environment: Environment) -> Result<bool, HoldError> {
        Ok(self
            .gateways
            .get(environment)
            .ok_or(HoldError::LiveUnavailable)?
            .uses_network())
    }

    /// A place among the provider calls that may run at once, for one call in `environment`
    /// (always granted to an adapter without network). Refused with
    /// [`PaymentError::ProviderBusy`] when every place is taken: callers are turned away
    /// rather than queued without bound.
    pub fn call_slot(&self, environment: Environment) -> Result<CallSlot, PaymentError> {
        if !self.gateway(environment)?.uses_network() {
            return Ok(CallSlot { _permit: None });
        }
        Arc::clone(&self.calls)
            .try_acquire_owned()
            .map(|permit| CallSlot {
                _permit: Some(permit),
            })
            .map_err(|_| PaymentError::ProviderBusy)
    }

    /// Asks the provider to hold `amount_minor` on `card`, keyed by `hold_key`. With a network
    /// adapter, call it with no transaction open.
    pub async fn authorise(
        &self,
        environment: Environment,
        slot: CallSlot,
        card: &CardRow,
        amount_minor: i64,
        currency: &str,
        hold_key: &str,
    ) -> ProviderAnswer {
        let request = HoldRequest {
            amount_minor,
            currency: currency.to_owned(),
            card_ref: card.provider_ref.clone(),
            customer_id: card.customer_id.clone(),
            idempotency_key: hold_key.to_owned(),
        };
        self.ask(environment, slot, move |g| async move {
            g.authorise(&request).await
        })
        .await
    }

    /// Releases a hold the provider made (`authorisation`), keyed by `key`, with no charge
    /// recorded for it: a booking abandoned after its hold was placed.
    pub async fn release(
        &self,
        environment: Environment,
        slot: CallSlot,
        authorisation: &str,
        key: &str,
    ) -> ProviderAnswer {
        let request = VoidRequest {
            authorisation: authorisation.to_owned(),
            idempotency_key: key.to_owned(),
        };
        self.ask(
            environment,
            slot,
            move |g| async move { g.void(&request).await },
        )
        .await
    }

    /// A money-moving call to the environment's adapter, as an answer (no adapter: unreachable).
    pub(super) async fn ask<F>(
        &self,
        environment: Environment,
        slot: CallSlot,
        call: impl FnOnce(Arc<dyn Gateway>) -> F,
    ) -> ProviderAnswer
    where
        F: std::future::Future<Output = Result<Outcome, PluginError>> + Send + 'static,
    {
        match self.gateway(environment) {
            Ok(gateway) => run(gateway, slot, call).await.into(),
            Err(error) => ProviderAnswer::Unreachable(error.to_string()),
        }
    }

    /// Writes a booking's hold on `conn`, the booking's transaction: an approval raises the
    /// job's charge as `authorised`; an unreachable provider raises it `pending` with a retry
    /// (made with the same `hold_key`); a decline raises nothing, and the caller decides what
    /// the card's end means ([`Payments::mark_card_dead`]). One charge per job: a job that has one
    /// answers it.
    pub async fn record_hold(
        &self,
        conn: &mut PgConnection,
        terms: &HoldTerms<'_>,
        answer: ProviderAnswer,
    ) -> Result<RecordedHold, sqlx::Error> {
        // An approval is known before anything is written: the charge is raised authorised,
        // with both its moves, in one statement. An unreachable provider's retry is settled
        // the usual way.
        let (approval, unanswered) = match answer {
            ProviderAnswer::Declined(decline) => return Ok(RecordedHold::Declined(decline)),
            ProviderAnswer::Refused(_) => return Ok(RecordedHold::Refused),
            ProviderAnswer::Approved(reference) => (Some(reference), None),
            unanswered @ (ProviderAnswer::Unreachable(_)
            | ProviderAnswer::InFlight(_)
            | ProviderAnswer::Pending(_)) => (None, Some(unanswered)),
        };
        let mut charge = terms.charge(approval);
        if !store::raise_charge(conn, &charge, &raising_moves(&charge)).await? {
            // Held before: the charge it made is the answer.
            return Self::charge_made_for(conn, terms.merchant, terms.job_id)
                .await?
                .map(RecordedHold::Held)
                .ok_or(sqlx::Error::RowNotFound);
        }
        if let Some(answer) = unanswered {
            self.settle(conn, &mut charge, Move::Authorise, answer, SYSTEM, 0)
                .await?;
        }
        Ok(RecordedHold::Held((&charge).into()))
    }

    /// Holds `amount_minor` on the merchant's default card for a job, on `conn`, as a booking
    /// with an adapter without network does: in the caller's transaction. One charge per job:
    /// called again for the same job, it answers the charge it made.
    ///
    /// - Approved: the charge is `authorised`.
    /// - Unreachable provider: the charge stays `pending` with `last_error`, and a retry is
    ///   scheduled (both commit with the caller); the caller goes ahead.
    /// - Declined: [`HoldError::Declined`]; the caller rolls back. When the decline says the
    ///   card is finished, the card is marked dead and `payment_method.dead` recorded on a
    ///   transaction of its own, committed before returning: the card's death is a fact about
    ///   the card and must survive the caller's rollback.
    pub async fn hold_for_job(
        &self,
        conn: &mut PgConnection,
        merchant: &Merchant,
        job_id: Uuid,
        amount_minor: i64,
        currency: &str,
    ) -> Result<ChargeView, HoldError> {
        if amount_minor <= 0 {
            return Err(HoldError::InvalidAmount);
        }
        self.uses_network(merchant.environment)?;
        if let Some(made) = Self::charge_made_for(conn, merchant, job_id).await? {
            return Ok(made);
        }
        let card = Self::card_for_hold(conn, merchant).await?;
        let slot = self
            .call_slot(merchant.environment)
            .map_err(|_| HoldError::ProviderBusy)?;
        let hold_key = hold_key(job_id);
        let answer = self
            .authorise(
                merchant.environment,
                slot,
                &card,
                amount_minor,
                currency,
                &hold_key,
            )
            .await;
        let terms = HoldTerms {
            merchant,
            job_id,
            card: &card,
            amount_minor,
            currency,
            hold_key: &hold_key,
        };
        let recorded = self.record_hold(conn, &terms, answer).await?;
        match recorded {
            RecordedHold::Held(view) => Ok(view),
            RecordedHold::Declined(decline) => {
                if let Some(finish) = decline.card_finished {
                    let mut apart = EventTransaction::begin(&self.pool, &self.wakeup).await?;
                    if Self::mark_card_dead(&mut apart, card.id, finish).await? {
                        apart.recorded();
                    }
                    apart.commit().await?;
                }
                Err(HoldError::Declined {
                    decline_code: decline.code,
                })
            }
            RecordedHold::Refused => Err(HoldError::ProviderRefused),
        }
    }

    /// Takes the held money (job delivered or returned). Idempotent. A charge still
    /// `pending` (its hold is being retried) is captured as soon as the hold is placed.
    pub async fn capture_for_job(&self, job_id: Uuid) -> Result<ChargeView, PaymentError> {
        self.finish_hold(job_id, Move::Capture).await
    }

    /// Releases the hold (job cancelled or failed). Idempotent. A charge still `pending` is
    /// voided as soon as its hold is placed, or fails if the retries give up.
    pub async fn void_for_job(&self, job_id: Uuid) -> Result<ChargeView, PaymentError> {
        self.finish_hold(job_id, Move::Void).await
    }

    pub(super) async fn finish_hold(
        &self,
        job_id: Uuid,
        requested: Move,
    ) -> Result<ChargeView, PaymentError> {
        let mut tx = self.pool.begin().await?;
        let mut charge = store::lock_charge_of_job(&mut tx, job_id)
            .await?
            .ok_or(PaymentError::ChargeNotFound)?;
        if charge.status == ChargeStatus::Pending {
            charge.after_hold = Some(requested.as_str().to_owned());
            charge.updated_at = now();
            store::update_charge(&mut tx, &charge).await?;
            tx.commit().await?;
            return Ok((&charge).into());
        }
        let charge = self.advance(tx, charge, requested, SYSTEM, false).await?;
        Ok((&charge).into())
    }

    /// Makes `requested` happen to `charge`, locked on `tx`, asking the provider when needed,
    /// in three steps so no transaction is open while the provider answers: what is known is
    /// settled and the call marked in flight (a retry row leased to this call, so that should
    /// this process die, the retry worker makes the call again with the same key once the
    /// lease runs out), then the provider is called, then its answer is recorded on the
    /// charge as it is by then. The same move already in flight (another request, or a retry
    /// worker) is left to its caller, which records it: one call, not two. An adapter without
    /// network (the sandbox) is asked and answered in the one transaction instead. `claimed`
    /// says the caller is the retry worker that holds the charge's retry row. Answers the
    /// charge as recorded.
    pub(super) async fn advance(
        &self,
        mut tx: Transaction<'_, Postgres>,
        charge: ChargeRow,
        requested: Move,
        actor: &str,
        claimed: bool,
    ) -> Result<ChargeRow, PaymentError> {
        if let Decision::AlreadyDone = state::decide(charge.status, requested)? {
            store::delete_retry(&mut tx, charge.id).await?;
            tx.commit().await?;
            return Ok(charge);
        }
        let environment = charge.environment;
        let gateway = self.gateway(environment)?;
        let slot = self.call_slot(environment)?;
        let Some(attempts) =
            store::lease_call(&mut tx, charge.id, requested, self.call_lease, claimed).await?
        else {
            // The same call is in flight elsewhere; its caller records the answer.
            tx.commit().await?;
            return Ok(charge);
        };
        let card = courier_store::cards::card_by_id(&mut tx, charge.payment_method_id).await?;
        let (mut tx, mut current, answer) = if gateway.uses_network() {
            tx.commit().await?;
            let answer = self.call(gateway, slot, &charge, &card, requested).await;
            let mut tx = self.pool.begin().await?;
            let current = store::lock_charge(&mut tx, charge.id)
                .await?
                .ok_or(PaymentError::ChargeNotFound)?;
            if current.status != charge.status {
                // A twin call (same move, same key) recorded the provider's answer first.
                tx.commit().await?;
                return Ok(current);
            }
            (tx, current, answer)
        } else {
            // A bounded computation, asked and recorded in the same transaction: the charge
            // stays locked throughout, so no twin can have moved it, and a crash loses the
            // whole move, which the settlement or retry that asked for it makes again.
            let answer = self.call(gateway, slot, &charge, &card, requested).await;
            (tx, charge, answer)
        };
        let settled = self
            .settle(&mut tx, &mut current, requested, answer, actor, attempts)
            .await?;
        let mut tx = EventTransaction::wrap(tx, &self.wakeup);
        if let Settled::Declined(Decline {
            card_finished: Some(finish),
            ..
        }) = settled
            && Self::mark_card_dead(&mut tx, card.id, finish).await?
        {
            tx.recorded();
        }
        tx.commit().await?;
        Ok(current)
    }

    /// The merchant's last [`RECENT_CHARGES`] charges in the credential's environment.
    pub async fn recent_charges(
        &self,
        merchant: &Merchant,
    ) -> Result<Vec<ChargeView>, PaymentError> {
        let mut conn = self.pool.acquire().await?;
        let rows = store::recent_charges(
            &mut conn,
            merchant.merchant_id,
            merchant.environment,
            RECENT_CHARGES,
        )
        .await?;
        Ok(rows.iter().map(Into::into).collect())
    }

    /// The charge of a job, if it has one.
    pub async fn charge_of_job(&self, job_id: Uuid) -> Result<Option<ChargeView>, PaymentError> {
        let mut conn = self.pool.acquire().await?;
        Ok(store::charge_of_job(&mut conn, job_id)
            .await?
            .as_ref()
            .map(Into::into))
    }
}
