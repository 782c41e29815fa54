//! A payment adapter (`courier:payments/payment-adapter@2.3.0`) for the example provider, a
//! plain JSON API described in `README.md`. Written by `courier adapter new` as the start of
//! yours: keep the layout, rewrite `provider.rs` and `operations.rs` for your provider's API,
//! record cassettes from its sandbox, and certify.
//!
//! - `provider.rs`: the provider's wire format: settings, requests, and how an answer is sorted
//!   (success, decline, key in use, refused, no usable answer).
//! - `operations.rs`: each operation of the contract as requests, and the answers as outcomes.
//!   Plain Rust over a [`Transport`], unit tested natively with scripted answers (`tests.rs`).
//! - `notifications.rs`: the provider's signed notifications, read as the contract's events:
//!   how a move answered `pending` ends.
//! - here: the contract's operations, handed to `operations.rs`; `adapter-kit` makes the
//!   component of them (the WIT boundary, the host's HTTP, configuration and log).
//!
//! The rules the host holds every adapter to are in the contract (`wit/payments.wit`) and in
//! Courier's `docs/writing-an-adapter.md`; `courier adapter certify` checks them.

#![cfg_attr(target_family = "wasm", no_std)]

extern crate alloc;

mod notifications;
mod operations;
mod provider;
#[cfg(test)]
mod tests;

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use adapter_kit::{
    AdapterInfo, Attached, CaptureRequest, CardForm, CardFormRequest, Event, HoldRequest, Lookup,
    Outcome, PaymentAdapter, PaymentPage, PaymentState, RefundRequest, Refusal, Transport,
    VoidRequest,
};

pub use operations::Adapter;
pub use provider::{Failure, Settings};

/// The example provider's adapter.
pub struct ExamplePay;

adapter_kit::export_adapter!(ExamplePay);

impl PaymentAdapter for ExamplePay {
    const PROVIDER: &'static str = "the example provider";
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
            // Card ids (`card_…`) hold no card number to mistake. A provider whose ids are
            // digits declares them here, e.g. "[0-9]{16}".
            reference_pattern: None,
        })
    }

    fn setup_card_form<T: Transport>(
        settings: &Settings,
        http: &T,
        request: &CardFormRequest,
    ) -> Result<CardForm, String> {
        Adapter::new(settings, http).setup_card_form(request)
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

    fn retrieve<T: Transport>(
        settings: &Settings,
        http: &T,
        reference: &str,
    ) -> Result<PaymentState, Lookup> {
        Adapter::new(settings, http).retrieve(reference)
    }

    fn list_payments<T: Transport>(
        settings: &Settings,
        http: &T,
        since: i64,
        after: Option<&str>,
    ) -> Result<PaymentPage, String> {
        Adapter::new(settings, http).list_payments(since, after)
    }

    fn verify_event(
        settings: &Settings,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<Vec<Event>, String> {
        notifications::verify(settings, headers, body)
    }
}
