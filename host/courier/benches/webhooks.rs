//! Webhook delivery as a merchant's system sees it: `courier serve` runs as its own process on
//! a private PostgreSQL cluster; this process books jobs over HTTP (each booking raises one
//! `job.booked`) and receives the webhooks on a local HTTPS receiver that answers 200 at once.
//!
//! Shapes, run one after the other on the same, growing database:
//! - no endpoint (the reference: what a booking costs without webhooks);
//! - one merchant with 1, 4 and 16 endpoints;
//! - 100 merchants with 2 endpoints each (bookings spread over them);
//! - a backlog drained: bookings made by a service with delivery off
//!   (`COURIER_WEBHOOK_DELIVERY=false`), then sent by a service started with it on, for 4 and
//!   16 endpoints of one merchant and for 100 merchants with 2 each: the delivery capacity,
//!   and the CPU per delivery with no booking beside it;
//! - a steady rate of bookings to a merchant with 4 endpoints (the quotes asked for
//!   beforehand: quoting raises no event, so it stays out of the measure);
//! - events from bookings and from the jobs' progress at a steady rate (`advanced`): each job
//!   booked in the manual sandbox scenario, then advanced three times over HTTP (assigned,
//!   collected, delivered), four events a job, to a merchant with 4 endpoints;
//! - sandbox bookings that the simulator then delivers (`COURIER_SANDBOX_SPEED`), each job
//!   raising its events as it moves: four events per booking from real state changes, to a
//!   merchant with 4 endpoints (delay and rate only: the simulator's own work outweighs the
//!   deliveries' CPU).
//!
//! Each reports bookings/s, deliveries/s (first arrival to last), the delay from the event
//! (its `occurred_at`) to the arrival of its first attempt (p50, p99, max), and the CPU time
//! of the service process and of the cluster's processes per delivery: each shape's CPU per
//! booking less the reference's, divided by the endpoints per booking.
//!
//! cargo bench -p courier --bench webhooks
//!
//! `COURIER_BIN` runs another build of the service. `WEBHOOK_BENCH_BOOKINGS` (default 2000 per shape), `WEBHOOK_BENCH_CLIENTS` (16),
//! `WEBHOOK_BENCH_RATE` (bookings/s of the steady shape, 200), `WEBHOOK_BENCH_SANDBOX_RATE`
//! (bookings/s of the sandbox shape, 250: four events each), `WEBHOOK_BENCH_EVENT_RATE`
//! (requests, so events, per second of the `advanced` shape, 1000) and `WEBHOOK_BENCH_SHAPES`
//! (a comma-separated subset of `1,4,16,100x2,drain4,drain16,drain100x2,steady,advanced,sandbox`)
//! change the loads;
//! `WEBHOOK_BENCH_STATEMENTS=1` prints the statements that took PostgreSQL's time per shape.

mod common;
#[path = "../../../tests/e2e/support/receiver.rs"]
#[allow(dead_code)]
mod receiver;
#[path = "../../../tests/e2e/support/tls.rs"]
#[allow(dead_code)]
mod tls;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use common::{SECRET_HEX, booking_body, env_or, quote_body, wait_until_ready};
use courier_core::infra::db::EmbeddedPostgres;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

struct Merchant {
    id: uuid::Uuid,
    key: String,
    secret: String,
}

struct Run {
    cluster: EmbeddedPostgres,
    root: std::path::PathBuf,
    pool: sqlx::PgPool,
    settings: Settings,
    service: Mutex<std::process::Child>,
    http: reqwest::Client,
    base: String,
    receiver: receiver::Receiver,
    /// The service runs the sandbox simulator, fast.
    sandbox: AtomicBool,
    /// An instant and the wall-clock time it stands for, to place arrivals on the clock the
    /// events' `occurred_at` is read from.
    clock: (Instant, SystemTime),
}

