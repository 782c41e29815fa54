//! Routing behaviour on small hand-written extracts (cells of ~111 m north × ~109.5 m east).

use std::time::Duration;

use super::*;
use crate::graph::fixtures::ExtractBuilder;
use crate::route::Endpoint;

fn load(builder: ExtractBuilder) -> RoadNetwork {
    RoadNetwork::from_extract(
        &builder.build(),
        &LoadOptions::default(),
        Duration::ZERO,
        &no_progress,
    )
    .expect("fixture has roads")
}

fn at(x: f64, y: f64) -> LatLon {
    ExtractBuilder::at(x, y)
}

/// Length of one grid cell eastwards at 10°N, in metres.
fn cell_east() -> f64 {
    at(0.0, 0.0).distance_metres(at(1.0, 0.0))
}

fn cell_north() -> f64 {
    at(0.0, 0.0).distance_metres(at(0.0, 1.0))
}

const RESIDENTIAL: &[(&str, &str)] = &[("highway", "residential")];

/// A square block: south side 1-2-3 (tagged `south`), and a two-way detour 3-4-5-6-1 around
/// the north (nodes 4, 5, 6 at y = 1).
fn block(south: &[(&str, &str)]) -> ExtractBuilder {
    ExtractBuilder::default()
        .node(1, 0.0, 0.0)
        .node(2, 1.0, 0.0)
        .node(3, 2.0, 0.0)
        .node(4, 2.0, 1.0)
        .node(5, 1.0, 1.0)
        .node(6, 0.0, 1.0)
        .way(&[1, 2, 3], south)
        .way(&[3, 4, 5, 6, 1], RESIDENTIAL)
}

fn route(network: &RoadNetwork, vehicle: Vehicle, from: LatLon, to: LatLon) -> Route {
    let route = network.route(vehicle, from, to).expect("route exists");
    let reference = network
        .route_reference(vehicle, from, to)
        .expect("route exists");
    // These fixtures have a unique fastest path, so even the shapes must agree.
    assert_eq!(route, reference, "hierarchy and Dijkstra disagree");
    route
}

#[test]
fn straight_route_measures_distance_and_time() {
    let network = load(block(RESIDENTIAL));
    // From 10 m south of node 1's side to 10 m south of node 3's side of the south street.
    let from = at(0.2, -0.09);
    let to = at(1.8, 0.09);
    let car = route(&network, Vehicle::Car, from, to);
    let expected = 1.6 * cell_east();
    assert!(
        (f64::from(car.distance_metres) - expected).abs() <= 1.0,
        "{car:?}"
    );
    // Residential default: 25 km/h.
    let expected_seconds = expected / (25.0 / 3.6);
    assert!((f64::from(car.duration_seconds) - expected_seconds).abs() <= 1.0);
    // The shape starts and ends at the projections onto the street and passes node 2.
    assert!(car.shape[0].distance_metres(at(0.2, 0.0)) < 0.5);
    assert!(car.shape.last().unwrap().distance_metres(at(1.8, 0.0)) < 0.5);
    assert!(car.shape.contains(&at(1.0, 0.0)));
    assert_eq!(car.shape.len(), 3);
}

#[test]
fn slower_vehicles_take_longer_on_the_same_street() {
    let network = load(block(RESIDENTIAL));
    let (from, to) = (at(0.1, 0.0), at(1.9, 0.0));
    let seconds = |vehicle| route(&network, vehicle, from, to).duration_seconds;
    assert!(seconds(Vehicle::Bicycle) > seconds(Vehicle::ElectricBicycle));
    assert!(seconds(Vehicle::Van) > seconds(Vehicle::Car));
    assert_eq!(seconds(Vehicle::Car), seconds(Vehicle::Motorcycle));
}

