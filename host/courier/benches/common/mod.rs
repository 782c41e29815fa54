//! What the HTTP benchmarks share: a private PostgreSQL cluster, the real service on it in
//! this process, a merchant with a working card, request bodies and percentiles.
// Each benchmark uses a part of this module.
#![allow(dead_code)]

pub mod cpu;

use std::sync::Arc;
use std::time::Duration;

use courier_core::auth::Authenticator;
use courier_core::config::Config;
use courier_core::infra::db::{EmbeddedPostgres, create_database_if_missing};
use courier_core::infra::secrets::SecretKey;
use serde_json::{Value, json};

pub const PICKUP: (f64, f64) = (20.00285, 50.0043);
pub const DROPOFF: (f64, f64) = (20.01615, 50.0103);
pub const SECRET_HEX: &str = "bebebebebebebebebebebebebebebebebebebebebebebebebebebebebebebebe";

/// A private PostgreSQL cluster under the temporary folder (`courier-{name}-{pid}`) with the
/// database `database`; returns it and its folder.
pub async fn private_cluster(name: &str, database: &str) -> (EmbeddedPostgres, std::path::PathBuf) {
    let root = std::env::temp_dir().join(format!("courier-{name}-{}", std::process::id()));
    let cluster = {
        let root = root.clone();
        tokio::task::spawn_blocking(move || EmbeddedPostgres::start(&root))
            .await
            .unwrap()
            .expect("a private PostgreSQL cluster")
    };
    create_database_if_missing(&cluster, database)
        .await
        .unwrap();
    if statements_profiled() {
        // The module loads only at start: set it, then restart the cluster.
        let pool = sqlx::PgPool::connect(&cluster.url(database)).await.unwrap();
        sqlx::query("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
        drop(cluster);
        let restarted = {
            let root = root.clone();
            tokio::task::spawn_blocking(move || EmbeddedPostgres::start(&root))
                .await
                .unwrap()
                .expect("the private PostgreSQL cluster, restarted")
        };
        let pool = sqlx::PgPool::connect(&restarted.url(database))
            .await
            .unwrap();
        for setting in [
            "CREATE EXTENSION pg_stat_statements",
            // Planning apart from execution: a statement planned at every call shows here.
            "ALTER SYSTEM SET pg_stat_statements.track_planning = on",
            "SELECT pg_reload_conf()",
        ] {
            sqlx::query(setting).execute(&pool).await.unwrap();
        }
        pool.close().await;
        return (restarted, root);
    }
    (cluster, root)
}

/// `BENCH_STATEMENTS=1`: the cluster records every statement (`pg_stat_statements`), and a
/// benchmark may report them per phase ([`Bench::statements_report`]).
pub fn statements_profiled() -> bool {
    std::env::var("BENCH_STATEMENTS").is_ok_and(|v| v == "1")
}

pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Polls `{base}/readyz` until it answers 200 (at most 20 s).
pub async fn wait_until_ready(http: &reqwest::Client, base: &str) {
    for _ in 0..800 {
        if http
            .get(format!("{base}/readyz"))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the service did not become ready");
}

pub struct Latencies(pub Vec<Duration>);

impl Latencies {
    pub fn percentile(&mut self, p: f64) -> Duration {
        if self.0.is_empty() {
            return Duration::ZERO;
        }
        self.0.sort();
        let index = ((self.0.len() as f64 - 1.0) * p).round() as usize;
        self.0[index]
    }
}

pub fn quote_body() -> Value {
    json!({
        "pickup": {"latitude": PICKUP.0, "longitude": PICKUP.1},
        "dropoff": {"latitude": DROPOFF.0, "longitude": DROPOFF.1},
        "vehicle": "car",
    })
}

pub fn booking_body(quote_id: &str) -> Value {
    let stop = |(lat, lon): (f64, f64)| {
        json!({
            "latitude": lat, "longitude": lon, "address": "1 Bench Street",
            "contact_name": "Bench", "contact_phone": "+966 11 463 5555",
        })
    };
    json!({"quote_id": quote_id, "pickup": stop(PICKUP), "dropoff": stop(DROPOFF)})
}

/// The service under measurement and a merchant's test credentials.
pub struct Bench {
    pub cluster: Arc<EmbeddedPostgres>,
    pub root: std::path::PathBuf,
    pub pool: sqlx::PgPool,
    pub http: reqwest::Client,
    pub base: String,
    pub key: String,
    pub secret: String,
}

impl Bench {
    /// Starts a cluster, the service (with `extra` configuration) and a merchant with a card;
    /// returns once the demo city answers quotes.
    pub async fn start(
        name: &str,
        clients: usize,
        extra: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        let (cluster, root) = private_cluster(name, "bench").await;
        let cluster = Arc::new(cluster);
        let pool = sqlx::PgPool::connect(&cluster.url("bench")).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let data_dir = root.join("data");
        let url = cluster.url("bench");
        let config = Config::from_lookup(move |name| {
            extra(name).or_else(|| match name {
                "DATABASE_URL" => Some(url.clone()),
                "COURIER_DATA_DIR" => Some(data_dir.to_string_lossy().into_owned()),
                "COURIER_SECRET_KEY" => Some(SECRET_HEX.into()),
                "COURIER_DB_POOL_SIZE" => Some(env_or("BENCH_POOL_SIZE", "32".to_owned())),
                // The load is of bookings, not of the sandbox simulator driving them.
                "COURIER_SANDBOX_SPEED" => Some("0".into()),
                // One key drives the whole load: budgets it never reaches, so the limiter's
                // cost is measured without refusals.
                "COURIER_RATE_LIMIT_QUOTES_PER_MINUTE"
                | "COURIER_RATE_LIMIT_BOOKINGS_PER_MINUTE"
                | "COURIER_RATE_LIMIT_READS_PER_MINUTE" => Some("100000000".into()),
                _ => None,
            })
        })
        .unwrap();
        // The service runs on a runtime of its own, whose threads' CPU time is read apart from
        // the load client's (`cpu`).
        let listener = listener.into_std().unwrap();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name(cpu::SERVICE_THREADS)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let _ = courier::app::run(config, listener, std::future::pending()).await;
            });
        });
        let base = format!("http://{address}");
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(clients)
            .build()
            .unwrap();
        wait_until_ready(&http, &base).await;
        let hash_key = SecretKey::from_hex(SECRET_HEX).unwrap();
        let merchant = courier_core::merchants::Merchants::new(
            pool.clone(),
            Authenticator::new(pool.clone(), &hash_key),
        )
        .create("Bench")
        .await
        .unwrap();
        let bench = Self {
            cluster,
            root,
            pool,
            http,
            base,
            key: merchant.test_key.clone(),
            secret: merchant.test_secret.clone(),
        };
        bench
            .http
            .post(format!("{}/v1/payment-methods", bench.base))
            .basic_auth(&bench.key, Some(&bench.secret))
            .json(&json!({"provider_ref": "pm_sandbox_4242424242424242"}))
            .send()
            .await
            .unwrap();
        // `BENCH_SETUP_SQL`: statements run on the service's database before the load, for
        // A/B trials of a database setting or schema change without a build.
        if let Ok(setup) = std::env::var("BENCH_SETUP_SQL") {
            for statement in setup.split(';').filter(|s| !s.trim().is_empty()) {
                sqlx::query(statement).execute(&bench.pool).await.unwrap();
            }
        }
        // The demo city loads in the background: wait for the first quote.
        while bench.quote().await.is_none() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bench
    }

    /// A quote, or None when it was not made.
    pub async fn quote(&self) -> Option<Value> {
        let response = self
            .http
            .post(format!("{}/v1/quotes", self.base))
            .basic_auth(&self.key, Some(&self.secret))
            .json(&quote_body())
            .send()
            .await
            .ok()?;
        (response.status() == 201).then_some(())?;
        response.json::<Value>().await.ok()
    }

    /// Books `quote_id`; true on 201.
    pub async fn book(&self, quote_id: &str, idempotency_key: &str) -> bool {
        self.booking(quote_id, idempotency_key)
            .await
            .is_some_and(|r| r.status() == 201)
    }

    /// Books `quote_id`; the job's id on 201.
    pub async fn book_job(&self, quote_id: &str, idempotency_key: &str) -> Option<String> {
        let response = self.booking(quote_id, idempotency_key).await?;
        (response.status() == 201).then_some(())?;
        let job: Value = response.json().await.ok()?;
        job["id"].as_str().map(str::to_owned)
    }

    async fn booking(&self, quote_id: &str, idempotency_key: &str) -> Option<reqwest::Response> {
        self.http
            .post(format!("{}/v1/jobs", self.base))
            .basic_auth(&self.key, Some(&self.secret))
            .header("Idempotency-Key", idempotency_key)
            .json(&booking_body(quote_id))
            .send()
            .await
            .ok()
    }

    /// GETs `path`; true on 200.
    pub async fn read(&self, path: &str) -> bool {
        self.http
            .get(format!("{}{path}", self.base))
            .basic_auth(&self.key, Some(&self.secret))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200)
    }

    /// CPU used so far by the service and by the cluster.
    /// Gives the bench merchant `count` more jobs (and their quotes), copies of its oldest job
    /// booked further back, delivered; returns how many jobs it had before. Then analyses the
    /// tables, as autovacuum would after such growth.
    pub async fn grow_jobs(&self, count: usize) -> usize {
        let mut conn = self.pool.acquire().await.unwrap();
        let (had,): (i64,) = sqlx::query_as("SELECT count(*) FROM jobs")
            .fetch_one(&mut *conn)
            .await
            .unwrap();
        let statements = [
            format!(
                "CREATE TEMP TABLE grown AS SELECT gen_random_uuid() AS job_id, \
                 gen_random_uuid() AS quote_id, n FROM generate_series(1, {count}) AS n"
            ),
            "INSERT INTO quotes SELECT (jsonb_populate_record(NULL::quotes, to_jsonb(q) \
             || jsonb_build_object('id', g.quote_id))).* \
             FROM (SELECT q.* FROM quotes q JOIN jobs j ON j.quote_id = q.id \
                   ORDER BY j.booked_at LIMIT 1) AS q CROSS JOIN grown g"
                .into(),
            "INSERT INTO jobs SELECT (jsonb_populate_record(NULL::jobs, to_jsonb(j) \
             || jsonb_build_object('id', g.job_id, 'quote_id', g.quote_id, \
                'reference', j.reference || '-' || g.n, \
                'tracking_token', j.tracking_token || '-' || g.n, \
                'status', 'delivered', \
                'booked_at', j.booked_at - make_interval(secs => g.n), \
                'completed_at', j.booked_at - make_interval(secs => g.n) + interval '40 minutes'))).* \
             FROM (SELECT * FROM jobs ORDER BY booked_at LIMIT 1) AS j CROSS JOIN grown g"
                .into(),
            "DROP TABLE grown".into(),
            "ANALYZE quotes".into(),
            "ANALYZE jobs".into(),
        ];
        for statement in statements {
            sqlx::query(&statement).execute(&mut *conn).await.unwrap();
        }
        had as usize
    }

    /// With [`statements_profiled`]: prints the statements run on the service's database
    /// since the last report (see [`statements_report`]); then starts counting afresh.
    pub async fn statements_report(&self, phase: &str, requests: usize) {
        statements_report(&self.pool, phase, requests).await;
    }

    /// With [`statements_profiled`]: forgets the statements counted so far.
    pub async fn statements_reset(&self) {
        statements_reset(&self.pool).await;
    }

    pub fn cpu(&self) -> cpu::CpuSample {
        let pid_file = std::fs::read_to_string(self.root.join("data").join("postmaster.pid"))
            .expect("the cluster is running");
        let postmaster = pid_file.lines().next().unwrap().trim().parse().unwrap();
        cpu::CpuSample::now(postmaster)
    }

    pub async fn finish(self) {
        self.pool.close().await;
        let cluster = Arc::clone(&self.cluster);
        let _ = tokio::task::spawn_blocking(move || cluster.stop()).await;
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// With [`statements_profiled`]: prints the statements run on the service's database
/// since the last report, costliest first, per request of a phase that made `requests`;
/// then starts counting afresh. Times are wall-clock inside the server (waits included).
pub async fn statements_report(pool: &sqlx::PgPool, phase: &str, requests: usize) {
    if !statements_profiled() {
        return;
    }
    let per = |n: f64| n / requests.max(1) as f64;
    type Row = (Option<String>, i64, f64, i64, f64, i64, i64, i64, i64, i64);
    // Statements whose text differs only by how many rows they carry are counted apart;
    // the last row (no text) sums them all.
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT s.query, coalesce(sum(s.calls), 0)::bigint, \
         coalesce(sum(s.total_exec_time), 0), coalesce(sum(s.plans), 0)::bigint, \
         coalesce(sum(s.total_plan_time), 0), \
         coalesce(sum(s.shared_blks_hit + s.shared_blks_read), 0)::bigint, \
         coalesce(sum(s.shared_blks_dirtied), 0)::bigint, \
         coalesce(sum(s.wal_fpi), 0)::bigint, coalesce(sum(s.wal_bytes), 0)::bigint, \
         count(*) \
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid \
         WHERE d.datname = current_database() \
         GROUP BY GROUPING SETS ((s.query), ()) \
         ORDER BY s.query IS NULL, sum(s.total_exec_time + s.total_plan_time) DESC",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    println!("\n{phase}: statements per request ({requests} requests)");
    println!(
        "| calls | exec µs | plans | plan µs | blocks | dirtied | WAL FPI | WAL bytes | statement |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let (statements, total) = rows.split_at(rows.len().saturating_sub(1));
    for row in statements.iter().take(15).chain(total) {
        let (query, calls, exec, plans, plan, blocks, dirtied, fpi, wal, count) = row;
        let name = match query {
            Some(query) => {
                let query: String = query.split_whitespace().collect::<Vec<_>>().join(" ");
                format!("`{}`", query.chars().take(110).collect::<String>())
            }
            None => format!("all {count} statements"),
        };
        println!(
            "| {:.2} | {:.1} | {:.2} | {:.1} | {:.1} | {:.2} | {:.2} | {:.0} | {name} |",
            per(*calls as f64),
            per(exec * 1000.0),
            per(*plans as f64),
            per(plan * 1000.0),
            per(*blocks as f64),
            per(*dirtied as f64),
            per(*fpi as f64),
            per(*wal as f64),
        );
    }
    statements_reset(pool).await;
}

/// With [`statements_profiled`]: forgets the statements counted so far.
pub async fn statements_reset(pool: &sqlx::PgPool) {
    if statements_profiled() {
        sqlx::query("SELECT pg_stat_statements_reset()")
            .execute(pool)
            .await
            .unwrap();
    }
}
