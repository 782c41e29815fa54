//! `courier adapter record` and `certify`: the Stripe adapter's operations recorded against the
//! Stripe stand-in as cassettes, and the conformance suite replaying them, faults included.
//! The project's own cassettes (`plugins/stripe-payments/certify/`) are recorded the same way:
//! `COURIER_WRITE_CASSETTES=1 cargo test --test e2e certify` writes them afresh.

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::adapters::courier_adapter;
use crate::support::adyen::{AdyenStandIn, adyen_adapter_path, notification};
use crate::support::scratch_path;
use crate::support::stripe::{StripeStandIn, stripe_adapter_path};

/// The Stripe adapter's certification files in the repository.
fn committed() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plugins/stripe-payments/certify"
    ))
}

/// What records a provider's operations: a stand-in's test switches, the adapter and its
/// configuration.
struct Recorder {
    env: Vec<(String, String)>,
    adapter: PathBuf,
    config: PathBuf,
}

impl Recorder {
    fn stripe(stripe: &StripeStandIn) -> Self {
        Self {
            env: stripe.service_env(),
            adapter: stripe_adapter_path(),
            config: stripe.adapter_config(),
        }
    }

    /// Records one operation into `out`; returns the adapter's answer.
    async fn record(&self, out: &Path, operation: &str, args: Value) -> Value {
        let (code, stdout, stderr) = courier_adapter(
            self.env.clone(),
            vec![
                "record".into(),
                self.adapter.display().to_string(),
                operation.into(),
                "--config".into(),
                self.config.display().to_string(),
                "--args".into(),
                args.to_string(),
                "--out".into(),
                out.display().to_string(),
            ],
        )
        .await;
        assert_eq!(code, 0, "recording {operation}: {stderr}");
        let printed: Value = serde_json::from_str(&stdout).unwrap();
        assert!(Path::new(printed["cassette"].as_str().unwrap()).exists());
        printed["run"]["answer"].clone()
    }
}

/// Records one operation of the Stripe adapter into `out`; returns the adapter's answer.
async fn record(stripe: &StripeStandIn, out: &Path, operation: &str, args: Value) -> Value {
    Recorder::stripe(stripe).record(out, operation, args).await
}

/// The flow the cassettes come from: a card form and its card, a hold released, a hold
/// captured and refunded, reads, declines, and a key still in use.
async fn record_stripe(stripe: &StripeStandIn, out: &Path) {
    let form_for = json!({"merchant": "m_certify", "currency": "EUR", "country": "DE",
        "locale": "de-DE", "return_url": "https://merchant.example/cards"});
    let form = record(stripe, out, "setup-card-form", form_for).await;
    let customer = form["ok"]["customer_id"].as_str().unwrap().to_owned();
    let card = |card_ref: &str| json!({"customer_id": customer, "card_ref": card_ref});
    let attached = record(stripe, out, "attach-card", card("pm_card_visa")).await;
    assert_eq!(attached["ok"]["card"]["last_four"], "4242", "{attached}");
    assert_eq!(attached["ok"]["reference"], "pm_card_visa", "{attached}");
    let unknown = record(stripe, out, "attach-card", card("pm_unknown_to_stripe")).await;
    assert_eq!(
        unknown["refused"]["outcome"], "unknown-reference",
        "{unknown}"
    );

    let hold = |key: &str, card_ref: &str| {
        json!({"amount_minor": 1290, "currency": "EUR", "card_ref": card_ref,
            "customer_id": customer, "idempotency_key": key})
    };
    let released = record(stripe, out, "hold", hold("job_cert_a_hold", "pm_card_visa")).await;
    let released = released["detail"].as_str().unwrap().to_owned();
    let void = json!({"authorisation": released, "idempotency_key": "charge_cert_a_void"});
    assert_eq!(
        record(stripe, out, "void", void).await["outcome"],
        "approved"
    );

    let held = record(stripe, out, "hold", hold("job_cert_b_hold", "pm_card_visa")).await;
    let held = held["detail"].as_str().unwrap().to_owned();
    let capture = json!({"authorisation": held, "amount_minor": 1290, "currency": "EUR",
        "idempotency_key": "charge_cert_b_capture"});
    assert_eq!(
        record(stripe, out, "capture", capture).await["outcome"],
        "approved"
    );
    let refund = json!({"payment": held, "amount_minor": 500, "currency": "EUR",
        "idempotency_key": "refund_cert_b"});
    assert_eq!(
        record(stripe, out, "refund", refund).await["outcome"],
        "approved"
    );
    let read = record(stripe, out, "retrieve", json!({"reference": held})).await;
    assert_eq!(read["ok"]["status"], "captured", "{read}");
    let missing = record(stripe, out, "retrieve", json!({"reference": "pi_unknown"})).await;
    assert_eq!(missing["refused"]["outcome"], "not-found", "{missing}");
    record(stripe, out, "list-payments", json!({"since": 0})).await;

    let poor = hold(
        "job_cert_c_hold",
        "pm_card_visa_chargeDeclinedInsufficientFunds",
    );
    assert_eq!(
        record(stripe, out, "hold", poor).await["outcome"],
        "declined"
    );
    let expired = hold("job_cert_d_hold", "pm_card_chargeDeclinedExpiredCard");
    assert_eq!(
        record(stripe, out, "hold", expired).await["outcome"],
        "declined"
    );
    stripe.keep_in_flight("job_cert_e_hold", Duration::from_secs(60));
    let in_flight = record(stripe, out, "hold", hold("job_cert_e_hold", "pm_card_visa")).await;
    assert_eq!(in_flight["outcome"], "in-flight");
    add_key_in_use(out);
}

