//! `/v1/webhooks` and webhook delivery: endpoints, signed and shaped bodies, the event filter,
//! environments, retries, 410, suspension and resume, rotation, address rules, and a service
//! killed mid-load. Every request arrives at a real HTTPS receiver that checks signatures as
//! the spec's section 6 tells receivers to.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use courier_core::merchants::NewMerchant;
use courier_domain::Environment;
use courier_domain::event::{EventDetails, EventName, JobFacts, NewEvent};

use crate::support::process::{free_port, spawn_service, wait_until_ready};
use crate::support::receiver::{Receiver, Reply};
use crate::support::{
    Authed, Credential, MerchantCredentials, TestApp, assert_refusal, eventually,
    fresh_database_url, status_and_json,
};

const WAIT: Duration = Duration::from_secs(10);

struct Hooks {
    app: TestApp,
    merchant: NewMerchant,
    receiver: Receiver,
    pool: PgPool,
}

impl Hooks {
    /// A service trusting the receiver's certificate authority, allowed to deliver to it on
    /// loopback unless `settings` say otherwise.
    async fn start(settings: &[(&str, &str)]) -> Self {
        let receiver = Receiver::start().await;
        let mut env: HashMap<String, String> = HashMap::from([
            (
                "COURIER_WEBHOOK_EXTRA_CA".to_owned(),
                receiver.ca_path.to_string_lossy().into_owned(),
            ),
            (
                "COURIER_WEBHOOK_ALLOW_PRIVATE".to_owned(),
                "true".to_owned(),
            ),
        ]);
        for (name, value) in settings {
            env.insert((*name).to_owned(), (*value).to_owned());
        }
        let app = TestApp::spawn_with(move |name| env.get(name).cloned()).await;
        let merchant = app.create_merchant("Hooked Ltd").await;
        let pool = app.pool().await;
        Self {
            app,
            merchant,
            receiver,
            pool,
        }
    }

    /// Registers `path` of the receiver; returns the endpoint (with its secret).
    async fn register(&self, credential: &Credential, path: &str, events: Value) -> Value {
        let response = self
            .app
            .request(Method::POST, "/v1/webhooks")
            .auth(credential)
            .json(&json!({"url": self.receiver.url(path), "events": events}))
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        assert_eq!(status, 201, "{body}");
        body
    }

    /// Records an event the way state changes do; returns its job id (or card id).
    async fn raise(&self, environment: Environment, name: EventName) -> Uuid {
        raise_for(&self.pool, self.merchant.merchant_id, environment, name).await
    }

    async fn call(&self, method: Method, path: &str, credential: &Credential) -> (u16, Value) {
        let response = self
            .app
            .request(method, path)
            .auth(credential)
            .send()
            .await
            .unwrap();
        status_and_json(response).await
    }

    async fn deliveries(&self, credential: &Credential, endpoint: &Value) -> Vec<Value> {
        let path = format!(
            "/v1/webhooks/{}/deliveries",
            endpoint["id"].as_str().unwrap()
        );
        let (status, body) = self.call(Method::GET, &path, credential).await;
        assert_eq!(status, 200, "{body}");
        body.as_array().unwrap().clone()
    }

    /// Waits until the endpoint's records satisfy `done`.
    async fn deliveries_until(
        &self,
        credential: &Credential,
        endpoint: &Value,
        done: impl Fn(&[Value]) -> bool,
    ) -> Vec<Value> {
        let what = format!(
            "the delivery records of endpoint {} to reach the expected state",
            endpoint["id"]
        );
        eventually(&what, WAIT, Duration::from_millis(25), || async {
            let records = self.deliveries(credential, endpoint).await;
            done(&records).then_some(records)
        })
        .await
    }

    async fn endpoint(&self, credential: &Credential, id: &str) -> Value {
        let (status, list) = self.call(Method::GET, "/v1/webhooks", credential).await;
        assert_eq!(status, 200);
        list.as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .cloned()
            .expect("the endpoint is listed")
    }
}

async fn raise_for(
    pool: &PgPool,
    merchant_id: Uuid,
    environment: Environment,
    name: EventName,
) -> Uuid {
    let subject = Uuid::new_v4();
    let is_card = name == EventName::PaymentMethodDead;
    let job = (!is_card).then(|| JobFacts {
        id: subject,
        reference: format!("CR-{}", &subject.to_string()[..8]),
        market: "demo".into(),
        currency: "USD".into(),
        price_amount_minor: 1250,
        tax_amount_minor: 250,
        scheduled_for: None,
    });
    let mut details = EventDetails {
        courier: Some("courier-7".into()),
        reason: Some("test".into()),
        ..EventDetails::default()
    };
    if name == EventName::JobStatusChanged {
        details.from = Some("searching".into());
        details.to = Some("assigned".into());
    }
    if is_card {
        details.courier = None;
        details.payment_method_id = Some(subject);
        details.brand = Some("visa".into());
        details.last_four = Some("4242".into());
    }
    let event = NewEvent {
        name,
        merchant_id,
        environment,
        occurred_at: chrono::Utc::now(),
        job,
        details,
    };
    let mut tx = pool.begin().await.unwrap();
    courier_core::events::record(&mut tx, &event).await.unwrap();
    tx.commit().await.unwrap();
    courier_core::events::announce(pool).await.unwrap();
    subject
}

/// Events the service commits wake its own fan-out at once, and events written from outside
/// the service are announced after their commit: with the regular look for work an hour apart,
/// all of them still arrive.
#[tokio::test]
async fn committed_events_wake_the_fan_out_without_waiting_for_a_poll() {
    let floor = crate::fulfilment::Floor::start(&[("COURIER_WEBHOOK_POLL_MS", "3600000")]).await;
    let job = floor.book().await;
    let arrived = floor
        .receiver
        .wait_for(crate::fulfilment::HOOK, 1, WAIT)
        .await;
    assert_eq!(arrived[0].event, "job.booked");

    let id = job["id"].as_str().unwrap();
    let (status, body) = floor
        .merchant_call(
            Method::POST,
            &format!("/v1/jobs/{id}/cancel"),
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let arrived = floor
        .receiver
        .wait_for(crate::fulfilment::HOOK, 2, WAIT)
        .await;
    assert_eq!(arrived[1].event, "job.cancelled");

    let pool = floor.app.pool().await;
    raise_for(
        &pool,
        floor.merchant.merchant_id,
        Environment::Test,
        EventName::JobPickedUp,
    )
    .await;
    let arrived = floor
        .receiver
        .wait_for(crate::fulfilment::HOOK, 3, WAIT)
        .await;
    assert_eq!(arrived[2].event, "job.picked_up");
    floor.app.stop().await;
}

fn secret(endpoint: &Value) -> String {
    endpoint["signing_secret"].as_str().unwrap().to_owned()
}

/// 10,000 registrations, 32 at a time: exactly the cap (16 by default) are made, every other
/// one is refused with `webhook.too_many_endpoints`; the other environment has a cap of its
/// own, and deleting an endpoint frees its place.
#[tokio::test]
async fn registrations_past_the_endpoint_cap_are_refused() {
    const ATTEMPTS: usize = 10_000;
    const AT_ONCE: usize = 32;
    const CAP: usize = 16;
    let hooks = Hooks::start(&[("COURIER_RATE_LIMIT_READS_PER_MINUTE", "10000000")]).await;
    let (test, live) = (hooks.merchant.test(), hooks.merchant.live());
    let url = hooks.app.url("/v1/webhooks");
    let target = hooks.receiver.url("/capped");
    let workers: Vec<_> = (0..AT_ONCE)
        .map(|_| {
            let (client, url, target, test) = (
                hooks.app.client.clone(),
                url.clone(),
                target.clone(),
                test.clone(),
            );
            tokio::spawn(async move {
                let mut answers = Vec::new();
                for _ in 0..ATTEMPTS / AT_ONCE {
                    let response = client
                        .post(&url)
                        .auth(&test)
                        .json(&json!({ "url": target }))
                        .send()
                        .await
                        .unwrap();
                    answers.push(status_and_json(response).await);
                }
                answers
            })
        })
        .collect();
    let mut made = 0;
    let mut refused = 0;
    for worker in workers {
        for (status, body) in worker.await.unwrap() {
            match status {
                201 => made += 1,
                422 => {
                    assert_eq!(body["code"], "webhook.too_many_endpoints", "{body}");
                    refused += 1;
                }
                other => panic!("unexpected {other}: {body}"),
            }
        }
    }
    assert_eq!(made, CAP);
    assert_eq!(made + refused, ATTEMPTS / AT_ONCE * AT_ONCE);
    let (_, listed) = hooks.call(Method::GET, "/v1/webhooks", &test).await;
    assert_eq!(listed.as_array().unwrap().len(), CAP);

    // The live environment has its own cap.
    hooks.register(&live, "/live", Value::Null).await;
    // A deleted endpoint frees its place, and only its place.
    let id = listed[0]["id"].as_str().unwrap();
    let (status, _) = hooks
        .call(Method::DELETE, &format!("/v1/webhooks/{id}"), &test)
        .await;
    assert_eq!(status, 204);
    hooks.register(&test, "/again", Value::Null).await;
    let response = hooks
        .app
        .request(Method::POST, "/v1/webhooks")
        .auth(&test)
        .json(&json!({ "url": target }))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 422, "webhook.too_many_endpoints").await;
}

