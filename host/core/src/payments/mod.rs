//! Cards on file and charges, through the payment adapter of each environment.
//!
//! A card on file is held for the price at booking ([`Payments::hold_for_job`]), captured on
//! delivery or return ([`Payments::capture_for_job`]), released when the job is cancelled or
//! fails ([`Payments::void_for_job`]), and can be refunded by an operator
//! ([`Payments::refund`]). Which moves a charge may make is decided in one place, [`state`].
//!
//! Every provider call carries an idempotency key derived from the charge (for refunds, fixed
//! when the refund is asked for: [`refunds`]), and is marked in flight before it is made: a
//! retried or concurrent capture finds the charge captured and never reaches the provider
//! twice, and a call cut short by a crash is repeated with the same key, which the provider
//! answers with what it did the first time.
//!
//! This module holds the service, its errors and the provider calls every move makes; the
//! rest is in files of their own, each adding to [`Payments`]: `cards` (cards on file),
//! `charges` (holds, captures, releases), `refunds`, `retry` (calls to try again) and
//! `reconcile` (comparing our books with the provider's).

mod abandoned_holds;
pub mod cards;
mod charges;
mod config;
pub mod events;
mod gateway;
mod late_hold;
pub mod overview;
pub mod reconcile;
pub mod refunds;
mod retry;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use courier_plugins::{CaptureRequest, Decline, HoldRequest, Outcome, PluginError, VoidRequest};
use serde::Serialize;
use sqlx::{PgConnection, PgPool};
use thiserror::Error;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

pub use config::{
    CallLimits, CardFormDefaults, PaymentsConfig, ReconcileConfig, RetryPolicy, is_csp_origin,
};
pub use gateway::{Gateway, GatewayError, Gateways, TestNetwork, live_adapter_config};

use crate::auth::Merchant;
use crate::events::FanOutWakeup;
use courier_domain::Environment;
use courier_domain::charge::state::{self, ChargeStatus, Decision, InvalidMove, Move};
use courier_store::cards::CardRow;
use courier_store::charges::{self as store, ChargeRow, NewMove};

use courier_domain::error::Code;
use courier_domain::error::ErrorCode;

pub const RAW_CARD_NUMBER: Code = Code::new(
    422,
    "payment.raw_card_number",
    "A card number anywhere in the request.",
);
pub const WRONG_ENVIRONMENT: Code = Code::new(
    422,
    "payment.reference_wrong_environment",
    "A test key with a reference that is not `pm_sandbox_…`, or a live key with a sandbox reference.",
);
pub const UNKNOWN_REFERENCE: Code = Code::new(
    422,
    "payment.unknown_reference",
    "The provider does not know the reference (e.g. `pm_sandbox_` with a number that is not a designated one).",
);
pub const LIVE_UNAVAILABLE: Code = Code::new(
    422,
    "payment.live_unavailable",
    "A live key, and no live payment adapter is configured (cards, bookings).",
);
pub const PAYMENT_METHOD_NOT_FOUND: Code = Code::new(
    404,
    "payment_method.not_found",
    "No such card in the credential's environment (or removed, or not a UUID).",
);
pub const INVALID_CARD_FORM: Code = Code::new(
    422,
    "payment.invalid_card_form",
    "Setup: `currency`, `country`, `locale` or `return_url` is not valid; the message names which.",
);
pub const DEAD_CARD: Code = Code::new(422, "payment.card_dead", "Making a dead card the default.");
pub const CARD_DECLINED: Code = Code::new(
    422,
    "payment.card_declined",
    "The provider declined (attach, hold, refund); the message names the decline code. At booking nothing is booked and the quote stays usable; the decline is stored under the `Idempotency-Key`, which replays it.",
);
pub const NO_PAYMENT_METHOD: Code = Code::new(
    422,
    "payment.no_payment_method",
    "A hold (a booking), and no working card on file in the environment; nothing is booked and the quote stays usable.",
);
pub const PROVIDER_UNREACHABLE: Code = Code::new(
    503,
    "payment.provider_unreachable",
    "Setup or attach could not reach the provider, or its answer could not be read: nothing happened; retry. A refund is kept and asked for again until the provider answers; the same refund sent again (same `Idempotency-Key`) finds it instead of paying twice.",
);
pub const PROVIDER_REFUSED: Code = Code::new(
    503,
    "payment.provider_refused",
    "The payment provider refused the request for good (the service's credentials, the account, or the request's content): operators are shown it and must fix the payment configuration. A booking is not made (its quote stays usable; the refusal is stored under the `Idempotency-Key`, which replays it); a refund is kept and asked for again at the longest wait.",
);
pub const PROVIDER_BUSY: Code = Code::new(
    503,
    "payment.provider_busy",
    "Every place for a provider call is taken (`COURIER_PAYMENT_CALLS`; the provider's notifications are checked in places of their own, as many); nothing happened (a booking wrote nothing); retry (a booking with the same key).",
);
pub const PROVIDER_EVENT_UNVERIFIED: Code = Code::new(
    401,
    "provider_event.unverified",
    "Provider events: the environment's payment adapter could not verify the notification (its signature, or its content; the sandbox verifies none); nothing is kept, and the reason is logged.",
);
pub const PROVIDER_EVENTS_UNSUPPORTED: Code = Code::new(
    404,
    "provider_event.unsupported",
    "Provider events: the environment's payment adapter takes no notifications (one built against payments 2.0.0).",
);
pub const CHARGE_NOT_FOUND: Code = Code::new(404, "charge.not_found", "Refund: no such charge.");
pub const NOT_REFUNDABLE: Code = Code::new(
    409,
    "charge.not_refundable",
    "Refund: the charge was never captured.",
);
pub const INVALID_REFUND_AMOUNT: Code = Code::new(
    422,
    "charge.invalid_amount",
    "Refund: `amount_minor` is not above zero.",
);
pub const REFUND_EXCEEDS_CAPTURED: Code = Code::new(
    422,
    "charge.refund_exceeds_captured",
    "Refund: more than is left to give back.",
);

