//! A live payment adapter (`courier:payments/payment-adapter@2.3.0`) for
//! Stripe's API, written against the WIT contract and Stripe's published
//! API reference only.
//!
//! | operation         | Stripe requests                                                          |
//! |-------------------|--------------------------------------------------------------------------|
//! | `setup-card-form` | `POST /v1/customers`, then `POST /v1/setup_intents` for that customer     |
//! | `attach-card`     | `GET /v1/payment_methods/{id}` (and `…/attach` when it has no customer); for a `seti_…` first `GET /v1/setup_intents/{id}` |
//! | `authorise`       | `POST /v1/payment_intents`, `capture_method=manual`, confirmed off-session |
//! | `capture`         | `POST /v1/payment_intents/{id}/capture` with `amount_to_capture`          |
//! | `void`            | `POST /v1/payment_intents/{id}/cancel`                                    |
//! | `refund`          | `POST /v1/refunds` for the PaymentIntent                                  |
//! | `retrieve`        | `GET /v1/payment_intents/{id}?expand[]=latest_charge`                     |
//! | `list-payments`   | `GET /v1/payment_intents?created[gte]=…&limit=100&expand[]=data.latest_charge` |
//!
//! Every POST carries an `Idempotency-Key`: the host's key for money moves
//! (so a retried call reaches the PaymentIntent the first one made), and a
//! key derived from the merchant or card for the others. A hold keeps its
//! key in the PaymentIntent's metadata (`courier_hold_key`), which
//! `retrieve` and `list-payments` give back.
//!
//! Configuration (`config.get`, set by the operator):
//! - `secret_key` (required): the account's secret API key (`sk_live_…`).
//! - `api_base`: default `https://api.stripe.com`. Its host is the only one
//!   the adapter declares (`describe`), so the operator decides where it
//!   may connect.
//! - `account`: a connected account id, sent as `Stripe-Account`.
//! - `api_version`: sent as `Stripe-Version` (default `2024-06-20`, the
//!   version this adapter was written against).
//! - `publishable_key`: the account's publishable key (`pk_…`). With it the
//!   card-form document also says how a page draws Stripe's form (see
//!   `browser`), which the merchant console does.
//! - `js_url`: where Stripe.js is loaded from (default
//!   `https://js.stripe.com/v3/`).
//!
//! Answers become outcomes as Stripe documents them: a `card_error` is a
//! decline (with the `decline_code` when there is one), with the card marked
//! finished for codes that say the card will never work again; timeouts,
//! connection failures, 5xx, 429 and `api_error` are `unreachable`, to be
//! retried with the same key; a key still in flight (409) is `in-flight`. A
//! key Stripe does not accept (401), one without the permission (403) and a
//! request it finds invalid (400) are `refused`: they fail the same way every
//! time, and operators must act. Any other refusal, and any answer that is
//! not what the request asked for (a body that does not parse, another
//! amount or currency), is never an approval: it is `unreachable` with a
//! message saying what was wrong, and a hold made for the wrong amount is
//! cancelled first.

#![cfg_attr(target_family = "wasm", no_std)]

extern crate alloc;

mod browser;
mod operations;
mod stripe;

use alloc::string::{String, ToString};

use adapter_kit::{
    AdapterInfo, Attached, CaptureRequest, CardFormRequest, HoldRequest, Lookup, Outcome,
    PaymentAdapter, PaymentPage, PaymentState, RefundRequest, Refusal, Transport, VoidRequest,
};

pub use browser::card_form_document;
pub use operations::Adapter;
pub use stripe::{Failure, Settings};

/// Stripe's adapter.
pub struct Stripe;

adapter_kit::export_adapter!(Stripe);

impl PaymentAdapter for Stripe {
    const PROVIDER: &'static str = "Stripe";
    type Settings = Settings;

    fn settings(get: &dyn Fn(&str) -> Option<String>) -> Result<Settings, String> {
        Settings::read(get)
    }

    fn describe(settings: &Settings) -> Result<AdapterInfo, String> {
        Ok(AdapterInfo {
            name: "stripe".into(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            // The configured API base's host is the only one this adapter calls.
            allowed_hosts: alloc::vec![adapter_kit::http::host_of(&settings.api_base)?],
            // PaymentMethod ids (`pm_…`) hold no card number to mistake.
            reference_pattern: None,
        })
    }

    fn setup_card_form<T: Transport>(
        settings: &Settings,
        http: &T,
        request: &CardFormRequest,
    ) -> Result<adapter_kit::CardForm, String> {
        let form = Adapter::new(settings, http).setup_card_form(
            &request.merchant,
            request.customer_id.as_deref(),
            request.contact_email.as_deref(),
        )?;
        Ok(adapter_kit::CardForm {
            document: card_form_document(settings, &form.client_secret).to_string(),
            customer_id: form.customer_id,
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

    // Every Stripe operation this adapter makes answers at once (manual capture, cancel and
    // refund are synchronous for cards): it never says `pending`, so it reads no webhooks.
}
