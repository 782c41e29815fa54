//! The couriers' app in headless Chromium on a phone (360 × 740, touch), its position set as
//! a phone's would be, moving along road routes of a real market (Liechtenstein, from the
//! shared OpenStreetMap extracts): signed in with an operator's code, online, driven to the
//! pickup, a bundle of two offered
//! without reloading, accepted, collected, one delivered with a photo and a signature drawn
//! on the screen, the other returned; then a second bundle with the network cut after
//! accepting (a forwarder in front of the service stands for the phone's network): every
//! move kept on the phone and sent once it is back, the merchant's events and charges right,
//! nothing applied twice. Screenshots of every screen; axe-core clean.

use std::time::Duration;

use fantoccini::Locator;
use fantoccini::actions::{InputSource, PointerAction, TouchActions};
use serde_json::{Value, json};

use crate::console_browser::{arrives_at, click, looked_at};
use crate::courier_app::{PHOTO, sign_in_code};
use crate::fulfilment::{Floor, PICKUP, Place};
use crate::routes::two_parcels;
use crate::support::browser::{Browser, artifacts_dir};
use crate::support::forwarder::Forwarder;

const WIDTH: u32 = 360;
const HEIGHT: u32 = 740;

/// The phone is at `(latitude, longitude)`.
async fn phone_at(browser: &Browser, (latitude, longitude): (f64, f64)) {
    browser
        .devtools(
            "Emulation.setGeolocationOverride",
            json!({"latitude": latitude, "longitude": longitude, "accuracy": 10}),
        )
        .await;
}

/// A journey in Liechtenstein: a pickup in Vaduz, a drop-off in Schaan, and where the courier
/// starts, south of Vaduz.
const VADUZ_PICKUP: (f64, f64) = (47.1410, 9.5215);
const SCHAAN_DROPOFF: (f64, f64) = (47.1660, 9.5100);
const TRIESEN_START: (f64, f64) = (47.1200, 9.5270);

/// The points a phone moving along `market`'s car route from `from` to `to` reports: the
/// route's bends 150 m or more apart, and its end (each far enough from the last for the app
/// to send it at once).
fn along_the_road(
    markets_file: &std::path::Path,
    from: (f64, f64),
    to: (f64, f64),
) -> Vec<(f64, f64)> {
    use courier_geo::LatLon;
    let markets = courier_core::markets::Markets::from_file(Some(markets_file)).unwrap();
    markets.load_networks(None);
    let market = markets.get("liechtenstein").unwrap();
    let route = market
        .route(
            courier_domain::Vehicle::Car,
            LatLon::new(from.0, from.1),
            LatLon::new(to.0, to.1),
        )
        .unwrap();
    assert!(route.distance_metres > 1000, "{} m", route.distance_metres);
    let mut points: Vec<LatLon> = Vec::new();
    let mut last = route.shape[0];
    for &bend in &route.shape[1..] {
        if metres(last, bend) >= 150.0 {
            points.push(bend);
            last = bend;
        }
    }
    let end = *route.shape.last().unwrap();
    if points.last().is_some_and(|&p| metres(p, end) < 100.0) {
        points.pop();
    }
    points.push(end);
    points.iter().map(|p| (p.lat, p.lon)).collect()
}

fn metres(a: courier_geo::LatLon, b: courier_geo::LatLon) -> f64 {
    let rad = std::f64::consts::PI / 180.0;
    let x = (b.lon - a.lon) * rad * ((a.lat + b.lat) / 2.0 * rad).cos();
    let y = (b.lat - a.lat) * rad;
    (x * x + y * y).sqrt() * 6_371_000.0
}

/// Moves the phone through `points`, each waited for until the service has it as the
/// courier's position (the app sends a move of 50 m at once).
async fn drive(browser: &Browser, floor: &Floor, courier_id: &str, points: &[(f64, f64)]) {
    let pool = floor.app.pool().await;
    for &point in points {
        phone_at(browser, point).await;
        crate::support::eventually(
            "the phone's position at the service",
            Duration::from_secs(10),
            Duration::from_millis(50),
            || async {
                let (latitude, longitude): (f64, f64) = sqlx::query_as(
                    "SELECT latitude, longitude FROM courier_positions WHERE courier_id = $1::uuid",
                )
                .bind(courier_id)
                .fetch_optional(&pool)
                .await
                .unwrap()?;
                ((latitude - point.0).abs() < 1e-6 && (longitude - point.1).abs() < 1e-6)
                    .then_some(())
            },
        )
        .await;
    }
}

