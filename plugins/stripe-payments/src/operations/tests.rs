use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;

use super::*;
use adapter_kit::{Method, Request, Response};

/// Answers requests from a list, in order, and keeps what was sent.
struct Script {
    answers: RefCell<Vec<Result<(u16, &'static str), &'static str>>>,
    sent: RefCell<Vec<Request>>,
}

impl Script {
    fn new(answers: &[Result<(u16, &'static str), &'static str>]) -> Self {
        Script {
            answers: RefCell::new(answers.iter().rev().cloned().collect()),
            sent: RefCell::new(Vec::new()),
        }
    }

    fn body(&self, n: usize) -> String {
        String::from_utf8(self.sent.borrow()[n].body.clone()).unwrap()
    }

    fn header(&self, n: usize, name: &str) -> Option<String> {
        self.sent.borrow()[n]
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
                body: body.as_bytes().to_vec(),
            }),
            Err(e) => Err(e.into()),
        }
    }
}

fn settings() -> Settings {
    Settings {
        secret_key: "sk_test_123".into(),
        api_base: "https://api.stripe.com".into(),
        account: Some("acct_9".into()),
        api_version: None,
        publishable_key: None,
        js_url: crate::stripe::DEFAULT_JS_URL.into(),
    }
}

const HELD: &str = r#"{"id":"pi_1","object":"payment_intent","status":"requires_capture","amount":1250,"currency":"chf"}"#;

#[test]
fn a_hold_is_a_manual_capture_payment_intent_confirmed_off_session() {
    let script = Script::new(&[Ok((200, HELD))]);
    let s = settings();
    let outcome = Adapter::new(&s, &script).authorise(1250, "CHF", "pm_card", "cus_1", "key-1");
    assert_eq!(outcome, Outcome::Approved("pi_1".into()));
    let sent = &script.sent.borrow()[0];
    assert_eq!(sent.method, Method::Post);
    assert_eq!(sent.url, "https://api.stripe.com/v1/payment_intents");
    assert_eq!(
        script.body(0),
        "amount=1250&currency=chf&customer=cus_1&payment_method=pm_card&payment_method_types%5B%5D=card&capture_method=manual&confirm=true&off_session=true&metadata%5Bcourier_hold_key%5D=key-1"
    );
    assert_eq!(
        script.header(0, "idempotency-key").as_deref(),
        Some("key-1")
    );
    assert_eq!(
        script.header(0, "authorization").as_deref(),
        Some("Bearer sk_test_123")
    );
    assert_eq!(
        script.header(0, "stripe-account").as_deref(),
        Some("acct_9")
    );
}

#[test]
fn declines_carry_the_decline_code_and_finish_cards_that_are_finished() {
    let cases = [
        (
            r#"{"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds"}}"#,
            "insufficient_funds",
            None,
        ),
        (
            r#"{"error":{"type":"card_error","code":"expired_card","decline_code":"expired_card"}}"#,
            "expired_card",
            Some(Finished::Expired),
        ),
        (
            r#"{"error":{"type":"card_error","code":"card_declined","decline_code":"stolen_card"}}"#,
            "stolen_card",
            Some(Finished::Lost),
        ),
        (
            r#"{"error":{"type":"card_error","code":"incorrect_cvc"}}"#,
            "incorrect_cvc",
            None,
        ),
    ];
    for (body, code, finished) in cases {
        let script = Script::new(&[Ok((402, body))]);
        let s = settings();
        let outcome = Adapter::new(&s, &script).authorise(1250, "chf", "pm_x", "cus_1", "k");
        assert_eq!(
            outcome,
            Outcome::Declined(Decline {
                code: code.into(),
                finished
            }),
            "{body}"
        );
    }
}

