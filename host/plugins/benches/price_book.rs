//! Price-book calls through the component boundary, a fresh store and
//! instance per call, and pricing throughput while the active version is
//! swapped.
//!
//!     CARGO_TARGET_DIR=/work/target-plugins cargo bench -p courier-plugins --bench price_book
//!
//! Plain std timing: each figure is a percentile over individually timed
//! calls after a warm-up.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use courier_plugins::defaults::{STANDARD_PRICE_BOOK, STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS};
use courier_plugins::{
    EngineConfig, LocalDateTime, PluginEngine, PreparedSettings, PriceBook, PriceRequest, Slot,
    Vehicle, Weekday,
};

fn request() -> PriceRequest {
    PriceRequest {
        market: "london".into(),
        currency: "GBP".into(),
        vehicle: Vehicle::Car,
        distance_metres: 4_250,
        duration_seconds: 1_130,
        weight_grams: 1_500,
        pickup_postcode: Some("EC1A 1BB".into()),
        dropoff_postcode: Some("N1 9GU".into()),
        local_time: LocalDateTime {
            year: 2026,
            month: 11,
            day: 20,
            hour: 17,
            minute: 45,
            weekday: Weekday::Friday,
        },
        demand_permille: 1_600,
        merchant: "merchant_acme_grocers".into(),
    }
}

struct Stats {
    p50: Duration,
    p99: Duration,
    mean: Duration,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let pct = |p: f64| samples[((samples.len() as f64 * p) as usize).min(samples.len() - 1)];
    let total: Duration = samples.iter().sum();
    Stats {
        p50: pct(0.50),
        p99: pct(0.99),
        mean: total / samples.len() as u32,
    }
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn single_calls(book: &PriceBook, settings: &PreparedSettings, n: usize) -> Stats {
    let req = request();
    for _ in 0..2_000 {
        book.price(&req, settings).unwrap().unwrap();
    }
    let samples = (0..n)
        .map(|_| {
            let start = Instant::now();
            book.price(&req, settings).unwrap().unwrap();
            start.elapsed()
        })
        .collect();
    stats(samples)
}

struct Active {
    book: PriceBook,
    settings: PreparedSettings,
}

/// `threads` threads price for `run`; with `swap_every`, another thread
/// replaces the active version that often. Returns (calls/s, latency
/// stats, failures, swaps).
fn under_load(
    versions: &[Active; 2],
    threads: usize,
    run: Duration,
    swap_every: Option<Duration>,
) -> (f64, Stats, u64, u64) {
    let slot = Slot::new(Active {
        book: versions[0].book.clone(),
        settings: versions[0].settings.clone(),
    });
    let stop = AtomicBool::new(false);
    let failures = AtomicU64::new(0);
    let mut swaps = 0u64;
    let req = request();
    let samples: Vec<Vec<Duration>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut samples = Vec::with_capacity(1 << 20);
                    while !stop.load(Ordering::Relaxed) {
                        let start = Instant::now();
                        let active = slot.get();
                        match active.book.price(&req, &active.settings) {
                            Ok(Ok(_)) => {}
                            other => {
                                failures.fetch_add(1, Ordering::Relaxed);
                                eprintln!("failed call after {:?}: {other:?}", start.elapsed());
                            }
                        }
                        samples.push(start.elapsed());
                    }
                    samples
                })
            })
            .collect();
        let end = Instant::now() + run;
        while Instant::now() < end {
            match swap_every {
                Some(every) => {
                    std::thread::sleep(every);
                    let v = &versions[(swaps % 2) as usize];
                    slot.replace(Active {
                        book: v.book.clone(),
                        settings: v.settings.clone(),
                    });
                    swaps += 1;
                }
                None => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        stop.store(true, Ordering::Relaxed);
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let all: Vec<Duration> = samples.into_iter().flatten().collect();
    let rate = all.len() as f64 / run.as_secs_f64();
    (rate, stats(all), failures.load(Ordering::Relaxed), swaps)
}

fn main() {
    let engine = PluginEngine::new(EngineConfig::default()).unwrap();
    let book = PriceBook::load(&engine, STANDARD_PRICE_BOOK).unwrap();
    let prepare = |book: &PriceBook, json: &str| book.prepare(json).unwrap().unwrap();
    let example = prepare(&book, STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS);
    let lines = book.price(&request(), &example).unwrap().unwrap();
    println!(
        "price book: {} bytes; example settings {} bytes of JSON; {} lines",
        STANDARD_PRICE_BOOK.len(),
        STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS.len(),
        lines.len()
    );

    let s = single_calls(&book, &example, 20_000);
    println!(
        "one call, fresh store + instance, example settings: p50 {}  p99 {}  mean {}",
        us(s.p50),
        us(s.p99),
        us(s.mean)
    );
    let small = prepare(
        &book,
        r#"{"schema":1,"vehicles":{"car":{"base_fare_minor":650,"per_km_minor":160,"per_minute_minor":18,"minimum_fare_minor":950}},"tax_rate_bp":2000}"#,
    );
    let s = single_calls(&book, &small, 20_000);
    println!(
        "one call, fresh store + instance, one-vehicle settings: p50 {}  p99 {}  mean {}",
        us(s.p50),
        us(s.p99),
        us(s.mean)
    );
    let start = Instant::now();
    for _ in 0..1_000 {
        prepare(&book, STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS);
    }
    println!(
        "prepare example settings (once per load/activation): {} per call",
        us(start.elapsed() / 1_000)
    );

    let v1 = PriceBook::load(&engine, STANDARD_PRICE_BOOK).unwrap();
    let v2 = PriceBook::load(&engine, STANDARD_PRICE_BOOK).unwrap();
    let versions = [
        Active {
            settings: prepare(&v1, STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS),
            book: v1,
        },
        Active {
            settings: prepare(
                &v2,
                &STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS
                    .replace("\"tax_rate_bp\": 2000", "\"tax_rate_bp\": 2100"),
            ),
            book: v2,
        },
    ];
    let run = Duration::from_secs(3);
    let threads = 2;
    let (rate, s, failed, _) = under_load(&versions, threads, run, None);
    println!(
        "{threads} threads, no swapping:                         {rate:>7.0} calls/s  p50 {}  p99 {}  failures {failed}",
        us(s.p50),
        us(s.p99)
    );
    let (rate, s, failed, swaps) =
        under_load(&versions, threads, run, Some(Duration::from_millis(1)));
    println!(
        "{threads} threads, swap every 1 ms, two loaded books:   {rate:>7.0} calls/s  p50 {}  p99 {}  failures {failed}  ({swaps} swaps)",
        us(s.p50),
        us(s.p99)
    );
    // A settings-only activation keeps the loaded book (a registry caching
    // books by sha256 does this), so pooled slots stay warm for it.
    let same_book = [
        Active {
            book: versions[0].book.clone(),
            settings: versions[0].settings.clone(),
        },
        Active {
            book: versions[0].book.clone(),
            settings: prepare(
                &versions[0].book,
                &STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS
                    .replace("\"tax_rate_bp\": 2000", "\"tax_rate_bp\": 2100"),
            ),
        },
    ];
    let (rate, s, failed, swaps) =
        under_load(&same_book, threads, run, Some(Duration::from_millis(1)));
    println!(
        "{threads} threads, swap every 1 ms, settings only:      {rate:>7.0} calls/s  p50 {}  p99 {}  failures {failed}  ({swaps} swaps)",
        us(s.p50),
        us(s.p99)
    );
}
