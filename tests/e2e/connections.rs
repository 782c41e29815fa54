//! Connections that hold the service without asking anything: idle HTTP/2 (h2c) connections
//! are closed after `COURIER_IDLE_TIMEOUT_MS`, and past `COURIER_MAX_CONNECTIONS` new ones
//! wait, unaccepted, while established ones are kept; a merchant's requests keep working
//! meanwhile. The service runs as its own process, so its file descriptors are its own.

use std::time::{Duration, Instant};

use serde_json::Value;
use sqlx::PgPool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::quotes::journey;
use crate::support::process::{free_port, service_settings, spawn_service, wait_until_ready};
use crate::support::{Authed, Credential, MerchantCredentials, fresh_database_url};

/// The client preface of HTTP/2 with prior knowledge, and an empty SETTINGS frame.
const H2C_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

struct Service {
    child: std::process::Child,
    base_url: String,
    address: String,
    data_dir: std::path::PathBuf,
    credential: Credential,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

async fn service(settings: &[(&str, &str)]) -> Service {
    let database_url = fresh_database_url().await;
    let port = free_port();
    let address = format!("127.0.0.1:{port}");
    let data_dir = std::env::temp_dir().join(format!("courier-connections-{port}"));
    let mut env = service_settings(&database_url, &address, &data_dir);
    env.extend(
        settings
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let child = spawn_service(&env);
    let base_url = format!("http://{address}");
    wait_until_ready(&reqwest::Client::new(), &base_url).await;
    let pool = PgPool::connect(&database_url).await.unwrap();
    let key = courier_core::infra::secrets::SecretKey::from_hex(&"5e".repeat(32)).unwrap();
    let authenticator = courier_core::auth::Authenticator::new(pool.clone(), &key);
    let merchant = courier_core::merchants::Merchants::new(pool.clone(), authenticator.clone())
        .create("Patient Ltd")
        .await
        .unwrap();
    pool.close().await;
    Service {
        child,
        base_url,
        address,
        data_dir,
        credential: merchant.test(),
    }
}

/// An HTTP/2 connection that says hello and then nothing.
async fn idle_h2c(address: &str) -> TcpStream {
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream.write_all(H2C_PREFACE).await.unwrap();
    stream
}

/// Reads until the server closes the connection; false if it is still open after `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut buffer = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buffer)).await {
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
            Err(_) => return false,
        }
    }
}

async fn quote(client: &reqwest::Client, service: &Service) -> u16 {
    let response = client
        .post(format!("{}/v1/quotes", service.base_url))
        .auth(&service.credential)
        .json(&journey(None))
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let _: Value = response.json().await.unwrap();
    status
}

/// 5,000 idle h2c connections: the merchant's quotes keep working while they are open, and
/// the service closes every one of them once it has been idle for the timeout.
#[tokio::test]
async fn idle_http2_connections_are_closed_after_the_idle_timeout() {
    const IDLE: usize = 5000;
    let service = service(&[("COURIER_IDLE_TIMEOUT_MS", "5000")]).await;
    let client = reqwest::Client::new();
    // The first quote waits for the demo city's roads to load.
    assert_eq!(quote(&client, &service).await, 201);
    let opened = Instant::now();
    let mut idle = Vec::with_capacity(IDLE);
    for _ in 0..IDLE {
        idle.push(idle_h2c(&service.address).await);
    }
    for _ in 0..20 {
        assert_eq!(quote(&client, &service).await, 201);
    }
    assert!(
        opened.elapsed() < Duration::from_secs(5),
        "the quotes were made while all the idle connections were open ({:?})",
        opened.elapsed()
    );
    let mut closed = 0;
    for stream in &mut idle {
        if closed_within(stream, Duration::from_secs(30)).await {
            closed += 1;
        }
    }
    assert_eq!(closed, IDLE, "every idle connection was closed");
    assert!(
        opened.elapsed() >= Duration::from_secs(3),
        "not before the timeout"
    );
    assert_eq!(quote(&client, &service).await, 201);
}

/// At the cap, a new connection waits, unaccepted, instead of an established one being
/// dropped; it is served as soon as idle ones are closed.
#[tokio::test]
async fn past_the_connection_cap_new_connections_wait_and_established_ones_stay() {
    const CAP: usize = 50;
    let service = service(&[
        ("COURIER_MAX_CONNECTIONS", "50"),
        ("COURIER_IDLE_TIMEOUT_MS", "3000"),
    ])
    .await;
    let client = reqwest::Client::new();
    // The first quote waits for the demo city's roads to load; its connection is then
    // closed, so that every place below is an idle connection's.
    assert_eq!(quote(&client, &service).await, 201);
    drop(client);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut idle = Vec::with_capacity(CAP);
    for _ in 0..CAP {
        idle.push(idle_h2c(&service.address).await);
    }
    let opened = Instant::now();
    let client = reqwest::Client::new();
    let status = quote(&client, &service).await;
    let waited = opened.elapsed();
    assert_eq!(status, 201);
    assert!(
        waited >= Duration::from_millis(2500),
        "served only once idle connections were closed, after {waited:?}"
    );
    // The idle ones were closed by their timeout, not dropped to make room early.
    for stream in &mut idle {
        assert!(closed_within(stream, Duration::from_secs(10)).await);
    }
}
