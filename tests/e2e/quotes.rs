//! `POST /v1/quotes`: prices from the road network and the market's active price book.

use std::collections::HashMap;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{
    Authed, Credential, MerchantCredentials, TestApp, assert_refusal, eventually, status_and_json,
};

const KNOWN_CODES: [&str; 7] = [
    "base_fare",
    "distance",
    "duration",
    "surge",
    "minimum_fare",
    "merchant_adjustment",
    "tax",
];

pub struct Quoting {
    pub app: TestApp,
    pub credential: Credential,
}

impl Quoting {
    pub async fn start() -> Self {
        Self::start_with(|_| None).await
    }

    pub async fn start_with(extra: impl Fn(&str) -> Option<String>) -> Self {
        let app = TestApp::spawn_with(extra).await;
        let credential = app.create_merchant("Quoting Ltd").await.test();
        let quoting = Self { app, credential };
        // The demo city's network loads in the background.
        eventually(
            "quotes to become available",
            Duration::from_secs(10),
            Duration::from_millis(25),
            || async { (quoting.quote(&journey(None)).await.0 != 503).then_some(()) },
        )
        .await;
        quoting
    }

    pub async fn quote(&self, body: &Value) -> (u16, Value) {
        status_and_json(
            self.app
                .request(Method::POST, "/v1/quotes")
                .auth(&self.credential)
                .json(body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }
}

pub use crate::support::{FOURTH_STREET_41, SEVENTEENTH_STREET_102, journey};

fn total(quote: &Value) -> i64 {
    quote["total_amount_minor"].as_i64().unwrap()
}

/// A future local time in the demo market (Asia/Riyadh, UTC+3), `days` ahead at `hour`.
fn riyadh(days: i64, hour: u32) -> String {
    let date = (chrono::Utc::now() + chrono::Duration::days(days)).date_naive();
    format!("{}T{:02}:00:00+03:00", date, hour)
}

/// Days from today to the next day, from tomorrow on, that is not a Friday: the demo book adds
/// 10% on Fridays.
fn days_to_a_plain_weekday() -> i64 {
    use chrono::Datelike;
    (1..=2)
        .find(|days| {
            let date = (chrono::Utc::now() + chrono::Duration::days(*days)).date_naive();
            date.weekday() != chrono::Weekday::Fri
        })
        .expect("two days in a row are never both Fridays")
}

#[tokio::test]
async fn a_quote_prices_the_route_with_the_active_book() {
    let quoting = Quoting::start().await;
    let before = chrono::Utc::now();
    let (status, quote) = quoting.quote(&journey(Some("car"))).await;
    assert_eq!(status, 201, "{quote}");
    assert!(uuid::Uuid::parse_str(quote["id"].as_str().unwrap()).is_ok());
    assert_eq!(quote["currency"], "USD");
    assert_eq!(quote["vehicle"], "car");
    assert_eq!(quote["price_book_version"], 1);
    let lines = quote["breakdown"].as_array().unwrap();
    assert!(!lines.is_empty());
    let sum: i64 = lines
        .iter()
        .map(|l| l["amount_minor"].as_i64().unwrap())
        .sum();
    assert_eq!(sum, total(&quote), "the lines sum to the total");
    for line in lines {
        assert!(
            KNOWN_CODES.contains(&line["code"].as_str().unwrap()),
            "{line}"
        );
        assert!(!line["description"].as_str().unwrap().is_empty());
    }
    assert!(lines.iter().any(|l| l["code"] == "base_fare"));
    assert!(lines.iter().any(|l| l["code"] == "tax"));
    let expected_total = format!("{}.{:02} USD", total(&quote) / 100, total(&quote) % 100);
    assert_eq!(quote["total"], expected_total);
    let expires: chrono::DateTime<chrono::Utc> =
        quote["expires_at"].as_str().unwrap().parse().unwrap();
    let lifetime = (expires - before).num_seconds();
    assert!((599..=602).contains(&lifetime), "{lifetime}");

    // Distance and duration are the route's, for the same vehicle.
    let (from, to) = (FOURTH_STREET_41, SEVENTEENTH_STREET_102);
    let route_path = format!(
        "/v1/routes?fromLatitude={}&fromLongitude={}&toLatitude={}&toLongitude={}&vehicle=car",
        from.0, from.1, to.0, to.1
    );
    let (_, route) = status_and_json(
        quoting
            .app
            .request(Method::GET, &route_path)
            .auth(&quoting.credential)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(quote["distance_metres"], route["distance_metres"]);
    assert_eq!(
        quote["estimated_duration_seconds"],
        route["duration_seconds"]
    );
    quoting.app.stop().await;
}

#[tokio::test]
async fn the_vehicle_defaults_to_the_smallest_and_numbers_may_be_strings() {
    let quoting = Quoting::start().await;
    let (status, quote) = quoting
        .quote(&json!({
            "pickup": {"latitude": "20.00285", "longitude": "50.0043"},
            "dropoff": {"latitude": "20.01615", "longitude": "50.0103"},
            "weight_grams": "0",
        }))
        .await;
    assert_eq!(status, 201, "{quote}");
    assert_eq!(quote["vehicle"], "bicycle");
    quoting.app.stop().await;
}

#[tokio::test]
async fn weight_and_local_time_change_the_price() {
    let quoting = Quoting::start().await;
    let mut light = journey(Some("bicycle"));
    light["scheduled_for"] = json!(riyadh(2, 12));
    let mut heavy = light.clone();
    heavy["weight_grams"] = json!(5000);
    let mut night = light.clone();
    night["scheduled_for"] = json!(riyadh(2, 23));
    let (_, light) = quoting.quote(&light).await;
    let (_, heavy) = quoting.quote(&heavy).await;
    let (status, night) = quoting.quote(&night).await;
    assert_eq!(status, 201, "{night}");
    assert!(total(&heavy) > total(&light), "{heavy} vs {light}");
    assert!(
        total(&night) > total(&light),
        "night surcharge: {night} vs {light}"
    );
    quoting.app.stop().await;
}

#[tokio::test]
async fn quote_refusals_have_their_codes() {
    let quoting = Quoting::start().await;
    let with = |path: &[&str], value: Value| {
        let mut body = journey(None);
        let mut target = &mut body;
        for key in &path[..path.len() - 1] {
            target = &mut target[*key];
        }
        target[path[path.len() - 1]] = value;
        body
    };
    let cases = [
        (
            with(&["pickup", "latitude"], json!(95)),
            "request.invalid_pickup",
        ),
        (with(&["pickup"], json!("here")), "request.invalid_pickup"),
        (
            with(&["dropoff", "longitude"], json!("east")),
            "request.invalid_dropoff",
        ),
        (
            with(&["vehicle"], json!("truck")),
            "request.unknown_vehicle",
        ),
        (with(&["weight_grams"], json!(-5)), "request.invalid_weight"),
        (
            with(&["scheduled_for"], json!("2020-01-01T10:00:00Z")),
            "job.scheduled_in_past",
        ),
        (
            with(&["scheduled_for"], json!("next tuesday")),
            "request.invalid_scheduled_for",
        ),
        (
            with(&["pickup"], json!({"latitude": 47.14, "longitude": 9.52})),
            "pricing.origin_not_covered",
        ),
        (
            with(&["dropoff"], json!({"latitude": 47.14, "longitude": 9.52})),
            "pricing.destination_not_covered",
        ),
    ];
    for (body, code) in cases {
        let response = quoting
            .app
            .request(Method::POST, "/v1/quotes")
            .auth(&quoting.credential)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_refusal(response, 422, code).await;
    }
    let response = quoting
        .app
        .request(Method::POST, "/v1/quotes")
        .json(&journey(None))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 401, "auth.missing_credentials").await;
    quoting.app.stop().await;
}

#[tokio::test]
async fn vehicles_not_offered_and_unroutable_points_are_refused() {
    let path = crate::support::car_only_market_file();
    let file = path.to_string_lossy().into_owned();
    let quoting =
        Quoting::start_with(move |name| (name == "COURIER_MARKETS_FILE").then(|| file.clone()))
            .await;
    let (status, body) = quoting.quote(&journey(Some("bicycle"))).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("pricing.vehicle_not_available"))
    );
    let mut far = journey(Some("car"));
    far["dropoff"] = json!({"latitude": 20.10, "longitude": 50.10});
    let (status, body) = quoting.quote(&far).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("pricing.no_route"))
    );
    let (status, quote) = quoting.quote(&journey(None)).await;
    assert_eq!((status, quote["currency"].as_str()), (201, Some("EUR")));
    quoting.app.stop().await;
    let _ = std::fs::remove_file(path);
}