#[tokio::test]
async fn endpoints_are_registered_listed_and_kept_to_their_owner() {
    let hooks = Hooks::start(&[]).await;
    let (test, live) = (hooks.merchant.test(), hooks.merchant.live());
    let post = |body: Value| {
        hooks
            .app
            .request(Method::POST, "/v1/webhooks")
            .auth(&test)
            .json(&body)
            .send()
    };
    for url in [
        json!("http://example.com/hook"),
        json!("/relative/hook"),
        json!("ftp://example.com/hook"),
        json!("https://user:pw@example.com/hook"),
        json!(null),
        json!(42),
    ] {
        let response = post(json!({"url": url})).await.unwrap();
        assert_refusal(response, 422, "webhook.invalid_url").await;
    }
    let response = post(json!({"url": "https://example.com/h", "events": ["job.exploded"]}));
    assert_refusal(response.await.unwrap(), 422, "webhook.unknown_event").await;

    let created = hooks.register(&test, "/a", Value::Null).await;
    let signing_secret = secret(&created);
    assert!(signing_secret.starts_with("whsec_") && signing_secret.len() >= 64);
    assert_eq!(created["status"], "active");
    assert_eq!(created["events"], json!([]));
    assert_eq!(created["consecutive_failures"], 0);
    assert!(created["last_succeeded_at"].is_null() && created["suspension_reason"].is_null());
    let id = created["id"].as_str().unwrap();
    let live_endpoint = hooks.register(&live, "/b", json!(["job.booked"])).await;
    assert_eq!(live_endpoint["events"], json!(["job.booked"]));

    // Each environment lists its own, never with the secret.
    let (_, listed) = hooks.call(Method::GET, "/v1/webhooks", &test).await;
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["id"], id);
    assert!(listed[0]["signing_secret"].is_null());
    let (_, listed) = hooks.call(Method::GET, "/v1/webhooks", &live).await;
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["id"], live_endpoint["id"]);

    // The secret is kept encrypted.
    let stored: Vec<u8> =
        sqlx::query_scalar("SELECT secret_ciphertext FROM webhook_endpoints WHERE id = $1")
            .bind(Uuid::parse_str(id).unwrap())
            .fetch_one(&hooks.pool)
            .await
            .unwrap();
    assert!(
        !stored
            .windows(16)
            .any(|w| signing_secret.as_bytes().starts_with(w))
    );

    // Other merchants, the other environment and unknown ids all get 404.
    let other = hooks.app.create_merchant("Other Ltd").await.test();
    let actions = [
        (Method::GET, "deliveries"),
        (Method::POST, "resume"),
        (Method::POST, "rotate-secret"),
        (Method::DELETE, ""),
    ];
    for (credential, target) in [
        (&other, id.to_owned()),
        (&live, id.to_owned()),
        (&test, Uuid::new_v4().to_string()),
        (&test, "not-an-id".to_owned()),
    ] {
        for (method, action) in &actions {
            let path = format!("/v1/webhooks/{target}/{action}");
            let path = path.trim_end_matches('/');
            let response = hooks
                .app
                .request(method.clone(), path)
                .auth(credential)
                .send()
                .await
                .unwrap();
            assert_refusal(response, 404, "webhook.not_found").await;
        }
    }
    let response = hooks.app.request(Method::GET, "/v1/webhooks").send().await;
    assert_refusal(response.unwrap(), 401, "auth.missing_credentials").await;

    let path = format!("/v1/webhooks/{id}");
    assert_eq!(hooks.call(Method::DELETE, &path, &test).await.0, 204);
    assert_eq!(hooks.call(Method::DELETE, &path, &test).await.0, 404);
    let (_, listed) = hooks.call(Method::GET, "/v1/webhooks", &test).await;
    assert_eq!(listed, json!([]));
}

#[tokio::test]
async fn events_arrive_signed_shaped_filtered_and_in_their_environment() {
    let hooks = Hooks::start(&[]).await;
    let (test, live) = (hooks.merchant.test(), hooks.merchant.live());
    let all = hooks.register(&test, "/all", Value::Null).await;
    let booked_only = hooks
        .register(&test, "/booked", json!(["job.booked"]))
        .await;
    let live_all = hooks.register(&live, "/live", json!([])).await;
    let other = hooks.app.create_merchant("Other Ltd").await;

    let booked = hooks.raise(Environment::Test, EventName::JobBooked).await;
    let picked_up = hooks.raise(Environment::Test, EventName::JobPickedUp).await;
    let card = hooks
        .raise(Environment::Live, EventName::PaymentMethodDead)
        .await;
    raise_for(
        &hooks.pool,
        other.merchant_id,
        Environment::Test,
        EventName::JobBooked,
    )
    .await;

    let at_all = hooks.receiver.wait_for("/all", 2, WAIT).await;
    let at_booked = hooks.receiver.wait_for("/booked", 1, WAIT).await;
    let at_live = hooks.receiver.wait_for("/live", 1, WAIT).await;
    // Nothing else is on its way.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(hooks.receiver.total(), 4);

    for (requests, endpoint) in [
        (&at_all, &all),
        (&at_booked, &booked_only),
        (&at_live, &live_all),
    ] {
        for request in requests.iter() {
            assert!(request.verifies_with(&secret(endpoint)));
            assert!(!request.verifies_with(&secret(&all)) || std::ptr::eq(endpoint, &all));
            assert_eq!(request.content_type, "application/json");
            assert_eq!(request.event, request.json()["type"]);
            Uuid::parse_str(&request.delivery).expect("Courier-Delivery is an id");
            assert_described(&request.json());
        }
    }
    let by_type = |requests: &[crate::support::receiver::Received], name: &str| {
        requests
            .iter()
            .find(|r| r.event == name)
            .unwrap_or_else(|| panic!("{name} arrived"))
            .json()
    };
    let body = by_type(&at_all, "job.booked");
    assert_eq!(body["type"], "job.booked");
    assert_eq!(body["environment"], "test");
    assert_eq!(body["data"]["occurredAt"], body["occurred_at"]);
    let data = &body["data"];
    let mut keys: Vec<&str> = data
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    keys.sort_unstable();
    let mut expected = vec![
        "occurredAt",
        "environment",
        "jobId",
        "reference",
        "merchant",
        "market",
        "currency",
        "priceAmountMinor",
        "taxAmountMinor",
        "scheduledFor",
    ];
    expected.sort_unstable();
    assert_eq!(keys, expected);
    assert_eq!(data["environment"], 0);
    assert_eq!(data["jobId"], booked.to_string());
    assert_eq!(data["merchant"], hooks.merchant.merchant_id.to_string());
    assert_eq!(data["priceAmountMinor"], 1250);
    assert_eq!(data["scheduledFor"], Value::Null);
    let body = by_type(&at_all, "job.picked_up");
    assert_eq!(body["data"]["jobId"], picked_up.to_string());
    assert_eq!(body["data"]["courier"], "courier-7");
    assert_eq!(at_booked[0].event, "job.booked");
    let body = by_type(&at_live, "payment_method.dead");
    assert_eq!(body["environment"], "live");
    assert_eq!(body["data"]["environment"], 1);
    assert_eq!(body["data"]["paymentMethodId"], card.to_string());
    assert!(body["data"].get("jobId").is_none());

    let records = hooks
        .deliveries_until(&test, &all, |r| {
            r.len() == 2 && r.iter().all(|d| d["status"] == "delivered")
        })
        .await;
    for record in &records {
        assert_eq!(record["attempts"], 1);
        assert_eq!(record["response_status_code"], 200);
        assert!(record["delivered_at"].is_string() && record["next_attempt_at"].is_null());
        assert!(at_all.iter().any(|r| r.delivery == record["id"]));
    }
    let listed = hooks.endpoint(&test, all["id"].as_str().unwrap()).await;
    assert!(listed["last_succeeded_at"].is_string());
    assert_eq!(listed["consecutive_failures"], 0);
}

