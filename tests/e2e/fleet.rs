//! The service as a fleet (`support/fleet.rs`: a primary and a synchronous standby, three
//! instances, HAProxy), under a load of quotes, bookings with their own idempotency keys, and
//! job reads, with a webhook endpoint receiving `job.booked`:
//! - a rolling restart fails no request;
//! - an instance killed under load loses no acknowledged booking or event;
//! - a failover of the database primary loses no acknowledged booking, answers the gap with
//!   503 and `Retry-After`, and serves again within 10 s of the promotion.
//!
//! Each prints its figures (requests sent, failed by status, bookings acknowledged and found,
//! events delivered and duplicated); BENCHMARKS.md records them. Skipped, saying why, where
//! HAProxy or PostgreSQL's server binaries are missing.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::quotes::journey;
use crate::resilience::stop_body;
use crate::support::fleet::{Fleet, SECRET_KEY_HEX, missing_tools};
use crate::support::receiver::Receiver;
use crate::support::{Authed, Credential, MerchantCredentials};

const CLIENTS: usize = 4;
/// How long each scenario's load runs at least.
const LOAD_FOR: Duration = Duration::from_secs(20);
const ENDPOINT: &str = "/fleet";

/// What the clients saw.
#[derive(Debug, Default)]
struct Tally {
    sent: usize,
    by_status: BTreeMap<u16, usize>,
    connection_errors: usize,
    /// 503 answers without `Retry-After`.
    unavailable_without_retry_after: usize,
    /// 503 answers whose code was not `service.database_unavailable` or `service.draining`.
    unavailable_codes: BTreeMap<String, usize>,
    /// Job ids of bookings answered 201, in order.
    acknowledged: Vec<String>,
    /// Bookings that needed more than one try of their key.
    retried_bookings: usize,
    /// When each 201 booking was answered.
    acknowledged_at: Vec<Instant>,
    /// When each quote was answered 201 whose booking later answered `quote.not_found`: a
    /// quote commits without waiting for the standby, so one made just before a failover
    /// may be gone (docs/operations-and-scaling.md); the client then asks for a new one.
    lost_quotes_answered_at: Vec<Instant>,
}

impl Tally {
    fn failed(&self) -> usize {
        self.connection_errors
            + self
                .by_status
                .iter()
                .filter(|(status, _)| **status >= 300)
                .map(|(_, n)| n)
                .sum::<usize>()
    }
}

/// Clients driving the fleet through its balancer until stopped.
struct Load {
    stop: Arc<AtomicBool>,
    tally: Arc<Mutex<Tally>>,
    clients: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(base_url: String, credential: Credential) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let tally = Arc::new(Mutex::new(Tally::default()));
        let clients = (0..CLIENTS)
            .map(|_| {
                let (stop, tally) = (stop.clone(), tally.clone());
                let (base_url, credential) = (base_url.clone(), credential.clone());
                tokio::spawn(async move {
                    let client = reqwest::Client::builder()
                        .timeout(Duration::from_secs(20))
                        .build()
                        .unwrap();
                    while !stop.load(Ordering::SeqCst) {
                        one_booking(&client, &base_url, &credential, &tally).await;
                    }
                })
            })
            .collect();
        Self {
            stop,
            tally,
            clients,
        }
    }

    async fn stop(self) -> Tally {
        self.stop.store(true, Ordering::SeqCst);
        for client in self.clients {
            client.await.unwrap();
        }
        Arc::try_unwrap(self.tally).unwrap().into_inner().unwrap()
    }

    /// Keeps the load on until it has run `LOAD_FOR` since `started`.
    async fn run_out(&self, started: Instant) {
        tokio::time::sleep(LOAD_FOR.saturating_sub(started.elapsed())).await;
    }

    fn acknowledged(&self) -> usize {
        self.tally.lock().unwrap().acknowledged.len()
    }
}

/// Sends one request and tallies its answer: the status and body, or None for a connection
/// error.
async fn send(
    request: reqwest::RequestBuilder,
    tally: &Mutex<Tally>,
) -> Option<(u16, Value, Option<u64>)> {
    let sent = request.send().await;
    let Ok(response) = sent else {
        let mut seen = tally.lock().unwrap();
        seen.sent += 1;
        seen.connection_errors += 1;
        return None;
    };
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let body: Value = response.json().await.unwrap_or(Value::Null);
    let mut seen = tally.lock().unwrap();
    seen.sent += 1;
    *seen.by_status.entry(status).or_default() += 1;
    if status == 503 {
        if retry_after.is_none() {
            seen.unavailable_without_retry_after += 1;
        }
        let code = body["code"].as_str().unwrap_or("(none)").to_owned();
        if code != "service.database_unavailable" {
            *seen.unavailable_codes.entry(code).or_default() += 1;
        }
    }
    Some((status, body, retry_after))
}

