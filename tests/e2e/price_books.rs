//! Price books through the operator API: upload (validated), list, activate, roll back.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use reqwest::Method;
use reqwest::header::WWW_AUTHENTICATE;
use serde_json::{Value, json};

use crate::support::{TestApp, assert_refusal, status_and_json};

const DIST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../plugins/dist");

fn component(name: &str) -> String {
    STANDARD.encode(std::fs::read(format!("{DIST}/{name}.wasm")).unwrap())
}

/// The demo market's own settings, as its first upload holds them.
pub(crate) async fn demo_settings(app: &TestApp) -> Value {
    let (status, uploads) = status_and_json(
        app.admin(Method::GET, "/markets/demo/price-books")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{uploads}");
    let pool = app.pool().await;
    let (settings,): (Value,) = sqlx::query_as(
        "SELECT settings FROM price_book_uploads WHERE market_id = 'demo' AND version = 1",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    settings
}

async fn upload(app: &TestApp, market: &str, component: String, settings: Value) -> (u16, Value) {
    status_and_json(
        app.admin(Method::POST, &format!("/markets/{market}/price-books"))
            .json(&json!({ "component_base64": component, "settings": settings }))
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn activate(app: &TestApp, market: &str, version: i32) -> (u16, Value) {
    status_and_json(
        app.admin(
            Method::POST,
            &format!("/markets/{market}/price-books/{version}/activate"),
        )
        .send()
        .await
        .unwrap(),
    )
    .await
}

#[tokio::test]
async fn the_operator_api_needs_the_bearer_token() {
    let app = TestApp::spawn().await;
    let path = app.url("/admin/v1/markets/demo/price-books");
    let response = app.client.get(&path).send().await.unwrap();
    assert!(
        response.headers()[WWW_AUTHENTICATE]
            .to_str()
            .unwrap()
            .starts_with("Bearer")
    );
    assert_refusal(response, 401, "auth.missing_credentials").await;
    let response = app
        .client
        .get(&path)
        .bearer_auth("guess")
        .send()
        .await
        .unwrap();
    assert_refusal(response, 401, "auth.invalid_credentials").await;
    let response = app
        .client
        .get(&path)
        .basic_auth("ck_test_x", Some("y"))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 401, "auth.malformed_credentials").await;
    app.stop().await;
}

#[tokio::test]
async fn the_operator_api_is_closed_without_a_configured_token() {
    let app = TestApp::spawn_with(|name| (name == "COURIER_ADMIN_TOKEN").then(String::new)).await;
    let response = app
        .admin(Method::GET, "/markets/demo/price-books")
        .send()
        .await
        .unwrap();
    assert_refusal(response, 401, "auth.invalid_credentials").await;
    app.stop().await;
}

#[tokio::test]
async fn a_market_starts_with_its_configured_book_active() {
    let app = TestApp::spawn().await;
    let (status, uploads) = status_and_json(
        app.admin(Method::GET, "/markets/demo/price-books")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    let uploads = uploads.as_array().unwrap();
    assert_eq!(uploads.len(), 1);
    let first = &uploads[0];
    assert_eq!(first["version"], 1);
    assert_eq!(first["active"], true);
    assert_eq!(first["activations"], json!([1]));
    assert_eq!(first["uploaded_by"], "system");
    assert!(!first["name"].as_str().unwrap().is_empty());
    assert_eq!(first["sha256"].as_str().unwrap().len(), 64);
    app.stop().await;
}

#[tokio::test]
async fn upload_activate_and_roll_back() {
    let app = TestApp::spawn().await;
    let mut settings = demo_settings(&app).await;
    settings["vehicles"]["car"]["base_fare_minor"] = json!(999);
    let (status, uploaded) = upload(&app, "demo", component("standard-price-book"), settings).await;
    assert_eq!(status, 201, "{uploaded}");
    assert_eq!(uploaded["version"], 2);
    assert_eq!(uploaded["active"], false);
    assert_eq!(uploaded["uploaded_by"], "admin");

    let (status, activation) = activate(&app, "demo", 2).await;
    assert_eq!(status, 200, "{activation}");
    assert_eq!(
        activation,
        json!({"market": "demo", "version": 2, "price_book_version": 2})
    );

    // Rollback: activating upload 1 again is a new activation.
    let (_, activation) = activate(&app, "demo", 1).await;
    assert_eq!(activation["price_book_version"], 3);
    let (_, uploads) = status_and_json(
        app.admin(Method::GET, "/markets/demo/price-books")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(uploads[0]["activations"], json!([1, 3]));
    assert_eq!(uploads[0]["active"], true);
    assert_eq!(uploads[1]["activations"], json!([2]));
    assert_eq!(uploads[1]["active"], false);
    app.stop().await;
}

#[tokio::test]
async fn broken_components_and_settings_are_refused_with_a_reason() {
    let app = TestApp::spawn().await;
    let settings = demo_settings(&app).await;

    let (status, body) = upload(
        &app,
        "demo",
        STANDARD.encode(b"not wasm at all"),
        settings.clone(),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("price_book.rejected")),
        "{body}"
    );

    // A payment adapter is not a price book.
    let (status, body) = upload(
        &app,
        "demo",
        component("sandbox-payments"),
        settings.clone(),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("price_book.rejected")),
        "{body}"
    );

    // A book that prices only bicycles cannot serve a market offering five vehicles.
    let (status, body) = upload(&app, "demo", component("hostile"), json!({})).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("price_book.invalid_settings")),
        "{body}"
    );
    assert!(
        body["message"].as_str().unwrap().contains("does not price"),
        "{body}"
    );

    let mut no_vans = settings.clone();
    no_vans["vehicles"].as_object_mut().unwrap().remove("van");
    let (status, body) = upload(&app, "demo", component("standard-price-book"), no_vans).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("price_book.invalid_settings")),
        "{body}"
    );

    let (status, body) = upload(
        &app,
        "demo",
        component("standard-price-book"),
        json!({"schema": 1}),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("price_book.invalid_settings")),
        "{body}"
    );

    let (status, body) = upload(&app, "demo", "%%%".into(), settings.clone()).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("request.invalid_body")),
        "{body}"
    );

    let (status, body) = upload(&app, "atlantis", component("standard-price-book"), settings).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (404, Some("market.not_found")),
        "{body}"
    );

    let (status, body) = activate(&app, "demo", 7).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (404, Some("price_book.version_not_found")),
        "{body}"
    );

    // Nothing refused was kept.
    let pool = app.pool().await;
    let (count,): (i64,) = sqlx::query_as("SELECT count(*) FROM price_book_uploads")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(count, 1);
    app.stop().await;
}

