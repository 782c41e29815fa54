//! The sandbox simulator: test jobs move on their own along real routes, through every
//! scenario, with the events a real HTTPS receiver gets and the charge each ending owes;
//! manual mode moves only when advanced; live keys see none of it.

use std::cell::RefCell;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::fulfilment::Floor;
use crate::support::{Authed, MerchantCredentials, assert_refusal, eventually};

/// Simulated seconds per real second: a delivery of some ten simulated minutes takes a few
/// real seconds.
const SPEED: &str = "150";
const SCENARIO: &str = "Courier-Sandbox-Scenario";
const ENDING_WAIT: Duration = Duration::from_secs(60);
const HAPPY_PATH_EVENTS: [&str; 4] = [
    "job.booked",
    "job.courier_assigned",
    "job.picked_up",
    "job.delivered",
];

async fn simulated_floor() -> Floor {
    Floor::start(&[
        ("COURIER_SANDBOX_SPEED", SPEED),
        ("COURIER_SANDBOX_INTERVAL_MS", "50"),
        // The no-courier scenario fails at the deadline: 300 simulated seconds, 2 s here.
        ("COURIER_DISPATCH_DEADLINE_SECS", "300"),
    ])
    .await
}

fn id(job: &Value) -> &str {
    job["id"].as_str().unwrap()
}

/// Polls the job until `status`, returning its detail.
async fn wait_for_status(floor: &Floor, job: &Value, status: &str) -> Value {
    let what = format!("job {} to be {status}", id(job));
    eventually(&what, ENDING_WAIT, Duration::from_millis(20), || async {
        let detail = floor.job(job).await;
        (detail["status"] == status).then_some(detail)
    })
    .await
}

async fn sandbox_call(floor: &Floor, method: Method, job: &Value, what: &str) -> (u16, Value) {
    let path = format!("/v1/sandbox/jobs/{}{what}", id(job));
    floor.merchant_call(method, &path, None).await
}

