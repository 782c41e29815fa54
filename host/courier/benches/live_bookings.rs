//! Live bookings through the Stripe adapter, against the Stripe stand-in of the tests with a
//! provider latency of 300 ms median and 1 s at the 99th percentile.
//!
//! Starts a private PostgreSQL cluster and the release `courier serve` as a process of its own
//! (pool of 16 connections, the Stripe adapter as the live adapter, pointed at the stand-in),
//! runs the stand-in and the load client in this process, gives a merchant a live card through
//! the card form, makes quotes beforehand, then books them for `BENCH_SECONDS` (default 10)
//! from `BENCH_CLIENTS` (default 160) concurrent clients, each booking with its own
//! `Idempotency-Key`. Reports bookings per second, latency percentiles beside the provider's
//! own, and the service's CPU time per booking (from /proc, the phase only).
//!
//! cargo bench -p courier --bench live_bookings     # COURIER_BIN=path runs another build
//!                                                  # BENCH_ADAPTER=path, its live adapter
//!                                                  # BENCH_STATEMENTS=1, statements per booking

#[path = "../../../tests/e2e/support/chaos.rs"]
#[allow(dead_code)]
mod chaos;
mod common;
#[path = "../../../tests/e2e/support/stripe.rs"]
#[allow(dead_code)]
mod stripe;
#[path = "../../../tests/e2e/support/tls.rs"]
mod tls;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Latencies, SECRET_HEX, booking_body, env_or, quote_body, wait_until_ready};
use courier_core::auth::Authenticator;
use courier_core::infra::secrets::SecretKey;
use serde_json::{Value, json};
use stripe::{Latency, StripeStandIn};

/// CPU time (user + system) a process has used, from /proc.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<u64>().ok()))
        .sum();
    // SAFETY: sysconf reads a constant of the running system.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_secs_f64(ticks as f64 / per_second as f64)
}

