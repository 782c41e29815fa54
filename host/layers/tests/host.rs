//! The host's crates keep their layers one-way: no modules import each other in a loop of any
//! length.

use std::path::Path;

use courier_layers::ModuleGraph;

/// The loops of the crate in `crate_folder`, module by module and top-level module by top-level
/// module.
fn loops_of(crate_folder: &str) -> Vec<Vec<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(crate_folder)
        .join("src/lib.rs");
    let graph = ModuleGraph::read(&root).unwrap_or_else(|e| panic!("{e}"));
    assert!(graph.modules().count() > 1, "{crate_folder} was read");
    let mut loops = graph.loops();
    loops.extend(graph.top_level_loops());
    loops
}

#[test]
fn no_loop_among_the_modules_of_the_service() {
    assert_eq!(loops_of("courier"), Vec::<Vec<String>>::new());
}

#[test]
fn no_loop_among_the_modules_of_the_http_layer() {
    assert_eq!(loops_of("api"), Vec::<Vec<String>>::new());
}

#[test]
fn no_loop_among_the_modules_of_the_features() {
    assert_eq!(loops_of("core"), Vec::<Vec<String>>::new());
}

#[test]
fn no_loop_among_the_modules_of_the_domain() {
    assert_eq!(loops_of("domain"), Vec::<Vec<String>>::new());
}

#[test]
fn no_loop_among_the_modules_of_the_store() {
    assert_eq!(loops_of("store"), Vec::<Vec<String>>::new());
}

#[test]
fn no_loop_among_the_modules_of_the_road_network() {
    assert_eq!(loops_of("geo"), Vec::<Vec<String>>::new());
}

#[test]
fn no_loop_among_the_modules_of_the_plugin_engine() {
    assert_eq!(loops_of("plugins"), Vec::<Vec<String>>::new());
}
