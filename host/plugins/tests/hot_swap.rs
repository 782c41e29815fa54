//! Swapping the active price book while many threads price.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use courier_plugins::defaults::STANDARD_PRICE_BOOK;
use courier_plugins::{PreparedSettings, PriceBook, Slot, Vehicle, total_minor};

/// One activated version: the book, its settings, and the total it must
/// give for the test journey.
struct Active {
    version: u64,
    book: PriceBook,
    settings: PreparedSettings,
    expected_total: i64,
}

fn version(engine: &courier_plugins::PluginEngine, version: u64, base: i64) -> Active {
    // Each version is loaded on its own, as a registry would, so a swap
    // also changes the compiled component behind the slot.
    let book = PriceBook::load(engine, STANDARD_PRICE_BOOK).unwrap();
    let settings = common::prepare(
        &book,
        &format!(
            r#"{{"schema":1,"vehicles":{{"car":{{"base_fare_minor":{base},"per_km_minor":100,"per_minute_minor":0}}}}}}"#
        ),
    );
    // 4.25 km at 100/km = 425.
    Active {
        version,
        book,
        settings,
        expected_total: base + 425,
    }
}

#[test]
fn swaps_under_load_never_fail_a_call_or_mix_versions() {
    let engine = common::engine();
    let versions = [version(&engine, 1, 1_000), version(&engine, 2, 2_000)];
    let slot = Slot::new(version(&engine, 1, 1_000));
    let stop = AtomicBool::new(false);
    let calls = AtomicU64::new(0);
    let seen = [AtomicU64::new(0), AtomicU64::new(0)];
    let req = common::request(Vehicle::Car, "m");

    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let active = slot.get();
                    let lines = active
                        .book
                        .price(&req, &active.settings)
                        .expect("call failed during a swap")
                        .expect("price refused during a swap");
                    assert_eq!(
                        total_minor(&lines),
                        active.expected_total,
                        "version {} priced with another version's settings",
                        active.version
                    );
                    seen[active.version as usize - 1].fetch_add(1, Ordering::Relaxed);
                    calls.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for i in 0..400 {
            let v = &versions[i % 2];
            slot.replace(Active {
                version: v.version,
                book: v.book.clone(),
                settings: v.settings.clone(),
                expected_total: v.expected_total,
            });
            std::thread::sleep(std::time::Duration::from_micros(500));
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert!(calls.load(Ordering::Relaxed) > 100);
    assert!(
        seen.iter().all(|n| n.load(Ordering::Relaxed) > 0),
        "both versions served"
    );
}
