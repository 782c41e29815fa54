//! Faults: the service killed mid-load, the database restarted mid-load, hostile input. Each
//! test is bounded and stops by itself; everything runs on loopback.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use courier_core::infra::db::EmbeddedPostgres;
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use uuid::Uuid;

use crate::quotes::journey;
use crate::support::forwarder::Forwarder;
use crate::support::process::{free_port, spawn_service, wait_until_ready};
use crate::support::{
    Authed, Credential, MerchantCredentials, TestApp, assert_refusal, eventually,
    fresh_database_url, status_and_json,
};

/// A booking's stop at the demo journey's `stop` (`pickup` or `dropoff`), for `name`.
pub fn stop_body(name: &str, stop: &str) -> Value {
    let point = &journey(None)[stop];
    json!({
        "latitude": point["latitude"], "longitude": point["longitude"],
        "address": format!("{name}'s door, Demo City"),
        "contact_name": name,
        "contact_phone": "+966 11 463 5555",
    })
}

async fn quote(client: &reqwest::Client, base_url: &str, credential: &Credential) -> Value {
    let response = client
        .post(format!("{base_url}/v1/quotes"))
        .auth(credential)
        .json(&journey(None))
        .send()
        .await
        .unwrap();
    let (status, quote) = status_and_json(response).await;
    assert_eq!(status, 201, "{quote}");
    quote
}

/// A service process, killed (SIGKILL) when dropped, so a failing test leaves none behind.
struct Service(std::process::Child);

