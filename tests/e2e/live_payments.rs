//! Live money through the Stripe adapter (`plugins/stripe-payments`), against a local HTTPS
//! stand-in that follows Stripe's documented behaviour (`support::stripe`): attaching a card
//! from the card form, booking, every documented decline, an unreachable provider, a lost
//! answer, a crash between the phases, and capture, void and refund; and that no database
//! connection is held while the provider answers.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use sha2::Digest;
use uuid::Uuid;

use crate::quotes::journey;
use crate::support::process::{free_port, spawn_service, wait_until_ready};
use crate::support::stripe::{Fault, Latency, StripeStandIn};
use crate::support::{
    ADMIN_TOKEN, Authed, Credential, MerchantCredentials, TestApp, assert_refusal, eventually,
    fresh_database_url, status_and_json,
};

const INTENTS: &str = "/v1/payment_intents";
const WAIT: Duration = Duration::from_secs(20);

/// A service whose live environment takes money through the Stripe adapter and the stand-in,
/// and a merchant with its live credential.
struct Live {
    stripe: StripeStandIn,
    app: TestApp,
    merchant_id: Uuid,
    live: Credential,
}

impl Live {
    async fn start(extra: &[(&str, &str)]) -> Self {
        let stripe = StripeStandIn::start().await;
        Self::start_with(stripe, extra).await
    }

    async fn start_with(stripe: StripeStandIn, extra: &[(&str, &str)]) -> Self {
        let mut env: Vec<(String, String)> = stripe.service_env();
        env.push(("COURIER_CHARGE_RETRY_BASE_MS".into(), "200".into()));
        for (name, value) in extra {
            env.retain(|(n, _)| n != name);
            env.push(((*name).into(), (*value).into()));
        }
        let app = TestApp::spawn_with(move |name| {
            env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
        })
        .await;
        let merchant = app.create_merchant("Live Goods Ltd").await;
        let live = Self {
            stripe,
            merchant_id: merchant.merchant_id,
            live: merchant.live(),
            app,
        };
        // The demo city's network loads in the background.
        eventually(
            "quotes to become available",
            Duration::from_secs(10),
            Duration::from_millis(25),
            || async {
                let (status, _) = live
                    .call(Method::POST, "/v1/quotes", Some(journey(Some("car"))))
                    .await;
                (status != 503).then_some(())
            },
        )
        .await;
        live
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self.app.request(method, path).auth(&self.live);
        if let Some(body) = body {
            request = request.json(&body);
        }
        status_and_json(request.send().await.unwrap()).await
    }