/// Gives every approved money move the provider's answer while its key is in use: the one the
/// in-flight hold recorded (Stripe answers every operation's reused key alike).
fn add_key_in_use(dir: &Path) {
    let cassettes: Vec<(PathBuf, Value)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let cassette = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            (p, cassette)
        })
        .collect();
    let in_use = cassettes
        .iter()
        .find(|(_, c)| c["answer"]["outcome"] == "in-flight")
        .and_then(|(_, c)| {
            c["exchanges"]
                .as_array()?
                .iter()
                .find(|e| e["response"]["status"].as_u64().is_some_and(|s| s >= 400))
        })
        .map(|e| e["response"].clone())
        .expect("the in-flight hold recorded the provider's refusal of the key in use");
    for (path, mut cassette) in cassettes {
        if !["approved", "pending"]
            .contains(&cassette["answer"]["outcome"].as_str().unwrap_or_default())
        {
            continue;
        }
        for exchange in cassette["exchanges"].as_array_mut().unwrap() {
            if exchange.get("money").is_some() {
                exchange["key_in_use"] = in_use.clone();
            }
        }
        let text = serde_json::to_string_pretty(&cassette).unwrap() + "\n";
        std::fs::write(path, text).unwrap();
    }
}

/// `courier adapter certify` of `adapter` over `dir` with the Stripe adapter's configuration:
/// exit code, verdict lines, summary.
async fn certify(adapter: &Path, dir: &Path) -> (i32, Vec<String>, Value) {
    certify_with(adapter, &committed().join("config.json"), dir).await
}

/// `courier adapter certify` of `adapter` configured by `config` over `dir`.
async fn certify_with(adapter: &Path, config: &Path, dir: &Path) -> (i32, Vec<String>, Value) {
    let (code, stdout, stderr) = courier_adapter(
        Vec::new(),
        vec![
            "certify".into(),
            adapter.display().to_string(),
            "--config".into(),
            config.display().to_string(),
            "--cassettes".into(),
            dir.display().to_string(),
            "--deadline-ms".into(),
            "500".into(),
        ],
    )
    .await;
    let mut lines: Vec<String> = stdout.lines().map(str::to_owned).collect();
    let summary = lines
        .pop()
        .and_then(|last| serde_json::from_str(&last).ok())
        .unwrap_or_else(|| panic!("no summary (exit {code}): {stdout}{stderr}"));
    (code, lines, summary)
}