impl Service {
    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What one booking request came to.
#[derive(Clone, Debug)]
enum Outcome {
    Confirmed(String),
    /// No answer, or no 201: it may or may not have been booked.
    Unknown,
}

async fn book(
    client: &reqwest::Client,
    base_url: &str,
    credential: &Credential,
    key: &str,
    quote_id: &str,
) -> Outcome {
    let body = json!({
        "quote_id": quote_id,
        "pickup": stop_body("Pat", "pickup"),
        "dropoff": stop_body("Dana", "dropoff"),
    });
    let sent = client
        .post(format!("{base_url}/v1/jobs"))
        .auth(credential)
        .header("Idempotency-Key", key)
        .json(&body)
        .timeout(Duration::from_secs(10))
        .send()
        .await;
    match sent {
        Ok(response) if response.status() == 201 => {
            let job: Value = response.json().await.unwrap();
            Outcome::Confirmed(job["id"].as_str().unwrap().to_owned())
        }
        Ok(response) => {
            let status = response.status();
            // Only a service going down may refuse a well-formed booking.
            assert!(
                status.is_server_error(),
                "{status}: {}",
                response.text().await.unwrap()
            );
            Outcome::Unknown
        }
        Err(_) => Outcome::Unknown,
    }
}

#[tokio::test]
async fn every_confirmed_booking_survives_a_kill_mid_load() {
    const BOOKINGS: usize = 120;
    let database_url = fresh_database_url().await;
    let data_dir = std::env::temp_dir().join(format!("courier-crash-{}", Uuid::new_v4()));
    let port = free_port();
    let base_url = format!("http://127.0.0.1:{port}");
    let env: Vec<(String, String)> = [
        ("DATABASE_URL", database_url.clone()),
        ("COURIER_LISTEN", format!("127.0.0.1:{port}")),
        ("COURIER_DATA_DIR", data_dir.to_string_lossy().into_owned()),
        ("COURIER_SECRET_KEY", "5e".repeat(32)),
        ("COURIER_DB_POOL_SIZE", "8".into()),
        ("COURIER_PLUGIN_INSTANCES", "16".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let client = reqwest::Client::new();
    let mut service = Service(spawn_service(&env));
    wait_until_ready(&client, &base_url).await;

    let pool = PgPool::connect(&database_url).await.unwrap();
    let key = courier_core::infra::secrets::SecretKey::from_hex(&"5e".repeat(32)).unwrap();
    let authenticator = courier_core::auth::Authenticator::new(pool.clone(), &key);
    let merchant = courier_core::merchants::Merchants::new(pool.clone(), authenticator.clone())
        .create("Crashy Ltd")
        .await
        .unwrap();
    let test = merchant.test();
    let response = client
        .post(format!("{base_url}/v1/payment-methods"))
        .auth(&test)
        .json(&json!({"provider_ref": "pm_sandbox_4242424242424242"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let mut requests = Vec::with_capacity(BOOKINGS);
    for _ in 0..BOOKINGS {
        let quote = quote(&client, &base_url, &test).await;
        requests.push((
            format!("crash-{}", Uuid::new_v4()),
            quote["id"].as_str().unwrap().to_owned(),
        ));
    }

    // Eight clients book while the service is killed under them.
    let requests = Arc::new(requests);
    let next = Arc::new(AtomicUsize::new(0));
    let confirmed = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let (client, base_url, test) = (client.clone(), base_url.clone(), test.clone());
            let (requests, next, confirmed) = (requests.clone(), next.clone(), confirmed.clone());
            tokio::spawn(async move {
                let mut outcomes = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some((key, quote_id)) = requests.get(i) else {
                        return outcomes;
                    };
                    let outcome = book(&client, &base_url, &test, key, quote_id).await;
                    if matches!(outcome, Outcome::Confirmed(_)) {
                        confirmed.fetch_add(1, Ordering::SeqCst);
                    }
                    outcomes.push((i, outcome));
                }
            })
        })
        .collect();
    eventually(
        "30 bookings confirmed before the kill",
        Duration::from_secs(60),
        Duration::from_millis(5),
        || async { (confirmed.load(Ordering::SeqCst) >= 30).then_some(()) },
    )
    .await;
    service.kill(); // SIGKILL, mid-load
    let mut outcomes: HashMap<usize, Outcome> = HashMap::new();
    for client_task in clients {
        outcomes.extend(client_task.await.unwrap());
    }
    let at_kill = confirmed.load(Ordering::SeqCst);
    assert!(at_kill < BOOKINGS, "the kill came mid-load");

    let mut service = Service(spawn_service(&env));
    wait_until_ready(&client, &base_url).await;
    // Every booking that was confirmed is there.
    for outcome in outcomes.values() {
        if let Outcome::Confirmed(id) = outcome {
            let response = client
                .get(format!("{base_url}/v1/jobs/{id}"))
                .auth(&test)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200, "confirmed job {id} is missing");
        }
    }
    // The rest, asked again with the same key, are booked exactly once.
    let mut job_of_key = HashMap::new();
    for (i, (key, quote_id)) in requests.iter().enumerate() {
        let id = match outcomes.get(&i) {
            Some(Outcome::Confirmed(id)) => id.clone(),
            _ => match book(&client, &base_url, &test, key, quote_id).await {
                Outcome::Confirmed(id) => id,
                Outcome::Unknown => panic!("request {i} could not be completed after the restart"),
            },
        };
        assert!(job_of_key.insert(id, key).is_none(), "two keys, one job");
    }
    let count = |sql: &'static str| {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    assert_eq!(count("SELECT count(*) FROM jobs").await, BOOKINGS as i64);
    assert_eq!(count("SELECT count(*) FROM charges").await, BOOKINGS as i64);
    assert_eq!(
        count("SELECT count(*) FROM events WHERE name = 'job.booked'").await,
        BOOKINGS as i64
    );
    service.kill();
    let _ = std::fs::remove_dir_all(&data_dir);
}

fn port_of(url: &str) -> u16 {
    url::Url::parse(url).unwrap().port().unwrap()
}

async fn start_cluster(root: std::path::PathBuf) -> EmbeddedPostgres {
    tokio::task::spawn_blocking(move || EmbeddedPostgres::start(&root))
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn a_database_restart_mid_load_answers_503_then_recovers() {
    let root = std::env::temp_dir().join(format!("courier-pg-restart-{}", Uuid::new_v4()));
    let cluster = start_cluster(root.clone()).await;
    let admin_url = cluster.url("postgres");
    let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&admin_url)
        .await
        .unwrap();
    sqlx::query("CREATE DATABASE courier")
        .execute(&mut admin)
        .await
        .unwrap();
    drop(admin);
    let forwarder = Forwarder::start(port_of(&admin_url)).await;
    let url = cluster.url("courier").replace(
        &format!(":{}/", port_of(&admin_url)),
        &format!(":{}/", forwarder.port),
    );
    let app = TestApp::spawn_with(|name| match name {
        "DATABASE_URL" => Some(url.clone()),
        // Every request meets the database, credentials included.
        "COURIER_AUTH_CACHE_MS" => Some("0".into()),
        _ => None,
    })
    .await;
    let merchant = app.create_merchant("Steady Ltd").await;
    let test = merchant.test();

    // One client quotes without pause and tallies the answers.
    let answers: Arc<std::sync::Mutex<Vec<(Instant, u16, String)>>> = Arc::default();
    let quoting = {
        let (client, base_url, test, answers) = (
            app.client.clone(),
            app.base_url.clone(),
            test.clone(),
            answers.clone(),
        );
        tokio::spawn(async move {
            let until = Instant::now() + Duration::from_secs(60);
            while Instant::now() < until {
                let response = client
                    .post(format!("{base_url}/v1/quotes"))
                    .auth(&test)
                    .json(&journey(None))
                    .timeout(Duration::from_secs(10))
                    .send()
                    .await;
                let Ok(response) = response else { continue };
                let (status, body) = status_and_json(response).await;
                let code = body["code"].as_str().unwrap_or_default().to_owned();
                let mut answers = answers.lock().unwrap();
                answers.push((Instant::now(), status, code));
                let recovered = answers.iter().rev().take(20).all(|(_, s, _)| *s == 201)
                    && answers.iter().any(|(_, s, _)| *s == 503);
                if recovered {
                    return;
                }
            }
        })
    };
    let seen = |status: u16| {
        answers
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, s, _)| *s == status)
            .count()
    };
    eventually(
        "20 answers of 201",
        Duration::from_secs(30),
        Duration::from_millis(10),
        || async { (seen(201) >= 20).then_some(()) },
    )
    .await;
    tokio::task::spawn_blocking(move || cluster.stop().unwrap())
        .await
        .unwrap();
    eventually(
        "5 answers of 503 with the database down",
        Duration::from_secs(30),
        Duration::from_millis(10),
        || async { (seen(503) >= 5).then_some(()) },
    )
    .await;
    let readiness = app.request(Method::GET, "/readyz").send().await.unwrap();
    assert_eq!(
        readiness.status(),
        503,
        "not ready while the database is down"
    );
    // The same cluster comes back (on another port, behind the same address).
    let cluster = start_cluster(root.clone()).await;
    forwarder.point_at(port_of(&cluster.url("postgres")));
    tokio::time::timeout(Duration::from_secs(45), quoting)
        .await
        .expect("quoting recovered")
        .unwrap();

