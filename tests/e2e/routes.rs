//! Routes: the planner offers a courier whose app takes routes several jobs from one pickup
//! in one offer, with their stops in order; declined, the whole route goes to another
//! courier; accepted, every job is the courier's, collected and delivered with its own
//! events, tracking page and charge. A courier whose app does not say it takes routes is
//! offered one job at a time, as before.

use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use reqwest::Method;
use serde_json::{Value, json};

use crate::fulfilment::{Floor, PICKUP, Rider, WAIT};
use crate::support::eventually;

/// Two parcels of one pickup, ready a minute apart: booked while nobody is online, so the
/// first plan sees both.
pub(crate) async fn two_parcels(floor: &Floor) -> [Value; 2] {
    let ready = |seconds: i64| {
        (Utc::now() + chrono::Duration::seconds(seconds)).to_rfc3339_opts(SecondsFormat::Secs, true)
    };
    [
        floor
            .book_as(&[], json!({"pickup_ready_at": ready(60)}))
            .await,
        floor
            .book_as(&[], json!({"pickup_ready_at": ready(120)}))
            .await,
    ]
}

/// Goes online at the pickup, saying whether its app takes routes.
async fn online(floor: &Floor, rider: &Rider, routes: bool) {
    let (status, me) = floor
        .courier_call(
            rider,
            Method::POST,
            "/online",
            Some(json!({"routes": routes})),
        )
        .await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["takes_routes"], routes);
    floor.report_position(rider, PICKUP).await;
}

fn ids(values: &Value) -> Vec<Value> {
    values
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].clone())
        .collect()
}

