//! The host's crates keep their layers one-way: no two modules import each other.

use std::path::Path;

use courier_layers::ModuleGraph;

/// The mutual pairs of the crate in `crate_folder`, module by module and top-level module by
/// top-level module.
fn pairs_of(crate_folder: &str) -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(crate_folder)
        .join("src/lib.rs");
    let graph = ModuleGraph::read(&root).unwrap_or_else(|e| panic!("{e}"));
    assert!(graph.modules().count() > 1, "{crate_folder} was read");
    let mut pairs = graph.mutual_pairs();
    pairs.extend(graph.top_level_pairs());
    pairs
}

#[test]
fn no_two_modules_of_the_service_import_each_other() {
    assert_eq!(pairs_of("courier"), Vec::<(String, String)>::new());
}

#[test]
fn no_two_modules_of_the_http_layer_import_each_other() {
    assert_eq!(pairs_of("api"), Vec::<(String, String)>::new());
}

#[test]
fn no_two_modules_of_the_features_import_each_other() {
    assert_eq!(pairs_of("core"), Vec::<(String, String)>::new());
}

#[test]
fn no_two_modules_of_the_domain_import_each_other() {
    assert_eq!(pairs_of("domain"), Vec::<(String, String)>::new());
}

#[test]
fn no_two_modules_of_the_store_import_each_other() {
    assert_eq!(pairs_of("store"), Vec::<(String, String)>::new());
}
