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
use crate::support::process::{free_port, reconcile_live, spawn_service, wait_until_ready};
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

    /// An operator's refund of `amount_minor` from the charge at `path`, under `key`.
    async fn refund(&self, path: &str, amount_minor: i64, key: &str) -> (u16, Value) {
        status_and_json(
            self.app
                .admin(Method::POST, path)
                .header("Idempotency-Key", key)
                .json(&json!({"amount_minor": amount_minor}))
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
        quoted(&self.app, &self.live).await
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

    /// Leaves a booking of `body`'s quote as an instance that died between its phases
    /// would: the key claimed for the request `{"quote_id": …}` (answered: the test sends it
    /// again for the key's answer), the quote reserved, and an attempt with `job` and
    /// `hold_key`, made `made_secs_ago` seconds ago, whose lease has run out.
    async fn strand(
        &self,
        key: &str,
        body: &Value,
        card: &Value,
        job: &Value,
        hold_key: &str,
        made_secs_ago: i64,
    ) -> Value {
        let request = json!({"quote_id": body["quote_id"]});
        let request_hash = sha2::Sha256::digest(request.to_string().as_bytes()).to_vec();
        let pool = self.app.pool().await;
        sqlx::query(
            "INSERT INTO idempotency_keys (merchant_id, environment, key, request_hash) \
             VALUES ($1, 'live', $2, $3)",
        )
        .bind(self.merchant_id)
        .bind(key)
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
            "INSERT INTO booking_attempts (id, merchant_id, environment, idempotency_key, \
             quote_id, payment_method_id, hold_key, job, created_at, leased_until) \
             VALUES ($1, $2, 'live', $3, $4::uuid, $5::uuid, $6, $7, \
             now() - make_interval(secs => $8), now())",
        )
        .bind(Uuid::new_v4())
        .bind(self.merchant_id)
        .bind(key)
        .bind(body["quote_id"].as_str().unwrap())
        .bind(card["id"].as_str().unwrap())
        .bind(hold_key)
        .bind(job)
        .bind(made_secs_ago as f64)
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;
        request
    }

    /// The job a booking of `body`'s quote prepares in its first phase, as its attempt keeps
    /// it.
    async fn prepared_job(&self, body: &Value) -> Value {
        let pool = self.app.pool().await;
        let quote_id = Uuid::parse_str(body["quote_id"].as_str().unwrap()).unwrap();
        let quote = courier_store::quotes::find(&pool, quote_id)
            .await
            .unwrap()
            .expect("the quote exists");
        pool.close().await;
        let mut job = courier_store::scratch::job_of(
            &quote,
            courier_domain::JobStatus::Searching,
            chrono::Utc::now(),
        );
        job.pickup = body["pickup"].clone();
        job.dropoff = body["dropoff"].clone();
        serde_json::to_value(job).unwrap()
    }

    /// Assigns `job` to a new courier and marks it delivered, as an operator does by hand:
    /// its hold is then captured.
    async fn deliver(&self, job: &Value) {
        deliver(&self.app, job).await
    }

    /// Sends the stranded booking's request until the key has its answer.
    async fn answer_of_stranded(&self, key: &str, request: &Value) -> (u16, Value) {
        eventually(
            "the stranded attempt to be finished",
            WAIT,
            Duration::from_millis(100),
            || async {
                let (status, answer) = self.book(key, request).await;
                (answer["code"] != "idempotency.in_progress").then_some((status, answer))
            },
        )
        .await
    }

    async fn db_scalar(&self, sql: &str) -> i64 {
        let pool = self.app.pool().await;
        let n = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
        pool.close().await;
        n
    }
}