/// A quote, its booking (its key tried again until answered), and a read of the job.
async fn one_booking(
    client: &reqwest::Client,
    base_url: &str,
    credential: &Credential,
    tally: &Mutex<Tally>,
) {
    let quote = client
        .post(format!("{base_url}/v1/quotes"))
        .auth(credential)
        .json(&journey(None));
    let Some((201, quote, _)) = send(quote, tally).await else {
        tokio::time::sleep(Duration::from_millis(200)).await;
        return;
    };
    let quoted_at = Instant::now();
    let key = format!("fleet-{}", Uuid::new_v4());
    let body = json!({
        "quote_id": quote["id"],
        "pickup": stop_body("Pat", "pickup"),
        "dropoff": stop_body("Dana", "dropoff"),
    });
    let mut tries = 0;
    let job = loop {
        tries += 1;
        let booking = client
            .post(format!("{base_url}/v1/jobs"))
            .auth(credential)
            .header("Idempotency-Key", &key)
            .json(&body);
        match send(booking, tally).await {
            Some((201 | 200, job, _)) => break job,
            Some((status, body, retry_after)) if status >= 500 => {
                assert!(tries < 60, "booking {key} never answered: {status} {body}");
                let wait = retry_after.map_or(200, |s| s * 1000).min(2000);
                tokio::time::sleep(Duration::from_millis(wait)).await;
            }
            Some((422, body, _)) if body["code"] == "quote.not_found" => {
                tally
                    .lock()
                    .unwrap()
                    .lost_quotes_answered_at
                    .push(quoted_at);
                return;
            }
            Some((status, body, _)) => panic!("booking {key} refused: {status} {body}"),
            None => {
                assert!(tries < 60, "booking {key} never answered");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    let id = job["id"].as_str().unwrap().to_owned();
    {
        let mut tally = tally.lock().unwrap();
        if tries > 1 {
            tally.retried_bookings += 1;
        }
        tally.acknowledged.push(id.clone());
        tally.acknowledged_at.push(Instant::now());
    }
    let read = client
        .get(format!("{base_url}/v1/jobs/{id}"))
        .auth(credential);
    send(read, tally).await;
}

/// A fleet, a merchant with a card and a webhook endpoint on `receiver`.
async fn fleet_with_merchant(receiver: &Receiver) -> (Fleet, Credential) {
    let env: Vec<(String, String)> = [
        (
            "COURIER_WEBHOOK_EXTRA_CA",
            receiver.ca_path.to_string_lossy().into_owned(),
        ),
        ("COURIER_WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
        ("COURIER_RATE_LIMIT_QUOTES_PER_MINUTE", "1000000".to_owned()),
        (
            "COURIER_RATE_LIMIT_BOOKINGS_PER_MINUTE",
            "1000000".to_owned(),
        ),
        ("COURIER_RATE_LIMIT_READS_PER_MINUTE", "1000000".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let fleet = Fleet::start(&env).await;
    let pool = PgPool::connect(&fleet.database_url()).await.unwrap();
    let key = courier_core::infra::secrets::SecretKey::from_hex(SECRET_KEY_HEX).unwrap();
    let authenticator = courier_core::auth::Authenticator::new(pool.clone(), &key);
    let merchant = courier_core::merchants::Merchants::new(pool.clone(), authenticator.clone())
        .create("Fleet Ltd")
        .await
        .unwrap();
    pool.close().await;
    let test = merchant.test();
    let client = reqwest::Client::new();
    let card = client
        .post(format!("{}/v1/payment-methods", fleet.url()))
        .auth(&test)
        .json(&json!({"provider_ref": "pm_sandbox_4242424242424242"}))
        .send()
        .await
        .unwrap();
    assert_eq!(card.status(), 201);
    let endpoint = client
        .post(format!("{}/v1/webhooks", fleet.url()))
        .auth(&test)
        .json(&json!({"url": receiver.url(ENDPOINT), "events": ["job.booked"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(endpoint.status(), 201);
    (fleet, test)
}

/// Waits until every acknowledged job's `job.booked` has arrived; returns the deliveries per
/// job.
async fn booked_events(
    receiver: &Receiver,
    tally: &Tally,
    within: Duration,
) -> HashMap<String, usize> {
    let deadline = Instant::now() + within;
    loop {
        let mut per_job: HashMap<String, usize> = HashMap::new();
        for delivery in receiver.received(ENDPOINT) {
            let job = delivery.json()["data"]["jobId"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            *per_job.entry(job).or_default() += 1;
        }
        let missing = tally
            .acknowledged
            .iter()
            .filter(|id| !per_job.contains_key(*id))
            .count();
        if missing == 0 {
            return per_job;
        }
        assert!(
            Instant::now() < deadline,
            "{missing} acknowledged bookings have no job.booked after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every acknowledged booking, read back through the balancer.
async fn found_through(fleet: &Fleet, credential: &Credential, tally: &Tally) -> usize {
    let client = reqwest::Client::new();
    let mut found = 0;
    for id in &tally.acknowledged {
        let response = client
            .get(format!("{}/v1/jobs/{id}", fleet.url()))
            .auth(credential)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "acknowledged job {id} is missing");
        found += 1;
    }
    found
}

fn report(scenario: &str, tally: &Tally, found: usize, events: &HashMap<String, usize>) {
    let delivered: usize = tally
        .acknowledged
        .iter()
        .map(|id| events.get(id).copied().unwrap_or(0))
        .sum();
    let duplicated = delivered - tally.acknowledged.len();
    eprintln!(
        "fleet {scenario}: {} requests sent, {} failed (by status {:?}, {} connection errors), \
         {} bookings acknowledged ({} after retries of their key), {found} found, \
         {delivered} job.booked delivered ({duplicated} duplicates), {} quotes lost",
        tally.sent,
        tally.failed(),
        tally.by_status,
        tally.connection_errors,
        tally.acknowledged.len(),
        tally.retried_bookings,
        tally.lost_quotes_answered_at.len(),
    );
}

fn skip_without_tools() -> bool {
    if let Some(missing) = missing_tools() {
        eprintln!("skipped: {missing}");
        return true;
    }
    false
}

async fn wait_for_bookings(load: &Load, at_least: usize) {
    crate::support::eventually(
        "bookings to be acknowledged",
        Duration::from_secs(60),
        Duration::from_millis(50),
        || async { (load.acknowledged() >= at_least).then_some(()) },
    )
    .await;
}

/// Each instance in turn is stopped (SIGTERM), started again and put back in rotation, under
/// load: no request fails, no connection drops, and every booking's `job.booked` arrives.
#[tokio::test]
async fn a_rolling_restart_fails_no_request() {
    if skip_without_tools() {
        return;
    }
    let receiver = Receiver::start().await;
    let (mut fleet, credential) = fleet_with_merchant(&receiver).await;
    let started = Instant::now();
    let load = Load::start(fleet.url(), credential.clone());
    wait_for_bookings(&load, 20).await;
    for n in 0..fleet.instances.len() {
        let before = load.acknowledged();
        assert!(fleet.restart(n).await, "instance {n} exited cleanly");
        wait_for_bookings(&load, before + 10).await;
    }
    load.run_out(started).await;
    let tally = load.stop().await;
    let found = found_through(&fleet, &credential, &tally).await;
    let events = booked_events(&receiver, &tally, Duration::from_secs(60)).await;
    report("rolling restart", &tally, found, &events);
    assert_eq!(tally.failed(), 0, "{tally:?}");
}

/// An instance killed (SIGKILL) under load: requests it held fail or are tried again by the
/// balancer or the client (with the same key); every acknowledged booking exists afterwards
/// and its `job.booked` arrives, the killed instance's leased deliveries taken over.
#[tokio::test]
async fn an_instance_killed_under_load_loses_no_acknowledged_booking() {
    if skip_without_tools() {
        return;
    }
    let receiver = Receiver::start().await;
    let (mut fleet, credential) = fleet_with_merchant(&receiver).await;
    let started = Instant::now();
    let load = Load::start(fleet.url(), credential.clone());
    tokio::time::sleep(LOAD_FOR / 4).await;
    fleet.instances[1].kill();
    let at_kill = load.acknowledged();
    tokio::time::sleep(LOAD_FOR / 4).await;
    fleet.start_again(1).await;
    wait_for_bookings(&load, at_kill + 30).await;
    load.run_out(started).await;
    let tally = load.stop().await;
    let found = found_through(&fleet, &credential, &tally).await;
    let events = booked_events(&receiver, &tally, Duration::from_secs(60)).await;
    report("instance killed", &tally, found, &events);
    assert_eq!(tally.by_status.get(&500), None, "{tally:?}");
    assert!(tally.lost_quotes_answered_at.is_empty(), "{tally:?}");
}

/// The primary stopped hard (SIGKILL) under load and the standby promoted: every booking
/// acknowledged before is on the new primary with its charge and its `job.booked` event; the
/// gap is answered 503 with `Retry-After` (never 500); the fleet books again within 10 s of
/// the promotion, without a restart; retried keys make one job each. A quote answered just
/// before the kill may be gone (it commits without waiting for the standby): its booking
/// answers `quote.not_found` and the client asks for a new quote.
#[tokio::test]
async fn a_failover_loses_no_acknowledged_booking() {
    if skip_without_tools() {
        return;
    }
    let receiver = Receiver::start().await;
    let (fleet, credential) = fleet_with_merchant(&receiver).await;
    let started = Instant::now();
    let load = Load::start(fleet.url(), credential.clone());
    tokio::time::sleep(LOAD_FOR / 4).await;
    let before_kill = load.acknowledged();
    let promoted = fleet.fail_over().await;
    crate::support::eventually(
        "a booking acknowledged after the promotion",
        Duration::from_secs(30),
        Duration::from_millis(20),
        || async { (load.acknowledged() > before_kill + 5).then_some(()) },
    )
    .await;
    load.run_out(started).await;
    let tally = load.stop().await;
    let first_after = tally
        .acknowledged_at
        .iter()
        .find(|at| **at > promoted)
        .copied()
        .expect("bookings after the promotion");
    let serving_again = first_after.duration_since(promoted);

    // The new primary has every acknowledged booking, its charge and its event.
    let new_primary = PgPool::connect(&crate::support::fleet::PgPair::url(
        &fleet.db.standby,
        "courier",
    ))
    .await
    .unwrap();
    let ids: Vec<Uuid> = tally
        .acknowledged
        .iter()
        .map(|id| Uuid::parse_str(id).unwrap())
        .collect();
    let jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs WHERE id = ANY($1)")
        .bind(&ids)
        .fetch_one(&new_primary)
        .await
        .unwrap();
    let charges: i64 =
        sqlx::query_scalar("SELECT count(DISTINCT job_id) FROM charges WHERE job_id = ANY($1)")
            .bind(&ids)
            .fetch_one(&new_primary)
            .await
            .unwrap();
    let booked: i64 = sqlx::query_scalar(
        "SELECT count(DISTINCT job_id) FROM events WHERE name = 'job.booked' AND job_id = ANY($1)",
    )
    .bind(&ids)
    .fetch_one(&new_primary)
    .await
    .unwrap();
    let all_jobs: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs")
        .fetch_one(&new_primary)
        .await
        .unwrap();
    let found = usize::try_from(jobs).unwrap();
    let events = booked_events(&receiver, &tally, Duration::from_secs(60)).await;
    report("failover", &tally, found, &events);
    eprintln!(
        "fleet failover: {before_kill} bookings acknowledged before the kill; booking again \
         {serving_again:?} after the promotion; {} answers of 503 without Retry-After",
        tally.unavailable_without_retry_after
    );
    assert_eq!(
        found,
        ids.len(),
        "every acknowledged booking is on the new primary"
    );
    assert_eq!(charges, jobs, "each with its charge");
    assert_eq!(booked, jobs, "each with its job.booked");
    assert_eq!(
        usize::try_from(all_jobs).unwrap(),
        ids.len(),
        "retried keys made one job each"
    );
    assert!(serving_again < Duration::from_secs(10), "{serving_again:?}");
    assert_eq!(tally.by_status.get(&500), None, "{tally:?}");
    assert_eq!(tally.unavailable_without_retry_after, 0, "{tally:?}");
    assert!(tally.unavailable_codes.is_empty(), "{tally:?}");
    // Only a quote answered before the promotion (so before the kill: the old primary
    // answered nothing after it) may be gone, at most one per client.
    assert!(
        tally.lost_quotes_answered_at.len() <= CLIENTS
            && tally
                .lost_quotes_answered_at
                .iter()
                .all(|at| *at < promoted),
        "{tally:?}"
    );
}
