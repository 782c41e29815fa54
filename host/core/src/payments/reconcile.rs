//! Reconciliation: each charge's state at the provider, read through its adapter
//! (`list-payments`, `retrieve`), compared with ours, as operators of payment systems check
//! their books against the processor's.
//!
//! For every charge of a window: an `authorised` one must be a hold of its amount; a
//! `captured` one taken in full and nothing given back; a `refunded` one taken with exactly
//! our refunded amount given back; a `voided` one released; a `failed` one must hold and have
//! taken nothing; a `pending` one may be nothing yet, or a hold of its amount (being placed or
//! placed, its confirmation on the way), but never money taken or a payment ended. Every
//! payment the provider holds or took money for must be a charge of ours (by its reference,
//! or by the hold key it keeps) or a booking between its phases. A capture or release the
//! provider has not answered past the retry policy's count needs an operator's decision, and
//! is reported too.
//!
//! A provider that cannot list its payments (or whose listing fails) is read charge by charge
//! (`retrieve`): the check then says it could not look for payments of no charge of ours. A
//! charge whose payment cannot be read is counted as unread, and the check goes on; one the
//! provider says it does not have is a mismatch. Findings are recorded as of the check's start:
//! a slow check never resolves what a later one found.
//!
//! `courier payments reconcile` runs one check; every instance with a network adapter also
//! runs it on a schedule over a recent window, records what it finds (`payment_mismatches`),
//! and shows the open ones to operators (`GET /admin/v1/payments/mismatches`) and as the
//! metric `courier_payment_mismatches`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use courier_plugins::{LookupFailure, PaymentState, PaymentStatus, PluginError};
use serde::Serialize;
use thiserror::Error;
use uuid::Uuid;

use super::{Payments, now, run};
use crate::infra::workers::{Pass, Workers};
use courier_domain::Environment;
use courier_domain::charge::ChargeStatus;
use courier_store::charges::ChargeRow;
use courier_store::reconciliation::{self as store, NewMismatch};

/// Provider payments made this long before the window's start are listed too: a hold is made
/// before its charge is written.
const LISTING_MARGIN: chrono::Duration = chrono::Duration::hours(1);
/// Pages of provider payments read in one check at most.
const MAX_PAGES: usize = 1000;
/// How many open mismatches operators are shown at most.
pub const MISMATCHES_SHOWN: i64 = 200;

/// Why a check could not be made.
#[derive(Debug, Error)]
pub enum ReconcileError {
    #[error("the {0} environment has no payment adapter that keeps payments to read back")]
    NothingToReadBack(&'static str),
    #[error(transparent)]
    Store(#[from] sqlx::Error),
}

/// What disagrees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MismatchKind {
    /// The provider's payment is not in the state our charge says (or is missing).
    Status,
    /// Same state, other amounts (held, taken or given back).
    Amount,
    /// The provider holds or took money for no charge or booking of ours.
    Unknown,
    /// A capture or release the provider has not answered past the retry policy's count.
    Unanswered,
}

impl MismatchKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MismatchKind::Status => "status",
            MismatchKind::Amount => "amount",
            MismatchKind::Unknown => "unknown",
            MismatchKind::Unanswered => "unanswered",
        }
    }
}

/// One disagreement between the provider and us.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Mismatch {
    pub kind: MismatchKind,
    /// Our charge's id, or the provider's reference of a payment we have no charge for.
    pub subject: String,
    pub charge_id: Option<Uuid>,
    pub provider_ref: Option<String>,
    /// What our records say.
    pub ours: String,
    /// What the provider says.
    pub theirs: String,
}

impl Mismatch {
    /// The line `courier payments reconcile` prints for it.
    pub fn line(&self) -> String {
        format!(
            "{} {} provider_ref={}: ours {}; provider {}",
            self.kind.as_str(),
            self.subject,
            self.provider_ref.as_deref().unwrap_or("-"),
            self.ours,
            self.theirs
        )
    }
}

