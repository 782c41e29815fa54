//! The WIT boundary: the contract's calls become [`crate::Adapter`] calls
//! over the host's `outbound-http` and `config` imports. `guest-rt`
//! supplies what std would.

use alloc::format;
use alloc::string::{String, ToString};

use guest_rt as _;

wit_bindgen::generate!({
    path: "../../wit/payments",
    world: "payment-adapter",
    // Gates the generated `std::error::Error` impls behind a `std` feature
    // this crate does not have: it is no_std.
    std_feature,
});

use courier::payments::outbound_http as http;
use courier::payments::types as wit;
use exports::courier::payments::adapter::Guest;

use crate::{
    Adapter, Finished, Lookup, Method, Outcome, PaymentState, Refusal, Request, Response, Settings,
    Status, Transport,
};

struct Component;

export!(Component);

/// The host's `outbound-http`.
struct Host;

impl Transport for Host {
    fn send(&self, request: Request) -> Result<Response, String> {
        let wire = http::Request {
            method: match request.method {
                Method::Get => http::Method::Get,
                Method::Post => http::Method::Post,
            },
            url: request.url,
            headers: request.headers,
            body: request.body,
        };
        match http::send(&wire) {
            Ok(r) => Ok(Response {
                status: r.status,
                body: r.body,
            }),
            Err(http::Error::Timeout) => Err("Stripe did not answer in time".into()),
            Err(http::Error::Connection(m)) => Err(format!("cannot reach Stripe: {m}")),
            Err(http::Error::TooLarge) => Err("Stripe's answer was larger than accepted".into()),
            Err(http::Error::Forbidden(m)) => Err(format!("the host refused the request: {m}")),
        }
    }
}

fn settings() -> Result<Settings, String> {
    Settings::read(courier::payments::config::get)
}

fn decline(d: crate::Decline) -> wit::Decline {
    wit::Decline {
        code: d.code,
        card_finished: d.finished.map(|f| match f {
            Finished::Expired => wit::FinishReason::Expired,
            Finished::Lost => wit::FinishReason::Lost,
            Finished::RefusedForGood => wit::FinishReason::RefusedForGood,
        }),
    }
}

fn outcome(o: Outcome) -> wit::Outcome {
    match o {
        Outcome::Approved(r) => wit::Outcome::Approved(r),
        Outcome::Declined(d) => wit::Outcome::Declined(decline(d)),
        Outcome::Unreachable(m) => wit::Outcome::Unreachable(m),
        Outcome::InFlight(m) => wit::Outcome::InFlight(m),
        Outcome::Refused(m) => wit::Outcome::Refused(m),
    }
}

fn payment_state(p: PaymentState) -> wit::PaymentState {
    wit::PaymentState {
        reference: p.reference,
        hold_key: p.hold_key,
        status: match p.status {
            Status::Held => wit::PaymentStatus::Held,
            Status::Captured => wit::PaymentStatus::Captured,
            Status::Released => wit::PaymentStatus::Released,
            Status::Refused => wit::PaymentStatus::Refused,
            Status::Processing => wit::PaymentStatus::Processing,
        },
        amount_minor: p.amount_minor,
        captured_minor: p.captured_minor,
        refunded_minor: p.refunded_minor,
        currency: p.currency,
        created_at: p.created_at,
    }
}

