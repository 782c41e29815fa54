//! `POST /v1/jobs`, `GET /v1/jobs`, `GET /v1/jobs/{id}`: book once, read back, list.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::quotes::{Quoting, journey};
use crate::support::{
    Authed, Credential, MerchantCredentials, assert_refusal, eventually, status_and_json,
};

/// A merchant ready to book in the demo market.
pub(crate) struct Booking {
    pub(crate) quoting: Quoting,
}

impl Booking {
    pub(crate) async fn start() -> Self {
        Self::start_with(|_| None).await
    }

    async fn start_with(extra: impl Fn(&str) -> Option<String>) -> Self {
        let quoting = Quoting::start_with(extra).await;
        crate::support::attach_working_card(&quoting.app, &quoting.credential).await;
        Self { quoting }
    }

    fn credential(&self) -> &Credential {
        &self.quoting.credential
    }

    pub(crate) async fn quote(&self, body: Value) -> Value {
        let (status, quote) = self.quoting.quote(&body).await;
        assert_eq!(status, 201, "{quote}");
        quote
    }

    async fn book_with(
        &self,
        credential: &Credential,
        key: Option<&str>,
        body: &Value,
    ) -> (u16, Value) {
        let mut request = self
            .quoting
            .app
            .request(Method::POST, "/v1/jobs")
            .auth(credential)
            .json(body);
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        status_and_json(request.send().await.unwrap()).await
    }

    pub(crate) async fn book(&self, key: &str, body: &Value) -> (u16, Value) {
        self.book_with(self.credential(), Some(key), body).await
    }

    pub(crate) async fn get(&self, path: &str) -> (u16, Value) {
        status_and_json(
            self.quoting
                .app
                .request(Method::GET, path)
                .auth(self.credential())
                .send()
                .await
                .unwrap(),
        )
        .await
    }
}

fn stop(quote_point: (f64, f64), name: &str) -> Value {
    json!({
        "latitude": quote_point.0,
        "longitude": quote_point.1,
        "address": format!("{name}'s door, Demo City"),
        "contact_name": name,
        "contact_phone": "+966 11 463 5555",
        "notes": null,
    })
}

/// A booking body for `quote` of the standard demo journey.
pub(crate) fn booking_body(quote: &Value) -> Value {
    let journey = journey(None);
    let point = |stop: &str| {
        (
            journey[stop]["latitude"].as_f64().unwrap(),
            journey[stop]["longitude"].as_f64().unwrap(),
        )
    };
    json!({
        "quote_id": quote["id"],
        "pickup": stop(point("pickup"), "Pat Pickup"),
        "dropoff": stop(point("dropoff"), "Dana Dropoff"),
    })
}

pub(crate) fn key() -> String {
    format!("key-{}", uuid::Uuid::new_v4())
}

/// Jobs in the database, whatever their merchant.
async fn jobs_stored(booking: &Booking) -> i64 {
    let pool = booking.quoting.app.pool().await;
    let (jobs,): (i64,) = sqlx::query_as("SELECT count(*) FROM jobs")
        .fetch_one(&pool)
        .await
        .unwrap();
    jobs
}