/// One check's result.
#[derive(Clone, Debug)]
pub struct Reconciliation {
    /// When the check started: what it found is as of then.
    pub started_at: DateTime<Utc>,
    /// Charges compared with the provider.
    pub checked: usize,
    /// Charges whose payment the provider could not show (unreachable, or no lookup), with the
    /// first reason given.
    pub unread: usize,
    pub unread_reason: Option<String>,
    /// Why the provider's payments could not be listed (so payments of no charge of ours were
    /// not looked for); None when they were.
    pub unlisted: Option<String>,
    pub mismatches: Vec<Mismatch>,
    /// Every subject the check compared (our charges and the provider's payments).
    subjects: Vec<String>,
}

impl Reconciliation {
    /// The summary line `courier payments reconcile` ends with.
    pub fn summary(&self) -> serde_json::Value {
        serde_json::json!({
            "checked": self.checked,
            "mismatches": self.mismatches.len(),
            "unread": self.unread,
            "listed": self.unlisted.is_none(),
        })
    }

    /// Counts a charge whose payment could not be read.
    fn not_read(&mut self, reason: String) {
        self.unread += 1;
        self.unread_reason.get_or_insert(reason);
    }
}

/// What the provider answered about one payment.
enum Lookup {
    Found(PaymentState),
    Missing,
    Unread(String),
}

/// A recorded mismatch, as operators see it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct MismatchView {
    pub id: Uuid,
    /// `test` or `live`.
    pub environment: &'static str,
    /// `status`, `amount`, `unknown` or `unanswered`.
    pub kind: String,
    pub subject: String,
    pub charge_id: Option<Uuid>,
    pub provider_ref: Option<String>,
    pub ours: String,
    pub theirs: String,
    pub first_seen_at: DateTime<Utc>,
    pub last_seen_at: DateTime<Utc>,
}

impl Payments {
    /// Compares the environment's charges raised since `since` with the provider's payments.
    pub async fn reconcile(
        &self,
        environment: Environment,
        since: DateTime<Utc>,
    ) -> Result<Reconciliation, ReconcileError> {
        let gateway = self
            .gateway(environment)
            .ok()
            .filter(|g| g.uses_network())
            .ok_or(ReconcileError::NothingToReadBack(environment.as_str()))?;
        let mut check = Reconciliation {
            started_at: now(),
            checked: 0,
            unread: 0,
            unread_reason: None,
            unlisted: None,
            mismatches: Vec::new(),
            subjects: Vec::new(),
        };
        let listed = match self
            .provider_payments(environment, since - LISTING_MARGIN)
            .await
        {
            Ok(listed) => listed,
            Err(reason) => {
                tracing::warn!(%reason, environment = environment.as_str(),
                    "the provider's payments could not be listed; reading them one by one");
                check.unlisted = Some(reason);
                Vec::new()
            }
        };
        let by_reference: HashMap<&str, &PaymentState> =
            listed.iter().map(|p| (p.reference.as_str(), p)).collect();
        let by_hold_key: HashMap<&str, &PaymentState> = listed
            .iter()
            .filter_map(|p| Some((p.hold_key.as_deref()?, p)))
            .collect();
        let charges = store::charges_since(&self.pool, environment, since).await?;
        for charge in &charges {
            let found = match charge.authorisation_ref.as_deref() {
                Some(reference) => match by_reference.get(reference) {
                    Some(state) => Lookup::Found((*state).clone()),
                    // Made before the listing's window, or not listed: read back on its own.
                    None => {
                        self.retrieve(environment, Arc::clone(&gateway), reference)
                            .await
                    }
                },
                None => match charge.hold_key.as_deref().and_then(|k| by_hold_key.get(k)) {
                    Some(state) => Lookup::Found((*state).clone()),
                    None if check.unlisted.is_none() => Lookup::Missing,
                    // A hold whose answer was never heard is found only by listing.
                    None => Lookup::Unread("no reference to read it by".into()),
                },
            };
            let found = match found {
                Lookup::Found(state) => Some(state),
                Lookup::Missing => None,
                Lookup::Unread(reason) => {
                    check.not_read(reason);
                    continue;
                }
            };
            check.checked += 1;
            check.subjects.push(charge.id.to_string());
            check.mismatches.extend(compare(charge, found.as_ref()));
        }
        let unknown = self
            .unknown_payments(environment, &listed, &mut check.subjects)
            .await?;
        check.mismatches.extend(unknown);
        check.mismatches.extend(self.unanswered(environment).await?);
        Ok(check)
    }

