//! Customer texts: the outbox, the HTTP SMS gateway, retries without duplicates, and where
//! texts may go. The gateway is a local HTTP receiver.

use std::time::Duration;

use courier_core::texts::{CustomerTexts, TextsConfig, TrackingText};
use courier_domain::Environment;
use courier_domain::text::{Disposition, SkipReason};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use reqwest::Method;
use serde_json::json;

use crate::fulfilment::{Floor, PICKUP};
use crate::jobs::{Booking, booking_body, key};
use crate::quotes::journey;
use crate::support::eventually;
use crate::support::receiver::{Receiver, Reply};

const SAUDI_MOBILE: &str = "+966501234567";
const LIECHTENSTEIN: &str = "+4232366000";

/// A booked test-environment job: the row texts hang on.
async fn booked_job() -> (Booking, Uuid) {
    let booking = Booking::start().await;
    let quote = booking.quote(journey(None)).await;
    let (status, job) = booking.book(&key(), &booking_body(&quote)).await;
    assert_eq!(status, 201, "{job}");
    let id = job["id"].as_str().unwrap().parse().unwrap();
    (booking, id)
}

fn config_for(gateway: Option<&Receiver>) -> TextsConfig {
    courier_core::infra::settings::from_lookup::<TextsConfig>(|name| match (name, gateway) {
        ("COURIER_SMS_GATEWAY_URL", Some(gateway)) => Some(gateway.url("/send")),
        ("COURIER_SMS_GATEWAY_USERNAME", Some(_)) => Some("acct".into()),
        ("COURIER_SMS_GATEWAY_PASSWORD", Some(_)) => Some("gateway-pass".into()),
        ("COURIER_SMS_RETRY_BASE_MS", _) => Some("20".into()),
        ("COURIER_SMS_ATTEMPTS", _) => Some("3".into()),
        _ => None,
    })
    .unwrap()
}

async fn record(
    texts: &CustomerTexts,
    pool: &PgPool,
    job_id: Uuid,
    environment: Environment,
    phone: &str,
) -> Disposition {
    let mut tx = pool.begin().await.unwrap();
    let disposition = texts
        .record_tracking_link(
            &mut tx,
            &TrackingText {
                job_id,
                environment,
                reference: "CR-TEST-1",
                tracking_url: "https://courier.example/track/abc",
                to_phone: phone,
                sender: Some("ShopName"),
                text_countries: &["SA".to_owned()],
            },
            courier_core::infra::clock::now(),
        )
        .await
        .unwrap();
    tx.commit().await.unwrap();
    disposition
}