    async fn admin(&self, method: Method, path: &str, body: Value) -> (u16, Value) {
        status_and_json(
            self.app
                .admin(method, path)
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// Opens the card form, completes it in the "browser" with a Stripe test card, and
    /// attaches the card it saved; answers the payment method.
    async fn attach(&self, test_card: &str) -> Value {
        let (status, form) = self
            .call(Method::POST, "/v1/payment-methods/setup", None)
            .await;
        assert_eq!(status, 200, "{form}");
        let client_secret = form["client_secret"].as_str().unwrap();
        assert!(client_secret.starts_with("seti_"), "{form}");
        let pm = self.stripe.complete_card_form(client_secret, test_card);
        let (status, card) = self
            .call(
                Method::POST,
                "/v1/payment-methods",
                Some(json!({"provider_ref": pm, "make_default": true})),
            )
            .await;
        assert_eq!(status, 201, "{card}");
        card
    }

    /// A booking body for a fresh live quote.
    async fn quoted(&self) -> Value {
        let (status, quote) = self
            .call(Method::POST, "/v1/quotes", Some(journey(Some("car"))))
            .await;
        assert_eq!(status, 201, "{quote}");
        let route = journey(None);
        let stop = |point: &Value, name: &str| {
            json!({
                "latitude": point["latitude"],
                "longitude": point["longitude"],
                "address": format!("{name}'s door, Demo City"),
                "contact_name": name,
                "contact_phone": "+966 11 463 5555",
            })
        };
        json!({
            "quote_id": quote["id"],
            "pickup": stop(&route["pickup"], "Pat Pickup"),
            "dropoff": stop(&route["dropoff"], "Dana Dropoff"),
        })
    }

    async fn book(&self, key: &str, body: &Value) -> (u16, Value) {
        book_at(&self.app.client, &self.app.base_url, &self.live, key, body).await
    }

    /// Books `body` with `key` in a task of its own (to do something while it waits).
    fn book_in_background(&self, key: &str, body: &Value) -> tokio::task::JoinHandle<(u16, Value)> {
        let (client, base, credential, key, body) = (
            self.app.client.clone(),
            self.app.base_url.clone(),
            self.live.clone(),
            key.to_owned(),
            body.clone(),
        );
        tokio::spawn(async move { book_at(&client, &base, &credential, &key, &body).await })
    }

    /// Books a fresh quote while the provider meets `fault` once: the booking goes ahead with
    /// its charge `pending`. Answers the job and its charge.
    async fn book_through(&self, fault: Fault) -> (Value, Value) {
        self.stripe.inject(INTENTS, fault, 1);
        let body = self.quoted().await;
        let (status, job) = self.book(&key(), &body).await;
        assert_eq!(status, 201, "{fault:?}: {job}");
        let charge = self.charge_of(&job).await;
        assert_eq!(charge["status"], "pending", "{fault:?}: {charge}");
        (job, charge)
    }

    async fn charge_of(&self, job: &Value) -> Value {
        let (status, charges) = self.call(Method::GET, "/v1/charges", None).await;
        assert_eq!(status, 200, "{charges}");
        charges
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["job_id"] == job["id"])
            .cloned()
            .unwrap_or(Value::Null)
    }

    async fn charge_becomes(&self, job: &Value, status: &str) -> Value {
        let what = format!("the charge of job {} to become {status}", job["id"]);
        eventually(&what, WAIT, Duration::from_millis(50), || async {
            let charge = self.charge_of(job).await;
            (charge["status"] == status).then_some(charge)
        })
        .await
    }

    async fn db_scalar(&self, sql: &str) -> i64 {
        let pool = self.app.pool().await;
        let n = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
        pool.close().await;
        n
    }
}

async fn book_at(
    client: &reqwest::Client,
    base_url: &str,
    credential: &Credential,
    key: &str,
    body: &Value,
) -> (u16, Value) {
    let response = client
        .post(format!("{base_url}/v1/jobs"))
        .auth(credential)
        .header("Idempotency-Key", key)
        .json(body)
        .send()
        .await
        .unwrap();
    status_and_json(response).await
}

fn key() -> String {
    format!("live-{}", Uuid::new_v4())
}

#[tokio::test]
async fn a_live_merchant_attaches_books_and_is_captured_voided_and_refunded() {
    let live = Live::start(&[]).await;
    let card = live.attach("pm_card_visa").await;
    assert_eq!(
        (&card["brand"], &card["last_four"], &card["expiry_year"]),
        (&json!("visa"), &json!("4242"), &json!(2034))
    );
    // Every card form of the merchant saves to its one customer, found again by search once
    // the provider shows it there.
    let (_, first) = live
        .call(Method::POST, "/v1/payment-methods/setup", None)
        .await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (_, later) = live
        .call(Method::POST, "/v1/payment-methods/setup", None)
        .await;
    assert_eq!(first["customer_id"], later["customer_id"]);
    assert_ne!(first["client_secret"], later["client_secret"]);

    // Booked: the money is held at the provider, exactly what was quoted.
    let body = live.quoted().await;
    let (status, job) = live.book(&key(), &body).await;
    assert_eq!(status, 201, "{job}");
    let charge = live.charge_of(&job).await;
    assert_eq!(charge["status"], "authorised", "{charge}");
    let holds = live.stripe.holds();
    assert_eq!(holds.len(), 1);
    assert_eq!(json!(holds[0].amount), job["price_amount_minor"]);
    assert_eq!(
        holds[0].currency,
        job["currency"].as_str().unwrap().to_lowercase()
    );

    // Delivered (assigned and delivered by hand): the hold is captured.
    let (status, courier) = live
        .admin(
            Method::POST,
            "/couriers",
            json!({"name": "Rui", "phone": "+966 50 123 4567", "vehicle": "car", "market": "demo"}),
        )
        .await;
    assert_eq!(status, 201, "{courier}");
    let id = job["id"].as_str().unwrap();
    let (status, body) = live
        .admin(
            Method::POST,
            &format!("/jobs/{id}/reassign"),
            json!({"courier_id": courier["id"]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = live
        .admin(
            Method::POST,
            &format!("/jobs/{id}/status"),
            json!({"status": "delivered", "reason": "confirmed by phone"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let captured = live.charge_becomes(&job, "captured").await;
    let intent = live.stripe.intent(&holds[0].id).unwrap();
    assert_eq!(
        (intent.status.as_str(), intent.amount_received),
        ("succeeded", intent.amount)
    );

    // An operator refunds part, then the rest; more than is left is refused.
    let charge_id = captured["id"].as_str().unwrap();
    let refund_path = format!("/charges/{charge_id}/refund");
    let part = intent.amount / 4;
    let (status, refunded) = live
        .admin(Method::POST, &refund_path, json!({"amount_minor": part}))
        .await;
    assert_eq!(
        (status, &refunded["status"]),
        (200, &json!("refunded")),
        "{refunded}"
    );
    let response = live
        .app
        .admin(Method::POST, &refund_path)
        .json(&json!({"amount_minor": intent.amount}))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 422, "charge.refund_exceeds_captured").await;
    let (status, refunded) = live
        .admin(
            Method::POST,
            &refund_path,
            json!({"amount_minor": intent.amount - part}),
        )
        .await;
    assert_eq!(status, 200, "{refunded}");
    assert_eq!(refunded["refunded_amount_minor"], json!(intent.amount));
    let intent = live.stripe.intent(&holds[0].id).unwrap();
    assert_eq!(intent.amount_refunded, intent.amount);

    // Cancelled before a courier: the hold is released.
    let body = live.quoted().await;
    let (status, cancelled) = live.book(&key(), &body).await;
    assert_eq!(status, 201, "{cancelled}");
    let (status, body) = live
        .call(
            Method::POST,
            &format!("/v1/jobs/{}/cancel", cancelled["id"].as_str().unwrap()),
            Some(json!({"reason": "customer changed their mind"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    live.charge_becomes(&cancelled, "voided").await;
    assert!(live.stripe.holds().is_empty(), "no money is held any more");
    live.app.stop().await;
}

#[tokio::test]
async fn every_documented_decline_refuses_the_booking_and_only_a_finished_card_dies() {
    let live = Live::start(&[]).await;
    // Stripe's declining test cards cannot be saved: attaching one is declined.
    let (status, form) = live
        .call(Method::POST, "/v1/payment-methods/setup", None)
        .await;
    assert_eq!(status, 200, "{form}");
    let (status, refusal) = live
        .call(
            Method::POST,
            "/v1/payment-methods",
            Some(json!({"provider_ref": "pm_card_visa_chargeDeclinedInsufficientFunds"})),
        )
        .await;
    assert_eq!(
        (status, refusal["code"].as_str()),
        (422, Some("payment.card_declined")),
        "{refusal}"
    );

    // The card that saves and then declines: generic, and the card stays.
    live.attach("pm_card_chargeCustomerFail").await;
    let body = live.quoted().await;
    let declined_key = key();
    let (status, refusal) = live.book(&declined_key, &body).await;
    assert_eq!(
        (status, refusal["code"].as_str()),
        (422, Some("payment.card_declined")),
        "{refusal}"
    );
    assert!(
        refusal["message"]
            .as_str()
            .unwrap()
            .contains("generic_decline")
    );
    // Stored under the key; the quote is free again for a new key.
    let (status, replayed) = live.book(&declined_key, &body).await;
    assert_eq!((status, &replayed), (422, &refusal));

    // Cards that worked when saved, declined later by their issuer.
    let cases = [
        ("card_declined", "insufficient_funds", None),
        ("incorrect_cvc", "incorrect_cvc", None),
        ("processing_error", "processing_error", None),
        ("authentication_required", "authentication_required", None),
        ("expired_card", "expired_card", Some("expired")),
        ("card_declined", "lost_card", Some("lost")),
        ("card_declined", "stolen_card", Some("lost")),
        ("card_declined", "restricted_card", Some("refused_for_good")),
    ];
    for (code, decline_code, dies) in cases {
        let card = live.attach("pm_card_visa").await;
        live.stripe
            .inject(INTENTS, Fault::Decline(code, decline_code), 1);
        let (status, refusal) = live.book(&key(), &body).await;
        assert_eq!(
            (status, refusal["code"].as_str()),
            (422, Some("payment.card_declined")),
            "{decline_code}: {refusal}"
        );
        assert!(
            refusal["message"].as_str().unwrap().contains(decline_code),
            "{refusal}"
        );
        let (_, cards) = live.call(Method::GET, "/v1/payment-methods", None).await;
        let now = cards
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == card["id"])
            .unwrap()
            .clone();
        match dies {
            None => assert_eq!(now["status"], "active", "{decline_code}: {now}"),
            Some(reason) => {
                assert_eq!(now["dead_reason"], reason, "{decline_code}: {now}");
                assert_ne!(now["status"], "active");
            }
        }
    }
    let dead_events = live
        .db_scalar(&format!(
            "SELECT count(*) FROM events WHERE name = 'payment_method.dead' AND merchant_id = '{}'",
            live.merchant_id
        ))
        .await;
    assert_eq!(dead_events, 4, "one payment_method.dead per finished card");
    // Nothing was booked, nothing is held, and the quote still books.
    assert!(live.stripe.holds().is_empty());
    let (_, jobs) = live.call(Method::GET, "/v1/jobs", None).await;
    assert_eq!(jobs["total"], 0);
    live.attach("pm_card_mastercard").await;
    let (status, job) = live.book(&key(), &body).await;
    assert_eq!(status, 201, "{job}");
    live.app.stop().await;
}

#[tokio::test]
async fn unreachable_then_authorised_and_a_lost_answer_is_one_job_with_one_hold() {
    let live = Live::start(&[]).await;
    live.attach("pm_card_visa").await;

    // The provider is down: the job is booked with its charge pending, and the retry worker
    // places the hold once the provider is back.
    let (job, pending) = live.book_through(Fault::Status(503)).await;
    assert_eq!(
        pending["last_error"],
        "payment.provider_unreachable: no usable answer from the provider to the hold; trying again"
    );
    live.charge_becomes(&job, "authorised").await;

    // The provider holds the money and the answer is lost on the way back. The merchant,
    // who heard nothing either, retries with the same key: one job, one hold.
    live.stripe.inject(INTENTS, Fault::ActThenDrop, 1);
    let body = live.quoted().await;
    let lost_key = key();
    let (status, first) = live.book(&lost_key, &body).await;
    assert_eq!(status, 201, "{first}");
    let (status, again) = live.book(&lost_key, &body).await;
    assert_eq!((status, &again["id"]), (201, &first["id"]));
    live.charge_becomes(&first, "authorised").await;
    let jobs = live
        .db_scalar(&format!(
            "SELECT count(*) FROM jobs WHERE quote_id = '{}'",
            body["quote_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(jobs, 1);
    let holds = live.stripe.holds();
    assert_eq!(holds.len(), 2, "one hold per job: {holds:?}");
    let keys: HashSet<_> = holds.iter().map(|h| h.idempotency_key.clone()).collect();
    assert_eq!(keys.len(), 2, "every hold has its own booking's key");
    live.app.stop().await;
}

#[tokio::test]
async fn the_same_key_during_the_provider_call_is_refused_as_in_progress() {
    let live = Live::start(&[]).await;
    live.attach("pm_card_visa").await;
    live.stripe
        .set_latency(Latency::Fixed(Duration::from_millis(1500)));
    let body = live.quoted().await;
    let same = key();
    let first = live.book_in_background(&same, &body);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (status, twin) = live.book(&same, &body).await;
    assert_eq!(
        (status, twin["code"].as_str()),
        (409, Some("idempotency.in_progress")),
        "{twin}"
    );
    let (status, job) = first.await.unwrap();
    assert_eq!(status, 201, "{job}");
    let (status, replayed) = live.book(&same, &body).await;
    assert_eq!((status, &replayed), (201, &job));
    assert_eq!(live.stripe.holds().len(), 1);
    live.app.stop().await;
}

#[tokio::test]
async fn no_connection_is_held_while_the_provider_answers() {
    const BOOKINGS: usize = 50;
    let live = Live::start(&[
        ("COURIER_DB_POOL_SIZE", "4"),
        // Room for 64 provider calls at once (half of the instances).
        ("COURIER_PLUGIN_INSTANCES", "128"),
    ])
    .await;
    live.attach("pm_card_visa").await;
    let mut bodies = Vec::new();
    for _ in 0..BOOKINGS {
        bodies.push(live.quoted().await);
    }
    live.stripe.set_latency(Latency::Spread {
        median: Duration::from_secs(2),
        p99: Duration::from_millis(2400),
    });
    let started = Instant::now();
    let bookings: Vec<_> = bodies
        .iter()
        .map(|body| live.book_in_background(&key(), body))
        .collect();
    // While every booking waits for the provider, quotes and reads answer at once: with a
    // connection held per booking, the four would be taken for two seconds at a time.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut slowest = Duration::ZERO;
    while started.elapsed() < Duration::from_millis(1700) {
        let asked = Instant::now();
        let (quoted, quote) = live
            .call(Method::POST, "/v1/quotes", Some(journey(Some("car"))))
            .await;
        let (listed, jobs) = live.call(Method::GET, "/v1/jobs", None).await;
        assert_eq!((quoted, listed), (201, 200), "{quote} {jobs}");
        slowest = slowest.max(asked.elapsed());
    }
    assert!(
        slowest < Duration::from_secs(1),
        "a quote and a read took {slowest:?} while bookings waited for the provider"
    );
    for booking in bookings {
        let (status, job) = booking.await.unwrap();
        assert_eq!(status, 201, "{job}");
    }
    assert_eq!(live.stripe.holds().len(), BOOKINGS);
    let waits = live.stripe.pauses();
    assert_eq!(
        waits
            .iter()
            .filter(|w| **w >= Duration::from_secs(1))
            .count(),
        BOOKINGS,
        "each booking waited on the provider: {waits:?}"
    );
    live.app.stop().await;
}

#[tokio::test]
async fn bad_provider_answers_move_no_money() {
    let live = Live::start(&[
        ("COURIER_CHARGE_RETRY_ATTEMPTS", "3"),
        ("COURIER_PAYMENT_DEADLINE_MS", "1000"),
    ])
    .await;
    live.attach("pm_card_visa").await;

    // A malformed answer, an oversize one and none in time are no answer: booked pending,
    // then held (once: the late one and the retry are one PaymentIntent) when the provider
    // answers properly.
    for fault in [
        Fault::Malformed,
        Fault::Oversize,
        Fault::Hang(Duration::from_millis(1500)),
    ] {
        let (job, _) = live.book_through(fault).await;
        live.charge_becomes(&job, "authorised").await;
    }
    let held = live.stripe.holds().len();
    assert_eq!(held, 3);

    // A hold for another amount or currency is released and never taken as approved.
    for fault in [Fault::WrongAmount, Fault::WrongCurrency] {
        let (job, charge) = live.book_through(fault).await;
        // The adapter's account ("not the hold asked for") is for the log, not the merchant.
        assert_eq!(
            charge["last_error"],
            "payment.provider_unreachable: no usable answer from the provider to the hold; trying again",
            "{charge}"
        );
        // Every retry finds the same wrong hold and releases it; then the charge fails.
        live.charge_becomes(&job, "failed").await;
    }
    assert_eq!(live.stripe.holds().len(), held, "no wrong hold is left");

    // A malformed answer to a card lookup is a clear refusal; nothing is attached.
    live.stripe
        .inject("/v1/payment_methods", Fault::Malformed, 1);
    let (status, form) = live
        .call(Method::POST, "/v1/payment-methods/setup", None)
        .await;
    assert_eq!(status, 200, "{form}");
    let pm = live
        .stripe
        .complete_card_form(form["client_secret"].as_str().unwrap(), "pm_card_visa");
    let response = live
        .app
        .request(Method::POST, "/v1/payment-methods")
        .auth(&live.live)
        .json(&json!({"provider_ref": pm}))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 503, "payment.provider_unreachable").await;
    live.app.stop().await;
}

#[tokio::test]
async fn a_full_pool_of_provider_calls_turns_bookings_away_cleanly() {
    let live = Live::start(&[("COURIER_PAYMENT_CALLS", "1")]).await;
    live.attach("pm_card_visa").await;
    live.stripe
        .set_latency(Latency::Fixed(Duration::from_millis(1500)));
    let (first_body, second_body) = (live.quoted().await, live.quoted().await);
    let first = live.book_in_background(&key(), &first_body);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let busy_key = key();
    let (status, busy) = live.book(&busy_key, &second_body).await;
    assert_eq!(
        (status, busy["code"].as_str()),
        (503, Some("payment.provider_busy")),
        "{busy}"
    );
    assert_eq!(first.await.unwrap().0, 201);
    // Nothing was written for the refused one: the same key books it now.
    let (status, job) = live.book(&busy_key, &second_body).await;
    assert_eq!(status, 201, "{job}");
    live.app.stop().await;
}

#[tokio::test]
async fn a_booking_that_cannot_be_completed_is_released_and_refused() {
    let live = Live::start(&[("COURIER_PAYMENT_DEADLINE_MS", "1000")]).await;
    let card = live.attach("pm_card_visa").await;
    let body = live.quoted().await;
    // An attempt left by another version of the service whose job this one cannot read,
    // interrupted after its provider call (the provider holds the money). Its request was
    // `{"quote_id": …}`: sent again, it gets the key's answer.
    let stranded = key();
    let request = json!({"quote_id": body["quote_id"]});
    let request_hash = sha2::Sha256::digest(request.to_string().as_bytes()).to_vec();
    let pool = live.app.pool().await;
    sqlx::query(
        "INSERT INTO idempotency_keys (merchant_id, environment, key, request_hash) \
         VALUES ($1, 'live', $2, $3)",
    )
    .bind(live.merchant_id)
    .bind(&stranded)
    .bind(&request_hash)
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query("UPDATE quotes SET used_at = now() WHERE id = $1::uuid")
        .bind(body["quote_id"].as_str().unwrap())
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO booking_attempts (id, merchant_id, environment, idempotency_key, quote_id, \
         payment_method_id, hold_key, job, created_at, leased_until) \
         VALUES ($1, $2, 'live', $3, $4::uuid, $5::uuid, 'booking_stranded', \
         '{\"price_amount_minor\": 1500, \"currency\": \"SAR\", \"format\": 99}', now(), now())",
    )
    .bind(Uuid::new_v4())
    .bind(live.merchant_id)
    .bind(&stranded)
    .bind(body["quote_id"].as_str().unwrap())
    .bind(card["id"].as_str().unwrap())
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
    let refusal = eventually(
        "the stranded attempt to be finished",
        WAIT,
        Duration::from_millis(100),
        || async {
            let (status, answer) = live.book(&stranded, &request).await;
            (answer["code"] != "idempotency.in_progress").then_some((status, answer))
        },
    )
    .await;
    assert_eq!(
        (refusal.0, refusal.1["code"].as_str()),
        (409, Some("booking.abandoned")),
        "{}",
        refusal.1
    );
    // The provider made the hold (asked with the attempt's key) and released it.
    let made: Vec<_> = live
        .stripe
        .intents()
        .into_iter()
        .filter(|i| i.idempotency_key.as_deref() == Some("booking_stranded"))
        .collect();
    assert_eq!(made.len(), 1);
    assert_eq!(made[0].status, "canceled");
    // The quote is free again.
    let (status, job) = live.book(&key(), &body).await;
    assert_eq!(status, 201, "{job}");
    live.app.stop().await;
}

/// `kill -9` while 20 bookings wait for the provider, then a restart: every booking ends
/// booked with exactly one hold, or refused with none; the stand-in's holds and the
/// database agree.
#[tokio::test]
async fn a_crash_between_the_phases_leaves_no_orphaned_or_double_hold() {
    const BOOKINGS: usize = 20;
    let stripe = StripeStandIn::start().await;
    let database_url = fresh_database_url().await;
    let data_dir = std::env::temp_dir().join(format!("courier-crash-{}", Uuid::new_v4()));
    let port = free_port();
    let base_url = format!("http://127.0.0.1:{port}");
    let mut env = stripe.service_env();
    env.extend([
        ("DATABASE_URL".to_owned(), database_url.clone()),
        (
            "COURIER_DATA_DIR".to_owned(),
            data_dir.to_string_lossy().into_owned(),
        ),
        ("COURIER_LISTEN".to_owned(), format!("127.0.0.1:{port}")),
        ("COURIER_SECRET_KEY".to_owned(), "5e".repeat(32)),
        ("COURIER_ADMIN_TOKEN".to_owned(), ADMIN_TOKEN.to_owned()),
        ("COURIER_PAYMENT_DEADLINE_MS".to_owned(), "5000".to_owned()),
        ("COURIER_CHARGE_RETRY_BASE_MS".to_owned(), "200".to_owned()),
    ]);
    let client = reqwest::Client::new();
    let mut service = spawn_service(&env);
    wait_until_ready(&client, &base_url).await;
    // A merchant, a card and 20 quotes, through the running service.
    let pool = sqlx::PgPool::connect(&database_url).await.unwrap();
    let authenticator = courier_core::auth::Authenticator::new(
        pool.clone(),
        &courier_core::infra::secrets::SecretKey::from_hex(&"5e".repeat(32)).unwrap(),
    );
    let merchant = courier_core::merchants::create(&pool, &authenticator, "Crash Test Ltd")
        .await
        .unwrap();
    let live = merchant.live();
    let call = |method: Method, path: &str, body: Option<Value>| {
        let mut request = client
            .request(method, format!("{base_url}{path}"))
            .auth(&live);
        if let Some(body) = body {
            request = request.json(&body);
        }
        async move { status_and_json(request.send().await.unwrap()).await }
    };
    let (status, form) = call(Method::POST, "/v1/payment-methods/setup", None).await;
    assert_eq!(status, 200, "{form}");
    let pm = stripe.complete_card_form(form["client_secret"].as_str().unwrap(), "pm_card_visa");
    let (status, card) = call(
        Method::POST,
        "/v1/payment-methods",
        Some(json!({"provider_ref": pm})),
    )
    .await;
    assert_eq!(status, 201, "{card}");
    let mut bodies = Vec::new();
    for _ in 0..BOOKINGS {
        // The demo city's network loads in the background.
        let (status, quote) = eventually(
            "quotes to become available",
            Duration::from_secs(10),
            Duration::from_millis(25),
            || async {
                let answer = call(Method::POST, "/v1/quotes", Some(journey(Some("car")))).await;
                (answer.0 != 503).then_some(answer)
            },
        )
        .await;
        assert_eq!(status, 201, "{quote}");
        let route = journey(None);
        let stop = |point: &Value, name: &str| {
            json!({"latitude": point["latitude"], "longitude": point["longitude"],
                   "address": format!("{name}'s door"), "contact_name": name,
                   "contact_phone": "+966 11 463 5555"})
        };
        bodies.push(json!({"quote_id": quote["id"],
                           "pickup": stop(&route["pickup"], "Pat"),
                           "dropoff": stop(&route["dropoff"], "Dana")}));
    }

    // 20 bookings inside a 3 s provider call, then the process is killed.
    stripe.set_latency(Latency::Fixed(Duration::from_secs(3)));
    let keys: Vec<String> = (0..BOOKINGS).map(|_| key()).collect();
    let in_flight: Vec<_> = keys
        .iter()
        .zip(&bodies)
        .map(|(key, body)| {
            let (client, base, live, key, body) = (
                client.clone(),
                base_url.clone(),
                live.clone(),
                key.clone(),
                body.clone(),
            );
            tokio::spawn(async move {
                let response = client
                    .post(format!("{base}/v1/jobs"))
                    .auth(&live)
                    .header("Idempotency-Key", key)
                    .json(&body)
                    .send()
                    .await;
                response.map(|r| r.status().as_u16()).ok()
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    service.kill().unwrap();
    service.wait().unwrap();
    for booking in in_flight {
        // The connection died with the process: the merchant heard nothing.
        assert_eq!(booking.await.unwrap(), None);
    }
    stripe.set_latency(Latency::None);

    let mut service = spawn_service(&env);
    wait_until_ready(&client, &base_url).await;
    // The merchant retries every booking with its key until it has an answer.
    // One deadline for them all.
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut answers = Vec::new();
    for (key, body) in keys.iter().zip(&bodies) {
        let answer = eventually(
            "the bookings to be recovered",
            deadline.saturating_duration_since(Instant::now()),
            Duration::from_millis(200),
            || async {
                let (status, answer) = book_at(&client, &base_url, &live, key, body).await;
                if status != 409 {
                    return Some((status, answer));
                }
                assert_eq!(answer["code"], "idempotency.in_progress", "{answer}");
                None
            },
        )
        .await;
        answers.push(answer);
    }
    let holds = stripe.holds();
    let mut held_refs: Vec<String> = holds.iter().map(|h| h.id.clone()).collect();
    held_refs.sort();
    let mut authorised: Vec<String> = sqlx::query_scalar(
        "SELECT authorisation_ref FROM charges WHERE status = 'authorised' AND merchant_id = $1",
    )
    .bind(merchant.merchant_id)
    .fetch_all(&pool)
    .await
    .unwrap();
    authorised.sort();
    assert_eq!(
        held_refs, authorised,
        "every hold belongs to a booked job and no more"
    );
    let booked = answers.iter().filter(|(status, _)| *status == 201).count();
    for (status, answer) in &answers {
        assert!(
            *status == 201 || (*status == 422 && answer["code"] == "payment.card_declined"),
            "{status} {answer}"
        );
    }
    assert_eq!(
        booked, BOOKINGS,
        "a working card: every booking ends booked"
    );
    let per_key: HashSet<_> = holds.iter().map(|h| h.idempotency_key.clone()).collect();
    assert_eq!(per_key.len(), holds.len(), "no booking holds twice");
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM booking_attempts")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(left, 0);
    service.kill().unwrap();
    service.wait().unwrap();
    pool.close().await;
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// The stand-in keeps Stripe's documented idempotency rules and error bodies, which the
/// tests of lost answers and retries above rely on.
#[tokio::test]
async fn the_stand_in_keeps_stripes_idempotency_rules() {
    use crate::support::stripe::SECRET_KEY;
    let stripe = StripeStandIn::start().await;
    let ca = reqwest::Certificate::from_pem(&std::fs::read(&stripe.ca_path).unwrap()).unwrap();
    let client = reqwest::Client::builder()
        .add_root_certificate(ca)
        .build()
        .unwrap();
    let create = |key: &str, merchant: &str| {
        client
            .post(format!("{}/v1/customers", stripe.api_base()))
            .bearer_auth(SECRET_KEY)
            .header("Idempotency-Key", key)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("metadata%5Bcourier_merchant%5D={merchant}"))
            .send()
    };
    let first = create("k-1", "a").await.unwrap();
    assert_eq!(first.status(), 200);
    let first: Value = first.json().await.unwrap();
    // Same key, same parameters: the saved answer, marked as a replay.
    let again = create("k-1", "a").await.unwrap();
    assert_eq!(
        again
            .headers()
            .get("idempotent-replayed")
            .map(|v| v.to_str().unwrap()),
        Some("true")
    );
    assert_eq!(again.json::<Value>().await.unwrap(), first);
    // Same key, other parameters: Stripe's idempotency_error.
    let (status, refused) = status_and_json(create("k-1", "b").await.unwrap()).await;
    assert_eq!(
        (status, refused["error"]["type"].as_str()),
        (400, Some("idempotency_error")),
        "{refused}"
    );
    // No key of the account: 401; an unknown object: 404 resource_missing.
    let anonymous = client
        .get(format!(
            "{}/v1/payment_methods/pm_card_visa",
            stripe.api_base()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    let (status, missing) = status_and_json(
        client
            .get(format!(
                "{}/v1/payment_methods/pm_nothing",
                stripe.api_base()
            ))
            .bearer_auth(SECRET_KEY)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, missing["error"]["code"].as_str()),
        (404, Some("resource_missing")),
        "{missing}"
    );
}
