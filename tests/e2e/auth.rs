//! Section 5 of the spec: HTTP Basic credentials, environments, 401s.

use std::time::Duration;

use base64::Engine;
use reqwest::Method;
use reqwest::header::{AUTHORIZATION, WWW_AUTHENTICATE};

use crate::support::{
    Authed, Credential, MerchantCredentials, TestApp, assert_refusal, eventually,
};

/// A /v1 path no handler serves: authenticated callers get 404, others 401.
const ANY_V1_PATH: &str = "/v1/no-such-resource";

#[tokio::test]
async fn a_request_without_credentials_gets_401_with_a_challenge() {
    let app = TestApp::spawn().await;
    let response = app.request(Method::GET, ANY_V1_PATH).send().await.unwrap();
    assert!(
        response
            .headers()
            .get(WWW_AUTHENTICATE)
            .is_some_and(|v| v.to_str().unwrap().starts_with("Basic")),
        "401 carries WWW-Authenticate"
    );
    assert_refusal(response, 401, "auth.missing_credentials").await;
    app.stop().await;
}

#[tokio::test]
async fn malformed_authorization_headers_get_401() {
    let app = TestApp::spawn().await;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    for header in [
        "Bearer abc".to_owned(),
        "Basic".to_owned(),
        "Basic %%%".to_owned(),
        format!("Basic {}", b64("no-colon-here")),
        format!("Basic {}", b64(":only-secret")),
    ] {
        let response = app
            .request(Method::GET, ANY_V1_PATH)
            .header(AUTHORIZATION, header)
            .send()
            .await
            .unwrap();
        assert_refusal(response, 401, "auth.malformed_credentials").await;
    }
    app.stop().await;
}

#[tokio::test]
async fn wrong_unknown_or_swapped_credentials_get_401() {
    let app = TestApp::spawn().await;
    let merchant = app.create_merchant("Wrong Creds Ltd").await;
    let other = app.create_merchant("Other Ltd").await;
    let test = merchant.test();
    let live = merchant.live();
    let attempts = [
        // Right key, wrong secret.
        Credential {
            key: test.key.clone(),
            secret: "not-the-secret".into(),
        },
        // A key nobody issued.
        Credential {
            key: "ck_test_doesnotexist000000000".into(),
            secret: test.secret.clone(),
        },
        // The test key presented as a live key.
        Credential {
            key: test.key.replacen("ck_test_", "ck_live_", 1),
            secret: test.secret.clone(),
        },
        // The live secret with the test key.
        Credential {
            key: test.key.clone(),
            secret: live.secret.clone(),
        },
        // Another merchant's secret with this merchant's key.
        Credential {
            key: live.key.clone(),
            secret: other.live().secret,
        },
        // A key with no environment prefix.
        Credential {
            key: test.key.replacen("ck_test_", "ck_", 1),
            secret: test.secret.clone(),
        },
    ];
    for credential in &attempts {
        let response = app
            .request(Method::GET, ANY_V1_PATH)
            .auth(credential)
            .send()
            .await
            .unwrap();
        assert_refusal(response, 401, "auth.invalid_credentials").await;
    }
    app.stop().await;
}

#[tokio::test]
async fn valid_test_and_live_credentials_are_accepted() {
    let app = TestApp::spawn().await;
    let merchant = app.create_merchant("Valid Ltd").await;
    for credential in [merchant.test(), merchant.live()] {
        let response = app
            .request(Method::GET, ANY_V1_PATH)
            .auth(&credential)
            .send()
            .await
            .unwrap();
        // Past authentication, the unknown path is what is refused.
        assert_refusal(response, 404, "not_found").await;
    }
    app.stop().await;
}

#[tokio::test]
async fn a_revoked_key_gets_401() {
    let app = TestApp::spawn().await;
    let merchant = app.create_merchant("Revoked Ltd").await;
    let pool = app.pool().await;
    sqlx::query("UPDATE api_keys SET revoked_at = now() WHERE key = $1")
        .bind(&merchant.test_key)
        .execute(&pool)
        .await
        .unwrap();
    let response = app
        .request(Method::GET, ANY_V1_PATH)
        .auth(&merchant.test())
        .send()
        .await
        .unwrap();
    assert_refusal(response, 401, "auth.invalid_credentials").await;
    app.stop().await;
}

#[tokio::test]
async fn keys_have_their_environment_prefix_and_secrets_are_not_stored() {
    let app = TestApp::spawn().await;
    let merchant = app.create_merchant("Hashing Ltd").await;
    assert!(merchant.test_key.starts_with("ck_test_"));
    assert!(merchant.live_key.starts_with("ck_live_"));
    assert!(merchant.test_secret.len() >= 32 && merchant.live_secret.len() >= 32);

    let pool = app.pool().await;
    // Every column of every key row, as text: no secret appears anywhere, in any encoding.
    let rows: Vec<(String,)> = sqlx::query_as("SELECT row_to_json(k)::text FROM api_keys k")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    for secret in [&merchant.test_secret, &merchant.live_secret] {
        let hex_secret = hex::encode(secret.as_bytes());
        for (row,) in &rows {
            assert!(
                !row.contains(secret.as_str()),
                "secret stored in plain text"
            );
            assert!(!row.contains(&hex_secret), "secret stored as hex");
        }
    }
    let hashes: Vec<(Vec<u8>,)> = sqlx::query_as("SELECT secret_hash FROM api_keys")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert!(hashes.iter().all(|(h,)| h.len() == 32));
    app.stop().await;
}

/// Verified credentials are trusted briefly from memory; a revocation reaches every request
/// once that bound (`COURIER_AUTH_CACHE_MS`) has passed.
#[tokio::test]
async fn a_revocation_takes_effect_within_the_cache_bound() {
    let app =
        TestApp::spawn_with(|name| (name == "COURIER_AUTH_CACHE_MS").then(|| "400".into())).await;
    let merchant = app.create_merchant("Revoked Later Ltd").await;
    let ask = || {
        app.request(Method::GET, ANY_V1_PATH)
            .auth(&merchant.test())
            .send()
    };
    assert_refusal(ask().await.unwrap(), 404, "not_found").await;
    let pool = app.pool().await;
    sqlx::query("UPDATE api_keys SET revoked_at = now() WHERE key = $1")
        .bind(&merchant.test_key)
        .execute(&pool)
        .await
        .unwrap();
    let response = eventually(
        "the revocation to refuse the key (still accepted well past the bound)",
        Duration::from_millis(1000),
        Duration::from_millis(20),
        || async {
            let response = ask().await.unwrap();
            (response.status() == 401).then_some(response)
        },
    )
    .await;
    assert_refusal(response, 401, "auth.invalid_credentials").await;
    // A wrong secret is refused at once even while the right one is cached.
    let other = app.create_merchant("Cached Ltd").await;
    let right = other.live();
    assert_refusal(
        app.request(Method::GET, ANY_V1_PATH)
            .auth(&right)
            .send()
            .await
            .unwrap(),
        404,
        "not_found",
    )
    .await;
    let wrong = crate::support::Credential {
        key: right.key.clone(),
        secret: "guess".into(),
    };
    assert_refusal(
        app.request(Method::GET, ANY_V1_PATH)
            .auth(&wrong)
            .send()
            .await
            .unwrap(),
        401,
        "auth.invalid_credentials",
    )
    .await;
    app.stop().await;
}
