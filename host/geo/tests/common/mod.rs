//! Locating and loading the shared OpenStreetMap extracts (read-only, outside the repository).

use std::path::PathBuf;
use std::sync::OnceLock;

use courier_geo::RoadNetwork;

/// `COURIER_OSM_DIR`, else `shared/data/osm` next to the repository.
pub fn osm_dir() -> PathBuf {
    std::env::var_os("COURIER_OSM_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/osm"),
        PathBuf::from,
    )
}

/// Loads `<name>.osm.pbf` once per test binary; `None` (with a note) when the data is absent.
#[allow(dead_code)] // not every test binary loads extracts this way
pub fn extract(name: &str) -> Option<&'static RoadNetwork> {
    static LIECHTENSTEIN: OnceLock<Option<RoadNetwork>> = OnceLock::new();
    static BALTIMORE: OnceLock<Option<RoadNetwork>> = OnceLock::new();
    static MONACO: OnceLock<Option<RoadNetwork>> = OnceLock::new();
    static ANDORRA: OnceLock<Option<RoadNetwork>> = OnceLock::new();
    let cell = match name {
        "liechtenstein" => &LIECHTENSTEIN,
        "baltimore" => &BALTIMORE,
        "monaco" => &MONACO,
        "andorra" => &ANDORRA,
        other => panic!("no such test extract: {other}"),
    };
    cell.get_or_init(|| {
        let path = osm_dir().join(format!("{name}.osm.pbf"));
        if !path.exists() {
            eprintln!(
                "note: skipping, {} not found (set COURIER_OSM_DIR)",
                path.display()
            );
            return None;
        }
        Some(RoadNetwork::from_pbf_file(&path).expect("extract loads"))
    })
    .as_ref()
}