/// Waits until the page has an element `css` finds.
async fn shows(browser: &Browser, what: &str, css: &str) {
    browser
        .wait_until(what, || async {
            browser.client.find(Locator::Css(css)).await.is_ok()
        })
        .await;
}

/// Waits until nothing on the page matches `css` (the page that had it was replaced).
async fn gone(browser: &Browser, what: &str, css: &str) {
    browser
        .wait_until(what, || async {
            browser.client.find(Locator::Css(css)).await.is_err()
        })
        .await;
}

/// The text of the element with `id`, if the page has it now.
async fn text_now(browser: &Browser, id: &str) -> Option<String> {
    let element = browser.client.find(Locator::Id(id)).await.ok()?;
    element.text().await.ok()
}

/// Waits until the header says how many moves wait on the phone.
async fn waiting(browser: &Browser, count: &str) {
    let what = format!("{count} waiting on the phone");
    browser
        .wait_until(&what, || async {
            text_now(browser, "outbox-status")
                .await
                .is_some_and(|t| t.contains(count))
        })
        .await;
}

/// Presses the form posting to `action` and waits for the page that answers it (the same
/// address, a new document), so the next step never finds the page that is going away.
async fn press_and_wait(browser: &Browser, action: &str) {
    browser
        .client
        .execute("document.body.dataset.pressed = 'yes';", vec![])
        .await
        .unwrap();
    press(browser, action).await;
    browser
        .wait_until("the page that answers the form", || async {
            browser
                .client
                .execute(
                    "return document.readyState === 'complete' && document.body !== null \
                     && document.body.dataset.pressed === undefined;",
                    vec![],
                )
                .await
                .is_ok_and(|answer| answer == serde_json::Value::Bool(true))
        })
        .await;
}

/// Clicks the first button of the form posting to `action`.
async fn press(browser: &Browser, action: &str) {
    click(
        browser,
        &format!("form[action=\"{action}\"] button[type=submit]"),
    )
    .await;
}

/// Draws a signature on the pad with a finger.
async fn sign(browser: &Browser) {
    let pad = browser
        .client
        .find(Locator::Id("signature-pad"))
        .await
        .unwrap();
    pad.clone().click().await.ok();
    let stroke = TouchActions::new("finger".into())
        .then(PointerAction::MoveToElement {
            element: pad,
            duration: None,
            x: -80.0,
            y: 10.0,
        })
        .then(PointerAction::Down { button: 0 })
        .then(PointerAction::MoveBy {
            duration: Some(Duration::from_millis(100)),
            x: 60.0,
            y: -25.0,
        })
        .then(PointerAction::MoveBy {
            duration: Some(Duration::from_millis(100)),
            x: 60.0,
            y: 30.0,
        })
        .then(PointerAction::Up { button: 0 });
    browser.client.perform_actions(stroke).await.unwrap();
}

/// On the delivery page of `job`: a photo from the "camera" (a file), a signature, sent.
async fn deliver(browser: &Browser, site: &str, job: &Value, photo: &std::path::Path) {
    let id = job["id"].as_str().unwrap();
    browser
        .client
        .goto(&format!("{site}/courier/jobs/{id}/deliver"))
        .await
        .unwrap();
    shows(browser, "the delivery form", "#delivery-form").await;
    let name = browser
        .client
        .find(Locator::Id("recipient_name"))
        .await
        .unwrap();
    name.send_keys("Dana Dropoff").await.unwrap();
    let file = browser.client.find(Locator::Id("photo")).await.unwrap();
    file.send_keys(&photo.display().to_string()).await.unwrap();
    sign(browser).await;
    browser
        .wait_until("the signature kept", || async {
            browser
                .attr("signature", "value")
                .await
                .is_some_and(|v| v.starts_with("data:image/png;base64,"))
        })
        .await;
}

/// On the delivery page of `job`: returned, with a reason.
async fn give_back(browser: &Browser, site: &str, job: &Value) {
    let id = job["id"].as_str().unwrap();
    browser
        .client
        .goto(&format!("{site}/courier/jobs/{id}/deliver"))
        .await
        .unwrap();
    shows(browser, "the return form", "#reason").await;
    let reason = browser.client.find(Locator::Id("reason")).await.unwrap();
    reason.send_keys("Nobody at the door").await.unwrap();
    press(browser, &format!("/courier/jobs/{id}/returned")).await;
}