/// How many charges `GET /v1/charges` shows.
pub const RECENT_CHARGES: i64 = 50;
/// Who made the moves nobody asked for by name.
const SYSTEM: &str = "system";
const SANDBOX_PREFIX: &str = "pm_sandbox_";

/// Refusals of card and charge operations.
#[derive(Debug, Error, ErrorCode)]
pub enum PaymentError {
    #[error(
        "a card number was sent; send the payment provider's reference for the card instead \
         (card numbers are never accepted)"
    )]
    #[code(RAW_CARD_NUMBER)]
    RawCardNumber,
    #[error("{0}")]
    #[code(WRONG_ENVIRONMENT)]
    WrongEnvironment(&'static str),
    #[error("the payment provider does not know this card reference")]
    #[code(UNKNOWN_REFERENCE)]
    UnknownReference,
    #[error("live card payments are not available: no live payment provider is configured")]
    #[code(LIVE_UNAVAILABLE)]
    LiveUnavailable,
    #[error("no such payment method")]
    #[code(PAYMENT_METHOD_NOT_FOUND)]
    PaymentMethodNotFound,
    #[error("{0}")]
    #[code(INVALID_CARD_FORM)]
    InvalidCardForm(&'static str),
    #[error("this card no longer works ({reason}); attach another card")]
    #[code(DEAD_CARD)]
    CardDead { reason: String },
    #[error("the card was declined: {decline_code}")]
    #[code(CARD_DECLINED)]
    CardDeclined { decline_code: String },
    #[error("no usable card on file in this environment; attach a card first")]
    #[code(NO_PAYMENT_METHOD)]
    NoPaymentMethod,
    #[error("the payment provider cannot be reached; try again shortly")]
    #[code(PROVIDER_UNREACHABLE)]
    ProviderUnreachable,
    #[error("too many payment provider calls are in flight; try again shortly")]
    #[code(PROVIDER_BUSY)]
    ProviderBusy,
    #[error(
        "the payment provider refused the request for good; the service's payment \
         configuration needs an operator"
    )]
    #[code(PROVIDER_REFUSED)]
    ProviderRefused,
    #[error("the notification could not be verified by the payment adapter")]
    #[code(PROVIDER_EVENT_UNVERIFIED)]
    EventUnverified,
    #[error("this environment's payment adapter takes no notifications")]
    #[code(PROVIDER_EVENTS_UNSUPPORTED)]
    EventsUnsupported,
    #[error("no such charge")]
    #[code(CHARGE_NOT_FOUND)]
    ChargeNotFound,
    #[error("a {status} charge cannot be refunded; only captured money can be given back")]
    #[code(NOT_REFUNDABLE)]
    NotRefundable { status: &'static str },
    #[error("`amount_minor` must be a whole number of minor units above zero")]
    #[code(INVALID_REFUND_AMOUNT)]
    InvalidRefundAmount,
    #[error("the refund is more than is left to give back ({remaining_minor} minor units)")]
    #[code(REFUND_EXCEEDS_CAPTURED)]
    RefundExceedsCaptured { remaining_minor: i64 },
    #[error(transparent)]
    #[code(via)]
    Key(#[from] crate::idempotency::KeyError),
    #[error("this Idempotency-Key was used for another refund (another charge or amount)")]
    #[code(crate::idempotency::KEY_REUSED)]
    RefundKeyReused,
    #[error(
        "the refund with this Idempotency-Key is still waiting for the payment provider; send \
         it again in a moment for its answer"
    )]
    #[code(crate::idempotency::IN_PROGRESS)]
    RefundInProgress,
    #[error(transparent)]
    #[code(courier_domain::charge::state::INVALID_STATE)]
    InvalidMove(#[from] InvalidMove),
    #[error("the payment adapter failed: {0}")]
    #[code(fault)]
    Adapter(#[from] PluginError),
    #[error(transparent)]
    #[code(fault)]
    Store(#[from] sqlx::Error),
}

/// Why a hold was not placed. On any of these the booking is rolled back, which leaves its
/// quote unspent, so the merchant can try again (with another card after a decline).
#[derive(Debug, Error, ErrorCode)]
pub enum HoldError {
    #[error("no usable card on file in this environment; attach a card first")]
    #[code(NO_PAYMENT_METHOD)]
    NoPaymentMethod,
    #[error("the card was declined: {decline_code}")]
    #[code(CARD_DECLINED)]
    Declined { decline_code: String },
    #[error("live card payments are not available: no live payment provider is configured")]
    #[code(LIVE_UNAVAILABLE)]
    LiveUnavailable,
    #[error("a hold needs an amount above zero")]
    #[code(INVALID_REFUND_AMOUNT)]
    InvalidAmount,
    #[error("too many payment provider calls are in flight; try again shortly")]
    #[code(PROVIDER_BUSY)]
    ProviderBusy,
    #[error(
        "the payment provider refused the hold for good; the service's payment configuration \
         needs an operator"
    )]
    #[code(PROVIDER_REFUSED)]
    ProviderRefused,
    #[error(transparent)]
    #[code(fault)]
    Store(#[from] sqlx::Error),
}

impl From<HoldError> for PaymentError {
    fn from(error: HoldError) -> Self {
        match error {
            HoldError::NoPaymentMethod => PaymentError::NoPaymentMethod,
            HoldError::Declined { decline_code } => PaymentError::CardDeclined { decline_code },
            HoldError::LiveUnavailable => PaymentError::LiveUnavailable,
            HoldError::InvalidAmount => PaymentError::InvalidRefundAmount,
            HoldError::ProviderBusy => PaymentError::ProviderBusy,
            HoldError::ProviderRefused => PaymentError::ProviderRefused,
            HoldError::Store(e) => PaymentError::Store(e),
        }
    }
}

/// A charge as the API shows it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct ChargeView {
    pub id: Uuid,
    pub job_id: Uuid,
    pub status: ChargeStatus,
    pub currency: String,
    pub amount_minor: i64,
    pub refunded_amount_minor: i64,
    pub raised_at: DateTime<Utc>,
    pub captured_at: Option<DateTime<Utc>>,
    pub decline_code: Option<String>,
    pub last_error: Option<String>,
}

