//! A stranger's flood: 20,000 requests with unknown keys, as fast as a client can send them
//! (pipelined on a few connections from another address), while a merchant quotes. The
//! merchant sees no 503 and keeps most of its throughput, measured side by side with the same
//! quoting and no flood; the database sees a bounded number of key lookups.

use std::time::{Duration, Instant};

use base64::Engine;
use reqwest::Method;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::quotes::journey;
use crate::support::{Authed, Credential, MerchantCredentials, TestApp};

const FLOOD: usize = 20_000;
const CONNECTIONS: usize = 8;

/// Quotes made and 503s seen by four clients until `done` resolves, and how
/// long they quoted.
async fn quote_until(
    app: &TestApp,
    credential: &Credential,
    done: impl std::future::Future<Output = ()>,
) -> (usize, usize, Duration) {
    let started = Instant::now();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let client = || async {
        let (mut made, mut unavailable) = (0, 0);
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let response = app
                .request(Method::POST, "/v1/quotes")
                .auth(credential)
                .json(&journey(None))
                .send()
                .await
                .unwrap();
            match response.status().as_u16() {
                201 => made += 1,
                503 => unavailable += 1,
                other => panic!("a quote was answered {other}"),
            }
        }
        (made, unavailable)
    };
    let stopper = async {
        done.await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    };
    let (_, a, b, c, d) = tokio::join!(stopper, client(), client(), client(), client());
    let (made, unavailable) = [a, b, c, d]
        .into_iter()
        .fold((0, 0), |sum, (made, unavailable)| {
            (sum.0 + made, sum.1 + unavailable)
        });
    (made, unavailable, started.elapsed())
}

/// Sends `count` requests, each with a new unknown key, pipelined on one connection from
/// 127.0.0.2; returns the status of each answer.
async fn flood_connection(port: u16, count: usize, first: usize) -> Vec<u16> {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let stream = socket.connect(([127, 0, 0, 1], port).into()).await.unwrap();
    let (mut reading, mut writing) = stream.into_split();
    let writer = tokio::spawn(async move {
        let mut requests = Vec::new();
        for n in first..first + count {
            let credentials = base64::engine::general_purpose::STANDARD
                .encode(format!("ck_test_stranger{n:015}:not-a-secret"));
            requests.extend_from_slice(
                format!(
                    "GET /v1/jobs HTTP/1.1\r\nHost: localhost\r\n\
                     Authorization: Basic {credentials}\r\n\r\n"
                )
                .as_bytes(),
            );
        }
        writing.write_all(&requests).await.unwrap();
        writing
    });
    let mut answers = Vec::with_capacity(count);
    let mut buffer = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    while answers.len() < count {
        let read = reading.read(&mut chunk).await.unwrap();
        assert!(
            read > 0,
            "the connection closed after {} answers",
            answers.len()
        );
        buffer.extend_from_slice(&chunk[..read]);
        // Each answer is a status line, headers and a body of Content-Length bytes.
        while let Some((status, length)) = parse_answer(&buffer) {
            answers.push(status);
            buffer.drain(..length);
        }
    }
    drop(writer.await.unwrap());
    answers
}

/// The status and whole length of the first complete answer in `buffer`.
fn parse_answer(buffer: &[u8]) -> Option<(u16, usize)> {
    let head_end = buffer.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&buffer[..head_end]).ok()?;
    let status = head.get(9..12)?.parse().ok()?;
    let body: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    (buffer.len() >= head_end + body).then_some((status, head_end + body))
}

async fn key_lookups(pool: &sqlx::PgPool) -> i64 {
    // Statistics reach the shared counters when a backend goes idle; a moment's pause first.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    sqlx::query_scalar(
        "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables \
         WHERE relname = 'api_keys'",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strangers_flood_of_unknown_keys_does_not_hurt_a_quoting_merchant() {
    // The merchant's own quote budget is not what is measured.
    let app = TestApp::spawn_with(|name| {
        (name == "COURIER_RATE_LIMIT_QUOTES_PER_MINUTE").then(|| "100000000".to_owned())
    })
    .await;
    let merchant = app.create_merchant("Steady Ltd").await;
    let credential = merchant.test();
    let pool = app.pool().await;
    let port = app.address.port();
    let quiet_window = || tokio::time::sleep(Duration::from_secs(3));
    // Warm up: the route cache, the connections, the credential cache.
    quote_until(
        &app,
        &credential,
        tokio::time::sleep(Duration::from_millis(500)),
    )
    .await;

    // Side by side: quiet, flooded, quiet.
    let (quiet_before, unavailable, quiet_before_took) =
        quote_until(&app, &credential, quiet_window()).await;
    assert_eq!(unavailable, 0);
    let lookups_before = key_lookups(&pool).await;
    // The stranger runs on a thread and runtime of its own, as another process would.
    let stranger = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let started = Instant::now();
            let per_connection = FLOOD / CONNECTIONS;
            let connections: Vec<_> = (0..CONNECTIONS)
                .map(|c| tokio::spawn(flood_connection(port, per_connection, c * per_connection)))
                .collect();
            let mut statuses = Vec::new();
            for connection in connections {
                statuses.extend(connection.await.unwrap());
            }
            (statuses, started.elapsed())
        })
    });
    let (stranger_done, flood_over) = tokio::sync::oneshot::channel();
    let waiter = tokio::task::spawn_blocking(move || {
        let result = stranger.join().unwrap();
        let _ = stranger_done.send(());
        result
    });
    let (flooded, unavailable, flooded_took) = quote_until(&app, &credential, async {
        let _ = flood_over.await;
    })
    .await;
    let (statuses, flood_took) = waiter.await.unwrap();
    assert_eq!(unavailable, 0, "the merchant saw 503s during the flood");
    let lookups = key_lookups(&pool).await - lookups_before;
    let (quiet_after, unavailable, quiet_after_took) =
        quote_until(&app, &credential, quiet_window()).await;
    assert_eq!(unavailable, 0);

    assert_eq!(statuses.len(), FLOOD);
    assert!(statuses.iter().all(|s| *s == 401 || *s == 429));
    let refused_early = statuses.iter().filter(|s| **s == 429).count();
    let rate = |made: usize, took: Duration| made as f64 / took.as_secs_f64();
    let quiet_rate = rate(
        quiet_before + quiet_after,
        quiet_before_took + quiet_after_took,
    );
    let flooded_rate = rate(flooded, flooded_took);
    let ratio = flooded_rate / quiet_rate;
    eprintln!(
        "flood: {FLOOD} requests with unknown keys in {flood_took:?}, {refused_early} answered \
         429 before any lookup, {lookups} key lookups; the merchant's quotes: {quiet_rate:.0}/s \
         without the flood, {flooded_rate:.0}/s during it ({ratio:.2})"
    );
    assert!(
        ratio >= 0.8,
        "{flooded_rate:.0}/s during the flood, {quiet_rate:.0}/s without"
    );
    // The failure budget (100 per address and window) bounds the lookups.
    assert!(lookups <= 150, "{lookups} key lookups");
}
