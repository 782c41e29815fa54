//! Per-merchant budgets: 429 `rate_limited` with `Retry-After` past the budget, `RateLimit-*`
//! headers on every authenticated answer, separate budgets, per-merchant settings, and the
//! request time limit.

use reqwest::Method;
use serde_json::json;

use crate::support::{
    Authed, Credential, MerchantCredentials, TestApp, assert_refusal, status_and_json,
};

fn header(response: &reqwest::Response, name: &str) -> Option<u64> {
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().unwrap().parse().unwrap())
}

/// A read: `GET /v1/jobs`.
async fn list_jobs(app: &TestApp, credential: &Credential) -> reqwest::Response {
    app.request(Method::GET, "/v1/jobs")
        .auth(credential)
        .send()
        .await
        .unwrap()
}

/// `(status, RateLimit-Limit, RateLimit-Remaining)` of a read.
async fn read(app: &TestApp, credential: &Credential) -> (u16, u64, u64) {
    let response = list_jobs(app, credential).await;
    let reset = header(&response, "ratelimit-reset").expect("RateLimit-Reset");
    assert!(reset <= 60, "{reset}");
    (
        response.status().as_u16(),
        header(&response, "ratelimit-limit").expect("RateLimit-Limit"),
        header(&response, "ratelimit-remaining").expect("RateLimit-Remaining"),
    )
}

#[tokio::test]
async fn a_flood_from_one_key_gets_429s_while_another_merchant_is_unaffected() {
    let app = TestApp::spawn_with(|name| {
        (name == "COURIER_RATE_LIMIT_READS_PER_MINUTE").then(|| "5".into())
    })
    .await;
    let flooder = app.create_merchant("Flood Ltd").await.test();
    let bystander = app.create_merchant("Calm Ltd").await.test();

    for remaining in (0..5).rev() {
        assert_eq!(read(&app, &flooder).await, (200, 5, remaining));
    }
    for _ in 0..3 {
        let response = app
            .request(Method::GET, "/v1/jobs")
            .auth(&flooder)
            .send()
            .await
            .unwrap();
        assert_eq!(header(&response, "ratelimit-limit"), Some(5));
        assert_eq!(header(&response, "ratelimit-remaining"), Some(0));
        // One read comes back every 12 s.
        let retry_after = header(&response, "retry-after").expect("Retry-After");
        assert!((1..=12).contains(&retry_after), "{retry_after}");
        assert!(header(&response, "ratelimit-reset").unwrap() >= retry_after);
        assert_refusal(response, 429, "rate_limited").await;
    }
    // Another merchant, and the flooder's other budgets, are untouched.
    assert_eq!(read(&app, &bystander).await, (200, 5, 4));
    let quote = app
        .request(Method::POST, "/v1/quotes")
        .auth(&flooder)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        header(&quote, "ratelimit-limit"),
        Some(1200),
        "the quotes budget"
    );
    assert_ne!(quote.status(), 429);
    // Refusals of the request itself still carry the headers.
    let unknown = app
        .request(Method::GET, "/v1/no-such-resource")
        .auth(&bystander)
        .send()
        .await
        .unwrap();
    assert_eq!(header(&unknown, "ratelimit-remaining"), Some(3));
    assert_refusal(unknown, 404, "not_found").await;
    app.stop().await;
}

