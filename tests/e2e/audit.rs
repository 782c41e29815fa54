//! The operator audit trail: who (the operator token's name) did what, when, with the values
//! before and after; read through `GET /admin/v1/audit` with filters.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use courier_core::auth::Merchant;
use courier_core::events::FanOutWakeup;
use courier_core::payments::{Gateways, Payments, RetryPolicy};
use courier_domain::Environment;
use courier_plugins::{AdapterConfig, EngineConfig, PaymentAdapter, PluginEngine};
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::{
    MerchantCredentials, TestApp, assert_refusal, attach_working_card, status_and_json,
};

const ALICE: &str = "alice-token-0123456789abcdef0123456789";
const BOB: &str = "bob-token-0123456789abcdef0123456789ab";

async fn with_operators() -> TestApp {
    TestApp::spawn_with(|name| {
        (name == "COURIER_OPERATOR_TOKENS").then(|| format!("alice={ALICE},bob={BOB}"))
    })
    .await
}

/// Sends an operator request; asserts the status and answers the body.
async fn act(app: &TestApp, token: &str, method: Method, path: &str, body: Option<Value>) -> Value {
    // A refund needs its key; other routes take no notice of it.
    let mut request = app
        .operator(token, method, path)
        .header("Idempotency-Key", uuid::Uuid::new_v4().to_string());
    if let Some(body) = body {
        request = request.json(&body);
    }
    let (status, answer) = status_and_json(request.send().await.unwrap()).await;
    assert!((200..300).contains(&status), "{path}: {status} {answer}");
    answer
}

