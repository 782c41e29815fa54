//! The WIT boundary of every adapter: the contract's calls become [`PaymentAdapter`] calls
//! over the host's `outbound-http`, `config` and `log`. [`crate::export_adapter!`] exports it
//! for the adapter's type. `guest-rt` supplies what std would, so the component imports
//! exactly its world.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::marker::PhantomData;

use guest_rt as _;

wit_bindgen::generate!({
    path: "../../wit/payments",
    world: "payment-adapter",
    // Gates the generated `std::error::Error` impls behind a `std` feature this crate does
    // not have: it is no_std.
    std_feature,
    pub_export_macro: true,
    export_macro_name: "__export_payment_adapter",
    default_bindings_module: "adapter_kit::component",
});

use courier::payments::outbound_http as wire;
use courier::payments::types as wit;
use exports::courier::payments::adapter::Guest;

use crate::{
    Attached, CaptureRequest, CardFormRequest, Decline, EventKind, Finished, HoldRequest, Level,
    Lookup, Method, Outcome, PaymentAdapter, PaymentState, RefundRequest, Refusal, Request,
    Response, Status, Transport, VoidRequest,
};

/// The component of adapter `A`.
pub struct Component<A>(PhantomData<A>);

/// The host's `outbound-http`, its failures said in the provider's name.
struct Host {
    provider: &'static str,
}

impl Transport for Host {
    fn send(&self, request: Request) -> Result<Response, String> {
        let request = wire::Request {
            method: match request.method {
                Method::Get => wire::Method::Get,
                Method::Post => wire::Method::Post,
                Method::Put => wire::Method::Put,
                Method::Patch => wire::Method::Patch,
                Method::Delete => wire::Method::Delete,
            },
            url: request.url,
            headers: request.headers,
            body: request.body,
        };
        let provider = self.provider;
        match wire::send(&request) {
            Ok(r) => Ok(Response {
                status: r.status,
                body: r.body,
            }),
            Err(wire::Error::Timeout) => Err(format!("{provider} did not answer in time")),
            Err(wire::Error::Connection(m)) => Err(format!("cannot reach {provider}: {m}")),
            Err(wire::Error::TooLarge) => Err(format!(
                "{provider}'s answer was larger than the host accepts"
            )),
            Err(wire::Error::Forbidden(m)) => Err(format!("the host refused the request: {m}")),
        }
    }
}

pub(crate) fn log(level: Level, message: &str) {
    use courier::payments::log as host;
    let level = match level {
        Level::Debug => host::Level::Debug,
        Level::Info => host::Level::Info,
        Level::Warn => host::Level::Warn,
        Level::Error => host::Level::Error,
    };
    host::log(level, message);
}

fn settings<A: PaymentAdapter>() -> Result<A::Settings, String> {
    A::settings(&courier::payments::config::get)
}

fn host<A: PaymentAdapter>() -> Host {
    Host {
        provider: A::PROVIDER,
    }
}

fn decline(d: Decline) -> wit::Decline {
    wit::Decline {
        code: d.code,
        card_finished: d.finished.map(|f| match f {
            Finished::Expired => wit::FinishReason::Expired,
            Finished::Lost => wit::FinishReason::Lost,
            Finished::RefusedForGood => wit::FinishReason::RefusedForGood,
        }),
    }
}

/// A refusal is also logged as an error: an operator must act on it.
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