/// One load: `bookings` spread over `merchants`, each with `endpoints_each` endpoints, from
/// `clients` at once, or at `rate` per second when given.
struct Shape {
    name: String,
    merchants: Vec<Merchant>,
    endpoints_each: usize,
    bookings: usize,
    clients: usize,
    rate: Option<f64>,
    /// The simulator moves the jobs on: wait for them to be delivered, and count their events.
    simulated: bool,
    /// Each job is booked in the manual sandbox scenario and then advanced three times
    /// (assigned, collected, delivered), four events a job; `rate` counts these requests.
    advanced: bool,
}

/// How the service is started.
struct Settings {
    database_url: String,
    address: String,
    data_dir: std::path::PathBuf,
    ca: std::path::PathBuf,
}

impl Settings {
    /// Starts `courier serve`; `delivery` false leaves the events it records for later.
    fn spawn(&self, delivery: bool, sandbox: bool) -> std::process::Child {
        // `COURIER_BIN` runs another build (A/B comparisons).
        let binary =
            std::env::var("COURIER_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_courier").into());
        std::process::Command::new(binary)
            .arg("serve")
            .env("DATABASE_URL", &self.database_url)
            .env("COURIER_LISTEN", &self.address)
            .env("COURIER_DATA_DIR", &self.data_dir)
            .env("COURIER_SECRET_KEY", SECRET_HEX)
            .env("COURIER_DB_POOL_SIZE", "32")
            .env(
                "COURIER_SANDBOX_SPEED",
                if sandbox { "100000" } else { "0" },
            )
            .env("COURIER_SANDBOX_INTERVAL_MS", "20")
            .env("COURIER_DRAIN_MS", "0")
            .env("COURIER_WEBHOOK_ALLOW_PRIVATE", "true")
            .env("COURIER_WEBHOOK_EXTRA_CA", &self.ca)
            .env("COURIER_WEBHOOK_DELIVERY", delivery.to_string())
            .env("COURIER_RATE_LIMIT_QUOTES_PER_MINUTE", "100000000")
            .env("COURIER_RATE_LIMIT_BOOKINGS_PER_MINUTE", "100000000")
            .env("COURIER_RATE_LIMIT_READS_PER_MINUTE", "100000000")
            .env("RUST_LOG", "warn")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("courier serve")
    }
}

/// CPU per booking of a shape, in microseconds.
#[derive(Clone, Copy)]
struct Cost {
    service: f64,
    postgres: f64,
}

