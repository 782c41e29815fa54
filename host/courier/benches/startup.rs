//! Start-up: how long `courier serve` (the release binary) takes from launch until it answers
//! `GET /readyz`, and until it answers `POST /v1/quotes` (its road network loaded, the price
//! book instantiated), on a running PostgreSQL. The first start compiles the components into
//! the data folder's cache; the measured starts after it use the precompiled ones.
//!
//! cargo bench -p courier --bench startup        # STARTUP_RUNS (default 10)

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Latencies, env_or, quote_body};
use courier_core::auth::Authenticator;
use courier_core::infra::secrets::SecretKey;

const SECRET_HEX: &str = "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e";
/// A start slower than this is a failure, not a measurement.
const GIVE_UP: Duration = Duration::from_secs(60);

struct Start {
    ready: Duration,
    quoting: Duration,
}

struct Service(Child);

impl Drop for Service {
    fn drop(&mut self) {
        // SIGTERM: the graceful shutdown a deployment uses.
        let _ = Command::new("kill").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
    }
}

async fn start_once(
    http: &reqwest::Client,
    database_url: &str,
    data_dir: &std::path::Path,
    credential: (&str, &str),
) -> Start {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let launched = Instant::now();
    let _service = Service(
        Command::new(env!("CARGO_BIN_EXE_courier"))
            .arg("serve")
            .env("DATABASE_URL", database_url)
            .env("COURIER_DATA_DIR", data_dir)
            .env("COURIER_SECRET_KEY", SECRET_HEX)
            .env("COURIER_LISTEN", format!("127.0.0.1:{port}"))
            .env("COURIER_SANDBOX_SPEED", "0")
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            // Its log of the 503s answered while the road network loads is not the result.
            .stderr(Stdio::null())
            .spawn()
            .expect("the courier binary starts"),
    );
    let poll = |check: &'static str| {
        let url = format!("{base}{check}");
        async move {
            loop {
                let request = if check == "/readyz" {
                    http.get(&url)
                } else {
                    http.post(&url)
                        .basic_auth(credential.0, Some(credential.1))
                        .json(&quote_body())
                };
                let answered = request.send().await.ok().map(|r| r.status().as_u16());
                if matches!(answered, Some(200 | 201)) {
                    return launched.elapsed();
                }
                assert!(launched.elapsed() < GIVE_UP, "{check} never answered");
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
    };
    let ready = poll("/readyz").await;
    let quoting = poll("/v1/quotes").await;
    Start { ready, quoting }
}

#[tokio::main]
async fn main() {
    let runs: usize = env_or("STARTUP_RUNS", 10);
    let (cluster, root) = common::private_cluster("startup", "startup").await;
    let database_url = cluster.url("startup");
    let data_dir = root.join("data");
    let http = reqwest::Client::new();

    // The first start migrates the database and compiles the components into the cache.
    let pool = sqlx::PgPool::connect(&database_url).await.unwrap();
    courier_core::infra::db::MIGRATOR.run(&pool).await.unwrap();
    let hash_key = SecretKey::from_hex(SECRET_HEX).unwrap();
    let merchant = courier_core::merchants::Merchants::new(
        pool.clone(),
        Authenticator::new(pool.clone(), &hash_key),
    )
    .create("Start")
    .await
    .unwrap();
    let credential = (merchant.test_key.as_str(), merchant.test_secret.as_str());
    let first = start_once(&http, &database_url, &data_dir, credential).await;

    let mut ready = Latencies(Vec::new());
    let mut quoting = Latencies(Vec::new());
    for _ in 0..runs {
        let start = start_once(&http, &database_url, &data_dir, credential).await;
        ready.0.push(start.ready);
        quoting.0.push(start.quoting);
    }
    let ms = |d: Duration| format!("{:.0} ms", d.as_secs_f64() * 1000.0);
    println!("starts measured: {runs} (after one that filled the compile cache)");
    println!("| measure | first start (cold cache) | p50 | max |");
    println!("|---|---|---|---|");
    println!(
        "| launch → `/readyz` 200 | {} | {} | {} |",
        ms(first.ready),
        ms(ready.percentile(0.5)),
        ms(ready.percentile(1.0))
    );
    println!(
        "| launch → first quote 201 (demo city loaded) | {} | {} | {} |",
        ms(first.quoting),
        ms(quoting.percentile(0.5)),
        ms(quoting.percentile(1.0))
    );
    pool.close().await;
    let _ = tokio::task::spawn_blocking(move || cluster.stop()).await;
    let _ = std::fs::remove_dir_all(&root);
}
