use std::sync::OnceLock;

use super::*;
use crate::network::RoadNetwork;
use crate::route::Route;
use crate::vehicle::Vehicle;

fn demo() -> &'static RoadNetwork {
    static NETWORK: OnceLock<RoadNetwork> = OnceLock::new();
    NETWORK.get_or_init(|| RoadNetwork::from_pbf_bytes(&demo_city_pbf()).expect("demo city loads"))
}

/// Junction of avenue `column` and street `row`.
fn junction(column: usize, row: usize) -> LatLon {
    at(column as f64, row as f64)
}

fn block_east() -> f64 {
    junction(0, 0).distance_metres(junction(1, 0))
}

fn block_north() -> f64 {
    junction(0, 0).distance_metres(junction(0, 1))
}

fn route(vehicle: Vehicle, from: LatLon, to: LatLon) -> Route {
    demo().route(vehicle, from, to).expect("demo city routes")
}

fn passes(route: &Route, point: LatLon) -> bool {
    route.shape.iter().any(|p| p.distance_metres(point) < 1.0)
}

#[test]
fn generation_is_deterministic_and_loads() {
    assert_eq!(demo_city_pbf(), demo_city_pbf());
    let stats = demo().stats();
    // 21 × 21 grid junctions plus bypass ends, links and bridge ends.
    assert!((441..=470).contains(&stats.junctions), "{stats:?}");
    assert_eq!(stats.profiles.len(), 5);
    let area = demo().network_area();
    assert!(area.contains(junction(10, 10)));
    // The documented bounding box holds every road.
    for v in area.vertices() {
        assert!((19.9998..=20.0202).contains(&v.lat) && (49.997..=50.021).contains(&v.lon));
    }
    assert!(!area.contains(LatLon::new(20.05, 50.01)));
}

#[test]
fn cars_go_around_the_pedestrian_zone_bicycles_cross_it() {
    let (west, east) = (junction(6, 7), junction(8, 7));
    let bicycle = route(Vehicle::Bicycle, west, east);
    assert!((f64::from(bicycle.distance_metres) - 2.0 * block_east()).abs() < 2.0);
    assert!(passes(&bicycle, junction(7, 7)));
    for vehicle in [Vehicle::Motorcycle, Vehicle::Car, Vehicle::Van] {
        let drive = route(vehicle, west, east);
        let around = 2.0 * block_east() + 2.0 * block_north();
        assert!(
            f64::from(drive.distance_metres) >= around - 2.0,
            "{vehicle}: {drive:?}"
        );
        assert!(!passes(&drive, junction(7, 7)));
    }
}

#[test]
fn bicycles_stay_off_the_bypass() {
    let (south_west, north_west) = (junction(0, 0), junction(0, 20));
    let on_bypass = |r: &Route| r.shape.iter().any(|p| p.lon < junction(0, 0).lon - 0.0015);
    let car = route(Vehicle::Car, south_west, north_west);
    assert!(
        on_bypass(&car),
        "the bypass is the fastest way north: {car:?}"
    );
    for vehicle in [Vehicle::Bicycle, Vehicle::ElectricBicycle] {
        let ride = route(vehicle, south_west, north_west);
        assert!(!on_bypass(&ride), "{vehicle}");
        assert!(ride.duration_seconds > car.duration_seconds);
    }
    // A bicycle starting on the bypass is snapped to the nearest avenue instead.
    let ride = route(Vehicle::Bicycle, at(-2.0, 4.0), junction(5, 4));
    assert!(
        ride.shape[0].lon >= junction(0, 0).lon - 1e-9,
        "{:?}",
        ride.shape[0]
    );
}

#[test]
fn one_way_streets_are_respected() {
    // "4th Street" (row 3) is westbound only, for bicycles too.
    let westbound = route(Vehicle::Car, junction(6, 3), junction(5, 3));
    assert!((f64::from(westbound.distance_metres) - block_east()).abs() < 2.0);
    for vehicle in [Vehicle::Car, Vehicle::Bicycle] {
        let eastbound = route(vehicle, junction(5, 3), junction(6, 3));
        assert!(
            f64::from(eastbound.distance_metres) > block_east() + 2.0 * block_north() - 2.0,
            "{vehicle}: {eastbound:?}"
        );
    }
    // "3rd Street" (row 2) is eastbound with a bicycle contraflow.
    let car = route(Vehicle::Car, junction(6, 2), junction(5, 2));
    assert!(f64::from(car.distance_metres) > block_east() + 2.0 * block_north() - 2.0);
    let bicycle = route(Vehicle::Bicycle, junction(6, 2), junction(5, 2));
    assert!((f64::from(bicycle.distance_metres) - block_east()).abs() < 2.0);
    // "Cedar Avenue" (column 2) is northbound.
    let north = route(Vehicle::Van, junction(2, 5), junction(2, 6));
    assert!((f64::from(north.distance_metres) - block_north()).abs() < 2.0);
    let south = route(Vehicle::Van, junction(2, 6), junction(2, 5));
    assert!(f64::from(south.distance_metres) > 3.0 * block_north());
}

