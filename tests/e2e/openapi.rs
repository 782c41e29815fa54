//! The served API description against the running service: every operation it describes is
//! routed, and answers only with statuses and codes it describes.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Authed, MerchantCredentials, TestApp, status_and_json};

#[tokio::test]
async fn the_description_is_served_without_credentials() {
    let app = TestApp::spawn().await;
    let response = app
        .request(Method::GET, "/v1/openapi.json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let served: Value = response.json().await.unwrap();
    assert_eq!(&served, courier_api::openapi_document());
    assert_eq!(served["openapi"], "3.1.0");
    app.stop().await;
}

/// Calls every described operation with placeholder ids and an empty JSON object where a body
/// goes: a route the description invents answers 404 `not_found` or 405, and any answer the
/// description does not list fails.
#[tokio::test]
async fn every_described_operation_is_routed_and_answers_as_described() {
    let app = TestApp::spawn().await;
    let merchant = app.create_merchant("Described Ltd").await.test();
    let (status, created) = status_and_json(
        app.admin(Method::POST, "/couriers")
            .json(&json!({"name": "Dee Scribed", "phone": "+966 50 123 4567",
                          "vehicle": "car", "market": "demo"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let courier_token = created["credential"].as_str().unwrap().to_owned();

    let document = courier_api::openapi_document();
    let not_following = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut called = 0;
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let concrete = placeholders(path);
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            // Redirects are answers too (the console's pages send browsers on with 303).
            let mut request = not_following.request(method.clone(), app.url(&concrete));
            request = if path.starts_with("/admin/v1/") {
                request.bearer_auth(crate::support::ADMIN_TOKEN)
            } else if path.starts_with("/courier/v1/") {
                request.bearer_auth(&courier_token)
            } else if path.starts_with("/v1/") && path != "/v1/openapi.json" {
                request
                    .auth(&merchant)
                    .header("Idempotency-Key", "described-1")
            } else {
                request
            };
            if operation.get("requestBody").is_some() {
                request = request.json(&json!({}));
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let (_, body) = status_and_json(response).await;
            let label = format!("{method} {concrete} answered {status} {body}");
            assert!(
                !(status == 404 && body["code"] == "not_found") && status != 405,
                "described but not routed: {label}"
            );
            let described = &operation["responses"][status.to_string()];
            assert!(!described.is_null(), "status not described: {label}");
            if status >= 400
                && let Some(codes) =
                    described["content"]["application/json"]["schema"]["properties"]["code"]["enum"]
                        .as_array()
            {
                assert!(codes.contains(&body["code"]), "code not described: {label}");
            }
            called += 1;
        }
    }
    assert!(called >= 60, "only {called} operations described");
    app.stop().await;
}

/// A path with every `{parameter}` filled by a well-formed id nobody holds.
fn placeholders(path: &str) -> String {
    let mut concrete = String::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        concrete.push_str(&rest[..open]);
        let close = rest[open..].find('}').unwrap() + open;
        concrete.push_str(match &rest[open + 1..close] {
            "kind" => "photo",
            "market" => "demo",
            "version" => "999",
            "environment" => "test",
            _ => "00000000-0000-4000-8000-000000000000",
        });
        rest = &rest[close + 1..];
    }
    concrete.push_str(rest);
    concrete
}
