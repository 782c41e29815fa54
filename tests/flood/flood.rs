//! A stranger's flood: 20,000 requests with unknown keys, as fast as a client can send them
//! (8 connections from another address, each sending its next request as soon as the last is
//! answered), while a merchant quotes. The merchant sees no 503 and keeps most of its
//! throughput; the database sees a bounded number of key lookups. Flooded and quiet seconds
//! alternate, so the comparison is side by side whatever else the machine is doing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base64::Engine;
use reqwest::Method;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{Authed, Credential, MerchantCredentials, TestApp, journey};

const FLOOD: usize = 20_000;
const CONNECTIONS: usize = 8;
const SLICE: Duration = Duration::from_secs(1);

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

/// The stranger's switch and tally, shared with its thread.
#[derive(Default)]
struct Stranger {
    flooding: AtomicBool,
    sent: AtomicUsize,
}

/// One of the stranger's connections from 127.0.0.2: while flooding, sends a request with a new
/// unknown key as soon as the last is answered, until `FLOOD` are sent in all; returns the
/// status of each answer.
async fn flood_connection(port: u16, stranger: Arc<Stranger>) -> Vec<u16> {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let mut stream = socket.connect(([127, 0, 0, 1], port).into()).await.unwrap();
    let mut answers = Vec::new();
    let mut buffer = Vec::new();
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        if !stranger.flooding.load(Ordering::Relaxed) {
            if stranger.sent.load(Ordering::Relaxed) >= FLOOD {
                return answers;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        }
        let n = stranger.sent.fetch_add(1, Ordering::Relaxed);
        if n >= FLOOD {
            return answers;
        }
        let credentials = base64::engine::general_purpose::STANDARD
            .encode(format!("ck_test_stranger{n:015}:not-a-secret"));
        let request = format!(
            "GET /v1/jobs HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {credentials}\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let status = loop {
            if let Some((status, length)) = parse_answer(&buffer) {
                buffer.drain(..length);
                break status;
            }
            let read = stream.read(&mut chunk).await.unwrap();
            assert!(
                read > 0,
                "the connection closed after {} answers",
                answers.len()
            );
            buffer.extend_from_slice(&chunk[..read]);
        };
        answers.push(status);
    }
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
    // Warm up: the route cache, the connections, the credential cache.
    quote_until(
        &app,
        &credential,
        tokio::time::sleep(Duration::from_millis(500)),
    )
    .await;
    let lookups_before = key_lookups(&pool).await;

    // The stranger runs on a thread and runtime of its own, as another process would.
    let stranger = Arc::new(Stranger::default());
    let flooding = Arc::clone(&stranger);
    let started = Instant::now();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let connections: Vec<_> = (0..CONNECTIONS)
                .map(|_| tokio::spawn(flood_connection(port, Arc::clone(&flooding))))
                .collect();
            let mut statuses = Vec::new();
            for connection in connections {
                statuses.extend(connection.await.unwrap());
            }
            statuses
        })
    });
    // Quiet and flooded seconds alternate until the stranger has sent everything.
    let (mut quiet, mut flooded) = ((0, Duration::ZERO), (0, Duration::ZERO));
    let mut slice = 0;
    while stranger.sent.load(Ordering::Relaxed) < FLOOD {
        let on = slice % 2 == 1;
        stranger.flooding.store(on, Ordering::Relaxed);
        let (made, unavailable, took) =
            quote_until(&app, &credential, tokio::time::sleep(SLICE)).await;
        assert_eq!(unavailable, 0, "the merchant saw 503s");
        let tally = if on { &mut flooded } else { &mut quiet };
        tally.0 += made;
        tally.1 += took;
        slice += 1;
    }
    stranger.flooding.store(false, Ordering::Relaxed);
    let flood_took = started.elapsed();
    let statuses = tokio::task::spawn_blocking(move || thread.join().unwrap())
        .await
        .unwrap();
    let lookups = key_lookups(&pool).await - lookups_before;

    assert_eq!(statuses.len(), FLOOD);
    assert!(statuses.iter().all(|s| *s == 401 || *s == 429));
    let refused_early = statuses.iter().filter(|s| **s == 429).count();
    let rate = |(made, took): (usize, Duration)| made as f64 / took.as_secs_f64();
    let (quiet_rate, flooded_rate) = (rate(quiet), rate(flooded));
    let ratio = flooded_rate / quiet_rate;
    eprintln!(
        "flood: {FLOOD} requests with unknown keys in {flood_took:?} ({slice} alternating \
         seconds), {refused_early} answered 429 before any lookup, {lookups} key lookups; the \
         merchant's quotes: {quiet_rate:.0}/s in quiet seconds, {flooded_rate:.0}/s in flooded \
         ones ({ratio:.2})"
    );
    assert!(
        ratio >= 0.8,
        "{flooded_rate:.0}/s during the flood, {quiet_rate:.0}/s without"
    );
    // The failure budget (100 per address and window) bounds the lookups.
    assert!(lookups <= 150, "{lookups} key lookups");
}
