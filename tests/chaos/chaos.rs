//! Money under everything at once, with either provider's model: Stripe's (every move answered
//! at once, when it is answered) and Adyen's (captures, releases, refunds and some holds
//! answered `received`, their outcome said later by a signed notification). Two `courier
//! serve` processes share one database and the provider's stand-in, which pauses every request
//! log-normally and meets some with a fault (a 503, an answer lost after it acted, an answer
//! only after the caller's deadline; keys still in flight answer 409); Adyen's notifications
//! come late, out of order, some twice, to either instance. Merchants book, retrying each key
//! until it has an answer; some jobs are cancelled (the hold released), some delivered
//! (captured) and partly refunded by an operator who retries when no answer comes; meanwhile
//! either instance is killed with `kill -9` and started again, at random. Once the faults stop
//! and the work left has been finished, the provider's books and ours must agree exactly:
//! every booked job has exactly one payment (in the state its charge says), no money is held
//! for anything else, refunded amounts are equal, every key answers as it did, and
//! reconciliation finds nothing (with Adyen, which cannot be read back, it says so).

use std::collections::HashSet;
use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::provider::{ChargeRow, Provider};
use crate::support::adyen::AdyenStandIn;
use crate::support::process::{free_port, spawn_service, wait_until_ready};
use crate::support::stripe::StripeStandIn;
use crate::support::{
    ADMIN_TOKEN, Authed, Credential, MerchantCredentials, create_merchant_in, fresh_database_url,
    journey, status_and_json,
};

/// CI's run: this seed, this many bookings, started over this many seconds; `CHAOS_SEED`,
/// `CHAOS_BOOKINGS` and `CHAOS_SECONDS` change them.
const DEFAULT_SEED: u64 = 20_261_128;
const DEFAULT_BOOKINGS: usize = 40;
const DEFAULT_SECONDS: u64 = 20;
/// How long anything may take to get an answer, whatever the faults.
const PATIENCE: Duration = Duration::from_secs(120);

struct Instance {
    child: Option<Child>,
    env: Vec<(String, String)>,
    base_url: String,
}

impl Drop for Instance {
    /// A run that fails leaves no service behind.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// What the actors share.
struct Floor {
    provider: Provider,
    instances: Mutex<Vec<Instance>>,
    urls: Vec<String>,
    client: reqwest::Client,
    live: Credential,
    seed: u64,
}

/// What a key was answered, for asking again at the end.
struct Booked {
    key: String,
    body: Value,
    status: u16,
    answer: Value,
}

impl Floor {
    /// Any instance's address (it may be down: callers retry).
    fn url(&self, rng: &mut StdRng) -> &str {
        &self.urls[rng.random_range(0..self.urls.len())]
    }

    /// Sends a request until an instance answers with something other than an outage (a
    /// refused connection, a 5xx, a key still in progress or a rate limit).
    async fn until_answered(
        &self,
        rng: &mut StdRng,
        method: Method,
        path: &str,
        body: Option<&Value>,
        operator: bool,
        key: Option<&str>,
    ) -> (u16, Value) {
        let started = Instant::now();
        loop {
            assert!(started.elapsed() < PATIENCE, "no answer to {method} {path}");
            let url = format!("{}{path}", self.url(rng));
            let mut request = self.client.request(method.clone(), url);
            request = if operator {
                request.bearer_auth(ADMIN_TOKEN)
            } else {
                request.auth(&self.live)
            };
            if let Some(key) = key {
                request = request.header("Idempotency-Key", key);
            }
            if let Some(body) = body {
                request = request.json(body);
            }
            if let Ok(response) = request.send().await {
                let (status, answer) = status_and_json(response).await;
                let outage =
                    status >= 500 || status == 429 || answer["code"] == "idempotency.in_progress";
                if !outage {
                    return (status, answer);
                }
            }
            tokio::time::sleep(Duration::from_millis(rng.random_range(50..300))).await;
        }
    }