#[tokio::test]
async fn the_stripe_adapter_records_and_certifies_against_its_cassettes() {
    let stripe = StripeStandIn::start().await;
    let writing = std::env::var_os("COURIER_WRITE_CASSETTES").is_some();
    let fresh = if writing {
        let dir = committed().join("cassettes");
        let _ = std::fs::remove_dir_all(&dir);
        dir
    } else {
        scratch_path("cassettes")
    };
    record_stripe(&stripe, &fresh).await;

    // The freshly recorded set and the project's own both certify, scenario by scenario.
    for dir in [fresh, committed().join("cassettes")] {
        let (code, lines, summary) = certify(&stripe_adapter_path(), &dir).await;
        let failed: Vec<&String> = lines.iter().filter(|l| l.starts_with("FAIL")).collect();
        assert_eq!(code, 0, "{failed:#?}");
        assert!(summary["scenarios"].as_u64().unwrap() >= 25, "{summary}");
        assert_eq!(summary["failed"], 0);
        assert_eq!(summary["scenarios"].as_u64().unwrap(), lines.len() as u64);
        for expected in [
            "hold-approved: the provider answers 500: unreachable",
            "hold-approved: the answer is for another amount: unreachable",
            "hold-approved: the key is still in use at the provider: in-flight",
            "capture-approved: the provider hangs past the deadline: unreachable",
            "refund-approved: the connection drops after the provider acted: unreachable, then the retry's answer",
            "the component imports only its world",
        ] {
            assert!(
                lines.iter().any(|l| l == &format!("ok    {expected}")),
                "{expected}: {lines:#?}"
            );
        }
    }

    // The adapter as built against the contract's 2.0.0 (kept as a fixture) still certifies
    // against the same cassettes: its answers read up into 2.2.0's are the same.
    let older = stripe_adapter_path()
        .parent()
        .unwrap()
        .join("../fixtures/payments-2.0/stripe-payments.wasm");
    let (code, lines, summary) = certify(&older, &committed().join("cassettes")).await;
    let failed: Vec<&String> = lines.iter().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(code, 0, "{failed:#?}");
    assert_eq!(summary["failed"], 0);

    // The secret never reaches a cassette.
    for entry in std::fs::read_dir(committed().join("cassettes")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(!text.contains(crate::support::stripe::SECRET_KEY));
    }
}

#[tokio::test]
async fn an_adapter_that_does_not_speak_to_the_provider_fails_and_bad_input_is_refused() {
    // The sandbox adapter answers from its own card table: every replay differs.
    let sandbox = stripe_adapter_path().with_file_name("sandbox-payments.wasm");
    let (code, lines, summary) = certify(&sandbox, &committed().join("cassettes")).await;
    assert_eq!(code, 1, "{lines:#?}");
    assert!(summary["failed"].as_u64().unwrap() > 0);
    assert_eq!(
        summary["passed"].as_u64().unwrap() + summary["failed"].as_u64().unwrap(),
        summary["scenarios"].as_u64().unwrap()
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("FAIL  hold-approved: replayed, answers approved")),
        "{lines:#?}"
    );

    // No cassettes: the command's input, exit 2.
    let empty = scratch_path("no-cassettes");
    std::fs::create_dir_all(&empty).unwrap();
    let (code, _, stderr) = courier_adapter(
        Vec::new(),
        vec![
            "certify".into(),
            stripe_adapter_path().display().to_string(),
            "--cassettes".into(),
            empty.display().to_string(),
        ],
    )
    .await;
    assert_eq!(code, 2);
    assert!(stderr.contains("holds no cassette"), "{stderr}");
}

#[tokio::test]
async fn a_card_number_in_a_line_the_adapter_logs_fails_the_scenario() {
    // The tests' HTTP probe logs where it sends a hold: here, to a card number (spaced, so
    // not the probe's own 16-digit reference, which the suite leaves alone as the host does).
    let probe = stripe_adapter_path().with_file_name("http-probe.wasm");
    let dir = scratch_path("logged-card");
    std::fs::create_dir_all(&dir).unwrap();
    let cassette = json!({
        "operation": "hold",
        "args": {"amount_minor": 1290, "currency": "EUR", "card_ref": "4111 1111 1111 1111",
            "customer_id": "cus_1", "idempotency_key": "job_logged_hold"},
        "answer": {"outcome": "unreachable", "detail": "anything"},
        "exchanges": [],
    });
    std::fs::write(dir.join("hold-unreachable.json"), cassette.to_string()).unwrap();
    let (code, lines, _) = certify(&probe, &dir).await;
    assert_eq!(code, 1, "{lines:#?}");
    assert!(
        lines.iter().any(|l| l
            == "FAIL  hold-unreachable: replayed, answers unreachable: line 1 the adapter \
                logged (at Info) holds a card number"),
        "{lines:#?}"
    );
}

