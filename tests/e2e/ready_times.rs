//! When a parcel will be ready (`pickup_ready_at`): sent with a quote for its estimate, with a
//! booking or from the merchant's `preparation_minutes`; shown to the merchant and the courier;
//! refused out of its window; couriers sent to arrive about then; the dispatch deadline
//! counting from it. Requests without it are answered exactly as before.

use std::time::Duration;

use chrono::{DateTime, DurationRound, SecondsFormat, SubsecRound, Utc};
use reqwest::Method;
use serde_json::{Value, json};

use crate::console::Visitor;
use crate::fulfilment::{Floor, PICKUP, WAIT};
use crate::quotes::journey;
use crate::support::eventually;

fn iso(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn at(value: &Value) -> DateTime<Utc> {
    value
        .as_str()
        .unwrap_or_else(|| panic!("{value} is not a date-time"))
        .parse()
        .unwrap()
}

/// Whole seconds, as [`iso`] writes them.
fn in_minutes(minutes: i64) -> DateTime<Utc> {
    (Utc::now() + chrono::Duration::minutes(minutes)).trunc_subsecs(0)
}

/// A car quote from 41 4th Street to 102 17th Street with `fields` added.
async fn quote(floor: &Floor, fields: Value) -> (u16, Value) {
    let mut body = journey(Some("car"));
    for (name, value) in fields.as_object().unwrap() {
        body[name] = value.clone();
    }
    floor
        .merchant_call(Method::POST, "/v1/quotes", Some(body))
        .await
}

/// Quotes with `quoted` and books that quote with `fields`: the booking's status and body.
async fn book(floor: &Floor, quoted: Value, fields: Value) -> (u16, Value) {
    floor.booking(&[], quoted, fields).await
}

async fn listed(floor: &Floor, job: &Value) -> Value {
    let (status, list) = floor
        .merchant_call(Method::GET, "/v1/jobs?size=200", None)
        .await;
    assert_eq!(status, 200, "{list}");
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["id"] == job["id"])
        .cloned()
        .unwrap_or_else(|| panic!("{} is not listed: {list}", job["id"]))
}

fn assert_refused(answer: &(u16, Value), code: &str) {
    assert_eq!(answer.0, 422, "{}", answer.1);
    assert_eq!(answer.1["code"], code, "{}", answer.1);
}