    /// Runs [`Payments::reconcile`] and records what it found; answers the check and how many
    /// mismatches of the environment are open.
    pub async fn reconcile_and_record(
        &self,
        environment: Environment,
        since: DateTime<Utc>,
    ) -> Result<(Reconciliation, i64), ReconcileError> {
        let check = self.reconcile(environment, since).await?;
        let found: Vec<NewMismatch> = check
            .mismatches
            .iter()
            .map(|m| NewMismatch {
                kind: m.kind.as_str().to_owned(),
                subject: m.subject.clone(),
                charge_id: m.charge_id,
                provider_ref: m.provider_ref.clone(),
                ours: m.ours.clone(),
                theirs: m.theirs.clone(),
            })
            .collect();
        // Unanswered calls are looked for in the whole environment: one not found again is
        // answered, whatever its subject.
        let open = store::record_check(
            &self.pool,
            environment,
            &check.subjects,
            &[MismatchKind::Unanswered.as_str()],
            &found,
            check.started_at,
        )
        .await?;
        metrics::gauge!("courier_payment_mismatches", "environment" => environment.as_str())
            .set(open as f64);
        Ok((check, open))
    }

    /// The open mismatches, newest first, up to [`MISMATCHES_SHOWN`].
    pub async fn mismatches(&self) -> Result<Vec<MismatchView>, sqlx::Error> {
        let rows = store::open_mismatches(&self.pool, MISMATCHES_SHOWN).await?;
        Ok(rows
            .into_iter()
            .map(|row| MismatchView {
                id: row.id,
                environment: row.environment.as_str(),
                kind: row.kind,
                subject: row.subject,
                charge_id: row.charge_id,
                provider_ref: row.provider_ref,
                ours: row.ours,
                theirs: row.theirs,
                first_seen_at: row.first_seen_at,
                last_seen_at: row.last_seen_at,
            })
            .collect())
    }

    /// Runs the check every `every` over the last `window`, in each environment whose adapter
    /// this process has and reads over the network.
    pub fn run_reconciliation(
        self: &Arc<Self>,
        workers: &Workers,
        every: Duration,
        window: Duration,
    ) {
        let payments = Arc::clone(self);
        let window = chrono::Duration::from_std(window).unwrap_or(chrono::Duration::days(1));
        workers.run("payment reconciliation", every, move || {
            let payments = Arc::clone(&payments);
            async move {
                for environment in Environment::ALL {
                    let reads_back = payments
                        .gateway(environment)
                        .is_ok_and(|gateway| gateway.uses_network());
                    if !reads_back {
                        continue;
                    }
                    match payments
                        .reconcile_and_record(environment, now() - window)
                        .await
                    {
                        Ok((check, open)) => tracing::info!(
                            environment = environment.as_str(),
                            checked = check.checked,
                            unread = check.unread,
                            listed = check.unlisted.is_none(),
                            found = check.mismatches.len(),
                            open,
                            "payments reconciled"
                        ),
                        Err(error) => tracing::warn!(%error, environment = environment.as_str(),
                            "payments could not be reconciled"),
                    }
                }
                Ok::<_, std::convert::Infallible>(Pass::Partial)
            }
        });
    }