/// A booking body for a fresh quote of the merchant of `credential`.
pub(crate) async fn quoted(app: &TestApp, credential: &Credential) -> Value {
    let (status, quote) = status_and_json(
        app.request(Method::POST, "/v1/quotes")
            .auth(credential)
            .json(&journey(Some("car")))
            .send()
            .await
            .unwrap(),
    )
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

/// Assigns `job` to a new courier and marks it delivered, as an operator does by hand: its
/// hold is then captured.
pub(crate) async fn deliver(app: &TestApp, job: &Value) {
    let admin = |method: Method, path: String, body: Value| async move {
        status_and_json(app.admin(method, &path).json(&body).send().await.unwrap()).await
    };
    let (status, courier) = admin(
        Method::POST,
        "/couriers".into(),
        json!({"name": "Rui", "phone": "+966 50 123 4567", "vehicle": "car", "market": "demo"}),
    )
    .await;
    assert_eq!(status, 201, "{courier}");
    let id = job["id"].as_str().unwrap();
    let (status, body) = admin(
        Method::POST,
        format!("/jobs/{id}/reassign"),
        json!({"courier_id": courier["id"]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = admin(
        Method::POST,
        format!("/jobs/{id}/status"),
        json!({"status": "delivered", "reason": "confirmed by phone"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

pub(crate) async fn book_at(
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
    // Every card form of the merchant saves to its one customer: the one the service keeps
    // for it, handed to the adapter with each new form.
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
    live.deliver(&job).await;
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
    let (status, refunded) = live.refund(&refund_path, part, "part").await;
    assert_eq!(
        (status, &refunded["status"]),
        (200, &json!("refunded")),
        "{refunded}"
    );
    let (status, refused) = live.refund(&refund_path, intent.amount, "too-much").await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (422, Some("charge.refund_exceeds_captured"))
    );
    let (status, refunded) = live
        .refund(&refund_path, intent.amount - part, "the-rest")
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
    let unreadable = json!({"price_amount_minor": 1500, "currency": "SAR", "format": 99});
    let request = live
        .strand(&stranded, &body, &card, &unreadable, "booking_stranded", 0)
        .await;
    let refusal = live.answer_of_stranded(&stranded, &request).await;
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

/// An abandoned booking stays abandoned. Its attempt is overdue (unfinished long after it was
/// made), so the recovery worker abandons it: the hold is made (with the attempt's key) and
/// released, and the provider's answer to the release is lost. The next pass finds the
/// attempt marked for abandoning and finishes the refusal; it never takes the provider's
/// saved answer to the hold for a hold to book on.
#[tokio::test]
async fn an_abandoned_booking_whose_release_answer_was_lost_is_never_booked() {
    let live = Live::start(&[
        ("COURIER_PAYMENT_DEADLINE_MS", "1000"),
        ("COURIER_BOOKING_ABANDON_AFTER_MS", "60000"),
    ])
    .await;
    let card = live.attach("pm_card_visa").await;
    let body = live.quoted().await;
    let job = live.prepared_job(&body).await;
    let hold_key = format!("job_{}_hold", job["id"].as_str().unwrap());
    // The release (`…/cancel`) is made, and its answer lost.
    live.stripe
        .inject("/v1/payment_intents/", Fault::ActThenDrop, 1);
    let stranded = key();
    let request = live
        .strand(&stranded, &body, &card, &job, &hold_key, 3600)
        .await;
    let (status, refusal) = live.answer_of_stranded(&stranded, &request).await;
    assert_eq!(
        (status, refusal["code"].as_str()),
        (409, Some("booking.abandoned")),
        "{refusal}"
    );
    // Once: the hold was made and released, and nothing else.
    let made: Vec<_> = live
        .stripe
        .intents()
        .into_iter()
        .filter(|i| i.idempotency_key.as_deref() == Some(hold_key.as_str()))
        .collect();
    assert_eq!(made.len(), 1);
    assert_eq!(made[0].status, "canceled");
    assert!(live.stripe.holds().is_empty(), "nothing stays held");
    let jobs = live
        .db_scalar(&format!(
            "SELECT count(*) FROM jobs WHERE merchant_id = '{}'",
            live.merchant_id
        ))
        .await;
    let charges = live
        .db_scalar(&format!(
            "SELECT count(*) FROM charges WHERE merchant_id = '{}'",
            live.merchant_id
        ))
        .await;
    assert_eq!((jobs, charges), (0, 0), "nothing was booked");
    assert_eq!(
        live.db_scalar("SELECT count(*) FROM booking_attempts")
            .await,
        0
    );
    // The key keeps its answer.
    let (status, again) = live.book(&stranded, &request).await;
    assert_eq!(
        (status, again["code"].as_str()),
        (409, Some("booking.abandoned"))
    );
    live.app.stop().await;
}

/// A merchant who keys bookings by order id books the same key again once our service has
/// forgotten it (24 hours; the provider keeps its own keys longer): the new booking gets a
/// hold of its own, never the provider's saved answer for the first one.
#[tokio::test]
async fn a_key_used_again_after_it_was_forgotten_gets_a_hold_of_its_own() {
    let live = Live::start(&[]).await;
    live.attach("pm_card_visa").await;
    let order_key = key();
    let (status, first) = live.book(&order_key, &live.quoted().await).await;
    assert_eq!(status, 201, "{first}");
    let pool = live.app.pool().await;
    sqlx::query("DELETE FROM idempotency_keys WHERE key = $1")
        .bind(&order_key)
        .execute(&pool)
        .await
        .unwrap();
    // The same price on the same card: the request the provider saw before, but for
    // another job.
    let (status, second) = live.book(&order_key, &live.quoted().await).await;
    assert_eq!(status, 201, "{second}");
    assert_ne!(first["id"], second["id"]);
    let holds: HashSet<String> = live.stripe.holds().into_iter().map(|h| h.id).collect();
    assert_eq!(holds.len(), 2, "one hold per job");
    let refs: HashSet<String> = sqlx::query_scalar(
        "SELECT authorisation_ref FROM charges WHERE status = 'authorised' AND merchant_id = $1",
    )
    .bind(live.merchant_id)
    .fetch_all(&pool)
    .await
    .unwrap()
    .into_iter()
    .collect();
    assert_eq!(refs, holds, "each job's charge names its own hold");
    pool.close().await;
    live.app.stop().await;
}

/// An instance without the live adapter never takes live work it cannot finish: with only
/// such an instance running, an interrupted live booking and a live charge retry stay
/// untouched (and the booking is listed for operators); once an instance with the adapter
/// runs, both finish.
#[tokio::test]
async fn an_instance_without_the_adapter_leaves_live_work_to_one_that_has_it() {
    let stripe = StripeStandIn::start().await;
    let database_url = fresh_database_url().await;
    let with_adapter = |stripe: &StripeStandIn| {
        let mut env = stripe.service_env();
        env.push(("DATABASE_URL".into(), database_url.clone()));
        env.push(("COURIER_CHARGE_RETRY_BASE_MS".into(), "3000".into()));
        env
    };
    let live = Live::start_with(
        stripe,
        &[
            ("DATABASE_URL", &database_url),
            ("COURIER_CHARGE_RETRY_BASE_MS", "3000"),
        ],
    )
    .await;
    let card = live.attach("pm_card_visa").await;
    // A live charge whose hold found the provider unreachable: retried in 3 s.
    let (pending_job, _) = live.book_through(Fault::Status(500)).await;
    let body = live.quoted().await;
    let job = live.prepared_job(&body).await;
    let hold_key = format!("job_{}_hold", job["id"].as_str().unwrap());
    let Live {
        stripe,
        app,
        merchant_id,
        live: credential,
    } = live;
    app.stop().await;
    let without = {
        let url = database_url.clone();
        TestApp::spawn_with(move |name| (name == "DATABASE_URL").then(|| url.clone())).await
    };
    let live = Live {
        stripe,
        app: without,
        merchant_id,
        live: credential,
    };
    let stranded = key();
    let request = live
        .strand(&stranded, &body, &card, &job, &hold_key, 0)
        .await;
    // Several passes of both workers.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (status, answer) = live.book(&stranded, &request).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (409, Some("idempotency.in_progress")),
        "{answer}"
    );
    assert_eq!(
        live.db_scalar("SELECT recoveries::bigint FROM booking_attempts")
            .await,
        0,
        "not claimed by an instance that cannot finish it"
    );
    assert_eq!(
        live.db_scalar(
            "SELECT count(*) FROM charge_retries WHERE attempts = 1 AND leased_until IS NULL"
        )
        .await,
        1,
        "the charge's retry is untouched"
    );
    let (status, unfinished) = status_and_json(
        live.app
            .admin(Method::GET, "/bookings/unfinished")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{unfinished}");
    assert_eq!(unfinished.as_array().unwrap().len(), 1, "{unfinished}");
    assert_eq!(unfinished[0]["idempotency_key"], stranded.as_str());
    assert_eq!(unfinished[0]["environment"], "live");
    assert_eq!(unfinished[0]["abandoning_since"], Value::Null);

    // An instance with the adapter joins: it finishes both.
    let env = with_adapter(&live.stripe);
    let able = TestApp::spawn_with(move |name| {
        env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
    })
    .await;
    let (status, booked) = live.answer_of_stranded(&stranded, &request).await;
    assert_eq!(status, 201, "{booked}");
    assert_eq!(booked["id"], job["id"]);
    live.charge_becomes(&booked, "authorised").await;
    live.charge_becomes(&pending_job, "authorised").await;
    able.stop().await;
    live.app.stop().await;
}

/// A hold whose key is still in use at the provider (the process that sent it died mid-call
/// and the provider has not finished it) is waited for: while the provider answers 409 for
/// the key, the recovery worker books nothing (no job with a pending charge that a later
/// decline would leave unpaid); once the key is free, the booking is made with its hold.
#[tokio::test]
async fn a_hold_still_in_flight_at_the_provider_is_waited_for() {
    let live = Live::start(&[("COURIER_PAYMENT_DEADLINE_MS", "1000")]).await;
    let card = live.attach("pm_card_visa").await;
    let body = live.quoted().await;
    let job = live.prepared_job(&body).await;
    let hold_key = format!("job_{}_hold", job["id"].as_str().unwrap());
    live.stripe
        .keep_in_flight(&hold_key, Duration::from_secs(6));
    let stranded = key();
    let request = live
        .strand(&stranded, &body, &card, &job, &hold_key, 0)
        .await;
    // The worker tries every lease (3 s): twice within these 5 s, each time answered 409.
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        let (status, answer) = live.book(&stranded, &request).await;
        assert_eq!(
            (status, answer["code"].as_str()),
            (409, Some("idempotency.in_progress")),
            "{answer}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let charges = format!(
        "SELECT count(*) FROM charges WHERE merchant_id = '{}'",
        live.merchant_id
    );
    assert_eq!(
        live.db_scalar(&charges).await,
        0,
        "nothing booked meanwhile"
    );
    assert!(
        live.db_scalar("SELECT recoveries::bigint FROM booking_attempts")
            .await
            >= 2,
        "the worker asked while the key was in use"
    );
    let (status, booked) = live.answer_of_stranded(&stranded, &request).await;
    assert_eq!(status, 201, "{booked}");
    live.charge_becomes(&booked, "authorised").await;
    assert_eq!(live.stripe.holds().len(), 1);
    live.app.stop().await;
}

/// A capture the provider does not answer is never given up: past the retry policy's count
/// the charge stays `authorised` (the money is still held), says it is still being tried,
/// and is captured once the provider answers.
#[tokio::test]
async fn a_capture_the_provider_does_not_answer_is_never_given_up() {
    let live = Live::start(&[
        ("COURIER_CHARGE_RETRY_ATTEMPTS", "2"),
        ("COURIER_CHARGE_RETRY_BASE_MS", "100"),
    ])
    .await;
    live.attach("pm_card_visa").await;
    let (status, job) = live.book(&key(), &live.quoted().await).await;
    assert_eq!(status, 201, "{job}");
    // Every capture call fails with a 503, five times over; the policy allows two.
    live.stripe
        .inject("/v1/payment_intents/", Fault::Status(503), 5);
    live.deliver(&job).await;
    let waiting = eventually(
        "the capture to go past the retry policy's count",
        WAIT,
        Duration::from_millis(20),
        || async {
            let charge = live.charge_of(&job).await;
            assert_ne!(charge["status"], "failed", "{charge}");
            charge["last_error"]
                .as_str()
                .is_some_and(|e| e.contains("still trying"))
                .then_some(charge)
        },
    )
    .await;
    assert_eq!(waiting["status"], "authorised", "{waiting}");
    let captured = live.charge_becomes(&job, "captured").await;
    assert_eq!(captured["last_error"], Value::Null);
    let hold = &live.stripe.intents()[0];
    assert_eq!(
        (hold.status.as_str(), hold.amount_received),
        ("succeeded", hold.amount)
    );
    live.app.stop().await;
}

/// A capture made long ago whose answer was lost, asked for again once the provider no longer
/// keeps its key, is refused by the provider (the payment is no longer capturable); past the
/// retry count the worker reads the payment back, sees it taken, and records the capture.
#[tokio::test]
async fn a_capture_whose_key_the_provider_forgot_is_read_back_and_recorded() {
    let live = Live::start(&[
        ("COURIER_CHARGE_RETRY_ATTEMPTS", "2"),
        ("COURIER_CHARGE_RETRY_BASE_MS", "100"),
    ])
    .await;
    live.attach("pm_card_visa").await;
    let (status, job) = live.book(&key(), &live.quoted().await).await;
    assert_eq!(status, 201, "{job}");
    live.stripe
        .inject("/v1/payment_intents/", Fault::ActForgetThenDrop, 1);
    live.deliver(&job).await;
    let captured = live.charge_becomes(&job, "captured").await;
    assert_eq!(captured["last_error"], Value::Null);
    let hold = &live.stripe.intents()[0];
    assert_eq!(
        (hold.status.as_str(), hold.amount_received),
        ("succeeded", hold.amount)
    );
    live.app.stop().await;
}

/// A live adapter whose configuration cannot work stops the service at start with a message
/// that says what is wrong, instead of answering bookings it cannot charge.
#[tokio::test]
async fn a_misconfigured_live_adapter_stops_the_service_at_start() {
    use crate::support::process::BINARY;
    let database_url = fresh_database_url().await;
    let cases = [
        (json!({"api_base": "https://localhost:1"}), "secret_key"),
        (
            json!({"secret_key": "sk_test_x", "api_base": "http://api.stripe.com"}),
            "https://",
        ),
    ];
    for (config, says) in cases {
        let path = crate::support::scratch_path("live-config");
        std::fs::write(&path, config.to_string()).unwrap();
        let data_dir = crate::support::scratch_path("misconfigured");
        let child = std::process::Command::new(BINARY)
            .arg("serve")
            .env("DATABASE_URL", &database_url)
            .env("COURIER_DATA_DIR", &data_dir)
            .env("COURIER_LISTEN", format!("127.0.0.1:{}", free_port()))
            .env("COURIER_SECRET_KEY", "5e".repeat(32))
            .env(
                "COURIER_LIVE_PAYMENT_ADAPTER",
                crate::support::stripe::stripe_adapter_path(),
            )
            .env("COURIER_LIVE_PAYMENT_CONFIG", &path)
            .env("RUST_LOG", "error")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let output = tokio::time::timeout(
            Duration::from_secs(30),
            tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()),
        )
        .await
        .expect("the service stops by itself")
        .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{config}: {stderr}");
        assert!(
            stderr.contains("refuses its configuration") && stderr.contains(says),
            "{config}: {stderr}"
        );
    }
}

/// A refund whose answer is lost after the provider paid it is never paid twice: the
/// operator's next refund (another key) is a refund of its own, the operator's retry of the
/// lost one (its key) finds it and asks again under the refund's provider key, and a refund
/// left unanswered is finished by the retry worker. The provider's refunds equal ours.
#[tokio::test]
async fn a_refund_whose_answer_was_lost_is_paid_and_recorded_once() {
    let live = Live::start(&[("COURIER_CHARGE_RETRY_BASE_MS", "3000")]).await;
    live.attach("pm_card_visa").await;
    let (_, job) = live.book(&key(), &live.quoted().await).await;
    live.deliver(&job).await;
    let captured = live.charge_becomes(&job, "captured").await;
    let refund_path = format!("/charges/{}/refund", captured["id"].as_str().unwrap());
    let refund = |amount: i64, key: &'static str| live.refund(&refund_path, amount, key);
    let given_back = |live: &Live| {
        let intent = live.stripe.intents()[0].clone();
        intent.amount_refunded
    };

    // 30 is paid by the provider; its answer is lost.
    live.stripe.inject("/v1/refunds", Fault::ActThenDrop, 1);
    let (status, lost) = refund(30, "thirty").await;
    assert_eq!(
        (status, lost["code"].as_str()),
        (503, Some("payment.provider_unreachable"))
    );
    assert_eq!(given_back(&live), 30);
    // Another refund, of 20: a refund of its own.
    let (status, charge) = refund(20, "twenty").await;
    assert_eq!(status, 200, "{charge}");
    assert_eq!(charge["refunded_amount_minor"], 20);
    // The operator sends the 30 again: the same refund, answered from the provider's record.
    let (status, charge) = refund(30, "thirty").await;
    assert_eq!(status, 200, "{charge}");
    assert_eq!(charge["refunded_amount_minor"], 50);
    assert_eq!(given_back(&live), 50, "the 30 was paid once");

    // 10, paid and its answer lost, and never sent again: the retry worker finishes it.
    live.stripe.inject("/v1/refunds", Fault::ActThenDrop, 1);
    let (status, _) = refund(10, "ten").await;
    assert_eq!(status, 503);
    eventually(
        "the worker to record the refund",
        WAIT,
        Duration::from_millis(100),
        || async {
            let charge = live.charge_of(&job).await;
            (charge["refunded_amount_minor"] == 60).then_some(())
        },
    )
    .await;
    assert_eq!(given_back(&live), 60);
    // What is promised counts against what is left: more than the rest is refused.
    let rest = captured["amount_minor"].as_i64().unwrap() - 60;
    let (status, refused) = refund(rest + 1, "the-rest").await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (422, Some("charge.refund_exceeds_captured"))
    );
    live.app.stop().await;
}

/// The same refund sent with one `Idempotency-Key` twice at once and once after, against a
/// provider that takes 2.5 s to pay it, pays once: the first is paid, the one sent meanwhile is
/// told the refund is still in flight (409 `idempotency.in_progress`), and the one after
/// answers the first refund. The provider's refunds equal ours. The same key for another
/// amount is refused; a key that never reached the API is refused before anything is paid.
#[tokio::test]
async fn a_refund_sent_again_with_its_key_while_the_provider_is_slow_pays_once() {
    let live = Live::start(&[]).await;
    live.attach("pm_card_visa").await;
    let (_, job) = live.book(&key(), &live.quoted().await).await;
    live.deliver(&job).await;
    let captured = live.charge_becomes(&job, "captured").await;
    let refund_path = format!("/charges/{}/refund", captured["id"].as_str().unwrap());

    live.stripe
        .inject("/v1/refunds", Fault::Hang(Duration::from_millis(2500)), 1);
    let first = live.refund(&refund_path, 300, "slow-refund");
    let again = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        live.refund(&refund_path, 300, "slow-refund").await
    };
    let ((status, paid), (again_status, in_flight)) = tokio::join!(first, again);
    assert_eq!(
        (status, paid["refunded_amount_minor"].as_i64()),
        (200, Some(300)),
        "{paid}"
    );
    assert_eq!(
        (again_status, in_flight["code"].as_str()),
        (409, Some("idempotency.in_progress")),
        "{in_flight}"
    );
    let (status, answered) = live.refund(&refund_path, 300, "slow-refund").await;
    assert_eq!((status, &answered), (200, &paid));
    let (status, reused) = live.refund(&refund_path, 200, "slow-refund").await;
    assert_eq!(
        (status, reused["code"].as_str()),
        (409, Some("idempotency.key_reused"))
    );
    let response = live
        .app
        .admin(Method::POST, &refund_path)
        .json(&json!({"amount_minor": 100}))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 422, "request.missing_idempotency_key").await;
    let response = live
        .app
        .admin(Method::POST, &refund_path)
        .header("Idempotency-Key", "two words")
        .json(&json!({"amount_minor": 100}))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 422, "request.invalid_idempotency_key").await;

    // The provider paid one refund of 300; our books say the same.
    let intent = live.stripe.intents()[0].clone();
    assert_eq!(intent.amount_refunded, 300);
    assert_eq!(live.charge_of(&job).await["refunded_amount_minor"], 300);
    let refunds: i64 = sqlx::query_scalar("SELECT count(*) FROM refunds")
        .fetch_one(&live.app.pool().await)
        .await
        .unwrap();
    assert_eq!(refunds, 1);
    live.app.stop().await;
}

/// Reconciliation reads every charge back from the provider and compares: with the books
/// agreeing it finds nothing; a hold released behind the service's back and a hold the
/// service knows nothing of are each one mismatch, printed by the command (exit 1), recorded
/// by the scheduled check, shown to operators and counted in the metric, and resolved once
/// the provider agrees again.
#[tokio::test]
async fn reconciliation_finds_where_the_provider_and_our_books_disagree() {
    let live = Live::start(&[("COURIER_RECONCILE_EVERY_MS", "300")]).await;
    live.attach("pm_card_visa").await;
    // A held job, a delivered and partly refunded one, and a cancelled one.
    let (_, held) = live.book(&key(), &live.quoted().await).await;
    let (_, delivered) = live.book(&key(), &live.quoted().await).await;
    live.deliver(&delivered).await;
    let captured = live.charge_becomes(&delivered, "captured").await;
    let (status, refunded) = live
        .refund(
            &format!("/charges/{}/refund", captured["id"].as_str().unwrap()),
            100,
            "reconciled",
        )
        .await;
    assert_eq!(status, 200, "{refunded}");
    let (_, cancelled) = live.book(&key(), &live.quoted().await).await;
    let (status, body) = live
        .call(
            Method::POST,
            &format!("/v1/jobs/{}/cancel", cancelled["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    live.charge_becomes(&cancelled, "voided").await;
    let (code, lines) = reconcile_live(live.stripe.service_env(), &live.app.database_url).await;
    assert_eq!((code, lines.len()), (0, 1), "{lines:?}");
    assert_eq!(
        summary(&lines),
        json!({"checked": 3, "mismatches": 0, "unread": 0, "listed": true})
    );

    // Behind the service's back: the held job's hold is cancelled, and a hold is made for
    // nothing the service booked.
    let held_charge = live.charge_of(&held).await;
    let pool = live.app.pool().await;
    let held_ref: String =
        sqlx::query_scalar("SELECT authorisation_ref FROM charges WHERE id = $1::uuid")
            .bind(held_charge["id"].as_str().unwrap())
            .fetch_one(&pool)
            .await
            .unwrap();
    pool.close().await;
    live.stripe.cancel_elsewhere(&held_ref);
    let stray = live.stripe.hold_elsewhere(1234, "usd");
    let (code, lines) = reconcile_live(live.stripe.service_env(), &live.app.database_url).await;
    assert_eq!(code, 1, "{lines:?}");
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(
        lines.iter().any(|l| l.starts_with(&format!(
            "status {} provider_ref={held_ref}: ours authorised",
            held_charge["id"].as_str().unwrap()
        )) && l.contains("provider released")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("unknown {stray} ")) && l.contains("held 1234 USD")),
        "{lines:?}"
    );
    assert_eq!(
        summary(&lines),
        json!({"checked": 3, "mismatches": 2, "unread": 0, "listed": true})
    );

    // The scheduled check records both; operators see them, and so does the metric.
    let open = eventually(
        "the scheduled check to record the mismatches",
        WAIT,
        Duration::from_millis(100),
        || async {
            let (status, open) = status_and_json(
                live.app
                    .admin(Method::GET, "/payments/mismatches")
                    .send()
                    .await
                    .unwrap(),
            )
            .await;
            assert_eq!(status, 200, "{open}");
            (open.as_array().unwrap().len() == 2).then_some(open)
        },
    )
    .await;
    let kinds: HashSet<&str> = open
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, HashSet::from(["status", "unknown"]));
    let metrics = live
        .app
        .request(Method::GET, "/metrics")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(r#"courier_payment_mismatches{environment="live"} 2"#),
        "{metrics}"
    );

    // The stray hold is released: the next check resolves its mismatch, and only it.
    live.stripe.cancel_elsewhere(&stray);
    eventually(
        "the released stray hold's mismatch to be resolved",
        WAIT,
        Duration::from_millis(100),
        || async {
            let (_, open) = status_and_json(
                live.app
                    .admin(Method::GET, "/payments/mismatches")
                    .send()
                    .await
                    .unwrap(),
            )
            .await;
            let open = open.as_array().unwrap().clone();
            (open.len() == 1 && open[0]["kind"] == "status").then_some(())
        },
    )
    .await;
    live.app.stop().await;
}

/// The summary line `courier payments reconcile` ends with.
fn summary(lines: &[String]) -> Value {
    serde_json::from_str(lines.last().expect("a summary line")).unwrap()
}

/// A provider whose listing fails is read charge by charge: every charge is still compared
/// and the summary says payments of no charge were not looked for. A payment the provider
/// says it does not have is one mismatch, not a check that cannot run; and a `pending` charge
/// is compared too (a hold released while we wait for it is a mismatch).
#[tokio::test]
async fn reconciliation_reads_charge_by_charge_when_the_listing_fails() {
    let live = Live::start(&[]).await;
    live.attach("pm_card_visa").await;
    let (_, waiting) = live.book(&key(), &live.quoted().await).await;
    let (_, missing) = live.book(&key(), &live.quoted().await).await;
    let (waiting, missing) = (
        live.charge_of(&waiting).await,
        live.charge_of(&missing).await,
    );
    let pool = live.app.pool().await;
    // Ours: one charge still waiting for its hold, one naming a payment Stripe never made.
    let waiting_ref: String = sqlx::query_scalar(
        "UPDATE charges SET status = 'pending', authorised_at = NULL WHERE id = $1::uuid \
         RETURNING authorisation_ref",
    )
    .bind(waiting["id"].as_str().unwrap())
    .fetch_one(&pool)
    .await
    .unwrap();
    sqlx::query("UPDATE charges SET authorisation_ref = 'pi_NeverMade0000' WHERE id = $1::uuid")
        .bind(missing["id"].as_str().unwrap())
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    live.stripe.cancel_elsewhere(&waiting_ref);
    live.stripe
        .inject("/v1/payment_intents$", Fault::Status(500), 100);

    let (code, lines) = reconcile_live(live.stripe.service_env(), &live.app.database_url).await;
    assert_eq!((code, lines.len()), (1, 3), "{lines:?}");
    assert_eq!(
        summary(&lines),
        json!({"checked": 2, "mismatches": 2, "unread": 0, "listed": false})
    );
    let line_of = |charge: &Value| {
        let prefix = format!("status {} ", charge["id"].as_str().unwrap());
        lines.iter().find(|l| l.starts_with(&prefix)).cloned()
    };
    let missing_line = line_of(&missing).expect("the missing payment is a mismatch");
    assert!(
        missing_line.contains("provider_ref=pi_NeverMade0000: ours authorised")
            && missing_line.ends_with("provider no such payment"),
        "{missing_line}"
    );
    let waiting_line = line_of(&waiting).expect("the pending charge is compared");
    assert!(
        waiting_line.contains("ours pending") && waiting_line.contains("provider released"),
        "{waiting_line}"
    );
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
    let merchant = courier_core::merchants::Merchants::new(pool.clone(), authenticator.clone())
        .create("Crash Test Ltd")
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

#[tokio::test]
async fn a_hold_the_provider_refuses_for_good_books_nothing_and_the_key_replays_it() {
    let live = Live::start(&[]).await;
    live.attach("pm_card_visa").await;
    let body = live.quoted().await;
    // The account's key was rolled: Stripe answers 401, which the adapter says is `refused`.
    live.stripe.revoke_key(true);
    let booking = key();
    let (status, refusal) = live.book(&booking, &body).await;
    assert_eq!(status, 503, "{refusal}");
    assert_eq!(refusal["code"], "payment.provider_refused", "{refusal}");
    assert!(live.stripe.holds().is_empty(), "nothing held");
    // The same key answers the same, even once the key works again; the quote is still free.
    live.stripe.revoke_key(false);
    let (status, again) = live.book(&booking, &body).await;
    assert_eq!(status, 503, "{again}");
    assert_eq!(again["code"], "payment.provider_refused");
    let (status, job) = live.book(&key(), &body).await;
    assert_eq!(status, 201, "{job}");
    assert_eq!(live.stripe.holds().len(), 1);
}
