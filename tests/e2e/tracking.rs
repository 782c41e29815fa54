//! The public tracking page over plain HTTP: the page and its state, what they never show,
//! the Content-Security-Policy, and the friendly 404 for unknown and expired tokens.

use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::Method;
use serde_json::Value;

use crate::fulfilment::{Floor, PICKUP, Rider};
use crate::support::{Authed, assert_refusal, eventually, status_and_json};

/// What must never appear on the page or in its state: contact names, phones (as sent and as
/// stored), the free-text addresses, the recipient's name from the proof.
pub const PRIVATE: [&str; 6] = [
    "Pat Pickup",
    "Dana Dropoff",
    "463 5555",
    "+966114635555",
    "door, Demo City",
    "0114635555",
];

/// A merchant with a card who booked one job in Demo City (41 4th Street → 102 17th Street),
/// on a service whose couriers take jobs through the courier API.
pub struct Tracked {
    pub floor: Floor,
    pub job: Value,
}

impl Tracked {
    pub async fn book(settings: &[(&str, &str)]) -> Self {
        let floor = Floor::start(settings).await;
        let job = floor.book().await;
        Self { floor, job }
    }

    /// The job's `tracking_url`, on the test service's address (the path carries the token).
    pub fn tracking_url(&self) -> String {
        self.floor.app.url(&tracking_path(&self.job))
    }

    /// A courier comes online at `at`, is offered the job and takes it.
    pub async fn courier_takes_the_job(&self, at: (f64, f64)) -> Rider {
        let rider = self.floor.rider("Cody Courier", "car", Some(at)).await;
        self.floor.take(&rider, &self.job).await;
        rider
    }
}

pub fn tracking_path(job: &Value) -> String {
    let url = url::Url::parse(job["tracking_url"].as_str().unwrap()).unwrap();
    assert!(url.path().starts_with("/track/"), "{url}");
    url.path().to_owned()
}

pub fn assert_private(text: &str) {
    for private in PRIVATE {
        assert!(!text.contains(private), "{private:?} is shown: {text}");
    }
}

async fn get(tracked: &Tracked, url: &str) -> reqwest::Response {
    tracked.floor.app.client.get(url).send().await.unwrap()
}

async fn state(tracked: &Tracked) -> Value {
    let response = get(tracked, &format!("{}/state", tracked.tracking_url())).await;
    assert_eq!(
        response.headers()["cache-control"],
        "no-store",
        "state is never cached"
    );
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 200, "{body}");
    assert_private(&body.to_string());
    body
}

/// The inline script and style, as sent, must be what the policy's hashes allow.
fn assert_policy_allows_the_page(policy: &str, page: &str) {
    use base64::Engine;
    use sha2::Digest;
    let hash = |source: &str| {
        format!(
            "'sha256-{}'",
            base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(source))
        )
    };
    let between = |open: &str, close: &str| {
        let start = page.find(open).expect(open) + open.len();
        let end = start + page[start..].find(close).expect(close);
        page[start..end].to_owned()
    };
    assert!(
        policy.contains(&hash(&between("<style>", "</style>"))),
        "{policy}"
    );
    if page.contains("<script>") {
        assert!(
            policy.contains(&hash(&between("<script>", "</script>"))),
            "{policy}"
        );
    }
}

fn assert_page_headers(response: &reqwest::Response) -> String {
    let headers = response.headers();
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"),
        "{headers:?}"
    );
    assert_eq!(headers["referrer-policy"], "no-referrer");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let policy = headers["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(policy.starts_with("default-src 'none';"), "{policy}");
    assert!(policy.contains("connect-src 'self'"), "{policy}");
    assert!(
        !policy.contains("unsafe-inline") && !policy.contains("http") && !policy.contains('*'),
        "no host and no inline allowance beyond the hashes: {policy}"
    );
    policy
}

