//! Webhook delivery benchmark: the real service (fan-out, shaper, signer, HTTPS client) against
//! a local HTTPS receiver that answers 200 at once.
//!
//! - Throughput: events recorded as fast as possible (100 per transaction) until every one has
//!   arrived; deliveries per second from the first commit to the last arrival.
//! - Latency: events recorded one per transaction at a steady rate; per event, the time from
//!   its commit to its first attempt arriving at the receiver (p50, p99, max).
//!
//! The bench records events from outside the service's own code, so it wakes the fan-out as
//! such recorders do: `events::announce` (a `NOTIFY`) after each commit. That is one round trip
//! and a listener hop more than an event the service commits itself (it rings its bell in
//! memory), so the latency measured here is an upper bound.
//!
//! `cargo bench -p courier --bench webhooks` (uses `DATABASE_URL` when set, else a private
//! embedded cluster). `WEBHOOK_BENCH_EVENTS` (default 20000) and `WEBHOOK_BENCH_RATE`
//! (default 500 events/s for 10 s) change the loads.

#[path = "../../../tests/e2e/support/receiver.rs"]
#[allow(dead_code)]
mod receiver;
#[path = "../../../tests/e2e/support/tls.rs"]
mod tls;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use chrono::Utc;
use sqlx::{Connection, PgPool};
use tokio::sync::oneshot;
use uuid::Uuid;

use courier_core::config::Config;
use courier_domain::Environment;
use courier_domain::event::{EventDetails, EventName, JobFacts, NewEvent};

