//! Quotes, bookings and job reads under load, beside the machine's one-row insert ceiling,
//! with the CPU time each request costs the service and PostgreSQL.
//!
//! Starts a private PostgreSQL cluster, measures the ceiling with pgbench (8 clients, one
//! `INSERT` per transaction), then runs the real service in this process, on a runtime of its
//! own, on that cluster and drives it over HTTP from `BENCH_CLIENTS` concurrent clients
//! (default 32) for `BENCH_SECONDS` per phase (default 10): quotes, then bookings of quotes
//! made beforehand, each with its own `Idempotency-Key`, then reads of the booked jobs. Client
//! and service share the machine; the CPU figures count the service's threads and the
//! cluster's processes only (read from `/proc` around each phase and a settling second after
//! it, so background work a phase causes is counted with it). The service's pool has 32
//! connections, or `BENCH_POOL_SIZE`. `BENCH_LOGS=1` logs as `courier serve` does (a line per
//! request, to this process's standard error), so that the logs' cost is counted too.
//!
//! cargo bench -p courier --bench api_load

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cpu::CpuSample;
use common::{Bench, Latencies, env_or};
use courier_core::infra::db::{EmbeddedPostgres, create_database_if_missing, find_server_binaries};

/// Runs `request` from `clients` tasks until `seconds` pass; returns (completed, latencies).
async fn drive<F, Fut>(clients: usize, seconds: u64, request: F) -> (usize, Latencies, Duration)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = bool> + Send,
{
    let request = Arc::new(request);
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let request = Arc::clone(&request);
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut n = 0;
                while Instant::now() < deadline {
                    let at = Instant::now();
                    if !request(client * 1_000_000 + n).await {
                        break;
                    }
                    latencies.push(at.elapsed());
                    n += 1;
                }
                latencies
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    let elapsed = started.elapsed();
    (all.len(), Latencies(all), elapsed)
}

/// CPU per request of a phase that made `requests`, counted from `before` to a second after
/// the phase (the background work it caused: events, dispatch passes).
async fn settled_cpu(bench: &Bench, before: CpuSample, requests: usize) -> (f64, f64) {
    tokio::time::sleep(Duration::from_secs(1)).await;
    before.per_request(&bench.cpu(), requests)
}

fn pgbench_ceiling(cluster: &EmbeddedPostgres, seconds: u64) -> Option<f64> {
    let pgbench = find_server_binaries()?.join("pgbench");
    let script = std::env::temp_dir().join("courier-bench-insert.sql");
    std::fs::write(&script, "INSERT INTO ceiling (payload) VALUES ('x');\n").ok()?;
    let output = std::process::Command::new(pgbench)
        .args(["-n", "-c", "8", "-j", "2", "-T", &seconds.to_string(), "-f"])
        .arg(&script)
        .arg(cluster.url("ceiling"))
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .find(|l| l.starts_with("tps = "))
        .and_then(|l| l["tps = ".len()..].split_whitespace().next()?.parse().ok())
}

