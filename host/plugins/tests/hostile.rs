//! Hostile components fail their own call, within its deadline, and
//! nothing else.

mod common;

use std::time::{Duration, Instant};

use courier_plugins::defaults::{
    STANDARD_PRICE_BOOK, STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS, STANDARD_SHAPER,
};
use courier_plugins::{
    Environment, PayloadShaper, PluginEngine, PluginError, PreparedSettings, PriceBook, Vehicle,
    WebhookEvent,
};

use common::{DEADLINE, HOSTILE, engine, prepare, request};

struct Books {
    hostile: PriceBook,
    hostile_settings: PreparedSettings,
    good: PriceBook,
    good_settings: PreparedSettings,
}

fn books(engine: &PluginEngine) -> Books {
    let hostile = PriceBook::load(engine, HOSTILE).unwrap();
    let good = PriceBook::load(engine, STANDARD_PRICE_BOOK).unwrap();
    Books {
        hostile_settings: prepare(&hostile, "fine"),
        hostile,
        good_settings: prepare(&good, STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS),
        good,
    }
}

/// After a hostile call: the same component behaves when asked to, and a
/// good book prices normally.
fn assert_unharmed(b: &Books) {
    let lines = b
        .hostile
        .price(&request(Vehicle::Car, "ok"), &b.hostile_settings)
        .unwrap()
        .unwrap();
    assert_eq!(lines.len(), 1);
    let lines = b
        .good
        .price(&request(Vehicle::Car, "m"), &b.good_settings)
        .unwrap()
        .unwrap();
    assert_eq!(lines.len(), 4);
}

fn hostile_price(b: &Books, mode: &str) -> (PluginError, Duration) {
    let start = Instant::now();
    let err = b
        .hostile
        .price(&request(Vehicle::Car, mode), &b.hostile_settings)
        .expect_err("a hostile call succeeded");
    (err, start.elapsed())
}

#[test]
fn endless_loop_times_out_at_the_deadline() {
    let b = books(&engine());
    let (err, took) = hostile_price(&b, "spin");
    assert!(
        matches!(err, PluginError::Timeout(d) if d == DEADLINE),
        "{err}"
    );
    // A full deadline of wall time, then a full deadline of CPU time: the
    // engine never cuts a call short because the machine was busy.
    assert!(took >= DEADLINE * 2, "interrupted early: {took:?}");
    assert!(took < DEADLINE * 20, "interrupted late: {took:?}");
    assert_unharmed(&b);
}

#[test]
fn unbounded_allocation_hits_the_memory_cap() {
    let b = books(&engine());
    let (err, _) = hostile_price(&b, "balloon");
    assert!(
        matches!(err, PluginError::MemoryExceeded(n) if n == 64 << 20),
        "{err}"
    );
    assert_unharmed(&b);
}

#[test]
fn a_panic_is_a_trap() {
    let b = books(&engine());
    let (err, _) = hostile_price(&b, "trap");
    assert!(matches!(err, PluginError::Trapped(_)), "{err}");
    assert_unharmed(&b);
}

#[test]
fn too_many_lines_are_refused() {
    let b = books(&engine());
    let (err, _) = hostile_price(&b, "flood");
    assert!(matches!(err, PluginError::OutputTooLarge(_)), "{err}");
    assert_unharmed(&b);
}

#[test]
fn aliased_strings_are_refused_before_the_host_copies_them() {
    // 20,000 strings that all point at one 1 MiB block: copying each would
    // take ~20 GB. The copy budget stops it after a few.
    let b = books(&engine());
    let (err, took) = hostile_price(&b, "alias");
    assert!(matches!(err, PluginError::OutputTooLarge(_)), "{err}");
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert_unharmed(&b);
}

#[test]
fn preparing_settings_is_held_to_the_same_limits() {
    let b = books(&engine());
    let err = b.hostile.prepare("spin").unwrap_err();
    assert!(matches!(err, PluginError::Timeout(_)), "{err}");
    let err = b.hostile.prepare("balloon").unwrap_err();
    assert!(matches!(err, PluginError::MemoryExceeded(_)), "{err}");
    assert!(b.hostile.prepare("fine").unwrap().is_ok());
    assert_unharmed(&b);
}