fn main() {
    let clients: usize = env_or("BENCH_CLIENTS", 160);
    let seconds: u64 = env_or("BENCH_SECONDS", 10);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let (cluster, root) = common::private_cluster("live-bench", "bench").await;
        let cluster = Arc::new(cluster);
        let url = cluster.url("bench");
        let stand_in = StripeStandIn::start().await;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let base = format!("http://127.0.0.1:{port}");
        // `COURIER_BIN` runs another build of the service (an A/B comparison).
        let binary =
            std::env::var("COURIER_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_courier").into());
        let mut service = std::process::Command::new(binary);
        service
            .arg("serve")
            .env("DATABASE_URL", &url)
            .env("COURIER_DATA_DIR", root.join("data"))
            .env("COURIER_LISTEN", format!("127.0.0.1:{port}"))
            .env("COURIER_SECRET_KEY", SECRET_HEX)
            .env("COURIER_DB_POOL_SIZE", "16")
            .env("COURIER_PAYMENT_CALLS", "512")
            .env("COURIER_PLUGIN_INSTANCES", "1024")
            .env("COURIER_SANDBOX_SPEED", "0")
            .env("COURIER_RATE_LIMIT_QUOTES_PER_MINUTE", "100000000")
            .env("COURIER_RATE_LIMIT_BOOKINGS_PER_MINUTE", "100000000")
            .env("COURIER_RATE_LIMIT_READS_PER_MINUTE", "100000000")
            .env("RUST_LOG", "error")
            .stdin(std::process::Stdio::null());
        for (name, value) in stand_in.service_env() {
            service.env(name, value);
        }
        // Another build may speak another version of the payments contract: its own adapter.
        if let Ok(adapter) = std::env::var("BENCH_ADAPTER") {
            service.env("COURIER_LIVE_PAYMENT_ADAPTER", adapter);
        }
        let mut service = service.spawn().expect("the courier binary runs");
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(clients)
            .build()
            .unwrap();
        wait_until_ready(&http, &base).await;
        let pool = sqlx::PgPool::connect(&url).await.unwrap();
        let merchant = courier_core::merchants::Merchants::new(
            pool.clone(),
            Authenticator::new(pool.clone(), &SecretKey::from_hex(SECRET_HEX).unwrap()),
        )
        .create("Live Bench")
        .await
        .unwrap();
        let (key, secret) = (merchant.live_key.clone(), merchant.live_secret.clone());
        let call = |method: reqwest::Method, path: &str, body: Option<Value>| {
            let mut request = http
                .request(method, format!("{base}{path}"))
                .basic_auth(&key, Some(&secret));
            if let Some(body) = body {
                request = request.json(&body);
            }
            async move {
                let response = request.send().await.unwrap();
                let status = response.status().as_u16();
                (
                    status,
                    response.json::<Value>().await.unwrap_or(Value::Null),
                )
            }
        };
        let (_, form) = call(reqwest::Method::POST, "/v1/payment-methods/setup", None).await;
        let pm =
            stand_in.complete_card_form(form["client_secret"].as_str().unwrap(), "pm_card_visa");
        let (status, card) = call(
            reqwest::Method::POST,
            "/v1/payment-methods",
            Some(json!({"provider_ref": pm})),
        )
        .await;
        assert_eq!(status, 201, "{card}");

        // Quotes to book, made beforehand (the road network loads in the background first).
        let wanted = (seconds as usize) * 600 + clients;
        let mut quotes = Vec::with_capacity(wanted);
        while quotes.len() < wanted {
            let (status, quote) =
                call(reqwest::Method::POST, "/v1/quotes", Some(quote_body())).await;
            match status {
                201 => quotes.push(quote["id"].as_str().unwrap().to_owned()),
                503 => tokio::time::sleep(Duration::from_millis(50)).await,
                other => panic!("quote answered {other}: {quote}"),
            }
        }
        let quotes = Arc::new(std::sync::Mutex::new(quotes));

        stand_in.set_latency(Latency::Spread {
            median: Duration::from_millis(300),
            p99: Duration::from_secs(1),
        });
        // What the service spends with nothing asked of it (its background loops), for
        // telling that apart from what a booking costs.
        let idle_from = cpu_time(service.id());
        tokio::time::sleep(Duration::from_secs(2)).await;
        let idle = cpu_time(service.id()).saturating_sub(idle_from) / 2;
        let before_calls = stand_in.pauses().len();
        common::statements_reset(&pool).await;
        let cpu_before = cpu_time(service.id());
        // Said as it starts, so a profiler can be pointed at the service for this phase.
        eprintln!("booking for {seconds} s (service pid {})", service.id());
        let started = Instant::now();
        let deadline = started + Duration::from_secs(seconds);
        let tasks: Vec<_> = (0..clients)
            .map(|client| {
                let (http, base, key, secret, quotes) = (
                    http.clone(),
                    base.clone(),
                    key.clone(),
                    secret.clone(),
                    Arc::clone(&quotes),
                );
                tokio::spawn(async move {
                    let (mut latencies, mut refused) = (Vec::new(), 0usize);
                    let mut n = 0;
                    while Instant::now() < deadline {
                        let Some(quote_id) = quotes.lock().unwrap().pop() else {
                            break;
                        };
                        let at = Instant::now();
                        let booked = http
                            .post(format!("{base}/v1/jobs"))
                            .basic_auth(&key, Some(&secret))
                            .header("Idempotency-Key", format!("live-bench-{client}-{n}"))
                            .json(&booking_body(&quote_id))
                            .send()
                            .await
                            .is_ok_and(|r| r.status() == 201);
                        if booked {
                            latencies.push(at.elapsed());
                        } else {
                            refused += 1;
                        }
                        n += 1;
                    }
                    (latencies, refused)
                })
            })
            .collect();
        let (mut all, mut refused) = (Vec::new(), 0);
        for task in tasks {
            let (latencies, failed) = task.await.unwrap();
            all.extend(latencies);
            refused += failed;
        }
        let elapsed = started.elapsed();
        let cpu = cpu_time(service.id()).saturating_sub(cpu_before);
        let booked = all.len();
        let mut latency = Latencies(all);
        let mut provider = Latencies(stand_in.pauses()[before_calls..].to_vec());
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        common::statements_report(&pool, "bookings", booked).await;
        let authorised: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM charges WHERE environment = 'live' AND status = 'authorised'",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        println!("clients: {clients}, seconds: {seconds}, pool: 16 connections");
        println!("| measure | result |");
        println!("|---|---|");
        println!(
            "| live bookings | {:.0}/s ({booked} in {:.1} s, {refused} not booked) |",
            booked as f64 / elapsed.as_secs_f64(),
            elapsed.as_secs_f64()
        );
        println!(
            "| booking latency | p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms |",
            ms(latency.percentile(0.5)),
            ms(latency.percentile(0.99)),
            ms(latency.percentile(1.0)),
        );
        println!(
            "| provider latency (stand-in) | p50 {:.0} ms, p99 {:.0} ms |",
            ms(provider.percentile(0.5)),
            ms(provider.percentile(0.99)),
        );
        println!(
            "| p99 over the provider's p99 | {:+.0} ms |",
            ms(latency.percentile(0.99)) - ms(provider.percentile(0.99))
        );
        println!(
            "| service CPU per booking | {:.0} µs |",
            cpu.as_secs_f64() * 1e6 / booked.max(1) as f64
        );
        println!(
            "| service CPU idle (before the phase) | {:.1} ms per second |",
            idle.as_secs_f64() * 1e3
        );
        println!(
            "| holds at the stand-in / authorised charges | {} / {authorised} |",
            stand_in.holds().len()
        );
        let _ = service.kill();
        let _ = service.wait();
        pool.close().await;
        let _ = tokio::task::spawn_blocking(move || cluster.stop()).await;
        let _ = std::fs::remove_dir_all(&root);
    });
}