#[test]
fn one_way_street_sends_cars_around_the_block_but_not_contraflow_bicycles() {
    let network = load(block(&[
        ("highway", "residential"),
        ("oneway", "yes"),
        ("oneway:bicycle", "no"),
    ]));
    let (east, west) = (at(1.9, 0.0), at(0.1, 0.0));
    let direct = 1.8 * cell_east();
    // With the flow everyone goes straight.
    let car_with_flow = route(&network, Vehicle::Car, west, east);
    assert!((f64::from(car_with_flow.distance_metres) - direct).abs() <= 1.0);
    // Against the flow the car drives around the north side.
    let car_against = route(&network, Vehicle::Car, east, west);
    let around = 0.2 * cell_east() + 2.0 * cell_north() + 2.0 * cell_east();
    assert!(
        (f64::from(car_against.distance_metres) - around).abs() <= 1.0,
        "{car_against:?}"
    );
    assert!(car_against.shape.contains(&at(1.0, 1.0)));
    let bicycle_against = route(&network, Vehicle::Bicycle, east, west);
    assert!((f64::from(bicycle_against.distance_metres) - direct).abs() <= 1.0);
}

#[test]
fn plain_one_way_binds_bicycles_too() {
    let network = load(block(&[("highway", "residential"), ("oneway", "-1")]));
    // Drawn west to east, oneway=-1: only westbound is allowed.
    let (east, west) = (at(1.9, 0.0), at(0.1, 0.0));
    let direct = 1.8 * cell_east();
    let westbound = route(&network, Vehicle::Bicycle, east, west);
    assert!((f64::from(westbound.distance_metres) - direct).abs() <= 1.0);
    let eastbound = route(&network, Vehicle::Bicycle, west, east);
    assert!(f64::from(eastbound.distance_metres) > direct + 2.0 * cell_north());
}

#[test]
fn pedestrian_zone_is_crossed_by_bicycles_only() {
    let network = load(block(&[("highway", "pedestrian"), ("bicycle", "yes")]));
    let (west, east) = (at(0.0, -0.05), at(2.0, -0.05));
    let direct = 2.0 * cell_east();
    for vehicle in [Vehicle::Bicycle, Vehicle::ElectricBicycle] {
        let ride = route(&network, vehicle, west, east);
        assert!(
            (f64::from(ride.distance_metres) - direct).abs() <= 1.0,
            "{vehicle}"
        );
    }
    for vehicle in [Vehicle::Motorcycle, Vehicle::Car, Vehicle::Van] {
        let drive = route(&network, vehicle, west, east);
        let around = 2.0 * cell_north() + 2.0 * cell_east();
        assert!(
            (f64::from(drive.distance_metres) - around).abs() <= 1.0,
            "{vehicle}: {drive:?}"
        );
        assert!(
            drive.shape.contains(&at(1.0, 1.0)),
            "{vehicle} drives around"
        );
    }
}

#[test]
fn footway_pushing_is_slow_so_bicycles_ride_around_when_it_pays() {
    // Pushing along the bent footway (~300 m at 5 km/h) loses to riding around the block
    // (~285 m at 15 km/h).
    let network = load(
        ExtractBuilder::default()
            .node(1, 0.0, 0.0)
            .node(2, 1.0, -0.9)
            .node(3, 2.0, 0.0)
            .node(4, 2.0, 0.3)
            .node(5, 0.0, 0.3)
            .way(&[1, 2, 3], &[("highway", "footway")])
            .way(&[3, 4, 5, 1], RESIDENTIAL),
    );
    let (west, east) = (at(0.0, 0.0), at(2.0, 0.0));
    let ride = route(&network, Vehicle::Bicycle, west, east);
    assert!(ride.shape.contains(&at(0.0, 0.3)) && ride.shape.contains(&at(2.0, 0.3)));
    // Pushing is still possible when it is the only way.
    let only_footway = load(
        ExtractBuilder::default()
            .node(1, 0.0, 0.0)
            .node(2, 2.0, 0.0)
            .way(&[1, 2], &[("highway", "footway")]),
    );
    let push = route(&only_footway, Vehicle::Bicycle, west, east);
    let expected_seconds = 2.0 * cell_east() / (5.0 / 3.6);
    assert!((f64::from(push.duration_seconds) - expected_seconds).abs() <= 1.0);
    assert!(matches!(
        only_footway.route(Vehicle::Car, west, east),
        Err(RouteError::TooFarFromRoad {
            endpoint: Endpoint::Origin,
            vehicle: Vehicle::Car,
            ..
        })
    ));
}