fn event(merchant_id: Uuid) -> (Uuid, NewEvent) {
    let id = Uuid::new_v4();
    let event = NewEvent {
        name: EventName::JobBooked,
        merchant_id,
        environment: Environment::Test,
        occurred_at: Utc::now(),
        job: Some(JobFacts {
            id,
            reference: "CR-BENCH".into(),
            market: "demo".into(),
            currency: "USD".into(),
            price_amount_minor: 1250,
            tax_amount_minor: 250,
            scheduled_for: None,
        }),
        details: EventDetails::default(),
    };
    (id, event)
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A database for the run: `DATABASE_URL`, or a new one in a private embedded cluster.
async fn database(
    root: &std::path::Path,
) -> (String, Option<courier_core::infra::db::EmbeddedPostgres>) {
    if let Ok(url) = std::env::var("DATABASE_URL") {
        return (url, None);
    }
    let pg_root = root.join("pg");
    let cluster = tokio::task::spawn_blocking(move || {
        courier_core::infra::db::EmbeddedPostgres::start(&pg_root)
    })
    .await
    .unwrap()
    .expect("starting PostgreSQL (install it or set DATABASE_URL)");
    let mut admin = sqlx::PgConnection::connect(&cluster.url("postgres"))
        .await
        .unwrap();
    sqlx::query("CREATE DATABASE webhook_bench")
        .execute(&mut admin)
        .await
        .unwrap();
    admin.close().await.unwrap();
    (cluster.url("webhook_bench"), Some(cluster))
}

/// Arrival time of each job's first attempt.
fn first_arrivals(receiver: &receiver::Receiver) -> HashMap<String, Instant> {
    let mut first = HashMap::new();
    for request in receiver.received("/bench") {
        let job = request.json()["data"]["jobId"].as_str().unwrap().to_owned();
        first
            .entry(job)
            .and_modify(|at: &mut Instant| *at = (*at).min(request.at))
            .or_insert(request.at);
    }
    first
}

async fn wait_for_total(receiver: &receiver::Receiver, count: usize, within: Duration) {
    let deadline = Instant::now() + within;
    while receiver.total() < count {
        assert!(
            Instant::now() < deadline,
            "only {} of {count} deliveries arrived",
            receiver.total()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

#[tokio::main]
async fn main() {
    let events = env_number("WEBHOOK_BENCH_EVENTS", 20_000);
    let rate = env_number("WEBHOOK_BENCH_RATE", 500);
    let root = std::env::temp_dir().join(format!("courier-webhook-bench-{}", Uuid::new_v4()));
    let (database_url, cluster) = database(&root).await;

    let receiver = receiver::Receiver::start().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let ca = receiver.ca_path.to_string_lossy().into_owned();
    let data_dir = root.join("data").to_string_lossy().into_owned();
    let url = database_url.clone();
    let config = Config::from_lookup(move |name| match name {
        "DATABASE_URL" => Some(url.clone()),
        "COURIER_DATA_DIR" => Some(data_dir.clone()),
        "COURIER_SECRET_KEY" => Some("5e".repeat(32)),
        "COURIER_WEBHOOK_ALLOW_PRIVATE" => Some("true".into()),
        "COURIER_WEBHOOK_EXTRA_CA" => Some(ca.clone()),
        "COURIER_SANDBOX_SPEED" => Some("0".into()),
        "COURIER_DRAIN_MS" => Some("0".into()),
        _ => None,
    })
    .unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(courier::app::run(config, listener, async {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::new();
    let base = format!("http://{address}");
    while client.get(format!("{base}/readyz")).send().await.is_err() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let pool = PgPool::connect(&database_url).await.unwrap();
    let key = courier_core::infra::secrets::SecretKey::from_hex(&"5e".repeat(32)).unwrap();
    let authenticator = courier_core::auth::Authenticator::new(pool.clone(), &key);
    let merchant = courier_core::merchants::create(&pool, &authenticator, "Bench Ltd")
        .await
        .unwrap();
    let created = client
        .post(format!("{base}/v1/webhooks"))
        .basic_auth(&merchant.test_key, Some(&merchant.test_secret))
        .json(&serde_json::json!({"url": receiver.url("/bench")}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);

    // Warm-up: connections, the shaper, the TLS session.
    for _ in 0..200 {
        let mut tx = pool.begin().await.unwrap();
        courier_core::events::record(&mut tx, &event(merchant.merchant_id).1)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        courier_core::events::announce(&pool).await.unwrap();
    }
    wait_for_total(&receiver, 200, Duration::from_secs(30)).await;

    // Throughput.
    let before = receiver.total();
    let started = Instant::now();
    for _ in 0..events.div_ceil(100) {
        let mut tx = pool.begin().await.unwrap();
        for _ in 0..100 {
            courier_core::events::record(&mut tx, &event(merchant.merchant_id).1)
                .await
                .unwrap();
        }
        tx.commit().await.unwrap();
        courier_core::events::announce(&pool).await.unwrap();
    }
    let recorded_in = started.elapsed();
    let total = events.div_ceil(100) * 100;
    wait_for_total(&receiver, before + total, Duration::from_secs(300)).await;
    let elapsed = started.elapsed();
    println!(
        "throughput: {total} deliveries in {:.2} s = {:.0} deliveries/s (recording took {:.2} s)",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64(),
        recorded_in.as_secs_f64()
    );

    // Latency at a steady rate.
    let count = rate * 10;
    let mut committed: Vec<(String, Instant)> = Vec::with_capacity(count);
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    let before = receiver.total();
    for _ in 0..count {
        ticks.tick().await;
        let (job, event) = event(merchant.merchant_id);
        let mut tx = pool.begin().await.unwrap();
        courier_core::events::record(&mut tx, &event).await.unwrap();
        tx.commit().await.unwrap();
        courier_core::events::announce(&pool).await.unwrap();
        committed.push((job.to_string(), Instant::now()));
    }
    wait_for_total(&receiver, before + count, Duration::from_secs(60)).await;
    let arrivals = first_arrivals(&receiver);
    let mut latencies: Vec<Duration> = committed
        .iter()
        .map(|(job, at)| arrivals[job].saturating_duration_since(*at))
        .collect();
    latencies.sort_unstable();
    println!(
        "latency at {rate} events/s ({count} events), commit to first attempt: \
         p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        percentile(&latencies, 0.50).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3,
    );

    pool.close().await;
    let _ = stop.send(());
    let _ = server.await;
    if let Some(cluster) = cluster {
        let _ = cluster.stop();
    }
    let _ = std::fs::remove_dir_all(&root);
}