#[test]
fn crossing_the_river_takes_a_bridge() {
    // Directly across the river from "Acacia Avenue"; the nearest bridge is on column 3.
    let (south_bank, north_bank) = (junction(0, 10), junction(0, 11));
    for vehicle in Vehicle::ALL {
        let crossing = route(vehicle, south_bank, north_bank);
        assert!(
            f64::from(crossing.distance_metres) >= 6.0 * block_east() + block_north() - 2.0,
            "{vehicle}: {crossing:?}"
        );
        let bridges = [3, 10, 17].map(|c| (junction(c, 10), junction(c, 11)));
        let bypass_bridge = (at(-2.0, 10.0), at(-2.0, 11.0));
        let used_bridge = bridges
            .iter()
            .chain([&bypass_bridge])
            .any(|(s, n)| passes(&crossing, *s) && passes(&crossing, *n));
        assert!(used_bridge, "{vehicle}: {crossing:?}");
        if vehicle.is_bicycle() {
            assert!(passes(&crossing, junction(3, 10)), "{vehicle}");
        }
    }
}

#[test]
fn hierarchy_matches_dijkstra_across_the_city() {
    let network = demo();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % 10_000) as f64 / 10_000.0
    };
    for vehicle in Vehicle::ALL {
        for _ in 0..60 {
            let from = at(next() * 22.0 - 2.0, next() * 20.0);
            let to = at(next() * 22.0 - 2.0, next() * 20.0);
            let fast = network.route(vehicle, from, to).unwrap();
            let reference = network.route_reference(vehicle, from, to).unwrap();
            // The grid has many equally fast paths, so only the totals must agree.
            assert_eq!(
                (fast.distance_metres, fast.duration_seconds),
                (reference.distance_metres, reference.duration_seconds),
                "{vehicle} {from:?} -> {to:?}"
            );
        }
    }
}

#[test]
fn grid_cities_scale_the_same_layout() {
    let small = RoadNetwork::from_pbf_bytes(&grid_city_pbf(30)).unwrap();
    let stats = small.stats();
    assert!((900..=1000).contains(&stats.junctions), "{stats:?}");
    assert!(
        small.places().search("D1001", None, 1).is_empty(),
        "no addresses"
    );
    let across = small
        .route(Vehicle::Car, junction(0, 0), junction(29, 29))
        .unwrap();
    assert!(across.distance_metres > 6_000);
}

#[test]
fn generated_addresses_and_places_are_searchable() {
    let places = demo().places();
    let hits = places.search("41 4th Street", None, 3);
    assert_eq!(hits[0].name, "41 4th Street, Demo City");
    assert_eq!(hits[0].postcode.as_deref(), Some("D1001"));
    let house = LatLon::new(hits[0].latitude, hits[0].longitude);
    assert!(house.distance_metres(LatLon::new(20.00285, 50.0043)) < 0.5);
    assert_eq!(
        places.reverse(house).unwrap().name,
        "41 4th Street, Demo City"
    );

    // A building address (second house on the north side of its block).
    let hits = places.search("104 17th st", None, 1);
    assert_eq!(hits[0].name, "104 17th Street, Demo City");
    assert_eq!(hits[0].postcode.as_deref(), Some("D2002"));

    assert_eq!(
        places.search("Market Walk", None, 1)[0].name,
        "Market Walk, Demo City"
    );
    assert_eq!(
        places.search("riverside cafe", None, 1)[0].name,
        "Riverside Café, Demo City"
    );
    assert_eq!(
        places.search("Northbank", None, 1)[0].name,
        "Northbank, Demo City"
    );
    assert_eq!(places.search("D2001", None, 1)[0].name, "D2001 Demo City");
}
