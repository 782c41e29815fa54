//! Quotes and bookings under load, beside the machine's one-row insert ceiling.
//!
//! Starts a private PostgreSQL cluster, measures the ceiling with pgbench (8 clients, one
//! `INSERT` per transaction), then runs the real service in this process on that cluster and
//! drives it over HTTP from `BENCH_CLIENTS` concurrent clients (default 32) for
//! `BENCH_SECONDS` per phase (default 10): first quotes, then bookings of quotes made
//! beforehand, each with its own `Idempotency-Key`. Client and service share the machine.
//!
//! cargo bench -p courier --bench api_load

use std::sync::Arc;
use std::time::{Duration, Instant};

use courier::auth::Authenticator;
use courier::config::Config;
use courier::db::{EmbeddedPostgres, create_database_if_missing, find_server_binaries};
use courier::secrets::SecretKey;
use serde_json::{Value, json};

const PICKUP: (f64, f64) = (20.00285, 50.0043);
const DROPOFF: (f64, f64) = (20.01615, 50.0103);

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Latencies(Vec<Duration>);

impl Latencies {
    fn percentile(&mut self, p: f64) -> Duration {
        self.0.sort();
        let index = ((self.0.len() as f64 - 1.0) * p).round() as usize;
        self.0[index]
    }
}

fn quote_body() -> Value {
    json!({
        "pickup": {"latitude": PICKUP.0, "longitude": PICKUP.1},
        "dropoff": {"latitude": DROPOFF.0, "longitude": DROPOFF.1},
        "vehicle": "car",
    })
}

fn booking_body(quote_id: &str) -> Value {
    let stop = |(lat, lon): (f64, f64)| {
        json!({
            "latitude": lat, "longitude": lon, "address": "1 Bench Street",
            "contact_name": "Bench", "contact_phone": "+966 11 463 5555",
        })
    };
    json!({"quote_id": quote_id, "pickup": stop(PICKUP), "dropoff": stop(DROPOFF)})
}

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