    async fn job(&self, rng: &mut StdRng, id: &str) -> Value {
        let (status, job) = self
            .until_answered(
                rng,
                Method::GET,
                &format!("/v1/jobs/{id}"),
                None,
                false,
                None,
            )
            .await;
        assert_eq!(status, 200, "{job}");
        job
    }
}

fn service_env(provider: &Provider, database_url: &str, port: u16) -> Vec<(String, String)> {
    let mut env = provider.service_env();
    let data_dir = crate::support::scratch_path("chaos");
    env.extend(
        [
            ("DATABASE_URL", database_url.to_owned()),
            ("COURIER_DATA_DIR", data_dir.to_string_lossy().into_owned()),
            ("COURIER_LISTEN", format!("127.0.0.1:{port}")),
            ("COURIER_SECRET_KEY", "5e".repeat(32)),
            ("COURIER_ADMIN_TOKEN", ADMIN_TOKEN.to_owned()),
            ("COURIER_PAYMENT_DEADLINE_MS", "1500".to_owned()),
            ("COURIER_CHARGE_RETRY_BASE_MS", "200".to_owned()),
            ("COURIER_CHARGE_RETRY_ATTEMPTS", "6".to_owned()),
            ("COURIER_BOOKING_ABANDON_AFTER_MS", "20000".to_owned()),
            ("COURIER_RATE_LIMIT_QUOTES_PER_MINUTE", "100000".to_owned()),
            (
                "COURIER_RATE_LIMIT_BOOKINGS_PER_MINUTE",
                "100000".to_owned(),
            ),
            ("COURIER_RATE_LIMIT_READS_PER_MINUTE", "100000".to_owned()),
            ("COURIER_PUBLIC_REQUEST_LIMIT", "100000".to_owned()),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value)),
    );
    env
}

/// One merchant's booking and what happens to it after.
async fn act(
    floor: Arc<Floor>,
    index: usize,
    body: Value,
    courier: Value,
    starts_in: Duration,
) -> Booked {
    let mut rng = StdRng::seed_from_u64(floor.seed.wrapping_add(index as u64 + 1));
    tokio::time::sleep(starts_in).await;
    let key = format!("chaos-{}-{index}", floor.seed);
    let (status, answer) = floor
        .until_answered(
            &mut rng,
            Method::POST,
            "/v1/jobs",
            Some(&body),
            false,
            Some(&key),
        )
        .await;
    let booked = Booked {
        key,
        body,
        status,
        answer: answer.clone(),
    };
    if status != 201 {
        return booked;
    }
    let id = answer["id"].as_str().unwrap().to_owned();
    match rng.random_range(0..3) {
        // Left held.
        0 => {}
        // Cancelled: the hold is released.
        1 => {
            let (status, body) = floor
                .until_answered(
                    &mut rng,
                    Method::POST,
                    &format!("/v1/jobs/{id}/cancel"),
                    None,
                    false,
                    None,
                )
                .await;
            let cancelled =
                status == 200 || floor.job(&mut rng, &id).await["status"] == "cancelled";
            assert!(cancelled, "{status} {body}");
        }
        // Delivered (captured), then part of it refunded.
        _ => {
            while floor.job(&mut rng, &id).await["status"] != "delivered" {
                floor
                    .until_answered(
                        &mut rng,
                        Method::POST,
                        &format!("/admin/v1/jobs/{id}/reassign"),
                        Some(&json!({"courier_id": courier["id"]})),
                        true,
                        None,
                    )
                    .await;
                floor
                    .until_answered(
                        &mut rng,
                        Method::POST,
                        &format!("/admin/v1/jobs/{id}/status"),
                        Some(&json!({"status": "delivered", "reason": "chaos"})),
                        true,
                        None,
                    )
                    .await;
            }
            refund_part(&floor, &mut rng, &id).await;
        }
    }
    booked
}