    let answers = std::mem::take(&mut *answers.lock().unwrap());
    for (_, status, code) in &answers {
        assert!(
            *status == 201 || (*status == 503 && code == "service.database_unavailable"),
            "{status} {code}"
        );
    }
    let readiness = app.request(Method::GET, "/readyz").send().await.unwrap();
    assert_eq!(readiness.status(), 200);
    app.stop().await;
    tokio::task::spawn_blocking(move || cluster.stop().unwrap())
        .await
        .unwrap();
    let _ = std::fs::remove_dir_all(&root);
}

/// A database that takes no writes (as a standby, or a primary in recovery does): requests are
/// answered 503 `service.database_unavailable` with `Retry-After`, never 500, and nothing is
/// written; once it takes writes again the service serves, without a restart.
#[tokio::test]
async fn a_read_only_database_is_a_503_until_it_takes_writes_again() {
    let app = TestApp::spawn_with(|name| match name {
        // Every request meets the database, credentials included.
        "COURIER_AUTH_CACHE_MS" => Some("0".into()),
        _ => None,
    })
    .await;
    let merchant = app.create_merchant("Standby Ltd").await;
    let test = merchant.test();
    let quote = || async {
        let response = app
            .client
            .post(app.url("/v1/quotes"))
            .auth(&test)
            .json(&journey(None))
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .unwrap();
        let retry_after = response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_owned());
        let (status, body) = status_and_json(response).await;
        (status, body, retry_after)
    };
    assert_eq!(quote().await.0, 201);

    let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&app.database_url)
        .await
        .unwrap();
    let database: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(&mut admin)
        .await
        .unwrap();
    let quotes_written = "SELECT count(*) FROM quotes";
    let before: i64 = sqlx::query_scalar(quotes_written)
        .fetch_one(&mut admin)
        .await
        .unwrap();
    // New sessions are read-only, and the service's sessions end (as at a failover).
    sqlx::query(&format!(
        "ALTER DATABASE \"{database}\" SET default_transaction_read_only = on"
    ))
    .execute(&mut admin)
    .await
    .unwrap();
    sqlx::query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .execute(&mut admin)
    .await
    .unwrap();

    let (status, body, retry_after) = quote().await;
    assert_eq!(
        (status, body["code"].as_str()),
        (503, Some("service.database_unavailable")),
        "{body}"
    );
    assert_eq!(retry_after.as_deref(), Some("2"));
    let readiness = app.request(Method::GET, "/readyz").send().await.unwrap();
    assert_eq!(readiness.status(), 503);
    let during: i64 = sqlx::query_scalar(quotes_written)
        .fetch_one(&mut admin)
        .await
        .unwrap();
    assert_eq!(during, before, "nothing written");

    sqlx::query(&format!(
        "ALTER DATABASE \"{database}\" RESET default_transaction_read_only"
    ))
    .execute(&mut admin)
    .await
    .unwrap();
    eventually(
        "quotes to be taken again",
        Duration::from_secs(20),
        Duration::from_millis(100),
        || async { (quote().await.0 == 201).then_some(()) },
    )
    .await;
    let readiness = app.request(Method::GET, "/readyz").send().await.unwrap();
    assert_eq!(readiness.status(), 200);
    app.stop().await;
}