    /// Every payment the provider made since `since`, page after page; Err says why they
    /// could not be listed.
    async fn provider_payments(
        &self,
        environment: Environment,
        since: DateTime<Utc>,
    ) -> Result<Vec<PaymentState>, String> {
        let gateway = self.gateway(environment).map_err(|e| e.to_string())?;
        let mut payments = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let slot = self.call_slot(environment).map_err(|e| e.to_string())?;
            let cursor = after.clone();
            let since = since.timestamp();
            let page = run(Arc::clone(&gateway), slot, move |g| async move {
                g.list_payments(since, cursor.as_deref()).await
            })
            .await
            .map_err(|e: PluginError| e.to_string())??;
            payments.extend(page.payments);
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(payments),
            }
        }
        Err(format!("more than {MAX_PAGES} pages of payments"))
    }

    async fn retrieve(
        &self,
        environment: Environment,
        gateway: Arc<dyn super::Gateway>,
        reference: &str,
    ) -> Lookup {
        let slot = match self.call_slot(environment) {
            Ok(slot) => slot,
            Err(e) => return Lookup::Unread(e.to_string()),
        };
        let reference = reference.to_owned();
        match run(gateway, slot, move |g| async move {
            g.retrieve(&reference).await
        })
        .await
        {
            Ok(Ok(state)) => Lookup::Found(state),
            Ok(Err(LookupFailure::NotFound)) => Lookup::Missing,
            Ok(Err(LookupFailure::Unreachable(message))) => Lookup::Unread(message),
            Err(e) => Lookup::Unread(e.to_string()),
        }
    }

    /// The provider's payments that hold or took money for no charge or booking of ours.
    async fn unknown_payments(
        &self,
        environment: Environment,
        listed: &[PaymentState],
        subjects: &mut Vec<String>,
    ) -> Result<Vec<Mismatch>, ReconcileError> {
        let moving: Vec<&PaymentState> = listed.iter().filter(|p| holds_money(p)).collect();
        let references: Vec<String> = moving.iter().map(|p| p.reference.clone()).collect();
        let keys: Vec<String> = moving.iter().filter_map(|p| p.hold_key.clone()).collect();
        let (known_references, known_keys) =
            store::known_payments(&self.pool, environment, &references, &keys).await?;
        let known_references: HashSet<String> = known_references.into_iter().collect();
        let known_keys: HashSet<String> = known_keys.into_iter().collect();
        subjects.extend(listed.iter().map(|p| p.reference.clone()));
        Ok(moving
            .into_iter()
            .filter(|p| {
                !known_references.contains(&p.reference)
                    && !p.hold_key.as_ref().is_some_and(|k| known_keys.contains(k))
            })
            .map(|p| Mismatch {
                kind: MismatchKind::Unknown,
                subject: p.reference.clone(),
                charge_id: None,
                provider_ref: Some(p.reference.clone()),
                ours: "no charge or booking".into(),
                theirs: describe(p),
            })
            .collect())
    }

    /// Captures, releases and refunds asked for past the retry policy's count without an
    /// answer.
    async fn unanswered(&self, environment: Environment) -> Result<Vec<Mismatch>, ReconcileError> {
        let max = i32::try_from(self.retry.max_attempts).unwrap_or(i32::MAX);
        let calls = store::unanswered_calls(&self.pool, environment, max).await?;
        let refunds = courier_store::refunds::unanswered_in(&self.pool, environment, max).await?;
        let refunds = refunds.into_iter().map(|refund| Mismatch {
            kind: MismatchKind::Unanswered,
            subject: format!("refund:{}", refund.id),
            charge_id: Some(refund.charge_id),
            provider_ref: None,
            ours: format!(
                "refund of {} asked {} times",
                refund.amount_minor, refund.attempts
            ),
            theirs: "no answer".into(),
        });
        Ok(calls
            .into_iter()
            .map(|call| Mismatch {
                kind: MismatchKind::Unanswered,
                subject: format!("{}:{}", call.charge_id, call.operation.as_str()),
                charge_id: Some(call.charge_id),
                provider_ref: call.authorisation_ref,
                ours: format!(
                    "{} asked {} times while {}",
                    call.operation.as_str(),
                    call.attempts,
                    call.status.as_str()
                ),
                theirs: "no answer".into(),
            })
            .chain(refunds)
            .collect())
    }
}