async fn trail(app: &TestApp, query: &str) -> Value {
    let (status, page) = status_and_json(
        app.admin(Method::GET, &format!("/audit{query}"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{page}");
    page
}

fn actions(page: &Value) -> Vec<(String, String)> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["operator"].as_str().unwrap().to_owned(),
                e["action"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(o, a)| ((*o).to_owned(), (*a).to_owned()))
        .collect()
}

/// A captured charge of `merchant`, made the way fulfilment makes one.
pub(crate) async fn captured_charge(app: &TestApp, merchant_id: Uuid) -> Uuid {
    let engine = PluginEngine::new(EngineConfig::default()).unwrap();
    let adapter = PaymentAdapter::load(
        &engine,
        courier_plugins::defaults::SANDBOX_PAYMENTS,
        AdapterConfig::new(BTreeMap::new()),
    )
    .await
    .unwrap();
    let pool = app.pool().await;
    let retry = RetryPolicy {
        base: Duration::from_millis(20),
        max_attempts: 2,
        lease: Duration::from_secs(60),
    };
    let payments = Payments::new(
        pool.clone(),
        Gateways::new(Arc::new(adapter), None),
        retry,
        FanOutWakeup::default(),
    );
    let caller = Merchant {
        merchant_id,
        environment: Environment::Test,
        key_id: Uuid::nil(),
    };
    let job_id = Uuid::new_v4();
    let mut tx = pool.begin().await.unwrap();
    let held = payments
        .hold_for_job(&mut tx, &caller, job_id, 900, "USD")
        .await
        .unwrap();
    tx.commit().await.unwrap();
    payments.capture_for_job(job_id).await.unwrap();
    held.id
}

#[tokio::test]
async fn every_operator_action_is_recorded_with_its_operator_and_values() {
    let app = with_operators().await;

    // Alice onboards a merchant and gives it a key; Bob revokes it and changes settings.
    let created = act(
        &app,
        ALICE,
        Method::POST,
        "/merchants",
        Some(json!({"name": "Audited Ltd"})),
    )
    .await;
    let merchant_id = created["merchant_id"].as_str().unwrap().to_owned();
    let key = act(
        &app,
        ALICE,
        Method::POST,
        &format!("/merchants/{merchant_id}/keys"),
        Some(json!({"environment": "live", "label": "till"})),
    )
    .await;
    let key_name = key["key"].as_str().unwrap().to_owned();
    act(
        &app,
        BOB,
        Method::POST,
        &format!("/keys/{key_name}/revoke"),
        None,
    )
    .await;
    // Revoking again changes nothing, so records nothing.
    act(
        &app,
        BOB,
        Method::POST,
        &format!("/keys/{key_name}/revoke"),
        None,
    )
    .await;
    let settings_path = format!("/merchants/{merchant_id}/settings");
    let change = json!({"notify_customer": true, "sms_sender_name": "Audited"});
    act(
        &app,
        BOB,
        Method::PATCH,
        &settings_path,
        Some(change.clone()),
    )
    .await;
    // The same values again: no change, no record.
    act(&app, BOB, Method::PATCH, &settings_path, Some(change)).await;
    assert_refusal(
        app.operator(BOB, Method::PATCH, &settings_path)
            .json(&json!({"sms_sender_name": "Audited Ltd"}))
            .send()
            .await
            .unwrap(),
        422,
        "settings.invalid_sms_sender_name",
    )
    .await;

    // Bob refunds part of a captured charge of the merchant.
    let merchant_uuid = Uuid::parse_str(&merchant_id).unwrap();
    let credential = crate::support::Credential {
        key: created["test_key"].as_str().unwrap().into(),
        secret: created["test_secret"].as_str().unwrap().into(),
    };
    attach_working_card(&app, &credential).await;
    let charge_id = captured_charge(&app, merchant_uuid).await;
    act(
        &app,
        BOB,
        Method::POST,
        &format!("/charges/{charge_id}/refund"),
        Some(json!({"amount_minor": 400})),
    )
    .await;

    // Alice uploads a price book, activates it, then rolls back to the first.
    let component = STANDARD.encode(
        std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../plugins/dist/standard-price-book.wasm"
        ))
        .unwrap(),
    );
    let settings = crate::price_books::demo_settings(&app).await;
    let upload = act(
        &app,
        ALICE,
        Method::POST,
        "/markets/demo/price-books",
        Some(json!({"component_base64": component, "settings": settings})),
    )
    .await;
    assert_eq!(upload["version"], 2);
    act(
        &app,
        ALICE,
        Method::POST,
        "/markets/demo/price-books/2/activate",
        None,
    )
    .await;
    act(
        &app,
        ALICE,
        Method::POST,
        "/markets/demo/price-books/1/activate",
        None,
    )
    .await;
    // The first token still works, as operator "admin".
    let (status, _) = status_and_json(
        app.admin(Method::POST, &format!("/merchants/{merchant_id}/keys"))
            .json(&json!({"environment": "test", "label": "ops"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201);

    let merchant_trail = trail(&app, &format!("?merchant_id={merchant_id}")).await;
    assert_eq!(
        actions(&merchant_trail),
        pairs(&[
            ("admin", "key.created"),
            ("bob", "charge.refunded"),
            ("bob", "merchant.settings_changed"),
            ("bob", "key.revoked"),
            ("alice", "key.created"),
            ("alice", "merchant.created"),
        ])
    );
    assert_eq!(merchant_trail["total"], 6);
    let entries = merchant_trail["items"].as_array().unwrap();
    let entry = |action: &str| {
        entries
            .iter()
            .find(|e| e["action"] == action && e["operator"] != "admin")
            .unwrap()
    };
    let refund = entry("charge.refunded");
    assert_eq!(refund["target_type"], "charge");
    assert_eq!(refund["target_id"], charge_id.to_string());
    assert_eq!(
        (
            &refund["before"]["status"],
            &refund["before"]["refunded_amount_minor"]
        ),
        (&json!("captured"), &json!(0))
    );
    assert_eq!(
        (
            &refund["after"]["status"],
            &refund["after"]["refunded_amount_minor"]
        ),
        (&json!("refunded"), &json!(400))
    );
    let settings_change = entry("merchant.settings_changed");
    assert_eq!(settings_change["target_type"], "merchant");
    assert_eq!(settings_change["target_id"], merchant_id);
    assert_eq!(settings_change["before"]["notify_customer"], false);
    assert_eq!(settings_change["before"]["sms_sender_name"], Value::Null);
    assert_eq!(settings_change["after"]["notify_customer"], true);
    assert_eq!(settings_change["after"]["sms_sender_name"], "Audited");
    let revoked = entry("key.revoked");
    assert_eq!(
        (&revoked["target_type"], &revoked["target_id"]),
        (&json!("api_key"), &json!(key_name))
    );
    assert_eq!(revoked["before"]["revoked_at"], Value::Null);
    assert!(revoked["after"]["revoked_at"].is_string());
    let key_created = entry("key.created");
    assert_eq!(
        key_created["after"],
        json!({"key": key_name, "environment": "live", "label": "till"})
    );
    let onboarded = entry("merchant.created");
    assert_eq!(onboarded["after"]["name"], "Audited Ltd");
    assert_eq!(onboarded["after"]["keys"].as_array().unwrap().len(), 2);
    for entry in entries {
        assert!(entry["occurred_at"].is_string() && entry["id"].is_string());
    }

    let books = trail(&app, "?target_type=price_book&operator=alice").await;
    assert_eq!(
        actions(&books),
        pairs(&[
            ("alice", "price_book.rolled_back"),
            ("alice", "price_book.activated"),
            ("alice", "price_book.uploaded"),
        ])
    );
    let items = books["items"].as_array().unwrap();
    assert_eq!(items[0]["target_id"], "demo/1");
    assert_eq!(items[0]["before"]["active_version"], 2);
    assert_eq!(items[0]["after"]["active_version"], 1);
    assert_eq!(items[1]["before"]["active_version"], 1);
    assert_eq!(items[1]["after"]["active_version"], 2);
    assert_eq!(items[2]["after"]["version"], 2);
    assert_eq!(items[2]["merchant_id"], Value::Null);

    // No secret is ever in the trail.
    let everything = trail(&app, "?size=200").await.to_string();
    for secret in [
        &created["test_secret"],
        &created["live_secret"],
        &key["secret"],
    ] {
        assert!(!everything.contains(secret.as_str().unwrap()));
    }
    app.stop().await;
}

#[tokio::test]
async fn the_trail_is_filtered_and_paged() {
    let app = with_operators().await;
    let first = app.create_merchant("First Ltd").await;
    let second = app.create_merchant("Second Ltd").await;
    for (token, label) in [(ALICE, "a"), (BOB, "b"), (ALICE, "c")] {
        act(
            &app,
            token,
            Method::POST,
            &format!("/merchants/{}/keys", first.merchant_id),
            Some(json!({"environment": "test", "label": label})),
        )
        .await;
    }
    act(
        &app,
        BOB,
        Method::POST,
        &format!("/keys/{}/revoke", second.test().key),
        None,
    )
    .await;

    let all = trail(&app, "").await;
    assert_eq!(all["total"], 6, "two onboardings and four actions");
    assert_eq!(
        (all["page"].as_i64(), all["size"].as_i64()),
        (Some(1), Some(50))
    );
    let by_alice = trail(&app, "?operator=alice&action=key.created").await;
    assert_eq!(by_alice["total"], 2);
    let labels: Vec<&str> = by_alice["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["after"]["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["c", "a"], "newest first");
    let revoked = trail(&app, &format!("?target_id={}", second.test().key)).await;
    assert_eq!(actions(&revoked), pairs(&[("bob", "key.revoked")]));
    let page = trail(
        &app,
        &format!("?merchant_id={}&size=2&page=2", first.merchant_id),
    )
    .await;
    assert_eq!(page["total"], 4);
    assert_eq!(
        actions(&page),
        pairs(&[("alice", "key.created"), ("system", "merchant.created")])
    );
    let future = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let past = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
    let query = |from: &str, to: &str| {
        format!(
            "?from={}&to={}",
            url::form_urlencoded::byte_serialize(from.as_bytes()).collect::<String>(),
            url::form_urlencoded::byte_serialize(to.as_bytes()).collect::<String>()
        )
    };
    assert_eq!(trail(&app, &query(&past, &future)).await["total"], 6);
    assert_eq!(trail(&app, &query(&future, &future)).await["total"], 0);

    for (query, code) in [
        ("?action=key.stolen", "audit.unknown_action"),
        ("?target_type=planet", "audit.unknown_target_type"),
        ("?merchant_id=acme", "request.invalid_query"),
        ("?from=yesterday", "request.invalid_query"),
        ("?to=2024-13-01T00:00:00Z", "request.invalid_query"),
        ("?colour=red", "request.invalid_query"),
        ("?page=0", "request.invalid_page"),
        ("?size=201", "request.invalid_page_size"),
    ] {
        let response = app
            .admin(Method::GET, &format!("/audit{query}"))
            .send()
            .await
            .unwrap();
        assert_refusal(response, 422, code).await;
    }
    // Another operator's token is needed even to read.
    let response = app
        .operator("nobody-token", Method::GET, "/audit")
        .send()
        .await
        .unwrap();
    assert_refusal(response, 401, "auth.invalid_credentials").await;
    app.stop().await;
}

/// After `COURIER_OPERATOR_FAILURE_LIMIT` failed sign-ins from one address, its next attempt is
/// 429 with `Retry-After`, the right token included, until the window ends; each failure is in
/// the audit trail with the address, never with the token tried.
#[tokio::test]
async fn failed_operator_sign_ins_are_limited_and_audited() {
    const GUESS: &str = "guessed-token-0123456789abcdef0123456789";
    let app = TestApp::spawn_with(|name| match name {
        "COURIER_OPERATOR_FAILURE_LIMIT" => Some("3".into()),
        "COURIER_OPERATOR_FAILURE_WINDOW_MS" => Some("1500".into()),
        _ => None,
    })
    .await;
    let path = "/admin/v1/markets/demo/price-books";
    let guess = || app.request(Method::GET, path).bearer_auth(GUESS).send();
    for _ in 0..3 {
        assert_refusal(guess().await.unwrap(), 401, "auth.invalid_credentials").await;
    }
    let response = app
        .admin(Method::GET, "/markets/demo/price-books")
        .send()
        .await
        .unwrap();
    let retry_after: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry_after), "{retry_after}");
    assert_refusal(response, 429, "rate_limited").await;
    // Turned away before the token is looked at: this one is not counted or audited.
    assert_refusal(guess().await.unwrap(), 429, "rate_limited").await;

    let pool = app.pool().await;
    let failures: Vec<(String, String, String, Value)> = sqlx::query_as(
        "SELECT operator, target_type, target_id, after FROM audit_log \
         WHERE action = 'operator.sign_in_failed' ORDER BY occurred_at",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(failures.len(), 3, "{failures:?}");
    for (operator, target_type, target_id, after) in &failures {
        assert_eq!(
            (operator.as_str(), target_type.as_str(), target_id.as_str()),
            ("unknown", "client_address", "127.0.0.1")
        );
        assert_eq!(after, &json!({"refusal": "invalid"}));
    }

    // When the window ends, the right token works again.
    crate::support::eventually(
        "the operator API to take the right token again",
        Duration::from_secs(5),
        Duration::from_millis(100),
        || async {
            let response = app
                .admin(Method::GET, "/markets/demo/price-books")
                .send()
                .await
                .unwrap();
            (response.status() == 200).then_some(())
        },
    )
    .await;
    app.stop().await;
}