#[tokio::test]
async fn a_booking_is_created_and_read_back() {
    let booking = Booking::start().await;
    let quote = booking.quote(journey(Some("car"))).await;
    let mut body = booking_body(&quote);
    body["items"] = json!([
        {"name": "Flowers", "unit_price_minor": 2500, "quantity": 1},
        {"name": "Card", "unit_price_minor": "300", "quantity": "2"},
    ]);
    body["discount_minor"] = json!(500);
    body["dropoff"]["contact_phone"] = json!("011 463 5555");
    let (status, job) = booking.book(&key(), &body).await;
    assert_eq!(status, 201, "{job}");
    assert_eq!(job["status"], "searching");
    assert_eq!(job["price_amount_minor"], quote["total_amount_minor"]);
    assert_eq!(job["currency"], "USD");
    assert_eq!(job["vehicle"], "car");
    assert_eq!(job["scheduled_for"], Value::Null);
    let reference = job["reference"].as_str().unwrap();
    assert!(
        reference.starts_with("CR-") && reference.len() == 12,
        "{reference}"
    );
    let id = job["id"].as_str().unwrap();
    let tracking = job["tracking_url"].as_str().unwrap();
    assert!(
        tracking.contains("/track/") && !tracking.contains(id),
        "{tracking}"
    );

    let (status, detail) = booking.get(&format!("/v1/jobs/{id}")).await;
    assert_eq!(status, 200, "{detail}");
    for field in [
        "id",
        "reference",
        "status",
        "tracking_url",
        "booked_at",
        "price_amount_minor",
    ] {
        assert_eq!(detail[field], job[field], "{field}");
    }
    let tax: i64 = quote["breakdown"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["code"] == "tax")
        .map(|l| l["amount_minor"].as_i64().unwrap())
        .sum();
    assert_eq!(detail["tax_amount_minor"], tax);
    assert_eq!(detail["pickup"]["contact_name"], "Pat Pickup");
    assert_eq!(
        detail["dropoff"]["contact_phone"], "+966114635555",
        "national number read in the market's country"
    );
    assert_eq!(detail["dropoff"]["notes"], Value::Null);
    assert_eq!(detail["items"][1]["line_total_minor"], 600);
    assert_eq!(detail["items_subtotal_minor"], 3100);
    assert_eq!(detail["discount_minor"], 500);
    assert_eq!(detail["items_total_minor"], 2600);
    assert_eq!(
        detail["proof_requirement"],
        json!({"photo_required": false, "signature_required": false})
    );
    assert_eq!(detail["notify_customer"], false);
    for absent in [
        "assigned_at",
        "completed_at",
        "cancellation_reason",
        "proof",
        "customer_notified_at",
    ] {
        assert_eq!(detail[absent], Value::Null, "{absent}");
    }
    assert!(detail.get("courier").is_none() && detail.get("offers").is_none());

    let (status, position) = status_and_json(
        booking
            .quoting
            .app
            .request(Method::GET, &format!("/v1/jobs/{id}/courier-position"))
            .auth(booking.credential())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, position),
        (204, Value::Null),
        "nobody is on the job yet"
    );

    // job.booked was recorded with the booking.
    let pool = booking.quoting.app.pool().await;
    let (name, facts): (String, Value) =
        sqlx::query_as("SELECT name, job FROM events WHERE job_id = $1::uuid")
            .bind(id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(name, "job.booked");
    assert_eq!(facts["reference"], job["reference"]);

    // Its charge, written with it: the price held, authorised, with the moves that took it
    // there in order.
    let (charge_id, status, amount, authorisation): (uuid::Uuid, String, i64, Option<String>) =
        sqlx::query_as(
            "SELECT id, status, amount_minor, authorisation_ref FROM charges \
             WHERE job_id = $1::uuid",
        )
        .bind(id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(status, "authorised");
    assert_eq!(Some(amount), job["price_amount_minor"].as_i64());
    assert!(authorisation.is_some());
    let moves: Vec<(Option<String>, String, Option<String>)> = sqlx::query_as(
        "SELECT from_status, to_status, provider_ref FROM charge_moves \
         WHERE charge_id = $1 ORDER BY id",
    )
    .bind(charge_id)
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        moves,
        [
            (None, "pending".to_owned(), None),
            (
                Some("pending".to_owned()),
                "authorised".to_owned(),
                authorisation
            ),
        ]
    );
    booking.quoting.app.stop().await;
}

#[tokio::test]
async fn the_same_key_replays_and_a_different_body_conflicts() {
    let booking = Booking::start().await;
    let quote = booking.quote(journey(None)).await;
    let body = booking_body(&quote);
    let key = key();
    let (status, first) = booking.book(&key, &body).await;
    assert_eq!(status, 201, "{first}");
    let (status, again) = booking.book(&key, &body).await;
    assert_eq!(
        (status, &again),
        (201, &first),
        "the stored response, status included"
    );
    let mut different = body.clone();
    different["dropoff"]["notes"] = json!("ring twice");
    let (status, conflict) = booking.book(&key, &different).await;
    assert_eq!(
        (status, conflict["code"].as_str()),
        (409, Some("idempotency.key_reused"))
    );
    let (status, missing) = booking.book_with(booking.credential(), None, &body).await;
    assert_eq!(
        (status, missing["code"].as_str()),
        (422, Some("request.missing_idempotency_key"))
    );
    let (status, invalid) = booking.book(&"k".repeat(300), &body).await;
    assert_eq!(
        (status, invalid["code"].as_str()),
        (422, Some("request.invalid_idempotency_key"))
    );
    assert_eq!(jobs_stored(&booking).await, 1);
    booking.quoting.app.stop().await;
}

#[tokio::test]
async fn fifty_parallel_bookings_with_one_key_make_one_job() {
    let booking = Arc::new(Booking::start().await);
    let quote = booking.quote(journey(None)).await;
    let body = Arc::new(booking_body(&quote));
    let key = Arc::new(key());
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let (booking, body, key) = (Arc::clone(&booking), Arc::clone(&body), Arc::clone(&key));
            tokio::spawn(async move { booking.book(&key, &body).await })
        })
        .collect();
    let mut responses = Vec::new();
    for task in tasks {
        responses.push(task.await.unwrap());
    }
    let first = &responses[0];
    assert_eq!(first.0, 201, "{}", first.1);
    assert!(responses.iter().all(|r| r == first), "identical responses");
    assert_eq!(jobs_stored(&booking).await, 1);
}