impl From<&ChargeRow> for ChargeView {
    fn from(c: &ChargeRow) -> Self {
        Self {
            id: c.id,
            job_id: c.job_id,
            status: c.status,
            currency: c.currency.clone(),
            amount_minor: c.amount_minor,
            refunded_amount_minor: c.refunded_amount_minor,
            raised_at: c.raised_at,
            captured_at: c.captured_at,
            decline_code: c.decline_code.clone(),
            last_error: c.last_error.clone(),
        }
    }
}

/// The card and charge service. Cheap to clone or share (`Arc`).
#[derive(Clone)]
pub struct Payments {
    pool: PgPool,
    gateways: Gateways,
    retry: RetryPolicy,
    /// Woken after commits that may have recorded `payment_method.dead`.
    wakeup: FanOutWakeup,
    /// Places for provider calls over the network that may run at once.
    calls: Arc<Semaphore>,
    /// Places for checking the provider's notifications (no call is made), apart from the
    /// calls': a flood of notifications, genuine or not, never leaves bookings without a
    /// place for their hold.
    event_checks: Arc<Semaphore>,
    /// How long a provider call in flight is left to its caller before the retry worker
    /// takes it as lost: longer than any call can last.
    call_lease: Duration,
    /// How long after it was made an unfinished booking is abandoned.
    abandon_after: Duration,
    /// What a card form is started with when the merchant does not say.
    card_form: CardFormDefaults,
}

