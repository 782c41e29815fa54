//! The consoles' pages at the sizes the API is tested at: a merchant with 100,000 jobs (and
//! their charges) and an endpoint whose delivery log holds 10,000 deliveries, read as a
//! signed-in person reads them, with the time each page takes and the CPU it costs the service
//! and PostgreSQL.
//!
//! Starts a private PostgreSQL cluster and the real service in this process (on a runtime of
//! its own, whose threads' CPU is read apart from the client's), books a few jobs through the
//! API, then grows the tables: `BENCH_GROWN_JOBS` jobs (default 100,000) copied from a real one,
//! each with a captured charge, and `BENCH_DELIVERIES` finished deliveries (default 10,000; one
//! in ten failed) on one endpoint, with their events; and a busy day on the demo market:
//! `BENCH_COURIERS` couriers online (default 1,000) with a live job under way each and as many
//! searching; and analyses them. Then signs in to both
//! consoles as people do (the merchant's owner joins through an invitation; an admin operator
//! joins, signs in and sets up the second factor) and, page by page, reads each from one client
//! for `BENCH_SECONDS` (default 5); `BENCH_PAGES=board,needs` reads only the pages whose
//! name holds one of these; `BENCH_SAVE_PAGES=DIR` keeps each page's last answer there.
//!
//! cargo bench -p courier --bench consoles

mod common;

use std::time::{Duration, Instant};

use common::{Bench, Latencies, env_or};
use reqwest::header::{COOKIE, SET_COOKIE};
use serde_json::{Value, json};

const ADMIN_TOKEN: &str = "bench-operator-token-bench-operator-token";

/// The session cookie a sign-in form set (`name=value`).
/// The password the bench's people are given.
const PASSWORD: &str = "a long bench password";

/// The cookie a response sets (`name=value`).
fn cookie_of(response: &reqwest::Response) -> String {
    let cookie = response
        .headers()
        .get(SET_COOKIE)
        .expect("a session cookie");
    cookie
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned()
}