/// Uploads the demo book with the car's base fare raised by `raise` minor units.
pub async fn upload_dearer_book(app: &TestApp, raise: i64) -> i64 {
    let mut settings = crate::price_books::demo_settings(app).await;
    let fare = settings["vehicles"]["car"]["base_fare_minor"]
        .as_i64()
        .unwrap();
    settings["vehicles"]["car"]["base_fare_minor"] = json!(fare + raise);
    let component = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plugins/dist/standard-price-book.wasm"
    ))
    .unwrap();
    use base64::Engine;
    let (status, body) = status_and_json(
        app.admin(Method::POST, "/markets/demo/price-books")
            .json(&json!({
                "component_base64": base64::engine::general_purpose::STANDARD.encode(component),
                "settings": settings,
            }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body["version"].as_i64().unwrap()
}

pub async fn activate(app: &TestApp, version: i64) -> i64 {
    let (status, body) = status_and_json(
        app.admin(
            Method::POST,
            &format!("/markets/demo/price-books/{version}/activate"),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["price_book_version"].as_i64().unwrap()
}

#[tokio::test]
async fn quotes_carry_the_version_of_the_book_that_priced_them() {
    let quoting = Quoting::start().await;
    let (_, before) = quoting.quote(&journey(Some("car"))).await;
    let upload = upload_dearer_book(&quoting.app, 500).await;
    let (_, still) = quoting.quote(&journey(Some("car"))).await;
    assert_eq!(
        still["price_book_version"], 1,
        "uploading does not activate"
    );
    assert_eq!(activate(&quoting.app, upload).await, 2);
    let (_, after) = quoting.quote(&journey(Some("car"))).await;
    assert_eq!(after["price_book_version"], 2);
    assert!(total(&after) > total(&before), "{after} vs {before}");
    // Rollback.
    assert_eq!(activate(&quoting.app, 1).await, 3);
    let (_, rolled_back) = quoting.quote(&journey(Some("car"))).await;
    assert_eq!(rolled_back["price_book_version"], 3);
    assert_eq!(total(&rolled_back), total(&before));
    quoting.app.stop().await;
}

#[tokio::test]
async fn a_comparison_reprices_recent_quotes() {
    let quoting = Quoting::start().await;
    for vehicle in ["car", "car", "car", "bicycle", "van"] {
        // Priced for noon on a coming day that is not a Friday, outside the demo book's peak
        // hours and weekday surcharge, whenever the test runs.
        let mut body = journey(Some(vehicle));
        body["scheduled_for"] = json!(riyadh(days_to_a_plain_weekday(), 12));
        let (status, _) = quoting.quote(&body).await;
        assert_eq!(status, 201);
    }
    let upload = upload_dearer_book(&quoting.app, 400).await;
    let (status, comparison) = status_and_json(
        quoting
            .app
            .admin(
                Method::GET,
                &format!("/markets/demo/price-books/{upload}/comparison"),
            )
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{comparison}");
    // The start-up probe quotes (bicycle) count too: only the car quotes move.
    assert!(comparison["quotes_compared"].as_u64().unwrap() >= 5);
    assert_eq!(comparison["changed"], 3, "{comparison}");
    assert_eq!(comparison["increased"], 3);
    assert_eq!(comparison["decreased"], 0);
    assert_eq!(comparison["refused"], 0);
    // 400 more before tax; the demo book's tax is 15%.
    assert_eq!(comparison["largest_increase_minor"], 460, "{comparison}");
    let (status, body) = status_and_json(
        quoting
            .app
            .admin(Method::GET, "/markets/demo/price-books/99/comparison")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (404, Some("price_book.version_not_found"))
    );
    quoting.app.stop().await;
}

/// The CLI activates in the database; the running service follows within a second.
#[tokio::test]
async fn an_activation_by_another_process_reaches_the_service() {
    let quoting = Quoting::start().await;
    let upload = upload_dearer_book(&quoting.app, 300).await;
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_courier"))
        .args(["price-book", "activate", "--market", "demo", "--version"])
        .arg(upload.to_string())
        .env("DATABASE_URL", &quoting.app.database_url)
        .env("COURIER_SECRET_KEY", "5e".repeat(32))
        .env("COURIER_DATA_DIR", &quoting.app.data_dir)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["price_book_version"], 2);
    eventually(
        "the activation to reach the service",
        Duration::from_secs(2),
        Duration::from_millis(20),
        || async {
            let (_, quote) = quoting.quote(&journey(Some("car"))).await;
            (quote["price_book_version"] == 2).then_some(())
        },
    )
    .await;
    quoting.app.stop().await;
}

/// Swapping books back and forth under concurrent quoting: no failure, and every price is
/// exactly the one its version's book gives.
#[tokio::test]
async fn hot_swaps_under_load_fail_nothing_and_never_mix_versions() {
    let quoting = Quoting::start().await;
    let dearer = upload_dearer_book(&quoting.app, 700).await;
    let (_, cheap) = quoting.quote(&journey(Some("car"))).await;
    let (cheap_total, base_version) =
        (total(&cheap), cheap["price_book_version"].as_i64().unwrap());
    assert_eq!(base_version, 1);

    let quoting = std::sync::Arc::new(quoting);
    let mut workers = Vec::new();
    for _ in 0..6 {
        let quoting = std::sync::Arc::clone(&quoting);
        workers.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            for _ in 0..40 {
                let (status, quote) = quoting.quote(&journey(Some("car"))).await;
                assert_eq!(status, 201, "{quote}");
                seen.push((quote["price_book_version"].as_i64().unwrap(), total(&quote)));
            }
            seen
        }));
    }
    // Alternate the two uploads while the workers quote.
    let mut upload_of_version = HashMap::from([(1, 1)]);
    for round in 0..10 {
        let upload = if round % 2 == 0 { dearer } else { 1 };
        let version = activate(&quoting.app, upload).await;
        upload_of_version.insert(version, upload);
        tokio::time::sleep(std::time::Duration::from_millis(15)).await;
    }
    let mut totals_by_upload: HashMap<i64, std::collections::BTreeSet<i64>> = HashMap::new();
    for worker in workers {
        for (version, total) in worker.await.unwrap() {
            let upload = upload_of_version[&version];
            totals_by_upload.entry(upload).or_default().insert(total);
        }
    }
    assert_eq!(
        totals_by_upload[&1].iter().copied().collect::<Vec<_>>(),
        vec![cheap_total],
        "every quote under upload 1 has upload 1's price"
    );
    if let Some(dear) = totals_by_upload.get(&dearer) {
        assert_eq!(
            dear.len(),
            1,
            "every quote under the dearer upload has one price"
        );
        assert!(dear.iter().all(|t| *t > cheap_total));
    }
    std::sync::Arc::try_unwrap(quoting)
        .ok()
        .unwrap()
        .app
        .stop()
        .await;
}