/// A place among the provider calls that may run at once ([`Payments::call_slot`]); held for
/// as long as the call runs. Adapters without network need none.
pub struct CallSlot {
    _permit: Option<OwnedSemaphorePermit>,
}

/// What a booking's hold is for: the job's price on the card, keyed by `hold_key`.
pub struct HoldTerms<'a> {
    pub merchant: &'a Merchant,
    pub job_id: Uuid,
    pub card: &'a CardRow,
    pub amount_minor: i64,
    pub currency: &'a str,
    pub hold_key: &'a str,
}

impl HoldTerms<'_> {
    /// The charge the hold raises, as it is first written: `authorised` with the provider's
    /// reference when the hold was approved, else `pending`.
    pub fn charge(&self, approval: Option<String>) -> ChargeRow {
        let now = now();
        ChargeRow {
            id: Uuid::new_v4(),
            merchant_id: self.merchant.merchant_id,
            environment: self.merchant.environment,
            job_id: self.job_id,
            payment_method_id: self.card.id,
            status: match approval {
                Some(_) => ChargeStatus::Authorised,
                None => ChargeStatus::Pending,
            },
            currency: self.currency.to_owned(),
            amount_minor: self.amount_minor,
            refunded_amount_minor: 0,
            authorised_at: approval.as_ref().map(|_| now),
            authorisation_ref: approval,
            payment_ref: None,
            after_hold: None,
            decline_code: None,
            last_error: None,
            raised_at: now,
            captured_at: None,
            voided_at: None,
            failed_at: None,
            refunded_at: None,
            updated_at: now,
            hold_key: Some(self.hold_key.to_owned()),
            provider_failures: 0,
        }
    }
}

/// The moves that brought a charge from [`HoldTerms::charge`] to its status, oldest first: raised
/// `pending`, then `authorised` when it was approved.
pub fn raising_moves(charge: &ChargeRow) -> Vec<NewMove<'_>> {
    let raised = NewMove {
        charge_id: charge.id,
        from_status: None,
        to_status: ChargeStatus::Pending,
        amount_minor: Some(charge.amount_minor),
        provider_ref: None,
        detail: Some("raised at booking"),
        actor: SYSTEM,
        at: charge.raised_at,
    };
    let mut moves = vec![raised];
    if charge.status == ChargeStatus::Authorised {
        moves.push(NewMove {
            from_status: Some(ChargeStatus::Pending),
            to_status: ChargeStatus::Authorised,
            provider_ref: charge.authorisation_ref.as_deref(),
            detail: None,
            ..raised
        });
    }
    moves
}

/// What a booking's hold came to ([`Payments::record_hold`]).
pub enum RecordedHold {
    /// The job's charge: `authorised`, or `pending` with a retry.
    Held(ChargeView),
    /// The provider said no; no charge was raised.
    Declined(Decline),
    /// The provider refused the request for good; no charge was raised.
    Refused,
}

/// How the provider answered a call. An adapter fault counts as unreachable: nothing is
/// known to have happened, and asking again with the same key is safe.
pub enum ProviderAnswer {
    Approved(String),
    Declined(Decline),
    Unreachable(String),
    /// An earlier call with the same key is still being worked on at the provider: its
    /// outcome is not known, so nothing may go ahead as if it had failed. Asked again later.
    InFlight(String),
    /// The provider refused the request for good (credentials, account, validation): an
    /// operator must act. Never taken for a decline of the card.
    Refused(String),
    /// The provider accepted the request and says later how it ended: the reference its
    /// confirmation will name. Never taken for done; read back until the provider shows it.
    Pending(String),
}

