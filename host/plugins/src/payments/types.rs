//! What the host asks of a payment adapter and what it answers, whichever version of the
//! contract the component was built against (answers of older versions are read up into
//! these).

use std::collections::BTreeMap;
use std::time::Duration;

pub use crate::outbound::NetworkOverrides;

/// Operator-set values the adapter reads through its `config` import
/// (provider keys and account ids), per environment.
#[derive(Debug, Clone)]
pub struct AdapterConfig {
    pub values: BTreeMap<String, String>,
    /// Timeout of each outbound HTTP request.
    pub http_timeout: Duration,
    /// Largest HTTP response body handed to the adapter.
    pub max_response_bytes: usize,
    /// Test-only widenings of where requests may go (off by default).
    pub network: NetworkOverrides,
}

impl Default for AdapterConfig {
    /// No values, 10 s per HTTP request, 1 MiB responses.
    fn default() -> Self {
        AdapterConfig::new(BTreeMap::new())
    }
}

impl AdapterConfig {
    /// The given values with the default HTTP limits.
    pub fn new(values: BTreeMap<String, String>) -> Self {
        AdapterConfig {
            values,
            http_timeout: Duration::from_secs(10),
            max_response_bytes: 1 << 20,
            network: NetworkOverrides::default(),
        }
    }
}

/// What the adapter declares about itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AdapterInfo {
    pub name: String,
    pub version: String,
    /// The only hosts its outbound HTTP may reach.
    pub allowed_hosts: Vec<String>,
    /// A regular expression its card references match in full; none for adapters that declare
    /// none (and every 2.0.0 adapter).
    pub reference_pattern: Option<String>,
    /// The contract's version the component was built against, e.g. `2.1.0`.
    pub contract: &'static str,
}

/// What `setup-card-form` is told.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardFormRequest {
    pub merchant: String,
    /// The provider's customer the host keeps for the merchant, if any.
    #[serde(default)]
    pub customer_id: Option<String>,
    /// ISO 4217, upper case.
    pub currency: String,
    /// ISO 3166-1 alpha-2, upper case.
    pub country: String,
    /// BCP 47.
    pub locale: String,
    /// Absolute https URL.
    pub return_url: String,
    /// The merchant's billing contact, if they gave one (told to 2.2.0 adapters and later).
    #[serde(default)]
    pub contact_email: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CardForm {
    pub customer_id: String,
    /// A JSON object for the provider's web component (checked to be one).
    pub document: String,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Card {
    pub brand: String,
    pub last_four: String,
    pub expiry_month: u8,
    pub expiry_year: u16,
}

/// A card `attach-card` found, with the reference to keep for it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AttachedCard {
    pub reference: String,
    pub card: Card,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    Expired,
    Lost,
    RefusedForGood,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Decline {
    pub code: String,
    /// `Some` when the card will never work again.
    pub card_finished: Option<FinishReason>,
}

/// The result of every money-moving operation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "outcome", content = "detail", rename_all = "kebab-case")]
pub enum Outcome {
    /// The provider's reference for what was created.
    Approved(String),
    /// Refused; not to be retried.
    Declined(Decline),
    /// Nothing known to have happened; retry later with the same key.
    Unreachable(String),
    /// An earlier request with the same key is still being worked on at the
    /// provider; its outcome is not known yet. Ask again later.
    InFlight(String),
    /// Accepted; the provider says later how it ended (an event, or `retrieve`). The
    /// reference the event will name.
    Pending(String),
    /// Can never succeed as asked (credentials, account, validation): not retried, shown to
    /// operators.
    Refused(String),
}

/// Where a payment stands at the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PaymentStatus {
    Held,
    Captured,
    Released,
    Refused,
    Processing,
}

/// A payment as the provider holds it ([`crate::PaymentAdapter::retrieve`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PaymentState {
    pub reference: String,
    /// The idempotency key of the hold that made it, when the provider kept it.
    pub hold_key: Option<String>,
    pub status: PaymentStatus,
    pub amount_minor: i64,
    pub captured_minor: i64,
    pub refunded_minor: i64,
    /// Upper case.
    pub currency: String,
    /// Unix seconds.
    pub created_at: i64,
}

/// Why [`crate::PaymentAdapter::retrieve`] has no state.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "outcome", content = "detail", rename_all = "kebab-case")]
pub enum LookupFailure {
    NotFound,
    Unreachable(String),
}

/// A page of [`crate::PaymentAdapter::list_payments`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PaymentPage {
    pub payments: Vec<PaymentState>,
    pub next: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "outcome", content = "detail", rename_all = "kebab-case")]
pub enum AttachRefusal {
    UnknownReference(String),
    Declined(Decline),
    Unreachable(String),
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HoldRequest {
    pub amount_minor: i64,
    pub currency: String,
    pub card_ref: String,
    pub customer_id: String,
    pub idempotency_key: String,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureRequest {
    pub authorisation: String,
    pub amount_minor: i64,
    pub currency: String,
    pub idempotency_key: String,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VoidRequest {
    pub authorisation: String,
    pub idempotency_key: String,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefundRequest {
    pub payment: String,
    pub amount_minor: i64,
    pub currency: String,
    pub idempotency_key: String,
}

/// What a provider event says happened.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "kebab-case")]
pub enum EventKind {
    Held,
    HoldFailed(Decline),
    Captured,
    CaptureFailed(String),
    Released,
    ReleaseFailed(String),
    Refunded,
    RefundFailed(String),
    CardStored(AttachedCard),
}

/// One verified notification of the provider.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProviderEvent {
    pub id: String,
    pub reference: String,
    pub kind: EventKind,
    pub amount_minor: Option<i64>,
    pub currency: Option<String>,
    /// The idempotency key of the request the event answers, when the provider says (2.3.0).
    /// Events kept before 2.3.0 read without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_key: Option<String>,
}

/// Why [`crate::PaymentAdapter::verify_event`] has no events.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "outcome", content = "detail", rename_all = "kebab-case")]
pub enum EventRefusal {
    /// The adapter could not verify or read it; the text says why.
    Unverified(String),
    /// The component was built against a contract without provider events (2.0.0).
    Unsupported,
}
