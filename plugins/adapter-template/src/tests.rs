//! Every operation against scripted answers: what is sent, and what each answer becomes.
//! Add a test here for each rule of your provider's API as you write it.

use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;

use serde_json::{Value, json};

use adapter_kit::{
    CardFormRequest, Decline, Event, EventKind, Finished, Lookup, Method, Outcome, Refusal,
    Request, Response, Status, Transport,
};

use crate::{Adapter, Settings};

/// Answers requests from a list, in order, and keeps what was sent.
struct Script {
    answers: RefCell<Vec<Result<(u16, Value), &'static str>>>,
    sent: RefCell<Vec<Request>>,
}

impl Script {
    fn new(answers: Vec<Result<(u16, Value), &'static str>>) -> Self {
        Script {
            answers: RefCell::new(answers.into_iter().rev().collect()),
            sent: RefCell::new(Vec::new()),
        }
    }

    fn sent(&self, n: usize) -> Request {
        self.sent.borrow()[n].clone()
    }

    fn body(&self, n: usize) -> Value {
        serde_json::from_slice(&self.sent(n).body).unwrap()
    }

    fn header(&self, n: usize, name: &str) -> Option<String> {
        self.sent(n)
            .headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }
}

impl Transport for Script {
    fn send(&self, request: Request) -> Result<Response, String> {
        self.sent.borrow_mut().push(request);
        match self.answers.borrow_mut().pop().expect("a scripted answer") {
            Ok((status, body)) => Ok(Response {
                status,
                body: body.to_string().into_bytes(),
            }),
            Err(e) => Err(e.into()),
        }
    }
}

fn settings() -> Settings {
    Settings {
        api_key: "key_test_123".into(),
        api_base: "https://api.example-pay.test".into(),
        webhook_secret: Some("whsec_test".into()),
    }
}

fn payment(status: &str, amount: i64, captured: i64) -> Value {
    json!({"id": "pay_1", "status": status, "amount": amount, "amount_captured": captured,
        "amount_refunded": 0, "currency": "EUR", "created": 1_795_000_000,
        "metadata": {"hold_key": "job_1_hold"}})
}

#[test]
fn settings_need_an_api_key_and_an_https_base() {
    assert!(Settings::read(|_| None).unwrap_err().contains("api_key"));
    let plain = Settings::read(|k| match k {
        "api_key" => Some("key".into()),
        "api_base" => Some("http://api.example-pay.test".into()),
        _ => None,
    });
    assert!(plain.unwrap_err().contains("https"));
}

#[test]
fn a_hold_carries_the_host_s_key_and_keeps_it_with_the_payment() {
    let script = Script::new(vec![Ok((200, payment("authorized", 1290, 0)))]);
    let s = settings();
    let outcome = Adapter::new(&s, &script).authorise(1290, "EUR", "card_1", "cus_1", "job_1_hold");
    assert_eq!(outcome, Outcome::Approved("pay_1".into()));
    let sent = script.sent(0);
    assert_eq!(sent.method, Method::Post);
    assert_eq!(sent.url, "https://api.example-pay.test/v1/payments");
    assert_eq!(
        script.header(0, "idempotency-key").as_deref(),
        Some("job_1_hold")
    );
    assert_eq!(
        script.header(0, "authorization").as_deref(),
        Some("Bearer key_test_123")
    );
    let body = script.body(0);
    assert_eq!(body["capture"], false);
    assert_eq!(body["metadata"]["hold_key"], "job_1_hold");
}

#[test]
fn a_hold_for_another_amount_is_released_and_never_approved() {
    let script = Script::new(vec![
        Ok((200, payment("authorized", 1291, 0))),
        Ok((200, payment("canceled", 1291, 0))),
    ]);
    let s = settings();
    let outcome = Adapter::new(&s, &script).authorise(1290, "EUR", "card_1", "cus_1", "job_1_hold");
    assert!(matches!(outcome, Outcome::Unreachable(m) if m.contains("1291")));
    assert_eq!(
        script.sent(1).url,
        "https://api.example-pay.test/v1/payments/pay_1/cancel"
    );
}