#[tokio::test]
async fn a_ready_time_is_estimated_kept_shown_and_bounded() {
    // The dispatch deadline bounds a ready time: 10 minutes after the job is due.
    let floor = Floor::start(&[("COURIER_DISPATCH_DEADLINE_SECS", "600")]).await;
    // Waits for the demo city's network.
    floor.book().await;

    // The quote estimates the delivery from the ready time; without one it is as before.
    let ready = in_minutes(5);
    let (status, estimated) = quote(&floor, json!({"pickup_ready_at": iso(ready)})).await;
    assert_eq!(status, 201, "{estimated}");
    assert_eq!(at(&estimated["pickup_ready_at"]), ready);
    let trip = estimated["estimated_duration_seconds"].as_i64().unwrap();
    assert_eq!(
        at(&estimated["estimated_delivery_at"]),
        ready + chrono::Duration::seconds(trip)
    );
    let (status, plain) = quote(&floor, json!({})).await;
    assert_eq!(status, 201, "{plain}");
    assert!(
        plain.get("pickup_ready_at").is_none() && plain.get("estimated_delivery_at").is_none(),
        "{plain}"
    );
    for (value, code) in [
        (json!("soon"), "request.invalid_pickup_ready_at"),
        (
            json!("2026-11-21T18:00:00"),
            "request.invalid_pickup_ready_at",
        ),
        (json!(iso(in_minutes(11))), "job.pickup_ready_out_of_range"),
        (json!(iso(in_minutes(-5))), "job.pickup_ready_out_of_range"),
    ] {
        let answer = quote(&floor, json!({"pickup_ready_at": value})).await;
        assert_refused(&answer, code);
    }

    // Booked with a ready time: the booking, the detail and the list item show it.
    let (status, job) = book(&floor, json!({}), json!({"pickup_ready_at": iso(ready)})).await;
    assert_eq!(status, 201, "{job}");
    assert_eq!(at(&job["pickup_ready_at"]), ready);
    assert_eq!(at(&floor.job(&job).await["pickup_ready_at"]), ready);
    assert_eq!(at(&listed(&floor, &job).await["pickup_ready_at"]), ready);
    // And the console, on the job's page and in the list.
    let mut visitor = Visitor::new(&floor.app);
    visitor.sign_in(&floor.credential).await;
    let shown = ready.format("%Y-%m-%d %H:%M UTC").to_string();
    let page = visitor
        .get(&format!("/console/jobs/{}", job["id"].as_str().unwrap()))
        .await;
    assert!(
        page.body
            .contains(&format!("<dd id=\"pickup-ready\">{shown}</dd>")),
        "{}",
        page.body
    );
    let list = visitor.get("/console/jobs").await;
    assert!(
        list.body.contains(&format!("<td>{shown}</td>")),
        "{}",
        list.body
    );

    // Booked without one: not a field of the booking, the detail or the list item.
    let (status, plain) = book(&floor, json!({}), json!({})).await;
    assert_eq!(status, 201, "{plain}");
    for shown in [
        plain.clone(),
        floor.job(&plain).await,
        listed(&floor, &plain).await,
    ] {
        assert!(shown.get("pickup_ready_at").is_none(), "{shown}");
    }

    // Out of the window: refused, and nothing is booked.
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs")
        .fetch_one(&floor.app.pool().await)
        .await
        .unwrap();
    for (value, code) in [
        (json!(42), "request.invalid_pickup_ready_at"),
        (json!(iso(in_minutes(-3))), "job.pickup_ready_out_of_range"),
        (json!(iso(in_minutes(12))), "job.pickup_ready_out_of_range"),
    ] {
        let answer = book(&floor, json!({}), json!({"pickup_ready_at": value})).await;
        assert_refused(&answer, code);
    }
    // A scheduled job's parcel is ready from its time.
    let scheduled = (Utc::now() + chrono::Duration::hours(2))
        .duration_trunc(chrono::Duration::minutes(1))
        .unwrap();
    let schedule = json!({"scheduled_for": iso(scheduled)});
    let early = json!({"scheduled_for": iso(scheduled), "pickup_ready_at": iso(scheduled - chrono::Duration::minutes(1))});
    assert_refused(
        &book(&floor, schedule.clone(), early).await,
        "job.pickup_ready_out_of_range",
    );
    let after: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs")
        .fetch_one(&floor.app.pool().await)
        .await
        .unwrap();
    assert_eq!(after, before);
    let later = scheduled + chrono::Duration::minutes(8);
    let (status, pending) = book(
        &floor,
        schedule.clone(),
        json!({"scheduled_for": iso(scheduled), "pickup_ready_at": iso(later)}),
    )
    .await;
    assert_eq!(status, 201, "{pending}");
    assert_eq!(pending["status"], "pending");
    assert_eq!(at(&pending["pickup_ready_at"]), later);

    // The account's preparation time is the default; a booking's own time wins over it.
    let settings = format!("/merchants/{}/settings", floor.merchant.merchant_id);
    for (refused, code) in [
        (json!(-1), "settings.invalid_preparation_minutes"),
        (json!(241), "settings.invalid_preparation_minutes"),
        (json!("a while"), "request.invalid_body"),
    ] {
        let answer = floor
            .admin_call(
                Method::PATCH,
                &settings,
                Some(json!({"preparation_minutes": refused})),
            )
            .await;
        assert_refused(&answer, code);
    }
    let (status, body) = floor
        .admin_call(
            Method::PATCH,
            &settings,
            Some(json!({"preparation_minutes": 7})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["preparation_minutes"], 7);
    let (status, defaulted) = book(&floor, json!({}), json!({})).await;
    assert_eq!(status, 201, "{defaulted}");
    assert_eq!(
        at(&defaulted["pickup_ready_at"]),
        at(&defaulted["booked_at"]) + chrono::Duration::minutes(7)
    );
    let (status, own) = book(&floor, json!({}), json!({"pickup_ready_at": iso(ready)})).await;
    assert_eq!(status, 201, "{own}");
    assert_eq!(at(&own["pickup_ready_at"]), ready);
    let (status, scheduled_default) = book(&floor, schedule.clone(), schedule).await;
    assert_eq!(status, 201, "{scheduled_default}");
    assert_eq!(
        at(&scheduled_default["pickup_ready_at"]),
        scheduled + chrono::Duration::minutes(7)
    );
}

#[tokio::test]
async fn couriers_are_sent_to_arrive_when_the_parcel_is_ready() {
    let floor = Floor::start(&[("COURIER_DISPATCH_READY_WAIT_SECS", "1")]).await;
    let rider = floor.rider("Rea Ready", "car", Some(PICKUP)).await;
    let ready = (Utc::now() + chrono::Duration::seconds(14)).trunc_subsecs(0);
    let job = floor
        .book_as(&[], json!({"pickup_ready_at": iso(ready)}))
        .await;
    // Booked ready in 14 s: the offer comes later than `offer_for` waits.
    let offer = eventually(
        "an offer before the parcel is ready",
        Duration::from_secs(30),
        Duration::from_millis(25),
        || async {
            let (status, offers) = floor
                .courier_call(&rider, Method::GET, "/offers", None)
                .await;
            assert_eq!(status, 200, "{offers}");
            offers.as_array().unwrap().first().cloned()
        },
    )
    .await;
    let seen = Utc::now();
    assert_eq!(offer["job"]["id"], job["id"]);
    assert_eq!(at(&offer["job"]["pickup_ready_at"]), ready);
    let travel = chrono::Duration::seconds(offer["travel_seconds"].as_i64().unwrap());
    assert!(
        travel < chrono::Duration::seconds(8),
        "the courier is at the pickup: {travel}"
    );
    // Offered once the courier, leaving then, waits at most a second: not at booking.
    let offered: DateTime<Utc> =
        sqlx::query_scalar("SELECT offered_at FROM courier_offers WHERE job_id = $1::uuid")
            .bind(job["id"].as_str().unwrap())
            .fetch_one(&floor.app.pool().await)
            .await
            .unwrap();
    assert!(
        offered + travel + chrono::Duration::seconds(1) >= ready,
        "offered at {offered}, {travel} from a pickup ready at {ready}"
    );
    assert!(
        seen <= ready,
        "offered only at {seen}, after the ready time {ready}"
    );
    floor.take(&rider, &job).await;
    let (status, jobs) = floor.courier_call(&rider, Method::GET, "/jobs", None).await;
    assert_eq!(status, 200, "{jobs}");
    assert_eq!(at(&jobs[0]["pickup_ready_at"]), ready);
}

#[tokio::test]
async fn the_dispatch_deadline_counts_from_the_ready_time() {
    // Nobody is online: the search can only fail, and it fails the deadline after the
    // ready time, not after booking.
    let floor = Floor::start(&[("COURIER_DISPATCH_DEADLINE_SECS", "3")]).await;
    // Waits for the demo city's network.
    floor.book().await;
    let booked = Utc::now();
    let ready = booked + chrono::Duration::milliseconds(2500);
    let job = floor
        .book_as(&[], json!({"pickup_ready_at": ready.to_rfc3339()}))
        .await;
    let deadline_from_booking = booked + chrono::Duration::seconds(4);
    let left = (deadline_from_booking - Utc::now())
        .to_std()
        .unwrap_or_default();
    tokio::time::sleep(left).await;
    assert_eq!(floor.job(&job).await["status"], "searching");
    eventually(
        "the search to fail",
        WAIT,
        Duration::from_millis(50),
        || async { (floor.job(&job).await["status"] == "failed").then_some(()) },
    )
    .await;
    let failed_at: DateTime<Utc> = sqlx::query_scalar(
        "SELECT occurred_at FROM events WHERE job_id = $1::uuid AND name = 'job.failed'",
    )
    .bind(job["id"].as_str().unwrap())
    .fetch_one(&floor.app.pool().await)
    .await
    .unwrap();
    assert!(
        failed_at >= ready + chrono::Duration::seconds(3),
        "failed at {failed_at}, before the deadline after {ready}"
    );
}
