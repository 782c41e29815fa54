//! The WIT boundary: the contract's calls become [`crate::Adapter`] calls over the host's
//! `outbound-http`, `config` and `log` imports. It only converts types.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use guest_rt as _;

wit_bindgen::generate!({
    path: "../../wit/payments",
    world: "payment-adapter",
    // Gates the generated `std::error::Error` impls behind a `std` feature this crate does
    // not have: it is no_std.
    std_feature,
});

use courier::payments::log::{Level, log};
use courier::payments::outbound_http as http;
use courier::payments::types as wit;
use exports::courier::payments::adapter::Guest;

use crate::{
    Adapter, EventKind, Finished, Method, Outcome, Refusal, Request, Response, Settings, Transport,
};

/// What `retrieve` and `list-payments` answer: Checkout keeps no payment to look up.
const NO_LOOKUP: &str = "Adyen's Checkout API has no payment lookup: each move's outcome arrives by \
                         notification, and reconciliation is by Adyen's reports";

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
            Err(http::Error::Timeout) => Err("Adyen did not answer in time".into()),
            Err(http::Error::Connection(m)) => Err(format!("cannot reach Adyen: {m}")),
            Err(http::Error::TooLarge) => Err("Adyen's answer was too large".into()),
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
        Outcome::Pending(r) => wit::Outcome::Pending(r),
        Outcome::Refused(m) => {
            log(Level::Error, &m);
            wit::Outcome::Refused(m)
        }
    }
}

/// Runs `call` with the configured adapter; a configuration that cannot work is refused for
/// good (nothing was sent), with the reason.
fn with_adapter(call: impl FnOnce(&Adapter<'_, Host>) -> Outcome) -> wit::Outcome {
    match settings() {
        Ok(settings) => outcome(call(&Adapter::new(&settings, &Host))),
        Err(reason) => wit::Outcome::Refused(reason),
    }
}

impl Guest for Component {
    fn describe() -> Result<wit::AdapterInfo, String> {
        // The configured API base's host is the only one this adapter calls.
        let settings = settings()?;
        let host = crate::adyen::host_of(&settings.api_base)?;
        Ok(wit::AdapterInfo {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").into(),
            allowed_hosts: alloc::vec![host],
            // Adyen's stored-card ids are 16 letters or digits; older ones are all digits, and
            // some of those pass the Luhn check.
            reference_pattern: Some("[0-9A-Z]{16}".into()),
        })
    }

    fn setup_card_form(request: wit::CardFormRequest) -> Result<wit::CardForm, String> {
        let settings = settings()?;
        let form = Adapter::new(&settings, &Host).setup_card_form(
            &request.merchant,
            request.customer_id.as_deref(),
            &request.currency,
            &request.country,
            &request.locale,
            &request.return_url,
        )?;
        Ok(wit::CardForm {
            customer_id: form.customer_id,
            document: form.document.to_string(),
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

    fn retrieve(_reference: String) -> Result<wit::PaymentState, wit::LookupFailure> {
        Err(wit::LookupFailure::Unreachable(NO_LOOKUP.into()))
    }

    fn list_payments(_since: i64, _after: Option<String>) -> Result<wit::PaymentPage, String> {
        Err(NO_LOOKUP.into())
    }

    fn verify_event(
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    ) -> Result<Vec<wit::ProviderEvent>, String> {
        let settings = settings()?;
        let events = crate::verify(&settings, &headers, &body)?;
        Ok(events
            .into_iter()
            .map(|e| wit::ProviderEvent {
                id: e.id,
                reference: e.reference,
                kind: match e.kind {
                    EventKind::Held => wit::EventKind::Held,
                    EventKind::HoldFailed(d) => wit::EventKind::HoldFailed(decline(d)),
                    EventKind::Captured => wit::EventKind::Captured,
                    EventKind::CaptureFailed(m) => wit::EventKind::CaptureFailed(m),
                    EventKind::Released => wit::EventKind::Released,
                    EventKind::ReleaseFailed(m) => wit::EventKind::ReleaseFailed(m),
                    EventKind::Refunded => wit::EventKind::Refunded,
                    EventKind::RefundFailed(m) => wit::EventKind::RefundFailed(m),
                    EventKind::CardStored {
                        reference,
                        brand,
                        last_four,
                        expiry_month,
                        expiry_year,
                    } => wit::EventKind::CardStored(wit::AttachedCard {
                        reference,
                        card: wit::Card {
                            brand,
                            last_four,
                            expiry_month,
                            expiry_year,
                        },
                    }),
                },
                amount_minor: e.amount_minor,
                currency: e.currency,
            })
            .collect())
    }
}