async fn text_row(pool: &PgPool, job_id: Uuid) -> (String, Option<String>, i32) {
    sqlx::query_as("SELECT status, skip_reason, attempts FROM customer_texts WHERE job_id = $1")
        .bind(job_id)
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn notified_at(booking: &Booking, job_id: Uuid) -> Value {
    let (status, job) = booking.get(&format!("/v1/jobs/{job_id}")).await;
    assert_eq!(status, 200);
    job["customer_notified_at"].clone()
}

/// Runs two senders, as two instances would, until nothing is queued.
async fn send_until_settled(pool: &PgPool, senders: [&CustomerTexts; 2]) {
    eventually(
        "no text left queued",
        Duration::from_secs(2),
        Duration::from_millis(10),
        || async {
            let (a, b) = tokio::join!(senders[0].send_due(), senders[1].send_due());
            a.unwrap();
            b.unwrap();
            let queued: i64 =
                sqlx::query_scalar("SELECT count(*) FROM customer_texts WHERE status = 'queued'")
                    .fetch_one(pool)
                    .await
                    .unwrap();
            (queued == 0).then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn a_live_text_reaches_the_gateway_once_through_a_failure() {
    let (booking, job_id) = booked_job().await;
    let pool = booking.quoting.app.pool().await;
    let gateway = Receiver::start_plain().await;
    gateway.script("/send", |n| Reply::Status(if n == 0 { 503 } else { 200 }));
    let texts = CustomerTexts::new(pool.clone(), config_for(Some(&gateway))).unwrap();
    let other_instance = CustomerTexts::new(pool.clone(), config_for(Some(&gateway))).unwrap();
    assert_eq!(
        record(&texts, &pool, job_id, Environment::Live, SAUDI_MOBILE).await,
        Disposition::Send
    );
    // Asking again (a repeated collection, a restart) records nothing more.
    record(&texts, &pool, job_id, Environment::Live, SAUDI_MOBILE).await;
    assert_eq!(notified_at(&booking, job_id).await, Value::Null);

    send_until_settled(&pool, [&texts, &other_instance]).await;

    let sent = gateway.received("/send");
    assert_eq!(sent.len(), 2, "one failed attempt, one accepted");
    assert_eq!(sent[0].idempotency_key, sent[1].idempotency_key);
    assert!(!sent[0].idempotency_key.is_empty());
    assert!(sent[0].authorization.starts_with("Basic "));
    let body = sent[1].json();
    assert_eq!(body["to"], SAUDI_MOBILE);
    assert_eq!(body["from"], "ShopName");
    assert_eq!(body["reference"], sent[1].idempotency_key.as_str());
    let message = body["body"].as_str().unwrap();
    assert!(
        message.contains("https://courier.example/track/abc"),
        "{message}"
    );
    assert!(message.contains("CR-TEST-1"), "{message}");
    assert_eq!(text_row(&pool, job_id).await, ("sent".into(), None, 2));
    assert!(notified_at(&booking, job_id).await.is_string());
}

#[tokio::test]
async fn a_refused_text_is_not_retried_and_the_job_is_not_marked() {
    let (booking, job_id) = booked_job().await;
    let pool = booking.quoting.app.pool().await;
    let gateway = Receiver::start_plain().await;
    gateway.script("/send", |_| Reply::Status(400));
    let texts = CustomerTexts::new(pool.clone(), config_for(Some(&gateway))).unwrap();
    record(&texts, &pool, job_id, Environment::Live, SAUDI_MOBILE).await;
    send_until_settled(&pool, [&texts, &texts]).await;
    assert_eq!(gateway.received("/send").len(), 1);
    assert_eq!(text_row(&pool, job_id).await.0, "failed");
    assert_eq!(notified_at(&booking, job_id).await, Value::Null);
}

#[tokio::test]
async fn an_unreachable_gateway_is_tried_a_bounded_number_of_times() {
    let (booking, job_id) = booked_job().await;
    let pool = booking.quoting.app.pool().await;
    let gateway = Receiver::start_plain().await;
    gateway.script("/send", |_| Reply::Status(503));
    let texts = CustomerTexts::new(pool.clone(), config_for(Some(&gateway))).unwrap();
    record(&texts, &pool, job_id, Environment::Live, SAUDI_MOBILE).await;
    send_until_settled(&pool, [&texts, &texts]).await;
    // COURIER_SMS_ATTEMPTS = 3.
    assert_eq!(gateway.received("/send").len(), 3);
    assert_eq!(text_row(&pool, job_id).await, ("failed".into(), None, 3));
}

#[tokio::test]
async fn texts_go_only_where_they_should() {
    let (booking, job_id) = booked_job().await;
    let pool = booking.quoting.app.pool().await;
    let gateway = Receiver::start_plain().await;
    let texts = CustomerTexts::new(pool.clone(), config_for(Some(&gateway))).unwrap();
    // A number outside the market's text countries.
    assert_eq!(
        record(&texts, &pool, job_id, Environment::Live, LIECHTENSTEIN).await,
        Disposition::Skip(SkipReason::CountryNotSupported)
    );
    assert_eq!(
        text_row(&pool, job_id).await,
        ("skipped".into(), Some("country_not_supported".into()), 0)
    );

    // The sandbox: recorded as what would have gone, with the time, and never sent.
    let (sandbox, sandbox_job) = booked_job().await;
    let sandbox_pool = sandbox.quoting.app.pool().await;
    let texts = CustomerTexts::new(sandbox_pool.clone(), config_for(Some(&gateway))).unwrap();
    assert_eq!(
        record(
            &texts,
            &sandbox_pool,
            sandbox_job,
            Environment::Test,
            SAUDI_MOBILE
        )
        .await,
        Disposition::Simulate
    );
    assert_eq!(text_row(&sandbox_pool, sandbox_job).await.0, "simulated");
    assert!(notified_at(&sandbox, sandbox_job).await.is_string());

    // Live without a gateway configured.
    let (unconfigured, live_job) = booked_job().await;
    let unconfigured_pool = unconfigured.quoting.app.pool().await;
    let texts = CustomerTexts::new(unconfigured_pool.clone(), config_for(None)).unwrap();
    assert_eq!(
        record(
            &texts,
            &unconfigured_pool,
            live_job,
            Environment::Live,
            SAUDI_MOBILE
        )
        .await,
        Disposition::Skip(SkipReason::NoGateway)
    );
    texts.send_due().await.unwrap();
    assert_eq!(gateway.total(), 0, "nothing reached the gateway");
}

#[tokio::test]
async fn collecting_a_sandbox_job_records_its_text_and_sends_nothing() {
    let gateway = Receiver::start_plain().await;
    let gateway_url = gateway.url("/send");
    let floor = Floor::start(&[
        ("COURIER_SMS_GATEWAY_URL", gateway_url.as_str()),
        ("COURIER_SCHEDULER_INTERVAL_MS", "20"),
    ])
    .await;
    let merchant_id = floor.merchant.merchant_id;
    let (status, settings) = floor
        .admin_call(
            Method::PATCH,
            &format!("/merchants/{merchant_id}/settings"),
            Some(json!({"notify_customer": true, "sms_sender_name": "Florist"})),
        )
        .await;
    assert_eq!(status, 200, "{settings}");
    let rider = floor.rider("Tess Texter", "car", Some(PICKUP)).await;
    let job = floor.assigned_job(&rider).await;
    let id = job["id"].as_str().unwrap();
    assert_eq!(floor.job(&job).await["customer_notified_at"], Value::Null);
    let (status, _) = floor
        .courier_call(&rider, Method::POST, &format!("/jobs/{id}/collected"), None)
        .await;
    assert_eq!(status, 200);

    let detail = floor.job(&job).await;
    assert!(detail["customer_notified_at"].is_string(), "{detail}");
    let pool = floor.app.pool().await;
    let (status, sender, body): (String, String, String) =
        sqlx::query_as("SELECT status, sender, body FROM customer_texts WHERE job_id = $1")
            .bind(Uuid::parse_str(id).unwrap())
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!((status.as_str(), sender.as_str()), ("simulated", "Florist"));
    assert!(
        body.contains(detail["tracking_url"].as_str().unwrap()),
        "{body}"
    );
    // The sender has had many chances to send by now; the sandbox never texts.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(gateway.total(), 0);
}