impl From<Result<Outcome, PluginError>> for ProviderAnswer {
    fn from(result: Result<Outcome, PluginError>) -> Self {
        match result {
            Ok(Outcome::Approved(reference)) => ProviderAnswer::Approved(reference),
            Ok(Outcome::Declined(decline)) => ProviderAnswer::Declined(decline),
            Ok(Outcome::Unreachable(message)) => ProviderAnswer::Unreachable(message),
            Ok(Outcome::InFlight(message)) => ProviderAnswer::InFlight(message),
            Ok(Outcome::Pending(reference)) => ProviderAnswer::Pending(reference),
            Ok(Outcome::Refused(message)) => {
                tracing::error!(%message,
                    "the payment provider refused the request for good; an operator must act");
                ProviderAnswer::Refused(message)
            }
            Err(error) => {
                tracing::error!(%error, "payment adapter failed");
                ProviderAnswer::Unreachable(format!("payment adapter failed: {error}"))
            }
        }
    }
}

/// What an answer did to a charge.
enum Settled {
    Moved,
    Declined(Decline),
    WillRetry,
    GaveUp,
}

impl Payments {
    pub fn new(pool: PgPool, gateways: Gateways, retry: RetryPolicy, wakeup: FanOutWakeup) -> Self {
        let calls = CallLimits::default();
        Self {
            pool,
            gateways,
            retry,
            wakeup,
            calls: Arc::new(Semaphore::new(calls.max_calls)),
            event_checks: Arc::new(Semaphore::new(calls.max_calls)),
            call_lease: calls.lease(),
            abandon_after: calls.abandon_after,
            card_form: CardFormDefaults::default(),
        }
    }

    /// With `defaults` for card forms instead of the built-in ones.
    pub fn with_card_form(mut self, defaults: CardFormDefaults) -> Self {
        self.card_form = defaults;
        self
    }

    /// With `limits` on provider calls instead of the defaults.
    pub fn with_call_limits(mut self, limits: CallLimits) -> Self {
        self.calls = Arc::new(Semaphore::new(limits.max_calls));
        self.event_checks = Arc::new(Semaphore::new(limits.max_calls));
        self.call_lease = limits.lease();
        self.abandon_after = limits.abandon_after;
        self
    }

    /// How long after it was made an unfinished booking is abandoned.
    pub fn abandon_after(&self) -> Duration {
        self.abandon_after
    }

