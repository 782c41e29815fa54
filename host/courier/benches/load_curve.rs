//! The shape of cost as load grows: quotes, bookings and reads, each driven at several set
//! rates (open loop: request i is due at start + i/rate and its latency counts from then,
//! so a stalled service shows as latency, not as fewer requests); then the jobs list of a
//! merchant holding 1k, 10k and 100k jobs.
//!
//! cargo bench -p courier --bench load_curve
//!
//! `LOAD_RATES` (default `100,200,400,800,1600` requests/s), `LOAD_SECONDS` per step
//! (default 5), `LOAD_LIST_SIZES` (default `1000,10000,100000`). Client, service and
//! database share the machine.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Bench, Latencies, env_or};
use uuid::Uuid;

/// Requests in flight beyond which the step counts further requests as dropped.
const MAX_IN_FLIGHT: usize = 4096;

struct Step {
    offered: usize,
    ok: usize,
    dropped: usize,
    elapsed: Duration,
    latencies: Latencies,
}

/// Sends `request(i)` at `rate` per second for `seconds`.
async fn at_rate<F, Fut>(rate: u32, seconds: u64, request: F) -> Step
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = bool> + Send + 'static,
{
    let request = Arc::new(request);
    let total = (rate as u64 * seconds) as usize;
    let in_flight = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(total);
    let mut dropped = 0;
    for i in 0..total {
        let due = started + Duration::from_secs_f64(i as f64 / rate as f64);
        tokio::time::sleep_until(due.into()).await;
        if in_flight.load(Ordering::Relaxed) >= MAX_IN_FLIGHT {
            dropped += 1;
            continue;
        }
        in_flight.fetch_add(1, Ordering::Relaxed);
        let (request, in_flight) = (Arc::clone(&request), Arc::clone(&in_flight));
        tasks.push(tokio::spawn(async move {
            let ok = request(i).await;
            in_flight.fetch_sub(1, Ordering::Relaxed);
            (ok, due.elapsed())
        }));
    }
    let mut latencies = Vec::with_capacity(tasks.len());
    let mut ok = 0;
    for task in tasks {
        let (success, latency) = task.await.unwrap();
        if success {
            ok += 1;
            latencies.push(latency);
        }
    }
    Step {
        offered: total,
        ok,
        dropped,
        elapsed: started.elapsed(),
        latencies: Latencies(latencies),
    }
}

fn row(what: &str, rate: u32, mut step: Step) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "| {what} | {rate}/s | {:.0}/s | {} of {} | {} | {:.2} ms | {:.2} ms |",
        step.ok as f64 / step.elapsed.as_secs_f64(),
        step.ok,
        step.offered,
        step.dropped,
        ms(step.latencies.percentile(0.5)),
        ms(step.latencies.percentile(0.99)),
    );
}

/// Makes `count` quotes from 32 clients, for a booking step to use.
async fn stock_quotes(bench: &Arc<Bench>, count: usize) -> Vec<String> {
    let tasks: Vec<_> = (0..32)
        .map(|_| {
            let bench = Arc::clone(bench);
            tokio::spawn(async move {
                let mut ids = Vec::new();
                for _ in 0..count.div_ceil(32) {
                    if let Some(quote) = bench.quote().await {
                        ids.push(quote["id"].as_str().unwrap().to_owned());
                    }
                }
                ids
            })
        })
        .collect();
    let mut ids = Vec::with_capacity(count);
    for task in tasks {
        ids.extend(task.await.unwrap());
    }
    ids
}

/// Gives a new merchant `count` jobs, copies of `template_job` (with their own quotes, and
/// references and tracking tokens told apart by the merchant), and returns its test credentials.
async fn merchant_with_jobs(bench: &Bench, template_job: Uuid, count: i64) -> (String, String) {
    let hash_key = courier_core::infra::secrets::SecretKey::from_hex(&"be".repeat(32)).unwrap();
    let authenticator = courier_core::auth::Authenticator::new(bench.pool.clone(), &hash_key);
    let merchant =
        courier_core::merchants::Merchants::new(bench.pool.clone(), authenticator.clone())
            .create("Lister")
            .await
            .unwrap();
    sqlx::query(
        "WITH template AS (SELECT j.*, q.id AS template_quote FROM jobs j \
                           JOIN quotes q ON q.id = j.quote_id WHERE j.id = $1), \
         numbered AS (SELECT n, gen_random_uuid() AS quote_id FROM generate_series(1, $2) n), \
         new_quotes AS ( \
           INSERT INTO quotes SELECT (jsonb_populate_record(NULL::quotes, to_jsonb(q) || \
             jsonb_build_object('id', numbered.quote_id, 'merchant_id', $3::uuid))).* \
           FROM quotes q, numbered, template WHERE q.id = template.template_quote \
           RETURNING id) \
         INSERT INTO jobs SELECT (jsonb_populate_record(NULL::jobs, to_jsonb(j) || \
           jsonb_build_object('id', gen_random_uuid(), 'quote_id', numbered.quote_id, \
             'merchant_id', $3::uuid, \
             'reference', j.reference || '-' || left($3::text, 8) || '-' || numbered.n, \
             'tracking_token', j.tracking_token || left($3::text, 8) || numbered.n, \
             'booked_at', j.booked_at - make_interval(secs => numbered.n)))).* \
         FROM jobs j, numbered WHERE j.id = $1 \
           AND (SELECT count(*) FROM new_quotes) > 0",
    )
    .bind(template_job)
    .bind(count)
    .bind(merchant.merchant_id)
    .execute(&bench.pool)
    .await
    .unwrap();
    sqlx::query("ANALYZE jobs")
        .execute(&bench.pool)
        .await
        .unwrap();
    (merchant.test_key, merchant.test_secret)
}

