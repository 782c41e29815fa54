//! Operations endpoints and request ids.

use std::time::Duration;

use reqwest::Method;

use crate::support::process::{free_port, service_settings, spawn_service, wait_until_ready};
use crate::support::{TestApp, assert_refusal, eventually, fresh_database_url, status_and_json};

#[tokio::test]
async fn health_and_readiness_answer() {
    let app = TestApp::spawn().await;
    let (status, body) =
        status_and_json(app.request(Method::GET, "/healthz").send().await.unwrap()).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("ok")));
    let (status, body) =
        status_and_json(app.request(Method::GET, "/readyz").send().await.unwrap()).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("ready")));
    app.stop().await;
}

#[tokio::test]
async fn every_response_carries_a_request_id_and_echoes_the_callers() {
    let app = TestApp::spawn().await;
    let response = app.request(Method::GET, "/healthz").send().await.unwrap();
    let generated = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(uuid::Uuid::parse_str(&generated).is_ok(), "{generated}");
    let response = app
        .request(Method::GET, "/nowhere")
        .header("x-request-id", "trace-me-42")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "trace-me-42");
    app.stop().await;
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_and_status() {
    let app = TestApp::spawn().await;
    app.request(Method::GET, "/healthz").send().await.unwrap();
    app.request(Method::GET, "/v1/some/thing")
        .send()
        .await
        .unwrap();
    let response = app.request(Method::GET, "/metrics").send().await.unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(text.contains("http_requests_total"), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("http_requests_total")
            && l.contains("route=\"/healthz\"")
            && l.contains("status=\"200\"")),
        "{text}"
    );
    assert!(text.contains("http_request_duration_seconds_bucket"));
    // Concrete paths never become labels.
    assert!(!text.contains("/v1/some/thing"));
    app.stop().await;
}

/// `courier serve` on its own port and the test's database, draining for `drain_ms` when
/// stopped; its base URL and address. Its data folder goes with it ([`exit_status`]).
async fn service_that_drains(drain_ms: u64) -> (std::process::Child, String, String) {
    let port = free_port();
    let address = format!("127.0.0.1:{port}");
    let data_dir = drain_data_dir(port);
    let mut env = service_settings(&fresh_database_url().await, &address, &data_dir);
    env.push(("COURIER_DRAIN_MS".to_owned(), drain_ms.to_string()));
    let child = spawn_service(&env);
    let base_url = format!("http://{address}");
    wait_until_ready(&reqwest::Client::new(), &base_url).await;
    (child, base_url, address)
}

fn drain_data_dir(port: u16) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("courier-drain-{}-{port}", std::process::id()))
}

/// Waits for the service on `address` to exit, and removes its data folder.
async fn exit_status(child: std::process::Child, address: &str) -> std::process::ExitStatus {
    let mut child = child;
    let status = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::task::spawn_blocking(move || child.wait().unwrap()),
    )
    .await
    .expect("the service exits")
    .unwrap();
    let port = address.rsplit(':').next().unwrap().parse().unwrap();
    let _ = std::fs::remove_dir_all(drain_data_dir(port));
    status
}