fn attached(c: Attached) -> wit::AttachedCard {
    wit::AttachedCard {
        reference: c.reference,
        card: wit::Card {
            brand: c.brand,
            last_four: c.last_four,
            expiry_month: c.expiry_month,
            expiry_year: c.expiry_year,
        },
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

/// Runs a money move with the configured settings; a configuration that cannot work is
/// refused for good (nothing was sent), with the reason.
fn money_move<A: PaymentAdapter>(
    call: impl FnOnce(&A::Settings, &Host) -> Outcome,
) -> wit::Outcome {
    match settings::<A>() {
        Ok(settings) => outcome(call(&settings, &host::<A>())),
        Err(reason) => outcome(Outcome::Refused(reason)),
    }
}

impl<A: PaymentAdapter> Guest for Component<A> {
    fn describe() -> Result<wit::AdapterInfo, String> {
        let info = A::describe(&settings::<A>()?)?;
        Ok(wit::AdapterInfo {
            name: info.name,
            version: info.version,
            allowed_hosts: info.allowed_hosts,
            reference_pattern: info.reference_pattern,
        })
    }

    fn setup_card_form(request: wit::CardFormRequest) -> Result<wit::CardForm, String> {
        let request = CardFormRequest {
            merchant: request.merchant,
            customer_id: request.customer_id,
            currency: request.currency,
            country: request.country,
            locale: request.locale,
            return_url: request.return_url,
            contact_email: request.contact_email,
        };
        let form = A::setup_card_form(&settings::<A>()?, &host::<A>(), &request)?;
        Ok(wit::CardForm {
            customer_id: form.customer_id,
            document: form.document,
        })
    }

    fn attach_card(
        customer_id: String,
        card_ref: String,
    ) -> Result<wit::AttachedCard, wit::AttachRefusal> {
        let settings = settings::<A>().map_err(wit::AttachRefusal::Unreachable)?;
        match A::attach_card(&settings, &host::<A>(), &customer_id, &card_ref) {
            Ok(card) => Ok(attached(card)),
            Err(Refusal::UnknownReference(m)) => Err(wit::AttachRefusal::UnknownReference(m)),
            Err(Refusal::Declined(d)) => Err(wit::AttachRefusal::Declined(decline(d))),
            Err(Refusal::Unreachable(m)) => Err(wit::AttachRefusal::Unreachable(m)),
        }
    }

    fn authorise(h: wit::HoldRequest) -> wit::Outcome {
        let hold = HoldRequest {
            amount_minor: h.amount_minor,
            currency: h.currency,
            card_ref: h.card_ref,
            customer_id: h.customer_id,
            idempotency_key: h.idempotency_key,
        };
        money_move::<A>(|settings, http| A::authorise(settings, http, &hold))
    }

    fn capture(c: wit::CaptureRequest) -> wit::Outcome {
        let capture = CaptureRequest {
            authorisation: c.authorisation,
            amount_minor: c.amount_minor,
            currency: c.currency,
            idempotency_key: c.idempotency_key,
        };
        money_move::<A>(|settings, http| A::capture(settings, http, &capture))
    }

    fn void(v: wit::VoidRequest) -> wit::Outcome {
        let void = VoidRequest {
            authorisation: v.authorisation,
            idempotency_key: v.idempotency_key,
        };
        money_move::<A>(|settings, http| A::void(settings, http, &void))
    }

    fn refund(r: wit::RefundRequest) -> wit::Outcome {
        let refund = RefundRequest {
            payment: r.payment,
            amount_minor: r.amount_minor,
            currency: r.currency,
            idempotency_key: r.idempotency_key,
        };
        money_move::<A>(|settings, http| A::refund(settings, http, &refund))
    }

    fn retrieve(reference: String) -> Result<wit::PaymentState, wit::LookupFailure> {
        let settings = settings::<A>().map_err(wit::LookupFailure::Unreachable)?;
        match A::retrieve(&settings, &host::<A>(), &reference) {
            Ok(state) => Ok(payment_state(state)),
            Err(Lookup::NotFound) => Err(wit::LookupFailure::NotFound),
            Err(Lookup::Unreachable(m)) => Err(wit::LookupFailure::Unreachable(m)),
        }
    }

    fn list_payments(since: i64, after: Option<String>) -> Result<wit::PaymentPage, String> {
        let page = A::list_payments(&settings::<A>()?, &host::<A>(), since, after.as_deref())?;
        Ok(wit::PaymentPage {
            payments: page.payments.into_iter().map(payment_state).collect(),
            next: page.next,
        })
    }

    fn verify_event(
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    ) -> Result<Vec<wit::ProviderEvent>, String> {
        let events = A::verify_event(&settings::<A>()?, &headers, &body)?;
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
                    EventKind::CardStored(card) => wit::EventKind::CardStored(attached(card)),
                },
                amount_minor: e.amount_minor,
                currency: e.currency,
                request_key: e.request_key,
            })
            .collect())
    }
}