async fn list_latency(bench: &Bench, key: &str, secret: &str, path: &str) -> (f64, Latencies) {
    let started = Instant::now();
    let mut latencies = Vec::new();
    while started.elapsed() < Duration::from_secs(3) {
        let at = Instant::now();
        let response = bench
            .http
            .get(format!("{}{path}", bench.base))
            .basic_auth(key, Some(secret))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.bytes().await.unwrap();
        latencies.push(at.elapsed());
    }
    let rate = latencies.len() as f64 / started.elapsed().as_secs_f64();
    (rate, Latencies(latencies))
}

fn list(name: &str) -> Vec<u64> {
    std::env::var(name)
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_default()
}

fn main() {
    let mut rates = list("LOAD_RATES");
    if rates.is_empty() {
        rates = vec![100, 200, 400, 800, 1600];
    }
    let mut sizes = list("LOAD_LIST_SIZES");
    if sizes.is_empty() {
        sizes = vec![1_000, 10_000, 100_000];
    }
    let seconds: u64 = env_or("LOAD_SECONDS", 5);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let bench = Arc::new(Bench::start("load-curve", 256, |_| None).await);
        println!("seconds per step: {seconds}");
        println!("| requests | offered | achieved | succeeded | dropped | p50 | p99 |");
        println!("|---|---|---|---|---|---|---|");
        for &rate in &rates {
            let b = Arc::clone(&bench);
            let step = at_rate(rate as u32, seconds, move |_| {
                let b = Arc::clone(&b);
                async move { b.quote().await.is_some() }
            })
            .await;
            row("quotes", rate as u32, step);
        }
        let mut booked = Vec::new();
        for &rate in &rates {
            let quotes = Arc::new(stock_quotes(&bench, (rate * seconds) as usize).await);
            let (b, q) = (Arc::clone(&bench), Arc::clone(&quotes));
            let step = at_rate(rate as u32, seconds, move |i| {
                let (b, q) = (Arc::clone(&b), Arc::clone(&q));
                async move {
                    match q.get(i) {
                        Some(id) => b.book(id, &format!("load-{}", Uuid::new_v4())).await,
                        None => false,
                    }
                }
            })
            .await;
            row("bookings", rate as u32, step);
            if booked.is_empty() {
                booked = sqlx::query_scalar::<_, Uuid>("SELECT id FROM jobs LIMIT 1000")
                    .fetch_all(&bench.pool)
                    .await
                    .unwrap();
            }
        }
        let booked = Arc::new(booked);
        for &rate in &rates {
            let (b, ids) = (Arc::clone(&bench), Arc::clone(&booked));
            let step = at_rate(rate as u32, seconds, move |i| {
                let (b, ids) = (Arc::clone(&b), Arc::clone(&ids));
                async move { b.read(&format!("/v1/jobs/{}", ids[i % ids.len()])).await }
            })
            .await;
            row("job reads", rate as u32, step);
        }

        println!();
        println!("| jobs of the merchant | list page 1 (size 50) | p50 | p99 | page 10 of status=pending | p50 | p99 |");
        println!("|---|---|---|---|---|---|---|");
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        for &size in &sizes {
            let (key, secret) = merchant_with_jobs(&bench, booked[0], size as i64).await;
            let (first_rate, mut first) =
                list_latency(&bench, &key, &secret, "/v1/jobs?size=50").await;
            let (deep_rate, mut deep) =
                list_latency(&bench, &key, &secret, "/v1/jobs?status=pending&page=10&size=50")
                    .await;
            println!(
                "| {size} | {first_rate:.0}/s | {:.2} ms | {:.2} ms | {deep_rate:.0}/s | {:.2} ms | {:.2} ms |",
                ms(first.percentile(0.5)),
                ms(first.percentile(0.99)),
                ms(deep.percentile(0.5)),
                ms(deep.percentile(0.99)),
            );
        }
        match Arc::try_unwrap(bench) {
            Ok(bench) => bench.finish().await,
            Err(_) => eprintln!("bench still shared at the end"),
        }
    });
}