/// The budgets are the merchant's: its keys, test and live alike, spend one budget, so a second
/// key adds nothing.
#[tokio::test]
async fn a_merchants_keys_share_one_budget() {
    let app = TestApp::spawn_with(|name| {
        (name == "COURIER_RATE_LIMIT_READS_PER_MINUTE").then(|| "5".into())
    })
    .await;
    let merchant = app.create_merchant("Many Keys Ltd").await;
    let (status, second) = status_and_json(
        app.admin(
            Method::POST,
            &format!("/merchants/{}/keys", merchant.merchant_id),
        )
        .json(&json!({"environment": "test", "label": "second"}))
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{second}");
    let second = Credential {
        key: second["key"].as_str().unwrap().to_owned(),
        secret: second["secret"].as_str().unwrap().to_owned(),
    };
    let first = merchant.test();
    for remaining in (2..5).rev() {
        assert_eq!(read(&app, &first).await, (200, 5, remaining));
    }
    for remaining in (0..2).rev() {
        assert_eq!(read(&app, &second).await, (200, 5, remaining));
    }
    for credential in [&first, &second, &merchant.live()] {
        assert_refusal(list_jobs(&app, credential).await, 429, "rate_limited").await;
    }
    // Another merchant is untouched.
    let other = app.create_merchant("Other Ltd").await.test();
    assert_eq!(read(&app, &other).await, (200, 5, 4));
    app.stop().await;
}

#[tokio::test]
async fn a_merchants_budgets_are_its_settings_divided_among_the_instances() {
    let app = TestApp::spawn_with(|name| match name {
        "COURIER_RATE_LIMIT_BOOKINGS_PER_MINUTE" => Some("40".into()),
        "COURIER_INSTANCES" => Some("2".into()),
        // Trusted from memory for long: the settings change must still apply at once.
        "COURIER_AUTH_CACHE_MS" => Some("600000".into()),
        _ => None,
    })
    .await;
    let merchant = app.create_merchant("Budget Ltd").await;
    let credential = merchant.test();
    // The default reads budget, 1200 a minute, halved for two instances.
    assert_eq!(read(&app, &credential).await, (200, 600, 599));
    let booking = app
        .request(Method::POST, "/v1/jobs")
        .auth(&credential)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(header(&booking, "ratelimit-limit"), Some(20));

    let path = format!("/merchants/{}/settings", merchant.merchant_id);
    let (status, settings) = status_and_json(
        app.admin(Method::PATCH, &path)
            .json(&json!({"rate_limit_reads_per_minute": 4}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{settings}");
    assert_eq!(settings["rate_limit_reads_per_minute"], 4);
    // Two reads a minute on this instance; the read just made still counts against it.
    let (status, limit, _) = read(&app, &credential).await;
    assert_eq!((status, limit), (200, 2));
    let _ = read(&app, &credential).await;
    assert_eq!(read(&app, &credential).await, (429, 2, 0));

    // Back to the default.
    let (status, settings) = status_and_json(
        app.admin(Method::PATCH, &path)
            .json(&json!({"rate_limit_reads_per_minute": null}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{settings}");
    assert_eq!(
        settings["rate_limit_reads_per_minute"],
        serde_json::Value::Null
    );
    assert_eq!(read(&app, &credential).await.1, 600);

    for bad in [json!(0), json!(-1), json!(1_000_001), json!("many")] {
        let response = app
            .admin(Method::PATCH, &path)
            .json(&json!({"rate_limit_quotes_per_minute": bad}))
            .send()
            .await
            .unwrap();
        let code = if bad.is_string() {
            "request.invalid_body"
        } else {
            "settings.invalid_rate_limit"
        };
        assert_refusal(response, 422, code).await;
    }
    app.stop().await;
}

/// A one-millisecond limit abandons a price-book upload (validation runs the component):
/// 503 `service.timeout`, and nothing is kept.
#[tokio::test]
async fn a_request_past_the_time_limit_is_abandoned_with_503() {
    use base64::Engine;
    let app =
        TestApp::spawn_with(|name| (name == "COURIER_REQUEST_TIMEOUT_MS").then(|| "1".into()))
            .await;
    let mut component = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plugins/dist/standard-price-book.wasm"
    ))
    .unwrap();
    // A custom section of fresh bytes at the end: still the same price book, but not one the
    // engine has compiled, so validating it takes far longer than the limit however fast the
    // rest of the upload is.
    let name = b"courier-test";
    let payload = uuid::Uuid::new_v4().into_bytes();
    component.extend([
        0x00,
        (1 + name.len() + payload.len()) as u8,
        name.len() as u8,
    ]);
    component.extend(name);
    component.extend(payload);
    let pool = app.pool().await;
    let settings: serde_json::Value = sqlx::query_scalar(
        "SELECT settings FROM price_book_uploads WHERE market_id = 'demo' AND version = 1",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    let response = app
        .admin(Method::POST, "/markets/demo/price-books")
        .json(&json!({
            "component_base64": base64::engine::general_purpose::STANDARD.encode(component),
            "settings": settings,
        }))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 503, "service.timeout").await;
    let uploads: i64 =
        sqlx::query_scalar("SELECT count(*) FROM price_book_uploads WHERE market_id = 'demo'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(uploads, 1, "the abandoned upload kept nothing");
    // Outside /v1 and /admin/v1 (health checks) there is no limit.
    let ready = app.request(Method::GET, "/readyz").send().await.unwrap();
    assert_eq!(ready.status(), 200);
    app.stop().await;
}

/// The public routes count requests per client address: past the budget, 429 `rate_limited`
/// with `Retry-After`, while another address is served.
#[tokio::test]
async fn public_routes_have_a_budget_per_client_address() {
    let app = TestApp::spawn_with(|name| {
        (name == "COURIER_PUBLIC_REQUEST_LIMIT").then(|| "20".to_owned())
    })
    .await;
    // The readiness checks of the start spent part of the budget already.
    let mut served = 0;
    while app
        .client
        .get(app.url("/healthz"))
        .send()
        .await
        .unwrap()
        .status()
        == 200
    {
        served += 1;
        assert!(served <= 20, "more than the budget was served");
    }
    for path in [
        "/healthz",
        "/readyz",
        "/track/unknown-token/state",
        "/v1/openapi.json",
    ] {
        let response = app.client.get(app.url(path)).send().await.unwrap();
        assert!(
            header(&response, "retry-after").is_some_and(|s| s >= 1),
            "{path}"
        );
        assert_refusal(response, 429, "rate_limited").await;
    }
    // Merchant requests have budgets of their own.
    let merchant = app.create_merchant("Unaffected Ltd").await;
    let listed = list_jobs(&app, &merchant.test()).await;
    assert_eq!(listed.status(), 200);
    // Another client address has its whole budget.
    let elsewhere = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .build()
        .unwrap();
    let response = elsewhere.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(response.status(), 200);
}

/// Behind a balancer on the same machine, with the service listening on IPv6 (`[::]`), the
/// balancer's IPv4 connections arrive as `::ffff:127.0.0.1`: still the trusted proxy of
/// `COURIER_TRUSTED_PROXIES=127.0.0.1/32`, so each client it forwards keeps a budget of its
/// own, and an IPv6 client is counted by its /64.
#[tokio::test]
async fn clients_behind_a_balancer_on_an_ipv6_listener_keep_their_own_budgets() {
    use crate::support::process::{free_port, service_settings, spawn_service, wait_until_ready};
    let database_url = crate::support::fresh_database_url().await;
    let data_dir = crate::support::scratch_path("ipv6-listener");
    let port = free_port();
    let mut env = service_settings(&database_url, &format!("[::]:{port}"), &data_dir);
    env.extend([
        (
            "COURIER_TRUSTED_PROXIES".to_owned(),
            "127.0.0.1/32".to_owned(),
        ),
        ("COURIER_PUBLIC_REQUEST_LIMIT".to_owned(), "5".to_owned()),
    ]);
    let mut service = spawn_service(&env);
    let client = reqwest::Client::new();
    let base_url = format!("http://127.0.0.1:{port}");
    wait_until_ready(&client, &base_url).await;
    let health = |forwarded_for: String| {
        client
            .get(format!("{base_url}/healthz"))
            .header("X-Forwarded-For", forwarded_for)
            .send()
    };
    let mut served = 0;
    while health("203.0.113.7".into()).await.unwrap().status() == 200 {
        served += 1;
        assert!(served <= 5, "more than the budget was served");
    }
    assert_eq!(served, 5);
    assert_refusal(
        health("203.0.113.7".into()).await.unwrap(),
        429,
        "rate_limited",
    )
    .await;
    // Another client behind the same balancer has its whole budget.
    assert_eq!(health("203.0.113.8".into()).await.unwrap().status(), 200);
    // An IPv6 client's budget is its /64's, whichever of its addresses it uses.
    for n in 1..=5 {
        let address = format!("2001:db8:5:6::{n}");
        assert_eq!(
            health(address.clone()).await.unwrap().status(),
            200,
            "{address}"
        );
    }
    assert_refusal(
        health("2001:db8:5:6:ffff::9".into()).await.unwrap(),
        429,
        "rate_limited",
    )
    .await;
    assert_eq!(
        health("2001:db8:5:7::1".into()).await.unwrap().status(),
        200
    );
    service.kill().unwrap();
    service.wait().unwrap();
    let _ = std::fs::remove_dir_all(&data_dir);
}
