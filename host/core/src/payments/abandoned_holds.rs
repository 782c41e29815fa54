//! Holds of abandoned bookings whose release the provider accepted without confirming it.
//! Abandoning a booking asks the provider to release its hold under `<hold key>_release`; a
//! provider that answers `pending` (Adyen's `received`) says later, by event, whether it did.
//! Until it says so the hold is kept here. A release it reports failed is asked for again
//! under the next round's key ([`release_key`](super::release_key)): asked under the same key,
//! the provider would only answer with its first answer. The requests are durable work that
//! the retry worker of any instance makes; past [`MAX_ROUNDS`] the hold is left to operators
//! (shown on their console's payments page), with an error logged.

use super::{
    MAX_RELEASE_ROUNDS as MAX_ROUNDS, PaymentError, Payments, ProviderAnswer, now, release_key,
};
use courier_domain::Environment;
use courier_plugins::{EventKind, ProviderEvent};
use courier_store::abandoned_holds::{self as store, AbandonedHold};

/// Holds claimed per pass.
const CLAIM_BATCH: i64 = 5;

/// What an event for an abandoned hold changes.
#[derive(Debug, PartialEq, Eq)]
enum Applied {
    Released,
    AskAgain,
    /// Past the rounds: left to operators.
    GivenUp,
    /// A failure reported while a request is due or under way: applied once its answer is
    /// written (else the failure of the round just asked could be taken for an older one's).
    NotYet,
    Nothing,
}

/// How an event met the abandoned holds.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum HoldEvent {
    /// It names none of them.
    NoHold,
    /// Tried again later.
    NotYet,
    Applied,
}

fn what_changes(hold: &AbandonedHold, kind: &EventKind) -> Applied {
    // Released, or left to operators: only a release the provider confirms changes it.
    if hold.released_at.is_some() || (hold.round > MAX_ROUNDS && *kind != EventKind::Released) {
        return Applied::Nothing;
    }
    match kind {
        EventKind::Released => Applied::Released,
        EventKind::ReleaseFailed(_) if hold.requesting => Applied::NotYet,
        EventKind::ReleaseFailed(_) if hold.round >= MAX_ROUNDS => Applied::GivenUp,
        EventKind::ReleaseFailed(_) => Applied::AskAgain,
        // The hold itself confirmed or refused, or anything else: its release is under way.
        _ => Applied::Nothing,
    }
}

impl Payments {
    /// Applies `event` to the abandoned hold it names, if it names one.
    pub(super) async fn apply_to_abandoned_hold(
        conn: &mut sqlx::PgConnection,
        environment: Environment,
        event: &ProviderEvent,
    ) -> Result<HoldEvent, sqlx::Error> {
        let Some(hold) = store::lock(conn, environment, &event.reference).await? else {
            return Ok(HoldEvent::NoHold);
        };
        let why = match &event.kind {
            EventKind::ReleaseFailed(why) => why.as_str(),
            _ => "",
        };
        match what_changes(&hold, &event.kind) {
            Applied::Released => {
                tracing::info!(reference = %hold.reference, round = hold.round,
                    "the abandoned booking's hold is released");
                store::released(conn, environment, &hold.reference, now()).await?;
            }
            Applied::AskAgain => {
                tracing::warn!(reference = %hold.reference, round = hold.round, %why,
                    "the provider failed to release an abandoned booking's hold; asking again");
                store::release_failed(conn, environment, &hold.reference, why).await?;
            }
            Applied::GivenUp => {
                tracing::error!(reference = %hold.reference, rounds = hold.round,
                    "an abandoned booking's hold is still not released; release it at the \
                     provider");
                store::given_up(conn, environment, &hold.reference, why).await?;
            }
            Applied::NotYet => return Ok(HoldEvent::NotYet),
            Applied::Nothing => {}
        }
        Ok(HoldEvent::Applied)
    }

