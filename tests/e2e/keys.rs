//! Merchants and their keys through the operator API: several keys per environment, secrets
//! shown once, `last_used_at` kept, revocation refused at once on every instance.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Authed, Credential, TestApp, assert_refusal, eventually, status_and_json};

/// A /v1 path no handler serves: a valid credential gets 404, others 401.
const ANY_V1_PATH: &str = "/v1/no-such-resource";

/// A verified credential would be trusted from memory for ten minutes.
const LONG_CACHE_MS: &str = "600000";

async fn create_merchant(app: &TestApp, name: &str) -> Value {
    let (status, created) = status_and_json(
        app.admin(Method::POST, "/merchants")
            .json(&json!({ "name": name }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    created
}

async fn create_key(app: &TestApp, merchant_id: &str, environment: &str, label: &str) -> Value {
    let (status, key) = status_and_json(
        app.admin(Method::POST, &format!("/merchants/{merchant_id}/keys"))
            .json(&json!({ "environment": environment, "label": label }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{key}");
    key
}

async fn revoke(app: &TestApp, key: &str) -> (u16, Value) {
    status_and_json(
        app.admin(Method::POST, &format!("/keys/{key}/revoke"))
            .send()
            .await
            .unwrap(),
    )
    .await
}

fn credential(key: &Value) -> Credential {
    Credential {
        key: key["key"].as_str().unwrap().into(),
        secret: key["secret"].as_str().unwrap().into(),
    }
}

async fn status_with(app: &TestApp, credential: &Credential) -> u16 {
    app.request(Method::GET, ANY_V1_PATH)
        .auth(credential)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn show(app: &TestApp, merchant_id: &str) -> Value {
    let (status, merchant) = status_and_json(
        app.admin(Method::GET, &format!("/merchants/{merchant_id}"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{merchant}");
    merchant
}

#[tokio::test]
async fn operators_create_merchants_and_labelled_keys_whose_secrets_show_once() {
    let app =
        TestApp::spawn_with(|name| (name == "COURIER_KEY_USAGE_FLUSH_MS").then(|| "50".into()))
            .await;
    let created = create_merchant(&app, "  Keyed Ltd ").await;
    assert_eq!(created["name"], "Keyed Ltd");
    let merchant_id = created["merchant_id"].as_str().unwrap().to_owned();
    let first_test = Credential {
        key: created["test_key"].as_str().unwrap().into(),
        secret: created["test_secret"].as_str().unwrap().into(),
    };
    assert_eq!(status_with(&app, &first_test).await, 404);

    let checkout = create_key(&app, &merchant_id, "test", "checkout").await;
    let warehouse = create_key(&app, &merchant_id, "live", " warehouse ").await;
    assert!(checkout["key"].as_str().unwrap().starts_with("ck_test_"));
    assert!(warehouse["key"].as_str().unwrap().starts_with("ck_live_"));
    assert_eq!(
        (&checkout["environment"], &checkout["label"]),
        (&json!("test"), &json!("checkout"))
    );
    assert_eq!(warehouse["label"], "warehouse");
    assert_eq!(checkout["merchant_id"], created["merchant_id"]);
    assert!(checkout["created_at"].is_string());
    // Both test keys work, side by side.
    assert_eq!(status_with(&app, &credential(&checkout)).await, 404);
    assert_eq!(status_with(&app, &first_test).await, 404);

    // Shown without secrets, with their use noted off the request path.
    let merchant = eventually(
        "last_used_at written for the two keys used",
        Duration::from_secs(5),
        Duration::from_millis(25),
        || async {
            let merchant = show(&app, &merchant_id).await;
            let used = merchant["keys"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|k| k["last_used_at"].is_string())
                .count();
            (used == 2).then_some(merchant)
        },
    )
    .await;
    assert_eq!(merchant["id"], created["merchant_id"]);
    assert_eq!(merchant["name"], "Keyed Ltd");
    assert_eq!(merchant["settings"]["notify_customer"], false);
    let keys = merchant["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 4);
    let text = merchant.to_string();
    for secret in [
        &created["test_secret"],
        &created["live_secret"],
        &checkout["secret"],
        &warehouse["secret"],
    ] {
        assert!(!text.contains(secret.as_str().unwrap()), "a secret shown");
    }
    for key in keys {
        let mut fields: Vec<&str> = key
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        fields.sort();
        assert_eq!(
            fields,
            [
                "created_at",
                "environment",
                "key",
                "label",
                "last_used_at",
                "merchant_id",
                "revoked_at"
            ]
        );
        let used = key["key"] == checkout["key"] || key["key"] == created["test_key"];
        assert_eq!(key["last_used_at"].is_string(), used, "{key}");
    }
    let labels: Vec<&str> = keys.iter().map(|k| k["label"].as_str().unwrap()).collect();
    assert_eq!(labels.iter().filter(|l| **l == "default").count(), 2);

    let (status, list) =
        status_and_json(app.admin(Method::GET, "/merchants").send().await.unwrap()).await;
    assert_eq!(status, 200);
    let listed = list
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == created["merchant_id"])
        .expect("listed");
    assert_eq!(listed["name"], "Keyed Ltd");
    assert!(!list.to_string().contains("secret"));
    app.stop().await;
}

#[tokio::test]
async fn bad_merchant_and_key_requests_are_refused_with_codes() {
    let app = TestApp::spawn().await;
    let created = create_merchant(&app, "Strict Ltd").await;
    let merchant_id = created["merchant_id"].as_str().unwrap();
    let keys_of = |id: &str| format!("/merchants/{id}/keys");
    let new_key = |path: String, body: Value| app.admin(Method::POST, &path).json(&body).send();

    for unknown in [uuid::Uuid::new_v4().to_string(), "not-a-uuid".to_owned()] {
        assert_refusal(
            new_key(
                keys_of(&unknown),
                json!({"environment": "test", "label": "x"}),
            )
            .await
            .unwrap(),
            404,
            "merchant.not_found",
        )
        .await;
        assert_refusal(
            app.admin(Method::GET, &format!("/merchants/{unknown}"))
                .send()
                .await
                .unwrap(),
            404,
            "merchant.not_found",
        )
        .await;
    }
    assert_refusal(
        new_key(
            keys_of(merchant_id),
            json!({"environment": "staging", "label": "x"}),
        )
        .await
        .unwrap(),
        422,
        "key.invalid_environment",
    )
    .await;
    for label in [json!(""), json!("   "), json!("l".repeat(101))] {
        assert_refusal(
            new_key(
                keys_of(merchant_id),
                json!({"environment": "live", "label": label}),
            )
            .await
            .unwrap(),
            422,
            "key.invalid_label",
        )
        .await;
    }
    assert_refusal(
        new_key(keys_of(merchant_id), json!({"environment": "live"}))
            .await
            .unwrap(),
        422,
        "request.invalid_body",
    )
    .await;
    assert_refusal(
        app.admin(Method::POST, "/keys/ck_test_nobodyhasthis/revoke")
            .send()
            .await
            .unwrap(),
        404,
        "key.not_found",
    )
    .await;
    for name in [json!(""), json!(" "), json!("n".repeat(201))] {
        assert_refusal(
            app.admin(Method::POST, "/merchants")
                .json(&json!({ "name": name }))
                .send()
                .await
                .unwrap(),
            422,
            "merchant.invalid_name",
        )
        .await;
    }
    // Nothing was created by the refusals.
    assert_eq!(
        show(&app, merchant_id).await["keys"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    app.stop().await;
}

/// With credentials trusted from memory for ten minutes, a revoked key is still refused at
/// once: the revocation evicts it.
#[tokio::test]
async fn a_revoked_key_is_refused_at_once_despite_a_long_cache() {
    let app =
        TestApp::spawn_with(|name| (name == "COURIER_AUTH_CACHE_MS").then(|| LONG_CACHE_MS.into()))
            .await;
    let created = create_merchant(&app, "Revoking Ltd").await;
    let merchant_id = created["merchant_id"].as_str().unwrap();
    let spare = create_key(&app, merchant_id, "test", "spare").await;
    let doomed = create_key(&app, merchant_id, "test", "doomed").await;
    assert_eq!(status_with(&app, &credential(&doomed)).await, 404);
    assert_eq!(status_with(&app, &credential(&doomed)).await, 404);

    let (status, revoked) = revoke(&app, doomed["key"].as_str().unwrap()).await;
    assert_eq!(status, 200, "{revoked}");
    assert!(revoked["revoked_at"].is_string());
    assert_eq!(revoked["label"], "doomed");
    assert_refusal(
        app.request(Method::GET, ANY_V1_PATH)
            .auth(&credential(&doomed))
            .send()
            .await
            .unwrap(),
        401,
        "auth.invalid_credentials",
    )
    .await;
    // Idempotent: the same answer, the same time of revocation.
    let (status, again) = revoke(&app, doomed["key"].as_str().unwrap()).await;
    assert_eq!((status, &again), (200, &revoked));
    // The merchant's other keys are untouched.
    assert_eq!(status_with(&app, &credential(&spare)).await, 404);
    app.stop().await;
}

/// Two instances on one database, both trusting credentials for ten minutes: a revocation
/// made through one is refused by the other within moments (the notification), long before
/// the cache bound.
#[tokio::test]
async fn a_revocation_reaches_every_instance_at_once() {
    let first =
        TestApp::spawn_with(|name| (name == "COURIER_AUTH_CACHE_MS").then(|| LONG_CACHE_MS.into()))
            .await;
    let url = first.database_url.clone();
    let second = TestApp::spawn_with(move |name| match name {
        "DATABASE_URL" => Some(url.clone()),
        "COURIER_AUTH_CACHE_MS" => Some(LONG_CACHE_MS.into()),
        _ => None,
    })
    .await;
    let created = create_merchant(&first, "Two Instances Ltd").await;
    let key = create_key(
        &first,
        created["merchant_id"].as_str().unwrap(),
        "live",
        "pos",
    )
    .await;
    // Both instances now hold the credential in memory.
    assert_eq!(status_with(&first, &credential(&key)).await, 404);
    assert_eq!(status_with(&second, &credential(&key)).await, 404);

    let (status, _) = revoke(&first, key["key"].as_str().unwrap()).await;
    assert_eq!(status, 200);
    eventually(
        "the other instance to refuse the revoked key",
        Duration::from_secs(2),
        Duration::from_millis(10),
        || async {
            match status_with(&second, &credential(&key)).await {
                401 => Some(()),
                status => {
                    assert_eq!(status, 404);
                    None
                }
            }
        },
    )
    .await;
    assert_eq!(status_with(&first, &credential(&key)).await, 401);
    second.stop().await;
    first.stop().await;
}