#[test]
fn oversized_inputs_never_reach_the_plugin() {
    let b = books(&engine());
    let settings = " ".repeat((64 << 10) + 1);
    let err = b.good.prepare(&settings).unwrap_err();
    assert!(
        matches!(
            err,
            PluginError::InputTooLarge {
                what: "settings",
                ..
            }
        ),
        "{err}"
    );
    let err = b
        .good
        .price(&request(Vehicle::Car, &"m".repeat(2000)), &b.good_settings)
        .unwrap_err();
    assert!(
        matches!(
            err,
            PluginError::InputTooLarge {
                what: "merchant",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn hostile_shapers_fail_alone() {
    let engine = engine();
    let hostile = PayloadShaper::load(&engine, HOSTILE).unwrap();
    let good = PayloadShaper::load(&engine, STANDARD_SHAPER).unwrap();
    let event =
        |name: &str| WebhookEvent::new(name, "2026-11-21T10:00:00Z", Environment::Test, "m");
    for (mode, check) in [
        (
            "spin",
            (|e: &PluginError| matches!(e, PluginError::Timeout(_))) as fn(&PluginError) -> bool,
        ),
        ("balloon", |e| matches!(e, PluginError::MemoryExceeded(_))),
        ("trap", |e| matches!(e, PluginError::Trapped(_))),
        ("flood", |e| matches!(e, PluginError::OutputTooLarge(_))),
    ] {
        let err = hostile.shape(&event(mode)).unwrap_err();
        assert!(check(&err), "{mode}: {err}");
        assert_eq!(hostile.shape(&event("ok")).unwrap().unwrap().body, b"{}");
        let mut dead = event("payment_method.dead");
        dead.payment_method_id = Some("pm_1".into());
        assert!(good.shape(&dead).unwrap().is_ok());
    }
}

#[test]
fn concurrent_hostile_and_good_calls_do_not_interfere() {
    let b = books(&engine());
    std::thread::scope(|s| {
        let hostile = s.spawn(|| {
            for mode in ["spin", "balloon", "trap", "flood", "spin"] {
                hostile_price(&b, mode);
            }
        });
        for _ in 0..200 {
            b.good
                .price(&request(Vehicle::Van, "m"), &b.good_settings)
                .unwrap()
                .unwrap();
        }
        hostile.join().unwrap();
    });
    assert_unharmed(&b);
}

#[test]
fn every_call_is_kept_with_its_time_memory_and_how_it_ended() {
    let engine = engine();
    let b = books(&engine);
    let (err, _) = hostile_price(&b, "balloon");
    assert_unharmed(&b);
    // The hostile book: preparing its settings, the failed call, the good one after, newest
    // first; the good book's calls are its own.
    let calls = engine.recent_calls(b.hostile.sha256());
    let operations: Vec<_> = calls.iter().map(|c| c.operation).collect();
    assert_eq!(operations, ["price", "price", "prepare-settings"]);
    let (good, failed) = (&calls[0], &calls[1]);
    assert_eq!(good.failure, None);
    assert_eq!(failed.failure.as_deref(), Some(err.to_string().as_str()));
    // The balloon grew to the cap; the good call stayed far below it.
    assert_eq!(failed.memory_limit, 64 << 20);
    assert!(failed.memory_bytes > 32 << 20, "{}", failed.memory_bytes);
    assert!(
        good.memory_bytes > 0 && good.memory_bytes < 8 << 20,
        "{}",
        good.memory_bytes
    );
    assert!(good.took < good.deadline, "{:?}", good.took);
    // Fuel counts the guest's work: the balloon did more than a price.
    assert!(good.fuel > 100, "{}", good.fuel);
    assert!(failed.fuel > good.fuel, "{} {}", failed.fuel, good.fuel);
    assert!(failed.at <= good.at);
    let good_book = engine.recent_calls(b.good.sha256());
    assert_eq!(good_book.len(), 2, "{good_book:?}");
}
