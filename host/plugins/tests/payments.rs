//! The sandbox adapter's card table, and the outbound HTTP guard, through
//! the component boundary.

mod common;

use std::collections::BTreeMap;

use courier_plugins::defaults::SANDBOX_PAYMENTS;
use courier_plugins::{
    AdapterConfig, AttachRefusal, CaptureRequest, Decline, FinishReason, HoldRequest, Outcome,
    PaymentAdapter, RefundRequest, VoidRequest,
};

use common::{HTTP_PROBE, engine};

fn sandbox() -> PaymentAdapter {
    PaymentAdapter::load(&engine(), SANDBOX_PAYMENTS, AdapterConfig::default()).unwrap()
}

fn hold(card: &str, key: &str) -> HoldRequest {
    HoldRequest {
        amount_minor: 2_003,
        currency: "GBP".into(),
        card_ref: format!("pm_sandbox_{card}"),
        customer_id: "cus_1".into(),
        idempotency_key: key.into(),
    }
}

fn declined(code: &str, finished: Option<FinishReason>) -> Outcome {
    Outcome::Declined(Decline {
        code: code.into(),
        card_finished: finished,
    })
}

#[test]
fn sandbox_needs_no_network() {
    let a = sandbox();
    assert_eq!(a.info().name, "sandbox");
    assert!(a.info().allowed_hosts.is_empty());
}

#[test]
fn every_designated_card_attaches() {
    let a = sandbox();
    let form = a.setup_card_form("merchant_1").unwrap().unwrap();
    assert!(form.customer_id.starts_with("cus_sandbox_"));
    for number in [
        "4242424242424242",
        "4000000000000002",
        "4000000000009995",
        "4000000000000069",
        "4000000000009987",
        "4000000000000119",
    ] {
        let card = a
            .attach_card(&form.customer_id, &format!("pm_sandbox_{number}"))
            .unwrap()
            .unwrap();
        assert_eq!(card.brand, "visa");
        assert_eq!(card.last_four, &number[12..]);
        assert_eq!((card.expiry_month, card.expiry_year), (12, 2034));
    }
    for bad in [
        "pm_sandbox_4111111111111111",
        "4242424242424242",
        "pm_other",
    ] {
        let refusal = a.attach_card("cus_1", bad).unwrap().unwrap_err();
        assert!(
            matches!(refusal, AttachRefusal::UnknownReference(_)),
            "{bad}"
        );
    }
}

#[test]
fn authorise_follows_the_sandbox_table() {
    let a = sandbox();
    assert!(matches!(
        a.authorise(&hold("4242424242424242", "k")).unwrap(),
        Outcome::Approved(_)
    ));
    assert_eq!(
        a.authorise(&hold("4000000000000002", "k")).unwrap(),
        declined("card_declined", None)
    );
    assert_eq!(
        a.authorise(&hold("4000000000009995", "k")).unwrap(),
        declined("insufficient_funds", None)
    );
    assert_eq!(
        a.authorise(&hold("4000000000000069", "k")).unwrap(),
        declined("expired_card", Some(FinishReason::Expired))
    );
    assert_eq!(
        a.authorise(&hold("4000000000009987", "k")).unwrap(),
        declined("lost_card", Some(FinishReason::Lost))
    );
    assert!(matches!(
        a.authorise(&hold("4000000000000119", "k")).unwrap(),
        Outcome::Unreachable(_)
    ));
}

#[test]
fn a_payment_runs_its_course_and_retries_are_idempotent() {
    let a = sandbox();
    let Outcome::Approved(auth) = a.authorise(&hold("4242424242424242", "job-1")).unwrap() else {
        panic!("hold refused")
    };
    assert_eq!(
        a.authorise(&hold("4242424242424242", "job-1")).unwrap(),
        Outcome::Approved(auth.clone())
    );
    let capture = CaptureRequest {
        authorisation: auth.clone(),
        amount_minor: 2_003,
        currency: "GBP".into(),
        idempotency_key: "job-1-capture".into(),
    };
    let Outcome::Approved(payment) = a.capture(&capture).unwrap() else {
        panic!("capture refused")
    };
    let too_much = CaptureRequest {
        amount_minor: 2_004,
        ..capture
    };
    assert_eq!(
        a.capture(&too_much).unwrap(),
        declined("amount_too_large", None)
    );
    let refund = RefundRequest {
        payment,
        amount_minor: 500,
        currency: "GBP".into(),
        idempotency_key: "job-1-refund".into(),
    };
    assert!(matches!(a.refund(&refund).unwrap(), Outcome::Approved(_)));
    let void = VoidRequest {
        authorisation: auth,
        idempotency_key: "job-1-void".into(),
    };
    assert!(matches!(a.void(&void).unwrap(), Outcome::Approved(_)));
}

fn probe() -> PaymentAdapter {
    let config = AdapterConfig::new(BTreeMap::from([(
        "api_key".to_owned(),
        "sk_test_1".to_owned(),
    )]));
    PaymentAdapter::load(&engine(), HTTP_PROBE, config).unwrap()
}

/// What the probe got when it asked the host to fetch `url`.
fn fetch(a: &PaymentAdapter, url: &str) -> String {
    let mut h = hold("", "k");
    h.card_ref = url.into();
    match a.authorise(&h).unwrap() {
        Outcome::Unreachable(m) => m,
        other => panic!("{url}: expected a refusal, got {other:?}"),
    }
}

#[test]
fn outbound_http_is_held_to_the_declared_hosts() {
    let a = probe();
    assert_eq!(a.info().allowed_hosts, ["allowed.example", "localhost"]);
    let m = fetch(&a, "https://elsewhere.example/v1/charges");
    assert!(
        m.starts_with("Error::Forbidden") && m.contains("not in the adapter's allowed hosts"),
        "{m}"
    );
    let m = fetch(&a, "http://allowed.example/v1/charges");
    assert!(
        m.starts_with("Error::Forbidden") && m.contains("https"),
        "{m}"
    );
}

#[test]
fn outbound_http_never_reaches_private_addresses() {
    // `localhost` is on the probe's list by name; its address is loopback.
    let m = fetch(&probe(), "https://localhost:8443/v1/charges");
    assert!(
        m.starts_with("Error::Forbidden") && m.contains("not a public address"),
        "{m}"
    );
}

#[test]
fn config_is_served_to_the_adapter() {
    let a = probe();
    assert_eq!(
        a.setup_card_form("api_key").unwrap().unwrap().client_secret,
        "sk_test_1"
    );
    assert!(a.setup_card_form("missing").unwrap().is_err());
}
