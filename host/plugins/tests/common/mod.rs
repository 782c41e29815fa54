//! Shared fixtures for the engine's integration tests.
#![allow(dead_code)] // each test file uses a different part

use std::time::Duration;

use courier_plugins::{
    EngineConfig, Limits, LocalDateTime, PluginEngine, PreparedSettings, PriceBook, PriceRequest,
    Vehicle, Weekday,
};

/// Price books and shapers that misbehave on request (see
/// plugins/hostile/src/lib.rs).
pub const HOSTILE: &[u8] = include_bytes!("../../../../plugins/dist/hostile.wasm");
/// A payment adapter that sends HTTP wherever it is told.
pub const HTTP_PROBE: &[u8] = include_bytes!("../../../../plugins/dist/http-probe.wasm");

pub const DEADLINE: Duration = Duration::from_millis(50);

/// A small pool keeps each test engine's address-space reservation modest.
pub fn engine() -> PluginEngine {
    PluginEngine::new(EngineConfig {
        max_instances: 64,
        limits: Limits {
            call_deadline: DEADLINE,
            adapter_deadline: Duration::from_secs(5),
            ..Limits::default()
        },
        ..EngineConfig::default()
    })
    .unwrap()
}

pub fn request(vehicle: Vehicle, merchant: &str) -> PriceRequest {
    PriceRequest {
        market: "london".into(),
        currency: "GBP".into(),
        vehicle,
        distance_metres: 4_250,
        duration_seconds: 1_130,
        weight_grams: 0,
        pickup_postcode: None,
        dropoff_postcode: None,
        local_time: LocalDateTime {
            year: 2026,
            month: 11,
            day: 18,
            hour: 11,
            minute: 0,
            weekday: Weekday::Wednesday,
        },
        demand_permille: 800,
        merchant: merchant.into(),
    }
}

/// Settings the book accepts, prepared.
pub fn prepare(book: &PriceBook, settings: &str) -> PreparedSettings {
    book.prepare(settings).unwrap().unwrap()
}