    /// The environments whose adapter this process has: the work left between phases
    /// (bookings, charge retries) that it can finish. Others leave it to instances that have
    /// the adapter.
    pub fn environments_served(&self) -> Vec<&'static str> {
        Environment::ALL
            .into_iter()
            .filter(|&environment| self.gateways.get(environment).is_some())
            .map(Environment::as_str)
            .collect()
    }

    /// How long a call in flight (or a booking between its phases) is left to its caller.
    pub fn call_lease(&self) -> Duration {
        self.call_lease
    }

    /// The payment adapter of each environment that has one, as operators see it.
    pub fn adapters_in_use(&self) -> Vec<crate::components::ComponentInUse> {
        [Environment::Test, Environment::Live]
            .into_iter()
            .filter_map(|environment| {
                let gateway = self.gateways.get(environment)?;
                let adapter = gateway.adapter()?;
                let info = adapter.info();
                Some(crate::components::ComponentInUse {
                    kind: "payment adapter",
                    used_for: format!("{} payments", environment.as_str()),
                    name: info.name.clone(),
                    version: info.version.clone(),
                    sha256: adapter.sha256().to_owned(),
                    world: format!("courier:payments/payment-adapter@{}", info.contract),
                    deadline: adapter.limits().adapter_deadline,
                    memory_bytes: adapter.limits().memory_bytes,
                    hosts: info.allowed_hosts.clone(),
                })
            })
            .collect()
    }

    fn gateway(&self, environment: Environment) -> Result<Arc<dyn Gateway>, PaymentError> {
        self.gateways
            .get(environment)
            .ok_or(PaymentError::LiveUnavailable)
    }

    // ---- provider calls and their results ---------------------------------------------

    /// Asks the provider for `requested` on `charge`, keyed by the charge and the move (a hold
    /// by the key its booking chose, when it did).
    async fn call(
        &self,
        gateway: Arc<dyn Gateway>,
        slot: CallSlot,
        charge: &ChargeRow,
        card: &CardRow,
        requested: Move,
    ) -> ProviderAnswer {
        let idempotency_key = match (&charge.hold_key, requested) {
            (Some(hold_key), Move::Authorise) => hold_key.clone(),
            _ => move_key(charge, requested),
        };
        let authorisation = charge.authorisation_ref.clone().unwrap_or_default();
        let result = match requested {
            Move::Authorise => {
                let request = HoldRequest {
                    amount_minor: charge.amount_minor,
                    currency: charge.currency.clone(),
                    card_ref: card.provider_ref.clone(),
                    customer_id: card.customer_id.clone(),
                    idempotency_key,
                };
                run(gateway, slot, move |g| async move {
                    g.authorise(&request).await
                })
                .await
            }
            Move::Capture => {
                let request = CaptureRequest {
                    authorisation,
                    amount_minor: charge.amount_minor,
                    currency: charge.currency.clone(),
                    idempotency_key,
                };
                run(
                    gateway,
                    slot,
                    move |g| async move { g.capture(&request).await },
                )
                .await
            }
            Move::Void => {
                let request = VoidRequest {
                    authorisation,
                    idempotency_key,
                };
                run(
                    gateway,
                    slot,
                    move |g| async move { g.void(&request).await },
                )
                .await
            }
            Move::Fail | Move::Refund | Move::CaptureReversed => {
                unreachable!("not a call made through `call`")
            }
        };
        result.into()
    }

    /// Writes what the provider's answer to `requested` does to `charge`: the move, a
    /// failure, or (unreachable) a retry after backoff; after `max_attempts` calls in all,
    /// the charge fails with `last_error`. `attempts` is how many calls were made before.
    async fn settle(
        &self,
        conn: &mut PgConnection,
        charge: &mut ChargeRow,
        requested: Move,
        answer: ProviderAnswer,
        actor: &str,
        attempts: i32,
    ) -> Result<Settled, sqlx::Error> {
        let from = charge.status;
        let now = now();
        charge.updated_at = now;
        // A pending move is asked about again like an unanswered one, but said as it is: the
        // retry reads the payment back first ([`Payments::run_due_retries`]).
        let pending = matches!(answer, ProviderAnswer::Pending(_));
        let (to, reference, detail, settled) = match answer {
            ProviderAnswer::Approved(reference) => {
                let Ok(Decision::Apply(to)) = state::decide(from, requested) else {
                    return Ok(Settled::Moved);
                };
                match to {
                    ChargeStatus::Authorised => {
                        charge.authorisation_ref = Some(reference.clone());
                        charge.authorised_at = Some(now);
                    }
                    ChargeStatus::Captured => {
                        charge.payment_ref = Some(reference.clone());
                        charge.captured_at = Some(now);
                        charge.after_hold = None;
                    }
                    ChargeStatus::Voided => {
                        charge.voided_at = Some(now);
                        charge.after_hold = None;
                    }
                    _ => {}
                }
                charge.last_error = None;
                (to, Some(reference), None, Settled::Moved)
            }
            ProviderAnswer::Declined(decline) => {
                charge.decline_code = Some(decline.code.clone());
                charge.failed_at = Some(now);
                charge.after_hold = None;
                let detail = format!("{} declined: {}", requested.as_str(), decline.code);
                (
                    ChargeStatus::Failed,
                    None,
                    Some(detail),
                    Settled::Declined(decline),
                )
            }
            ProviderAnswer::Refused(message) if requested != Move::Authorise => {
                // The provider holds the money: the move is shown to operators at once (as
                // past the retry count) and asked for again only at the longest wait, so it
                // goes through once they have fixed the configuration.
                let max = i32::try_from(self.retry.max_attempts).unwrap_or(i32::MAX);
                let delay = self.retry.delay_after(max.unsigned_abs());
                let due = now + chrono::Duration::from_std(delay).unwrap_or_default();
                store::schedule_retry(conn, charge.id, requested, max, due, &message).await?;
                charge.last_error = Some(refused(requested));
                store::update_charge(conn, charge).await?;
                return Ok(Settled::WillRetry);
            }
            ProviderAnswer::Refused(_) => {
                // A hold refused for good is never placed: the charge fails.
                charge.last_error = Some(refused(requested));
                charge.failed_at = Some(now);
                charge.after_hold = None;
                let detail = charge.last_error.clone();
                (ChargeStatus::Failed, None, detail, Settled::GaveUp)
            }
            ProviderAnswer::Unreachable(message)
            | ProviderAnswer::InFlight(message)
            | ProviderAnswer::Pending(message) => {
                let message = if pending {
                    // The provider's event about a pending hold names its payment: kept, so
                    // the event finds the charge ([`events`]).
                    if requested == Move::Authorise {
                        charge.authorisation_ref = Some(message.clone());
                    }
                    format!("pending at the provider ({message})")
                } else {
                    message
                };
                let attempts = attempts.saturating_add(1);
                let max = i32::try_from(self.retry.max_attempts).unwrap_or(i32::MAX);
                // A capture or a release is never given up: the provider holds the money, or
                // may have taken or released it already. Past `max` it is asked at the
                // longest wait until it answers, and operators see it among the payments
                // that need a decision. Only a hold that never answered fails.
                // A hold the provider accepted is never given up either: it may be placed.
                let keeps_trying = requested != Move::Authorise || pending;
                if attempts < max || keeps_trying {
                    let delay = self.retry.delay_after(attempts.min(max).unsigned_abs());
                    let due = now + chrono::Duration::from_std(delay).unwrap_or_default();
                    store::schedule_retry(conn, charge.id, requested, attempts, due, &message)
                        .await?;
                    // The adapter's own words go to the log and the retry row, which
                    // merchants never read; the charge says it in fixed words.
                    tracing::warn!(charge = %charge.id, attempts, error = %message,
                        "no usable answer from the payment provider; will retry");
                    charge.last_error = Some(if pending {
                        awaiting(requested)
                    } else {
                        unanswered(requested, (attempts >= max).then_some(attempts), true)
                    });
                    store::update_charge(conn, charge).await?;
                    return Ok(Settled::WillRetry);
                }
                tracing::warn!(charge = %charge.id, attempts, error = %message,
                    "no usable answer from the payment provider; giving up");
                charge.last_error = Some(unanswered(requested, Some(attempts), false));
                charge.failed_at = Some(now);
                charge.after_hold = None;
                let detail = charge.last_error.clone();
                (ChargeStatus::Failed, None, detail, Settled::GaveUp)
            }
        };
        if to == ChargeStatus::Failed && state::decide(from, Move::Fail).is_err() {
            // Nothing can fail from here (a decline of a move already made): leave it be.
            store::delete_retry(conn, charge.id).await?;
            return Ok(settled);
        }
        charge.status = to;
        store::write_move(
            conn,
            charge,
            &NewMove {
                charge_id: charge.id,
                from_status: Some(from),
                to_status: to,
                amount_minor: Some(charge.amount_minor),
                provider_ref: reference.as_deref(),
                detail: detail.as_deref(),
                actor,
                at: now,
            },
        )
        .await?;
        if to == ChargeStatus::Authorised
            && let Some(follow) = charge.after_hold.as_deref().and_then(Move::parse)
        {
            // The capture or release asked for while the hold was pending is durable work
            // from the moment the hold is placed: should the caller's follow-up fail before
            // it is in flight, or its process die, the retry worker of any instance makes it.
            store::schedule_retry(conn, charge.id, follow, 0, now, FOLLOWS_HOLD).await?;
        }
        Ok(settled)
    }
}

