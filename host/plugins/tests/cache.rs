//! Precompiled artifacts on disk, keyed by the component's sha256.

mod common;

use courier_plugins::defaults::{STANDARD_PRICE_BOOK, STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS};
use courier_plugins::{EngineConfig, PluginEngine, PluginError, PriceBook, Vehicle};

fn engine(dir: &std::path::Path) -> PluginEngine {
    PluginEngine::new(EngineConfig {
        cache_dir: Some(dir.to_owned()),
        max_instances: 16,
        ..EngineConfig::default()
    })
    .unwrap()
}

fn prices(book: &PriceBook) {
    let settings = common::prepare(book, STANDARD_PRICE_BOOK_EXAMPLE_SETTINGS);
    book.price(&common::request(Vehicle::Car, "m"), &settings)
        .unwrap()
        .unwrap();
}

#[test]
fn artifacts_are_written_once_and_reused() {
    let dir = tempfile::tempdir().unwrap();
    let book = PriceBook::load(&engine(dir.path()), STANDARD_PRICE_BOOK).unwrap();
    let artifact = dir.path().join(format!("{}.cwasm", book.sha256()));
    let written = std::fs::metadata(&artifact).unwrap().modified().unwrap();
    prices(&book);
    // A second engine (a restart) loads the artifact instead of compiling.
    let again = PriceBook::load(&engine(dir.path()), STANDARD_PRICE_BOOK).unwrap();
    prices(&again);
    assert_eq!(
        std::fs::metadata(&artifact).unwrap().modified().unwrap(),
        written
    );
    let files = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(files, 1, "stray temporary files");
}

#[test]
fn a_damaged_artifact_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let book = PriceBook::load(&engine(dir.path()), STANDARD_PRICE_BOOK).unwrap();
    let artifact = dir.path().join(format!("{}.cwasm", book.sha256()));
    drop(book);
    // Replace the file (a new inode, as any writer must: a loaded artifact
    // is memory-mapped, and truncating it in place would fault the process).
    let damaged = dir.path().join("damaged");
    std::fs::write(&damaged, b"garbage").unwrap();
    std::fs::rename(&damaged, &artifact).unwrap();
    let book = PriceBook::load(&engine(dir.path()), STANDARD_PRICE_BOOK).unwrap();
    prices(&book);
    assert!(std::fs::metadata(&artifact).unwrap().len() > 1000);
}

#[test]
fn invalid_components_do_not_compile() {
    let dir = tempfile::tempdir().unwrap();
    let err = PriceBook::load(&engine(dir.path()), b"\0asm\x0d\0\x01\0\xff\xff").unwrap_err();
    assert!(matches!(err, PluginError::Compile(_)), "{err}");
}

#[test]
fn a_component_of_another_world_is_incompatible() {
    let err = PriceBook::load(
        &common::engine(),
        courier_plugins::defaults::STANDARD_SHAPER,
    )
    .unwrap_err();
    assert!(matches!(err, PluginError::Incompatible { .. }), "{err}");
}
