//! Two service instances on one database, under load at the same time: every booking made
//! once, every offer and deadline handled once, every charge captured or voided once, every
//! webhook delivered once.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::fulfilment::{Floor, HOOK, PICKUP, Rider};
use crate::quotes::journey;
use crate::support::{Authed, TestApp, eventually, status_and_json};

const JOBS: usize = 24;
const UNSERVED: usize = 4;

/// Settings both instances share: quick dispatch, a deadline a test can wait for.
const SETTINGS: [(&str, &str); 3] = [
    ("COURIER_DISPATCH_INTERVAL_MS", "50"),
    ("COURIER_DISPATCH_DEADLINE_SECS", "6"),
    ("COURIER_OFFER_TIMEOUT_MS", "3000"),
];

fn booking_body(quote_id: &Value) -> Value {
    let stop = |point: &Value, name: &str| {
        json!({
            "latitude": point["latitude"], "longitude": point["longitude"],
            "address": format!("{name}'s door, Demo City"),
            "contact_name": name, "contact_phone": "+966 11 463 5555",
        })
    };
    let route = journey(None);
    json!({
        "quote_id": quote_id,
        "pickup": stop(&route["pickup"], "Pat"),
        "dropoff": stop(&route["dropoff"], "Dana"),
    })
}

/// Books one job by sending the same request, with the same key, to both instances at once.
async fn book_on_both(floor: &Floor, other: &TestApp) -> String {
    let (status, quote) = floor
        .merchant_call(Method::POST, "/v1/quotes", Some(journey(Some("car"))))
        .await;
    assert_eq!(status, 201, "{quote}");
    let body = booking_body(&quote["id"]);
    let key = Uuid::new_v4().to_string();
    let send = |app: &TestApp| {
        app.request(Method::POST, "/v1/jobs")
            .auth(&floor.credential)
            .header("Idempotency-Key", &key)
            .json(&body)
            .send()
    };
    let (a, b) = tokio::join!(send(&floor.app), send(other));
    let (a, b) = (
        status_and_json(a.unwrap()).await,
        status_and_json(b.unwrap()).await,
    );
    assert_eq!((a.0, b.0), (201, 201), "{} / {}", a.1, b.1);
    assert_eq!(a.1["id"], b.1["id"], "one key, one job");
    a.1["id"].as_str().unwrap().to_owned()
}

