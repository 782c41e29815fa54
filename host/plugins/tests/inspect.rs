//! Reading a component file without running it.

mod common;

use courier_plugins::defaults::{SANDBOX_PAYMENTS, STANDARD_PRICE_BOOK, STANDARD_SHAPER};
use courier_plugins::{PluginError, World, inspect};

#[test]
fn defaults_implement_their_worlds() {
    for (bytes, world) in [
        (STANDARD_PRICE_BOOK, World::PriceBook),
        (SANDBOX_PAYMENTS, World::PaymentAdapter),
        (STANDARD_SHAPER, World::PayloadShaper),
    ] {
        let info = inspect(bytes).unwrap();
        assert_eq!(info.worlds, [world]);
        assert_eq!(info.size, bytes.len());
        assert_eq!(info.sha256.len(), 64);
        // Built without std: they import their world's types and nothing
        // else (the sandbox does not even take the network it may have).
        assert!(!info.imports.is_empty());
        assert!(info.imports.iter().all(|i| i.granted), "{:?}", info.imports);
    }
    assert_eq!(World::PriceBook.name(), "courier:pricing/price-book@1.0.0");
    assert_eq!(World::PriceBook.package(), "courier:pricing@1.0.0");
}

#[test]
fn capabilities_and_multiple_worlds_are_reported() {
    let probe = inspect(common::HTTP_PROBE).unwrap();
    assert_eq!(probe.worlds, [World::PaymentAdapter]);
    for capability in [
        "courier:payments/outbound-http@2.3.0",
        "courier:payments/log@2.3.0",
    ] {
        let import = probe.imports.iter().find(|i| i.name == capability).unwrap();
        assert!(import.granted, "{capability}");
    }
    // A component built against 2.0.0 is a payment adapter too, its imports granted.
    let older = inspect(include_bytes!(
        "../../../plugins/fixtures/payments-2.0/stripe-payments.wasm"
    ))
    .unwrap();
    assert_eq!(older.worlds, [World::PaymentAdapter]);
    assert!(
        older.imports.iter().all(|i| i.granted),
        "{:?}",
        older.imports
    );
    let hostile = inspect(common::HOSTILE).unwrap();
    assert_eq!(hostile.worlds, [World::PriceBook, World::PayloadShaper]);
    // Built with std: its WASI imports are listed, and not granted.
    let wasi = hostile
        .imports
        .iter()
        .find(|i| i.name.starts_with("wasi:cli/"));
    assert!(wasi.is_some_and(|i| !i.granted), "{:?}", hostile.imports);
}

#[test]
fn non_components_are_refused() {
    assert!(matches!(inspect(b"not wasm"), Err(PluginError::Compile(_))));
    // The smallest core module: magic and version only.
    let module = b"\0asm\x01\0\0\0";
    assert!(
        matches!(inspect(module), Err(PluginError::Compile(m)) if m.contains("core wasm module"))
    );
}
