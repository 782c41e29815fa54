//! A payment adapter (`courier:payments/payment-adapter@2.3.0`) for Adyen's Checkout API, v71,
//! written from Adyen's public API reference.
//!
//! - `adyen.rs`: the wire: settings, requests with `X-API-Key` and `Idempotency-Key`, how an
//!   answer is sorted, and Adyen's currency decimals where they differ from ISO 4217.
//! - `operations.rs`: each operation of the contract as Checkout requests, and Adyen's answers
//!   as the contract's outcomes (holds answer at once; captures, cancels and refunds are
//!   `received`, so `pending`, and confirmed by notification).
//! - `notifications.rs`: Adyen's standard notifications, their HMAC signature checked, as the
//!   contract's provider events.
//! - here: the contract's operations, handed to the modules above; `adapter-kit` makes the
//!   component of them.

#![cfg_attr(target_family = "wasm", no_std)]

extern crate alloc;

mod adyen;
mod notifications;
mod operations;
#[cfg(test)]
mod tests;

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use adapter_kit::{
    AdapterInfo, Attached, CaptureRequest, CardFormRequest, Event, HoldRequest, Lookup, Outcome,
    PaymentAdapter, PaymentPage, PaymentState, RefundRequest, Refusal, Transport, VoidRequest,
};

pub use adyen::{Failure, Settings};
pub use notifications::verify;
pub use operations::Adapter;

/// What `retrieve` and `list-payments` answer: Checkout keeps no payment to look up.
const NO_LOOKUP: &str = "Adyen's Checkout API has no payment lookup: each move's outcome arrives by \
                         notification, and reconciliation is by Adyen's reports";

/// Adyen's adapter.
pub struct Adyen;

adapter_kit::export_adapter!(Adyen);

impl PaymentAdapter for Adyen {
    const PROVIDER: &'static str = "Adyen";
    type Settings = Settings;

    fn settings(get: &dyn Fn(&str) -> Option<String>) -> Result<Settings, String> {
        Settings::read(get)
    }

    fn describe(settings: &Settings) -> Result<AdapterInfo, String> {
        Ok(AdapterInfo {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            // The configured API base's host is the only one this adapter calls.
            allowed_hosts: alloc::vec![adapter_kit::http::host_of(&settings.api_base)?],
            // Adyen's stored-card ids are 16 letters or digits; older ones are all digits, and
            // some of those pass the Luhn check.
            reference_pattern: Some("[0-9A-Z]{16}".into()),
        })
    }

    fn setup_card_form<T: Transport>(
        settings: &Settings,
        http: &T,
        request: &CardFormRequest,
    ) -> Result<adapter_kit::CardForm, String> {
        let form = Adapter::new(settings, http).setup_card_form(request)?;
        Ok(adapter_kit::CardForm {
            customer_id: form.customer_id,
            document: form.document.to_string(),
        })
    }

    fn attach_card<T: Transport>(
        settings: &Settings,
        http: &T,
        customer_id: &str,
        card_ref: &str,
    ) -> Result<Attached, Refusal> {
        Adapter::new(settings, http).attach_card(customer_id, card_ref)
    }

    fn authorise<T: Transport>(settings: &Settings, http: &T, hold: &HoldRequest) -> Outcome {
        Adapter::new(settings, http).authorise(
            hold.amount_minor,
            &hold.currency,
            &hold.card_ref,
            &hold.customer_id,
            &hold.idempotency_key,
        )
    }

    fn capture<T: Transport>(settings: &Settings, http: &T, capture: &CaptureRequest) -> Outcome {
        Adapter::new(settings, http).capture(
            &capture.authorisation,
            capture.amount_minor,
            &capture.currency,
            &capture.idempotency_key,
        )
    }

    fn void<T: Transport>(settings: &Settings, http: &T, void: &VoidRequest) -> Outcome {
        Adapter::new(settings, http).void(&void.authorisation, &void.idempotency_key)
    }

    fn refund<T: Transport>(settings: &Settings, http: &T, refund: &RefundRequest) -> Outcome {
        Adapter::new(settings, http).refund(
            &refund.payment,
            refund.amount_minor,
            &refund.currency,
            &refund.idempotency_key,
        )
    }

    fn retrieve<T: Transport>(_: &Settings, _: &T, _: &str) -> Result<PaymentState, Lookup> {
        Err(Lookup::Unreachable(NO_LOOKUP.into()))
    }

    fn list_payments<T: Transport>(
        _: &Settings,
        _: &T,
        _: i64,
        _: Option<&str>,
    ) -> Result<PaymentPage, String> {
        Err(NO_LOOKUP.into())
    }

    fn verify_event(
        settings: &Settings,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<Vec<Event>, String> {
        verify(settings, headers, body)
    }
}