/// The provider idempotency key of a capture or release of `charge`: one per charge and move,
/// and a new one after each failure the provider reported (under the old one it would only
/// replay its first answer).
fn move_key(charge: &ChargeRow, requested: Move) -> String {
    match charge.provider_failures {
        0 => format!("charge_{}_{}", charge.id, requested.as_str()),
        n => format!("charge_{}_{}_{n}", charge.id, requested.as_str()),
    }
}

/// The provider idempotency key of a job's hold: one hold per job, whoever asks for it and
/// however often. Never derived from the merchant's `Idempotency-Key`, which is forgotten
/// after a day and may then name another booking.
pub fn hold_key(job_id: Uuid) -> String {
    format!("job_{job_id}_hold")
}

/// The job whose hold `key` is, when it is one of [`hold_key`]'s.
pub fn job_of_hold_key(key: &str) -> Option<Uuid> {
    let id = key.strip_prefix("job_")?.strip_suffix("_hold")?;
    Uuid::parse_str(id).ok().filter(|job| hold_key(*job) == key)
}

/// Release requests made for an abandoned booking's hold before it is left to operators.
pub const MAX_RELEASE_ROUNDS: i32 = 5;

/// The idempotency key of release `round` of the hold whose key is `hold_key` (an abandoned
/// booking's): the first is `<hold key>_release`, each later one `<hold key>_release_<round>`,
/// since the provider answers a repeat of a failed release's key with its first answer.
pub fn release_key(hold_key: &str, round: i32) -> String {
    if round <= 1 {
        format!("{hold_key}_release")
    } else {
        format!("{hold_key}_release_{round}")
    }
}