/// Once the job's charge is captured, refunds a part of it, sending the refund again (the
/// same amount) while no answer comes. A provider that confirms refunds later is answered
/// 202 (the refund then finishes on its notification).
async fn refund_part(floor: &Floor, rng: &mut StdRng, job_id: &str) {
    let started = Instant::now();
    let charge = loop {
        assert!(
            started.elapsed() < PATIENCE,
            "job {job_id} was never captured"
        );
        let (_, charges) = floor
            .until_answered(rng, Method::GET, "/v1/charges", None, false, None)
            .await;
        let charge = charges
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["job_id"] == job_id)
            .cloned();
        if let Some(charge) = charge.filter(|c| c["status"] == "captured") {
            break charge;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let amount = rng.random_range(1..=charge["amount_minor"].as_i64().unwrap() / 3);
    // One key for the refund however often it is sent: it pays once.
    let refund_key = format!("chaos-refund-{}", rng.random::<u64>());
    let (status, answer) = floor
        .until_answered(
            rng,
            Method::POST,
            &format!(
                "/admin/v1/charges/{}/refund",
                charge["id"].as_str().unwrap()
            ),
            Some(&json!({"amount_minor": amount})),
            true,
            Some(&refund_key),
        )
        .await;
    assert!(status == 200 || status == 202, "{status} {answer}");
}

/// Kills an instance at random every few seconds, and starts it again a moment later.
async fn kill_at_random(floor: Arc<Floor>, stop: Arc<AtomicBool>) -> usize {
    let mut rng = StdRng::seed_from_u64(floor.seed ^ 0x5eed);
    let mut kills = 0;
    while !stop.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(rng.random_range(1000..3000))).await;
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let victim = rng.random_range(0..floor.urls.len());
        {
            let mut instances = floor.instances.lock().await;
            let instance = &mut instances[victim];
            if let Some(mut child) = instance.child.take() {
                child.kill().unwrap();
                child.wait().unwrap();
                kills += 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(300..1500))).await;
        restart(&floor, victim).await;
    }
    kills
}

async fn restart(floor: &Floor, index: usize) {
    let mut instances = floor.instances.lock().await;
    let instance = &mut instances[index];
    if instance.child.is_none() {
        instance.child = Some(spawn_service(&instance.env));
        wait_until_ready(&floor.client, &instance.base_url).await;
    }
}

async fn scalar(pool: &sqlx::PgPool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.unwrap()
}

