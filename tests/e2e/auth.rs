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

/// An unknown key, or a known key with a wrong secret, is refused from memory after its first
/// lookup (for `COURIER_AUTH_CACHE_MS`), like a right one is accepted: a flood of either
/// costs no database round trip. Shown by taking the keys table away after the first
/// lookups: the flood is still answered 401, not 503.
#[tokio::test]
async fn a_flood_of_unknown_keys_or_wrong_secrets_is_refused_from_memory() {
    // The failure budget per address is another test's (it would answer 429 here).
    let app = TestApp::spawn_with(|name| {
        (name == "COURIER_AUTH_FAILURE_LIMIT").then(|| "100000".to_owned())
    })
    .await;
    let merchant = app.create_merchant("Probed Ltd").await;
    let test = merchant.test();
    let unknown = Credential {
        key: "ck_test_nobodyissuedthis0000000".into(),
        secret: test.secret.clone(),
    };
    let wrong = Credential {
        key: test.key.clone(),
        secret: "not-the-secret".into(),
    };
    let status = |credential: &Credential| {
        let request = app.request(Method::GET, ANY_V1_PATH).auth(credential);
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(status(&unknown).await, 401);
    assert_eq!(status(&wrong).await, 401);
    assert_eq!(status(&test).await, 404, "the right secret is accepted");

    let pool = sqlx::PgPool::connect(&app.database_url).await.unwrap();
    sqlx::query("ALTER TABLE api_keys RENAME TO api_keys_away")
        .execute(&pool)
        .await
        .unwrap();
    for _ in 0..500 {
        assert_eq!(status(&unknown).await, 401);
        assert_eq!(status(&wrong).await, 401);
    }
    assert_eq!(status(&test).await, 404);
    // A key not seen before does need the database, which is away.
    let unseen = Credential {
        key: "ck_test_neverseenbeforeeither00".into(),
        secret: "x".into(),
    };
    assert_eq!(status(&unseen).await, 503);
    sqlx::query("ALTER TABLE api_keys_away RENAME TO api_keys")
        .execute(&pool)
        .await
        .unwrap();
    app.stop().await;
}

/// One client address may fail to sign in `COURIER_AUTH_FAILURE_LIMIT` times per window; then
/// its requests are answered 429 `rate_limited` with `Retry-After`, before any lookup, but for
/// credentials verified a moment ago. From a trusted proxy, the address it forwards is the
/// one counted; from anyone else `X-Forwarded-For` changes nothing.
#[tokio::test]
async fn failed_sign_ins_are_limited_per_client_address() {
    let status = |app: &TestApp, credential: &Credential, forwarded_for: &str| {
        let request = app
            .request(Method::GET, ANY_V1_PATH)
            .auth(credential)
            .header("X-Forwarded-For", forwarded_for);
        async move {
            let response = request.send().await.unwrap();
            let retry_after = response.headers().contains_key("retry-after");
            let status = response.status().as_u16();
            let body: serde_json::Value = response.json().await.unwrap();
            if status == 429 {
                assert_eq!(body["code"], "rate_limited");
                assert!(retry_after, "429 says when to try again");
            }
            status
        }
    };
    let wrong = |merchant: &Credential| Credential {
        key: merchant.key.clone(),
        secret: "wrong".into(),
    };

    // Behind a trusted proxy (here, the test itself at 127.0.0.1).
    let app = TestApp::spawn_with(|name| match name {
        "COURIER_AUTH_FAILURE_LIMIT" => Some("5".into()),
        "COURIER_TRUSTED_PROXIES" => Some("127.0.0.1".into()),
        _ => None,
    })
    .await;
    let seen = app.create_merchant("Seen Ltd").await.test();
    let unseen = app.create_merchant("Unseen Ltd").await.test();
    let guesser = "203.0.113.7";
    assert_eq!(
        status(&app, &seen, guesser).await,
        404,
        "verified, and remembered"
    );
    for _ in 0..5 {
        assert_eq!(status(&app, &wrong(&seen), guesser).await, 401);
    }
    assert_eq!(status(&app, &wrong(&seen), guesser).await, 429);
    assert_eq!(
        status(&app, &unseen, guesser).await,
        429,
        "right credentials not verified a moment ago wait too"
    );
    assert_eq!(
        status(&app, &seen, guesser).await,
        404,
        "credentials verified a moment ago are still served"
    );
    assert_eq!(
        status(&app, &wrong(&seen), "203.0.113.8").await,
        401,
        "another client behind the same proxy has its own budget"
    );
    assert_eq!(status(&app, &unseen, "203.0.113.8").await, 404);
    app.stop().await;

    // No trusted proxy: the header is the client's own claim, and changes nothing.
    let app = TestApp::spawn_with(|name| match name {
        "COURIER_AUTH_FAILURE_LIMIT" => Some("5".into()),
        _ => None,
    })
    .await;
    let merchant = app.create_merchant("Direct Ltd").await.test();
    for n in 0..5 {
        let claimed = format!("198.51.100.{n}");
        assert_eq!(status(&app, &wrong(&merchant), &claimed).await, 401);
    }
    assert_eq!(status(&app, &wrong(&merchant), "198.51.100.99").await, 429);
    app.stop().await;
}

/// The courier API's wrong credentials count against the same budget per address.
#[tokio::test]
async fn failed_courier_sign_ins_count_against_the_same_budget() {
    let app =
        TestApp::spawn_with(|name| (name == "COURIER_AUTH_FAILURE_LIMIT").then(|| "3".to_owned()))
            .await;
    let forged = || {
        app.request(Method::GET, "/courier/v1/me")
            .bearer_auth(format!("crk_{}.{}", "k".repeat(24), "s".repeat(40)))
    };
    for _ in 0..3 {
        assert_refusal(
            forged().send().await.unwrap(),
            401,
            "auth.invalid_credentials",
        )
        .await;
    }
    let response = forged().send().await.unwrap();
    assert!(response.headers().contains_key("retry-after"));
    assert_refusal(response, 429, "rate_limited").await;
    let merchant = app.create_merchant("Same Address Ltd").await.test();
    let response = app
        .request(Method::GET, ANY_V1_PATH)
        .auth(&merchant)
        .send()
        .await
        .unwrap();
    assert_refusal(response, 429, "rate_limited").await;
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