/// The Adyen adapter's certification files in the repository.
fn adyen_committed() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plugins/adyen-payments/certify"
    ))
}

/// The Adyen flow the cassettes come from: the Drop-in's session and the cards it stored, a
/// hold released, a hold captured and refunded (each accepted and confirmed later), the
/// lookup Checkout has not got, declines, a key used again with another body, and Adyen's
/// notifications (signed, and forged).
async fn record_adyen(adyen: &AdyenStandIn, out: &Path) {
    let recorder = Recorder {
        env: adyen.service_env(),
        adapter: adyen_adapter_path(),
        config: adyen.adapter_config(),
    };
    let form_for = json!({"merchant": "m_certify", "currency": "EUR", "country": "NL",
        "locale": "nl-NL", "return_url": "https://merchant.example/cards"});
    let form = recorder.record(out, "setup-card-form", form_for).await;
    let customer = form["ok"]["customer_id"].as_str().unwrap().to_owned();
    let document: Value = serde_json::from_str(form["ok"]["document"].as_str().unwrap()).unwrap();
    let session = document["session"]["id"].as_str().unwrap();
    let works = adyen.complete_card_form(session, "4111111111111111", "Jo Shopper");
    let poor = adyen.complete_card_form(session, "5555444433331111", "NOT_ENOUGH_BALANCE");
    let expired = adyen.complete_card_form(session, "4000020000000000", "CARD_EXPIRED");
    let card = |card_ref: &str| json!({"customer_id": customer, "card_ref": card_ref});
    let attached = recorder.record(out, "attach-card", card(&works)).await;
    assert_eq!(attached["ok"]["reference"], json!(works), "{attached}");
    let unknown = recorder
        .record(out, "attach-card", card("UNKNOWN000000000"))
        .await;
    assert_eq!(
        unknown["refused"]["outcome"], "unknown-reference",
        "{unknown}"
    );

    let hold = |key: &str, card_ref: &str, amount: i64| {
        json!({"amount_minor": amount, "currency": "EUR", "card_ref": card_ref,
            "customer_id": customer, "idempotency_key": key})
    };
    let released = recorder
        .record(out, "hold", hold("job_cert_a_hold", &works, 1290))
        .await;
    assert_eq!(released["outcome"], "approved", "{released}");
    let released = released["detail"].as_str().unwrap().to_owned();
    let void = json!({"authorisation": released, "idempotency_key": "charge_cert_a_void"});
    assert_eq!(
        recorder.record(out, "void", void).await["outcome"],
        "pending"
    );

    let held = recorder
        .record(out, "hold", hold("job_cert_b_hold", &works, 1290))
        .await;
    let held = held["detail"].as_str().unwrap().to_owned();
    let capture = json!({"authorisation": held, "amount_minor": 1290, "currency": "EUR",
        "idempotency_key": "charge_cert_b_capture"});
    assert_eq!(
        recorder.record(out, "capture", capture).await["outcome"],
        "pending"
    );
    let refund = json!({"payment": held, "amount_minor": 500, "currency": "EUR",
        "idempotency_key": "refund_cert_b"});
    let refunded = recorder.record(out, "refund", refund).await;
    assert_eq!(refunded["outcome"], "pending", "{refunded}");
    let lookup = recorder
        .record(out, "retrieve", json!({"reference": held}))
        .await;
    assert_eq!(lookup["refused"]["outcome"], "unreachable", "{lookup}");

    let declined = recorder
        .record(out, "hold", hold("job_cert_c_hold", &poor, 1290))
        .await;
    assert_eq!(
        declined["detail"]["code"], "insufficient_funds",
        "{declined}"
    );
    let finished = recorder
        .record(out, "hold", hold("job_cert_d_hold", &expired, 1290))
        .await;
    assert_eq!(finished["detail"]["card_finished"], "expired", "{finished}");
    // The hold's key again with another amount: Adyen's 422 704.
    let reused = recorder
        .record(out, "hold", hold("job_cert_b_hold", &works, 990))
        .await;
    assert_eq!(reused["outcome"], "in-flight", "{reused}");
    add_key_in_use(out);

    // Notifications: the capture's and the refund's, as Adyen signs them; and one forged.
    let item = |code: &str, psp: &str, original: &str, value: i64| {
        json!({"pspReference": psp, "originalReference": original,
            "merchantAccountCode": crate::support::adyen::MERCHANT_ACCOUNT,
            "merchantReference": "certify", "amount": {"value": value, "currency": "EUR"},
            "eventCode": code, "success": "true", "reason": "", "additionalData": {}})
    };
    // With the webhook's Basic credentials, as Adyen sends them (the cassette keeps them
    // masked).
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            crate::support::adyen::NOTIFICATION_USER,
            crate::support::adyen::NOTIFICATION_PASSWORD
        ))
    );
    let notified = |items: &[Value]| {
        json!({"headers": [["content-type", "application/json"], ["authorization", basic]],
            "body": notification(items).to_string()})
    };
    let capture = notified(&[item("CAPTURE", "CAP0000000000001", &held, 1290)]);
    let events = recorder.record(out, "verify-event", capture).await;
    assert_eq!(events["ok"][0]["kind"]["kind"], "captured", "{events}");
    let refund = notified(&[item("REFUND", "REF0000000000001", &held, 500)]);
    recorder.record(out, "verify-event", refund).await;
    let mut forged = notification(&[item("CAPTURE", "CAP0000000000002", &held, 1290)]);
    forged["notificationItems"][0]["NotificationRequestItem"]["amount"]["value"] = json!(1);
    let forged = json!({"headers": [["authorization", basic]], "body": forged.to_string()});
    let refused = recorder.record(out, "verify-event", forged).await;
    assert_eq!(refused["refused"]["outcome"], "unverified", "{refused}");
}