/// SIGTERM: the instance first reports not ready (503 `service.draining`) and keeps answering
/// requests for `COURIER_DRAIN_MS`, each HTTP/1 answer closing its connection so the client
/// reconnects through the balancer; then it stops accepting connections and exits cleanly.
#[tokio::test]
async fn a_stopping_instance_drains_before_it_stops_accepting() {
    const DRAIN: Duration = Duration::from_millis(2000);
    let (child, base_url, address) =
        service_that_drains(u64::try_from(DRAIN.as_millis()).unwrap()).await;
    let client = reqwest::Client::new();
    let told = std::time::Instant::now();
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);

    let body = eventually(
        "/readyz to report the drain",
        Duration::from_secs(2),
        Duration::from_millis(10),
        || async {
            let response = client.get(format!("{base_url}/readyz")).send().await.ok()?;
            let (status, body) = status_and_json(response).await;
            (status == 503).then_some(body)
        },
    )
    .await;
    assert_eq!(body["code"], "service.draining");
    let response = client
        .get(format!("{base_url}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "still serving while draining");
    assert_eq!(response.headers()["connection"], "close");
    assert!(told.elapsed() < DRAIN, "answered within the drain period");

    let status = exit_status(child, &address).await;
    assert!(status.success(), "a clean exit after the drain: {status}");
    assert!(told.elapsed() >= DRAIN, "not before the drain period ended");
    assert!(tokio::net::TcpStream::connect(&address).await.is_err());
}

/// A second signal cuts the drain short: an operator who means "now" is obeyed.
#[tokio::test]
async fn a_second_signal_ends_the_drain_at_once() {
    let (child, base_url, address) = service_that_drains(60_000).await;
    let client = reqwest::Client::new();
    let pid = child.id() as i32;
    let told = std::time::Instant::now();
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    eventually(
        "/readyz to report the drain",
        Duration::from_secs(2),
        Duration::from_millis(10),
        || async {
            let response = client.get(format!("{base_url}/readyz")).send().await.ok()?;
            (response.status() == 503).then_some(())
        },
    )
    .await;
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let status = exit_status(child, &address).await;
    assert!(status.success(), "{status}");
    assert!(
        told.elapsed() < Duration::from_secs(30),
        "the drain was cut short"
    );
}

#[tokio::test]
async fn graceful_stop_releases_the_port() {
    let app = TestApp::spawn().await;
    let address = app.address;
    app.stop().await;
    assert!(tokio::net::TcpStream::connect(address).await.is_err());
}

/// 100,000 requests with made-up methods and unknown paths add no series to `/metrics` (every
/// made-up method is `other`, every unknown path `unmatched`), and the service's resident
/// memory grows by less than 20 MB; with `COURIER_METRICS_TOKEN` set, only that bearer token
/// reads the metrics.
#[tokio::test]
async fn made_up_methods_and_paths_mint_no_series_and_hold_no_memory() {
    const TOKEN: &str = "metrics-token-0123456789abcdef0123456789";
    const AT_ONCE: usize = 32;
    let port = free_port();
    let base_url = format!("http://127.0.0.1:{port}");
    let data_dir = std::env::temp_dir().join(format!("courier-metrics-{}", uuid::Uuid::new_v4()));
    let mut service = spawn_service(&[
        ("DATABASE_URL".to_owned(), fresh_database_url().await),
        ("COURIER_LISTEN".to_owned(), format!("127.0.0.1:{port}")),
        (
            "COURIER_DATA_DIR".to_owned(),
            data_dir.to_string_lossy().into_owned(),
        ),
        ("COURIER_METRICS_TOKEN".to_owned(), TOKEN.to_owned()),
    ]);
    let client = reqwest::Client::new();
    wait_until_ready(&client, &base_url).await;

    let metrics = format!("{base_url}/metrics");
    let response = client.get(&metrics).send().await.unwrap();
    assert_refusal(response, 401, "auth.missing_credentials").await;
    let response = client
        .get(&metrics)
        .bearer_auth("a-guess")
        .send()
        .await
        .unwrap();
    assert_refusal(response, 401, "auth.invalid_credentials").await;
    let series = || async {
        let text = client
            .get(&metrics)
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .filter(|line| line.starts_with("http_"))
            .count()
    };
    let flood = |requests: usize, offset: usize| {
        let workers: Vec<_> = (0..AT_ONCE)
            .map(|worker| {
                let (client, base_url) = (client.clone(), base_url.clone());
                tokio::spawn(async move {
                    for n in 0..requests / AT_ONCE {
                        let n = offset + worker * requests + n;
                        let method = reqwest::Method::from_bytes(format!("FOO{n}").as_bytes());
                        let path = match n % 3 {
                            0 => format!("/nowhere/{n}"),
                            1 => format!("/v1/nowhere/{n}"),
                            _ => format!("/healthz/{n}"),
                        };
                        client
                            .request(method.unwrap(), format!("{base_url}{path}"))
                            .send()
                            .await
                            .unwrap();
                    }
                })
            })
            .collect::<Vec<_>>();
        async move {
            for worker in workers {
                worker.await.unwrap();
            }
        }
    };
    // Every kind of answer once, and a scrape, so the series they make exist already.
    flood(3_000, 0).await;
    series().await;
    let (series_before, resident_before) = (series().await, resident_kib(service.id()));
    flood(100_000, 10_000_000).await;
    let (series_after, resident_after) = (series().await, resident_kib(service.id()));
    assert_eq!(series_after, series_before);
    let grown = resident_after.saturating_sub(resident_before);
    assert!(
        grown < 20 * 1024,
        "resident memory grew by {grown} KiB ({resident_before} to {resident_after})"
    );
    service.kill().unwrap();
    service.wait().unwrap();
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// The resident memory of process `pid`, in KiB.
fn resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}