fn main() {
    let clients: usize = env_or("BENCH_CLIENTS", 32);
    let seconds: u64 = env_or("BENCH_SECONDS", 10);
    let _logs = std::env::var("BENCH_LOGS")
        .is_ok_and(|v| v == "1")
        .then(courier_core::infra::telemetry::init_logging);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let bench = Arc::new(Bench::start("api-load", clients, |_| None).await);
        create_database_if_missing(&bench.cluster, "ceiling")
            .await
            .unwrap();
        let ceiling_pool = sqlx::PgPool::connect(&bench.cluster.url("ceiling"))
            .await
            .unwrap();
        sqlx::query("CREATE TABLE ceiling (id bigserial PRIMARY KEY, payload text)")
            .execute(&ceiling_pool)
            .await
            .unwrap();
        ceiling_pool.close().await;
        let ceiling = {
            let cluster = Arc::clone(&bench.cluster);
            tokio::task::spawn_blocking(move || pgbench_ceiling(&cluster, seconds))
                .await
                .unwrap()
        };

        bench.statements_reset().await;
        let b = Arc::clone(&bench);
        let cpu_before = bench.cpu();
        let (quotes, mut quote_latency, quote_time) = drive(clients, seconds, move |_| {
            let b = Arc::clone(&b);
            async move { b.quote().await.is_some() }
        })
        .await;
        let quote_cpu = settled_cpu(&bench, cpu_before, quotes).await;
        bench.statements_report("quotes", quotes).await;

        // Quotes to book, made beforehand so the booking phase measures bookings alone.
        let wanted = (quotes as f64 * 0.6) as usize + 1000;
        let stock = Arc::new(tokio::sync::Mutex::new(Vec::with_capacity(wanted)));
        let per_client = wanted / clients + 1;
        let tasks: Vec<_> = (0..clients)
            .map(|_| {
                let (b, stock) = (Arc::clone(&bench), Arc::clone(&stock));
                tokio::spawn(async move {
                    for _ in 0..per_client {
                        if let Some(q) = b.quote().await {
                            stock
                                .lock()
                                .await
                                .push(q["id"].as_str().unwrap().to_owned());
                        }
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let (b, b_stock) = (Arc::clone(&bench), Arc::clone(&stock));
        let booked = Arc::new(tokio::sync::Mutex::new(Vec::new()));
        let b_booked = Arc::clone(&booked);
        bench.statements_reset().await;
        let cpu_before = bench.cpu();
        let (bookings, mut booking_latency, booking_time) = drive(clients, seconds, move |n| {
            let (b, stock, booked) = (Arc::clone(&b), Arc::clone(&b_stock), Arc::clone(&b_booked));
            async move {
                let Some(quote_id) = stock.lock().await.pop() else {
                    return false;
                };
                match b.book_job(&quote_id, &format!("bench-{n}")).await {
                    Some(id) => {
                        booked.lock().await.push(id);
                        true
                    }
                    None => false,
                }
            }
        })
        .await;
        let booking_cpu = settled_cpu(&bench, cpu_before, bookings).await;
        bench.statements_report("bookings", bookings).await;

        let jobs = Arc::new(std::mem::take(&mut *booked.lock().await));
        let b = Arc::clone(&bench);
        let cpu_before = bench.cpu();
        let (reads, mut read_latency, read_time) = drive(clients, seconds, move |n| {
            let (b, jobs) = (Arc::clone(&b), Arc::clone(&jobs));
            async move {
                let id = &jobs[n % jobs.len().max(1)];
                b.read(&format!("/v1/jobs/{id}")).await
            }
        })
        .await;
        let read_cpu = settled_cpu(&bench, cpu_before, reads).await;
        bench.statements_report("job reads", reads).await;

        // The jobs list's first page once the merchant has `BENCH_GROWN_JOBS` jobs (default
        // 100,000; 0 skips it), from one client: the request's own time, not a queue's.
        let grown: usize = env_or("BENCH_GROWN_JOBS", 100_000);
        let listing = if grown > 0 {
            let had = bench.grow_jobs(grown).await;
            bench.statements_reset().await;
            let b = Arc::clone(&bench);
            let cpu_before = bench.cpu();
            let (lists, latency, time) = drive(1, seconds, move |_| {
                let b = Arc::clone(&b);
                async move { b.read("/v1/jobs").await }
            })
            .await;
            let list_cpu = settled_cpu(&bench, cpu_before, lists).await;
            bench.statements_report("jobs list, page 1", lists).await;
            Some((had + grown, lists, latency, time, list_cpu))
        } else {
            None
        };

        let per_second = |n: usize, t: Duration| n as f64 / t.as_secs_f64();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let quote_rate = per_second(quotes, quote_time);
        let booking_rate = per_second(bookings, booking_time);
        let read_rate = per_second(reads, read_time);
        println!("clients: {clients}, seconds per phase: {seconds}");
        println!("| measure | result | CPU per request: service + PostgreSQL |");
        println!("|---|---|---|");
        match ceiling {
            Some(tps) => println!("| pgbench one-row INSERT ceiling (8 clients) | {tps:.0}/s | |"),
            None => println!("| pgbench one-row INSERT ceiling | pgbench not found | |"),
        }
        let of_ceiling = |rate: f64| {
            ceiling.map_or("-".into(), |c| {
                format!("{:.0}% of the ceiling", rate / c * 100.0)
            })
        };
        let cpu = |(service, postgres): (f64, f64)| {
            format!(
                "{:.0} µs = {service:.0} µs + {postgres:.0} µs",
                service + postgres
            )
        };
        println!(
            "| quotes | {quote_rate:.0}/s ({}), p50 {:.2} ms, p99 {:.2} ms | {} |",
            of_ceiling(quote_rate),
            ms(quote_latency.percentile(0.5)),
            ms(quote_latency.percentile(0.99)),
            cpu(quote_cpu),
        );
        println!(
            "| bookings | {booking_rate:.0}/s ({}), p50 {:.2} ms, p99 {:.2} ms | {} |",
            of_ceiling(booking_rate),
            ms(booking_latency.percentile(0.5)),
            ms(booking_latency.percentile(0.99)),
            cpu(booking_cpu),
        );
        println!(
            "| job reads | {read_rate:.0}/s, p50 {:.2} ms, p99 {:.2} ms | {} |",
            ms(read_latency.percentile(0.5)),
            ms(read_latency.percentile(0.99)),
            cpu(read_cpu),
        );
        if let Some((jobs, lists, mut latency, time, list_cpu)) = listing {
            println!(
                "| jobs list page 1 at {jobs} jobs (1 client) | {:.0}/s, p50 {:.2} ms, p99 {:.2} ms | {} |",
                per_second(lists, time),
                ms(latency.percentile(0.5)),
                ms(latency.percentile(0.99)),
                cpu(list_cpu),
            );
        }
        match Arc::try_unwrap(bench) {
            Ok(bench) => bench.finish().await,
            Err(_) => eprintln!("bench still shared at the end"),
        }
    });
}