fn pgbench_ceiling(cluster: &EmbeddedPostgres, seconds: u64) -> Option<f64> {
    let pgbench = find_server_binaries()?.join("pgbench");
    let script = std::env::temp_dir().join("courier-bench-insert.sql");
    std::fs::write(&script, "INSERT INTO ceiling (payload) VALUES ('x');\n").ok()?;
    let output = std::process::Command::new(pgbench)
        .args(["-n", "-c", "8", "-j", "2", "-T", &seconds.to_string(), "-f"])
        .arg(&script)
        .arg(cluster.url("bench"))
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
    let root = std::env::temp_dir().join(format!("courier-bench-{}", std::process::id()));
    let cluster = Arc::new(EmbeddedPostgres::start(&root).expect("a private PostgreSQL cluster"));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        create_database_if_missing(&cluster, "bench").await.unwrap();
        let pool = sqlx::PgPool::connect(&cluster.url("bench")).await.unwrap();
        sqlx::query("CREATE TABLE ceiling (id bigserial PRIMARY KEY, payload text)")
            .execute(&pool)
            .await
            .unwrap();
        let ceiling = {
            let cluster = Arc::clone(&cluster);
            tokio::task::spawn_blocking(move || pgbench_ceiling(&cluster, seconds))
                .await
                .unwrap()
        };

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let data_dir = root.join("data");
        let url = cluster.url("bench");
        let secret = "be".repeat(32);
        let config = Config::from_lookup(|name| match name {
            "DATABASE_URL" => Some(url.clone()),
            "COURIER_DATA_DIR" => Some(data_dir.to_string_lossy().into_owned()),
            "COURIER_SECRET_KEY" => Some(secret.clone()),
            "COURIER_DB_POOL_SIZE" => Some("32".into()),
            // One key drives the whole load: budgets it never reaches, so the limiter's cost
            // is measured without refusals.
            "COURIER_RATE_LIMIT_QUOTES_PER_MINUTE"
            | "COURIER_RATE_LIMIT_BOOKINGS_PER_MINUTE"
            | "COURIER_RATE_LIMIT_READS_PER_MINUTE" => Some("100000000".into()),
            _ => None,
        })
        .unwrap();
        tokio::spawn(courier::app::run(config, listener, std::future::pending()));
        let base = format!("http://{address}");
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(clients)
            .build()
            .unwrap();
        for _ in 0..400 {
            if http
                .get(format!("{base}/readyz"))
                .send()
                .await
                .is_ok_and(|r| r.status() == 200)
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let key = SecretKey::from_hex(&"be".repeat(32)).unwrap();
        let merchant =
            courier::merchants::create(&pool, &Authenticator::new(pool.clone(), &key), "Bench")
                .await
                .unwrap();
        let (api_key, api_secret) = (merchant.test_key.clone(), merchant.test_secret.clone());
        http.post(format!("{base}/v1/payment-methods"))
            .basic_auth(&api_key, Some(&api_secret))
            .json(&json!({"provider_ref": "pm_sandbox_4242424242424242"}))
            .send()
            .await
            .unwrap();
        // The demo city loads in the background: wait for the first quote.
        let quote = |http: reqwest::Client, base: String, k: String, s: String| async move {
            let response = http
                .post(format!("{base}/v1/quotes"))
                .basic_auth(&k, Some(&s))
                .json(&quote_body())
                .send()
                .await
                .ok()?;
            (response.status() == 201).then_some(())?;
            response.json::<Value>().await.ok()
        };
        while quote(
            http.clone(),
            base.clone(),
            api_key.clone(),
            api_secret.clone(),
        )
        .await
        .is_none()
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        let (q_http, q_base, q_key, q_secret) = (
            http.clone(),
            base.clone(),
            api_key.clone(),
            api_secret.clone(),
        );
        let (quotes, mut quote_latency, quote_time) = drive(clients, seconds, move |_| {
            let (http, base, k, s) = (
                q_http.clone(),
                q_base.clone(),
                q_key.clone(),
                q_secret.clone(),
            );
            async move { quote(http, base, k, s).await.is_some() }
        })
        .await;

        // Quotes to book, made beforehand so the booking phase measures bookings alone.
        let wanted = (quotes as f64 / seconds as f64 * 0.6 * seconds as f64) as usize + 1000;
        let stock = Arc::new(tokio::sync::Mutex::new(Vec::with_capacity(wanted)));
        {
            let (m_http, m_base, m_key, m_secret, m_stock) = (
                http.clone(),
                base.clone(),
                api_key.clone(),
                api_secret.clone(),
                Arc::clone(&stock),
            );
            let per_client = wanted / clients + 1;
            let tasks: Vec<_> = (0..clients)
                .map(|_| {
                    let (http, base, k, s, stock) = (
                        m_http.clone(),
                        m_base.clone(),
                        m_key.clone(),
                        m_secret.clone(),
                        Arc::clone(&m_stock),
                    );
                    tokio::spawn(async move {
                        for _ in 0..per_client {
                            if let Some(q) =
                                quote(http.clone(), base.clone(), k.clone(), s.clone()).await
                            {
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
        }
        let (b_http, b_base, b_key, b_secret, b_stock) = (
            http.clone(),
            base.clone(),
            api_key.clone(),
            api_secret.clone(),
            Arc::clone(&stock),
        );
        let (bookings, mut booking_latency, booking_time) = drive(clients, seconds, move |n| {
            let (http, base, k, s, stock) = (
                b_http.clone(),
                b_base.clone(),
                b_key.clone(),
                b_secret.clone(),
                Arc::clone(&b_stock),
            );
            async move {
                let Some(quote_id) = stock.lock().await.pop() else {
                    return false;
                };
                let response = http
                    .post(format!("{base}/v1/jobs"))
                    .basic_auth(&k, Some(&s))
                    .header("Idempotency-Key", format!("bench-{n}"))
                    .json(&booking_body(&quote_id))
                    .send()
                    .await;
                response.is_ok_and(|r| r.status() == 201)
            }
        })
        .await;

        let per_second = |n: usize, t: Duration| n as f64 / t.as_secs_f64();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let quote_rate = per_second(quotes, quote_time);
        let booking_rate = per_second(bookings, booking_time);
        println!("clients: {clients}, seconds per phase: {seconds}");
        println!("| measure | result |");
        println!("|---|---|");
        match ceiling {
            Some(tps) => println!("| pgbench one-row INSERT ceiling (8 clients) | {tps:.0}/s |"),
            None => println!("| pgbench one-row INSERT ceiling | pgbench not found |"),
        }
        println!(
            "| quotes | {quote_rate:.0}/s ({}), p50 {:.2} ms, p99 {:.2} ms |",
            ceiling.map_or("-".into(), |c| format!(
                "{:.0}% of the ceiling",
                quote_rate / c * 100.0
            )),
            ms(quote_latency.percentile(0.5)),
            ms(quote_latency.percentile(0.99)),
        );
        println!(
            "| bookings | {booking_rate:.0}/s ({}), p50 {:.2} ms, p99 {:.2} ms |",
            ceiling.map_or("-".into(), |c| format!(
                "{:.0}% of the ceiling",
                booking_rate / c * 100.0
            )),
            ms(booking_latency.percentile(0.5)),
            ms(booking_latency.percentile(0.99)),
        );
        pool.close().await;
    });
    drop(runtime);
    let _ = cluster.stop();
    let _ = std::fs::remove_dir_all(&root);
}