#[test]
fn motorroad_is_for_motor_vehicles() {
    // A fast motorroad straight east and a slow residential detour.
    let network = load(block(&[
        ("highway", "trunk"),
        ("motorroad", "yes"),
        ("maxspeed", "100"),
    ]));
    let (west, east) = (at(0.0, 0.0), at(2.0, 0.0));
    let car = route(&network, Vehicle::Car, west, east);
    assert!((f64::from(car.distance_metres) - 2.0 * cell_east()).abs() <= 1.0);
    assert!(car.duration_seconds <= 8, "{car:?}");
    let bicycle = route(&network, Vehicle::Bicycle, west, east);
    assert!(bicycle.shape.contains(&at(1.0, 1.0)), "{bicycle:?}");
}

#[test]
fn parallel_ways_use_the_faster_one_consistently() {
    let network = load(
        ExtractBuilder::default()
            .node(1, 0.0, 0.0)
            .node(2, 1.0, 0.5)
            .node(3, 2.0, 0.0)
            .node(4, 3.0, 0.0)
            .node(5, -1.0, 0.0)
            .way(&[5, 1], RESIDENTIAL)
            .way(&[1, 2, 3], &[("highway", "primary")])
            .way(&[1, 3], &[("highway", "living_street")])
            .way(&[3, 4], RESIDENTIAL),
    );
    let car = route(&network, Vehicle::Car, at(-0.5, 0.0), at(2.5, 0.0));
    assert!(
        car.shape.contains(&at(1.0, 0.5)),
        "the bent primary is faster"
    );
    let expected = cell_east() + 2.0 * at(0.0, 0.0).distance_metres(at(1.0, 0.5));
    assert!(
        (f64::from(car.distance_metres) - expected).abs() <= 1.0,
        "{car:?}"
    );
}

#[test]
fn endpoints_on_the_same_edge() {
    let network = load(block(&[("highway", "residential"), ("oneway", "yes")]));
    let (a, b) = (at(0.5, 0.0), at(1.5, 0.0));
    let forward = route(&network, Vehicle::Car, a, b);
    assert!((f64::from(forward.distance_metres) - cell_east()).abs() <= 1.0);
    assert_eq!(forward.shape.len(), 3, "origin, node 2, destination");
    // Against the one-way the car loops around the block.
    let backward = route(&network, Vehicle::Car, b, a);
    let around = 0.5 * cell_east() + 2.0 * cell_north() + 2.0 * cell_east() + 0.5 * cell_east();
    assert!(
        (f64::from(backward.distance_metres) - around).abs() <= 1.0,
        "{backward:?}"
    );
    // Identical endpoints give an empty route.
    let stay = route(&network, Vehicle::Car, a, a);
    assert_eq!((stay.distance_metres, stay.duration_seconds), (0, 0));
    assert_eq!(stay.shape.len(), 2, "still a line");
}

#[test]
fn snapping_limits_and_invalid_input() {
    let network = load(block(RESIDENTIAL));
    let road = at(1.0, 0.0);
    let far = at(1.0, -6.0); // ~670 m south
    let near_enough = at(1.0, -4.0); // ~445 m south
    assert_eq!(
        network.route(Vehicle::Car, far, road),
        Err(RouteError::TooFarFromRoad {
            endpoint: Endpoint::Origin,
            vehicle: Vehicle::Car,
            max_metres: 500
        })
    );
    assert!(matches!(
        network.route(Vehicle::Car, road, far),
        Err(RouteError::TooFarFromRoad {
            endpoint: Endpoint::Destination,
            ..
        })
    ));
    let snapped = route(&network, Vehicle::Car, near_enough, road);
    assert!(snapped.shape[0].distance_metres(road) < 0.5);
    let invalid = LatLon::new(f64::NAN, 10.0);
    assert!(matches!(
        network.route(Vehicle::Car, invalid, road),
        Err(RouteError::InvalidCoordinate {
            endpoint: Endpoint::Origin,
            ..
        })
    ));
}