/// One run at a time: each is two service instances on the machine's cores.
static ONE_RUN_AT_A_TIME: Mutex<()> = Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn money_stays_right_when_everything_happens_at_once_with_stripe() {
    let _alone = ONE_RUN_AT_A_TIME.lock().await;
    run(Provider::Stripe(StripeStandIn::start().await)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn money_stays_right_when_everything_happens_at_once_with_adyen_s_later_answers() {
    let _alone = ONE_RUN_AT_A_TIME.lock().await;
    run(Provider::Adyen(AdyenStandIn::start().await)).await;
}

async fn run(provider: Provider) {
    let seed = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let bookings = std::env::var("CHAOS_BOOKINGS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_BOOKINGS);
    let seconds = std::env::var("CHAOS_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SECONDS);
    let name = provider.name();
    eprintln!("chaos run ({name}): seed {seed}, {bookings} bookings over {seconds} s");
    let database_url = fresh_database_url().await;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let mut instances = Vec::new();
    for _ in 0..2 {
        let port = free_port();
        let env = service_env(&provider, &database_url, port);
        let base_url = format!("http://127.0.0.1:{port}");
        let child = spawn_service(&env);
        wait_until_ready(&client, &base_url).await;
        instances.push(Instance {
            child: Some(child),
            env,
            base_url,
        });
    }
    let urls: Vec<String> = instances.iter().map(|i| i.base_url.clone()).collect();
    provider.notify(&urls);
    let merchant = create_merchant_in(&database_url, "Chaos Goods Ltd").await;
    let floor = Arc::new(Floor {
        provider,
        instances: Mutex::new(instances),
        urls,
        client,
        live: merchant.live(),
        seed,
    });
    let mut rng = StdRng::seed_from_u64(seed);

    // Before the chaos: a card, the quotes, a courier per delivery.
    let (status, form) = floor
        .until_answered(
            &mut rng,
            Method::POST,
            "/v1/payment-methods/setup",
            None,
            false,
            None,
        )
        .await;
    assert_eq!(status, 200, "{form}");
    let card_ref = floor.provider.complete_card_form(&form);
    let (status, card) = floor
        .until_answered(
            &mut rng,
            Method::POST,
            "/v1/payment-methods",
            Some(&json!({"provider_ref": card_ref, "make_default": true})),
            false,
            None,
        )
        .await;
    assert_eq!(status, 201, "{card}");
    let route = journey(None);
    let stop = |point: &Value, name: &str| {
        json!({"latitude": point["latitude"], "longitude": point["longitude"],
               "address": format!("{name}'s door"), "contact_name": name,
               "contact_phone": "+966 11 463 5555"})
    };
    let mut work = Vec::new();
    for index in 0..bookings {
        let (status, quote) = floor
            .until_answered(
                &mut rng,
                Method::POST,
                "/v1/quotes",
                Some(&journey(Some("car"))),
                false,
                None,
            )
            .await;
        assert_eq!(status, 201, "{quote}");
        let (status, courier) = floor
            .until_answered(
                &mut rng,
                Method::POST,
                "/admin/v1/couriers",
                Some(
                    &json!({"name": format!("Rider {index}"), "phone": "+966 50 123 4567",
                             "vehicle": "car", "market": "demo"}),
                ),
                true,
                None,
            )
            .await;
        assert_eq!(status, 201, "{courier}");
        let body = json!({"quote_id": quote["id"], "pickup": stop(&route["pickup"], "Pat"),
                          "dropoff": stop(&route["dropoff"], "Dana")});
        work.push((body, courier));
    }

    // The chaos.
    floor.provider.unleash(seed);
    let stopping = Arc::new(AtomicBool::new(false));
    let killer = tokio::spawn(kill_at_random(Arc::clone(&floor), Arc::clone(&stopping)));
    let actors: Vec<_> = work
        .into_iter()
        .enumerate()
        .map(|(index, (body, courier))| {
            // Spread over the run, so that kills and faults meet bookings at every stage.
            let starts_in = Duration::from_secs(seconds) * index as u32 / bookings as u32;
            tokio::spawn(act(Arc::clone(&floor), index, body, courier, starts_in))
        })
        .collect();
    let mut outcomes = Vec::new();
    for actor in actors {
        outcomes.push(actor.await.unwrap());
    }
    stopping.store(true, Ordering::SeqCst);
    let kills = killer.await.unwrap();
    floor.provider.calm();
    for index in 0..floor.urls.len() {
        restart(&floor, index).await;
    }
    let booked = outcomes.iter().filter(|o| o.status == 201).count();
    eprintln!("chaos run ({name}): {booked} of {bookings} booked, {kills} kills");

    // The work left over is finished.
    let pool = sqlx::PgPool::connect(&database_url).await.unwrap();
    let started = Instant::now();
    loop {
        let left = scalar(
            &pool,
            "SELECT (SELECT count(*) FROM booking_attempts) \
             + (SELECT count(*) FROM charge_retries) \
             + (SELECT count(*) FROM refunds WHERE status = 'requested') \
             + (SELECT count(*) FROM charges WHERE status = 'pending' OR after_hold IS NOT NULL)",
        )
        .await;
        let untold = floor.provider.untold();
        if left == 0 && untold == 0 {
            break;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "{left} pieces of work never finished, {untold} notifications never accepted"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // Every key answers as it did.
    for outcome in &outcomes {
        let (status, answer) = floor
            .until_answered(
                &mut rng,
                Method::POST,
                "/v1/jobs",
                Some(&outcome.body),
                false,
                Some(&outcome.key),
            )
            .await;
        assert_eq!(
            (status, &answer["id"], &answer["code"]),
            (
                outcome.status,
                &outcome.answer["id"],
                &outcome.answer["code"]
            ),
            "key {}",
            outcome.key
        );
    }

    // Each booked job has exactly one payment at the provider, made with its hold key; no
    // payment holds money for anything else; what was given back is equal.
    let charges: Vec<ChargeRow> = sqlx::query_as(
        "SELECT job_id, status, authorisation_ref, refunded_amount_minor FROM charges",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    floor.provider.check_books(&charges);
    let booked_jobs: HashSet<String> = outcomes
        .iter()
        .filter(|o| o.status == 201)
        .map(|o| o.answer["id"].as_str().unwrap().to_owned())
        .collect();
    let charged: HashSet<String> = charges
        .iter()
        .filter(|c| c.1 != "failed")
        .map(|c| c.0.to_string())
        .collect();
    assert!(
        charged.is_subset(&booked_jobs),
        "a charge for a job no key booked"
    );

    // And reconciliation, as an operator runs it, finds nothing.
    let last = floor
        .provider
        .reconcile_clean(&database_url, charges.len())
        .await;
    eprintln!("chaos run ({name}): {}", floor.provider.tally());
    eprintln!("chaos run ({name}): seed {seed} passed; reconciliation {last}");

    let mut instances = floor.instances.lock().await;
    for instance in instances.iter_mut() {
        if let Some(mut child) = instance.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
    pool.close().await;
}