/// Runs `call` with the configured adapter; a configuration the operator
/// got wrong is unreachable (nothing was sent), with the reason.
fn with_adapter(call: impl FnOnce(&Adapter<'_, Host>) -> Outcome) -> wit::Outcome {
    match settings() {
        Ok(settings) => outcome(call(&Adapter::new(&settings, &Host))),
        Err(reason) => wit::Outcome::Unreachable(reason),
    }
}

impl Guest for Component {
    fn describe() -> Result<wit::AdapterInfo, String> {
        // The configured API base's host is the only one this adapter calls.
        let settings = settings()?;
        let host = crate::stripe::host_of(&settings.api_base)?;
        Ok(wit::AdapterInfo {
            name: "stripe".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            allowed_hosts: alloc::vec![host],
            // PaymentMethod ids (`pm_…`) hold no card number to mistake.
            reference_pattern: None,
        })
    }

    fn setup_card_form(request: wit::CardFormRequest) -> Result<wit::CardForm, String> {
        let settings = settings()?;
        let form = Adapter::new(&settings, &Host)
            .setup_card_form(&request.merchant, request.customer_id.as_deref())?;
        let document = crate::browser::card_form_document(&settings, &form.client_secret);
        Ok(wit::CardForm {
            customer_id: form.customer_id,
            document: document.to_string(),
        })
    }

    fn attach_card(
        customer_id: String,
        card_ref: String,
    ) -> Result<wit::AttachedCard, wit::AttachRefusal> {
        let settings = settings().map_err(wit::AttachRefusal::Unreachable)?;
        match Adapter::new(&settings, &Host).attach_card(&customer_id, &card_ref) {
            Ok(c) => Ok(wit::AttachedCard {
                reference: c.reference,
                card: wit::Card {
                    brand: c.brand,
                    last_four: c.last_four,
                    expiry_month: c.expiry_month,
                    expiry_year: c.expiry_year,
                },
            }),
            Err(Refusal::UnknownReference(m)) => Err(wit::AttachRefusal::UnknownReference(m)),
            Err(Refusal::Declined(d)) => Err(wit::AttachRefusal::Declined(decline(d))),
            Err(Refusal::Unreachable(m)) => Err(wit::AttachRefusal::Unreachable(m)),
        }
    }

    fn authorise(h: wit::HoldRequest) -> wit::Outcome {
        with_adapter(|a| {
            a.authorise(
                h.amount_minor,
                &h.currency,
                &h.card_ref,
                &h.customer_id,
                &h.idempotency_key,
            )
        })
    }

    fn capture(c: wit::CaptureRequest) -> wit::Outcome {
        with_adapter(|a| {
            a.capture(
                &c.authorisation,
                c.amount_minor,
                &c.currency,
                &c.idempotency_key,
            )
        })
    }

    fn void(v: wit::VoidRequest) -> wit::Outcome {
        with_adapter(|a| a.void(&v.authorisation, &v.idempotency_key))
    }

    fn refund(r: wit::RefundRequest) -> wit::Outcome {
        with_adapter(|a| a.refund(&r.payment, r.amount_minor, &r.currency, &r.idempotency_key))
    }

    fn retrieve(reference: String) -> Result<wit::PaymentState, wit::LookupFailure> {
        let settings = settings().map_err(wit::LookupFailure::Unreachable)?;
        match Adapter::new(&settings, &Host).retrieve(&reference) {
            Ok(state) => Ok(payment_state(state)),
            Err(Lookup::NotFound) => Err(wit::LookupFailure::NotFound),
            Err(Lookup::Unreachable(m)) => Err(wit::LookupFailure::Unreachable(m)),
        }
    }

    fn list_payments(since: i64, after: Option<String>) -> Result<wit::PaymentPage, String> {
        let settings = settings()?;
        let page = Adapter::new(&settings, &Host).list_payments(since, after.as_deref())?;
        Ok(wit::PaymentPage {
            payments: page.payments.into_iter().map(payment_state).collect(),
            next: page.next,
        })
    }

    // Every Stripe operation this adapter makes answers at once (manual capture, cancel and
    // refund are synchronous for cards): it never says `pending`, so it reads no webhooks.
    fn verify_event(
        _headers: alloc::vec::Vec<(String, String)>,
        _body: alloc::vec::Vec<u8>,
    ) -> Result<alloc::vec::Vec<wit::ProviderEvent>, String> {
        Err("this adapter does not read Stripe's webhooks".into())
    }
}