#[test]
fn no_usable_answer_is_unreachable_never_approved() {
    for answer in [
        Err("timed out"),
        Ok((500, r#"{"error":{"type":"api_error"}}"#)),
        Ok((
            429,
            r#"{"error":{"type":"invalid_request_error","code":"rate_limit"}}"#,
        )),
        Ok((200, "{not json")),
        Ok((
            200,
            r#"{"status":"requires_capture","amount":1250,"currency":"chf"}"#,
        )),
    ] {
        let script = Script::new(&[answer]);
        let s = settings();
        let outcome = Adapter::new(&s, &script).authorise(1250, "chf", "pm_x", "cus_1", "k");
        assert!(
            matches!(outcome, Outcome::Unreachable(_)),
            "{answer:?}: {outcome:?}"
        );
    }
}

#[test]
fn a_hold_for_another_amount_or_currency_is_cancelled_and_not_approved() {
    let wrong_amount =
        r#"{"id":"pi_2","status":"requires_capture","amount":9999,"currency":"chf"}"#;
    let cancelled = r#"{"id":"pi_2","status":"canceled","amount":9999,"currency":"chf"}"#;
    let script = Script::new(&[Ok((200, wrong_amount)), Ok((200, cancelled))]);
    let s = settings();
    let outcome = Adapter::new(&s, &script).authorise(1250, "chf", "pm_x", "cus_1", "k");
    assert!(
        matches!(&outcome, Outcome::Unreachable(m) if m.contains("amount") && m.contains("cancelled")),
        "{outcome:?}"
    );
    assert_eq!(
        script.sent.borrow()[1].url,
        "https://api.stripe.com/v1/payment_intents/pi_2/cancel"
    );
    assert_eq!(
        script.header(1, "idempotency-key").as_deref(),
        Some("k-mismatch")
    );

    let wrong_currency =
        r#"{"id":"pi_3","status":"requires_capture","amount":1250,"currency":"eur"}"#;
    let script = Script::new(&[
        Ok((200, wrong_currency)),
        Ok((200, r#"{"status":"canceled"}"#)),
    ]);
    let outcome = Adapter::new(&s, &script).authorise(1250, "chf", "pm_x", "cus_1", "k");
    assert!(
        matches!(&outcome, Outcome::Unreachable(m) if m.contains("currency")),
        "{outcome:?}"
    );
}

#[test]
fn capture_void_and_refund() {
    let s = settings();
    let captured = r#"{"id":"pi_1","status":"succeeded","amount":1250,"amount_received":1250,"currency":"chf"}"#;
    let script = Script::new(&[Ok((200, captured))]);
    assert_eq!(
        Adapter::new(&s, &script).capture("pi_1", 1250, "CHF", "c-1"),
        Outcome::Approved("pi_1".into())
    );
    assert_eq!(
        script.sent.borrow()[0].url,
        "https://api.stripe.com/v1/payment_intents/pi_1/capture"
    );
    assert_eq!(script.body(0), "amount_to_capture=1250");

    let script = Script::new(&[Ok((200, r#"{"id":"pi_1","status":"canceled"}"#))]);
    assert_eq!(
        Adapter::new(&s, &script).void("pi_1", "v-1"),
        Outcome::Approved("pi_1".into())
    );
    assert_eq!(script.body(0), "cancellation_reason=abandoned");

    let refunded = r#"{"id":"re_1","status":"succeeded","amount":500,"currency":"chf"}"#;
    let script = Script::new(&[Ok((200, refunded))]);
    assert_eq!(
        Adapter::new(&s, &script).refund("pi_1", 500, "chf", "r-1"),
        Outcome::Approved("re_1".into())
    );
    assert_eq!(script.body(0), "payment_intent=pi_1&amount=500");
    let failed = r#"{"id":"re_2","status":"failed","failure_reason":"expired_or_canceled_card","amount":500,"currency":"chf"}"#;
    let script = Script::new(&[Ok((200, failed))]);
    assert!(matches!(
        Adapter::new(&s, &script).refund("pi_1", 500, "chf", "r-2"),
        Outcome::Declined(Decline { ref code, .. }) if code == "expired_or_canceled_card"
    ));
}

#[test]
fn references_that_are_not_stripe_ids_never_reach_a_path() {
    let s = settings();
    let script = Script::new(&[]);
    let adapter = Adapter::new(&s, &script);
    assert!(matches!(
        adapter.capture("../v1/refunds", 1, "chf", "k"),
        Outcome::Declined(_)
    ));
    assert!(matches!(
        adapter.attach_card("cus_1", "pm_1/attach"),
        Err(Refusal::UnknownReference(_))
    ));
    assert!(script.sent.borrow().is_empty());
}

#[test]
fn attaching_reads_the_card_and_attaches_it_when_unattached() {
    let s = settings();
    let unattached = r#"{"id":"pm_1","customer":null,"card":{"brand":"visa","last4":"4242","exp_month":12,"exp_year":2034}}"#;
    let attached = r#"{"id":"pm_1","customer":"cus_1","card":{"brand":"visa","last4":"4242","exp_month":12,"exp_year":2034}}"#;
    let script = Script::new(&[Ok((200, unattached)), Ok((200, attached))]);
    let card = Adapter::new(&s, &script)
        .attach_card("cus_1", "pm_1")
        .unwrap();
    assert_eq!(card.last_four, "4242");
    assert_eq!((card.expiry_month, card.expiry_year), (12, 2034));
    assert_eq!(
        script.sent.borrow()[1].url,
        "https://api.stripe.com/v1/payment_methods/pm_1/attach"
    );
    assert_eq!(script.body(1), "customer=cus_1");

    let other = r#"{"id":"pm_1","customer":"cus_2","card":{"brand":"visa","last4":"4242","exp_month":12,"exp_year":2034}}"#;
    let script = Script::new(&[Ok((200, other))]);
    assert!(matches!(
        Adapter::new(&s, &script).attach_card("cus_1", "pm_1"),
        Err(Refusal::UnknownReference(_))
    ));

    let missing = r#"{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such PaymentMethod: 'pm_9'"}}"#;
    let script = Script::new(&[Ok((404, missing))]);
    assert!(matches!(
        Adapter::new(&s, &script).attach_card("cus_1", "pm_9"),
        Err(Refusal::UnknownReference(_))
    ));

    let script = Script::new(&[Ok((
        200,
        r#"{"id":"pm_1","customer":"cus_1","card":{"brand":"visa","last4":"42","exp_month":13,"exp_year":2034}}"#,
    ))]);
    assert!(matches!(
        Adapter::new(&s, &script).attach_card("cus_1", "pm_1"),
        Err(Refusal::Unreachable(_))
    ));
}

#[test]
fn a_setup_intent_stands_for_the_card_it_saved() {
    let s = settings();
    let saved = r#"{"id":"seti_1","object":"setup_intent","customer":"cus_1","status":"succeeded","payment_method":"pm_7"}"#;
    let card = r#"{"id":"pm_7","customer":"cus_1","card":{"brand":"visa","last4":"3155","exp_month":4,"exp_year":2031}}"#;
    let script = Script::new(&[Ok((200, saved)), Ok((200, card))]);
    let attached = Adapter::new(&s, &script)
        .attach_card("cus_1", "seti_1")
        .unwrap();
    assert_eq!(attached.reference, "pm_7");
    assert_eq!(attached.last_four, "3155");
    let sent = script.sent.borrow();
    assert_eq!(
        sent[0].url,
        "https://api.stripe.com/v1/setup_intents/seti_1"
    );
    assert_eq!(
        sent[1].url,
        "https://api.stripe.com/v1/payment_methods/pm_7"
    );
    drop(sent);

    // Another customer's, one still waiting for the card holder, and one Stripe does not know
    // are all unknown here; nothing is read behind them.
    for body in [
        r#"{"id":"seti_1","customer":"cus_2","status":"succeeded","payment_method":"pm_7"}"#,
        r#"{"id":"seti_1","customer":"cus_1","status":"requires_action","payment_method":"pm_7"}"#,
    ] {
        let script = Script::new(&[Ok((200, body))]);
        assert!(matches!(
            Adapter::new(&s, &script).attach_card("cus_1", "seti_1"),
            Err(Refusal::UnknownReference(_))
        ));
        assert_eq!(script.sent.borrow().len(), 1);
    }
    let missing = r#"{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such setupintent: 'seti_9'"}}"#;
    let script = Script::new(&[Ok((404, missing))]);
    assert!(matches!(
        Adapter::new(&s, &script).attach_card("cus_1", "seti_9"),
        Err(Refusal::UnknownReference(_))
    ));
}

#[test]
fn a_card_form_is_a_customer_and_a_setup_intent() {
    let s = settings();
    let script = Script::new(&[
        Ok((200, r#"{"object":"search_result","data":[]}"#)),
        Ok((200, r#"{"id":"cus_1","created":1700000000}"#)),
        Ok((
            200,
            r#"{"id":"seti_1","client_secret":"seti_1_secret_x","status":"requires_payment_method"}"#,
        )),
    ]);
    let form = Adapter::new(&s, &script)
        .setup_card_form("m-1", None, Some("billing@m-1.example"))
        .unwrap();
    assert_eq!(form.customer_id, "cus_1");
    assert_eq!(form.client_secret, "seti_1_secret_x");
    assert_eq!(
        script.body(1),
        "metadata%5Bcourier_merchant%5D=m-1&email=billing%40m-1.example"
    );
    assert_eq!(
        script.sent.borrow()[0].url,
        "https://api.stripe.com/v1/customers/search?query=metadata%5B%27courier_merchant%27%5D%3A%27m-1%27"
    );
    assert_eq!(
        script.header(1, "idempotency-key").as_deref(),
        Some("courier-customer-m-1")
    );
    assert_eq!(
        script.body(2),
        "customer=cus_1&usage=off_session&payment_method_types%5B%5D=card"
    );

    // Later forms (past the key's 24 hours) find the merchant's first customer.
    let script = Script::new(&[
        Ok((
            200,
            r#"{"object":"search_result","data":[
                {"id":"cus_9","created":1800000000,"metadata":{"courier_merchant":"m-1"}},
                {"id":"cus_1","created":1700000000,"metadata":{"courier_merchant":"m-1"}}]}"#,
        )),
        Ok((200, r#"{"id":"seti_2","client_secret":"seti_2_secret_y"}"#)),
    ]);
    let form = Adapter::new(&s, &script)
        .setup_card_form("m-1", None, None)
        .unwrap();
    assert_eq!(form.customer_id, "cus_1");
    assert_eq!(script.sent.borrow().len(), 2, "no new customer");

    // The customer the host kept is used as it is: no search, no new customer.
    let script = Script::new(&[Ok((
        200,
        r#"{"id":"seti_3","client_secret":"seti_3_secret_z"}"#,
    ))]);
    let form = Adapter::new(&s, &script)
        .setup_card_form("m-1", Some("cus_1"), None)
        .unwrap();
    assert_eq!(form.customer_id, "cus_1");
    assert_eq!(script.sent.borrow().len(), 1);
    assert!(script.sent.borrow()[0].url.ends_with("/v1/setup_intents"));
}

#[test]
fn a_key_stripe_does_not_accept_is_refused_for_good_not_unreachable() {
    let s = settings();
    for (status, body) in [
        (
            401,
            r#"{"error":{"type":"invalid_request_error","message":"Invalid API Key provided"}}"#,
        ),
        (
            403,
            r#"{"error":{"type":"invalid_request_error","message":"The key lacks a permission"}}"#,
        ),
        (
            400,
            r#"{"error":{"type":"invalid_request_error","code":"amount_too_small"}}"#,
        ),
    ] {
        let script = Script::new(&[Ok((status, body))]);
        let outcome = Adapter::new(&s, &script).authorise(1250, "chf", "pm_x", "cus_1", "k");
        assert!(
            matches!(outcome, Outcome::Refused(_)),
            "{status}: {outcome:?}"
        );
    }
    // A missing PaymentIntent is not taken for a refusal of the account.
    let script = Script::new(&[Ok((
        404,
        r#"{"error":{"type":"invalid_request_error","code":"resource_missing"}}"#,
    ))]);
    let outcome = Adapter::new(&s, &script).capture("pi_1", 1250, "chf", "k");
    assert!(matches!(outcome, Outcome::Unreachable(_)), "{outcome:?}");
}

#[test]
fn a_key_still_in_flight_is_in_flight_not_unreachable() {
    let script = Script::new(&[Ok((
        409,
        r#"{"error":{"type":"invalid_request_error","code":"idempotency_key_in_use"}}"#,
    ))]);
    let s = settings();
    let outcome = Adapter::new(&s, &script).authorise(1250, "chf", "pm_x", "cus_1", "k");
    assert!(matches!(outcome, Outcome::InFlight(_)), "{outcome:?}");
}

#[test]
fn a_payment_is_read_back_with_what_its_charge_gave_back() {
    let refunded = r#"{"id":"pi_7","object":"payment_intent","status":"succeeded","amount":1250,
        "amount_received":1250,"currency":"chf","created":1790000000,
        "metadata":{"courier_hold_key":"job_1_hold"},
        "latest_charge":{"id":"ch_1","object":"charge","amount_refunded":300}}"#;
    let script = Script::new(&[Ok((200, refunded))]);
    let s = settings();
    let state = Adapter::new(&s, &script).retrieve("pi_7").unwrap();
    assert_eq!(
        script.sent.borrow()[0].url,
        "https://api.stripe.com/v1/payment_intents/pi_7?expand%5B%5D=latest_charge"
    );
    assert_eq!(script.sent.borrow()[0].method, Method::Get);
    assert_eq!(
        state,
        PaymentState {
            reference: "pi_7".into(),
            hold_key: Some("job_1_hold".into()),
            status: Status::Captured,
            amount_minor: 1250,
            captured_minor: 1250,
            refunded_minor: 300,
            currency: "CHF".into(),
            created_at: 1_790_000_000,
        }
    );
    let missing = Script::new(&[Ok((
        404,
        r#"{"error":{"type":"invalid_request_error","code":"resource_missing"}}"#,
    ))]);
    assert_eq!(
        Adapter::new(&s, &missing).retrieve("pi_gone"),
        Err(Lookup::NotFound)
    );
    let down = Script::new(&[Ok((503, r#"{"error":{"type":"api_error"}}"#))]);
    assert!(matches!(
        Adapter::new(&s, &down).retrieve("pi_7"),
        Err(Lookup::Unreachable(_))
    ));
    // Not a Stripe id: never sent.
    let none = Script::new(&[]);
    assert_eq!(
        Adapter::new(&s, &none).retrieve("pi/../x"),
        Err(Lookup::NotFound)
    );
}

#[test]
fn payments_are_listed_a_page_at_a_time() {
    let page = r#"{"object":"list","has_more":true,"data":[
        {"id":"pi_9","status":"requires_capture","amount":500,"currency":"usd","created":5},
        {"id":"pi_8","status":"canceled","amount":700,"currency":"usd","created":4}]}"#;
    let last = r#"{"object":"list","has_more":false,"data":[
        {"id":"pi_3","status":"requires_payment_method","amount":100,"currency":"usd","created":3}]}"#;
    let script = Script::new(&[Ok((200, page)), Ok((200, last))]);
    let s = settings();
    let adapter = Adapter::new(&s, &script);
    let first = adapter.list_payments(3, None).unwrap();
    assert_eq!(
        first
            .payments
            .iter()
            .map(|p| (p.reference.as_str(), p.status))
            .collect::<Vec<_>>(),
        [("pi_9", Status::Held), ("pi_8", Status::Released)]
    );
    assert_eq!(first.next.as_deref(), Some("pi_8"));
    let second = adapter.list_payments(3, first.next.as_deref()).unwrap();
    assert_eq!(second.payments[0].status, Status::Refused);
    assert_eq!(second.next, None);
    assert_eq!(
        script.sent.borrow()[1].url,
        "https://api.stripe.com/v1/payment_intents?created%5Bgte%5D=3&limit=100&expand%5B%5D=data.latest_charge&starting_after=pi_8"
    );
}