#[test]
fn answers_are_sorted_into_outcomes() {
    let s = settings();
    let hold = |answer| {
        let script = Script::new(vec![answer]);
        Adapter::new(&s, &script).authorise(1290, "EUR", "card_1", "cus_1", "job_1_hold")
    };
    assert_eq!(
        hold(Ok((402, json!({"error": {"code": "expired_card"}})))),
        Outcome::Declined(Decline {
            code: "expired_card".into(),
            finished: Some(Finished::Expired),
        })
    );
    assert!(matches!(
        hold(Ok((
            409,
            json!({"error": {"code": "idempotency_key_in_use"}})
        ))),
        Outcome::InFlight(_)
    ));
    for status in [500, 503, 429] {
        assert!(matches!(
            hold(Ok((status, json!({})))),
            Outcome::Unreachable(_)
        ));
    }
    assert!(matches!(hold(Err("timeout")), Outcome::Unreachable(_)));
    assert!(matches!(
        hold(Ok((200, json!("not an object")))),
        Outcome::Unreachable(_)
    ));
}

#[test]
fn a_capture_must_take_exactly_what_was_asked() {
    let s = settings();
    let capture = |answer| {
        let script = Script::new(vec![Ok((200, answer))]);
        Adapter::new(&s, &script).capture("pay_1", 1290, "EUR", "charge_1_capture")
    };
    assert_eq!(
        capture(payment("captured", 1290, 1290)),
        Outcome::Approved("pay_1".into())
    );
    assert!(matches!(
        capture(payment("captured", 1290, 1000)),
        Outcome::Unreachable(_)
    ));
}

#[test]
fn cards_and_payments_unknown_to_the_provider_are_said_so() {
    let s = settings();
    let missing = json!({"error": {"code": "not_found"}});
    let script = Script::new(vec![Ok((404, missing.clone()))]);
    assert!(matches!(
        Adapter::new(&s, &script).attach_card("cus_1", "card_x"),
        Err(Refusal::UnknownReference(_))
    ));
    let script = Script::new(vec![Ok((404, missing))]);
    assert_eq!(
        Adapter::new(&s, &script).retrieve("pay_x"),
        Err(Lookup::NotFound)
    );
    let script = Script::new(vec![Ok((200, payment("authorized", 1290, 0)))]);
    let state = Adapter::new(&s, &script).retrieve("pay_1").unwrap();
    assert_eq!(state.status, Status::Held);
    assert_eq!(state.hold_key.as_deref(), Some("job_1_hold"));
}

#[test]
fn a_card_form_uses_the_customer_the_host_kept() {
    let s = settings();
    let session = json!({"id": "cs_1", "client_secret": "cs_1_secret"});
    let script = Script::new(vec![Ok((200, session))]);
    let form = Adapter::new(&s, &script)
        .setup_card_form(&CardFormRequest {
            customer_id: Some("cus_1".into()),
            ..card_form()
        })
        .unwrap();
    assert_eq!(form.customer_id, "cus_1");
    let document: Value = serde_json::from_str(&form.document).unwrap();
    assert_eq!(document, json!({"client_secret": "cs_1_secret"}));
    assert_eq!(
        script.sent(0).url,
        "https://api.example-pay.test/v1/card_sessions"
    );
}

#[test]
fn a_new_customer_is_given_the_merchant_s_contact_email() {
    let s = settings();
    let script = Script::new(vec![
        Ok((200, json!({"id": "cus_1"}))),
        Ok((200, json!({"id": "cs_1", "client_secret": "cs_1_secret"}))),
    ]);
    let form = Adapter::new(&s, &script)
        .setup_card_form(&CardFormRequest {
            contact_email: Some("billing@m-1.example".into()),
            ..card_form()
        })
        .unwrap();
    assert_eq!(form.customer_id, "cus_1");
    assert_eq!(
        script.body(0),
        json!({"reference": "m_1", "email": "billing@m-1.example"})
    );
}

/// Merchant `m_1`'s first card form, without a contact email.
fn card_form() -> CardFormRequest {
    CardFormRequest {
        merchant: "m_1".into(),
        customer_id: None,
        currency: "EUR".into(),
        country: "DE".into(),
        locale: "de-DE".into(),
        return_url: "https://merchant.example/cards".into(),
        contact_email: None,
    }
}