#[tokio::test]
async fn failures_are_retried_identically_until_a_2xx_a_410_or_ten_attempts() {
    let hooks = Hooks::start(&[
        ("COURIER_WEBHOOK_RETRY_BASE_MS", "5"),
        ("COURIER_WEBHOOK_TIMEOUT_MS", "400"),
    ])
    .await;
    let test = hooks.merchant.test();
    hooks.receiver.script("/flaky", |n| match n {
        0 => Reply::Status(500),
        1 => Reply::Status(404),
        2 => Reply::Slow(Duration::from_millis(1000), 200),
        3 => Reply::Redirect("/elsewhere"),
        _ => Reply::Status(204),
    });
    hooks.receiver.script("/gone", |_| Reply::Status(410));
    hooks.receiver.script("/down", |_| Reply::Status(503));
    hooks.receiver.script("/deleted", |_| Reply::Status(500));
    let flaky = hooks.register(&test, "/flaky", Value::Null).await;
    let gone = hooks.register(&test, "/gone", Value::Null).await;
    let down = hooks.register(&test, "/down", Value::Null).await;
    let deleted = hooks.register(&test, "/deleted", Value::Null).await;
    hooks
        .raise(Environment::Test, EventName::JobDelivered)
        .await;

    hooks.receiver.wait_for("/deleted", 1, WAIT).await;
    let path = format!("/v1/webhooks/{}", deleted["id"].as_str().unwrap());
    assert_eq!(hooks.call(Method::DELETE, &path, &test).await.0, 204);

    // 500, 404, a timeout and a redirect are failures; the 2xx after them ends it.
    let requests = hooks.receiver.wait_for("/flaky", 5, WAIT).await;
    let first = &requests[0];
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(
            request.delivery, first.delivery,
            "one Courier-Delivery for every retry"
        );
        assert_eq!(request.body, first.body, "the same body on every retry");
        assert!(request.verifies_with(&secret(&flaky)));
        if i > 0 {
            // The wait doubles from the base (5 ms): at least 5, 10, 20, 40 ms.
            let gap = request.at - requests[i - 1].at;
            assert!(
                gap >= Duration::from_millis(5 << (i - 1)),
                "gap {i}: {gap:?}"
            );
        }
    }
    let records = hooks
        .deliveries_until(&test, &flaky, |r| r[0]["status"] == "delivered")
        .await;
    assert_eq!(records[0]["attempts"], 5);
    assert_eq!(records[0]["response_status_code"], 204);
    assert_eq!(records[0]["id"], first.delivery);

    // 410: no retry at all.
    let records = hooks
        .deliveries_until(&test, &gone, |r| r[0]["status"] == "failed")
        .await;
    assert_eq!(records[0]["attempts"], 1);
    assert_eq!(records[0]["response_status_code"], 410);
    assert!(records[0]["next_attempt_at"].is_null());

    // Ten attempts in all, then it stops.
    let records = hooks
        .deliveries_until(&test, &down, |r| r[0]["status"] == "failed")
        .await;
    assert_eq!(records[0]["attempts"], 10);
    assert_eq!(records[0]["response_status_code"], 503);
    assert!(records[0]["last_error"].as_str().unwrap().contains("503"));
    let listed = hooks.endpoint(&test, down["id"].as_str().unwrap()).await;
    assert_eq!(listed["consecutive_failures"], 10);
    assert!(listed["last_failed_at"].is_string());
    assert_eq!(listed["status"], "active");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(hooks.receiver.received("/down").len(), 10);
    assert_eq!(hooks.receiver.received("/gone").len(), 1);
    // Redirects are not followed.
    assert!(hooks.receiver.received("/elsewhere").is_empty());
    // A deleted endpoint gets nothing more.
    assert_eq!(hooks.receiver.received("/deleted").len(), 1);
    let flaky_listed = hooks.endpoint(&test, flaky["id"].as_str().unwrap()).await;
    assert_eq!(flaky_listed["consecutive_failures"], 0);
}

