//! Prepared networks: written once, mapped on later loads, never trusted when damaged or made
//! from another extract.

mod common;

use std::path::Path;

use common::osm_dir;
use courier_geo::{
    ExtractSource, LatLon, LoadOptions, Origin, RoadNetwork, RouteError, Vehicle, demo_city_pbf,
    grid_city_pbf, no_progress,
};

/// Points spread over the network's area, for comparing two networks' answers.
fn sample_points(network: &RoadNetwork, count: usize) -> Vec<LatLon> {
    let vertices = network.network_area().vertices();
    let lat = |f: fn(f64, f64) -> f64| vertices.iter().map(|v| v.lat).reduce(f).unwrap();
    let lon = |f: fn(f64, f64) -> f64| vertices.iter().map(|v| v.lon).reduce(f).unwrap();
    let (south, north, west, east) = (lat(f64::min), lat(f64::max), lon(f64::min), lon(f64::max));
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut unit = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..count)
        .map(|_| {
            LatLon::new(
                south + (north - south) * unit(),
                west + (east - west) * unit(),
            )
        })
        .collect()
}

/// Every vehicle's routes between sample points, and the places around them, are identical.
fn assert_same_answers(fresh: &RoadNetwork, loaded: &RoadNetwork, name: &str) {
    assert_eq!(fresh.vehicles(), loaded.vehicles());
    // Sizes agree; timings belong to each build.
    let shape = |network: &RoadNetwork| {
        let stats = network.stats();
        let profiles: Vec<_> = stats
            .profiles
            .iter()
            .map(|p| {
                let sizes = (p.nodes, p.arcs, p.connected_nodes, p.hierarchy_arcs);
                (p.vehicle, sizes, p.barriers, p.restricted_junctions)
            })
            .collect();
        let sizes = (stats.junctions, stats.road_edges, stats.shape_points);
        (sizes, stats.places, profiles)
    };
    assert_eq!(shape(fresh), shape(loaded), "{name}");
    assert_eq!(fresh.network_area(), loaded.network_area());
    let points = sample_points(fresh, 200);
    let mut routed = 0;
    for vehicle in fresh.vehicles() {
        for pair in points.chunks(2) {
            let (a, b) = (
                fresh.route(vehicle, pair[0], pair[1]),
                loaded.route(vehicle, pair[0], pair[1]),
            );
            routed += usize::from(a.is_ok());
            assert_eq!(a, b, "{name} {vehicle} {pair:?}");
        }
    }
    assert!(routed >= 20, "{name}: only {routed} routes");
    for point in &points {
        assert_eq!(
            fresh.places().reverse(*point),
            loaded.places().reverse(*point)
        );
    }
    for query in ["street", "1", "road"] {
        assert_eq!(
            fresh.places().search(query, None, 5),
            loaded.places().search(query, None, 5)
        );
    }
}

#[test]
fn every_shared_extract_loads_back_with_the_same_routes() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["liechtenstein", "baltimore", "monaco", "andorra"] {
        let extract = osm_dir().join(format!("{name}.osm.pbf"));
        if !extract.exists() {
            eprintln!("note: skipping, {} not found", extract.display());
            return;
        }
        let prepared = dir.path().join(format!("{name}.network"));
        let options = LoadOptions::default();
        let source = ExtractSource::File(&extract);
        let (fresh, report) =
            RoadNetwork::prepare(source, &options, &prepared, &no_progress).unwrap();
        assert!(report.file_bytes > 0);
        let (loaded, report) = RoadNetwork::load_or_prepare(source, &options, &prepared).unwrap();
        assert_eq!(report.origin, Origin::Loaded, "{name}");
        assert_eq!(
            loaded.owned_array_bytes(),
            0,
            "{name}: arrays are mapped, not copied"
        );
        assert_eq!(
            fresh.stats(),
            loaded.stats(),
            "{name}: the build's own figures are kept"
        );
        assert_same_answers(&fresh, &loaded, name);
        eprintln!(
            "{name}: {} bytes, mapped and checked in {:?} (hash {:?})",
            report.file_bytes, report.load_time, report.hash_time
        );
    }
}