/// One key sent at once with different bodies (each naming its own quote): one booking wins
/// and every other request is answered `idempotency.key_reused`, whether it found the key
/// already committed or waited for it; the losers' quotes stay bookable.
#[tokio::test]
async fn parallel_bookings_of_one_key_with_different_bodies_make_one_job() {
    let booking = Arc::new(Booking::start().await);
    let mut bodies = Vec::new();
    for _ in 0..16 {
        bodies.push(booking_body(&booking.quote(journey(None)).await));
    }
    let key = Arc::new(key());
    let tasks: Vec<_> = bodies
        .iter()
        .cloned()
        .map(|body| {
            let (booking, key) = (Arc::clone(&booking), Arc::clone(&key));
            tokio::spawn(async move { booking.book(&key, &body).await })
        })
        .collect();
    let mut booked = Vec::new();
    for (n, task) in tasks.into_iter().enumerate() {
        let (status, body) = task.await.unwrap();
        match status {
            201 => booked.push(n),
            409 => assert_eq!(body["code"], "idempotency.key_reused", "{body}"),
            other => panic!("{other}: {body}"),
        }
    }
    assert_eq!(booked.len(), 1, "one booking wins the key");
    assert_eq!(jobs_stored(&booking).await, 1);
    let loser = (booked[0] + 1) % bodies.len();
    let (status, body) = booking.book(&self::key(), &bodies[loser]).await;
    assert_eq!(
        status, 201,
        "a losing body's quote is still bookable: {body}"
    );
}

#[tokio::test]
async fn fifty_parallel_bookings_of_one_quote_book_it_once() {
    let booking = Arc::new(Booking::start().await);
    let quote = booking.quote(journey(None)).await;
    let body = Arc::new(booking_body(&quote));
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let (booking, body) = (Arc::clone(&booking), Arc::clone(&body));
            tokio::spawn(async move { booking.book(&key(), &body).await })
        })
        .collect();
    let (mut booked, mut refused) = (0, 0);
    for task in tasks {
        let (status, body) = task.await.unwrap();
        match status {
            201 => booked += 1,
            422 => {
                assert_eq!(body["code"], "quote.already_used");
                refused += 1;
            }
            other => panic!("{other}: {body}"),
        }
    }
    assert_eq!((booked, refused), (1, 49));
}