#[tokio::test]
async fn twenty_failures_suspend_and_resuming_sends_only_new_events() {
    let hooks = Hooks::start(&[
        ("COURIER_WEBHOOK_RETRY_BASE_MS", "5"),
        ("COURIER_WEBHOOK_ENDPOINT_CONCURRENCY", "1"),
    ])
    .await;
    let test = hooks.merchant.test();
    hooks.receiver.script("/s", |_| Reply::Status(500));
    let endpoint = hooks.register(&test, "/s", Value::Null).await;
    let id = endpoint["id"].as_str().unwrap().to_owned();
    for _ in 0..5 {
        hooks.raise(Environment::Test, EventName::JobBooked).await;
    }
    let suspended = eventually(
        "the endpoint to be suspended",
        WAIT,
        Duration::from_millis(20),
        || async {
            let listed = hooks.endpoint(&test, &id).await;
            (listed["status"] == "suspended").then_some(listed)
        },
    )
    .await;
    assert_eq!(suspended["consecutive_failures"], 20);
    assert!(
        suspended["suspension_reason"]
            .as_str()
            .unwrap()
            .contains("20")
    );
    // Nothing more is sent: not the pending retries, not events raised while suspended.
    hooks.receiver.script("/s", |_| Reply::Status(200));
    let while_suspended = hooks.raise(Environment::Test, EventName::JobBooked).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(hooks.receiver.received("/s").len(), 20);
    let records = hooks.deliveries(&test, &endpoint).await;
    assert_eq!(records.len(), 5);
    assert!(
        records.iter().all(|r| r["status"] == "cancelled"),
        "{records:?}"
    );
    // The console's test event is not sent to a suspended endpoint, and says why.
    let mut visitor = crate::console::Visitor::new(&hooks.app);
    visitor.sign_in(&test).await;
    let csrf = crate::console::csrf_of(&visitor.get("/console/webhooks").await.body);
    let untested = visitor
        .post(
            &format!("/console/webhooks/{id}/test-event"),
            &[("csrf", &csrf), ("event", "job.booked")],
        )
        .await;
    assert_eq!(untested.status, 200, "{}", untested.body);
    assert!(
        untested
            .body
            .contains("suspended, so the test event was not sent")
    );
    let unsent: i64 = sqlx::query_scalar("SELECT count(*) FROM events WHERE only_endpoint_id = $1")
        .bind(Uuid::parse_str(&id).unwrap())
        .fetch_one(&hooks.pool)
        .await
        .unwrap();
    assert_eq!(unsent, 0, "nothing recorded for a suspended endpoint");
    // Nor is anything recovered to it while suspended: the page says to resume it first.
    let recover_path = format!("/console/webhooks/{id}/recover");
    let since = [("csrf", csrf.as_str()), ("since", "2020-01-01T00:00")];
    let refused = visitor.post(&recover_path, &since).await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert!(refused.body.contains("resume it first"), "{}", refused.body);

    let (status, resumed) = hooks
        .call(Method::POST, &format!("/v1/webhooks/{id}/resume"), &test)
        .await;
    assert_eq!(status, 200, "{resumed}");
    assert_eq!(resumed["status"], "active");
    assert_eq!(resumed["consecutive_failures"], 0);
    assert!(resumed["suspension_reason"].is_null() && resumed["signing_secret"].is_null());
    let after = hooks.raise(Environment::Test, EventName::JobBooked).await;
    let requests = hooks.receiver.wait_for("/s", 21, WAIT).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(hooks.receiver.received("/s").len(), 21);
    let job = requests[20].json()["data"]["jobId"].clone();
    assert_eq!(job, after.to_string());
    assert_ne!(job, while_suspended.to_string());

    // Recovery replays every delivery owed since the time given, the five suspension
    // cancelled included, in one go and once each; the event raised while suspended stays
    // unsent.
    let recovered = visitor.post(&recover_path, &since).await;
    assert_eq!(recovered.status, 200, "{}", recovered.body);
    assert!(
        recovered
            .body
            .contains("5 deliveries not delivered since then are sent again."),
        "{}",
        recovered.body
    );
    let again = visitor.post(&recover_path, &since).await;
    assert!(
        again
            .body
            .contains("Every delivery since then was delivered or is on its way."),
        "{}",
        again.body
    );
    let requests = hooks.receiver.wait_for("/s", 26, WAIT).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(hooks.receiver.received("/s").len(), 26);
    let replayed: HashSet<String> = requests[21..].iter().map(|r| r.delivery.clone()).collect();
    let cancelled: HashSet<String> = records
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(replayed, cancelled);
    let jobs: HashSet<String> = requests[21..]
        .iter()
        .map(|r| r.json()["data"]["jobId"].as_str().unwrap().to_owned())
        .collect();
    assert!(!jobs.contains(&while_suspended.to_string()));
    hooks
        .deliveries_until(&test, &endpoint, |r| {
            r.len() == 6 && r.iter().all(|d| d["status"] == "delivered")
        })
        .await;
}

/// A receiver that answers every request `200` with `{"ok":true}` and then closes the
/// connection without `Content-Length` and without TLS `close_notify`, as some proxies do: the
/// body can only end at the connection's end, which the client reads as an error.
struct AbruptReceiver {
    port: u16,
    ca_path: std::path::PathBuf,
    requests: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl AbruptReceiver {
    async fn start() -> Self {
        use std::sync::atomic::Ordering;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let (acceptor, ca_pem) = crate::support::tls::tls();
        let ca_path = std::env::temp_dir().join(format!("abrupt-ca-{}.pem", Uuid::new_v4()));
        std::fs::write(&ca_path, ca_pem).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counting = std::sync::Arc::clone(&requests);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (acceptor, counting) = (acceptor.clone(), std::sync::Arc::clone(&counting));
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    // One whole request: its head, then as much body as it says it has.
                    let mut read = Vec::new();
                    let mut chunk = [0u8; 4096];
                    loop {
                        let text = String::from_utf8_lossy(&read).to_ascii_lowercase();
                        if let Some(end) = text.find("\r\n\r\n") {
                            let length = text
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|n| n.trim().parse::<usize>().ok())
                                .unwrap_or(0);
                            if read.len() >= end + 4 + length {
                                break;
                            }
                        }
                        match tls.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => read.extend_from_slice(&chunk[..n]),
                        }
                    }
                    counting.fetch_add(1, Ordering::SeqCst);
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                                  connection: close\r\n\r\n{\"ok\":true}";
                    if tls.write_all(answer.as_bytes()).await.is_ok() && tls.flush().await.is_ok() {
                        // The TCP connection closes here without TLS's close_notify.
                        let (tcp, _) = tls.into_inner();
                        drop(tcp);
                    }
                });
            }
        });
        Self {
            port,
            ca_path,
            requests,
            task,
        }
    }

    fn requests(&self) -> usize {
        self.requests.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for AbruptReceiver {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.ca_path);
    }
}

