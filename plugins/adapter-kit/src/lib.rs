//! What every payment adapter (`courier:payments/payment-adapter@2.3.0`) shares, so an adapter
//! crate writes only its provider's part:
//!
//! - [`contract`]: the contract's requests, answers and events as plain Rust types;
//! - [`http`]: a request and its answer, and the [`Transport`] the adapter sends them over (the
//!   host's `outbound-http` in the component, a script of answers in unit tests);
//! - [`form`]: `application/x-www-form-urlencoded` bodies and path segments;
//! - [`hex`]: hexadecimal secrets and signatures;
//! - [`PaymentAdapter`]: the operations, implemented by the adapter, and [`export_adapter!`],
//!   which makes the component of it: the WIT boundary, the configuration read from the host,
//!   refusals logged, nothing else to write.
//!
//! ```ignore
//! struct AcmePay;
//! impl adapter_kit::PaymentAdapter for AcmePay { /* the provider's part */ }
//! adapter_kit::export_adapter!(AcmePay);
//! ```

#![no_std]

extern crate alloc;

#[cfg(target_family = "wasm")]
#[doc(hidden)]
pub mod component;
pub mod contract;
pub mod form;
pub mod hex;
pub mod http;

pub use contract::{
    AdapterInfo, Attached, CaptureRequest, CardForm, CardFormRequest, Decline, Event, EventKind,
    Finished, HoldRequest, Lookup, Outcome, PaymentPage, PaymentState, RefundRequest, Refusal,
    Status, VoidRequest,
};
pub use http::{Method, Request, Response, Transport};

use alloc::string::String;
use alloc::vec::Vec;

/// A payment provider's adapter: each operation of the contract, over the operator's settings
/// and a [`Transport`]. Plain Rust, unit tested natively with scripted answers;
/// [`export_adapter!`] makes the component.
///
/// A configuration [`Self::settings`] refuses is refused for good by every money move (nothing
/// is sent), and the service does not start with it (`describe` runs at load).
pub trait PaymentAdapter {
    /// The provider's name as messages say it (`"Stripe"`): "Stripe did not answer in time".
    const PROVIDER: &'static str;

    /// What the operator configured.
    type Settings;

    /// Reads the settings through `get` (the host's `config.get`); `Err` names what is missing
    /// or wrong.
    fn settings(get: &dyn Fn(&str) -> Option<String>) -> Result<Self::Settings, String>;

    /// The adapter's name, version, the hosts it may reach and its card references' pattern.
    /// No network.
    fn describe(settings: &Self::Settings) -> Result<AdapterInfo, String>;

    /// What the provider's card form needs, for the merchant's customer.
    fn setup_card_form<T: Transport>(
        settings: &Self::Settings,
        http: &T,
        request: &CardFormRequest,
    ) -> Result<CardForm, String>;

    /// The card the form produced, when it is this customer's.
    fn attach_card<T: Transport>(
        settings: &Self::Settings,
        http: &T,
        customer_id: &str,
        card_ref: &str,
    ) -> Result<Attached, Refusal>;

    /// Holds money on the card, under the host's idempotency key.
    fn authorise<T: Transport>(settings: &Self::Settings, http: &T, hold: &HoldRequest) -> Outcome;

    /// Takes held money.
    fn capture<T: Transport>(
        settings: &Self::Settings,
        http: &T,
        capture: &CaptureRequest,
    ) -> Outcome;

    /// Releases a hold.
    fn void<T: Transport>(settings: &Self::Settings, http: &T, void: &VoidRequest) -> Outcome;

    /// Gives captured money back; approved (or pending) with the refund's reference.
    fn refund<T: Transport>(settings: &Self::Settings, http: &T, refund: &RefundRequest)
    -> Outcome;

    /// A payment as the provider holds it now. By default the provider has no lookup.
    fn retrieve<T: Transport>(
        _settings: &Self::Settings,
        _http: &T,
        _reference: &str,
    ) -> Result<PaymentState, Lookup> {
        Err(Lookup::Unreachable(NO_LOOKUP.into()))
    }

    /// The payments made since `since` (Unix seconds), a page at a time. By default the
    /// provider cannot list them.
    fn list_payments<T: Transport>(
        _settings: &Self::Settings,
        _http: &T,
        _since: i64,
        _after: Option<&str>,
    ) -> Result<PaymentPage, String> {
        Err(NO_LOOKUP.into())
    }

    /// Checks the signature on a provider's notification (with a secret from the settings)
    /// and reads its events. No network. By default the provider sends none: an adapter that
    /// ever answers [`Outcome::Pending`] must read them.
    fn verify_event(
        _settings: &Self::Settings,
        _headers: &[(String, String)],
        _body: &[u8],
    ) -> Result<Vec<Event>, String> {
        Err("this adapter reads no notifications from its provider".into())
    }
}

/// What the default `retrieve` and `list-payments` answer.
pub const NO_LOOKUP: &str = "this provider has no payment lookup: each move's outcome arrives by \
                             notification";

/// Makes the component of a [`PaymentAdapter`]: exports the contract's operations, reading the
/// settings from the host's `config` and sending over its `outbound-http`. Write it once, in
/// the crate root; it does nothing off wasm (unit tests run natively).
#[macro_export]
macro_rules! export_adapter {
    ($adapter:ty) => {
        #[cfg(target_family = "wasm")]
        type CourierPaymentAdapterComponent = $crate::component::Component<$adapter>;
        #[cfg(target_family = "wasm")]
        $crate::component::__export_payment_adapter!(
            CourierPaymentAdapterComponent with_types_in $crate::component
        );
    };
}

/// How much a logged line matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

/// Writes a line to the service's log (the host's `log`), tagged with the adapter. Refusals are
/// logged as errors by the kit itself. Off wasm (unit tests) it does nothing.
pub fn log(level: Level, message: &str) {
    #[cfg(target_family = "wasm")]
    component::log(level, message);
    #[cfg(not(target_family = "wasm"))]
    let _ = (level, message);
}
