//! A hold the provider places after its charge failed (a pending hold whose retries gave up,
//! then the provider's `held` event): no job will take that money, so it is released. The
//! charge stays `failed` (nothing was ever taken); its moves say the hold was released. The
//! release is durable work: a retry row (operation `void`) that the retry worker of any
//! instance makes, under the charge's release key, until the provider answers.

use sqlx::PgConnection;
use uuid::Uuid;

use super::{PaymentError, Payments, ProviderAnswer, Settled, now};
use courier_domain::charge::{ChargeStatus, Move};
use courier_store::charges::{self as store, ChargeRow, NewMove};

const WORKER: &str = "retry worker";
/// The retry row's reason until the release is made.
const RELEASE_DUE: &str = "a hold placed after the charge failed: to be released";

impl Payments {
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