#[test]
fn credentials_and_invalid_requests_are_refused_for_good() {
    let s = settings();
    let hold = |answer| {
        let script = Script::new(vec![answer]);
        Adapter::new(&s, &script).authorise(1290, "EUR", "card_1", "cus_1", "job_1_hold")
    };
    for (status, code) in [
        (401, "invalid_api_key"),
        (403, "forbidden"),
        (400, "invalid_request"),
        (422, "invalid_currency"),
    ] {
        assert!(
            matches!(
                hold(Ok((status, json!({"error": {"code": code}})))),
                Outcome::Refused(m) if m.contains(code)
            ),
            "{status}"
        );
    }
}

#[test]
fn a_capture_or_refund_accepted_for_later_is_pending_by_its_reference() {
    let s = settings();
    let script = Script::new(vec![Ok((202, payment("processing", 1290, 1290)))]);
    assert_eq!(
        Adapter::new(&s, &script).capture("pay_1", 1290, "EUR", "charge_1_capture"),
        Outcome::Pending("pay_1".into())
    );
    let refund = json!({"id": "re_1", "payment": "pay_1", "amount": 500, "currency": "eur",
        "status": "pending"});
    let script = Script::new(vec![Ok((202, refund))]);
    assert_eq!(
        Adapter::new(&s, &script).refund("pay_1", 500, "EUR", "charge_1_refund_1"),
        Outcome::Pending("re_1".into())
    );
}

/// `body` as the example provider signs it with the test settings' secret.
fn signed(body: &str) -> Vec<(String, String)> {
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(b"whsec_test").unwrap();
    mac.update(body.as_bytes());
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| alloc::format!("{b:02x}"))
        .collect();
    vec![("example-pay-signature".into(), hex)]
}

#[test]
fn signed_notifications_are_read_as_the_contract_s_events() {
    let s = settings();
    let captured = r#"{"id":"evt_1","type":"payment.captured","data":{"object":{"id":"pay_1","status":"captured","amount":1290,"amount_captured":1290,"currency":"eur"}}}"#;
    let events = crate::notifications::verify(&s, &signed(captured), captured.as_bytes()).unwrap();
    assert_eq!(
        events,
        vec![Event {
            id: "evt_1".into(),
            reference: "pay_1".into(),
            kind: EventKind::Captured,
            amount_minor: Some(1290),
            currency: Some("EUR".into()),
            request_key: None,
        }]
    );
    let failed = r#"{"id":"evt_2","type":"refund.failed","data":{"object":{"id":"re_1","payment":"pay_1","amount":400,"currency":"EUR","status":"failed","failure_reason":"the account is closed"}}}"#;
    let events = crate::notifications::verify(&s, &signed(failed), failed.as_bytes()).unwrap();
    assert_eq!(events[0].reference, "re_1");
    assert_eq!(
        events[0].kind,
        EventKind::RefundFailed("the account is closed".into())
    );
    // A type the adapter does not read is no event.
    let other = r#"{"id":"evt_3","type":"customer.updated","data":{"object":{"id":"cus_1"}}}"#;
    assert_eq!(
        crate::notifications::verify(&s, &signed(other), other.as_bytes()),
        Ok(vec![])
    );
}

#[test]
fn a_notification_forged_unsigned_or_without_a_secret_is_refused() {
    let s = settings();
    let body = r#"{"id":"evt_1","type":"payment.captured","data":{"object":{"id":"pay_1"}}}"#;
    let forged = body.replace("pay_1", "pay_2");
    let refused = crate::notifications::verify(&s, &signed(body), forged.as_bytes());
    assert!(refused.unwrap_err().contains("does not verify"));
    let unsigned = crate::notifications::verify(&s, &[], body.as_bytes());
    assert!(unsigned.unwrap_err().contains("example-pay-signature"));
    let garbled = vec![("example-pay-signature".into(), "not hex".into())];
    assert!(crate::notifications::verify(&s, &garbled, body.as_bytes()).is_err());
    let without = Settings {
        webhook_secret: None,
        ..settings()
    };
    let refused = crate::notifications::verify(&without, &signed(body), body.as_bytes());
    assert!(refused.unwrap_err().contains("webhook_secret"));
}