/// A pooled connection whose server turned read-only (SQLSTATE 25006) is dropped, not lent
/// again: the next statement runs on a new connection.
#[tokio::test]
async fn a_pooled_connection_on_a_read_only_server_is_dropped_not_lent_again() {
    use courier_core::infra::db::{availability, pool};
    let pool = pool(&fresh_database_url().await, 1).await.unwrap();
    let backend = "SELECT pg_backend_pid()";
    let first: i32 = sqlx::query_scalar(backend).fetch_one(&pool).await.unwrap();
    // The pool's one connection turns read-only, as on a server gone into recovery.
    sqlx::query("SET SESSION default_transaction_read_only = on")
        .execute(&pool)
        .await
        .unwrap();
    let error = sqlx::query("CREATE TABLE written (x int)")
        .execute(&pool)
        .await
        .unwrap_err();
    assert!(availability::is_unavailable(&error), "{error}");
    availability::take_note(&error);

    sqlx::query("CREATE TABLE written (x int)")
        .execute(&pool)
        .await
        .expect("a new connection takes the write");
    let now: i32 = sqlx::query_scalar(backend).fetch_one(&pool).await.unwrap();
    assert_ne!(now, first, "the read-only connection was dropped");
}

/// Sends raw bytes as one HTTP/1.1 request and returns the status and body of the answer.
async fn raw_request(app: &TestApp, request: &[u8]) -> (u16, Value) {
    let mut stream = TcpStream::connect(app.address).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn hostile_input_gets_clear_refusals_and_the_service_keeps_serving() {
    let app = TestApp::spawn().await;
    let merchant = app.create_merchant("Probe Ltd").await;
    let test = merchant.test();
    let post_raw = |path: &'static str, body: Vec<u8>| {
        app.request(Method::POST, path)
            .auth(&test)
            .header("content-type", "application/json")
            .body(body)
    };

    // Nested far past any sensible depth, but inside the size limit.
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let response = post_raw("/v1/quotes", deep.into_bytes())
        .send()
        .await
        .unwrap();
    assert_refusal(response, 422, "request.malformed_json").await;
    // Not UTF-8.
    let response = post_raw("/v1/quotes", b"{\"pickup\": \"\xff\xfe\"}".to_vec())
        .send()
        .await
        .unwrap();
    assert_refusal(response, 422, "request.malformed_json").await;
    // Far too big.
    let response = post_raw("/v1/quotes", vec![b' '; 4 << 20])
        .send()
        .await
        .unwrap();
    assert_refusal(response, 413, "request.body_too_large").await;

    // NUL, which no PostgreSQL text can hold, in a body, in a query and in a path.
    let response = app
        .admin(Method::POST, "/merchants")
        .json(&serde_json::json!({"name": "Nul\u{0} Ltd"}))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 422, "request.invalid_body").await;
    let response = app
        .request(
            Method::POST,
            "/v1/jobs/00000000-0000-4000-8000-000000000000/cancel",
        )
        .auth(&test)
        .json(&serde_json::json!({"reason": "\u{0}"}))
        .send()
        .await
        .unwrap();
    assert_refusal(response, 422, "request.invalid_body").await;
    let response = app
        .request(Method::GET, "/v1/jobs?status=pending%00")
        .auth(&test)
        .send()
        .await
        .unwrap();
    assert_refusal(response, 422, "request.invalid_query").await;
    let response = app
        .admin(Method::POST, "/keys/ck_test_%00/revoke")
        .send()
        .await
        .unwrap();
    assert_refusal(response, 404, "key.not_found").await;

    // A path segment where a number goes that is no number, or too big for one.
    for (path, code) in [
        (
            "/markets/demo/price-books/abc/activate",
            "price_book.version_not_found",
        ),
        (
            "/markets/demo/price-books/99999999999/comparison",
            "price_book.version_not_found",
        ),
        (
            "/markets/nowhere/price-books/abc/activate",
            "market.not_found",
        ),
    ] {
        let method = if path.ends_with("activate") {
            Method::POST
        } else {
            Method::GET
        };
        let response = app.admin(method, path).send().await.unwrap();
        assert_refusal(response, 404, code).await;
    }

    // Numbers past every integer type, and SQL where a value goes.
    for (path, code) in [
        (
            "/v1/jobs?size=99999999999999999999999",
            "request.invalid_page_size",
        ),
        (
            "/v1/jobs?page=9223372036854775807&size=200",
            "request.page_too_deep",
        ),
        ("/v1/jobs?page=-1", "request.invalid_page"),
        (
            "/v1/jobs?status=pending%27%3B%20DROP%20TABLE%20jobs%3B--",
            "request.unknown_status",
        ),
        (
            "/v1/places?q=Main&limit=100000000000",
            "request.invalid_limit",
        ),
    ] {
        let response = app
            .request(Method::GET, path)
            .auth(&test)
            .send()
            .await
            .unwrap();
        assert_refusal(response, 422, code).await;
    }
    let response = app
        .request(Method::GET, "/v1/jobs/1%27%20OR%20%271%27=%271")
        .auth(&test)
        .send()
        .await
        .unwrap();
    assert_refusal(response, 404, "job.not_found").await;
    // A path segment that decodes to no UTF-8 names nothing (the router's bare 400 is not
    // passed on as a fault).
    let response = app
        .request(Method::GET, "/v1/jobs/%FF%FE")
        .auth(&test)
        .send()
        .await
        .unwrap();
    assert_refusal(response, 404, "not_found").await;

    // Bytes no client library would send: a non-UTF-8 idempotency key, a header value with
    // a smuggled line.
    let credentials = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", test.key, test.secret))
    };
    let body = br#"{"quote_id":"00000000-0000-4000-8000-000000000000"}"#;
    let mut request = format!(
        "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {credentials}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\
         Idempotency-Key: ",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(b"\xff\xfe\xfd\r\n\r\n");
    request.extend_from_slice(body);
    let (status, answer) = raw_request(&app, &request).await;
    assert_eq!(status, 422, "{answer}");
    assert_eq!(answer["code"], "request.invalid_idempotency_key");
    let smuggled = format!(
        "GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {credentials}\r\n\
         X-Note: a\rSet-Cookie: b\r\nConnection: close\r\n\r\n"
    );
    let (status, _) = raw_request(&app, smuggled.as_bytes()).await;
    assert_eq!(status, 400, "a bare CR in a header is a malformed request");

    // Still serving, and nothing was dropped.
    let response = app
        .request(Method::GET, "/v1/jobs")
        .auth(&test)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let pool = app.pool().await;
    let tables: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_tables WHERE tablename = 'jobs'")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(tables, 1);
}

#[tokio::test]
async fn a_slow_client_is_cut_off_and_others_are_served() {
    let app = TestApp::spawn_with(|name| {
        (name == "COURIER_HEADER_READ_TIMEOUT_MS").then(|| "500".to_owned())
    })
    .await;
    // Headers trickling in a byte at a time, never finished.
    let mut slow = TcpStream::connect(app.address).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let cut_off = loop {
        if slow.write_all(b"X").await.is_err() {
            break true;
        }
        let mut byte = [0u8; 1];
        match tokio::time::timeout(Duration::from_millis(100), slow.read(&mut byte)).await {
            // Closed (or answered with an error status and closed).
            Ok(Ok(0) | Err(_)) => break true,
            Ok(Ok(_)) => {
                let mut rest = Vec::new();
                let _ = slow.read_to_end(&mut rest).await;
                break true;
            }
            Err(_) if started.elapsed() > Duration::from_secs(5) => break false,
            Err(_) => {}
        }
    };
    assert!(cut_off, "the slow client was still connected after 5 s");
    assert!(started.elapsed() < Duration::from_secs(3));
    let response = app.request(Method::GET, "/healthz").send().await.unwrap();
    assert_eq!(response.status(), 200);
}