#[test]
fn isolated_fragments_are_not_snap_targets() {
    // A lone one-way stub near the origin cannot be left, so snapping skips it.
    let network = load(
        block(RESIDENTIAL)
            .node(7, 0.0, -1.0)
            .node(8, 1.0, -1.0)
            .way(&[7, 8], &[("highway", "service"), ("oneway", "yes")]),
    );
    let near_stub = at(0.5, -0.9);
    let car = route(&network, Vehicle::Car, near_stub, at(2.0, 1.0));
    assert!(car.shape[0].distance_metres(at(0.5, 0.0)) < 0.5, "{car:?}");
}

#[test]
fn only_requested_vehicles_are_prepared() {
    let extract = block(RESIDENTIAL).build();
    let options = LoadOptions {
        vehicles: vec![Vehicle::Van, Vehicle::Bicycle, Vehicle::Van],
    };
    let network =
        RoadNetwork::from_extract(&extract, &options, Duration::ZERO, &no_progress).unwrap();
    assert_eq!(network.vehicles(), [Vehicle::Bicycle, Vehicle::Van]);
    assert_eq!(
        network.route(Vehicle::Car, at(0.0, 0.0), at(1.0, 0.0)),
        Err(RouteError::VehicleNotPrepared(Vehicle::Car))
    );
    let stats = network.stats();
    assert_eq!(stats.profiles.len(), 2);
    assert_eq!(stats.junctions, 2, "nodes 1 and 3; the rest are bends");
}

#[test]
fn extracts_without_roads_are_rejected() {
    let extract = ExtractBuilder::default()
        .node(1, 0.0, 0.0)
        .node(2, 1.0, 0.0)
        .way(&[1, 2], &[("highway", "steps")])
        .build();
    assert!(matches!(
        RoadNetwork::from_extract(
            &extract,
            &LoadOptions::default(),
            Duration::ZERO,
            &no_progress
        ),
        Err(LoadError::NoRoads)
    ));
}

#[test]
fn network_area_covers_the_roads() {
    let network = load(block(RESIDENTIAL));
    let area = network.network_area();
    assert!(area.contains(at(1.0, 0.5)));
    assert!(!area.contains(at(1.0, 1.5)));
    assert!(!area.contains(at(-0.5, 0.5)));
}

#[test]
fn identical_vehicles_share_and_similar_ones_reuse_the_contraction_order() {
    // A cycleway gives bicycles roads that motor vehicles lack.
    let network = load(
        block(RESIDENTIAL)
            .node(9, 1.0, -1.0)
            .way(&[2, 9], &[("highway", "cycleway")]),
    );
    let preparations: Vec<(Vehicle, Preparation)> = network
        .stats()
        .profiles
        .iter()
        .map(|p| (p.vehicle, p.preparation))
        .collect();
    assert_eq!(
        preparations,
        [
            (Vehicle::Bicycle, Preparation::Contracted),
            (
                Vehicle::ElectricBicycle,
                Preparation::OrderOf(Vehicle::Bicycle)
            ),
            (Vehicle::Motorcycle, Preparation::Contracted),
            (Vehicle::Car, Preparation::SharedWith(Vehicle::Motorcycle)),
            (Vehicle::Van, Preparation::OrderOf(Vehicle::Motorcycle)),
        ]
    );
    // A car-only restriction separates car and motorcycle.
    let network = load(block(&[("highway", "residential"), ("motorcar", "no")]));
    let car = network.stats().profiles[3].clone();
    assert_eq!(car.preparation, Preparation::Contracted);
}

/// A 3 × 3 grid of junctions (id = 3y + x + 1) with a ring road around the edge and four arms
/// meeting at the centre (5): ways 1 south arm 2-5, 2 north arm 5-8, 3 west arm 4-5, 4 east
/// arm 5-6, 5 the ring.
fn crossroads() -> ExtractBuilder {
    let mut builder = ExtractBuilder::default();
    for y in 0..3 {
        for x in 0..3 {
            builder = builder.node(3 * y + x + 1, x as f64, y as f64);
        }
    }
    builder
        .way(&[2, 5], RESIDENTIAL)
        .way(&[5, 8], RESIDENTIAL)
        .way(&[4, 5], RESIDENTIAL)
        .way(&[5, 6], RESIDENTIAL)
        .way(&[1, 2, 3, 6, 9, 8, 7, 4, 1], RESIDENTIAL)
}