/// The receiver's 2xx is success (the spec, section 6), however the connection ends after
/// it: each delivery is made once, recorded delivered, and counts no failure.
#[tokio::test]
async fn a_2xx_is_delivered_once_though_the_connection_closes_without_close_notify() {
    let abrupt = AbruptReceiver::start().await;
    let ca = abrupt.ca_path.to_string_lossy().into_owned();
    let hooks = Hooks::start(&[
        ("COURIER_WEBHOOK_EXTRA_CA", &ca),
        ("COURIER_WEBHOOK_RETRY_BASE_MS", "5"),
    ])
    .await;
    let test = hooks.merchant.test();
    let (status, endpoint) = status_and_json(
        hooks
            .app
            .request(Method::POST, "/v1/webhooks")
            .auth(&test)
            .json(&json!({"url": format!("https://localhost:{}/hooks", abrupt.port)}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{endpoint}");
    for _ in 0..3 {
        hooks.raise(Environment::Test, EventName::JobBooked).await;
    }
    let records = hooks
        .deliveries_until(&test, &endpoint, |r| {
            r.len() == 3 && r.iter().all(|d| d["status"] == "delivered")
        })
        .await;
    for record in &records {
        assert_eq!(record["attempts"], 1, "{record}");
        assert_eq!(record["response_status_code"], 200, "{record}");
        assert!(record["last_error"].is_null(), "{record}");
    }
    // Nothing is sent again later either.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(abrupt.requests(), 3);
    let listed = hooks
        .endpoint(&test, endpoint["id"].as_str().unwrap())
        .await;
    assert_eq!(listed["consecutive_failures"], 0, "{listed}");
    assert_eq!(listed["status"], "active");
}

#[tokio::test]
async fn a_slow_endpoint_does_not_hold_up_other_merchants() {
    let hooks = Hooks::start(&[
        ("COURIER_WEBHOOK_TIMEOUT_MS", "5000"),
        ("COURIER_WEBHOOK_ENDPOINT_CONCURRENCY", "4"),
    ])
    .await;
    hooks
        .receiver
        .script("/slow", |_| Reply::Slow(Duration::from_secs(3), 200));
    hooks
        .register(&hooks.merchant.test(), "/slow", Value::Null)
        .await;
    let other = hooks.app.create_merchant("Prompt Ltd").await;
    hooks.register(&other.test(), "/fast", Value::Null).await;
    for _ in 0..30 {
        hooks.raise(Environment::Test, EventName::JobBooked).await;
    }
    hooks.receiver.wait_for("/slow", 4, WAIT).await;
    let raised = std::time::Instant::now();
    raise_for(
        &hooks.pool,
        other.merchant_id,
        Environment::Test,
        EventName::JobBooked,
    )
    .await;
    hooks
        .receiver
        .wait_for("/fast", 1, Duration::from_secs(1))
        .await;
    assert!(raised.elapsed() < Duration::from_secs(1));
    // The slow endpoint has only its own lane's worth in flight.
    assert_eq!(hooks.receiver.received("/slow").len(), 4);
}

#[tokio::test]
async fn a_rotated_secret_signs_from_the_moment_it_is_issued() {
    let hooks = Hooks::start(&[]).await;
    let test = hooks.merchant.test();
    let endpoint = hooks.register(&test, "/r", Value::Null).await;
    let old = secret(&endpoint);
    hooks
        .raise(Environment::Test, EventName::JobCancelled)
        .await;
    let first = hooks.receiver.wait_for("/r", 1, WAIT).await;
    assert!(first[0].verifies_with(&old));

    let path = format!(
        "/v1/webhooks/{}/rotate-secret",
        endpoint["id"].as_str().unwrap()
    );
    let (status, rotated) = hooks.call(Method::POST, &path, &test).await;
    assert_eq!(status, 200, "{rotated}");
    let new = secret(&rotated);
    assert!(new.starts_with("whsec_"));
    assert_ne!(new, old);
    let listed = hooks
        .endpoint(&test, endpoint["id"].as_str().unwrap())
        .await;
    assert!(listed["signing_secret"].is_null());

    hooks.raise(Environment::Test, EventName::JobFailed).await;
    let requests = hooks.receiver.wait_for("/r", 2, WAIT).await;
    assert!(requests[1].verifies_with(&new));
    assert!(!requests[1].verifies_with(&old));
}

/// A rotation with an overlap: the new secret is shown once, and until the overlap ends each
/// request carries a signature by each secret (the new one first), so a receiver still on the
/// old secret and one already on the new both accept it; after that only the new one signs.
#[tokio::test]
async fn a_rotation_with_an_overlap_signs_with_both_secrets_until_it_ends() {
    let hooks = Hooks::start(&[]).await;
    let test = hooks.merchant.test();
    let endpoint = hooks.register(&test, "/o", Value::Null).await;
    let old = secret(&endpoint);
    let id = endpoint["id"].as_str().unwrap();
    let path = format!("/v1/webhooks/{id}/rotate-secret");
    let rotate = |body: Value| {
        hooks
            .app
            .request(Method::POST, &path)
            .auth(&test)
            .json(&body)
            .send()
    };
    for overlap in [json!(86_401), json!(-1), json!(1.5), json!("60")] {
        let response = rotate(json!({ "overlap_seconds": overlap })).await.unwrap();
        assert_refusal(response, 422, "webhook.invalid_overlap").await;
    }
    let response = rotate(json!({"overlap": 60})).await.unwrap();
    assert_refusal(response, 422, "request.invalid_body").await;
    let other = hooks.app.create_merchant("Other Ltd").await.test();
    let response = hooks
        .app
        .request(Method::POST, &path)
        .auth(&other)
        .json(&json!({"overlap_seconds": 60}))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 404, "webhook.not_found").await;
    assert_eq!(
        hooks.endpoint(&test, id).await["signing_secret"],
        Value::Null
    );

    let (status, rotated) =
        status_and_json(rotate(json!({"overlap_seconds": 2})).await.unwrap()).await;
    assert_eq!(status, 200, "{rotated}");
    let new = secret(&rotated);
    assert_ne!(new, old);
    let until = rotated["previous_secret_expires_at"]
        .as_str()
        .expect("an overlap's end");
    let until = chrono::DateTime::parse_from_rfc3339(until).unwrap();
    let left = until.signed_duration_since(chrono::Utc::now());
    assert!(
        left > chrono::Duration::zero() && left <= chrono::Duration::seconds(2),
        "{left}"
    );
    assert_eq!(
        hooks.endpoint(&test, id).await["previous_secret_expires_at"],
        rotated["previous_secret_expires_at"]
    );

    hooks.raise(Environment::Test, EventName::JobBooked).await;
    let during = hooks.receiver.wait_for("/o", 1, WAIT).await;
    assert_eq!(during[0].signature_count(), 2, "{}", during[0].signature);
    assert!(during[0].verifies_with(&new) && during[0].verifies_with(&old));

    // Once the overlap is over only the new secret signs.
    eventually(
        "the overlap to end",
        WAIT,
        Duration::from_millis(100),
        || async {
            hooks.endpoint(&test, id).await["previous_secret_expires_at"]
                .is_null()
                .then_some(())
        },
    )
    .await;
    hooks.raise(Environment::Test, EventName::JobFailed).await;
    let after = hooks.receiver.wait_for("/o", 2, WAIT).await;
    assert_eq!(after[1].signature_count(), 1);
    assert!(after[1].verifies_with(&new) && !after[1].verifies_with(&old));

    // A rotation without a body still stops the old secret at once, the overlap's included.
    let (status, again) =
        status_and_json(rotate(json!({"overlap_seconds": 60})).await.unwrap()).await;
    assert_eq!(status, 200, "{again}");
    let (status, last) = hooks.call(Method::POST, &path, &test).await;
    assert_eq!(status, 200, "{last}");
    assert!(last["previous_secret_expires_at"].is_null());
    hooks
        .raise(Environment::Test, EventName::JobCancelled)
        .await;
    let third = hooks.receiver.wait_for("/o", 3, WAIT).await;
    assert_eq!(third[2].signature_count(), 1);
    assert!(third[2].verifies_with(&secret(&last)));
    assert!(!third[2].verifies_with(&secret(&again)));
}

/// Editing an endpoint changes its URL, events and description and nothing else: the same
/// secret signs, deliveries not yet made go to the new URL, and a bad edit changes nothing.
#[tokio::test]
async fn an_endpoint_is_edited_without_a_new_secret() {
    let hooks = Hooks::start(&[]).await;
    let test = hooks.merchant.test();
    let response = hooks
        .app
        .request(Method::POST, "/v1/webhooks")
        .auth(&test)
        .json(&json!({"url": hooks.receiver.url("/before"), "description": "  Orders  "}))
        .send()
        .await
        .unwrap();
    let (status, endpoint) = status_and_json(response).await;
    assert_eq!(status, 201, "{endpoint}");
    assert_eq!(endpoint["description"], "Orders");
    let signing_secret = secret(&endpoint);
    let id = endpoint["id"].as_str().unwrap();
    let path = format!("/v1/webhooks/{id}");
    let patch = |credential: &Credential, body: Value| {
        hooks
            .app
            .request(Method::PATCH, &path)
            .auth(credential)
            .json(&body)
            .send()
    };
    let refusals = [
        (
            json!({"url": "http://example.com/h"}),
            "webhook.invalid_url",
        ),
        (json!({"url": null}), "webhook.invalid_url"),
        (json!({"events": ["job.exploded"]}), "webhook.unknown_event"),
        (
            json!({"description": "x".repeat(501)}),
            "webhook.invalid_description",
        ),
        (json!({"description": 5}), "webhook.invalid_description"),
        (
            json!({"signing_secret": "whsec_mine"}),
            "request.invalid_body",
        ),
        (json!(["url"]), "request.invalid_body"),
        (json!({"events": "job.booked"}), "request.invalid_body"),
    ];
    for (body, code) in refusals {
        assert_refusal(patch(&test, body).await.unwrap(), 422, code).await;
    }
    let response = hooks
        .app
        .request(Method::POST, "/v1/webhooks")
        .auth(&test)
        .json(&json!({"url": hooks.receiver.url("/x"), "description": ["a"]}))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 422, "webhook.invalid_description").await;
    let other = hooks.app.create_merchant("Other Ltd").await.test();
    let response = patch(&other, json!({"description": "mine"})).await.unwrap();
    assert_refusal(response, 404, "webhook.not_found").await;
    let response = patch(&hooks.merchant.live(), json!({"description": "mine"}))
        .await
        .unwrap();
    assert_refusal(response, 404, "webhook.not_found").await;
    assert_eq!(hooks.endpoint(&test, id).await["description"], "Orders");

    let edited = json!({
        "url": hooks.receiver.url("/after"),
        "events": ["job.failed"],
        "description": "Failures to the on-call",
    });
    let (status, after) = status_and_json(patch(&test, edited).await.unwrap()).await;
    assert_eq!(status, 200, "{after}");
    assert_eq!(after["url"], hooks.receiver.url("/after"));
    assert_eq!(after["events"], json!(["job.failed"]));
    assert_eq!(after["description"], "Failures to the on-call");
    assert!(after["signing_secret"].is_null());
    assert_eq!(after["created_at"], endpoint["created_at"]);
    assert_eq!(hooks.endpoint(&test, id).await["url"], after["url"]);

    hooks.raise(Environment::Test, EventName::JobBooked).await;
    hooks.raise(Environment::Test, EventName::JobFailed).await;
    let arrived = hooks.receiver.wait_for("/after", 1, WAIT).await;
    assert_eq!(arrived[0].event, "job.failed");
    assert!(arrived[0].verifies_with(&signing_secret));
    assert!(hooks.receiver.received("/before").is_empty());

    // Only what is given changes; null clears the description and means every event.
    let (status, cleared) = status_and_json(
        patch(&test, json!({"description": null, "events": null}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{cleared}");
    assert!(cleared["description"].is_null());
    assert_eq!(cleared["events"], json!([]));
    assert_eq!(cleared["url"], hooks.receiver.url("/after"));
    let (status, same) = status_and_json(patch(&test, json!({})).await.unwrap()).await;
    assert_eq!(status, 200, "{same}");
    assert_eq!(same["url"], cleared["url"]);
}

/// A failed attempt's record says what went wrong in a few fixed words, never the error chain
/// of the HTTP client (which names the URL and internals).
#[tokio::test]
async fn a_failed_attempt_is_recorded_in_fixed_words() {
    let hooks = Hooks::start(&[]).await;
    let test = hooks.merchant.test();
    // Nothing listens on this port.
    let closed = free_port();
    let (status, endpoint) = status_and_json(
        hooks
            .app
            .request(Method::POST, "/v1/webhooks")
            .auth(&test)
            .json(&json!({"url": format!("https://localhost:{closed}/hook")}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 201, "{endpoint}");
    hooks.raise(Environment::Test, EventName::JobBooked).await;
    let records = hooks
        .deliveries_until(&test, &endpoint, |r| {
            r.first().is_some_and(|d| d["attempts"] == 1)
        })
        .await;
    assert_eq!(
        records[0]["last_error"], "connection refused",
        "{records:?}"
    );
}

#[tokio::test]
async fn private_addresses_are_refused_unless_allowed() {
    let hooks = Hooks::start(&[("COURIER_WEBHOOK_ALLOW_PRIVATE", "false")]).await;
    let test = hooks.merchant.test();
    for url in [
        format!("https://127.0.0.1:{}/x", hooks.receiver.port),
        "https://[::ffff:10.0.0.1]/x".to_owned(),
        "https://169.254.169.254/latest".to_owned(),
    ] {
        let response = hooks
            .app
            .request(Method::POST, "/v1/webhooks")
            .auth(&test)
            .json(&json!({ "url": url }))
            .send()
            .await
            .unwrap();
        assert_refusal(response, 422, "webhook.invalid_url").await;
    }
    // A host name is checked where it resolves: `localhost` is loopback.
    let endpoint = hooks.register(&test, "/x", Value::Null).await;
    hooks.raise(Environment::Test, EventName::JobBooked).await;
    let records = hooks
        .deliveries_until(&test, &endpoint, |r| {
            r.first().is_some_and(|d| d["attempts"] == 1)
        })
        .await;
    assert_eq!(records[0]["status"], "pending");
    let error = records[0]["last_error"].as_str().unwrap();
    assert!(error.contains("no public address"), "{error}");
    assert_eq!(hooks.receiver.total(), 0);
}

// ---- A service of its own, stopped or killed mid-load ------------------------------------

/// A `courier serve` process of its own on a fresh database, with one merchant whose test
/// endpoint is `path` on `receiver`.
struct OwnService {
    env: Vec<(String, String)>,
    base_url: String,
    client: reqwest::Client,
    /// None once a test took it to wait for its exit.
    service: Option<std::process::Child>,
    pool: PgPool,
    merchant: NewMerchant,
    endpoint: Value,
    data_dir: std::path::PathBuf,
}

impl OwnService {
    async fn start(receiver: &Receiver, path: &str, settings: &[(&str, &str)]) -> Self {
        let database_url = fresh_database_url().await;
        let data_dir = std::env::temp_dir().join(format!("courier-own-{}", Uuid::new_v4()));
        let port = free_port();
        let base_url = format!("http://127.0.0.1:{port}");
        let mut env: Vec<(String, String)> = [
            ("DATABASE_URL", database_url.clone()),
            ("COURIER_LISTEN", format!("127.0.0.1:{port}")),
            ("COURIER_DATA_DIR", data_dir.to_string_lossy().into_owned()),
            ("COURIER_SECRET_KEY", "5e".repeat(32)),
            ("COURIER_DB_POOL_SIZE", "6".into()),
            ("COURIER_PLUGIN_INSTANCES", "16".into()),
            ("COURIER_WEBHOOK_ALLOW_PRIVATE", "true".into()),
            (
                "COURIER_WEBHOOK_EXTRA_CA",
                receiver.ca_path.to_string_lossy().into_owned(),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        env.extend(
            settings
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        let client = reqwest::Client::new();
        let service = spawn_service(&env);
        wait_until_ready(&client, &base_url).await;

        let pool = PgPool::connect(&database_url).await.unwrap();
        let key = courier_core::infra::secrets::SecretKey::from_hex(&"5e".repeat(32)).unwrap();
        let authenticator = courier_core::auth::Authenticator::new(pool.clone(), &key);
        let merchant = courier_core::merchants::Merchants::new(pool.clone(), authenticator.clone())
            .create("Own Service Ltd")
            .await
            .unwrap();
        let response = client
            .post(format!("{base_url}/v1/webhooks"))
            .auth(&merchant.test())
            .json(&json!({"url": receiver.url(path)}))
            .send()
            .await
            .unwrap();
        let (status, endpoint) = status_and_json(response).await;
        assert_eq!(status, 201, "{endpoint}");
        Self {
            env,
            base_url,
            client,
            service: Some(service),
            pool,
            merchant,
            endpoint,
            data_dir,
        }
    }
}

impl Drop for OwnService {
    fn drop(&mut self) {
        if let Some(mut service) = self.service.take() {
            let _ = service.kill();
            let _ = service.wait();
        }
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

#[tokio::test]
async fn a_service_killed_mid_load_loses_no_event() {
    const EVENTS: usize = 300;
    let receiver = Receiver::start().await;
    receiver.script("/load", |_| Reply::Slow(Duration::from_millis(5), 200));
    let mut own = OwnService::start(
        &receiver,
        "/load",
        &[
            ("COURIER_WEBHOOK_TIMEOUT_MS", "1000"),
            ("COURIER_WEBHOOK_RETRY_BASE_MS", "50"),
        ],
    )
    .await;
    let signing_secret = secret(&own.endpoint);
    let pool = own.pool.clone();
    let merchant = &own.merchant;

    // Events keep coming while the service dies and comes back.
    let raising = {
        let pool = pool.clone();
        let merchant_id = merchant.merchant_id;
        tokio::spawn(async move {
            let mut jobs = Vec::with_capacity(EVENTS);
            for _ in 0..EVENTS {
                jobs.push(
                    raise_for(&pool, merchant_id, Environment::Test, EventName::JobBooked).await,
                );
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            jobs
        })
    };
    receiver.wait_for("/load", 40, WAIT).await;
    let mut killed = own.service.take().unwrap();
    killed.kill().unwrap(); // SIGKILL
    killed.wait().unwrap();
    let at_kill = receiver.total();
    tokio::time::sleep(Duration::from_millis(200)).await;
    own.service = Some(spawn_service(&own.env));
    wait_until_ready(&own.client, &own.base_url).await;
    let jobs: HashSet<String> = raising.await.unwrap().iter().map(Uuid::to_string).collect();

    let what = format!("all {EVENTS} events at the receiver ({at_kill} arrived before the kill)");
    let delivery_of = eventually(
        &what,
        Duration::from_secs(30),
        Duration::from_millis(100),
        || async {
            // Every request so far, in the order they arrived.
            let mut delivery_of: HashMap<String, String> = HashMap::new();
            for request in receiver.received("/load") {
                assert!(request.verifies_with(&signing_secret));
                let job = request.json()["data"]["jobId"].as_str().unwrap().to_owned();
                // A duplicate is only ever a retry of the same delivery.
                let known = delivery_of.entry(job).or_insert(request.delivery.clone());
                assert_eq!(*known, request.delivery);
            }
            (delivery_of.len() >= EVENTS).then_some(delivery_of)
        },
    )
    .await;
    let arrived: HashSet<String> = delivery_of.keys().cloned().collect();
    assert_eq!(arrived, jobs);
    assert!(at_kill < EVENTS, "the kill came mid-load");
}

/// SIGTERM while deliveries are in flight: the service stops through its one graceful path.
/// Every attempt in flight is finished and recorded, every queued claim is given back, and no
/// delivery is left claimed by the stopped process (a worker aborted mid-attempt would leave
/// its claim behind until the lease ran out).
#[tokio::test]
async fn a_stop_under_load_finishes_or_gives_back_every_delivery() {
    const EVENTS: usize = 200;
    let receiver = Receiver::start().await;
    // Slow enough that attempts are in flight and more are queued when the stop comes.
    receiver.script("/slow", |_| Reply::Slow(Duration::from_millis(400), 200));
    let mut own = OwnService::start(
        &receiver,
        "/slow",
        &[("COURIER_WEBHOOK_ENDPOINT_CONCURRENCY", "4")],
    )
    .await;
    let pool = own.pool.clone();
    let merchant = &own.merchant;
    for _ in 0..EVENTS {
        raise_for(
            &pool,
            merchant.merchant_id,
            Environment::Test,
            EventName::JobBooked,
        )
        .await;
    }
    receiver.wait_for("/slow", 4, WAIT).await;

    // SIGTERM, as an operator or an orchestrator stops it.
    let stopped_at = std::time::Instant::now();
    let mut service = own.service.take().unwrap();
    let pid = i32::try_from(service.id()).unwrap();
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = tokio::task::spawn_blocking(move || service.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success(), "a graceful stop exits cleanly: {status}");
    assert!(
        stopped_at.elapsed() < Duration::from_secs(10),
        "the stop waits for attempts in flight, not for the backlog"
    );

    let claimed: i64 =
        sqlx::query_scalar("SELECT count(*) FROM webhook_deliveries WHERE lease_token IS NOT NULL")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(
        claimed, 0,
        "no delivery is left claimed by the stopped service"
    );
    let delivered: i64 =
        sqlx::query_scalar("SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(
        (delivered as usize) < EVENTS,
        "the stop came mid-load ({delivered} of {EVENTS} delivered)"
    );
}

/// A delivered body is what the API description says webhooks carry: a described event, the
/// envelope's fields exactly, and only described fields in `data`.
fn assert_described(body: &Value) {
    let document = courier_api::openapi_document();
    let event = body["type"].as_str().unwrap();
    assert!(
        document["webhooks"].get(event).is_some(),
        "{event} is not described"
    );
    let schemas = &document["components"]["schemas"];
    let names = |schema: &Value| -> Vec<String> {
        let mut names: Vec<String> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        names.sort_unstable();
        names
    };
    let mut sent: Vec<String> = body.as_object().unwrap().keys().cloned().collect();
    sent.sort_unstable();
    assert_eq!(sent, names(&schemas["EventEnvelope"]));
    let described = names(&schemas["EventData"]);
    for field in body["data"].as_object().unwrap().keys() {
        assert!(described.contains(field), "data.{field} is not described");
    }
}

/// Quotes the demo journey and books it as `credential`; returns the job's id.
async fn book_demo_job(app: &TestApp, credential: &Credential) -> String {
    let quote = app
        .request(Method::POST, "/v1/quotes")
        .auth(credential)
        .json(&crate::quotes::journey(None))
        .send()
        .await
        .unwrap();
    let (status, quote) = status_and_json(quote).await;
    assert_eq!(status, 201, "{quote}");
    let booked = app
        .request(Method::POST, "/v1/jobs")
        .auth(credential)
        .header("Idempotency-Key", Uuid::new_v4().to_string())
        .json(&crate::jobs::booking_body(&quote))
        .send()
        .await
        .unwrap();
    let (status, job) = status_and_json(booked).await;
    assert_eq!(status, 201, "{job}");
    job["id"].as_str().unwrap().to_owned()
}

/// One merchant with the most endpoints, every one answering after 9 s, books 500 jobs; its
/// backlog takes only its share of the send slots, and another merchant's events keep
/// arriving within a second.
#[tokio::test]
async fn one_merchants_backlog_does_not_delay_another_merchants_events() {
    let hooks = Hooks::start(&[
        ("COURIER_RATE_LIMIT_QUOTES_PER_MINUTE", "100000"),
        ("COURIER_RATE_LIMIT_BOOKINGS_PER_MINUTE", "100000"),
    ])
    .await;
    let flooder = hooks.merchant.test();
    crate::support::attach_working_card(&hooks.app, &flooder).await;
    for n in 0..16 {
        let path = format!("/slow/{n}");
        hooks
            .receiver
            .script(&path, |_| Reply::Slow(Duration::from_secs(9), 200));
        hooks.register(&flooder, &path, Value::Null).await;
    }
    let other = hooks.app.create_merchant("Punctual Ltd").await;
    let punctual = other.test();
    crate::support::attach_working_card(&hooks.app, &punctual).await;
    hooks.register(&punctual, "/prompt", Value::Null).await;

    let book_a_quarter = || async {
        for _ in 0..125 {
            book_demo_job(&hooks.app, &flooder).await;
        }
    };
    tokio::join!(
        book_a_quarter(),
        book_a_quarter(),
        book_a_quarter(),
        book_a_quarter()
    );
    let slow_paths = |receiver: &Receiver| {
        (0..16)
            .map(|n| receiver.received(&format!("/slow/{n}")).len())
            .sum::<usize>()
    };
    hooks.receiver.wait_for("/slow/15", 1, WAIT).await;

    // While the backlog waits, the other merchant books 20 jobs.
    let mut delays = Vec::new();
    for _ in 0..20 {
        let job = book_demo_job(&hooks.app, &punctual).await;
        let booked_at = std::time::Instant::now();
        let arrived = eventually(
            "the punctual merchant's job.booked",
            WAIT,
            Duration::from_millis(5),
            || async {
                hooks
                    .receiver
                    .received("/prompt")
                    .into_iter()
                    .find(|r| r.json()["data"]["jobId"] == job.as_str())
                    .map(|r| r.at)
            },
        )
        .await;
        delays.push(arrived.saturating_duration_since(booked_at));
    }
    delays.sort();
    let p99 = delays[delays.len() * 99 / 100];
    eprintln!(
        "fairness: the punctual merchant's events arrived after p50 {:?}, p99 {:?}, max {:?}",
        delays[delays.len() / 2],
        p99,
        delays.last().unwrap()
    );
    assert!(p99 < Duration::from_secs(1), "p99 {p99:?}");
    // The flooding merchant holds its share of the slots (64 by default), not all of them:
    // none of its slow requests has been answered yet.
    assert_eq!(slow_paths(&hooks.receiver), 64);
}

/// Four endpoints of one merchant and 2,000 events: every endpoint receives every event once,
/// and an event reaches an endpoint twice only where its earlier attempt failed.
#[tokio::test]
async fn four_endpoints_each_receive_every_one_of_2000_events() {
    let hooks = Hooks::start(&[("COURIER_WEBHOOK_RETRY_BASE_MS", "50")]).await;
    let test = hooks.merchant.test();
    let paths = ["/four/0", "/four/1", "/four/2", "/four/3"];
    for path in paths {
        hooks.register(&test, path, Value::Null).await;
    }
    // The first 10 requests to one endpoint fail (fewer than suspend it).
    hooks.receiver.script(paths[0], |nth| {
        Reply::Status(if nth < 10 { 503 } else { 200 })
    });
    let mut jobs = HashSet::new();
    for _ in 0..20 {
        let mut tx = hooks.pool.begin().await.unwrap();
        for _ in 0..100 {
            let (job, event) = booked_event(hooks.merchant.merchant_id);
            courier_core::events::record(&mut tx, &event).await.unwrap();
            jobs.insert(job.to_string());
        }
        tx.commit().await.unwrap();
        courier_core::events::announce(&hooks.pool).await.unwrap();
    }
    eventually(
        "every event at every endpoint",
        Duration::from_secs(60),
        Duration::from_millis(50),
        || async {
            let complete = paths.iter().all(|path| {
                let ok = hooks.receiver.received(path);
                let distinct: HashSet<String> = ok
                    .iter()
                    .map(|r| r.json()["data"]["jobId"].as_str().unwrap().to_owned())
                    .collect();
                distinct.len() == jobs.len()
            });
            complete.then_some(())
        },
    )
    .await;
    let arrivals = hooks.receiver.arrivals_since(0);
    assert!(arrivals.len() >= 8000);
    for (n, path) in paths.iter().enumerate() {
        let received = hooks.receiver.received(path);
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (nth, request) in received.iter().enumerate() {
            assert_eq!(
                request.json()["data"]["jobId"]
                    .as_str()
                    .map(|j| jobs.contains(j)),
                Some(true)
            );
            if let Some(first) = seen.insert(request.delivery.clone(), nth) {
                // A second arrival: its first attempt must have been answered with a failure.
                assert!(
                    n == 0 && first < 10,
                    "{path}: delivery {} arrived twice",
                    request.delivery
                );
            }
        }
        assert_eq!(seen.len(), 2000, "{path}");
        let expected = if n == 0 { 2010 } else { 2000 };
        assert_eq!(received.len(), expected, "{path}");
    }
}

/// A `job.booked` event for a new job id of `merchant_id`.
fn booked_event(merchant_id: Uuid) -> (Uuid, NewEvent) {
    let job = Uuid::new_v4();
    let event = NewEvent {
        name: EventName::JobBooked,
        merchant_id,
        environment: Environment::Test,
        occurred_at: chrono::Utc::now(),
        job: Some(JobFacts {
            id: job,
            reference: format!("CR-{}", &job.to_string()[..8]),
            market: "demo".into(),
            currency: "USD".into(),
            price_amount_minor: 1250,
            tax_amount_minor: 250,
            scheduled_for: None,
        }),
        details: EventDetails::default(),
    };
    (job, event)
}

/// One of a merchant's four endpoints answers after 9 s: it holds only its own share of the
/// send slots, and the other three keep receiving each event within moments.
#[tokio::test]
async fn one_slow_endpoint_of_four_does_not_slow_the_other_three() {
    let hooks = Hooks::start(&[]).await;
    let test = hooks.merchant.test();
    let prompt = ["/quick/0", "/quick/1", "/quick/2"];
    hooks
        .receiver
        .script("/sluggish", |_| Reply::Slow(Duration::from_secs(9), 200));
    hooks.register(&test, "/sluggish", Value::Null).await;
    for path in prompt {
        hooks.register(&test, path, Value::Null).await;
    }
    let mut raised = Vec::new();
    for _ in 0..100 {
        let job = hooks.raise(Environment::Test, EventName::JobBooked).await;
        raised.push((job.to_string(), std::time::Instant::now()));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut delays = Vec::new();
    for path in prompt {
        let received = hooks.receiver.wait_for(path, raised.len(), WAIT).await;
        let arrived: HashMap<String, std::time::Instant> = received
            .iter()
            .map(|r| (r.json()["data"]["jobId"].as_str().unwrap().to_owned(), r.at))
            .collect();
        for (job, at) in &raised {
            delays.push(arrived[job].saturating_duration_since(*at));
        }
    }
    delays.sort();
    let p99 = delays[delays.len() * 99 / 100];
    eprintln!(
        "beside a 9 s endpoint, the other three received each event after p50 {:?}, p99 {:?}",
        delays[delays.len() / 2],
        p99
    );
    assert!(p99 < Duration::from_millis(500), "p99 {p99:?}");
    // The slow endpoint has its own share in flight (16 by default), no more.
    assert_eq!(hooks.receiver.received("/sluggish").len(), 16);
}

/// A process with delivery off records events and serves the API but sends nothing; another
/// process on the same database, with delivery on, sends what it recorded.
#[tokio::test]
async fn a_process_with_delivery_off_leaves_its_events_to_another() {
    let hooks = Hooks::start(&[
        ("COURIER_WEBHOOK_DELIVERY", "false"),
        ("COURIER_WEBHOOK_POLL_MS", "50"),
    ])
    .await;
    hooks
        .register(&hooks.merchant.test(), "/later", Value::Null)
        .await;
    let job = hooks.raise(Environment::Test, EventName::JobBooked).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(hooks.receiver.total(), 0);
    let (ca, url) = (
        hooks.receiver.ca_path.to_string_lossy().into_owned(),
        hooks.app.database_url.clone(),
    );
    let delivering = TestApp::spawn_with(move |name| match name {
        "DATABASE_URL" => Some(url.clone()),
        "COURIER_WEBHOOK_EXTRA_CA" => Some(ca.clone()),
        "COURIER_WEBHOOK_ALLOW_PRIVATE" => Some("true".into()),
        _ => None,
    })
    .await;
    let received = hooks.receiver.wait_for("/later", 1, WAIT).await;
    assert_eq!(received[0].json()["data"]["jobId"], job.to_string());
    delivering.stop().await;
}
