//! `courier adapter run`: one operation of a payment adapter, alone, against the Stripe
//! stand-in, as a partner runs theirs: the answer, every HTTP exchange with the secrets masked,
//! and what the provider holds afterwards.

use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::process::BINARY;
use crate::support::scratch_path;
use crate::support::stripe::{SECRET_KEY, StripeStandIn, stripe_adapter_path};

/// Runs `courier adapter run` on the Stripe adapter with the stand-in's configuration and test
/// switches; returns the exit code, standard output and standard error.
async fn run(stripe: &StripeStandIn, operation: &str, args: Value) -> (i32, String, String) {
    courier_adapter(
        stripe.service_env(),
        vec![
            "run".into(),
            stripe_adapter_path().display().to_string(),
            operation.into(),
            "--config".into(),
            stripe.adapter_config().display().to_string(),
            "--args".into(),
            args.to_string(),
        ],
    )
    .await
}

/// Runs `courier adapter ARGS…`, with a stand-in's test switches from its service
/// environment `env` (its private address, its CA); returns the exit code, standard output and
/// standard error.
pub async fn courier_adapter(
    env: Vec<(String, String)>,
    args: Vec<String>,
) -> (i32, String, String) {
    let mut command = Command::new(BINARY);
    command
        .arg("adapter")
        .args(args)
        .env("COURIER_DATA_DIR", scratch_path("adapter"))
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .envs(
            env.into_iter()
                .filter(|(name, _)| !name.starts_with("COURIER_LIVE_PAYMENT")),
        );
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn an_adapter_runs_alone_and_shows_its_exchanges_with_the_secret_masked() {
    let stripe = StripeStandIn::start().await;

    let form = json!({"merchant": "m_1", "currency": "EUR", "country": "DE", "locale": "de-DE",
        "return_url": "https://merchant.example/cards"});
    let (code, out, err) = run(&stripe, "setup-card-form", form).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        !out.contains(SECRET_KEY),
        "the secret key never shows: {out}"
    );
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["adapter"]["name"], "stripe");
    let customer = report["answer"]["ok"]["customer_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let hold = json!({
        "amount_minor": 1290,
        "currency": "EUR",
        "card_ref": "pm_card_visa",
        "customer_id": customer,
        "idempotency_key": "job_run_hold",
    });
    let (code, out, err) = run(&stripe, "hold", hold.clone()).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        !out.contains(SECRET_KEY),
        "the secret key never shows: {out}"
    );
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["operation"], "hold");
    assert_eq!(report["answer"]["outcome"], "approved", "{report}");
    let reference = report["answer"]["detail"].as_str().unwrap().to_owned();

    // The exchange that made the hold: the host's key sent as Stripe's Idempotency-Key, the
    // credential masked, the provider's answer shown.
    let exchanges = report["exchanges"].as_array().unwrap();
    let made = exchanges
        .iter()
        .find(|e| {
            e["method"] == "POST" && e["url"].as_str().unwrap().ends_with("/v1/payment_intents")
        })
        .unwrap_or_else(|| panic!("no PaymentIntent was created: {report}"));
    let headers: Vec<(String, String)> =
        serde_json::from_value(made["request_headers"].clone()).unwrap();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header("idempotency-key").as_deref(), Some("job_run_hold"));
    assert_eq!(header("authorization").as_deref(), Some("Bearer ****"));
    assert_eq!(made["status"], 200);
    assert!(made["response_body"].as_str().unwrap().contains(&reference));
    assert!(report["millis"].as_u64().unwrap() > 0);
    assert_eq!(report["limits"]["memory_bytes"], 64 << 20);
    // The call's own usage, against those limits.
    let used = &report["used"];
    assert!(used["fuel"].as_u64().unwrap() > 0, "{report}");
    assert!(used["memory_bytes"].as_u64().unwrap() > 0, "{report}");
    assert!(used["millis"].as_u64().unwrap() <= report["millis"].as_u64().unwrap());

    // The provider holds exactly what the run says, under the host's key.
    let intent = stripe
        .intent(&reference)
        .expect("the stand-in holds the intent");
    assert_eq!(intent.status, "requires_capture");
    assert_eq!((intent.amount, intent.currency.as_str()), (1290, "eur"));
    assert_eq!(intent.idempotency_key.as_deref(), Some("job_run_hold"));

    // Run again with the same key: the same hold, nothing new at the provider.
    let (code, out, err) = run(&stripe, "hold", hold).await;
    assert_eq!(code, 0, "{err}");
    let again: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(again["answer"]["detail"], reference.as_str());
    assert_eq!(stripe.holds().len(), 1);

    // Read back through the contract.
    let (code, out, err) = run(&stripe, "retrieve", json!({"reference": reference})).await;
    assert_eq!(code, 0, "{err}");
    let read: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(read["answer"]["ok"]["status"], "held", "{read}");
    assert_eq!(read["answer"]["ok"]["hold_key"], "job_run_hold");
}

#[tokio::test]
async fn a_wrong_operation_or_arguments_are_refused_before_anything_runs() {
    let stripe = StripeStandIn::start().await;
    let (code, _, err) = run(&stripe, "teleport", json!({})).await;
    assert_eq!(code, 2);
    assert!(err.contains("unknown operation \"teleport\""), "{err}");

    let (code, _, err) = run(&stripe, "hold", json!({"amount": 5})).await;
    assert_eq!(code, 2);
    assert!(err.contains("the arguments of hold"), "{err}");
    assert!(stripe.intents().is_empty(), "nothing reached the provider");

    // A component that is not a payment adapter fails as the adapter's fault: exit 1.
    let hostile = stripe_adapter_path().with_file_name("hostile.wasm");
    let output = Command::new(BINARY)
        .args(["adapter", "run"])
        .arg(&hostile)
        .arg("describe")
        .env("COURIER_DATA_DIR", scratch_path("adapter-run"))
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.contains("the adapter failed"), "{err}");
}