const VIA_CENTRE: (i64, bool) = (5, false);

fn cells(route: &Route) -> f64 {
    f64::from(route.distance_metres) / cell_north()
}

#[test]
fn no_left_turn_sends_bound_vehicles_around_and_spares_the_excepted() {
    let network = load(crossroads().restriction(
        &[("restriction", "no_left_turn"), ("except", "bicycle")],
        1,
        VIA_CENTRE,
        3,
    ));
    // Northbound on the south arm, to the west arm: a left turn at the centre.
    let (from, to) = (at(1.0, 0.5), at(0.5, 1.0));
    for vehicle in [Vehicle::Motorcycle, Vehicle::Car, Vehicle::Van] {
        // Back to the ring, west and north: 0.5 + 1 + 1 + 0.5 cells.
        let around = route(&network, vehicle, from, to);
        assert!((cells(&around) - 3.0).abs() < 0.05, "{vehicle}: {around:?}");
    }
    for vehicle in [Vehicle::Bicycle, Vehicle::ElectricBicycle] {
        let turn = route(&network, vehicle, from, to);
        assert!((cells(&turn) - 1.0).abs() < 0.05, "{vehicle}: {turn:?}");
    }
    // The other turns at the centre stay open.
    let right = route(&network, Vehicle::Car, from, at(1.5, 1.0));
    assert!((cells(&right) - 1.0).abs() < 0.05, "{right:?}");
    let stats = network.stats();
    assert_eq!(stats.profiles[3].restricted_junctions, 1);
    assert_eq!(stats.profiles[0].restricted_junctions, 0);
}

#[test]
fn only_straight_on_binds_the_named_vehicles() {
    let network = load(crossroads().restriction(
        &[("restriction:motorcar", "only_straight_on")],
        1,
        VIA_CENTRE,
        2,
    ));
    let (from, to) = (at(1.0, 0.5), at(1.5, 1.0));
    for vehicle in [Vehicle::Car, Vehicle::Van] {
        // No right turn: back to the ring, east and north, 0.5 + 1 + 1 + 0.5 cells.
        let around = route(&network, vehicle, from, to);
        assert!((cells(&around) - 3.0).abs() < 0.05, "{vehicle}: {around:?}");
        let straight = route(&network, vehicle, from, at(1.0, 1.5));
        assert!((cells(&straight) - 1.0).abs() < 0.05, "{vehicle}");
    }
    for vehicle in [Vehicle::Bicycle, Vehicle::Motorcycle] {
        let turn = route(&network, vehicle, from, to);
        assert!((cells(&turn) - 1.0).abs() < 0.05, "{vehicle}");
    }
    // Arriving from elsewhere, the turn is free.
    let from_west = route(&network, Vehicle::Car, at(0.5, 1.0), at(1.5, 1.0));
    assert!((cells(&from_west) - 1.0).abs() < 0.05);
}

#[test]
fn restrictions_that_cannot_apply_are_counted_not_guessed() {
    let network = load(
        crossroads()
            // Via a way: not modelled.
            .restriction(&[("restriction", "no_left_turn")], 1, (2, true), 3)
            // The south arm and the east part of the ring do not meet at the centre.
            .restriction(&[("restriction", "no_left_turn")], 1, (3, false), 4)
            // Binds no vehicle.
            .restriction(&[("restriction:hgv", "no_left_turn")], 1, VIA_CENTRE, 3),
    );
    let stats = network.stats();
    assert_eq!(
        (stats.restrictions_via_way, stats.restrictions_unresolved),
        (1, 1)
    );
    assert!(stats.profiles.iter().all(|p| p.restricted_junctions == 0));
    let turn = route(&network, Vehicle::Van, at(1.0, 0.5), at(0.5, 1.0));
    assert!((cells(&turn) - 1.0).abs() < 0.05);
}