#[tokio::test]
async fn a_route_of_two_jobs_is_offered_declined_taken_and_delivered() {
    let floor = Floor::start(&[("COURIER_OFFER_TIMEOUT_MS", "20000")]).await;
    let first = floor.rider("Rio Route", "car", None).await;
    let second = floor.rider("Sol Second", "car", None).await;
    let jobs = two_parcels(&floor).await;

    // One offer carries both jobs: both collected at the pickup, then each dropped off.
    online(&floor, &first, true).await;
    let offer = floor.offer_for(&first).await;
    let mut booked = ids(&json!(jobs));
    let mut offered = ids(&offer["jobs"]);
    assert_eq!(offered.len(), 2, "{offer}");
    assert_eq!(offer["job"]["id"], offered[0]);
    offered.sort_by_key(|id| id.to_string());
    booked.sort_by_key(|id| id.to_string());
    assert_eq!(offered, booked);
    let stops: Vec<(Value, Value)> = offer["stops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["job_id"].clone(), s["stop"].clone()))
        .collect();
    assert_eq!(stops.len(), 4, "{offer}");
    assert!(
        stops[..2].iter().all(|(_, stop)| stop == "pickup"),
        "{offer}"
    );
    assert!(
        stops[2..].iter().all(|(_, stop)| stop == "dropoff"),
        "{offer}"
    );
    assert_eq!(stops[2].0, offer["jobs"][0]["id"]);
    assert!(
        offer["stops"][0]["contact_name"].is_null(),
        "offers carry no contacts"
    );
    // What both earn the courier: the demo market pays 2.50 a job and 0.60 a km of each
    // job's road distance as quoted.
    let metres: i64 = sqlx::query_scalar(
        "SELECT sum(q.distance_metres)::bigint FROM jobs j JOIN quotes q ON q.id = j.quote_id \
         WHERE j.id = ANY($1::uuid[])",
    )
    .bind(
        jobs.iter()
            .map(|j| j["id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>(),
    )
    .fetch_one(&floor.app.pool().await)
    .await
    .unwrap();
    assert_eq!(
        offer["earnings"],
        json!({"amount_minor": 2 * 250 + (60 * metres + 500) / 1000, "currency": "USD"}),
        "{offer}"
    );

    // Declined: the whole route goes to the next courier that takes routes.
    let decline = format!("/offers/{}/decline", offer["id"].as_str().unwrap());
    let (status, _) = floor
        .courier_call(&first, Method::POST, &decline, None)
        .await;
    assert_eq!(status, 204);
    online(&floor, &second, true).await;
    let offer = floor.offer_for(&second).await;
    assert_eq!(ids(&offer["jobs"]).len(), 2, "{offer}");
    let (_, left) = floor
        .courier_call(&first, Method::GET, "/offers", None)
        .await;
    assert_eq!(left, json!([]), "a declined route is not offered again");

    // Accepted: both jobs are the courier's.
    let accept = format!("/offers/{}/accept", offer["id"].as_str().unwrap());
    let (status, accepted) = floor
        .courier_call(&second, Method::POST, &accept, None)
        .await;
    assert_eq!(status, 200, "{accepted}");
    assert_eq!(accepted["id"], offer["jobs"][0]["id"]);
    let (status, under_way) = floor
        .courier_call(&second, Method::GET, "/jobs", None)
        .await;
    assert_eq!(status, 200, "{under_way}");
    assert_eq!(under_way.as_array().unwrap().len(), 2, "{under_way}");
    for job in &jobs {
        assert_eq!(floor.job(job).await["status"], "assigned");
    }
    // Each collected at the pickup and delivered, in the route's order.
    for job in &jobs {
        floor.collect(&second, job).await;
    }
    for planned in offer["jobs"].as_array().unwrap() {
        floor.deliver(&second, planned).await;
    }
    for job in &jobs {
        assert_eq!(floor.job(job).await["status"], "delivered");
        floor.charge_once(job, "captured").await;
        for event in [
            "job.booked",
            "job.courier_assigned",
            "job.picked_up",
            "job.delivered",
        ] {
            floor.event_data(job, event).await;
            assert_eq!(floor.event_count(job, event), 1, "{event} of {}", job["id"]);
        }
        let url = job["tracking_url"].as_str().unwrap();
        let path = &url[url.find("/track/").unwrap()..];
        let tracking = floor.app.request(Method::GET, path).send().await.unwrap();
        assert_eq!(tracking.status(), 200);
        let page = tracking.text().await.unwrap();
        assert!(page.contains("elivered"), "{page}");
    }
    floor.assert_no_courier_details(&[&first, &second]);
}

#[tokio::test]
async fn a_courier_that_does_not_take_routes_is_offered_one_job_at_a_time() {
    let floor = Floor::start(&[]).await;
    let single = floor.rider("Sam Single", "car", None).await;
    let jobs = two_parcels(&floor).await;
    online(&floor, &single, false).await;
    for _ in &jobs {
        let offer = floor.offer_for(&single).await;
        assert_eq!(
            ids(&offer["jobs"]),
            vec![offer["job"]["id"].clone()],
            "{offer}"
        );
        assert_eq!(offer["stops"].as_array().unwrap().len(), 2, "{offer}");
        let accept = format!("/offers/{}/accept", offer["id"].as_str().unwrap());
        let (status, job) = floor
            .courier_call(&single, Method::POST, &accept, None)
            .await;
        assert_eq!(status, 200, "{job}");
        floor.collect(&single, &job).await;
        floor.deliver(&single, &job).await;
    }
    for job in &jobs {
        eventually(
            "the job delivered",
            WAIT,
            Duration::from_millis(25),
            || async { (floor.job(job).await["status"] == "delivered").then_some(()) },
        )
        .await;
    }
}

#[tokio::test]
async fn going_online_says_whether_the_app_takes_routes() {
    let floor = Floor::start(&[]).await;
    let rider = floor.rider("Ola Online", "car", None).await;
    let online = || floor.courier_request(&rider.token, Method::POST, "/online");
    // No body, or an empty one whatever its type: one job at a time, as before routes.
    for request in [
        online(),
        online().header("Content-Type", "application/json"),
    ] {
        let (status, me) = crate::support::status_and_json(request.send().await.unwrap()).await;
        assert_eq!(status, 200, "{me}");
        assert_eq!(me["takes_routes"], false);
    }
    let (status, me) = floor
        .courier_call(
            &rider,
            Method::POST,
            "/online",
            Some(json!({"routes": true})),
        )
        .await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(
        (me["online"].clone(), me["takes_routes"].clone()),
        (json!(true), json!(true))
    );
    // Offline, the shift's say ends.
    let (_, me) = floor
        .courier_call(&rider, Method::POST, "/offline", None)
        .await;
    assert_eq!(me["takes_routes"], false);
    for body in [json!({"routes": "yes"}), json!({"route": true})] {
        let response = online().json(&body).send().await.unwrap();
        crate::support::assert_refusal(response, 422, "request.invalid_body").await;
    }
    let response = online()
        .header("Content-Type", "text/plain")
        .body("routes")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415);
}

#[tokio::test]
async fn a_courier_waiting_at_the_pickup_is_given_the_next_parcel_of_it() {
    let floor = Floor::start(&[]).await;
    let waiting = floor.rider("Wai Waiting", "car", None).await;
    online(&floor, &waiting, true).await;
    let first = floor.book().await;
    floor.take(&waiting, &first).await;
    // Another courier, free but across town, also takes routes.
    let across = floor.rider("Acr Across", "car", None).await;
    online(&floor, &across, true).await;
    floor.report_position(&across, (20.0150, 50.0150)).await;

    // Still at the pickup, not yet collected: the next parcel of it is its.
    let second = floor.book().await;
    let offer = floor.offer_for(&waiting).await;
    assert_eq!(offer["job"]["id"], second["id"], "{offer}");
    let (_, elsewhere) = floor
        .courier_call(&across, Method::GET, "/offers", None)
        .await;
    assert_eq!(elsewhere, json!([]));
    let accept = format!("/offers/{}/accept", offer["id"].as_str().unwrap());
    let (status, taken) = floor
        .courier_call(&waiting, Method::POST, &accept, None)
        .await;
    assert_eq!(status, 200, "{taken}");
    let (_, under_way) = floor
        .courier_call(&waiting, Method::GET, "/jobs", None)
        .await;
    assert_eq!(under_way.as_array().unwrap().len(), 2, "{under_way}");
    // Operators read why: it stood at the pickup. The first was planned over the round.
    let reasons: Vec<Value> = sqlx::query_scalar(
        "SELECT reason FROM courier_offers WHERE job_id = ANY($1::uuid[]) ORDER BY offered_at",
    )
    .bind(vec![
        first["id"].as_str().unwrap().to_owned(),
        second["id"].as_str().unwrap().to_owned(),
    ])
    .fetch_all(&floor.app.pool().await)
    .await
    .unwrap();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert_eq!(reasons[0]["kind"], "planned", "{reasons:?}");
    assert_eq!(reasons[1], json!({"kind": "at_pickup"}));

    // On its way, it is given nothing more: the next parcel goes to the other courier.
    for job in [&first, &second] {
        floor.collect(&waiting, job).await;
    }
    let third = floor.book().await;
    let offer = floor.offer_for(&across).await;
    assert_eq!(offer["job"]["id"], third["id"], "{offer}");
    for job in [&first, &second] {
        floor.deliver(&waiting, job).await;
        floor.charge_once(job, "captured").await;
    }
}

#[tokio::test]
async fn a_market_may_keep_a_vehicle_to_one_job_per_offer() {
    // The demo market, its cars carrying one parcel at a time.
    let demo = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../core/src/markets/demo.toml"
    ));
    let markets = crate::support::scratch_path("markets").with_extension("toml");
    std::fs::write(
        &markets,
        format!("{demo}\n[market.bundles_by_vehicle.car]\nmax_jobs = 1\n"),
    )
    .unwrap();
    let floor = Floor::start(&[("COURIER_MARKETS_FILE", markets.to_str().unwrap())]).await;
    let rider = floor.rider("Uno Single", "car", None).await;
    let jobs = two_parcels(&floor).await;
    online(&floor, &rider, true).await;
    let offer = floor.offer_for(&rider).await;
    assert_eq!(
        ids(&offer["jobs"]),
        vec![offer["job"]["id"].clone()],
        "one job, though the courier takes routes: {offer}"
    );
    assert!(jobs.iter().any(|j| j["id"] == offer["job"]["id"]));
}