#[tokio::test]
async fn the_adyen_adapter_records_and_certifies_against_its_cassettes() {
    let adyen = AdyenStandIn::start().await;
    let writing = std::env::var_os("COURIER_WRITE_CASSETTES").is_some();
    let fresh = if writing {
        let dir = adyen_committed().join("cassettes");
        let _ = std::fs::remove_dir_all(&dir);
        dir
    } else {
        scratch_path("adyen-cassettes")
    };
    record_adyen(&adyen, &fresh).await;
    let config = adyen_committed().join("config.json");
    for dir in [fresh.clone(), adyen_committed().join("cassettes")] {
        let (code, lines, summary) = certify_with(&adyen_adapter_path(), &config, &dir).await;
        let failed: Vec<&String> = lines.iter().filter(|l| l.starts_with("FAIL")).collect();
        assert_eq!(code, 0, "{failed:#?}");
        assert!(summary["scenarios"].as_u64().unwrap() >= 25, "{summary}");
        assert_eq!(summary["failed"], 0);
        for expected in [
            "capture-pending: the provider answers 503: unreachable",
            "capture-pending: the answer is for another amount: unreachable",
            "refund-pending: the connection drops after the provider acted: unreachable, then the retry's answer",
            "hold-approved: the key is still in use at the provider: in-flight",
            "hold-approved: the answer is in another currency: unreachable",
            "verify-event-ok: a byte of the body changed: refused unverified",
            "the cassettes cover the contract",
        ] {
            assert!(
                lines.iter().any(|l| l == &format!("ok    {expected}")),
                "{expected}: {lines:#?}"
            );
        }
    }
    // Neither the API key, the HMAC key nor the webhook's credentials reach a cassette.
    for dir in [fresh, adyen_committed().join("cassettes")] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            assert!(!text.contains(crate::support::adyen::API_KEY));
            assert!(!text.contains(crate::support::adyen::HMAC_KEY));
            assert!(
                !text.contains("Y291cmllci13ZWJob29r"),
                "the Basic credentials"
            );
        }
    }
    // An adapter that does not speak to Adyen fails Adyen's cassettes.
    let sandbox = stripe_adapter_path().with_file_name("sandbox-payments.wasm");
    let (code, _, summary) =
        certify_with(&sandbox, &config, &adyen_committed().join("cassettes")).await;
    assert_eq!(code, 1, "{summary}");
    assert!(summary["failed"].as_u64().unwrap() > 0);
}