#[test]
fn u_turn_restrictions_on_one_way_pair_an_edge_with_itself() {
    // The north-south street 2-5-8 drawn as one way through the centre.
    let extract = ExtractBuilder::default()
        .node(2, 1.0, 0.0)
        .node(5, 1.0, 1.0)
        .node(8, 1.0, 2.0)
        .node(6, 2.0, 1.0)
        .way(&[2, 5, 8], RESIDENTIAL)
        .way(&[5, 6], RESIDENTIAL)
        .restriction(&[("restriction", "no_u_turn")], 1, VIA_CENTRE, 1)
        .restriction(&[("restriction", "only_straight_on")], 1, VIA_CENTRE, 1)
        .build();
    let graph = RoadGraph::build(&extract, &Vehicle::ALL);
    let [u_turn, straight] = &graph.restrictions[..] else {
        panic!("{:?}", graph.restrictions)
    };
    assert!(u_turn.turns.iter().all(|(a, b)| a == b));
    assert_eq!(u_turn.turns.len(), 2);
    assert!(straight.turns.iter().all(|(a, b)| a != b));
    assert_eq!(straight.turns.len(), 2);
}

/// A street 1-2-3 with `barrier` at node 2 and a two-way detour 3-4-5-6-1 around the north.
fn barrier_street(barrier: &[(&str, &str)]) -> ExtractBuilder {
    ExtractBuilder::default()
        .node(1, 0.0, 0.0)
        .barrier(2, 1.0, 0.0, barrier)
        .node(3, 2.0, 0.0)
        .node(4, 2.0, 1.0)
        .node(5, 1.0, 1.0)
        .node(6, 0.0, 1.0)
        .way(&[1, 2, 3], RESIDENTIAL)
        .way(&[3, 4, 5, 6, 1], RESIDENTIAL)
}

#[test]
fn bollards_stop_motor_vehicles_not_bicycles() {
    let network = load(barrier_street(&[("barrier", "bollard")]));
    let (west, east) = (at(0.5, 0.0), at(1.5, 0.0));
    for vehicle in [Vehicle::Motorcycle, Vehicle::Car, Vehicle::Van] {
        // 0.5 west, 1 north, 2 east, 1 south, 0.5 west.
        let around = route(&network, vehicle, west, east);
        assert!((cells(&around) - 5.0).abs() < 0.1, "{vehicle}: {around:?}");
        // Up to the bollard from either side is still fine.
        let to_bollard = route(&network, vehicle, west, at(0.9, 0.0));
        assert!((cells(&to_bollard) - 0.4).abs() < 0.05, "{vehicle}");
    }
    for vehicle in [Vehicle::Bicycle, Vehicle::ElectricBicycle] {
        let through = route(&network, vehicle, west, east);
        assert!((cells(&through) - 1.0).abs() < 0.05, "{vehicle}");
    }
    assert_eq!(network.stats().profiles[3].barriers, 1);
}

#[test]
fn gates_follow_their_access_tags() {
    let (west, east) = (at(0.5, 0.0), at(1.5, 0.0));
    let open_gate = load(barrier_street(&[("barrier", "lift_gate")]));
    for vehicle in Vehicle::ALL {
        let through = route(&open_gate, vehicle, west, east);
        assert!((cells(&through) - 1.0).abs() < 0.05, "{vehicle}");
    }
    let private = load(barrier_street(&[
        ("barrier", "gate"),
        ("access", "private"),
    ]));
    for vehicle in Vehicle::ALL {
        let around = route(&private, vehicle, west, east);
        assert!((cells(&around) - 5.0).abs() < 0.1, "{vehicle}: {around:?}");
    }
    let deliveries = load(barrier_street(&[
        ("barrier", "bollard"),
        ("motor_vehicle", "delivery"),
    ]));
    let through = route(&deliveries, Vehicle::Van, west, east);
    assert!((cells(&through) - 1.0).abs() < 0.05);
    let wall = load(barrier_street(&[("barrier", "wall")]));
    let bicycle = route(&wall, Vehicle::Bicycle, west, east);
    assert!((cells(&bicycle) - 5.0).abs() < 0.1, "{bicycle:?}");
}