/// Bookings sent at once are read and written together; one quote asked for by several of
/// them makes a batch give up, and each of its bookings is then written alone: every other
/// booking is made all the same, and the contested quote is booked once.
#[tokio::test]
async fn bookings_sent_together_are_each_made_when_some_contest_one_quote() {
    let booking = Arc::new(Booking::start().await);
    let mut bodies = Vec::new();
    for _ in 0..24 {
        bodies.push(booking_body(&booking.quote(journey(None)).await));
    }
    let contested = booking_body(&booking.quote(journey(None)).await);
    bodies.extend(std::iter::repeat_n(contested, 8));
    let tasks: Vec<_> = bodies
        .iter()
        .cloned()
        .map(|body| {
            let booking = Arc::clone(&booking);
            tokio::spawn(async move { booking.book(&key(), &body).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    let mut jobs = std::collections::HashSet::new();
    for (status, job) in &outcomes[..24] {
        assert_eq!(*status, 201, "{job}");
        jobs.insert(job["id"].as_str().expect("a job id").to_owned());
    }
    assert_eq!(jobs.len(), 24, "each booking has its own job");
    let contested: Vec<u16> = outcomes[24..].iter().map(|(status, _)| *status).collect();
    assert_eq!(
        contested.iter().filter(|s| **s == 201).count(),
        1,
        "{contested:?}"
    );
    for (status, body) in &outcomes[24..] {
        if *status != 201 {
            assert_eq!(
                (*status, body["code"].as_str()),
                (422, Some("quote.already_used"))
            );
        }
    }
    assert_eq!(jobs_stored(&booking).await, 25);
}

/// Quotes priced at once are written together; each is answered only once it is stored, so
/// every one is bookable the moment its answer arrives.
#[tokio::test]
async fn quotes_priced_at_once_are_each_bookable_as_soon_as_answered() {
    let booking = Arc::new(Booking::start().await);
    let tasks: Vec<_> = (0..32)
        .map(|_| {
            let booking = Arc::clone(&booking);
            tokio::spawn(async move {
                let mut ids = Vec::new();
                for _ in 0..3 {
                    let quote = booking.quote(journey(None)).await;
                    let (status, job) = booking.book(&key(), &booking_body(&quote)).await;
                    assert_eq!(status, 201, "{job}");
                    assert_eq!(job["price_amount_minor"], quote["total_amount_minor"]);
                    ids.push(quote["id"].as_str().unwrap().to_owned());
                }
                ids
            })
        })
        .collect();
    let mut quote_ids = std::collections::HashSet::new();
    for task in tasks {
        quote_ids.extend(task.await.unwrap());
    }
    assert_eq!(quote_ids.len(), 96, "every quote has its own id");
}

#[tokio::test]
async fn an_expired_quote_cannot_be_booked() {
    let booking =
        Booking::start_with(|name| (name == "COURIER_QUOTE_TTL_SECS").then(|| "1".into())).await;
    let quote = booking.quote(journey(None)).await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let (status, body) = booking.book(&key(), &booking_body(&quote)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("quote.expired")),
        "{body}"
    );
    booking.quoting.app.stop().await;
}

#[tokio::test]
async fn booking_refusals_have_their_codes() {
    let booking = Booking::start().await;
    let quote = booking.quote(journey(None)).await;
    let good = booking_body(&quote);
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut body = good.clone();
        edit(&mut body);
        body
    };
    let other = booking.quoting.app.create_merchant("Other Ltd").await;
    let cases: Vec<(Value, &str)> = vec![
        (
            with(&|b| b["quote_id"] = json!(uuid::Uuid::new_v4())),
            "quote.not_found",
        ),
        (
            with(&|b| b["quote_id"] = json!("not-an-id")),
            "quote.not_found",
        ),
        (
            with(&|b| {
                b["pickup"]
                    .as_object_mut()
                    .unwrap()
                    .remove("contact_name")
                    .map(|_| ())
                    .unwrap()
            }),
            "request.invalid_stop",
        ),
        (
            with(&|b| b["dropoff"]["address"] = json!("  ")),
            "request.invalid_stop",
        ),
        (
            with(&|b| b["dropoff"]["contact_phone"] = json!("12345")),
            "request.invalid_stop",
        ),
        (
            with(&|b| b["items"] = json!([{"name": "x", "unit_price_minor": -1, "quantity": 1}])),
            "order.item_invalid",
        ),
        (
            with(&|b| b["items"] = json!([{"name": "", "unit_price_minor": 1, "quantity": 1}])),
            "order.item_invalid",
        ),
        (
            with(&|b| b["items"] = json!([{"name": "x", "unit_price_minor": 1, "quantity": 0}])),
            "order.item_invalid",
        ),
        (
            with(&|b| {
                b["items"] = json!([{"name": "x", "unit_price_minor": 100, "quantity": 1}]);
                b["discount_minor"] = json!(101);
            }),
            "order.discount_exceeds_items",
        ),
        (
            with(&|b| b["scheduled_for"] = json!("2020-01-01T00:00:00Z")),
            "job.scheduled_in_past",
        ),
        (
            with(&|b| {
                b["scheduled_for"] =
                    json!((chrono::Utc::now() + chrono::Duration::hours(3)).to_rfc3339())
            }),
            "quote.schedule_mismatch",
        ),
        (
            with(&|b| b["dropoff"]["latitude"] = json!(20.0151)),
            "quote.stop_mismatch",
        ),
        (
            with(&|b| b["notify_customer"] = json!("yes")),
            "request.invalid_notify_customer",
        ),
    ];
    for (body, code) in cases {
        let (status, refusal) = booking.book(&key(), &body).await;
        assert_eq!(
            (status, refusal["code"].as_str()),
            (422, Some(code)),
            "{refusal}"
        );
        assert!(!refusal["message"].as_str().unwrap().is_empty());
    }
    // Stop messages say which stop and which field.
    let (_, refusal) = booking
        .book(
            &key(),
            &with(&|b| b["dropoff"]["contact_phone"] = json!("12345")),
        )
        .await;
    assert!(
        refusal["message"]
            .as_str()
            .unwrap()
            .contains("dropoff: contact_phone"),
        "{refusal}"
    );
    // Another merchant's quote, or this merchant's live key on a test quote, finds nothing.
    let (status, refusal) = booking.book_with(&other.test(), Some(&key()), &good).await;
    assert_eq!(
        (status, refusal["code"].as_str()),
        (422, Some("quote.not_found"))
    );
    // Refusals keep the quote usable.
    let (status, job) = booking.book(&key(), &good).await;
    assert_eq!(status, 201, "{job}");
    let (status, refusal) = booking.book(&key(), &good).await;
    assert_eq!(
        (status, refusal["code"].as_str()),
        (422, Some("quote.already_used"))
    );
    booking.quoting.app.stop().await;
}

#[tokio::test]
async fn scheduled_jobs_wait_then_open_their_search() {
    let booking =
        Booking::start_with(|name| (name == "COURIER_SCHEDULER_INTERVAL_MS").then(|| "50".into()))
            .await;
    // Far ahead: pending.
    let later = (chrono::Utc::now() + chrono::Duration::hours(3)).to_rfc3339();
    let mut far = journey(None);
    far["scheduled_for"] = json!(later);
    let quote = booking.quote(far).await;
    let mut body = booking_body(&quote);
    body["scheduled_for"] = json!(later);
    let (status, far_job) = booking.book(&key(), &body).await;
    assert_eq!(
        (status, far_job["status"].as_str()),
        (201, Some("pending")),
        "{far_job}"
    );
    assert!(far_job["scheduled_for"].is_string());

    // Within twenty minutes: pending at booking, searching once the scheduler runs.
    let soon = (chrono::Utc::now() + chrono::Duration::minutes(10)).to_rfc3339();
    let mut near = journey(None);
    near["scheduled_for"] = json!(soon);
    let quote = booking.quote(near).await;
    let mut body = booking_body(&quote);
    body["scheduled_for"] = json!(soon);
    let (_, near_job) = booking.book(&key(), &body).await;
    assert_eq!(near_job["status"], "pending");
    let path = format!("/v1/jobs/{}", near_job["id"].as_str().unwrap());
    eventually(
        "the search to open",
        Duration::from_secs(3),
        Duration::from_millis(25),
        || async {
            let (_, detail) = booking.get(&path).await;
            (detail["status"] == "searching").then_some(())
        },
    )
    .await;
    let (_, far_detail) = booking
        .get(&format!("/v1/jobs/{}", far_job["id"].as_str().unwrap()))
        .await;
    assert_eq!(far_detail["status"], "pending");
    booking.quoting.app.stop().await;
}

#[tokio::test]
async fn the_list_shows_own_jobs_newest_first_with_filters_and_pages() {
    let booking = Booking::start().await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let quote = booking.quote(journey(None)).await;
        let (status, job) = booking.book(&key(), &booking_body(&quote)).await;
        assert_eq!(status, 201);
        ids.push(job["id"].as_str().unwrap().to_owned());
    }
    let later = (chrono::Utc::now() + chrono::Duration::hours(2)).to_rfc3339();
    let mut scheduled = journey(None);
    scheduled["scheduled_for"] = json!(later);
    let quote = booking.quote(scheduled).await;
    let mut body = booking_body(&quote);
    body["scheduled_for"] = json!(later);
    let (_, pending) = booking.book(&key(), &body).await;

    let (status, page) = booking.get("/v1/jobs").await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            page["total"].as_i64(),
            page["page"].as_i64(),
            page["size"].as_i64()
        ),
        (Some(4), Some(1), Some(50))
    );
    let listed: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed[0], pending["id"].as_str().unwrap(), "newest first");
    assert_eq!(
        &listed[1..],
        &[ids[2].as_str(), ids[1].as_str(), ids[0].as_str()]
    );
    let item = &page["items"][0];
    assert!(
        item["pickup_address"]
            .as_str()
            .unwrap()
            .contains("Pat Pickup")
    );
    let text = page.to_string();
    assert!(
        !text.contains("contact_name") && !text.contains("contact_phone") && !text.contains("+966")
    );

    let (_, searching) = booking.get("/v1/jobs?status=searching").await;
    assert_eq!(searching["total"], 3);
    let (_, both) = booking.get("/v1/jobs?status=pending,searching").await;
    assert_eq!(both["total"], 4);
    let (_, second) = booking.get("/v1/jobs?size=3&page=2").await;
    assert_eq!(second["items"].as_array().unwrap().len(), 1);
    assert_eq!(second["items"][0]["id"].as_str().unwrap(), ids[0]);
    let future = (chrono::Utc::now() + chrono::Duration::hours(1))
        .to_rfc3339()
        .replace('+', "%2B");
    let (_, none) = booking.get(&format!("/v1/jobs?from={future}")).await;
    assert_eq!(none["total"], 0);
    let (_, all) = booking.get(&format!("/v1/jobs?to={future}")).await;
    assert_eq!(all["total"], 4);

    for (path, code) in [
        ("/v1/jobs?status=searching,lost", "request.unknown_status"),
        ("/v1/jobs?size=201", "request.invalid_page_size"),
        ("/v1/jobs?size=0", "request.invalid_page_size"),
        ("/v1/jobs?page=0", "request.invalid_page"),
        ("/v1/jobs?page=two", "request.invalid_page"),
        ("/v1/jobs?from=yesterday", "request.invalid_query"),
    ] {
        let response = booking
            .quoting
            .app
            .request(Method::GET, path)
            .auth(booking.credential())
            .send()
            .await
            .unwrap();
        assert_refusal(response, 422, code).await;
    }

    // Another merchant, and the live key of the same merchant, see none of these.
    let other = booking.quoting.app.create_merchant("Other Ltd").await;
    let (_, others) = status_and_json(
        booking
            .quoting
            .app
            .request(Method::GET, "/v1/jobs")
            .auth(&other.test())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(others["total"], 0);
    let foreign = format!("/v1/jobs/{}", ids[0]);
    let response = booking
        .quoting
        .app
        .request(Method::GET, &foreign)
        .auth(&other.test())
        .send()
        .await
        .unwrap();
    let foreign_body = assert_refusal(response, 404, "job.not_found").await;
    let response = booking
        .quoting
        .app
        .request(Method::GET, &format!("/v1/jobs/{}", uuid::Uuid::new_v4()))
        .auth(booking.credential())
        .send()
        .await
        .unwrap();
    let unknown_body = assert_refusal(response, 404, "job.not_found").await;
    assert_eq!(foreign_body, unknown_body, "the same answer for both");
    let response = booking
        .quoting
        .app
        .request(Method::GET, "/v1/jobs/not-a-uuid")
        .auth(booking.credential())
        .send()
        .await
        .unwrap();
    assert_refusal(response, 404, "job.not_found").await;
    booking.quoting.app.stop().await;
}