#[tokio::test]
async fn the_page_shows_status_areas_estimate_and_map_but_no_contact_details() {
    let tracked = Tracked::book(&[("COURIER_TRACKING_POLL_MS", "700")]).await;
    let response = get(&tracked, &tracked.tracking_url()).await;
    assert_eq!(response.status(), 200);
    let policy = assert_page_headers(&response);
    let page = response.text().await.unwrap();
    assert_policy_allows_the_page(&policy, &page);
    assert_private(&page);
    assert!(!page.contains(tracked.job["id"].as_str().unwrap()));
    for shown in [
        "Finding a courier",
        "4th Street",
        "17th Street",
        "Estimated arrival",
        "<svg id=\"map\"",
        "aria-live=\"polite\"",
        "<main",
        "<h1>",
        tracked.job["reference"].as_str().unwrap(),
    ] {
        assert!(page.contains(shown), "{shown:?} missing");
    }
    assert!(
        !page.contains("http://") && !page.contains("https://") && !page.contains("src="),
        "nothing is loaded from anywhere"
    );

    let searching = state(&tracked).await;
    assert_eq!(searching["status"], "searching");
    assert_eq!(searching["headline"], "Finding a courier");
    assert_eq!(searching["ended"], false);
    assert_eq!(searching["poll_after_ms"], 700);
    assert!(
        searching["pickup_area"]
            .as_str()
            .unwrap()
            .starts_with("4th Street"),
        "{searching}"
    );
    assert!(
        !searching["pickup_area"].as_str().unwrap().contains("41 "),
        "the area, not the door: {searching}"
    );
    assert!(
        searching["dropoff_area"]
            .as_str()
            .unwrap()
            .starts_with("17th Street")
    );
    assert!(
        searching["map"]["route"]
            .as_str()
            .unwrap()
            .matches('L')
            .count()
            > 2
    );
    assert_eq!(searching["map"]["courier"], Value::Null);
    // The streets around the journey, drawn light under the route, from the same network.
    let streets = searching["map"]["streets"].as_str().unwrap();
    assert!(streets.matches('M').count() >= 20, "{streets}");
    assert!(
        page.contains("<path id=\"map-streets\" d=\"M"),
        "drawn on the first paint"
    );
    // The page's weight, streets included: the page itself and each poll of its state.
    let state_bytes = searching.to_string().len();
    eprintln!(
        "tracking page: {} bytes; state: {state_bytes} bytes, of which streets {} bytes",
        page.len(),
        streets.len()
    );
    assert!(state_bytes < 64 * 1024, "{state_bytes} bytes per poll");
    let booked_estimate: DateTime<Utc> =
        serde_json::from_value(searching["estimate"]["arrive_at"].clone()).unwrap();
    assert_eq!(searching["timeline"][0]["key"], "booked");
    assert_eq!(searching["timeline"][1]["state"], "current");

    // A courier takes the job, seen 1.5 km from the pickup.
    let rider = tracked.courier_takes_the_job((20.0150, 50.0020)).await;
    let assigned = state(&tracked).await;
    let shown = assigned.to_string();
    assert!(!shown.contains(&rider.id), "{shown}");
    crate::fulfilment::assert_private(&shown, &[&rider]);
    assert_eq!(assigned["headline"], "Courier on the way to pickup");
    assert!(assigned["map"]["courier"]["x"].is_number(), "{assigned}");
    assert!(
        assigned["map"]["courier_leg"]
            .as_str()
            .unwrap()
            .starts_with('M')
    );
    assert!(
        assigned["map"]["description"]
            .as_str()
            .unwrap()
            .contains("from the pickup by road"),
        "{assigned}"
    );
    let assigned_estimate: DateTime<Utc> =
        serde_json::from_value(assigned["estimate"]["arrive_at"].clone()).unwrap();
    assert!(
        assigned_estimate > booked_estimate,
        "the way to the pickup counts: {booked_estimate} → {assigned_estimate}"
    );
    assert_eq!(assigned["timeline"][1]["state"], "done");
    assert!(assigned["timeline"][1]["at_text"].is_string());

    // Collected and delivered: the page ends with the outcome only.
    tracked.floor.collect(&rider, &tracked.job).await;
    let in_transit = state(&tracked).await;
    assert_eq!(in_transit["headline"], "On the way to you");
    tracked.floor.deliver(&rider, &tracked.job).await;
    let delivered = state(&tracked).await;
    assert_eq!(delivered["headline"], "Delivered");
    assert_eq!(delivered["ended"], true);
    assert_eq!(delivered["poll_after_ms"], Value::Null);
    assert_eq!(delivered["estimate"], Value::Null);
    assert_eq!(delivered["proof_outcome"], "Handed to the recipient");
    assert_eq!(delivered["map"]["courier"], Value::Null);
    assert!(
        delivered["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .all(|step| step["state"] == "done")
    );
    let page = get(&tracked, &tracked.tracking_url())
        .await
        .text()
        .await
        .unwrap();
    assert_private(&page);
    assert!(page.contains("Handed to the recipient") && page.contains("data-live=\"false\""));
}

#[tokio::test]
async fn unknown_and_expired_tokens_get_the_same_friendly_404() {
    // Six seconds: long enough that the second job below, delivered and read back on a
    // machine busy with the rest of the suite, is read before its own time is up.
    let tracked = Tracked::book(&[("COURIER_TRACKING_TTL_SECS", "6")]).await;
    let floor = &tracked.floor;
    let app = &floor.app;
    // The booked job is delivered, then stays up for six seconds.
    let rider = tracked.courier_takes_the_job(PICKUP).await;
    let expired = &tracked.job;
    floor.collect(&rider, expired).await;
    floor.deliver(&rider, expired).await;
    tokio::time::sleep(Duration::from_millis(6100)).await;
    // A second job, delivered just now, is still shown.
    let shown = floor.book().await;
    floor.take(&rider, &shown).await;
    floor.collect(&rider, &shown).await;
    floor.deliver(&rider, &shown).await;
    let response = get(&tracked, &app.url(&tracking_path(&shown))).await;
    assert_eq!(response.status(), 200);

    let unknown_token = "A".repeat(43);
    let mut bodies = Vec::new();
    for path in [
        format!("/track/{unknown_token}"),
        "/track/short".to_owned(),
        "/track/%FF%FE".to_owned(),
        tracking_path(expired),
    ] {
        let response = app.request(Method::GET, &path).send().await.unwrap();
        assert_eq!(response.status(), 404, "{path}");
        let policy = assert_page_headers(&response);
        let body = response.text().await.unwrap();
        assert_policy_allows_the_page(&policy, &body);
        assert!(body.contains("We can’t find this delivery"), "{body}");
        assert!(body.contains("<main") && body.contains("<h1>"));
        bodies.push(body);
    }
    assert!(
        bodies.windows(2).all(|pair| pair[0] == pair[1]),
        "unknown and expired read alike"
    );

    for path in [
        format!("/track/{unknown_token}/state"),
        format!("{}/state", tracking_path(expired)),
    ] {
        let response = app.request(Method::GET, &path).send().await.unwrap();
        assert_refusal(response, 404, "tracking.not_found").await;
    }

    // No credentials are needed, and merchant credentials change nothing.
    let response = app
        .request(Method::GET, &format!("/track/{unknown_token}"))
        .auth(&floor.credential)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
}

/// With every tracking slot taken (a lookup held up by a lock on the jobs table), the next
/// lookup is answered 503 `service.busy` with `Retry-After` at once, and the held one completes
/// once the lock goes.
#[tokio::test]
async fn tracking_lookups_past_the_cap_are_answered_busy_at_once() {
    let tracked = Tracked::book(&[("COURIER_TRACKING_CONCURRENCY", "1")]).await;
    let pool = tracked.floor.app.pool().await;
    let mut lock = pool.begin().await.unwrap();
    sqlx::query("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *lock)
        .await
        .unwrap();
    let url = format!("{}/state", tracked.tracking_url());
    let held = tokio::spawn({
        let client = tracked.floor.app.client.clone();
        let url = url.clone();
        async move { client.get(url).send().await.unwrap().status() }
    });
    // The first lookup waits on the lock, holding the one slot.
    eventually(
        "the first lookup to wait on the lock",
        Duration::from_secs(5),
        Duration::from_millis(20),
        || async {
            let waiting: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
            )
            .fetch_one(&pool)
            .await
            .unwrap();
            (waiting > 0).then_some(())
        },
    )
    .await;
    let busy = get(&tracked, &url).await;
    assert_eq!(busy.headers()["retry-after"], "1");
    let body = assert_refusal(busy, 503, "service.busy").await;
    assert!(body["message"].as_str().unwrap().contains("tracking"));
    let page = get(&tracked, &tracked.tracking_url()).await;
    assert_eq!(page.status(), 503);
    assert_eq!(page.headers()["retry-after"], "1");
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    lock.rollback().await.unwrap();
    assert_eq!(held.await.unwrap(), 200);
    assert_eq!(get(&tracked, &url).await.status(), 200);
}