impl Run {
    async fn start() -> Self {
        let (cluster, root) = common::private_cluster("webhooks", "bench").await;
        let mut pool = sqlx::PgPool::connect(&cluster.url("bench")).await.unwrap();
        let cluster = if statements_wanted() {
            sqlx::query("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
                .execute(&pool)
                .await
                .unwrap();
            pool.close().await;
            let root = root.clone();
            let cluster = tokio::task::spawn_blocking(move || {
                cluster.stop().unwrap();
                EmbeddedPostgres::start(&root).expect("the cluster again")
            })
            .await
            .unwrap();
            // The cluster may listen on another port now.
            pool = sqlx::PgPool::connect(&cluster.url("bench")).await.unwrap();
            sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                .execute(&pool)
                .await
                .unwrap();
            cluster
        } else {
            cluster
        };
        let url = cluster.url("bench");
        let receiver = receiver::Receiver::start().await;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let address = format!("127.0.0.1:{port}");
        let settings = Settings {
            database_url: url,
            address: address.clone(),
            data_dir: root.join("service"),
            ca: receiver.ca_path.clone(),
        };
        let service = settings.spawn(true, false);
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .build()
            .unwrap();
        let base = format!("http://{address}");
        wait_until_ready(&http, &base).await;
        Self {
            cluster,
            root,
            pool,
            settings,
            service: Mutex::new(service),
            http,
            base,
            receiver,
            sandbox: AtomicBool::new(false),
            clock: (Instant::now(), SystemTime::now()),
        }
    }

    /// Stops the service and starts it again, delivering webhooks or not; returns once it is
    /// ready.
    async fn restart(&self, delivery: bool) {
        self.replace_service(Some(delivery));
        wait_until_ready(&self.http, &self.base).await;
    }

    /// Kills the service, and starts another unless `delivery` is None.
    fn replace_service(&self, delivery: Option<bool>) {
        let mut service = self.service.lock().unwrap();
        let _ = service.kill();
        let _ = service.wait();
        if let Some(delivery) = delivery {
            *service = self
                .settings
                .spawn(delivery, self.sandbox.load(Ordering::SeqCst));
        }
    }

    async fn merchant(&self, name: &str, endpoints: &[String]) -> Merchant {
        let key = courier_core::infra::secrets::SecretKey::from_hex(SECRET_HEX).unwrap();
        let authenticator = courier_core::auth::Authenticator::new(self.pool.clone(), &key);
        let created =
            courier_core::merchants::Merchants::new(self.pool.clone(), authenticator.clone())
                .create(name)
                .await
                .unwrap();
        let merchant = Merchant {
            id: created.merchant_id,
            key: created.test_key,
            secret: created.test_secret,
        };
        let card = self
            .post(&merchant, "/v1/payment-methods", None)
            .json(&json!({"provider_ref": "pm_sandbox_4242424242424242"}))
            .send()
            .await
            .unwrap();
        assert_eq!(card.status(), 201);
        for path in endpoints {
            let registered = self
                .post(&merchant, "/v1/webhooks", None)
                .json(&json!({"url": self.receiver.url(path)}))
                .send()
                .await
                .unwrap();
            assert_eq!(registered.status(), 201);
        }
        merchant
    }

    fn post(&self, merchant: &Merchant, path: &str, key: Option<&str>) -> reqwest::RequestBuilder {
        let request = self
            .http
            .post(format!("{}{path}", self.base))
            .basic_auth(&merchant.key, Some(&merchant.secret));
        match key {
            Some(key) => request.header("Idempotency-Key", key),
            None => request,
        }
    }

    /// A quote of the bench journey. Just after a start the demo city may still be loading
    /// (503): asked again.
    async fn quote(&self, merchant: &Merchant) -> Value {
        for _ in 0..400 {
            let response = self
                .post(merchant, "/v1/quotes", None)
                .json(&quote_body())
                .send()
                .await
                .unwrap();
            if response.status() == 201 {
                return response.json().await.unwrap();
            }
            assert_eq!(response.status(), 503, "{:?}", response.text().await);
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("no quote within 10 s");
    }

    /// Books one job on `quote`, or on a quote asked for now; returns its id.
    async fn book(&self, merchant: &Merchant, n: usize, quote: Option<String>) -> String {
        self.book_in(merchant, n, quote, None).await
    }

    /// [`Self::book`] in the sandbox `scenario` when given.
    async fn book_in(
        &self,
        merchant: &Merchant,
        n: usize,
        quote: Option<String>,
        scenario: Option<&str>,
    ) -> String {
        let quote_id = match quote {
            Some(id) => id,
            None => self.quote(merchant).await["id"]
                .as_str()
                .expect("a quote")
                .to_owned(),
        };
        let mut request = self
            .post(merchant, "/v1/jobs", Some(&format!("bench-{n}-{quote_id}")))
            .json(&booking_body(&quote_id));
        if let Some(scenario) = scenario {
            request = request.header("Courier-Sandbox-Scenario", scenario);
        }
        let booked = request.send().await.unwrap();
        assert_eq!(booked.status(), 201);
        let job: Value = booked.json().await.unwrap();
        job["id"].as_str().expect("a job id").to_owned()
    }

    /// Books `jobs` jobs, the n-th for `merchants[n % len]` on `quotes[n]` (or a quote asked
    /// for then), in the manual scenario and advances each three times:
    /// four requests a job, each raising one event, sent at `rate` requests per second. Jobs
    /// go in waves of `rate / 4` (a quarter of a second of requests): a wave is booked, then
    /// advanced, step by step, so each job's requests are a quarter of a second apart.
    async fn book_and_advance(
        self: &Arc<Self>,
        merchants: &Arc<Vec<Merchant>>,
        jobs: usize,
        rate: f64,
        mut quotes: Vec<String>,
    ) {
        const STEPS: usize = 4;
        let wave = ((rate / STEPS as f64) as usize).max(1);
        let started = tokio::time::Instant::now();
        let at = move |job: usize, step: usize| {
            let tick = (job / wave) * wave * STEPS + step * wave + job % wave;
            started + Duration::from_secs_f64(tick as f64 / rate)
        };
        let mut tasks = Vec::with_capacity(jobs);
        for n in 0..jobs {
            let (run, merchants) = (Arc::clone(self), Arc::clone(merchants));
            let quote = quotes.get_mut(n).map(std::mem::take);
            tasks.push(tokio::spawn(async move {
                let merchant = &merchants[n % merchants.len()];
                tokio::time::sleep_until(at(n, 0)).await;
                let job = run.book_in(merchant, n, quote, Some("manual")).await;
                for step in 1..STEPS {
                    tokio::time::sleep_until(at(n, step)).await;
                    let advanced = run
                        .post(merchant, &format!("/v1/sandbox/jobs/{job}/advance"), None)
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(advanced.status(), 200, "{:?}", advanced.text().await);
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    }

    /// Books `count` jobs, spread over `merchants`, from `clients` at once, or at `rate` per
    /// second when given; the n-th on `quotes[n]` if there is one, else on a quote asked for
    /// then.
    async fn book_all(
        self: &Arc<Self>,
        merchants: &Arc<Vec<Merchant>>,
        count: usize,
        clients: usize,
        rate: Option<f64>,
        mut quotes: Vec<String>,
    ) {
        let slots = Arc::new(Semaphore::new(clients));
        let mut ticks = rate.map(|r| tokio::time::interval(Duration::from_secs_f64(1.0 / r)));
        let mut tasks = Vec::with_capacity(count);
        for n in 0..count {
            if let Some(ticks) = &mut ticks {
                ticks.tick().await;
            }
            let permit = Arc::clone(&slots).acquire_owned().await.unwrap();
            let (run, merchants) = (Arc::clone(self), Arc::clone(merchants));
            let quote = quotes.get_mut(n).map(std::mem::take);
            tasks.push(tokio::spawn(async move {
                run.book(&merchants[n % merchants.len()], n, quote).await;
                drop(permit);
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    }

    /// A quote for each of `count` bookings, the n-th of `merchants[n % len]`.
    async fn quotes_for(
        self: &Arc<Self>,
        merchants: &Arc<Vec<Merchant>>,
        count: usize,
        clients: usize,
    ) -> Vec<String> {
        let slots = Arc::new(Semaphore::new(clients));
        let mut tasks = Vec::with_capacity(count);
        for n in 0..count {
            let permit = Arc::clone(&slots).acquire_owned().await.unwrap();
            let (run, merchants) = (Arc::clone(self), Arc::clone(merchants));
            tasks.push(tokio::spawn(async move {
                let quote = run.quote(&merchants[n % merchants.len()]).await;
                drop(permit);
                quote["id"].as_str().expect("a quote").to_owned()
            }));
        }
        let mut quotes = Vec::with_capacity(count);
        for task in tasks {
            quotes.push(task.await.unwrap());
        }
        quotes
    }

    fn cpu(&self) -> (Duration, Duration) {
        let pid_file = std::fs::read_to_string(self.root.join("data").join("postmaster.pid"))
            .expect("the cluster is running");
        let postmaster = pid_file.lines().next().unwrap().trim().parse().unwrap();
        (
            common::cpu::process_cpu(self.service.lock().unwrap().id()),
            common::cpu::cluster_cpu(postmaster),
        )
    }

    async fn wait_for_total(&self, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(600);
        while self.receiver.total() < count {
            assert!(
                Instant::now() < deadline,
                "only {} of {count} deliveries arrived",
                self.receiver.total()
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Books `bookings` jobs for one shape and waits for every delivery; prints the figures.
    async fn shape(self: &Arc<Self>, shape: Shape, reference: Option<Cost>) -> Cost {
        let Shape {
            name,
            merchants,
            endpoints_each,
            bookings,
            clients,
            rate,
            simulated,
            advanced,
        } = shape;
        let merchants = Arc::new(merchants);
        // At a rate the quotes are asked for beforehand: the rate is of bookings and their
        // events, and quoting (which raises none) stays out of the measure.
        let quotes = match rate {
            Some(_) => self.quotes_for(&merchants, bookings, clients).await,
            None => Vec::new(),
        };
        let before = self.receiver.total();
        let (service_before, postgres_before) = self.cpu();
        let started = Instant::now();
        match (advanced, rate) {
            (true, Some(rate)) => {
                self.book_and_advance(&merchants, bookings, rate, quotes)
                    .await
            }
            _ => {
                self.book_all(&merchants, bookings, clients, rate, quotes)
                    .await
            }
        }
        let booked_in = started.elapsed();
        let events = if simulated || advanced {
            self.events_once_delivered(&merchants).await
        } else {
            bookings
        };
        let expected = events * endpoints_each;
        self.wait_for_total(before + expected).await;
        // Background work the shape caused (the last records, autovacuum) counts with it.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let (service_after, postgres_after) = self.cpu();
        let per_booking =
            |a: Duration, b: Duration| b.saturating_sub(a).as_secs_f64() * 1e6 / bookings as f64;
        let cost = Cost {
            service: per_booking(service_before, service_after),
            postgres: per_booking(postgres_before, postgres_after),
        };
        let arrivals = self.receiver.arrivals_since(before);
        let (delays, first, last) = self.delays(&arrivals);
        let mut line = format!(
            "{name:>22}: {bookings} bookings in {:.2} s ({:.0}/s)",
            booked_in.as_secs_f64(),
            bookings as f64 / booked_in.as_secs_f64()
        );
        if simulated || advanced {
            line += &format!(
                "; {events} events ({:.0}/s while booking)",
                events as f64 / booked_in.as_secs_f64()
            );
        }
        if expected > 0 {
            let spread = last
                .saturating_duration_since(first)
                .as_secs_f64()
                .max(1e-3);
            line += &format!(
                "; {expected} deliveries, {:.0}/s first arrival to last; event to first attempt \
                 p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
                expected as f64 / spread,
                percentile(&delays, 0.50),
                percentile(&delays, 0.99),
                delays.last().copied().unwrap_or_default(),
            );
        }
        line += &format!(
            "; CPU per booking: service {:.0} µs, postgres {:.0} µs",
            cost.service, cost.postgres
        );
        if let (Some(reference), true) = (reference, expected > 0) {
            // The reference made as many events per booking, and delivered none.
            let per = |shape: f64, base: f64| (shape - base) * bookings as f64 / expected as f64;
            line += &format!(
                "; per delivery: service {:.0} µs, postgres {:.0} µs",
                per(cost.service, reference.service),
                per(cost.postgres, reference.postgres)
            );
        }
        println!("{line}");
        if statements_wanted() {
            self.print_statements().await;
        }
        cost
    }

    /// A load at a steady rate, made by `load` (its name, merchant and endpoints per event):
    /// first for a merchant without endpoints, the reference, then for one with 4.
    async fn with_and_without_endpoints(
        self: &Arc<Self>,
        title: &str,
        per_second: &str,
        load: impl Fn(String, Merchant, usize) -> Shape,
    ) {
        let quiet = self.merchant(&format!("{title}, no endpoints"), &[]).await;
        let reference = self
            .shape(load(format!("{per_second} x 0"), quiet, 0), None)
            .await;
        let paths = paths(&title.to_lowercase(), 0, 4);
        let merchant = self.merchant(title, &paths).await;
        self.shape(
            load(format!("{per_second} x 4"), merchant, 4),
            Some(reference),
        )
        .await;
    }

    /// Waits until the simulator has delivered every job of `merchants`; their events then.
    async fn events_once_delivered(&self, merchants: &[Merchant]) -> usize {
        let ids: Vec<uuid::Uuid> = merchants.iter().map(|m| m.id).collect();
        let deadline = Instant::now() + Duration::from_secs(600);
        loop {
            let moving: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM jobs WHERE merchant_id = ANY($1) AND status <> 'delivered'",
            )
            .bind(&ids)
            .fetch_one(&self.pool)
            .await
            .unwrap();
            if moving == 0 {
                break;
            }
            assert!(Instant::now() < deadline, "{moving} jobs still moving");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let events: i64 =
            sqlx::query_scalar("SELECT count(*) FROM events WHERE merchant_id = ANY($1)")
                .bind(&ids)
                .fetch_one(&self.pool)
                .await
                .unwrap();
        usize::try_from(events).unwrap()
    }

    /// The statements that took the cluster's time in the shape just run, then a fresh count.
    async fn print_statements(&self) {
        let rows: Vec<(String, i64, f64, f64)> = sqlx::query_as(
            "SELECT regexp_replace(left(query, 120), '\\s+', ' ', 'g'), calls, \
               total_exec_time, mean_exec_time FROM pg_stat_statements \
             ORDER BY total_exec_time DESC LIMIT 16",
        )
        .fetch_all(&self.pool)
        .await
        .unwrap();
        for (query, calls, total, mean) in rows {
            println!("    {total:>8.0} ms {calls:>7} calls {mean:>7.3} ms  {query}");
        }
        // Every statement, the round trips' `BEGIN` and `COMMIT` included.
        let (calls, total): (i64, f64) = sqlx::query_as(
            "SELECT sum(calls)::bigint, sum(total_exec_time) FROM pg_stat_statements",
        )
        .fetch_one(&self.pool)
        .await
        .unwrap();
        println!("    {total:>8.0} ms {calls:>7} calls in all");
        sqlx::query("SELECT pg_stat_statements_reset()")
            .execute(&self.pool)
            .await
            .unwrap();
    }

    /// A backlog drained: the shape's bookings are made by a service with delivery off, then
    /// a service with delivery on starts and sends them all. Deliveries/s run from its start
    /// to the last arrival; the CPU counted is the draining service's (its idle start-up, as
    /// measured on the restart before, taken off) and the cluster's, per delivery.
    async fn drain(self: &Arc<Self>, shape: Shape) {
        let Shape {
            name,
            merchants,
            endpoints_each,
            bookings,
            clients,
            ..
        } = shape;
        let merchants = Arc::new(merchants);
        self.restart(false).await;
        let start_up = self.cpu().0;
        let before = self.receiver.total();
        let expected = bookings * endpoints_each;
        self.book_all(&merchants, bookings, clients, None, Vec::new())
            .await;
        let postgres_before = self.cpu().1;
        let started = Instant::now();
        self.replace_service(Some(true));
        self.wait_for_total(before + expected).await;
        let drained_in = started.elapsed();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let (service_after, postgres_after) = self.cpu();
        let per = |d: Duration| d.as_secs_f64() * 1e6 / expected as f64;
        let arrivals = self.receiver.arrivals_since(before);
        let (_, first, last) = self.delays(&arrivals);
        let spread = last
            .saturating_duration_since(first)
            .as_secs_f64()
            .max(1e-3);
        println!(
            "{name:>22}: {expected} deliveries of {bookings} bookings drained in {:.2} s from \
             the start, {:.0}/s first arrival to last; CPU per delivery: service {:.0} µs, \
             postgres {:.0} µs",
            drained_in.as_secs_f64(),
            expected as f64 / spread,
            per(service_after.saturating_sub(start_up)),
            per(postgres_after.saturating_sub(postgres_before)),
        );
        if statements_wanted() {
            self.print_statements().await;
        }
    }

    /// Milliseconds from each delivery's event to its first arrival, sorted; and the first and
    /// last arrival.
    fn delays(&self, arrivals: &[(String, Instant, Vec<u8>)]) -> (Vec<f64>, Instant, Instant) {
        let mut first: HashMap<&str, (Instant, &[u8])> = HashMap::new();
        for (delivery, at, body) in arrivals {
            first
                .entry(delivery.as_str())
                .and_modify(|seen| {
                    if *at < seen.0 {
                        *seen = (*at, body);
                    }
                })
                .or_insert((*at, body));
        }
        let (anchor, wall) = self.clock;
        let mut delays: Vec<f64> = first
            .values()
            .map(|(at, body)| {
                let arrived = wall + at.saturating_duration_since(anchor);
                let body: Value = serde_json::from_slice(body).unwrap();
                let occurred: chrono::DateTime<chrono::Utc> =
                    body["occurred_at"].as_str().unwrap().parse().unwrap();
                let occurred = SystemTime::from(occurred);
                arrived
                    .duration_since(occurred)
                    .unwrap_or_default()
                    .as_secs_f64()
                    * 1e3
            })
            .collect();
        delays.sort_by(f64::total_cmp);
        let at = |pick: fn(Instant, Instant) -> Instant| {
            arrivals
                .iter()
                .map(|(_, at, _)| *at)
                .reduce(pick)
                .unwrap_or(anchor)
        };
        (delays, at(Instant::min), at(Instant::max))
    }

    async fn finish(self) {
        self.replace_service(None);
        self.pool.close().await;
        let _ = tokio::task::spawn_blocking(move || {
            let _ = self.cluster.stop();
            let _ = std::fs::remove_dir_all(&self.root);
        })
        .await;
    }
}

/// `WEBHOOK_BENCH_STATEMENTS=1`: after each shape, the statements that took the cluster's time
/// (`pg_stat_statements`).
fn statements_wanted() -> bool {
    std::env::var("WEBHOOK_BENCH_STATEMENTS").is_ok_and(|v| v == "1")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn paths(shape: &str, merchant: usize, count: usize) -> Vec<String> {
    (0..count)
        .map(|e| format!("/{shape}/m{merchant}/e{e}"))
        .collect()
}

#[tokio::main]
async fn main() {
    let bookings: usize = env_or("WEBHOOK_BENCH_BOOKINGS", 2000);
    let clients: usize = env_or("WEBHOOK_BENCH_CLIENTS", 16);
    let rate: f64 = env_or("WEBHOOK_BENCH_RATE", 200.0);
    let shapes: String = env_or(
        "WEBHOOK_BENCH_SHAPES",
        "1,4,16,100x2,drain4,drain16,drain100x2,steady".to_owned(),
    );
    let wanted: Vec<&str> = shapes.split(',').map(str::trim).collect();
    let run = Arc::new(Run::start().await);
    let shape = |name: String, merchants: Vec<Merchant>, endpoints_each: usize| Shape {
        name,
        merchants,
        endpoints_each,
        bookings,
        clients,
        rate: None,
        simulated: false,
        advanced: false,
    };

    // Warm-up: connections, the shaper, the TLS sessions, the route cache.
    let warm = run.merchant("Warm-up", &paths("warm", 0, 1)).await;
    let warm_up = Shape {
        bookings: 200,
        ..shape("warm-up".into(), vec![warm], 1)
    };
    run.shape(warm_up, None).await;

    let quiet = run.merchant("No endpoints", &[]).await;
    let reference = run
        .shape(shape("no endpoint".into(), vec![quiet], 0), None)
        .await;
    for endpoints in [1, 4, 16] {
        if !wanted.contains(&endpoints.to_string().as_str()) {
            continue;
        }
        let merchant = run
            .merchant(
                &format!("{endpoints} endpoints"),
                &paths(&endpoints.to_string(), 0, endpoints),
            )
            .await;
        let name = format!("1 merchant x {endpoints}");
        run.shape(shape(name, vec![merchant], endpoints), Some(reference))
            .await;
    }
    if wanted.contains(&"100x2") {
        let mut merchants = Vec::new();
        for m in 0..100 {
            merchants.push(
                run.merchant(&format!("Many {m}"), &paths("many", m, 2))
                    .await,
            );
        }
        run.shape(
            shape("100 merchants x 2".into(), merchants, 2),
            Some(reference),
        )
        .await;
    }
    for endpoints in [4, 16] {
        if !wanted.contains(&format!("drain{endpoints}").as_str()) {
            continue;
        }
        let merchant = run
            .merchant(
                &format!("Drained {endpoints}"),
                &paths(&format!("drain{endpoints}"), 0, endpoints),
            )
            .await;
        let name = format!("backlog, 1 x {endpoints}");
        run.drain(shape(name, vec![merchant], endpoints)).await;
    }
    if wanted.contains(&"drain100x2") {
        let mut merchants = Vec::new();
        for m in 0..100 {
            let paths = paths("drained-many", m, 2);
            merchants.push(run.merchant(&format!("Drained {m}"), &paths).await);
        }
        run.drain(shape("backlog, 100 x 2".into(), merchants, 2))
            .await;
    }
    if wanted.contains(&"steady") {
        // At a steady rate the fixed costs of each second (polls, autovacuum) weigh on every
        // booking: the reference is the same rate without endpoints.
        let steady = |name: String, merchant: Merchant, endpoints_each: usize| Shape {
            bookings: (rate * 10.0) as usize,
            clients: clients.max(64),
            rate: Some(rate),
            ..shape(name, vec![merchant], endpoints_each)
        };
        run.with_and_without_endpoints("Steady", &format!("{rate:.0} bookings/s"), steady)
            .await;
    }
    if wanted.contains(&"advanced") {
        // Events from bookings and from the jobs' progress at a steady rate, as a merchant's
        // sandbox tests make them: each job booked in the manual scenario, then advanced to
        // its delivery. The reference is the same load without endpoints.
        let event_rate: f64 = env_or("WEBHOOK_BENCH_EVENT_RATE", 1000.0);
        let advanced = |name: String, merchant: Merchant, endpoints_each: usize| Shape {
            bookings: (event_rate * 10.0 / 4.0) as usize,
            clients: clients.max(64),
            rate: Some(event_rate),
            advanced: true,
            ..shape(name, vec![merchant], endpoints_each)
        };
        let per_second = format!("{event_rate:.0} events/s");
        run.with_and_without_endpoints("Advanced", &per_second, advanced)
            .await;
    }
    if wanted.contains(&"sandbox") {
        // Every sandbox booking is then moved to its delivery by the simulator, each step a
        // state change with its event. Its CPU is no reference for a delivery's: the simulator
        // itself (routes, courier positions) costs more than the deliveries, so only the
        // delay and the rate are reported.
        let sandbox_rate: f64 = env_or("WEBHOOK_BENCH_SANDBOX_RATE", 250.0);
        run.sandbox.store(true, Ordering::SeqCst);
        run.restart(true).await;
        let simulated = |name: String, merchant: Merchant, endpoints_each: usize| Shape {
            bookings: (sandbox_rate * 10.0) as usize,
            clients: clients.max(64),
            rate: Some(sandbox_rate),
            simulated: true,
            ..shape(name, vec![merchant], endpoints_each)
        };
        // Warm-up: the simulator's routes for the bench journey.
        let quiet = run.merchant("Sandbox warm-up", &[]).await;
        let warm_up = Shape {
            bookings: 100,
            ..simulated("sandbox warm-up".into(), quiet, 0)
        };
        run.shape(warm_up, None).await;
        let merchant = run.merchant("Sandbox", &paths("sandbox", 0, 4)).await;
        let name = format!("sandbox {sandbox_rate:.0}/s x 4");
        run.shape(simulated(name, merchant, 4), None).await;
    }
    let run = Arc::into_inner(run).expect("every booking has finished");
    run.finish().await;
}
