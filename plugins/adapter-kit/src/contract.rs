//! The contract's requests, answers and events (`wit/payments/payments.wit`) as plain Rust
//! types: what an adapter reads and answers. The WIT boundary converts them.

use alloc::string::String;
use alloc::vec::Vec;

/// What the host asks a card form for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardFormRequest {
    /// The merchant's id: the provider's customer is made with it as its key.
    pub merchant: String,
    /// The provider's customer the host kept for the merchant, once there is one.
    pub customer_id: Option<String>,
    pub currency: String,
    pub country: String,
    pub locale: String,
    /// Where a provider's redirect (3-D Secure, say) comes back to.
    pub return_url: String,
    /// The merchant's billing address, when they gave one: for a provider that wants an email on
    /// its customer or form.
    pub contact_email: Option<String>,
}

/// The card form's start: the provider's customer, and the document (JSON) the provider's web
/// component is started with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardForm {
    pub customer_id: String,
    pub document: String,
}

/// A card the provider keeps, by its reference (what the host keeps, whichever reference it
/// was given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attached {
    pub reference: String,
    pub brand: String,
    pub last_four: String,
    pub expiry_month: u8,
    pub expiry_year: u16,
}

/// Why a card reference is not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The provider does not know it (or it is another customer's).
    UnknownReference(String),
    /// The provider checked the card and said no.
    Declined(Decline),
    /// No usable answer.
    Unreachable(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldRequest {
    pub amount_minor: i64,
    pub currency: String,
    pub card_ref: String,
    pub customer_id: String,
    pub idempotency_key: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureRequest {
    /// The hold's reference.
    pub authorisation: String,
    pub amount_minor: i64,
    pub currency: String,
    pub idempotency_key: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoidRequest {
    pub authorisation: String,
    pub idempotency_key: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundRequest {
    /// The captured payment's reference.
    pub payment: String,
    pub amount_minor: i64,
    pub currency: String,
    pub idempotency_key: String,
}

/// Why a card will never work again (the contract's `finish-reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    Expired,
    Lost,
    RefusedForGood,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decline {
    /// The provider's decline code.
    pub code: String,
    /// Set only when the code says the card itself is finished.
    pub finished: Option<Finished>,
}

/// A money move's answer (the contract's `outcome`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Done, with the provider's reference for what was made.
    Approved(String),
    /// The provider answered and said no.
    Declined(Decline),
    /// No usable answer: nothing is known to have happened; the host asks again with the same
    /// key.
    Unreachable(String),
    /// The provider is still working on an earlier request with this key (Stripe's 409, or a
    /// 429 a provider documents as that, such as Checkout.com's).
    InFlight(String),
    /// Accepted; the provider will say later how it ended, naming this reference.
    Pending(String),
    /// Can never succeed as it is (credentials, account, validation): operators are told.
    Refused(String),
}

/// A payment's state at the provider (the contract's `payment-status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Held,
    Captured,
    Released,
    Refused,
    Processing,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentState {
    pub reference: String,
    /// The host's key the hold was made with, when the provider keeps it.
    pub hold_key: Option<String>,
    pub status: Status,
    pub amount_minor: i64,
    pub captured_minor: i64,
    pub refunded_minor: i64,
    pub currency: String,
    /// Unix seconds.
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentPage {
    pub payments: Vec<PaymentState>,
    /// Where the next page starts, when there is one.
    pub next: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    NotFound,
    Unreachable(String),
}

/// What `describe` says of the adapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterInfo {
    pub name: String,
    pub version: String,
    /// The only hosts it may reach (`api.example.com`, or `*.example.com`).
    pub allowed_hosts: Vec<String>,
    /// A regular expression the provider's card references match in full, when they could
    /// pass for card numbers (all digits, say).
    pub reference_pattern: Option<String>,
}

/// One event of a provider's verified notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The provider's id for it: the same event sent again has the same id.
    pub id: String,
    /// The reference a pending answer named (the payment's, or the refund's).
    pub reference: String,
    pub kind: EventKind,
    pub amount_minor: Option<i64>,
    pub currency: Option<String>,
    /// The idempotency key of the request it answers, when the provider says (Adyen's
    /// `merchantReference`, metadata kept with the payment): how the host finds a hold whose
    /// answer it never heard. None for a stored card.
    pub request_key: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    Held,
    HoldFailed(Decline),
    Captured,
    CaptureFailed(String),
    Released,
    ReleaseFailed(String),
    Refunded,
    RefundFailed(String),
    /// A card stored for the customer (by the provider's card form).
    CardStored(Attached),
}