/// The time, to the microsecond the database keeps, so a view answered now equals the same
/// record read back later.
fn now() -> DateTime<Utc> {
    use chrono::SubsecRound;
    Utc::now().trunc_subsecs(6)
}

/// Runs a provider call: an adapter without network where it is called (it is a bounded
/// computation), one with network as a task of its own, holding `slot` until the call is
/// over, even when the caller has gone (a provider that acted is then still heard).
async fn run<T, F>(
    gateway: Arc<dyn Gateway>,
    slot: CallSlot,
    call: impl FnOnce(Arc<dyn Gateway>) -> F,
) -> T
where
    T: Send + 'static,
    F: std::future::Future<Output = T> + Send + 'static,
{
    if !gateway.uses_network() {
        return call(gateway).await;
    }
    let call = call(gateway);
    let task = tokio::spawn(async move {
        let value = call.await;
        drop(slot);
        value
    });
    match task.await {
        Ok(value) => value,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// A charge's `last_error` when the provider gave no usable answer to `requested`, in fixed
/// words with the stable code; `after`: the calls made, once they reached the retry policy's
/// count; `trying`: whether it is asked again.
/// How a charge's `last_error` begins while the provider has accepted a move and not yet
/// confirmed it.
pub(crate) const AWAITING: &str = "awaiting the provider's confirmation";

fn awaiting(requested: Move) -> String {
    format!(
        "{AWAITING} of the {}: it accepted it and says later how it ended",
        move_name(requested)
    )
}

/// A charge's `last_error` when the provider refused a move for good, in fixed words.
fn refused(requested: Move) -> String {
    let code = PROVIDER_REFUSED.code;
    match requested {
        Move::Authorise => {
            format!("{code}: the provider refused the hold for good; nothing is held")
        }
        _ => format!(
            "{code}: the provider refused the {} for good; shown to operators, and asked again \
             at the longest wait",
            move_name(requested)
        ),
    }
}

/// Why a charge has a retry due as soon as its hold is placed.
const FOLLOWS_HOLD: &str = "asked for while the hold was pending";

/// A charge's `last_error` when the provider reports a move it had accepted failed.
fn failed_at_provider(requested: Move) -> String {
    format!(
        "the provider reports the {} failed; shown to operators, and asked again at the \
         longest wait",
        move_name(requested)
    )
}

fn move_name(requested: Move) -> &'static str {
    match requested {
        Move::Authorise => "hold",
        Move::Capture => "capture",
        Move::Void => "release of the hold",
        Move::Refund => "refund",
        Move::Fail => "failure",
        Move::CaptureReversed => "reversal of the capture",
    }
}

fn unanswered(requested: Move, after: Option<i32>, trying: bool) -> String {
    let code = PROVIDER_UNREACHABLE.code;
    let requested = move_name(requested);
    match (after, trying) {
        (None, _) => {
            format!("{code}: no usable answer from the provider to the {requested}; trying again")
        }
        (Some(attempts), false) => format!(
            "{code}: no usable answer from the provider to the {requested} after {attempts} attempts"
        ),
        (Some(attempts), true) => format!(
            "{code}: no usable answer from the provider to the {requested} after {attempts} \
             attempts; still trying, and shown to operators"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_the_base() {
        let policy = RetryPolicy {
            base: Duration::from_secs(5),
            max_attempts: 8,
            lease: Duration::from_secs(60),
        };
        let waits: Vec<u64> = (1..=4).map(|n| policy.delay_after(n).as_secs()).collect();
        assert_eq!(waits, [5, 10, 20, 40]);
        // Never overflows, however many attempts.
        assert!(policy.delay_after(u32::MAX) >= policy.delay_after(20));
    }

    #[test]
    fn a_hold_key_names_its_job_and_no_other_key_does() {
        let job = Uuid::new_v4();
        assert_eq!(job_of_hold_key(&hold_key(job)), Some(job));
        for other in [
            "job_1_hold",
            "charge_1_capture",
            "order-5512",
            &format!("job_{}_hold", job.simple()),
            &format!("job_{}_hold_release", job),
            &format!("job_{{{job}}}_hold"),
        ] {
            assert_eq!(job_of_hold_key(other), None, "{other}");
        }
    }
}
