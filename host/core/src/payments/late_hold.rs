//! A hold the provider places after its charge failed (a pending hold whose retries gave up,
//! then the provider's `held` event): no job will take that money, so it is released. The
//! charge stays `failed` (nothing was ever taken); its moves say the hold was released. The
//! release is durable work: a retry row (operation `void`) that the retry worker of any
//! instance makes, under the charge's release key, until the provider answers.
//!
//! A `held` event whose payment no charge was authorised with (its `authorise` answer never
//! heard) is found by the key its request was made under, when the provider says it (contract
//! 2.3.0): the failed charge of that key keeps and releases it as above; a booking that holds
//! no money (declined or abandoned before the hold was heard of), or a second payment under a
//! charge's key, has it released as an abandoned booking's hold is. A hold under a key the
//! service never makes is some other system's payment: left alone.

use sqlx::PgConnection;
use uuid::Uuid;

use super::{PaymentError, Payments, ProviderAnswer, Settled, job_of_hold_key, now};
use courier_domain::Environment;
use courier_domain::charge::{ChargeStatus, Move};
use courier_plugins::ProviderEvent;
use courier_store::abandoned_holds;
use courier_store::bookings::attempts;
use courier_store::charges::{self as store, ChargeRow, NewMove};

const WORKER: &str = "retry worker";
/// The retry row's reason until the release is made.
const RELEASE_DUE: &str = "a hold placed after the charge failed: to be released";

impl Payments {
    /// Applies a `held` event whose payment matched no charge nor abandoned hold, by the key
    /// its request was made under; false when it is to be tried again (its booking still
    /// under way, or its charge still to hear the answer).
    pub(super) async fn apply_unmatched_hold(
        conn: &mut PgConnection,
        environment: Environment,
        event: &ProviderEvent,
        key: &str,
    ) -> Result<bool, sqlx::Error> {
        let reference = event.reference.as_str();
        let Some(job_id) = job_of_hold_key(key) else {
            tracing::info!(%reference, key,
                "the provider reports a hold this service did not ask for; left alone");
            return Ok(true);
        };
        // The booking before its charge: its outcome writes the charge and deletes the
        // booking at once, so read the other way round both could seem missing.
        if attempts::holds_under(conn, environment, key).await? {
            return Ok(false);
        }
        match store::lock_charge_of_job(conn, job_id).await? {
            Some(charge) if charge.environment != environment => {
                tracing::warn!(%reference, key, "a hold under a key of the other environment; \
                    left alone");
                Ok(true)
            }
            // Written with it since: applied by its reference when tried again.
            Some(charge) if charge.authorisation_ref.as_deref() == Some(reference) => Ok(false),
            Some(mut charge) if charge.authorisation_ref.is_none() => {
                if charge.status != ChargeStatus::Failed {
                    return Ok(false);
                }
                Self::keep_late_hold(conn, &mut charge, reference).await?;
                Ok(true)
            }
            Some(charge) => {
                tracing::error!(charge = %charge.id, %reference, key,
                    "the provider placed a second hold under a charge's key; releasing it");
                abandoned_holds::to_release(conn, environment, reference, key, now()).await?;
                Ok(true)
            }
            None => {
                tracing::warn!(%reference, key,
                    "the provider placed a hold for a booking that holds no money; releasing it");
                abandoned_holds::to_release(conn, environment, reference, key, now()).await?;
                Ok(true)
            }
        }
    }

    /// Keeps the late hold's reference on the failed charge and schedules its release.
    pub(super) async fn keep_late_hold(
        conn: &mut PgConnection,
        charge: &mut ChargeRow,
        reference: &str,
    ) -> Result<Settled, sqlx::Error> {
        tracing::warn!(charge = %charge.id, %reference,
            "the provider placed a hold after the charge failed; releasing it");
        let at = now();
        charge
            .authorisation_ref
            .get_or_insert_with(|| reference.to_owned());
        charge.updated_at = at;
        store::update_charge(conn, charge).await?;
        store::schedule_retry(conn, charge.id, Move::Void, 0, at, RELEASE_DUE).await?;
        Ok(Settled::WillRetry)
    }

    /// Asks the provider to release a failed charge's late hold, and records the answer: the
    /// release (a move from `failed` to `failed` that says so), or a retry after backoff.
    pub(super) async fn release_late_hold(
        &self,
        charge: ChargeRow,
        attempts: i32,
    ) -> Result<(), PaymentError> {
        let Some(reference) = charge.authorisation_ref.clone() else {
            let mut conn = self.pool.acquire().await?;
            store::delete_retry(&mut conn, charge.id).await?;
            return Ok(());
        };
        let slot = self.call_slot(charge.environment)?;
        let key = format!("charge_{}_void", charge.id);
        let answer = self
            .release(charge.environment, slot, &reference, &key)
            .await;
        let mut tx = self.pool.begin().await?;
        let Some(mut current) = store::lock_charge(&mut tx, charge.id).await? else {
            return Ok(());
        };
        let at = now();
        let detail = match answer {
            ProviderAnswer::Approved(_) => "the hold placed after the charge failed is released",
            ProviderAnswer::Pending(_) => {
                "the release of the hold placed after the charge failed is accepted; the \
                 provider confirms it later"
            }
            ProviderAnswer::Unreachable(message)
            | ProviderAnswer::InFlight(message)
            | ProviderAnswer::Refused(message) => {
                self.release_again(&mut tx, charge.id, attempts, &message)
                    .await?;
                tx.commit().await?;
                return Ok(());
            }
            ProviderAnswer::Declined(decline) => {
                let message = format!("the release was declined: {}", decline.code);
                self.release_again(&mut tx, charge.id, attempts, &message)
                    .await?;
                tx.commit().await?;
                return Ok(());
            }
        };
        current.updated_at = at;
        store::write_move(
            &mut tx,
            &current,
            &NewMove {
                charge_id: current.id,
                from_status: Some(ChargeStatus::Failed),
                to_status: ChargeStatus::Failed,
                amount_minor: Some(current.amount_minor),
                provider_ref: Some(&reference),
                detail: Some(detail),
                actor: WORKER,
                at,
            },
        )
        .await?;
        store::delete_retry(&mut tx, current.id).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Schedules the late hold's release again after backoff; past the retry count it is
    /// asked at the longest wait, and reconciliation shows it among the calls unanswered.
    async fn release_again(
        &self,
        conn: &mut PgConnection,
        charge_id: Uuid,
        attempts: i32,
        message: &str,
    ) -> Result<(), sqlx::Error> {
        let attempts = attempts.saturating_add(1);
        let max = i32::try_from(self.retry.max_attempts).unwrap_or(i32::MAX);
        let delay = self.retry.delay_after(attempts.min(max).unsigned_abs());
        let due = now() + chrono::Duration::from_std(delay).unwrap_or_default();
        tracing::warn!(charge = %charge_id, attempts, error = %message,
            "the late hold was not released; will retry");
        store::schedule_retry(conn, charge_id, Move::Void, attempts, due, message).await
    }
}