/// Whether a provider payment holds money, or took money not all given back.
fn holds_money(payment: &PaymentState) -> bool {
    match payment.status {
        PaymentStatus::Held => true,
        PaymentStatus::Captured => payment.captured_minor > payment.refunded_minor,
        PaymentStatus::Released | PaymentStatus::Refused | PaymentStatus::Processing => false,
    }
}

fn describe(payment: &PaymentState) -> String {
    let status = match payment.status {
        PaymentStatus::Held => "held",
        PaymentStatus::Captured => "captured",
        PaymentStatus::Released => "released",
        PaymentStatus::Refused => "refused",
        PaymentStatus::Processing => "processing",
    };
    format!(
        "{status} {} {} (taken {}, given back {})",
        payment.amount_minor, payment.currency, payment.captured_minor, payment.refunded_minor
    )
}

/// What disagrees between our charge and the provider's payment for it (`None`: there is
/// none). Pure, so each rule is unit tested.
fn compare(charge: &ChargeRow, theirs: Option<&PaymentState>) -> Option<Mismatch> {
    let ours = format!(
        "{} {} {} (given back {})",
        charge.status.as_str(),
        charge.amount_minor,
        charge.currency,
        charge.refunded_amount_minor
    );
    let mismatch = |kind, theirs: String| {
        Some(Mismatch {
            kind,
            subject: charge.id.to_string(),
            charge_id: Some(charge.id),
            provider_ref: charge.authorisation_ref.clone(),
            ours: ours.clone(),
            theirs,
        })
    };
    let Some(state) = theirs else {
        return match charge.status {
            // Nothing was held for a failed charge, nor yet for a pending one: as it should be.
            ChargeStatus::Failed | ChargeStatus::Pending => None,
            _ => mismatch(MismatchKind::Status, "no such payment".into()),
        };
    };
    let expected = match charge.status {
        // Being placed: its amount is checked once it is held.
        ChargeStatus::Pending if state.status == PaymentStatus::Processing => return None,
        ChargeStatus::Pending | ChargeStatus::Authorised => PaymentStatus::Held,
        ChargeStatus::Captured | ChargeStatus::Refunded => PaymentStatus::Captured,
        ChargeStatus::Voided => PaymentStatus::Released,
        ChargeStatus::Failed => {
            return holds_money(state).then(|| mismatch(MismatchKind::Status, describe(state)))?;
        }
    };
    if state.status != expected {
        return mismatch(MismatchKind::Status, describe(state));
    }
    let (taken, given_back) = match charge.status {
        ChargeStatus::Captured | ChargeStatus::Refunded => {
            (charge.amount_minor, charge.refunded_amount_minor)
        }
        _ => (0, 0),
    };
    let amounts_agree = state.amount_minor == charge.amount_minor
        && state.currency.eq_ignore_ascii_case(&charge.currency)
        && state.captured_minor == taken
        && state.refunded_minor == given_back;
    if !amounts_agree {
        return mismatch(MismatchKind::Amount, describe(state));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn charge(status: ChargeStatus, refunded: i64) -> ChargeRow {
        let at = Utc::now();
        ChargeRow {
            id: Uuid::new_v4(),
            merchant_id: Uuid::new_v4(),
            environment: Environment::Live,
            job_id: Uuid::new_v4(),
            payment_method_id: Uuid::new_v4(),
            status,
            currency: "USD".into(),
            amount_minor: 1500,
            refunded_amount_minor: refunded,
            authorisation_ref: Some("pi_1".into()),
            payment_ref: None,
            after_hold: None,
            decline_code: None,
            last_error: None,
            raised_at: at,
            authorised_at: None,
            captured_at: None,
            voided_at: None,
            failed_at: None,
            refunded_at: None,
            updated_at: at,
            hold_key: Some("job_1_hold".into()),
            provider_failures: 0,
        }
    }

    fn payment(status: PaymentStatus, captured: i64, refunded: i64) -> PaymentState {
        PaymentState {
            reference: "pi_1".into(),
            hold_key: Some("job_1_hold".into()),
            status,
            amount_minor: 1500,
            captured_minor: captured,
            refunded_minor: refunded,
            currency: "USD".into(),
            created_at: 0,
        }
    }

    fn kind(charge: &ChargeRow, state: Option<&PaymentState>) -> Option<MismatchKind> {
        compare(charge, state).map(|m| m.kind)
    }

    #[test]
    fn each_state_of_ours_has_its_state_at_the_provider() {
        use ChargeStatus as C;
        use PaymentStatus as P;
        let agree = [
            (charge(C::Authorised, 0), payment(P::Held, 0, 0)),
            (charge(C::Captured, 0), payment(P::Captured, 1500, 0)),
            (charge(C::Refunded, 300), payment(P::Captured, 1500, 300)),
            (charge(C::Voided, 0), payment(P::Released, 0, 0)),
            (charge(C::Failed, 0), payment(P::Refused, 0, 0)),
            (charge(C::Failed, 0), payment(P::Released, 0, 0)),
        ];
        for (ours, theirs) in &agree {
            assert_eq!(kind(ours, Some(theirs)), None, "{:?}", ours.status);
        }
        assert_eq!(kind(&charge(C::Failed, 0), None), None);
        assert_eq!(
            kind(&charge(C::Pending, 0), Some(&payment(P::Held, 0, 0))),
            None
        );
        assert_eq!(
            kind(&charge(C::Pending, 0), Some(&payment(P::Processing, 0, 0))),
            None
        );
        assert_eq!(kind(&charge(C::Pending, 0), None), None);
    }

    #[test]
    fn a_pending_charge_is_compared_too() {
        use ChargeStatus as C;
        use PaymentStatus as P;
        // Money taken, or a payment ended, while we wait for the hold: our books are behind.
        for theirs in [
            payment(P::Captured, 1500, 0),
            payment(P::Released, 0, 0),
            payment(P::Refused, 0, 0),
        ] {
            assert_eq!(
                kind(&charge(C::Pending, 0), Some(&theirs)),
                Some(MismatchKind::Status),
                "{theirs:?}"
            );
        }
        let mut other = payment(P::Held, 0, 0);
        other.amount_minor = 1600;
        assert_eq!(
            kind(&charge(C::Pending, 0), Some(&other)),
            Some(MismatchKind::Amount)
        );
    }

    #[test]
    fn money_where_our_records_say_otherwise_is_a_mismatch() {
        use ChargeStatus as C;
        use PaymentStatus as P;
        let status = Some(MismatchKind::Status);
        let amount = Some(MismatchKind::Amount);
        // A booked job's hold that the provider released, or never made.
        assert_eq!(
            kind(&charge(C::Authorised, 0), Some(&payment(P::Released, 0, 0))),
            status
        );
        assert_eq!(kind(&charge(C::Authorised, 0), None), status);
        // Money held for a failed charge.
        assert_eq!(
            kind(&charge(C::Failed, 0), Some(&payment(P::Held, 0, 0))),
            status
        );
        // A refund paid twice: the provider gave back more than we recorded.
        assert_eq!(
            kind(
                &charge(C::Refunded, 300),
                Some(&payment(P::Captured, 1500, 600))
            ),
            amount
        );
        // Taken, and we think released.
        assert_eq!(
            kind(&charge(C::Voided, 0), Some(&payment(P::Captured, 1500, 0))),
            status
        );
        // Held for another amount.
        let mut other = payment(P::Held, 0, 0);
        other.amount_minor = 1499;
        assert_eq!(kind(&charge(C::Authorised, 0), Some(&other)), amount);
    }
}