fn load(bytes: &[u8], vehicles: &[Vehicle], prepared: &Path) -> (RoadNetwork, Origin) {
    let options = LoadOptions {
        vehicles: vehicles.to_vec(),
    };
    let (network, report) =
        RoadNetwork::load_or_prepare(ExtractSource::Bytes(bytes), &options, prepared).unwrap();
    (network, report.origin)
}

fn rebuilt_because(origin: &Origin, words: &str) -> bool {
    matches!(origin, Origin::Prepared { reason, written: true } if reason.contains(words))
}

#[test]
fn damaged_or_truncated_files_are_rebuilt_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let prepared = dir.path().join("demo.network");
    let demo = demo_city_pbf();
    let (first, origin) = load(&demo, &[Vehicle::Car], &prepared);
    assert!(rebuilt_because(&origin, "not prepared yet"), "{origin:?}");
    let (_, origin) = load(&demo, &[Vehicle::Car], &prepared);
    assert_eq!(origin, Origin::Loaded);
    let good = std::fs::read(&prepared).unwrap();

    // One flipped bit anywhere past the table of contents: in the middle, and near the end.
    for at in [good.len() / 2, good.len() - 100] {
        let mut damaged = good.clone();
        damaged[at] ^= 0x10;
        std::fs::write(&prepared, &damaged).unwrap();
        let (network, origin) = load(&demo, &[Vehicle::Car], &prepared);
        assert!(rebuilt_because(&origin, "damaged"), "{at}: {origin:?}");
        assert_same_answers(&first, &network, "demo");
        let (_, origin) = load(&demo, &[Vehicle::Car], &prepared);
        assert_eq!(origin, Origin::Loaded, "rewritten whole");
    }
    for keep in [good.len() - 1, good.len() / 3, 10] {
        std::fs::write(&prepared, &good[..keep]).unwrap();
        let (_, origin) = load(&demo, &[Vehicle::Car], &prepared);
        assert!(rebuilt_because(&origin, "damaged"), "{keep}: {origin:?}");
    }
}

#[test]
fn a_changed_extract_or_vehicle_set_is_prepared_again() {
    let dir = tempfile::tempdir().unwrap();
    let prepared = dir.path().join("market.network");
    let demo = demo_city_pbf();
    let (demo_network, _) = load(&demo, &[Vehicle::Car], &prepared);
    let (_, origin) = load(&demo, &[Vehicle::Car], &prepared);
    assert_eq!(origin, Origin::Loaded);

    // The operator swaps in another extract under the same market.
    let grid = grid_city_pbf(30);
    let (network, origin) = load(&grid, &[Vehicle::Car], &prepared);
    assert!(rebuilt_because(&origin, "another extract"), "{origin:?}");
    assert_ne!(network.stats().junctions, demo_network.stats().junctions);
    let (_, origin) = load(&grid, &[Vehicle::Car], &prepared);
    assert_eq!(origin, Origin::Loaded);

    // And then offers bicycles too.
    let (network, origin) = load(&grid, &[Vehicle::Bicycle, Vehicle::Car], &prepared);
    assert!(rebuilt_because(&origin, "another extract"), "{origin:?}");
    assert_eq!(network.vehicles(), [Vehicle::Bicycle, Vehicle::Car]);
    assert!(matches!(
        network.route(Vehicle::Van, LatLon::new(0.0, 0.0), LatLon::new(0.0, 0.0)),
        Err(RouteError::VehicleNotPrepared(Vehicle::Van))
    ));
}

#[test]
fn an_unwritable_folder_still_serves_the_built_network() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the folder should be: nothing can be written below it.
    let blocker = dir.path().join("blocker");
    std::fs::write(&blocker, b"").unwrap();
    let prepared = blocker.join("demo.network");
    let (network, origin) = load(&demo_city_pbf(), &[Vehicle::Car], &prepared);
    assert!(
        matches!(origin, Origin::Prepared { written: false, .. }),
        "{origin:?}"
    );
    assert!(!network.vehicles().is_empty());
}