    /// Claims the abandoned holds whose release request is due and makes each; returns how
    /// many were claimed.
    pub(super) async fn release_abandoned_holds(&self) -> Result<usize, PaymentError> {
        let environments = self.environments_served();
        let due =
            store::claim_due(&self.pool, &environments, CLAIM_BATCH, self.retry.lease).await?;
        for hold in &due {
            if let Err(error) = self.release_abandoned(hold).await {
                tracing::warn!(%error, reference = %hold.reference,
                    "an abandoned booking's hold is not released yet");
            }
        }
        Ok(due.len())
    }

    async fn release_abandoned(&self, hold: &AbandonedHold) -> Result<(), PaymentError> {
        let slot = self.call_slot(hold.environment)?;
        let key = release_key(&hold.hold_key, hold.round);
        let answer = self
            .release(hold.environment, slot, &hold.reference, &key)
            .await;
        let mut conn = self.pool.acquire().await?;
        let (environment, reference) = (hold.environment, hold.reference.as_str());
        match answer {
            ProviderAnswer::Approved(_) => {
                store::released(&mut conn, environment, reference, now()).await?
            }
            // Confirmed (or reported failed) by its event.
            ProviderAnswer::Pending(_) => store::asked(&mut conn, environment, reference).await?,
            ProviderAnswer::Declined(decline) => {
                let why = format!("the release was declined: {}", decline.code);
                self.ask_again(&mut conn, hold, &why).await?
            }
            ProviderAnswer::Unreachable(why)
            | ProviderAnswer::InFlight(why)
            | ProviderAnswer::Refused(why) => self.ask_again(&mut conn, hold, &why).await?,
        }
        Ok(())
    }

    async fn ask_again(
        &self,
        conn: &mut sqlx::PgConnection,
        hold: &AbandonedHold,
        why: &str,
    ) -> Result<(), sqlx::Error> {
        let attempts = hold.attempts.saturating_add(1);
        let max = i32::try_from(self.retry.max_attempts).unwrap_or(i32::MAX);
        let delay = self.retry.delay_after(attempts.min(max).unsigned_abs());
        let due = now() + chrono::Duration::from_std(delay).unwrap_or_default();
        tracing::warn!(reference = %hold.reference, attempts, %why,
            "an abandoned booking's hold was not released; will retry");
        store::ask_again(conn, hold.environment, &hold.reference, due, why).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(round: i32, released: bool) -> AbandonedHold {
        AbandonedHold {
            environment: Environment::Live,
            reference: "8515718415172200".into(),
            hold_key: "job_1_hold".into(),
            round,
            attempts: 0,
            last_error: None,
            released_at: released.then(now),
            requesting: false,
        }
    }

    #[test]
    fn each_round_has_its_own_key_and_the_first_is_the_abandoning_s() {
        assert_eq!(release_key("job_1_hold", 1), "job_1_hold_release");
        assert_eq!(release_key("job_1_hold", 2), "job_1_hold_release_2");
        let longest = release_key(&format!("job_{}_hold", uuid::Uuid::nil()), MAX_ROUNDS);
        assert!(longest.len() <= 64, "{longest}");
    }

    #[test]
    fn a_failed_release_is_asked_again_until_the_rounds_run_out() {
        let failed = EventKind::ReleaseFailed("not cancellable".into());
        assert_eq!(what_changes(&hold(1, false), &failed), Applied::AskAgain);
        assert_eq!(
            what_changes(&hold(MAX_ROUNDS, false), &failed),
            Applied::GivenUp
        );
        assert_eq!(
            what_changes(&hold(2, false), &EventKind::Released),
            Applied::Released
        );
        assert_eq!(what_changes(&hold(2, true), &failed), Applied::Nothing);
        let asking = AbandonedHold {
            requesting: true,
            ..hold(2, false)
        };
        assert_eq!(what_changes(&asking, &failed), Applied::NotYet);
        assert_eq!(
            what_changes(&asking, &EventKind::Released),
            Applied::Released
        );
        let given_up = hold(MAX_ROUNDS + 1, false);
        assert_eq!(what_changes(&given_up, &failed), Applied::Nothing);
        assert_eq!(
            what_changes(&given_up, &EventKind::Released),
            Applied::Released
        );
        assert_eq!(
            what_changes(&hold(1, false), &EventKind::Held),
            Applied::Nothing
        );
    }
}