#[test]
fn a_barrier_splits_the_network_and_cars_snap_to_the_larger_side() {
    // A street 1-2-3-4 with a bollard at 2 and a side street 3-5.
    let network = load(
        ExtractBuilder::default()
            .node(1, 0.0, 0.0)
            .barrier(2, 1.0, 0.0, &[("barrier", "bollard")])
            .node(3, 2.0, 0.0)
            .node(4, 3.0, 0.0)
            .node(5, 2.0, 1.0)
            .way(&[1, 2, 3, 4], RESIDENTIAL)
            .way(&[3, 5], RESIDENTIAL),
    );
    let (west, east) = (at(0.5, 0.0), at(2.5, 0.0));
    // Each side is a connected part; the car snaps to the larger one (east) for both ends,
    // and a bicycle goes straight through.
    let bicycle = route(&network, Vehicle::Bicycle, west, east);
    assert!((cells(&bicycle) - 2.0).abs() < 0.05);
    let car = route(&network, Vehicle::Car, west, east);
    assert!(car.shape[0].distance_metres(at(1.0, 0.0)) < 1.0, "{car:?}");
}

#[test]
fn every_restriction_kind_at_a_crossroads() {
    // Northbound on the south arm (way 1) at the centre: left is the west arm (3), straight
    // the north arm (2), right the east arm (4). Each arm's target is 1 cell away when the
    // turn is allowed and 3 cells (back round the ring) when it is not.
    let arms = [(3, at(0.5, 1.0)), (2, at(1.0, 1.5)), (4, at(1.5, 1.0))];
    let kinds: [(&str, i64, [bool; 3]); 6] = [
        ("no_left_turn", 3, [false, true, true]),
        ("no_straight_on", 2, [true, false, true]),
        ("no_right_turn", 4, [true, true, false]),
        ("only_left_turn", 3, [true, false, false]),
        ("only_straight_on", 2, [false, true, false]),
        ("only_right_turn", 4, [false, false, true]),
    ];
    for (kind, to, open) in kinds {
        let network = load(crossroads().restriction(&[("restriction", kind)], 1, VIA_CENTRE, to));
        for vehicle in Vehicle::ALL {
            for ((_, target), allowed) in arms.iter().zip(open) {
                // Turning back at an arm's end and round the ring tie, so only the lengths
                // and times are compared with the reference.
                let from = at(1.0, 0.5);
                let fast = network.route(vehicle, from, *target).unwrap();
                let reference = network.route_reference(vehicle, from, *target).unwrap();
                assert_eq!(
                    (fast.distance_metres, fast.duration_seconds),
                    (reference.distance_metres, reference.duration_seconds)
                );
                let travelled = cells(&fast);
                let expected = if allowed { 1.0 } else { 3.0 };
                assert!(
                    (travelled - expected).abs() < 0.05,
                    "{kind} {vehicle} to {target:?}: {travelled} cells"
                );
            }
        }
    }
}

#[test]
fn every_barrier_kind_per_vehicle() {
    // Whether each vehicle passes (bicycle, electric bicycle, motorcycle, car, van).
    let kinds: [(&str, [bool; 5]); 12] = [
        ("bollard", [true, true, false, false, false]),
        ("block", [true, true, false, false, false]),
        ("chain", [true, true, false, false, false]),
        ("cycle_barrier", [true, true, false, false, false]),
        ("kissing_gate", [true, true, false, false, false]),
        ("motorcycle_barrier", [true, true, false, false, false]),
        ("gate", [true; 5]),
        ("lift_gate", [true; 5]),
        ("toll_booth", [true; 5]),
        ("cattle_grid", [true; 5]),
        ("stile", [false; 5]),
        ("fence", [false; 5]),
    ];
    let (west, east) = (at(0.5, 0.0), at(1.5, 0.0));
    for (kind, passes) in kinds {
        let network = load(barrier_street(&[("barrier", kind)]));
        for (vehicle, passes) in Vehicle::ALL.into_iter().zip(passes) {
            let travelled = cells(&route(&network, vehicle, west, east));
            let expected = if passes { 1.0 } else { 5.0 };
            assert!(
                (travelled - expected).abs() < 0.1,
                "{kind} {vehicle}: {travelled} cells"
            );
        }
    }
}
