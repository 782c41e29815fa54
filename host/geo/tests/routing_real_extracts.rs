//! Routing on real OpenStreetMap extracts.

mod common;

use common::extract;
use courier_geo::{LatLon, RoadNetwork, RouteError, Vehicle};

/// Random points inside the network's bounding box, usable as route endpoints for `vehicle`.
fn random_pairs(
    network: &RoadNetwork,
    vehicle: Vehicle,
    wanted: usize,
    seed: u64,
) -> Vec<(LatLon, LatLon)> {
    let vertices = network.network_area().vertices();
    let lat = |f: fn(f64, f64) -> f64| vertices.iter().map(|v| v.lat).reduce(f).unwrap();
    let lon = |f: fn(f64, f64) -> f64| vertices.iter().map(|v| v.lon).reduce(f).unwrap();
    let (south, north, west, east) = (lat(f64::min), lat(f64::max), lon(f64::min), lon(f64::max));
    let mut random = Xorshift(seed);
    let mut point = || {
        LatLon::new(
            south + (north - south) * random.next_unit(),
            west + (east - west) * random.next_unit(),
        )
    };
    let mut pairs = Vec::new();
    for _ in 0..wanted * 50 {
        if pairs.len() == wanted {
            break;
        }
        let (from, to) = (point(), point());
        match network.route(vehicle, from, to) {
            Err(RouteError::TooFarFromRoad { .. }) => continue,
            _ => pairs.push((from, to)),
        }
    }
    assert_eq!(
        pairs.len(),
        wanted,
        "not enough routable points for {vehicle}"
    );
    pairs
}

#[test]
fn all_extracts_load_with_every_vehicle() {
    let towns = [
        ("liechtenstein", LatLon::new(47.1410, 9.5215)),
        ("baltimore", LatLon::new(39.2904, -76.6122)),
        ("monaco", LatLon::new(43.7384, 7.4246)),
        ("andorra", LatLon::new(42.5063, 1.5218)),
    ];
    for (name, town) in towns {
        let Some(network) = extract(name) else { return };
        let stats = network.stats();
        assert_eq!(stats.profiles.len(), 5, "{name}");
        for profile in &stats.profiles {
            assert!(profile.connected_nodes > 100, "{name}: {profile:?}");
            assert!(
                profile.hierarchy_arcs >= profile.arcs / 2,
                "{name}: {profile:?}"
            );
        }
        assert!(network.network_area().contains(town), "{name}");
        assert!(!network.network_area().contains(LatLon::new(0.0, 0.0)));
        eprintln!("{name}: {stats:?}");
    }
}

#[test]
fn hierarchy_agrees_with_dijkstra_on_liechtenstein() {
    agrees_with_dijkstra("liechtenstein");
}

#[test]
fn hierarchy_agrees_with_dijkstra_on_baltimore() {
    agrees_with_dijkstra("baltimore");
}

/// The reference search checks every turn against the restrictions and barriers, so this also
/// verifies the junction copies the hierarchy routes over.
fn agrees_with_dijkstra(name: &str) {
    let Some(network) = extract(name) else {
        return;
    };
    for (seed, vehicle) in (1..).zip(Vehicle::ALL) {
        let mut agreeing_shapes = 0;
        let pairs = random_pairs(network, vehicle, 200, 0x9e37_79b9_7f4a_7c15 ^ seed);
        for &(from, to) in &pairs {
            let fast = network.route(vehicle, from, to).unwrap();
            let reference = network.route_reference(vehicle, from, to).unwrap();
            assert_eq!(
                (fast.distance_metres, fast.duration_seconds),
                (reference.distance_metres, reference.duration_seconds),
                "{vehicle} {from:?} -> {to:?}"
            );
            agreeing_shapes += usize::from(fast.shape == reference.shape);
        }
        // Real roads rarely tie exactly, so the paths themselves should almost always match.
        assert!(agreeing_shapes >= 190, "{vehicle}: {agreeing_shapes}/200");
    }
}

#[test]
fn vaduz_to_schaan_is_plausible() {
    let Some(network) = extract("liechtenstein") else {
        return;
    };
    let vaduz = LatLon::new(47.1395, 9.5220);
    let schaan = LatLon::new(47.1650, 9.5100);
    let straight = vaduz.distance_metres(schaan);
    for vehicle in Vehicle::ALL {
        let route = network.route(vehicle, vaduz, schaan).unwrap();
        let distance = f64::from(route.distance_metres);
        assert!(
            distance > straight && distance < 2.0 * straight,
            "{vehicle}: {distance} m vs {straight} m straight"
        );
        assert!(route.shape[0].distance_metres(vaduz) < 100.0, "{vehicle}");
        assert!(route.shape.last().unwrap().distance_metres(schaan) < 100.0);
        let shape_length: f64 = route
            .shape
            .windows(2)
            .map(|w| w[0].distance_metres(w[1]))
            .sum();
        assert!(
            (shape_length - distance).abs() <= 2.0,
            "the shape is the route"
        );
        let kmh = distance / f64::from(route.duration_seconds) * 3.6;
        let plausible = if vehicle <= Vehicle::ElectricBicycle {
            5.0..=21.0
        } else {
            15.0..=90.0
        };
        assert!(plausible.contains(&kmh), "{vehicle}: {kmh} km/h");
    }
}

#[test]
fn one_ways_make_monaco_routes_asymmetric() {
    let Some(network) = extract("monaco") else {
        return;
    };
    let pairs = random_pairs(network, Vehicle::Car, 40, 7);
    let asymmetric = pairs
        .iter()
        .filter(|(a, b)| {
            let there = network.route(Vehicle::Car, *a, *b).unwrap();
            let back = network.route(Vehicle::Car, *b, *a).unwrap();
            there.distance_metres.abs_diff(back.distance_metres) > 50
        })
        .count();
    assert!(asymmetric >= 10, "{asymmetric}/40 asymmetric car routes");
}

#[test]
fn andorra_mountain_road_to_soldeu() {
    let Some(network) = extract("andorra") else {
        return;
    };
    let andorra_la_vella = LatLon::new(42.5063, 1.5218);
    let soldeu = LatLon::new(42.5766, 1.6672);
    let car = network
        .route(Vehicle::Car, andorra_la_vella, soldeu)
        .unwrap();
    assert!((15_000..30_000).contains(&car.distance_metres), "{car:?}");
    assert!((900..3_600).contains(&car.duration_seconds), "{car:?}");
}

/// A small deterministic generator (xorshift) for reproducible random samples.
pub struct Xorshift(pub u64);

impl Xorshift {
    /// A uniform value in `[0, 1)`.
    pub fn next_unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}
