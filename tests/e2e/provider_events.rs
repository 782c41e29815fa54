//! `POST /v1/provider-events/{environment}` over HTTP: no credential, the environment's
//! adapter verifies the notification (here the http-probe adapter, whose signature is its
//! configured `event_secret` in `x-probe-signature`), each event is kept once by its id, and
//! every refusal has its code.

use reqwest::Method;
use serde_json::json;
use uuid::Uuid;

use crate::support::{TestApp, assert_refusal, status_and_json};

const SECRET: &str = "whsec_probe";

/// A service whose live adapter is the http-probe component, with its event secret.
async fn with_probe_live() -> (TestApp, std::path::PathBuf) {
    with_live("plugins/dist/http-probe.wasm").await
}

/// A service whose live adapter is the component at `component` (from the repository's root).
async fn with_live(component: &str) -> (TestApp, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("courier-events-{}", Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let adapter = dir.join("live.wasm");
    std::fs::copy(repo.join(component), &adapter).unwrap();
    let config = dir.join("live.json");
    let settings = json!({"event_secret": SECRET, "secret_key": "sk_test_unused"});
    std::fs::write(&config, settings.to_string()).unwrap();
    let app = TestApp::spawn_with(move |name| match name {
        "COURIER_LIVE_PAYMENT_ADAPTER" => Some(adapter.to_string_lossy().into_owned()),
        "COURIER_LIVE_PAYMENT_CONFIG" => Some(config.to_string_lossy().into_owned()),
        _ => None,
    })
    .await;
    (app, dir)
}

async fn notify(
    app: &TestApp,
    environment: &str,
    signature: &str,
    body: String,
) -> reqwest::Response {
    app.request(Method::POST, &format!("/v1/provider-events/{environment}"))
        .header("x-probe-signature", signature)
        .body(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_verified_notification_is_kept_once_by_each_event_s_id() {
    let (app, dir) = with_probe_live().await;
    let id = format!("evt_{}", Uuid::new_v4().simple());
    let body = format!("{id} pay_nobody_knows captured\n{id}_2 pay_nobody_knows released");
    // No merchant credential: the provider's signature is the credential.
    let (status, received) =
        status_and_json(notify(&app, "live", SECRET, body.clone()).await).await;
    assert_eq!(status, 200, "{received}");
    assert_eq!(received, json!({"received": 2, "duplicates": 0}));
    // Sent again (the provider resends until it hears 200): kept once.
    let (status, again) = status_and_json(notify(&app, "live", SECRET, body).await).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again, json!({"received": 2, "duplicates": 2}));
    let pool = app.pool().await;
    let kept: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM provider_events WHERE environment = 'live' AND event_id LIKE $1",
    )
    .bind(format!("{id}%"))
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(kept, 2);
    app.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn every_refusal_of_a_notification_has_its_code() {
    let (app, dir) = with_probe_live().await;
    let body = "evt_x pay_x captured".to_owned();
    // The signature does not verify: refused, nothing kept.
    let refused = notify(&app, "live", "forged", body.clone()).await;
    assert_refusal(refused, 401, "provider_event.unverified").await;
    // The test environment's adapter is the sandbox, which sends no notifications.
    let sandbox = notify(&app, "test", SECRET, body.clone()).await;
    assert_refusal(sandbox, 401, "provider_event.unverified").await;
    // Only test and live are environments.
    let unknown = notify(&app, "staging", SECRET, body).await;
    assert_refusal(unknown, 404, "not_found").await;
    // A notification is a few KiB; 300 KiB is refused before the adapter reads it.
    let large = notify(&app, "live", SECRET, "x".repeat(300 * 1024)).await;
    assert_refusal(large, 413, "request.body_too_large").await;
    app.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn live_notifications_are_refused_until_a_live_adapter_is_configured() {
    let app = TestApp::spawn().await;
    let refused = notify(&app, "live", SECRET, "evt_y pay_y captured".into()).await;
    assert_refusal(refused, 422, "payment.live_unavailable").await;
    app.stop().await;
}

#[tokio::test]
async fn an_adapter_built_before_provider_events_takes_none() {
    let (app, dir) = with_live("plugins/fixtures/payments-2.0/stripe-payments.wasm").await;
    let refused = notify(&app, "live", SECRET, "evt_z pay_z captured".into()).await;
    assert_refusal(refused, 404, "provider_event.unsupported").await;
    app.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}
