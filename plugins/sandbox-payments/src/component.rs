//! The WIT boundary. The world imports `outbound-http`, `config` and `log`;
//! this adapter uses none, so they do not appear in the built component.
//! `guest-rt` supplies what std would.

use alloc::string::String;
use alloc::vec::Vec;

use guest_rt as _;

wit_bindgen::generate!({
    path: "../../wit/payments",
    world: "payment-adapter",
    // Gates the generated `std::error::Error` impls behind a `std` feature
    // this crate does not have: it is no_std.
    std_feature,
});

use courier::payments::types as wit;
use exports::courier::payments::adapter::Guest;

struct Component;

export!(Component);

fn outcome(o: crate::Outcome) -> wit::Outcome {
    match o {
        crate::Outcome::Approved(r) => wit::Outcome::Approved(r),
        crate::Outcome::Declined { code, finished } => wit::Outcome::Declined(wit::Decline {
            code: code.into(),
            card_finished: finished.map(|f| match f {
                crate::Finished::Expired => wit::FinishReason::Expired,
                crate::Finished::Lost => wit::FinishReason::Lost,
            }),
        }),
        crate::Outcome::Unreachable(m) => wit::Outcome::Unreachable(m),
    }
}

impl Guest for Component {
    fn describe() -> Result<wit::AdapterInfo, String> {
        Ok(wit::AdapterInfo {
            name: "sandbox".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            allowed_hosts: Vec::new(),
            // Its references (`pm_sandbox_<test number>`) are exempt by the host's own rule.
            reference_pattern: None,
        })
    }

    fn setup_card_form(request: wit::CardFormRequest) -> Result<wit::CardForm, String> {
        let (client_secret, customer_id) = crate::setup_card_form(&request.merchant);
        Ok(wit::CardForm {
            document: crate::card_form_document(&client_secret),
            customer_id,
        })
    }

    fn attach_card(
        _customer_id: String,
        card_ref: String,
    ) -> Result<wit::AttachedCard, wit::AttachRefusal> {
        let card = crate::card(&card_ref).map_err(wit::AttachRefusal::UnknownReference)?;
        Ok(wit::AttachedCard {
            card: wit::Card {
                brand: "visa".into(),
                last_four: card.last_four().into(),
                expiry_month: crate::EXPIRY_MONTH,
                expiry_year: crate::EXPIRY_YEAR,
            },
            reference: card_ref,
        })
    }

    fn authorise(hold: wit::HoldRequest) -> wit::Outcome {
        outcome(crate::authorise(
            &hold.card_ref,
            hold.amount_minor,
            &hold.idempotency_key,
        ))
    }

    fn capture(c: wit::CaptureRequest) -> wit::Outcome {
        outcome(crate::capture(
            &c.authorisation,
            c.amount_minor,
            &c.idempotency_key,
        ))
    }

    fn void(r: wit::VoidRequest) -> wit::Outcome {
        outcome(crate::void(&r.authorisation, &r.idempotency_key))
    }

    fn refund(r: wit::RefundRequest) -> wit::Outcome {
        outcome(crate::refund(
            &r.payment,
            r.amount_minor,
            &r.idempotency_key,
        ))
    }

    // The sandbox is a computation without state: it keeps no payments to read back.
    fn retrieve(_reference: String) -> Result<wit::PaymentState, wit::LookupFailure> {
        Err(wit::LookupFailure::Unreachable(crate::KEEPS_NOTHING.into()))
    }

    fn list_payments(_since: i64, _after: Option<String>) -> Result<wit::PaymentPage, String> {
        Err(crate::KEEPS_NOTHING.into())
    }

    // The sandbox answers at once: it never says `pending`, and sends no notifications.
    fn verify_event(
        _headers: Vec<(String, String)>,
        _body: Vec<u8>,
    ) -> Result<Vec<wit::ProviderEvent>, String> {
        Err("the sandbox sends no notifications".into())
    }
}