/// The job's events at the receiver, in the order they happened.
fn event_names(floor: &Floor, job: &Value) -> Vec<String> {
    let mut events: Vec<Value> = floor
        .receiver
        .received(crate::fulfilment::HOOK)
        .iter()
        .map(|r| r.json())
        .filter(|b| b["data"]["jobId"] == job["id"])
        .collect();
    events.sort_by(|a, b| {
        let at = |e: &Value| e["occurred_at"].as_str().unwrap_or_default().to_owned();
        at(a).cmp(&at(b))
    });
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

async fn wait_for_events(floor: &Floor, job: &Value, expected: &[&str]) {
    let what = format!("exactly the events {expected:?} of job {}", id(job));
    eventually(&what, ENDING_WAIT, Duration::from_millis(25), || async {
        (event_names(floor, job) == expected).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_test_job_delivers_itself_along_its_route_with_every_event() {
    let floor = simulated_floor().await;
    let job = floor.book().await;
    let (status, run) = sandbox_call(&floor, Method::GET, &job, "").await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["scenario"], "happy_path");
    assert_eq!(run["stage"], "searching");
    assert_eq!(run["next_step"], "assign");
    // Nobody on the job yet: no position.
    let position_path = format!("/v1/jobs/{}/courier-position", id(&job));
    let (status, _) = floor.merchant_call(Method::GET, &position_path, None).await;
    assert_eq!(status, 204);

    // On the road to the drop-off, the courier moves.
    wait_for_status(&floor, &job, "in_transit").await;
    let seen: RefCell<Vec<(f64, f64)>> = RefCell::default();
    let positions = eventually(
        "the courier to move (three different positions)",
        ENDING_WAIT,
        Duration::from_millis(60),
        || async {
            let (status, at) = floor.merchant_call(Method::GET, &position_path, None).await;
            if status == 200 {
                let point = (
                    at["latitude"].as_f64().unwrap(),
                    at["longitude"].as_f64().unwrap(),
                );
                assert!(at["seen_at"].is_string(), "{at}");
                let mut points = seen.borrow_mut();
                if points.last() != Some(&point) {
                    points.push(point);
                }
            }
            let points = seen.borrow();
            (points.len() >= 3).then(|| points.clone())
        },
    )
    .await;
    // Every position lies near the job's route, between pickup and drop-off.
    let (pickup, dropoff) = (&job["pickup"], &job["dropoff"]);
    let lat = |v: &Value| v["latitude"].as_f64().unwrap();
    let lon = |v: &Value| v["longitude"].as_f64().unwrap();
    for (la, lo) in &positions {
        assert!(
            *la > lat(pickup).min(lat(dropoff)) - 0.01
                && *la < lat(pickup).max(lat(dropoff)) + 0.01,
            "{la}"
        );
        assert!(
            *lo > lon(pickup).min(lon(dropoff)) - 0.01
                && *lo < lon(pickup).max(lon(dropoff)) + 0.01,
            "{lo}"
        );
    }

    let detail = wait_for_status(&floor, &job, "delivered").await;
    assert!(detail["assigned_at"].is_string(), "{detail}");
    assert!(detail["completed_at"].is_string(), "{detail}");
    assert_eq!(detail["proof"]["outcome"], "handed_to_recipient");
    assert_eq!(detail["proof"]["recipient_name"], "Dana Dropoff");
    floor.charge_once(&job, "captured").await;
    wait_for_events(&floor, &job, &HAPPY_PATH_EVENTS).await;
    let assigned = floor.event_data(&job, "job.courier_assigned").await;
    let courier = assigned["courier"].as_str().unwrap().to_owned();
    assert!(uuid::Uuid::parse_str(&courier).is_ok(), "{assigned}");
    let delivered = floor.event_data(&job, "job.delivered").await;
    assert_eq!(delivered["courier"], courier.as_str());
    assert_eq!(
        delivered["proof"],
        json!({"outcome": "handed_to_recipient", "recipientName": "Dana Dropoff",
               "hasPhoto": false, "hasSignature": false})
    );
    let (_, run) = sandbox_call(&floor, Method::GET, &job, "").await;
    assert_eq!(run["stage"], "done");
    assert_eq!(run["status"], "delivered");
    assert_eq!(run["next_step"], Value::Null);
    // Ended: no more positions.
    let (status, _) = floor.merchant_call(Method::GET, &position_path, None).await;
    assert_eq!(status, 204);
    // The simulated courier existed only while on the job.
    let left: i64 =
        sqlx::query_scalar("SELECT count(*) FROM courier_positions WHERE courier_id = $1")
            .bind(uuid::Uuid::parse_str(&courier).unwrap())
            .fetch_one(&floor.app.pool().await)
            .await
            .unwrap();
    assert_eq!(left, 0);
    floor.app.stop().await;
}

#[tokio::test]
async fn each_scenario_reaches_its_ending_with_its_events_and_money() {
    let floor = simulated_floor().await;
    let no_courier = floor.book_with(&[(SCENARIO, "no_courier")]).await;
    let reassigned = floor.book_with(&[(SCENARIO, "courier_reassigned")]).await;
    let returned = floor.book_with(&[(SCENARIO, "returned")]).await;
    let cancelled = floor
        .book_with(&[(SCENARIO, "cancelled_by_operations")])
        .await;

    wait_for_status(&floor, &no_courier, "failed").await;
    floor.charge_once(&no_courier, "voided").await;
    wait_for_events(&floor, &no_courier, &["job.booked", "job.failed"]).await;
    let failed = floor.event_data(&no_courier, "job.failed").await;
    assert_eq!(failed["reason"], "no_courier_before_deadline");

    wait_for_status(&floor, &reassigned, "delivered").await;
    floor.charge_once(&reassigned, "captured").await;
    wait_for_events(
        &floor,
        &reassigned,
        &[
            "job.booked",
            "job.courier_assigned",
            "job.courier_assigned",
            "job.picked_up",
            "job.delivered",
        ],
    )
    .await;
    let couriers: Vec<Value> = floor
        .receiver
        .received(crate::fulfilment::HOOK)
        .iter()
        .map(|r| r.json())
        .filter(|b| b["type"] == "job.courier_assigned" && b["data"]["jobId"] == reassigned["id"])
        .map(|b| b["data"]["courier"].clone())
        .collect();
    assert_ne!(couriers[0], couriers[1], "handed to another courier");
    let delivered = floor.event_data(&reassigned, "job.delivered").await;
    assert!(couriers.contains(&delivered["courier"]));

    let detail = wait_for_status(&floor, &returned, "returned").await;
    assert!(detail["completed_at"].is_string());
    floor.charge_once(&returned, "captured").await;
    wait_for_events(
        &floor,
        &returned,
        &[
            "job.booked",
            "job.courier_assigned",
            "job.picked_up",
            "job.returned",
        ],
    )
    .await;
    let data = floor.event_data(&returned, "job.returned").await;
    assert_eq!(data["reason"], "recipient_unavailable");

    wait_for_status(&floor, &cancelled, "cancelled").await;
    floor.charge_once(&cancelled, "voided").await;
    wait_for_events(
        &floor,
        &cancelled,
        &["job.booked", "job.courier_assigned", "job.status_changed"],
    )
    .await;
    let data = floor.event_data(&cancelled, "job.status_changed").await;
    assert_eq!(
        (&data["from"], &data["to"], &data["reason"]),
        (
            &json!("assigned"),
            &json!("cancelled"),
            &json!("cancelled_by_operations")
        )
    );
    floor.app.stop().await;
}

#[tokio::test]
async fn manual_mode_moves_only_when_advanced() {
    let floor = simulated_floor().await;
    let job = floor.book_with(&[(SCENARIO, "manual")]).await;
    // Well past when the happy path would have taken its first steps.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(floor.job(&job).await["status"], "searching");
    let (_, run) = sandbox_call(&floor, Method::GET, &job, "").await;
    assert_eq!(
        (&run["scenario"], &run["next_step_at"]),
        (&json!("manual"), &Value::Null)
    );

    for expected in ["assigned", "in_transit", "delivered"] {
        let (status, run) = sandbox_call(&floor, Method::POST, &job, "/advance").await;
        assert_eq!((status, &run["status"]), (200, &json!(expected)), "{run}");
        assert_eq!(floor.job(&job).await["status"], expected);
    }
    floor.charge_once(&job, "captured").await;
    wait_for_events(&floor, &job, &HAPPY_PATH_EVENTS).await;
    let response = floor
        .app
        .request(
            Method::POST,
            &format!("/v1/sandbox/jobs/{}/advance", id(&job)),
        )
        .auth(&floor.credential)
        .send()
        .await
        .unwrap();
    assert_refusal(response, 409, "sandbox.nothing_to_advance").await;

    // A scenario is chosen until a courier is on the job, then kept.
    let later = floor.book_with(&[(SCENARIO, "manual")]).await;
    let path = format!("/v1/sandbox/jobs/{}/scenario", id(&later));
    let (status, body) = floor
        .merchant_call(Method::POST, &path, Some(json!({"scenario": "teleport"})))
        .await;
    assert_eq!(
        (status, &body["code"]),
        (422, &json!("sandbox.unknown_scenario"))
    );
    let (status, run) = floor
        .merchant_call(Method::POST, &path, Some(json!({"scenario": "returned"})))
        .await;
    assert_eq!(
        (status, &run["scenario"]),
        (200, &json!("returned")),
        "{run}"
    );
    assert!(run["next_step_at"].is_string(), "{run}");
    wait_for_status(&floor, &later, "assigned").await;
    let (status, body) = floor
        .merchant_call(Method::POST, &path, Some(json!({"scenario": "happy_path"})))
        .await;
    assert_eq!(
        (status, &body["code"]),
        (409, &json!("sandbox.scenario_locked"))
    );
    wait_for_status(&floor, &later, "returned").await;

    // A merchant's cancellation stops the simulation.
    let cancelled = floor.book_with(&[(SCENARIO, "manual")]).await;
    let (status, _) = floor
        .merchant_call(
            Method::POST,
            &format!("/v1/jobs/{}/cancel", id(&cancelled)),
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (status, body) = sandbox_call(&floor, Method::POST, &cancelled, "/advance").await;
    assert_eq!(
        (status, &body["code"]),
        (409, &json!("sandbox.nothing_to_advance"))
    );
    floor.app.stop().await;
}

#[tokio::test]
async fn live_keys_and_live_jobs_are_never_simulated() {
    let floor = simulated_floor().await;
    let live = floor.merchant.live();
    let job = floor.book_with(&[(SCENARIO, "manual")]).await;
    // Live keys find no sandbox routes, and may not ask for a scenario.
    for (method, what) in [(Method::GET, ""), (Method::POST, "/advance")] {
        let response = floor
            .app
            .request(method, &format!("/v1/sandbox/jobs/{}{what}", id(&job)))
            .auth(&live)
            .send()
            .await
            .unwrap();
        assert_refusal(response, 404, "not_found").await;
    }
    let response = floor
        .app
        .request(Method::POST, "/v1/jobs")
        .auth(&live)
        .header("Idempotency-Key", "live-scenario")
        .header(SCENARIO, "happy_path")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 422, "sandbox.test_only").await;
    let response = floor
        .app
        .request(Method::POST, "/v1/jobs")
        .auth(&floor.credential)
        .header("Idempotency-Key", "odd-scenario")
        .header(SCENARIO, "teleport")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 422, "sandbox.unknown_scenario").await;
    // Another merchant's test job is not found: not read, advanced, nor given a scenario.
    let stranger = floor.app.create_merchant("Stranger Ltd").await.test();
    for (method, what, body) in [
        (Method::GET, "", None),
        (Method::POST, "/advance", None),
        (
            Method::POST,
            "/scenario",
            Some(json!({"scenario": "returned"})),
        ),
    ] {
        let mut request = floor
            .app
            .request(method, &format!("/v1/sandbox/jobs/{}{what}", id(&job)))
            .auth(&stranger);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        assert_refusal(response, 404, "job.not_found").await;
    }
    // And the job stays where it was, in its own scenario.
    let (_, run) = sandbox_call(&floor, Method::GET, &job, "").await;
    assert_eq!(
        (&run["status"], &run["scenario"]),
        (&json!("searching"), &json!("manual"))
    );

    // A live job (made so by hand: live bookings need a live card provider) has no run, and
    // the running simulator leaves it searching, offered to nobody.
    let pool = floor.app.pool().await;
    let job_id = uuid::Uuid::parse_str(id(&job)).unwrap();
    sqlx::query("DELETE FROM sandbox_runs WHERE job_id = $1")
        .bind(job_id)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("UPDATE jobs SET environment = 'live' WHERE id = $1")
        .bind(job_id)
        .execute(&pool)
        .await
        .unwrap();
    let happy = floor.book().await;
    wait_for_status(&floor, &happy, "delivered").await;
    let (status, courier): (String, Option<uuid::Uuid>) =
        sqlx::query_as("SELECT status, courier_id FROM jobs WHERE id = $1")
            .bind(job_id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!((status.as_str(), courier), ("searching", None));
    let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM sandbox_runs WHERE job_id = $1")
        .bind(job_id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(runs, 0);
    floor.app.stop().await;
}