#[tokio::test]
async fn a_job_cancelled_while_its_route_is_offered_leaves_the_rest_of_the_route() {
    let floor = Floor::start(&[("COURIER_OFFER_TIMEOUT_MS", "20000")]).await;
    let rider = floor.rider("Can Cancel", "car", None).await;
    let [one, two] = two_parcels(&floor).await;
    let ready =
        (Utc::now() + chrono::Duration::seconds(90)).to_rfc3339_opts(SecondsFormat::Secs, true);
    let three = floor.book_as(&[], json!({"pickup_ready_at": ready})).await;
    let jobs = json!([one, two, three]);
    online(&floor, &rider, true).await;
    let offer = floor.offer_for(&rider).await;
    assert_eq!(ids(&offer["jobs"]).len(), 3, "{offer}");
    // The merchant cancels the route's first job: the offer holds the two others.
    let cancelled = offer["job"]["id"].as_str().unwrap();
    let (status, body) = floor
        .merchant_call(
            Method::POST,
            &format!("/v1/jobs/{cancelled}/cancel"),
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let sorted = |mut ids: Vec<Value>| {
        ids.sort_by_key(|id| id.to_string());
        ids
    };
    let kept = sorted(
        ids(&jobs)
            .into_iter()
            .filter(|id| id != cancelled)
            .collect(),
    );
    let (_, offers) = floor
        .courier_call(&rider, Method::GET, "/offers", None)
        .await;
    assert_eq!(offers.as_array().unwrap().len(), 1, "{offers}");
    let left = &offers[0];
    assert_eq!(left["id"], offer["id"], "the same offer");
    assert_eq!(sorted(ids(&left["jobs"])), kept, "{left}");
    assert_eq!(left["stops"].as_array().unwrap().len(), 4, "{left}");
    // Accepted: the jobs left are the courier's, the cancelled one stays cancelled.
    let accept = format!("/offers/{}/accept", offer["id"].as_str().unwrap());
    let (status, taken) = floor
        .courier_call(&rider, Method::POST, &accept, None)
        .await;
    assert_eq!(status, 200, "{taken}");
    assert!(kept.contains(&taken["id"]), "{taken}");
    let (_, under_way) = floor.courier_call(&rider, Method::GET, "/jobs", None).await;
    assert_eq!(sorted(ids(&under_way)), kept);
    let detail = floor.job(&json!({"id": cancelled})).await;
    assert_eq!(detail["status"], "cancelled");
}
