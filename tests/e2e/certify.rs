//! `courier adapter record` and `certify`: the Stripe adapter's operations recorded against the
//! Stripe stand-in as cassettes, and the conformance suite replaying them, faults included.
//! The project's own cassettes (`plugins/stripe-payments/certify/`) are recorded the same way:
//! `COURIER_WRITE_CASSETTES=1 cargo test --test e2e certify` writes them afresh.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::adapters::courier_adapter;
use crate::support::scratch_path;
use crate::support::stripe::{StripeStandIn, stripe_adapter_path};

/// The Stripe adapter's certification files in the repository.
fn committed() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plugins/stripe-payments/certify"
    ))
}

/// Records one operation into `out`; returns the adapter's answer.
async fn record(stripe: &StripeStandIn, out: &Path, operation: &str, args: Value) -> Value {
    let (code, stdout, stderr) = courier_adapter(
        Some(stripe),
        vec![
            "record".into(),
            stripe_adapter_path().display().to_string(),
            operation.into(),
            "--config".into(),
            stripe.adapter_config().display().to_string(),
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
                .find(|e| e["response"]["status"] == 409)
        })
        .map(|e| e["response"].clone())
        .expect("the in-flight hold recorded Stripe's 409");
    for (path, mut cassette) in cassettes {
        if cassette["answer"]["outcome"] != "approved" {
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

/// `courier adapter certify` of `adapter` over `dir`: exit code, verdict lines, summary.
async fn certify(adapter: &Path, dir: &Path) -> (i32, Vec<String>, Value) {
    let config = committed().join("config.json");
    let (code, stdout, stderr) = courier_adapter(
        None,
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
    // against the same cassettes: its answers read up into 2.1.0's are the same.
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
        None,
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
    // The tests' HTTP probe logs where it sends a hold: here, to a card number.
    let probe = stripe_adapter_path().with_file_name("http-probe.wasm");
    let dir = scratch_path("logged-card");
    std::fs::create_dir_all(&dir).unwrap();
    let cassette = json!({
        "operation": "hold",
        "args": {"amount_minor": 1290, "currency": "EUR", "card_ref": "4111111111111111",
            "customer_id": "cus_1", "idempotency_key": "job_logged_hold"},
        "answer": {"outcome": "unreachable", "detail": "anything"},
        "exchanges": [],
    });
    std::fs::write(dir.join("hold-unreachable.json"), cassette.to_string()).unwrap();
    let (code, lines, _) = certify(&probe, &dir).await;
    assert_eq!(code, 1, "{lines:#?}");
    assert!(
        lines.iter().any(|l| l
            == "FAIL  hold-unreachable: replayed, answers unreachable: a line the adapter \
                logged holds a card number"),
        "{lines:#?}"
    );
}
