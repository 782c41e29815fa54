//! The sandbox adapter's card table, and the outbound HTTP guard, through
//! the component boundary.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use courier_plugins::defaults::SANDBOX_PAYMENTS;
use courier_plugins::{
    AdapterConfig, AttachRefusal, CaptureRequest, CardFormRequest, Decline, EngineConfig,
    EventKind, EventRefusal, FinishReason, HoldRequest, Limits, LogLevel, Outcome, PaymentAdapter,
    PluginEngine, PluginError, RefundRequest, VoidRequest,
};

use common::{HTTP_PROBE, engine};

async fn sandbox() -> PaymentAdapter {
    PaymentAdapter::load(&engine(), SANDBOX_PAYMENTS, AdapterConfig::default())
        .await
        .unwrap()
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

fn form(merchant: &str) -> CardFormRequest {
    CardFormRequest {
        merchant: merchant.into(),
        customer_id: None,
        currency: "GBP".into(),
        country: "GB".into(),
        locale: "en-GB".into(),
        return_url: "https://merchant.example/cards".into(),
        contact_email: None,
    }
}

fn declined(code: &str, finished: Option<FinishReason>) -> Outcome {
    Outcome::Declined(Decline {
        code: code.into(),
        card_finished: finished,
    })
}

#[tokio::test]
async fn sandbox_needs_no_network() {
    let a = sandbox().await;
    assert_eq!(a.info().name, "sandbox");
    assert!(a.info().allowed_hosts.is_empty());
}

#[tokio::test]
async fn every_designated_card_attaches() {
    let a = sandbox().await;
    let form = a
        .setup_card_form(&form("merchant_1"))
        .await
        .unwrap()
        .unwrap();
    assert!(form.customer_id.starts_with("cus_sandbox_"));
    let document: serde_json::Value = serde_json::from_str(&form.document).unwrap();
    assert!(
        document["client_secret"]
            .as_str()
            .unwrap()
            .starts_with("seti_sandbox_")
    );
    for number in [
        "4242424242424242",
        "4000000000000002",
        "4000000000009995",
        "4000000000000069",
        "4000000000009987",
        "4000000000000119",
    ] {
        let reference = format!("pm_sandbox_{number}");
        let attached = a
            .attach_card(&form.customer_id, &reference)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(attached.reference, reference);
        let card = attached.card;
        assert_eq!(card.brand, "visa");
        assert_eq!(card.last_four, &number[12..]);
        assert_eq!((card.expiry_month, card.expiry_year), (12, 2034));
    }
    for bad in [
        "pm_sandbox_4111111111111111",
        "4242424242424242",
        "pm_other",
    ] {
        let refusal = a.attach_card("cus_1", bad).await.unwrap().unwrap_err();
        assert!(
            matches!(refusal, AttachRefusal::UnknownReference(_)),
            "{bad}"
        );
    }
}

#[tokio::test]
async fn authorise_follows_the_sandbox_table() {
    let a = sandbox().await;
    assert!(matches!(
        a.authorise(&hold("4242424242424242", "k")).await.unwrap(),
        Outcome::Approved(_)
    ));
    assert_eq!(
        a.authorise(&hold("4000000000000002", "k")).await.unwrap(),
        declined("card_declined", None)
    );
    assert_eq!(
        a.authorise(&hold("4000000000009995", "k")).await.unwrap(),
        declined("insufficient_funds", None)
    );
    assert_eq!(
        a.authorise(&hold("4000000000000069", "k")).await.unwrap(),
        declined("expired_card", Some(FinishReason::Expired))
    );
    assert_eq!(
        a.authorise(&hold("4000000000009987", "k")).await.unwrap(),
        declined("lost_card", Some(FinishReason::Lost))
    );
    assert!(matches!(
        a.authorise(&hold("4000000000000119", "k")).await.unwrap(),
        Outcome::Unreachable(_)
    ));
}

#[tokio::test]
async fn a_payment_runs_its_course_and_retries_are_idempotent() {
    let a = sandbox().await;
    let Outcome::Approved(auth) = a
        .authorise(&hold("4242424242424242", "job-1"))
        .await
        .unwrap()
    else {
        panic!("hold refused")
    };
    assert_eq!(
        a.authorise(&hold("4242424242424242", "job-1"))
            .await
            .unwrap(),
        Outcome::Approved(auth.clone())
    );
    let capture = CaptureRequest {
        authorisation: auth.clone(),
        amount_minor: 2_003,
        currency: "GBP".into(),
        idempotency_key: "job-1-capture".into(),
    };
    let Outcome::Approved(payment) = a.capture(&capture).await.unwrap() else {
        panic!("capture refused")
    };
    let too_much = CaptureRequest {
        amount_minor: 2_004,
        ..capture
    };
    assert_eq!(
        a.capture(&too_much).await.unwrap(),
        declined("amount_too_large", None)
    );
    let refund = RefundRequest {
        payment,
        amount_minor: 500,
        currency: "GBP".into(),
        idempotency_key: "job-1-refund".into(),
    };
    assert!(matches!(
        a.refund(&refund).await.unwrap(),
        Outcome::Approved(_)
    ));
    let void = VoidRequest {
        authorisation: auth,
        idempotency_key: "job-1-void".into(),
    };
    assert!(matches!(a.void(&void).await.unwrap(), Outcome::Approved(_)));
}

fn probe_config() -> AdapterConfig {
    AdapterConfig::new(BTreeMap::from([(
        "api_key".to_owned(),
        "sk_test_1".to_owned(),
    )]))
}

async fn probe() -> PaymentAdapter {
    PaymentAdapter::load(&engine(), HTTP_PROBE, probe_config())
        .await
        .unwrap()
}

/// What the probe got when it asked the host to fetch `url`.
async fn fetch(a: &PaymentAdapter, url: &str) -> String {
    let mut h = hold("", "k");
    h.card_ref = url.into();
    match a.authorise(&h).await.unwrap() {
        Outcome::Unreachable(m) => m,
        other => panic!("{url}: expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn outbound_http_is_held_to_the_declared_hosts() {
    let a = probe().await;
    assert_eq!(a.info().allowed_hosts, ["allowed.example", "localhost"]);
    let m = fetch(&a, "https://elsewhere.example/v1/charges").await;
    assert!(
        m.starts_with("Error::Forbidden") && m.contains("not in the adapter's allowed hosts"),
        "{m}"
    );
    let m = fetch(&a, "http://allowed.example/v1/charges").await;
    assert!(
        m.starts_with("Error::Forbidden") && m.contains("https"),
        "{m}"
    );
}

#[tokio::test]
async fn outbound_http_never_reaches_private_addresses() {
    // `localhost` is on the probe's list by name; its address is loopback.
    let m = fetch(&probe().await, "https://localhost:8443/v1/charges").await;
    assert!(
        m.starts_with("Error::Forbidden") && m.contains("not a public address"),
        "{m}"
    );
}

#[tokio::test]
async fn config_is_served_to_the_adapter() {
    let a = probe().await;
    assert_eq!(
        a.setup_card_form(&form("api_key"))
            .await
            .unwrap()
            .unwrap()
            .document,
        r#"{"client_secret":"sk_test_1"}"#
    );
    assert!(a.setup_card_form(&form("missing")).await.unwrap().is_err());
}

/// The sandbox as built against 2.0.0, before 2.1.0 (kept as a fixture).
const SANDBOX_2_0: &[u8] =
    include_bytes!("../../../plugins/fixtures/payments-2.0/sandbox-payments.wasm");

#[tokio::test]
async fn a_component_built_against_2_0_loads_and_behaves_as_it_did() {
    let old = PaymentAdapter::load(&engine(), SANDBOX_2_0, AdapterConfig::default())
        .await
        .unwrap();
    let new = sandbox().await;
    assert_eq!(old.info().contract, "2.0.0");
    assert_eq!(new.info().contract, "2.3.0");
    assert_eq!(old.info().reference_pattern, None);
    // Its client secret is the card form's document; the customer is the same.
    let (old_form, new_form) = (
        old.setup_card_form(&form("merchant_1"))
            .await
            .unwrap()
            .unwrap(),
        new.setup_card_form(&form("merchant_1"))
            .await
            .unwrap()
            .unwrap(),
    );
    assert_eq!(old_form, new_form);
    // The reference it was given is the one kept.
    let reference = "pm_sandbox_4242424242424242";
    let attached = old.attach_card("cus_1", reference).await.unwrap().unwrap();
    assert_eq!(
        attached,
        new.attach_card("cus_1", reference).await.unwrap().unwrap()
    );
    // Every card of the table holds, captures and refunds as it did.
    for number in ["4242424242424242", "4000000000009995", "4000000000000069"] {
        let request = hold(number, "job-9");
        assert_eq!(
            old.authorise(&request).await.unwrap(),
            new.authorise(&request).await.unwrap()
        );
    }
    // It has no provider events.
    assert_eq!(
        old.verify_event(&[], b"").await.unwrap(),
        Err(EventRefusal::Unsupported)
    );
}

/// The sandbox and the Adyen adapter as built against 2.1.0, before 2.2.0, and against 2.2.0,
/// before 2.3.0 (kept as fixtures).
const SANDBOX_2_1: &[u8] =
    include_bytes!("../../../plugins/fixtures/payments-2.1/sandbox-payments.wasm");
const ADYEN_2_1: &[u8] =
    include_bytes!("../../../plugins/fixtures/payments-2.1/adyen-payments.wasm");
const SANDBOX_2_2: &[u8] =
    include_bytes!("../../../plugins/fixtures/payments-2.2/sandbox-payments.wasm");
const ADYEN_2_2: &[u8] =
    include_bytes!("../../../plugins/fixtures/payments-2.2/adyen-payments.wasm");

#[tokio::test]
async fn a_component_built_against_2_1_loads_and_behaves_as_it_did() {
    behaves_as_it_did(SANDBOX_2_1, ADYEN_2_1, "2.1.0").await;
}

#[tokio::test]
async fn a_component_built_against_2_2_loads_and_behaves_as_it_did() {
    behaves_as_it_did(SANDBOX_2_2, ADYEN_2_2, "2.2.0").await;
}

/// The sandbox and Adyen's adapter built against `version` load as that version and answer
/// as the sandbox of today does.
async fn behaves_as_it_did(sandbox_bytes: &[u8], adyen_bytes: &[u8], version: &str) {
    let old = PaymentAdapter::load(&engine(), sandbox_bytes, AdapterConfig::default())
        .await
        .unwrap();
    let new = sandbox().await;
    assert_eq!(old.info().contract, version);
    assert_eq!(new.info().contract, "2.3.0");
    assert_eq!(old.info().reference_pattern, new.info().reference_pattern);
    // Told the contact email or not, it draws the same form.
    let told = CardFormRequest {
        contact_email: Some("billing@merchant.example".into()),
        ..form("merchant_1")
    };
    assert_eq!(
        old.setup_card_form(&told).await.unwrap(),
        new.setup_card_form(&told).await.unwrap()
    );
    for number in ["4242424242424242", "4000000000009995", "4000000000000069"] {
        let request = hold(number, "job-9");
        assert_eq!(
            old.authorise(&request).await.unwrap(),
            new.authorise(&request).await.unwrap()
        );
    }
    // An adapter with provider events still verifies them: Adyen's refuses an unsigned
    // notification as it did.
    let adyen = PaymentAdapter::load(&engine(), adyen_bytes, adyen_config())
        .await
        .unwrap();
    assert_eq!(adyen.info().contract, version);
    assert!(matches!(
        adyen.verify_event(&[], b"{}").await.unwrap(),
        Err(EventRefusal::Unverified(_))
    ));
}

fn adyen_config() -> AdapterConfig {
    AdapterConfig::new(BTreeMap::from([
        ("api_key".to_owned(), "test_key".to_owned()),
        ("merchant_account".to_owned(), "CourierECOM".to_owned()),
        ("client_key".to_owned(), "test_CLIENTKEY".to_owned()),
        (
            "hmac_key".to_owned(),
            "00112233445566778899AABBCCDDEEFF".to_owned(),
        ),
    ]))
}

#[tokio::test]
async fn the_card_form_is_told_the_merchant_s_contact_email() {
    let probe = probe_with(&[("merchant_1", "sk_test_1")]).await;
    let told = CardFormRequest {
        contact_email: Some("billing@merchant.example".into()),
        ..form("merchant_1")
    };
    assert_eq!(
        probe
            .setup_card_form(&told)
            .await
            .unwrap()
            .unwrap()
            .document,
        r#"{"client_secret":"sk_test_1","contact_email":"billing@merchant.example"}"#
    );
    assert_eq!(
        probe
            .setup_card_form(&form("merchant_1"))
            .await
            .unwrap()
            .unwrap()
            .document,
        r#"{"client_secret":"sk_test_1"}"#
    );
}

async fn probe_with(settings: &[(&str, &str)]) -> PaymentAdapter {
    probe_on(&engine(), settings).await
}

async fn probe_on(engine: &PluginEngine, settings: &[(&str, &str)]) -> PaymentAdapter {
    let values = settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    PaymentAdapter::load_watched(engine, HTTP_PROBE, AdapterConfig::new(values))
        .await
        .unwrap()
}

#[tokio::test]
async fn an_adapter_s_reference_pattern_matches_whole_references_only() {
    let a = probe().await;
    assert_eq!(a.info().reference_pattern.as_deref(), Some("[0-9]{16}"));
    assert!(a.is_own_reference("4111111111111111"));
    assert!(
        !a.is_own_reference("41111111111111112"),
        "anchored at the end"
    );
    assert!(
        !a.is_own_reference("x4111111111111111"),
        "anchored at the start"
    );
    assert!(
        !sandbox().await.is_own_reference("4111111111111111"),
        "none declared"
    );
}

#[tokio::test]
async fn the_adapter_s_log_lines_are_kept_with_their_level() {
    let a = probe_with(&[]).await;
    fetch(&a, "https://elsewhere.example/v1/charges").await;
    let logged = a.take_logged();
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(logged[0].level, LogLevel::Info);
    assert_eq!(
        logged[0].message,
        "sending to https://elsewhere.example/v1/charges"
    );
    assert!(a.take_logged().is_empty(), "taken once");
}

#[tokio::test]
async fn each_adapter_call_is_kept_with_its_log_lines() {
    let engine = engine();
    let a = probe_on(&engine, &[]).await;
    fetch(&a, "https://elsewhere.example/v1/charges").await;
    let calls = engine.recent_calls(a.sha256());
    assert_eq!(calls.len(), 1, "{calls:?}");
    let call = &calls[0];
    assert_eq!(call.operation, "authorise");
    assert_eq!(
        call.failure, None,
        "the adapter answered (that it was unreachable)"
    );
    assert_eq!(call.deadline, engine.limits().adapter_deadline);
    assert!(call.memory_bytes > 0 && call.fuel > 0, "{call:?}");
    assert_eq!(call.lines.len(), 1);
    assert_eq!(
        call.lines[0].message,
        "sending to https://elsewhere.example/v1/charges"
    );
}

#[tokio::test]
async fn provider_events_are_read_only_when_their_signature_verifies() {
    let a = probe_with(&[("event_secret", "whsec_1")]).await;
    let body = b"evt_1 pay_1 captured\nevt_2 re_1 refund-failed\n";
    let unsigned = a.verify_event(&[], body).await.unwrap();
    assert!(
        matches!(&unsigned, Err(EventRefusal::Unverified(m)) if m.contains("signature")),
        "{unsigned:?}"
    );
    let headers = [("x-probe-signature".to_owned(), "whsec_1".to_owned())];
    let events = a.verify_event(&headers, body).await.unwrap().unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(
        (events[0].id.as_str(), events[0].reference.as_str()),
        ("evt_1", "pay_1")
    );
    assert_eq!(events[0].kind, EventKind::Captured);
    assert_eq!(events[1].kind, EventKind::RefundFailed("refused".into()));
    // Too many headers never reach the adapter.
    let flood: Vec<(String, String)> = (0..65).map(|i| (format!("h{i}"), "v".into())).collect();
    assert!(a.verify_event(&flood, body).await.is_err());
}

#[tokio::test(flavor = "current_thread")]
async fn an_adapter_that_computes_forever_is_stopped_at_its_deadline_and_keeps_no_thread() {
    let deadline = Duration::from_millis(300);
    let engine = PluginEngine::new(EngineConfig {
        max_instances: 8,
        limits: Limits {
            adapter_deadline: deadline,
            ..Limits::default()
        },
        ..EngineConfig::default()
    })
    .unwrap();
    let probe = PaymentAdapter::load(&engine, HTTP_PROBE, probe_config())
        .await
        .unwrap();
    let spin = CaptureRequest {
        authorisation: "pi_1".into(),
        amount_minor: 100,
        currency: "GBP".into(),
        idempotency_key: "spin".into(),
    };
    let started = Instant::now();
    // One thread for both: the timer fires only if the spinning call gives the thread back.
    let (spun, ticked) = tokio::join!(
        async {
            let answer = probe.capture(&spin).await;
            (answer, started.elapsed())
        },
        async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            started.elapsed()
        }
    );
    let (answer, ended) = spun;
    assert!(
        matches!(answer, Err(PluginError::Timeout(d)) if d == deadline),
        "{answer:?}"
    );
    assert!(ended >= deadline, "stopped after {ended:?}");
    assert!(
        ticked < deadline,
        "the other task waited for the spinning call: {ticked:?}"
    );
}