/// A client that does not follow redirects: cookies come with them.
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// An invitation's token, made through the operator API at `path` for `body`.
async fn invitation(bench: &Bench, path: &str, body: Value) -> String {
    let issued: Value = bench
        .http
        .post(format!("{}/admin/v1{path}", bench.base))
        .bearer_auth(ADMIN_TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let url = issued["invitation_url"].as_str().expect("an invitation");
    url.rsplit('/').next().unwrap().to_owned()
}

/// The cookie of the merchant's first owner, joined through an invitation (joining signs in).
async fn merchant_signed_in(bench: &Bench) -> String {
    let merchant: String =
        sqlx::query_scalar("SELECT merchant_id::text FROM api_keys WHERE key = $1")
            .bind(&bench.key)
            .fetch_one(&bench.pool)
            .await
            .unwrap();
    let token = invitation(
        bench,
        &format!("/merchants/{merchant}/invitations"),
        json!({"email": "owner@bench.example", "role": "owner"}),
    )
    .await;
    let joined = browser()
        .post(format!("{}/console/invitations/{token}", bench.base))
        .form(&[
            ("name", "Owner"),
            ("password", PASSWORD),
            ("password_again", PASSWORD),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(joined.status(), 303, "joined");
    cookie_of(&joined)
}

/// The cookie of an admin operator: invited, joined, signed in, second factor set up.
async fn operator_signed_in(bench: &Bench) -> String {
    let token = invitation(
        bench,
        "/operators/invitations",
        json!({"email": "ops@bench.example", "role": "admin"}),
    )
    .await;
    let http = browser();
    let joined = http
        .post(format!("{}/ops/invitations/{token}", bench.base))
        .form(&[
            ("name", "Ops"),
            ("password", PASSWORD),
            ("password_again", PASSWORD),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(joined.status(), 303, "joined");
    let signed = http
        .post(format!("{}/ops/sign-in", bench.base))
        .form(&[("email", "ops@bench.example"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(signed.status(), 303, "signed in");
    let cookie = cookie_of(&signed);
    let setup = http
        .get(format!("{}/ops/second-factor", bench.base))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let after = |marker: &str| {
        let at = setup.find(marker).expect(marker) + marker.len();
        setup[at..].split(['<', '"']).next().unwrap().to_owned()
    };
    let (key, csrf) = (
        after("<code id=\"totp-key\">"),
        after("name=\"csrf\" value=\""),
    );
    let totp = totp_rs::TOTP::new_unchecked(
        totp_rs::Algorithm::SHA1,
        6,
        1,
        30,
        totp_rs::Secret::Encoded(key).to_bytes().unwrap(),
        None,
        String::new(),
    );
    let code = totp.generate_current().unwrap();
    let on = http
        .post(format!("{}/ops/second-factor/confirm", bench.base))
        .header("cookie", &cookie)
        .form(&[("csrf", csrf.as_str()), ("code", code.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(on.status(), 200, "second factor on");
    cookie
}

/// Gives the endpoint `count` finished deliveries (one in ten failed, the rest delivered) of
/// the merchant's jobs, with their events, a minute apart going back; then analyses.
async fn grow_deliveries(pool: &sqlx::PgPool, endpoint: &str, count: usize) {
    let statements = [
        format!(
            "CREATE TEMP TABLE grown_events AS SELECT gen_random_uuid() AS event_id, \
             gen_random_uuid() AS delivery_id, id AS job_id, merchant_id, reference, n, \
             now() - make_interval(mins => n::int) AS at \
             FROM (SELECT id, merchant_id, reference, row_number() OVER () AS n FROM jobs \
                   LIMIT {count}) AS j"
        ),
        "INSERT INTO events (id, merchant_id, environment, name, job_id, occurred_at, job, \
         details, recorded_at, fanned_out_at) \
         SELECT event_id, merchant_id, 'test', 'job.delivered', job_id, at, \
         jsonb_build_object('id', job_id, 'reference', reference), '{}', at, at \
         FROM grown_events"
            .into(),
        format!(
            "INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_name, occurred_at, \
             body, status, attempts, delivered_at, response_status_code, last_error, created_at, \
             last_attempt_at, response_ms, response_excerpt) \
             SELECT delivery_id, '{endpoint}', event_id, 'job.delivered', at, \
             convert_to(jsonb_build_object('id', event_id, 'type', 'job.delivered', \
               'created', at, 'data', jsonb_build_object('jobId', job_id, \
               'reference', reference, 'status', 'delivered'))::text, 'UTF8'), \
             CASE WHEN n % 10 = 0 THEN 'failed' ELSE 'delivered' END, \
             CASE WHEN n % 10 = 0 THEN 8 ELSE 1 END, \
             CASE WHEN n % 10 = 0 THEN NULL ELSE at + interval '1 second' END, \
             CASE WHEN n % 10 = 0 THEN 500 ELSE 200 END, \
             CASE WHEN n % 10 = 0 THEN 'the receiver answered 500' END, \
             at, at + interval '1 second', 120, \
             CASE WHEN n % 10 = 0 THEN 'database down' ELSE 'ok' END \
             FROM grown_events"
        ),
        "DROP TABLE grown_events".into(),
        "ANALYZE events".into(),
        "ANALYZE webhook_deliveries".into(),
    ];
    // One connection: the temporary table is the session's.
    let mut conn = pool.acquire().await.unwrap();
    for statement in statements {
        sqlx::query(&statement).execute(&mut *conn).await.unwrap();
    }
}

/// A captured charge for each job that has none, copied from a real one, raised when the job
/// was booked; then analyses.
async fn grow_charges(pool: &sqlx::PgPool) -> i64 {
    sqlx::query(
        "INSERT INTO charges SELECT (jsonb_populate_record(NULL::charges, to_jsonb(c) \
         || jsonb_build_object('id', gen_random_uuid(), 'job_id', j.id, \
            'status', 'captured', 'hold_key', NULL, 'authorisation_ref', 'pi_grown_' || j.id, \
            'raised_at', j.booked_at, 'captured_at', j.booked_at + interval '40 minutes', \
            'updated_at', j.booked_at + interval '40 minutes'))).* \
         FROM (SELECT * FROM charges ORDER BY raised_at LIMIT 1) AS c \
         CROSS JOIN jobs j WHERE NOT EXISTS (SELECT 1 FROM charges k WHERE k.job_id = j.id)",
    )
    .execute(pool)
    .await
    .unwrap();
    sqlx::query("ANALYZE charges").execute(pool).await.unwrap();
    sqlx::query_scalar("SELECT count(*) FROM charges")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// A busy market's day on the demo market: `couriers` couriers online, seen a minute ago
/// across the city, and twice as many live jobs: one per courier under way (half assigned,
/// half collected), and as many searching, for up to 14 minutes, each with its stops moved
/// across the city from the real job's; then analyses. Nothing dispatches meanwhile (the
/// bench's dispatch interval is an hour).
async fn grow_fleet(pool: &sqlx::PgPool, couriers: usize) {
    // A stop of the real job, moved up to about 900 m each way, over most of the demo city
    // (per row: random() is volatile).
    let moved = |stop: &str| {
        format!(
            "jsonb_set(jsonb_set(j.{stop}, '{{latitude}}', to_jsonb((j.{stop}->>'latitude')::float8 \
               + (random() - 0.5) * 0.016)), '{{longitude}}', \
               to_jsonb((j.{stop}->>'longitude')::float8 + (random() - 0.5) * 0.016))"
        )
    };
    let statements = [
        format!(
            "CREATE TEMP TABLE fleet AS SELECT gen_random_uuid() AS courier_id, \
             gen_random_uuid() AS job_id, gen_random_uuid() AS search_id, \
             gen_random_uuid() AS quote_id, gen_random_uuid() AS search_quote_id, n, random() AS t \
             FROM generate_series(1, {couriers}) AS n"
        ),
        "INSERT INTO couriers (id, name, phone, vehicle, market_id, status, online, \
           credential_key, secret_hash, created_at, takes_routes) \
         SELECT courier_id, 'Bench Rider ' || n, '+966 50 ' || lpad(n::text, 7, '0'), 'car', \
           'demo', 'active', true, 'crk_bench_' || n, '\\x00', now(), true FROM fleet"
            .into(),
        "INSERT INTO courier_positions (courier_id, latitude, longitude, seen_at) \
         SELECT f.courier_id, \
           (j.pickup->>'latitude')::float8 + (random() - 0.5) * 0.016, \
           (j.pickup->>'longitude')::float8 + (random() - 0.5) * 0.016, \
           now() - interval '1 minute' \
         FROM fleet f CROSS JOIN (SELECT * FROM jobs ORDER BY booked_at LIMIT 1) AS j"
            .into(),
        "INSERT INTO quotes SELECT (jsonb_populate_record(NULL::quotes, to_jsonb(q) \
           || jsonb_build_object('id', f.quote_id))).* \
         FROM (SELECT q.* FROM quotes q JOIN jobs j ON j.quote_id = q.id \
               ORDER BY j.booked_at LIMIT 1) AS q \
         CROSS JOIN (SELECT quote_id FROM fleet UNION ALL SELECT search_quote_id FROM fleet) AS f"
            .into(),
        format!(
            "INSERT INTO jobs SELECT (jsonb_populate_record(NULL::jobs, to_jsonb(j) \
               || jsonb_build_object('id', f.job_id, 'quote_id', f.quote_id, \
                  'reference', j.reference || '-W' || f.n, \
                  'tracking_token', j.tracking_token || '-w' || f.n, 'environment', 'live', \
                  'status', CASE WHEN f.n % 2 = 0 THEN 'assigned' ELSE 'in_transit' END, \
                  'courier_id', f.courier_id, 'booked_at', now() - interval '20 minutes', \
                  'assigned_at', now() - interval '10 minutes', 'completed_at', NULL, \
                  'pickup', {}, 'dropoff', {}))).* \
             FROM (SELECT * FROM jobs ORDER BY booked_at LIMIT 1) AS j CROSS JOIN fleet f",
            moved("pickup"),
            moved("dropoff")
        ),
        format!(
            "INSERT INTO jobs SELECT (jsonb_populate_record(NULL::jobs, to_jsonb(j) \
               || jsonb_build_object('id', f.search_id, 'quote_id', f.search_quote_id, \
                  'reference', j.reference || '-S' || f.n, \
                  'tracking_token', j.tracking_token || '-s' || f.n, 'environment', 'live', \
                  'status', 'searching', 'courier_id', NULL, 'assigned_at', NULL, \
                  'completed_at', NULL, 'booked_at', now() - make_interval(secs => f.t * 840), \
                  'search_opened_at', now() - make_interval(secs => f.t * 840), \
                  'pickup', {}, 'dropoff', {}))).* \
             FROM (SELECT * FROM jobs ORDER BY booked_at LIMIT 1) AS j CROSS JOIN fleet f",
            moved("pickup"),
            moved("dropoff")
        ),
        "DROP TABLE fleet".into(),
        "ANALYZE couriers".into(),
        "ANALYZE courier_positions".into(),
        "ANALYZE jobs".into(),
    ];
    let mut conn = pool.acquire().await.unwrap();
    for statement in statements {
        sqlx::query(&statement).execute(&mut *conn).await.unwrap();
    }
}

/// The board's closer map of its busiest group's part (the whole market's board when it
/// draws no groups).
async fn busiest_part(bench: &Bench, cookie: &str) -> String {
    let board = bench
        .http
        .get(format!("{}/ops/markets/demo", bench.base))
        .header(COOKIE, cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // Each group: `…&amp;area=S,W,N,E"><title>N …`.
    board
        .split("&amp;area=")
        .skip(1)
        .filter_map(|rest| {
            let (area, after) = rest.split_once("\"><title>")?;
            let count: u64 = after.split(' ').next()?.parse().ok()?;
            Some((count, area.to_owned()))
        })
        .max()
        .map_or_else(
            || "/ops/markets/demo".to_owned(),
            |(_, area)| format!("/ops/markets/demo?area={area}"),
        )
}

/// Reads `path` with `cookie` from one client for `seconds`; (requests, latencies, time,
/// the last answer's size in bytes).
async fn read_page(
    bench: &Bench,
    cookie: &str,
    path: &str,
    seconds: u64,
) -> (usize, Latencies, Duration, usize) {
    let url = format!("{}{path}", bench.base);
    let started = Instant::now();
    let mut latencies = Vec::new();
    let mut size = 0;
    while started.elapsed() < Duration::from_secs(seconds) {
        let at = Instant::now();
        let response = bench
            .http
            .get(&url)
            .header(COOKIE, cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let body = response.bytes().await.unwrap();
        latencies.push(at.elapsed());
        size = body.len();
        if let Ok(dir) = std::env::var("BENCH_SAVE_PAGES") {
            let name: String = path
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            std::fs::write(format!("{dir}/{name}.html"), &body).unwrap();
        }
    }
    (
        latencies.len(),
        Latencies(latencies),
        started.elapsed(),
        size,
    )
}

fn main() {
    let seconds: u64 = env_or("BENCH_SECONDS", 5);
    let grown: usize = env_or("BENCH_GROWN_JOBS", 100_000);
    let deliveries: usize = env_or("BENCH_DELIVERIES", 10_000);
    let fleet: usize = env_or("BENCH_COURIERS", 1_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let bench = Bench::start("consoles", 1, |name| match name {
            "COURIER_ADMIN_TOKEN" => Some(ADMIN_TOKEN.into()),
            // One client reads every page: budgets it never reaches.
            "COURIER_PUBLIC_REQUEST_LIMIT" => Some("100000000".into()),
            "COURIER_WEBHOOK_ALLOW_PRIVATE" => Some("true".into()),
            // The grown fleet's board is read as grown: nothing dispatched meanwhile.
            "COURIER_DISPATCH_INTERVAL_MS" => Some("3600000".into()),
            // `BENCH_BOARD_MARKS=5000`: the board draws every mark one by one.
            "COURIER_TRACKING_BOARD_MARKS" => std::env::var("BENCH_BOARD_MARKS")
                .ok()
                .filter(|m| !m.is_empty()),
            _ => None,
        })
        .await;
        // A few real bookings: the jobs, charges and events the grown ones copy.
        let mut jobs = Vec::new();
        for n in 0..5 {
            let quote = bench.quote().await.expect("a quote");
            let id = quote["id"].as_str().unwrap();
            jobs.push(
                bench
                    .book_job(id, &format!("bench-console-{n}"))
                    .await
                    .expect("a booking"),
            );
        }
        // The endpoint after the bookings, so that nothing is delivered while pages are read.
        let endpoint: Value = bench
            .http
            .post(format!("{}/v1/webhooks", bench.base))
            .basic_auth(&bench.key, Some(&bench.secret))
            .json(&json!({"url": "https://127.0.0.1:9/bench-hooks"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let endpoint = endpoint["id"].as_str().expect("an endpoint").to_owned();
        let had = bench.grow_jobs(grown).await;
        let charges = grow_charges(&bench.pool).await;
        grow_deliveries(&bench.pool, &endpoint, deliveries).await;
        grow_fleet(&bench.pool, fleet).await;
        let (searching, merchant_id): (String, String) = sqlx::query_as(
            "SELECT id::text, merchant_id::text FROM jobs WHERE status = 'searching' \
             ORDER BY search_opened_at LIMIT 1",
        )
        .fetch_one(&bench.pool)
        .await
        .unwrap();
        let delivery: String = sqlx::query_scalar(
            "SELECT id::text FROM webhook_deliveries WHERE endpoint_id = $1::uuid \
             ORDER BY created_at DESC LIMIT 1 OFFSET 25",
        )
        .bind(&endpoint)
        .fetch_one(&bench.pool)
        .await
        .unwrap();

        let merchant = merchant_signed_in(&bench).await;
        let operator = operator_signed_in(&bench).await;
        let closer = busiest_part(&bench, &operator).await;
        // `BENCH_HOLD_SECONDS=N`: the grown database stays up this long, for `EXPLAIN`.
        if let Ok(hold) = std::env::var("BENCH_HOLD_SECONDS") {
            println!("database: {}", bench.cluster.url("bench"));
            tokio::time::sleep(Duration::from_secs(hold.parse().unwrap())).await;
        }
        let pages = [
            ("jobs, page 1", &merchant, "/console/jobs".to_owned()),
            (
                "jobs, delivered, page 1",
                &merchant,
                "/console/jobs?status=delivered".to_owned(),
            ),
            ("a job (map, charge, events)", &merchant, format!("/console/jobs/{}", jobs[0])),
            ("delivery log, page 1", &merchant, format!("/console/webhooks/{endpoint}")),
            (
                "delivery log, failed",
                &merchant,
                format!("/console/webhooks/{endpoint}?status=failed"),
            ),
            (
                "a delivery",
                &merchant,
                format!("/console/webhooks/{endpoint}/deliveries/{delivery}"),
            ),
            (
                "an endpoint's health (the day's attempts)",
                &merchant,
                format!("/console/webhooks/{endpoint}/health"),
            ),
            ("cards and charges", &merchant, "/console/cards".to_owned()),
            ("ops: payments", &operator, "/ops/payments".to_owned()),
            ("ops: market board (map)", &operator, "/ops/markets/demo".to_owned()),
            ("ops: market board, its busiest part closer", &operator, closer),
            ("ops: needs a person", &operator, "/ops/".to_owned()),
            (
                "ops: a job searching, with couriers suggested by road",
                &operator,
                format!("/ops/jobs/{searching}"),
            ),
            ("ops: a merchant", &operator, format!("/ops/merchants/{merchant_id}")),
            ("ops: search (a courier's name)", &operator, "/ops/search?q=rider+77".to_owned()),
            ("ops: audit trail", &operator, "/ops/audit".to_owned()),
        ];
        println!(
            "{} jobs, {charges} charges, {deliveries} deliveries on one endpoint; \
             {fleet} couriers online on the demo market with {fleet} live jobs under way and \
             {fleet} searching; {seconds} s a page, 1 client",
            had + grown + 2 * fleet
        );
        println!("| page | path | p50 | p99 | CPU per page: service + PostgreSQL | size |");
        println!("|---|---|---|---|---|---|");
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        // `BENCH_PAGES=board,home`: only the pages whose name holds one of these.
        let only: Vec<String> = std::env::var("BENCH_PAGES")
            .map(|v| v.split(',').map(str::to_owned).collect())
            .unwrap_or_default();
        for (name, cookie, path) in pages {
            if !only.is_empty() && !only.iter().any(|o| name.contains(o.as_str())) {
                continue;
            }
            bench.statements_reset().await;
            let before = bench.cpu();
            let (requests, mut latencies, _, size) =
                read_page(&bench, cookie, &path, seconds).await;
            tokio::time::sleep(Duration::from_secs(1)).await;
            let (service, postgres) = before.per_request(&bench.cpu(), requests);
            let shown = path
                .replace(&endpoint, "{endpoint}")
                .replace(&delivery, "{delivery}")
                .replace(&jobs[0], "{job}")
                .replace(&searching, "{job}")
                .replace(&merchant_id, "{merchant}");
            println!(
                "| {name} | `{shown}` | {:.2} ms | {:.2} ms | {:.0} µs = {service:.0} + {postgres:.0} | {:.1} KB |",
                ms(latencies.percentile(0.5)),
                ms(latencies.percentile(0.99)),
                service + postgres,
                size as f64 / 1024.0,
            );
            bench.statements_report(name, requests).await;
        }
        bench.finish().await;
    });
}