/// A courier taking offers until `done`: it reads offers through one instance and answers
/// through the other, collecting and delivering each job it gets.
async fn work(
    floor: Arc<Floor>,
    other: Arc<TestApp>,
    rider: Rider,
    done: Arc<AtomicBool>,
) -> usize {
    let mut delivered = 0;
    let call = |app: &TestApp, method: Method, path: String, body: Option<Value>| {
        let mut request = app
            .request(method, &format!("/courier/v1{path}"))
            .bearer_auth(&rider.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        async move { status_and_json(request.send().await.unwrap()).await }
    };
    while !done.load(Ordering::SeqCst) {
        let (status, offers) = call(&floor.app, Method::GET, "/offers".into(), None).await;
        assert_eq!(status, 200, "{offers}");
        let Some(offer) = offers.as_array().and_then(|o| o.first()).cloned() else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let offer_id = offer["id"].as_str().unwrap();
        let (status, job) = call(
            &other,
            Method::POST,
            format!("/offers/{offer_id}/accept"),
            None,
        )
        .await;
        if status != 200 {
            // Expired or withdrawn meanwhile: the next one.
            continue;
        }
        let id = job["id"].as_str().unwrap().to_owned();
        let (status, body) = call(
            &floor.app,
            Method::POST,
            format!("/jobs/{id}/collected"),
            None,
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let handover = json!({"outcome": "handed_to_recipient", "recipient_name": "Dana"});
        let (status, body) = call(
            &other,
            Method::POST,
            format!("/jobs/{id}/delivered"),
            Some(handover),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        delivered += 1;
    }
    delivered
}

#[tokio::test]
async fn two_instances_book_dispatch_settle_and_deliver_everything_once() {
    let floor = Floor::start(&SETTINGS).await;
    let database_url = floor.app.database_url.clone();
    let ca = floor.receiver.ca_path.to_string_lossy().into_owned();
    let other = TestApp::spawn_with(move |name| match name {
        "DATABASE_URL" => Some(database_url.clone()),
        "COURIER_WEBHOOK_EXTRA_CA" => Some(ca.clone()),
        "COURIER_WEBHOOK_ALLOW_PRIVATE" => Some("true".into()),
        _ => SETTINGS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).to_owned()),
    })
    .await;

    let mut jobs = Vec::new();
    for _ in 0..JOBS {
        jobs.push(book_on_both(&floor, &other).await);
    }
    let riders = [
        floor.rider("Ana", "car", Some(PICKUP)).await,
        floor.rider("Ben", "car", Some(PICKUP)).await,
        floor.rider("Cai", "car", Some(PICKUP)).await,
    ];
    let tokens: Vec<String> = riders.iter().map(|r| r.token.clone()).collect();
    let (floor, other) = (Arc::new(floor), Arc::new(other));
    let done = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = riders
        .into_iter()
        .map(|rider| {
            tokio::spawn(work(
                Arc::clone(&floor),
                Arc::clone(&other),
                rider,
                Arc::clone(&done),
            ))
        })
        .collect();
    let pool = floor.app.pool().await;
    let delivered = || {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT count(*) FROM jobs WHERE status = 'delivered'")
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    eventually(
        "every job delivered",
        Duration::from_secs(60),
        Duration::from_millis(50),
        || async { (delivered().await == JOBS as i64).then_some(()) },
    )
    .await;
    done.store(true, Ordering::SeqCst);
    let mut by_couriers = 0;
    for worker in workers {
        by_couriers += worker.await.unwrap();
    }
    assert_eq!(
        by_couriers, JOBS,
        "each job delivered by exactly one courier"
    );

    // Nobody is left to take these: each fails at its deadline, once.
    for token in &tokens {
        let response = other
            .request(Method::POST, "/courier/v1/offline")
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    let mut unserved = Vec::new();
    for _ in 0..UNSERVED {
        unserved.push(book_on_both(&floor, &other).await);
    }
    eventually(
        "the unserved jobs failed",
        Duration::from_secs(30),
        Duration::from_millis(50),
        || async {
            let failed: i64 =
                sqlx::query_scalar("SELECT count(*) FROM jobs WHERE status = 'failed'")
                    .fetch_one(&pool)
                    .await
                    .unwrap();
            (failed == UNSERVED as i64).then_some(())
        },
    )
    .await;

    // Money: one capture per delivered job, one void per failed one, nothing else.
    let settled = |to: &'static str| {
        let pool = pool.clone();
        async move {
            sqlx::query_as::<_, (Uuid, i64)>(
                "SELECT c.job_id, count(*) FROM charge_moves m JOIN charges c ON c.id = m.charge_id \
                 WHERE m.to_status = $1 GROUP BY c.job_id",
            )
            .bind(to)
            .fetch_all(&pool)
            .await
            .unwrap()
        }
    };
    eventually(
        "every charge settled",
        Duration::from_secs(30),
        Duration::from_millis(50),
        || async {
            (settled("captured").await.len() == JOBS && settled("voided").await.len() == UNSERVED)
                .then_some(())
        },
    )
    .await;
    for (job, moves) in settled("captured")
        .await
        .into_iter()
        .chain(settled("voided").await)
    {
        assert_eq!(moves, 1, "job {job} settled {moves} times");
    }
    // Offers: at most one accepted per job, and only ever one open at a time (an index).
    let twice: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT job_id FROM courier_offers WHERE status = 'accepted' \
         GROUP BY job_id HAVING count(*) > 1) t",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(twice, 0);

    // Webhooks: every event delivered once, by one instance.
    let expected_events = JOBS * 4 + UNSERVED * 2;
    eventually(
        "every webhook arrived",
        Duration::from_secs(30),
        Duration::from_millis(50),
        || async { (floor.receiver.received(HOOK).len() >= expected_events).then_some(()) },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let received = floor.receiver.received(HOOK);
    let mut deliveries = HashSet::new();
    let mut per_job_event: HashMap<(String, String), usize> = HashMap::new();
    for request in &received {
        assert!(
            deliveries.insert(request.delivery.clone()),
            "a delivery sent twice"
        );
        let body = request.json();
        let key = (
            body["type"].as_str().unwrap().to_owned(),
            body["data"]["jobId"].as_str().unwrap().to_owned(),
        );
        *per_job_event.entry(key).or_default() += 1;
    }
    assert_eq!(received.len(), expected_events);
    for job in &jobs {
        for event in [
            "job.booked",
            "job.courier_assigned",
            "job.picked_up",
            "job.delivered",
        ] {
            assert_eq!(
                per_job_event.get(&(event.to_owned(), job.clone())),
                Some(&1),
                "{event}"
            );
        }
    }
    for job in &unserved {
        for event in ["job.booked", "job.failed"] {
            assert_eq!(
                per_job_event.get(&(event.to_owned(), job.clone())),
                Some(&1),
                "{event}"
            );
        }
    }
}
