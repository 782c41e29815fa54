//! Where a price-book call's time goes: the per-call steps timed apart,
//! under a few pool settings. Raw wasmtime, same configuration as the
//! engine except for the knob being varied.
//!
//!     CARGO_TARGET_DIR=/work/target-plugins cargo bench -p courier-plugins --bench engine_costs

use std::time::{Duration, Instant};

use courier_plugins::defaults::{STANDARD_PRICE_BOOK, STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS};
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};

mod wit {
    wasmtime::component::bindgen!({
        path: "../../wit/pricing",
        world: "price-book",
    });
}
use wit::courier::pricing::types as w;

fn request() -> w::PriceRequest {
    w::PriceRequest {
        market: "london".into(),
        currency: "GBP".into(),
        vehicle: w::Vehicle::Car,
        distance_metres: 4_250,
        duration_seconds: 1_130,
        weight_grams: 1_500,
        pickup_postcode: Some("EC1A 1BB".into()),
        dropoff_postcode: Some("N1 9GU".into()),
        local_time: w::LocalDateTime {
            year: 2026,
            month: 11,
            day: 20,
            hour: 17,
            minute: 45,
            weekday: w::Weekday::Friday,
        },
        demand_permille: 1_600,
        merchant: "merchant_acme_grocers".into(),
    }
}

fn p50(mut f: impl FnMut()) -> Duration {
    for _ in 0..1_000 {
        f();
    }
    let mut samples: Vec<Duration> = (0..10_000)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    samples.sort();
    samples[samples.len() / 2]
}

fn us(d: Duration) -> String {
    format!("{:>6.1} µs", d.as_secs_f64() * 1e6)
}

fn engine(keep_resident: usize, pooling: bool) -> Engine {
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(1000)
        .total_core_instances(4000)
        .total_tables(4000)
        .total_memories(1000)
        .max_memory_size(64 << 20)
        .linear_memory_keep_resident(keep_resident)
        .table_keep_resident(keep_resident.min(64 << 10));
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .memory_init_cow(true)
        .wasm_backtrace_max_frames(None);
    if pooling {
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    Engine::new(&config).unwrap()
}

fn main() {
    let small = r#"{"schema":1,"vehicles":{"car":{"base_fare_minor":650,"per_km_minor":160,"per_minute_minor":18,"minimum_fare_minor":950}},"tax_rate_bp":2000}"#;
    let example = STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS;
    for (label, keep, pooling) in [
        ("on-demand allocator", 0, false),
        ("pooling, keep_resident 0", 0, true),
        ("pooling, keep_resident 64 KiB", 64 << 10, true),
        ("pooling, keep_resident 128 KiB", 128 << 10, true),
        ("pooling, keep_resident 256 KiB", 256 << 10, true),
        ("pooling, keep_resident 512 KiB", 512 << 10, true),
        ("pooling, keep_resident 1 MiB", 1 << 20, true),
    ] {
        let engine = engine(keep, pooling);
        let component = Component::new(&engine, STANDARD_PRICE_BOOK).unwrap();
        let mut linker = Linker::<()>::new(&engine);
        linker.define_unknown_imports_as_traps(&component).unwrap();
        let pre = wit::PriceBookPre::new(linker.instantiate_pre(&component).unwrap()).unwrap();
        let req = request();
        let new_store = || {
            let mut s = Store::new(&engine, ());
            s.set_epoch_deadline(100);
            s
        };
        let store_only = p50(|| drop(new_store()));
        let instantiate = p50(|| {
            let mut s = new_store();
            pre.instantiate(&mut s).unwrap();
        });
        let prepare = |settings: &str| {
            let mut s = new_store();
            let b = pre.instantiate(&mut s).unwrap();
            b.courier_pricing_book()
                .call_prepare_settings(&mut s, settings)
                .unwrap()
                .unwrap()
                .compiled
        };
        let (small_c, example_c) = (prepare(small), prepare(example));
        let call = |settings: &[u8]| {
            p50(|| {
                let mut s = new_store();
                let b = pre.instantiate(&mut s).unwrap();
                b.courier_pricing_book()
                    .call_price(&mut s, &req, settings)
                    .unwrap()
                    .unwrap();
            })
        };
        let call_small = call(&small_c);
        let call_example = call(&example_c);
        // The same instance called again: the guest's own work alone, with
        // no instantiation (never done in the engine; for comparison).
        let mut s = new_store();
        let b = pre.instantiate(&mut s).unwrap();
        s.set_epoch_deadline(u64::MAX / 2);
        let warm_example = p50(|| {
            b.courier_pricing_book()
                .call_price(&mut s, &req, &example_c)
                .unwrap()
                .unwrap();
        });
        let warm_small = p50(|| {
            b.courier_pricing_book()
                .call_price(&mut s, &req, &small_c)
                .unwrap()
                .unwrap();
        });
        println!(
            "{label:<32} store {}  +instantiate {}  +price(small) {}  +price(example) {}  | same instance: small {}  example {}",
            us(store_only),
            us(instantiate),
            us(call_small),
            us(call_example),
            us(warm_small),
            us(warm_example)
        );
    }
}