/// Waits for the offer, accepts it: both parcels are on the route.
async fn accept_offer(browser: &Browser, screenshot: Option<&str>) {
    shows(
        browser,
        "an offer, without reloading by hand",
        "article.offer",
    )
    .await;
    if let Some(name) = screenshot {
        looked_at(browser, name).await;
    }
    click(browser, "article.offer .answer form button.primary").await;
    shows(browser, "the route", "li.stop-card.pickup").await;
    gone(browser, "the offer answered", "article.offer").await;
}

/// Presses "Collected" for `job`, the network up: the page comes back without that form.
async fn collect(browser: &Browser, job: &Value) {
    let action = format!("/courier/jobs/{}/collected", job["id"].as_str().unwrap());
    press(browser, &action).await;
    gone(
        browser,
        "the collection made",
        &format!("form[action=\"{action}\"]"),
    )
    .await;
}

/// The job as its merchant sees it, once it reads `status`.
async fn merchant_sees(floor: &Floor, job: &Value, status: &str) {
    let what = format!("{} {status}", job["reference"]);
    crate::support::eventually(
        &what,
        Duration::from_secs(20),
        Duration::from_millis(100),
        || async { (floor.job(job).await["status"] == status).then_some(()) },
    )
    .await;
}

#[tokio::test]
async fn a_courier_works_a_shift_on_a_phone_including_a_dead_zone() {
    let Some(markets) = crate::support::liechtenstein_market_file() else {
        return;
    };
    let place = Place {
        market: "liechtenstein".into(),
        city: "Vaduz".into(),
        pickup: VADUZ_PICKUP,
        dropoff: SCHAAN_DROPOFF,
    };
    let floor = Floor::start_at(
        place,
        &[
            ("COURIER_OFFER_TIMEOUT_MS", "60000"),
            ("COURIER_MARKETS_FILE", markets.to_str().unwrap()),
            // Every position the phone sends is on the courier's trail.
            ("COURIER_TRACKING_TRAIL_EVERY_MS", "0"),
        ],
    )
    .await;
    // The phone moves along the market's own roads: to the pickup, then to the drop-off.
    let to_pickup = along_the_road(&markets, TRIESEN_START, VADUZ_PICKUP);
    let to_dropoff = along_the_road(&markets, VADUZ_PICKUP, SCHAAN_DROPOFF);
    let settings = format!("/merchants/{}/settings", floor.merchant.merchant_id);
    let (status, _) = floor
        .admin_call(
            reqwest::Method::PATCH,
            &settings,
            Some(json!({"proof_photo_required": true, "proof_signature_required": true})),
        )
        .await;
    assert_eq!(status, 200);
    // The phone reaches the service through a network that can go away.
    let port: u16 = floor
        .app
        .base_url
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let network = Forwarder::start(port).await;
    let site = format!("http://localhost:{}", network.port);
    let photo = artifacts_dir().join("courier-app-door.png");
    std::fs::create_dir_all(artifacts_dir()).unwrap();
    std::fs::write(&photo, PHOTO).unwrap();

    let rider = floor.rider("Pia Phone", "car", None).await;
    let (_, link) = sign_in_code(&floor, &rider.id).await;
    let browser = Browser::start(WIDTH, HEIGHT).await;
    browser
        .devtools(
            "Browser.grantPermissions",
            json!({"origin": site, "permissions": ["geolocation"]}),
        )
        .await;
    phone_at(&browser, TRIESEN_START).await;

    // Signed in from the operator's link: the code is filled in.
    browser.client.goto(&format!("{site}{link}")).await.unwrap();
    looked_at(&browser, "courier-sign-in.png").await;
    click(&browser, "form.sign-in button").await;
    arrives_at(&browser, "/courier/").await;
    looked_at(&browser, "courier-offline.png").await;

    // Two parcels of one pickup, then online: the phone's position goes with it.
    let [first, second] = two_parcels(&floor).await;
    click(&browser, "#shift-button").await;
    shows(&browser, "the shift online", "#shift-state.online").await;
    browser
        .wait_until("the position shared", || async {
            text_now(&browser, "position-status")
                .await
                .is_some_and(|t| t.contains("shared"))
        })
        .await;
    drive(&browser, &floor, &rider.id, &to_pickup).await;
    accept_offer(&browser, Some("courier-offer.png")).await;
    looked_at(&browser, "courier-route.png").await;

    // Collected, both, then driven to the drop-offs; the first delivered with a photo and a
    // signature; the second returned.
    for job in [&first, &second] {
        collect(&browser, job).await;
    }
    drive(&browser, &floor, &rider.id, &to_dropoff).await;
    // Every point of both drives is on the courier's trail.
    let trail: i64 =
        sqlx::query_scalar("SELECT count(*) FROM courier_trail_points WHERE courier_id = $1::uuid")
            .bind(&rider.id)
            .fetch_one(&floor.app.pool().await)
            .await
            .unwrap();
    assert!(
        trail as usize >= to_pickup.len() + to_dropoff.len(),
        "{trail} points on the trail"
    );
    shows(
        &browser,
        "the drop-offs to deliver",
        "a.button[href$=\"/deliver\"]",
    )
    .await;
    deliver(&browser, &site, &first, &photo).await;
    looked_at(&browser, "courier-deliver.png").await;
    press(
        &browser,
        &format!("/courier/jobs/{}/delivered", first["id"].as_str().unwrap()),
    )
    .await;
    arrives_at(&browser, "/courier/").await;
    give_back(&browser, &site, &second).await;
    arrives_at(&browser, "/courier/").await;
    merchant_sees(&floor, &first, "delivered").await;
    merchant_sees(&floor, &second, "returned").await;
    let proof = floor.event_data(&first, "job.delivered").await;
    assert_eq!(proof["proof"]["hasPhoto"], true);
    assert_eq!(proof["proof"]["hasSignature"], true);
    looked_at(&browser, "courier-today.png").await;

    // A dead zone: the second bundle accepted, then the network goes. (Booked while the
    // courier is offline, so the first plan sees both parcels.)
    click(&browser, "#shift-button").await;
    shows(&browser, "the shift offline", "#shift-state.offline").await;
    let [third, fourth] = two_parcels(&floor).await;
    click(&browser, "#shift-button").await;
    shows(&browser, "the shift online", "#shift-state.online").await;
    phone_at(&browser, VADUZ_PICKUP).await;
    accept_offer(&browser, None).await;
    // The route pages are kept on the phone for when the network goes.
    for job in [&third, &fourth] {
        let id = job["id"].as_str().unwrap();
        browser
            .client
            .goto(&format!("{site}/courier/jobs/{id}/deliver"))
            .await
            .unwrap();
    }
    browser
        .client
        .goto(&format!("{site}/courier/"))
        .await
        .unwrap();
    shows(&browser, "the route", "li.stop-card.pickup").await;
    network.cut();
    let third_collected = format!("/courier/jobs/{}/collected", third["id"].as_str().unwrap());
    press_and_wait(&browser, &third_collected).await;
    waiting(&browser, "1 action waiting").await;
    press_and_wait(
        &browser,
        &format!("/courier/jobs/{}/collected", fourth["id"].as_str().unwrap()),
    )
    .await;
    waiting(&browser, "2 actions waiting").await;
    looked_at(&browser, "courier-offline-outbox.png").await;
    // The delivery page kept on the phone takes the photo and the signature.
    deliver(&browser, &site, &third, &photo).await;
    press_and_wait(
        &browser,
        &format!("/courier/jobs/{}/delivered", third["id"].as_str().unwrap()),
    )
    .await;
    waiting(&browser, "3 actions waiting").await;
    give_back(&browser, &site, &fourth).await;
    waiting(&browser, "4 actions waiting").await;
    // Nothing reached the merchant.
    assert_eq!(floor.job(&third).await["status"], "assigned");

    // Back in coverage: everything is sent, once.
    network.restore();
    merchant_sees(&floor, &third, "delivered").await;
    merchant_sees(&floor, &fourth, "returned").await;
    browser
        .wait_until("the outbox empty", || async {
            text_now(&browser, "outbox-status")
                .await
                .is_some_and(|t| t.is_empty())
        })
        .await;
    for job in [&third, &fourth] {
        floor.charge_once(job, "captured").await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for (job, ended) in [(&third, "job.delivered"), (&fourth, "job.returned")] {
        for event in ["job.courier_assigned", "job.picked_up", ended] {
            assert_eq!(
                floor.event_count(job, event),
                1,
                "{event} of {}",
                job["reference"]
            );
        }
    }
    let proof = floor.event_data(&third, "job.delivered").await;
    assert_eq!(
        proof["proof"]["hasPhoto"], true,
        "the photo taken offline was not lost"
    );
    browser.close().await;
}

/// One screen's cost on a slow phone: bytes over the network and when it could be used.
async fn measure(browser: &Browser, site: &str, path: &str) -> (String, u64, f64, f64) {
    browser.client.goto(&format!("{site}{path}")).await.unwrap();
    let found = browser
        .client
        .execute(
            "const n = performance.getEntriesByType('navigation')[0];
             const bytes = n.transferSize + performance.getEntriesByType('resource')
               .reduce((sum, r) => sum + r.transferSize, 0);
             const paint = performance.getEntriesByName('first-contentful-paint')[0];
             return [bytes, paint ? paint.startTime : -1, n.domContentLoadedEventEnd];",
            vec![],
        )
        .await
        .unwrap();
    let found: (u64, f64, f64) = serde_json::from_value(found).unwrap();
    (path.to_owned(), found.0, found.1, found.2)
}

/// The app's screens on a throttled 3G profile (300 ms, 750 kb/s down, 250 kb/s up) and a
/// phone's CPU (4× slower), each loaded cold (no cache, no service worker): a benchmark,
/// BENCHMARKS.md "The couriers' app on a slow phone".
#[tokio::test]
#[ignore = "a benchmark: cargo test -p courier --test e2e -- --ignored --nocapture courier_app_on_a_slow_phone"]
async fn courier_app_on_a_slow_phone() {
    let floor = Floor::start(&[("COURIER_OFFER_TIMEOUT_MS", "600000")]).await;
    let site = floor.app.base_url.replace("127.0.0.1", "localhost");
    let rider = floor.rider("Sol Slow", "car", None).await;
    let (_, link) = sign_in_code(&floor, &rider.id).await;
    let browser = Browser::start(WIDTH, HEIGHT).await;
    browser
        .devtools(
            "Browser.grantPermissions",
            json!({"origin": site, "permissions": ["geolocation"]}),
        )
        .await;
    phone_at(&browser, PICKUP).await;
    for (command, params) in [
        ("Network.enable", json!({})),
        ("Network.setCacheDisabled", json!({"cacheDisabled": true})),
        ("Network.setBypassServiceWorker", json!({"bypass": true})),
        (
            "Network.emulateNetworkConditions",
            json!({"offline": false, "latency": 300,
                   "downloadThroughput": 750 * 1024 / 8, "uploadThroughput": 250 * 1024 / 8}),
        ),
        ("Emulation.setCPUThrottlingRate", json!({"rate": 4})),
    ] {
        browser.devtools(command, params).await;
    }
    let mut screens = vec![measure(&browser, &site, &link).await];
    click(&browser, "form.sign-in button").await;
    arrives_at(&browser, "/courier/").await;
    screens.push(measure(&browser, &site, "/courier/").await);
    let [first, _] = two_parcels(&floor).await;
    click(&browser, "#shift-button").await;
    shows(&browser, "an offer", "article.offer").await;
    screens.push(measure(&browser, &site, "/courier/").await);
    click(&browser, "article.offer .answer form button.primary").await;
    shows(&browser, "the route", "li.stop-card.pickup").await;
    screens.push(measure(&browser, &site, "/courier/").await);
    let deliver = format!("/courier/jobs/{}/deliver", first["id"].as_str().unwrap());
    screens.push(measure(&browser, &site, &deliver).await);
    let names = [
        "sign-in",
        "shift, offline",
        "shift, an offer of two",
        "shift, a route of two",
        "delivery form",
    ];
    println!("| screen | transferred | first contentful paint | interactive (DOMContentLoaded) |");
    println!("|---|---|---|---|");
    for (name, (_, bytes, paint, ready)) in names.iter().zip(&screens) {
        println!(
            "| {name} | {:.1} KB | {paint:.0} ms | {ready:.0} ms |",
            *bytes as f64 / 1024.0
        );
    }
    browser.close().await;
}