fn courier_cli(app: &TestApp, args: &[&str]) -> Value {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_courier"))
        .args(args)
        .env("DATABASE_URL", &app.database_url)
        .env("COURIER_SECRET_KEY", "5e".repeat(32))
        .env("COURIER_DATA_DIR", &app.data_dir)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "courier {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The operator's command line: the same logic as the operator API.
#[tokio::test]
async fn the_cli_uploads_lists_compares_and_inspects() {
    let app = TestApp::spawn().await;
    let mut settings = demo_settings(&app).await;
    settings["vehicles"]["van"]["per_km_minor"] = json!(999);
    let settings_file = app.data_dir.join("settings.json");
    std::fs::write(&settings_file, settings.to_string()).unwrap();
    let component = format!("{DIST}/standard-price-book.wasm");
    let uploaded = courier_cli(
        &app,
        &[
            "price-book",
            "upload",
            "--market",
            "demo",
            "--file",
            &component,
            "--settings",
            settings_file.to_str().unwrap(),
            "--operator",
            "ops-alice",
        ],
    );
    assert_eq!(uploaded["version"], 2);
    assert_eq!(uploaded["uploaded_by"], "ops-alice");
    let listed = courier_cli(&app, &["price-book", "list", "--market", "demo"]);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert_eq!(listed[0]["active"], true);
    let comparison = courier_cli(
        &app,
        &[
            "price-book",
            "compare",
            "--market",
            "demo",
            "--version",
            "2",
        ],
    );
    assert_eq!(comparison["version"], 2);
    assert!(comparison["quotes_compared"].is_u64());

    let inspected = courier_cli(&app, &["plugin", "inspect", &component]);
    assert_eq!(
        inspected["worlds"],
        json!(["courier:pricing/price-book@1.0.0"])
    );
    assert_eq!(inspected["sha256"], uploaded["sha256"]);
    assert!(inspected["size_bytes"].as_u64().unwrap() > 1000);
    let adapter = courier_cli(
        &app,
        &[
            "plugin",
            "inspect",
            &format!("{DIST}/sandbox-payments.wasm"),
        ],
    );
    assert_eq!(
        adapter["worlds"],
        json!(["courier:payments/payment-adapter@2.3.0"])
    );
    let imports: Vec<&str> = adapter["imports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert!(
        imports.iter().all(|i| i.starts_with("courier:payments/")),
        "{imports:?}"
    );
    app.stop().await;
}
