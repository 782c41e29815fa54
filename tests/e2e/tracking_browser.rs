//! The tracking page in a real browser (headless Chromium on a phone-sized window): it shows
//! the delivery, updates on its own when the courier moves, and ends with the outcome.
//! Screenshots go to the test artifacts folder (`target/test-artifacts/`).

use crate::support::browser::Browser;
use crate::tracking::{Tracked, assert_private};

#[tokio::test]
async fn the_page_follows_the_courier_without_reloading() {
    let tracked = Tracked::book(&[("COURIER_TRACKING_POLL_MS", "400")]).await;
    let browser = Browser::start(390, 844).await;
    browser.client.goto(&tracked.tracking_url()).await.unwrap();

    assert_eq!(browser.text("status-headline").await, "Finding a courier");
    assert!(browser.text("pickup-area").await.starts_with("4th Street"));
    assert!(
        browser
            .text("dropoff-area")
            .await
            .starts_with("17th Street")
    );
    assert!(browser.text("eta-text").await.starts_with("Around "));
    assert_eq!(
        browser.attr("map-courier", "visibility").await.as_deref(),
        Some("hidden")
    );
    assert_private(&browser.client.source().await.unwrap());
    // Set on this document only: still there later means the page was never reloaded.
    browser
        .client
        .execute("window.loadedOnce = true;", vec![])
        .await
        .unwrap();

    let floor = &tracked.floor;
    let rider = tracked.courier_takes_the_job((20.0120, 50.0015)).await;
    browser
        .wait_until("the courier on the map", || async {
            browser.text("status-headline").await == "Courier on the way to pickup"
                && browser.attr("map-courier", "visibility").await.as_deref() == Some("visible")
        })
        .await;
    let first = (
        browser.attr("map-courier", "cx").await,
        browser.attr("map-courier", "cy").await,
    );

    // The courier moves toward the pickup: the marker follows.
    floor.report_position(&rider, (20.0045, 50.0035)).await;
    browser
        .wait_until("the marker to move", || async {
            let now = (
                browser.attr("map-courier", "cx").await,
                browser.attr("map-courier", "cy").await,
            );
            now != first
        })
        .await;
    let description = browser
        .client
        .execute(
            "return document.getElementById('map-desc').textContent;",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        description
            .as_str()
            .unwrap()
            .contains("from the pickup by road"),
        "the map's text alternative follows too: {description}"
    );
    let loaded_once = browser
        .client
        .execute("return window.loadedOnce === true;", vec![])
        .await
        .unwrap();
    assert_eq!(
        loaded_once,
        serde_json::json!(true),
        "updated without reload"
    );
    let screenshot = browser.screenshot("tracking-page.png").await;
    let png = std::fs::read(&screenshot).unwrap();
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    assert_eq!(width, 390 * 2, "a phone's width at twice the density");
    // The streets are drawn across the map, under the route.
    let streets = browser
        .client
        .execute(
            "var s = document.getElementById('map-streets'); \
             var r = document.getElementById('map-route'); \
             return [s.getBBox().width, s.getBBox().height, \
                     s.compareDocumentPosition(r) & Node.DOCUMENT_POSITION_FOLLOWING];",
            vec![],
        )
        .await
        .unwrap();
    let streets: Vec<f64> = serde_json::from_value(streets).unwrap();
    assert!(streets[0] > 500.0 && streets[1] > 300.0, "{streets:?}");
    assert!(streets[2] > 0.0, "the route is painted over the streets");
    browser.screenshot_of("map", "tracking-page-map.png").await;
    browser
        .client
        .execute(
            "document.getElementById('stops-heading').scrollIntoView();",
            vec![],
        )
        .await
        .unwrap();
    browser.screenshot("tracking-page-timeline.png").await;

    // Collected, then delivered: the page ends with the outcome and stops asking.
    floor.collect(&rider, &tracked.job).await;
    browser
        .wait_until("in transit", || async {
            browser.text("status-headline").await == "On the way to you"
        })
        .await;
    floor.deliver(&rider, &tracked.job).await;
    browser
        .wait_until("delivered", || async {
            browser.text("status-headline").await == "Delivered"
        })
        .await;
    assert_eq!(
        browser.text("proof-outcome").await,
        "Handed to the recipient"
    );
    assert_eq!(browser.text("live-note").await, "This delivery has ended.");
    assert_private(&browser.client.source().await.unwrap());
    browser.screenshot("tracking-page-delivered.png").await;
    browser.close().await;
}

/// A test job with the sandbox simulator running: nobody acts, and the page shows the whole
/// delivery, the courier driving the route, and the ending.
#[tokio::test]
async fn a_sandbox_delivery_plays_out_on_the_page_by_itself() {
    // The browser first: the simulated drive to the pickup starts at booking and lasts a few
    // seconds, less than a browser can take to start on a busy machine.
    let browser = Browser::start(390, 844).await;
    let tracked = Tracked::book(&[
        ("COURIER_TRACKING_POLL_MS", "300"),
        ("COURIER_SANDBOX_SPEED", "25"),
        ("COURIER_SANDBOX_INTERVAL_MS", "100"),
    ])
    .await;
    browser.client.goto(&tracked.tracking_url()).await.unwrap();
    browser
        .wait_until("a simulated courier on the map", || async {
            browser.text("status-headline").await == "Courier on the way to pickup"
                && browser.attr("map-courier", "visibility").await.as_deref() == Some("visible")
        })
        .await;
    let marker = || async {
        (
            browser.attr("map-courier", "cx").await,
            browser.attr("map-courier", "cy").await,
        )
    };
    let first = marker().await;
    browser
        .wait_until("the simulated courier to move", || async {
            marker().await != first
        })
        .await;
    browser.screenshot("sandbox-to-pickup.png").await;
    browser
        .wait_until("collected", || async {
            browser.text("status-headline").await == "On the way to you"
        })
        .await;
    let collected = marker().await;
    browser
        .wait_until("the drive to the drop-off", || async {
            marker().await != collected
        })
        .await;
    browser.screenshot("sandbox-in-transit.png").await;
    browser
        .wait_until("delivered", || async {
            browser.text("status-headline").await == "Delivered"
        })
        .await;
    assert_eq!(
        browser.text("proof-outcome").await,
        "Handed to the recipient"
    );
    assert_private(&browser.client.source().await.unwrap());
    browser.screenshot("sandbox-delivered.png").await;
    browser.close().await;
}