async fn attach(booking: &Booking, number: &str, make_default: bool) -> Value {
    let (status, card) = status_and_json(
        booking
            .quoting
            .app
            .request(Method::POST, "/v1/payment-methods")
            .auth(booking.credential())
            .json(&json!({"provider_ref": format!("pm_sandbox_{number}"), "make_default": make_default}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{card}");
    card
}

#[tokio::test]
async fn a_booking_holds_the_price_on_the_default_card() {
    let booking = Booking::start().await;
    let quote = booking.quote(journey(None)).await;
    let (status, job) = booking.book(&key(), &booking_body(&quote)).await;
    assert_eq!(status, 201, "{job}");
    let (status, charges) = booking.get("/v1/charges").await;
    assert_eq!(status, 200);
    let charge = &charges.as_array().unwrap()[0];
    assert_eq!(charge["job_id"], job["id"]);
    assert_eq!(charge["status"], "authorised");
    assert_eq!(charge["amount_minor"], job["price_amount_minor"]);
    assert_eq!(charge["currency"], "USD");
    booking.quoting.app.stop().await;
}

#[tokio::test]
async fn without_a_usable_card_or_with_a_declined_one_nothing_is_booked() {
    let quoting = Quoting::start().await;
    let booking = Booking { quoting };
    let quote = booking.quote(journey(None)).await;
    let body = booking_body(&quote);
    let (status, refusal) = booking.book(&key(), &body).await;
    assert_eq!(
        (status, refusal["code"].as_str()),
        (422, Some("payment.no_payment_method")),
        "{refusal}"
    );

    attach(&booking, "4000000000000002", true).await;
    let declined_key = key();
    let (status, refusal) = booking.book(&declined_key, &body).await;
    assert_eq!(
        (status, refusal["code"].as_str()),
        (422, Some("payment.card_declined")),
        "{refusal}"
    );
    let (_, jobs) = booking.get("/v1/jobs").await;
    assert_eq!(jobs["total"], 0, "a declined hold books nothing");

    // The decline is the key's answer, as any outcome of the hold is: the same key replays it
    // (even once a working card is attached), and books nothing.
    attach(&booking, "4242424242424242", true).await;
    let (status, replayed) = booking.book(&declined_key, &body).await;
    assert_eq!(
        (status, replayed["code"].as_str()),
        (422, Some("payment.card_declined")),
        "{replayed}"
    );
    // The quote is still usable: booked with a new key and the working card.
    let (status, job) = booking.book(&key(), &body).await;
    assert_eq!(status, 201, "{job}");
    let booked_events: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM events WHERE name = 'job.booked' \
             AND merchant_id = (SELECT merchant_id FROM jobs WHERE id = $1::uuid)",
    )
    .bind(job["id"].as_str().unwrap())
    .fetch_one(&booking.quoting.app.pool().await)
    .await
    .unwrap();
    assert_eq!(
        booked_events, 1,
        "only the booking that held records job.booked"
    );
    booking.quoting.app.stop().await;
}

#[tokio::test]
async fn account_settings_decide_what_a_booking_leaves_unsaid() {
    let booking = Booking::start().await;
    let app = &booking.quoting.app;
    let pool = app.pool().await;
    let (merchant_id,): (uuid::Uuid,) = sqlx::query_as("SELECT id FROM merchants LIMIT 1")
        .fetch_one(&pool)
        .await
        .unwrap();
    let path = format!("/merchants/{merchant_id}/settings");
    let (status, settings) =
        status_and_json(app.admin(Method::GET, &path).send().await.unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(
        settings,
        json!({"notify_customer": false, "proof_photo_required": false, "proof_signature_required": false,
               "sms_sender_name": null, "rate_limit_quotes_per_minute": null,
               "rate_limit_bookings_per_minute": null, "rate_limit_reads_per_minute": null,
               "contact_email": null, "preparation_minutes": null})
    );
    let (status, settings) = status_and_json(
        app.admin(Method::PATCH, &path)
            .json(&json!({"notify_customer": true, "proof_photo_required": true}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{settings}");
    assert_eq!(
        settings,
        json!({"notify_customer": true, "proof_photo_required": true, "proof_signature_required": false,
               "sms_sender_name": null, "rate_limit_quotes_per_minute": null,
               "rate_limit_bookings_per_minute": null, "rate_limit_reads_per_minute": null,
               "contact_email": null, "preparation_minutes": null})
    );

    let quote = booking.quote(journey(None)).await;
    let (_, job) = booking.book(&key(), &booking_body(&quote)).await;
    let (_, detail) = booking
        .get(&format!("/v1/jobs/{}", job["id"].as_str().unwrap()))
        .await;
    assert_eq!(detail["notify_customer"], true);
    assert_eq!(
        detail["proof_requirement"],
        json!({"photo_required": true, "signature_required": false})
    );
    // A booking that says otherwise wins.
    let quote = booking.quote(journey(None)).await;
    let mut body = booking_body(&quote);
    body["notify_customer"] = json!(false);
    let (_, job) = booking.book(&key(), &body).await;
    let (_, detail) = booking
        .get(&format!("/v1/jobs/{}", job["id"].as_str().unwrap()))
        .await;
    assert_eq!(detail["notify_customer"], false);

    let unknown = format!("/merchants/{}/settings", uuid::Uuid::new_v4());
    assert_refusal(
        app.admin(Method::GET, &unknown).send().await.unwrap(),
        404,
        "merchant.not_found",
    )
    .await;
    let response = app
        .admin(Method::PATCH, &path)
        .json(&json!({"colour": "red"}))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 422, "request.invalid_body").await;
    booking.quoting.app.stop().await;
}

/// Booking raises `job.booked`, and the merchant's endpoint receives it signed, with exactly
/// the spec's `data` fields.
#[tokio::test]
async fn a_booking_is_announced_to_the_merchants_webhook() {
    let receiver = crate::support::receiver::Receiver::start().await;
    let ca = receiver.ca_path.to_string_lossy().into_owned();
    let booking = Booking::start_with(move |name| match name {
        "COURIER_WEBHOOK_EXTRA_CA" => Some(ca.clone()),
        "COURIER_WEBHOOK_ALLOW_PRIVATE" => Some("true".into()),
        _ => None,
    })
    .await;
    let (status, endpoint) = status_and_json(
        booking
            .quoting
            .app
            .request(Method::POST, "/v1/webhooks")
            .auth(booking.credential())
            .json(&json!({"url": receiver.url("/hooks"), "events": ["job.booked"]}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{endpoint}");
    let secret = endpoint["signing_secret"].as_str().unwrap().to_owned();

    let quote = booking.quote(journey(Some("car"))).await;
    let (status, job) = booking.book(&key(), &booking_body(&quote)).await;
    assert_eq!(status, 201, "{job}");
    let received = receiver
        .wait_for("/hooks", 1, std::time::Duration::from_secs(10))
        .await;
    let delivery = &received[0];
    assert!(delivery.verifies_with(&secret), "the signature verifies");
    assert_eq!(delivery.event, "job.booked");
    let body = delivery.json();
    assert_eq!(body["type"], "job.booked");
    assert_eq!(body["environment"], "test");
    let data = &body["data"];
    let mut keys: Vec<&str> = data
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "currency",
            "environment",
            "jobId",
            "market",
            "merchant",
            "occurredAt",
            "priceAmountMinor",
            "reference",
            "scheduledFor",
            "taxAmountMinor",
        ]
    );
    assert_eq!(data["jobId"], job["id"]);
    assert_eq!(data["reference"], job["reference"]);
    assert_eq!(data["market"], "demo");
    assert_eq!(data["currency"], "USD");
    assert_eq!(data["priceAmountMinor"], job["price_amount_minor"]);
    assert_eq!(data["scheduledFor"], Value::Null);
    assert_eq!(data["environment"], 0, "test is 0");
    booking.quoting.app.stop().await;
}

/// No request carries a card number, whichever free-text field holds it and however it is
/// written: notes, item names, contact names and cancellation reasons are refused with
/// `payment.raw_card_number` (and the refusal never repeats the number), so is a query string;
/// UUIDs, references and phone numbers in the same fields pass.
#[tokio::test]
async fn card_numbers_in_free_text_are_refused_and_lookalikes_pass() {
    let booking = Booking::start().await;
    let quote = booking.quote(journey(None)).await;
    let numbers = [
        "4111111111111111",
        "4111 1111 1111 1111",
        "4111-1111-1111-1111",
        "4111.1111.1111.1111",
    ];
    for number in numbers {
        let placements = [
            (
                "/dropoff/notes",
                json!(format!("pay with {number}, thanks")),
            ),
            ("/pickup/contact_name", json!(number)),
            (
                "/items",
                json!([{"name": format!("Gift card {number}"), "unit_price_minor": 100, "quantity": 1}]),
            ),
        ];
        for (pointer, value) in placements {
            let mut body = booking_body(&quote);
            let (parent, field) = pointer.rsplit_once('/').unwrap();
            let target = if parent.is_empty() {
                &mut body
            } else {
                body.pointer_mut(parent).unwrap()
            };
            target[field] = value;
            let (status, answer) = booking.book(&key(), &body).await;
            assert_eq!(status, 422, "{pointer} {number}: {answer}");
            assert_eq!(answer["code"], "payment.raw_card_number", "{answer}");
            assert!(!answer.to_string().contains("1111"), "{answer}");
        }
    }
    let (status, answer) = booking.get("/v1/places?q=4111.1111.1111.1111").await;
    assert_eq!(
        (status, &answer["code"]),
        (422, &json!("payment.raw_card_number"))
    );

    // Nothing was booked, so the quote books; lookalikes pass.
    let mut body = booking_body(&quote);
    body["dropoff"]["notes"] = json!(
        "order 3f2b1c4e-8a9d-4e7f-b6a5-0c1d2e3f4a5b (see deadbeef-abcd-ef01-2345-678901234569), \
         ref CR-7KD2-9QX4, call +44 7700 900123 or +1-202-555-0187"
    );
    body["items"] =
        json!([{"name": "Parcel ORD-2026-000123", "unit_price_minor": 100, "quantity": 1}]);
    let (status, job) = booking.book(&key(), &body).await;
    assert_eq!(status, 201, "{job}");

    // A cancellation reason is free text too; the refused cancellation leaves the job as it was.
    let id = job["id"].as_str().unwrap();
    let response = booking
        .quoting
        .app
        .request(Method::POST, &format!("/v1/jobs/{id}/cancel"))
        .auth(booking.credential())
        .json(&json!({"reason": "refund it to 4111_1111_1111_1111"}))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 422, "payment.raw_card_number").await;
    let (_, detail) = booking.get(&format!("/v1/jobs/{id}")).await;
    assert_eq!(detail["status"], "searching");
}

/// Coordinates are never card numbers: a pickup at latitude 20.01892160703919 and longitude
/// 50.00431729184651 (each sixteen digits that pass the Luhn check once the point is read as a
/// separator) is quoted and booked, and the same figures written in a note pass too.
#[tokio::test]
async fn unrounded_coordinates_are_quoted_and_booked() {
    let booking = Booking::start().await;
    let (latitude, longitude) = (20.01892160703919_f64, 50.00431729184651_f64);
    let mut body = journey(None);
    body["pickup"] = json!({"latitude": latitude, "longitude": longitude});
    let quote = booking.quote(body).await;
    let mut job = booking_body(&quote);
    job["pickup"]["latitude"] = json!(latitude);
    job["pickup"]["longitude"] = json!(longitude);
    job["pickup"]["notes"] = json!(format!("meet at {latitude}, {longitude}"));
    let (status, booked) = booking.book(&key(), &job).await;
    assert_eq!(status, 201, "{booked}");
    let (_, detail) = booking
        .get(&format!("/v1/jobs/{}", booked["id"].as_str().unwrap()))
        .await;
    assert_eq!(detail["pickup"]["latitude"], json!(latitude), "{detail}");
    booking.quoting.app.stop().await;
}

/// The jobs list goes `COURIER_JOBS_LIST_DEPTH` matches deep: no page lists past them, a page
/// that starts past them is refused with `request.page_too_deep`, and `total` stops one past
/// the depth (meaning "more than that").
#[tokio::test]
async fn the_jobs_list_goes_only_so_deep() {
    let booking =
        Booking::start_with(|name| (name == "COURIER_JOBS_LIST_DEPTH").then(|| "3".to_owned()))
            .await;
    for _ in 0..5 {
        let quote = booking.quote(journey(None)).await;
        let (status, job) = booking.book(&key(), &booking_body(&quote)).await;
        assert_eq!(status, 201, "{job}");
    }
    let (status, page) = booking.get("/v1/jobs?size=2").await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        (page["items"].as_array().unwrap().len(), &page["total"]),
        (2, &json!(4))
    );
    // The second page stops at the depth: one job, not two.
    let (_, page) = booking.get("/v1/jobs?size=2&page=2").await;
    assert_eq!(page["items"].as_array().unwrap().len(), 1, "{page}");
    let (status, refusal) = booking.get("/v1/jobs?size=2&page=3").await;
    assert_eq!(
        (status, &refusal["code"]),
        (422, &json!("request.page_too_deep"))
    );
    // Narrowed below the depth, the total is exact again.
    let (_, page) = booking.get("/v1/jobs?status=delivered").await;
    assert_eq!(page["total"], 0);
}
