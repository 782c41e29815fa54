#![doc = include_str!("vehicle_rules.md")]

use crate::osm::Tags;
use crate::vehicle::Vehicle;

/// Walking pace, for pushed bicycles and `maxspeed=walk`.
pub(crate) const WALKING_SPEED_KMH: f64 = 5.0;
const BICYCLE_CRUISE_KMH: f64 = 15.0;
const ELECTRIC_BICYCLE_CRUISE_KMH: f64 = 20.0;
/// Riding among pedestrians, where allowed.
const SHARED_WITH_PEDESTRIANS_KMH: f64 = 12.0;
const VAN_SPEED_FACTOR: f64 = 0.9;

/// How a vehicle may use one way.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct WayAccess {
    /// Allowed in the direction the way is drawn.
    pub(crate) forward: bool,
    /// Allowed against the drawing direction.
    pub(crate) backward: bool,
    pub(crate) speed_kmh: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum BicycleDefault {
    Ride,
    Push,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum MotorDefault {
    Allowed,
    OnlyWhenTagged,
    Never,
}

struct RoadClass {
    motor: MotorDefault,
    bicycle: BicycleDefault,
    car_kmh: f64,
    /// Pedestrian surfaces cap bicycle riding speed.
    pedestrian_surface: bool,
}

fn road_class(highway: &str) -> Option<RoadClass> {
    use BicycleDefault::{Never as NoBike, Push, Ride};
    use MotorDefault::{Allowed, Never as NoMotor, OnlyWhenTagged};
    let class = |motor, bicycle, car_kmh| RoadClass {
        motor,
        bicycle,
        car_kmh,
        pedestrian_surface: false,
    };
    Some(match highway {
        "motorway" => class(Allowed, NoBike, 100.0),
        "motorway_link" => class(Allowed, NoBike, 50.0),
        "trunk" => class(Allowed, Ride, 80.0),
        "trunk_link" => class(Allowed, Ride, 45.0),
        "primary" => class(Allowed, Ride, 65.0),
        "primary_link" => class(Allowed, Ride, 40.0),
        "secondary" => class(Allowed, Ride, 55.0),
        "secondary_link" => class(Allowed, Ride, 35.0),
        "tertiary" => class(Allowed, Ride, 45.0),
        "tertiary_link" => class(Allowed, Ride, 30.0),
        "unclassified" => class(Allowed, Ride, 35.0),
        "residential" | "road" => class(Allowed, Ride, 25.0),
        "living_street" => class(Allowed, Ride, 10.0),
        "service" => class(Allowed, Ride, 15.0),
        "track" => class(OnlyWhenTagged, Ride, 15.0),
        "cycleway" | "path" => class(NoMotor, Ride, 0.0),
        "pedestrian" => RoadClass {
            pedestrian_surface: true,
            ..class(OnlyWhenTagged, Push, 10.0)
        },
        "footway" => RoadClass {
            pedestrian_surface: true,
            ..class(NoMotor, Push, 0.0)
        },
        _ => return None,
    })
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum AccessValue {
    Allowed,
    Denied,
    Dismount,
}

fn access_value(value: &str) -> Option<AccessValue> {
    match value {
        "yes" | "permissive" | "designated" | "destination" | "delivery" | "customers"
        | "discouraged" | "official" => Some(AccessValue::Allowed),
        "no"
        | "private"
        | "permit"
        | "agricultural"
        | "forestry"
        | "agricultural;forestry"
        | "emergency"
        | "military"
        | "psv"
        | "bus"
        | "restricted"
        | "use_sidepath" => Some(AccessValue::Denied),
        "dismount" => Some(AccessValue::Dismount),
        _ => None,
    }
}

pub(crate) fn access_keys(vehicle: Vehicle) -> &'static [&'static str] {
    match vehicle {
        Vehicle::Bicycle | Vehicle::ElectricBicycle => &["bicycle", "vehicle", "access"],
        Vehicle::Motorcycle => &["motorcycle", "motor_vehicle", "vehicle", "access"],
        Vehicle::Car => &["motorcar", "motor_vehicle", "vehicle", "access"],
        Vehicle::Van => &["goods", "motorcar", "motor_vehicle", "vehicle", "access"],
    }
}

/// The most specific recognised access value among `keys`.
pub(crate) fn tagged_access(tags: &Tags, keys: &[&str]) -> Option<AccessValue> {
    keys.iter()
        .find_map(|key| tags.get(key).and_then(access_value))
}

/// How `vehicle` may use a way with `tags`, or `None` when it may not use it at all.
pub(crate) fn way_access(tags: &Tags, vehicle: Vehicle) -> Option<WayAccess> {
    let highway = tags.get("highway")?;
    if tags.is("area", &["yes"]) && highway != "pedestrian" {
        return None;
    }
    let class = road_class(highway)?;
    if vehicle.is_bicycle() {
        bicycle_access(tags, &class, vehicle)
    } else {
        motor_access(tags, &class, vehicle)
    }
}

fn motor_access(tags: &Tags, class: &RoadClass, vehicle: Vehicle) -> Option<WayAccess> {
    let allowed = match (class.motor, tagged_access(tags, access_keys(vehicle))) {
        (MotorDefault::Never, _) => false,
        (_, Some(tagged)) => tagged == AccessValue::Allowed,
        (default, None) => default == MotorDefault::Allowed,
    };
    if !allowed {
        return None;
    }
    let (forward, backward) = one_way_directions(tags, vehicle)?;
    let (speed_factor, cap) = match vehicle {
        Vehicle::Van => (VAN_SPEED_FACTOR, 100.0),
        _ => (1.0, 130.0),
    };
    let base = parse_maxspeed(tags.get("maxspeed")).unwrap_or(class.car_kmh);
    Some(WayAccess {
        forward,
        backward,
        speed_kmh: (base * speed_factor).min(cap),
    })
}

fn bicycle_access(tags: &Tags, class: &RoadClass, vehicle: Vehicle) -> Option<WayAccess> {
    let own_tag = tags.get("bicycle").and_then(access_value);
    let riding = match class.bicycle {
        BicycleDefault::Never => match own_tag {
            Some(AccessValue::Allowed) => true,
            Some(AccessValue::Dismount) => false,
            _ => return None,
        },
        BicycleDefault::Push => match own_tag {
            Some(AccessValue::Allowed) => true,
            Some(AccessValue::Denied) => return None,
            Some(AccessValue::Dismount) => false,
            None => {
                let walking_denied = tagged_access(tags, &["foot", "access"])
                    .is_some_and(|v| v == AccessValue::Denied);
                if walking_denied {
                    return None;
                }
                false
            }
        },
        BicycleDefault::Ride => {
            let motorroad = tags.is("motorroad", &["yes"]);
            match tagged_access(tags, access_keys(vehicle)) {
                _ if motorroad && own_tag != Some(AccessValue::Allowed) => return None,
                Some(AccessValue::Denied) => return None,
                Some(AccessValue::Dismount) => false,
                Some(AccessValue::Allowed) | None => true,
            }
        }
    };
    if !riding {
        return Some(WayAccess {
            forward: true,
            backward: true,
            speed_kmh: WALKING_SPEED_KMH,
        });
    }
    let (forward, backward) = one_way_directions(tags, vehicle)?;
    let mut speed = match vehicle {
        Vehicle::ElectricBicycle => ELECTRIC_BICYCLE_CRUISE_KMH,
        _ => BICYCLE_CRUISE_KMH,
    };
    if class.pedestrian_surface {
        speed = speed.min(SHARED_WITH_PEDESTRIANS_KMH);
    }
    if let Some(limit) = parse_maxspeed(tags.get("maxspeed")) {
        speed = speed.min(limit);
    }
    Some(WayAccess {
        forward,
        backward,
        speed_kmh: speed,
    })
}

/// Allowed directions `(forward, backward)`, or `None` when the way is closed both ways.
fn one_way_directions(tags: &Tags, vehicle: Vehicle) -> Option<(bool, bool)> {
    const BOTH: (bool, bool) = (true, true);
    const FORWARD: (bool, bool) = (true, false);
    const BACKWARD: (bool, bool) = (false, true);
    let parse = |value: &str| match value {
        "yes" | "1" | "true" => Some(Some(FORWARD)),
        "-1" | "reverse" => Some(Some(BACKWARD)),
        "no" | "false" | "0" => Some(Some(BOTH)),
        "reversible" | "alternating" => Some(None),
        _ => None,
    };
    if vehicle.is_bicycle() {
        if let Some(directions) = tags.get("oneway:bicycle").and_then(parse) {
            return directions;
        }
        let contraflow = [
            "cycleway",
            "cycleway:left",
            "cycleway:right",
            "cycleway:both",
        ]
        .iter()
        .any(|key| tags.is(key, &["opposite", "opposite_lane", "opposite_track"]));
        if contraflow {
            return Some(BOTH);
        }
    }
    if let Some(directions) = tags.get("oneway").and_then(parse) {
        return directions;
    }
    let implied =
        tags.is("junction", &["roundabout", "circular"]) || tags.is("highway", &["motorway"]);
    Some(if implied { FORWARD } else { BOTH })
}

/// A `maxspeed` value in km/h; `None` for values that do not state a number (country or zone
/// codes, `none`, `signals`, ...). Multiple values separated by `;` use the first.
pub(crate) fn parse_maxspeed(value: Option<&str>) -> Option<f64> {
    let value = value?.split(';').next()?.trim();
    if value == "walk" {
        return Some(WALKING_SPEED_KMH);
    }
    let digits_end = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let number: f64 = value[..digits_end].parse().ok()?;
    let factor = match value[digits_end..].trim() {
        "" | "km/h" | "kmh" | "kph" | "kmph" => 1.0,
        "mph" => 1.609_344,
        _ => return None,
    };
    let kmh = number * factor;
    (kmh > 0.0 && kmh <= 300.0).then_some(kmh)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(pairs: &[(&str, &str)]) -> Tags {
        pairs.iter().copied().collect()
    }

    fn usable(pairs: &[(&str, &str)], vehicle: Vehicle) -> bool {
        way_access(&tags(pairs), vehicle).is_some()
    }

    fn directions(pairs: &[(&str, &str)], vehicle: Vehicle) -> Option<(bool, bool)> {
        way_access(&tags(pairs), vehicle).map(|a| (a.forward, a.backward))
    }

    fn speed(pairs: &[(&str, &str)], vehicle: Vehicle) -> Option<f64> {
        way_access(&tags(pairs), vehicle).map(|a| a.speed_kmh)
    }

    use Vehicle::*;

    #[test]
    fn residential_streets_are_open_to_everyone() {
        for vehicle in Vehicle::ALL {
            assert_eq!(
                directions(&[("highway", "residential")], vehicle),
                Some((true, true)),
                "{vehicle}"
            );
        }
    }

    #[test]
    fn non_highways_and_unknown_classes_are_unusable() {
        for vehicle in Vehicle::ALL {
            assert!(!usable(&[("building", "yes")], vehicle));
            assert!(!usable(&[("highway", "steps")], vehicle));
            assert!(!usable(&[("highway", "construction")], vehicle));
            assert!(!usable(&[("highway", "proposed")], vehicle));
            assert!(!usable(
                &[("highway", "platform"), ("area", "yes")],
                vehicle
            ));
        }
    }

    #[test]
    fn motorways_are_for_motor_vehicles_only() {
        let motorway = [("highway", "motorway")];
        assert!(!usable(&motorway, Bicycle) && !usable(&motorway, ElectricBicycle));
        for vehicle in [Motorcycle, Car, Van] {
            assert_eq!(directions(&motorway, vehicle), Some((true, false)));
        }
        assert!(!usable(&[("highway", "motorway_link")], Bicycle));
    }

    #[test]
    fn motorroad_trunk_excludes_bicycles_unless_explicitly_allowed() {
        assert!(usable(&[("highway", "trunk")], Bicycle));
        let motorroad = [("highway", "trunk"), ("motorroad", "yes")];
        assert!(!usable(&motorroad, Bicycle) && !usable(&motorroad, ElectricBicycle));
        assert!(usable(&motorroad, Car));
        let generic_yes = [
            ("highway", "trunk"),
            ("motorroad", "yes"),
            ("access", "yes"),
        ];
        assert!(!usable(&generic_yes, Bicycle));
        let explicit = [
            ("highway", "trunk"),
            ("motorroad", "yes"),
            ("bicycle", "yes"),
        ];
        assert!(usable(&explicit, Bicycle));
    }

    #[test]
    fn cycleways_and_paths_take_bicycles_not_motors() {
        for class in ["cycleway", "path"] {
            let way = [("highway", class)];
            assert!(usable(&way, Bicycle) && usable(&way, ElectricBicycle));
            assert!(!usable(&way, Motorcycle) && !usable(&way, Car) && !usable(&way, Van));
            // A motor tag cannot open a cycleway.
            assert!(!usable(
                &[("highway", class), ("motor_vehicle", "yes")],
                Car
            ));
        }
        assert!(!usable(&[("highway", "path"), ("bicycle", "no")], Bicycle));
    }

    #[test]
    fn footways_push_bicycles_unless_riding_is_allowed() {
        let footway = [("highway", "footway")];
        assert_eq!(speed(&footway, Bicycle), Some(WALKING_SPEED_KMH));
        assert_eq!(speed(&footway, ElectricBicycle), Some(WALKING_SPEED_KMH));
        assert!(!usable(&footway, Car));
        let shared = [("highway", "footway"), ("bicycle", "yes")];
        assert_eq!(speed(&shared, Bicycle), Some(SHARED_WITH_PEDESTRIANS_KMH));
        let designated = [("highway", "footway"), ("bicycle", "designated")];
        assert_eq!(
            speed(&designated, Bicycle),
            Some(SHARED_WITH_PEDESTRIANS_KMH)
        );
        let dismount = [("highway", "footway"), ("bicycle", "dismount")];
        assert_eq!(speed(&dismount, Bicycle), Some(WALKING_SPEED_KMH));
        assert!(!usable(
            &[("highway", "footway"), ("bicycle", "no")],
            Bicycle
        ));
        assert!(!usable(&[("highway", "footway"), ("foot", "no")], Bicycle));
        assert!(!usable(
            &[("highway", "footway"), ("access", "private")],
            Bicycle
        ));
    }

    #[test]
    fn pedestrian_zones_admit_bicycles_and_tagged_deliveries() {
        let zone = [("highway", "pedestrian"), ("bicycle", "yes")];
        assert_eq!(speed(&zone, Bicycle), Some(SHARED_WITH_PEDESTRIANS_KMH));
        assert!(!usable(&zone, Car) && !usable(&zone, Motorcycle) && !usable(&zone, Van));
        let deliveries = [("highway", "pedestrian"), ("motor_vehicle", "delivery")];
        assert!(usable(&deliveries, Van) && usable(&deliveries, Car));
        assert!(usable(&deliveries, Motorcycle));
        let vans_only = [("highway", "pedestrian"), ("goods", "yes")];
        assert!(usable(&vans_only, Van) && !usable(&vans_only, Car));
    }

    #[test]
    fn tracks_need_a_motor_permission() {
        let track = [("highway", "track")];
        assert!(usable(&track, Bicycle) && !usable(&track, Car));
        assert!(usable(
            &[("highway", "track"), ("motor_vehicle", "yes")],
            Car
        ));
        assert!(!usable(
            &[("highway", "track"), ("motor_vehicle", "agricultural")],
            Car
        ));
    }

    #[test]
    fn access_hierarchy_most_specific_wins() {
        let private = [("highway", "service"), ("access", "private")];
        for vehicle in Vehicle::ALL {
            assert!(!usable(&private, vehicle), "{vehicle}");
        }
        let bikes_ok = [("highway", "service"), ("access", "no"), ("bicycle", "yes")];
        assert!(usable(&bikes_ok, Bicycle) && !usable(&bikes_ok, Car));
        let no_motors = [("highway", "residential"), ("motor_vehicle", "no")];
        assert!(usable(&no_motors, Bicycle));
        assert!(!usable(&no_motors, Motorcycle) && !usable(&no_motors, Car));
        assert!(!usable(&no_motors, Van));
        let no_vehicles = [("highway", "residential"), ("vehicle", "no")];
        for vehicle in Vehicle::ALL {
            assert!(!usable(&no_vehicles, vehicle), "{vehicle}");
        }
        let no_cars = [("highway", "residential"), ("motorcar", "no")];
        assert!(usable(&no_cars, Motorcycle) && !usable(&no_cars, Car));
        // A van is a motorcar for access purposes.
        assert!(!usable(&no_cars, Van));
        let no_motorcycles = [("highway", "residential"), ("motorcycle", "no")];
        assert!(!usable(&no_motorcycles, Motorcycle) && usable(&no_motorcycles, Car));
        let no_goods = [("highway", "residential"), ("goods", "no")];
        assert!(usable(&no_goods, Car) && !usable(&no_goods, Van));
        let lorries_only_banned = [("highway", "residential"), ("hgv", "no")];
        assert!(usable(&lorries_only_banned, Van));
        let delivery = [
            ("highway", "residential"),
            ("access", "no"),
            ("goods", "delivery"),
        ];
        assert!(usable(&delivery, Van) && !usable(&delivery, Car));
        let destination = [("highway", "residential"), ("motor_vehicle", "destination")];
        assert!(usable(&destination, Car));
        let unknown_value = [("highway", "residential"), ("motorcar", "sometimes")];
        assert!(usable(&unknown_value, Car));
        let sidepath = [("highway", "primary"), ("bicycle", "use_sidepath")];
        assert!(!usable(&sidepath, Bicycle) && usable(&sidepath, Car));
    }

    #[test]
    fn dismount_on_a_road_means_pushing() {
        let way = [
            ("highway", "residential"),
            ("bicycle", "dismount"),
            ("oneway", "yes"),
        ];
        assert_eq!(speed(&way, Bicycle), Some(WALKING_SPEED_KMH));
        assert_eq!(directions(&way, Bicycle), Some((true, true)));
        assert_eq!(directions(&way, Car), Some((true, false)));
    }

    #[test]
    fn explicit_one_way_values() {
        for yes in ["yes", "1", "true"] {
            let way = [("highway", "residential"), ("oneway", yes)];
            for vehicle in Vehicle::ALL {
                assert_eq!(directions(&way, vehicle), Some((true, false)), "{yes}");
            }
        }
        for reverse in ["-1", "reverse"] {
            let way = [("highway", "residential"), ("oneway", reverse)];
            assert_eq!(directions(&way, Car), Some((false, true)));
            assert_eq!(directions(&way, Bicycle), Some((false, true)));
        }
        let reversible = [("highway", "primary"), ("oneway", "reversible")];
        assert!(!usable(&reversible, Car) && !usable(&reversible, Bicycle));
        let not_oneway = [("highway", "residential"), ("oneway", "no")];
        assert_eq!(directions(&not_oneway, Van), Some((true, true)));
    }

    #[test]
    fn implied_one_way_on_roundabouts_and_motorways() {
        let roundabout = [("highway", "primary"), ("junction", "roundabout")];
        for vehicle in Vehicle::ALL {
            assert_eq!(directions(&roundabout, vehicle), Some((true, false)));
        }
        let circular = [("highway", "tertiary"), ("junction", "circular")];
        assert_eq!(directions(&circular, Car), Some((true, false)));
        let two_way_roundabout = [
            ("highway", "primary"),
            ("junction", "roundabout"),
            ("oneway", "no"),
        ];
        assert_eq!(directions(&two_way_roundabout, Car), Some((true, true)));
        let two_way_motorway = [("highway", "motorway"), ("oneway", "no")];
        assert_eq!(directions(&two_way_motorway, Car), Some((true, true)));
    }

    #[test]
    fn bicycle_contraflow_exceptions() {
        let exempt = [
            ("highway", "residential"),
            ("oneway", "yes"),
            ("oneway:bicycle", "no"),
        ];
        assert_eq!(directions(&exempt, Bicycle), Some((true, true)));
        assert_eq!(directions(&exempt, ElectricBicycle), Some((true, true)));
        assert_eq!(directions(&exempt, Car), Some((true, false)));
        assert_eq!(directions(&exempt, Motorcycle), Some((true, false)));
        for (key, value) in [
            ("cycleway", "opposite"),
            ("cycleway:left", "opposite_lane"),
            ("cycleway:right", "opposite_track"),
            ("cycleway:both", "opposite_lane"),
        ] {
            let way = [("highway", "residential"), ("oneway", "yes"), (key, value)];
            assert_eq!(directions(&way, Bicycle), Some((true, true)), "{key}");
            assert_eq!(directions(&way, Van), Some((true, false)), "{key}");
        }
        let bicycle_only_oneway = [("highway", "cycleway"), ("oneway:bicycle", "yes")];
        assert_eq!(
            directions(&bicycle_only_oneway, Bicycle),
            Some((true, false))
        );
    }

    #[test]
    fn speeds_follow_maxspeed_with_caps() {
        fn limited(limit: &str) -> [(&str, &str); 2] {
            [("highway", "primary"), ("maxspeed", limit)]
        }
        assert_eq!(speed(&limited("80"), Car), Some(80.0));
        assert_eq!(speed(&limited("80"), Motorcycle), Some(80.0));
        assert_eq!(speed(&limited("80"), Van), Some(72.0));
        assert_eq!(speed(&limited("200"), Car), Some(130.0));
        assert_eq!(speed(&limited("200"), Van), Some(100.0));
        assert_eq!(speed(&limited("80"), Bicycle), Some(BICYCLE_CRUISE_KMH));
        assert_eq!(speed(&limited("80"), ElectricBicycle), Some(20.0));
        assert_eq!(speed(&limited("walk"), Car), Some(WALKING_SPEED_KMH));
        assert_eq!(speed(&limited("walk"), Bicycle), Some(WALKING_SPEED_KMH));
        assert_eq!(speed(&limited("10"), ElectricBicycle), Some(10.0));
        let mph = speed(&limited("30 mph"), Car).unwrap();
        assert!((mph - 48.28).abs() < 0.01, "{mph}");
        // Zone codes fall back to the class default.
        assert_eq!(speed(&limited("CH:urban"), Car), Some(65.0));
        assert_eq!(speed(&limited("none"), Car), Some(65.0));
    }

    #[test]
    fn class_defaults_rank_roads_and_vans_are_slower() {
        let class_speed =
            |class: &str, vehicle| speed(&[("highway", class)], vehicle).expect(class);
        assert!(class_speed("motorway", Car) > class_speed("primary", Car));
        assert!(class_speed("primary", Car) > class_speed("residential", Car));
        assert!(class_speed("residential", Car) > class_speed("living_street", Car));
        assert!(class_speed("residential", Van) < class_speed("residential", Car));
        assert_eq!(
            class_speed("motorway", Motorcycle),
            class_speed("motorway", Car)
        );
        assert!(class_speed("residential", Bicycle) < class_speed("residential", ElectricBicycle));
    }

    #[test]
    fn maxspeed_parsing() {
        assert_eq!(parse_maxspeed(Some("50")), Some(50.0));
        assert_eq!(parse_maxspeed(Some("50 km/h")), Some(50.0));
        assert_eq!(parse_maxspeed(Some("50kmh")), Some(50.0));
        assert_eq!(parse_maxspeed(Some("60;50")), Some(60.0));
        assert_eq!(parse_maxspeed(Some("walk")), Some(WALKING_SPEED_KMH));
        assert_eq!(parse_maxspeed(Some("DE:zone30")), None);
        assert_eq!(parse_maxspeed(Some("signals")), None);
        assert_eq!(parse_maxspeed(Some("0")), None);
        assert_eq!(parse_maxspeed(Some("50 knots")), None);
        assert_eq!(parse_maxspeed(None), None);
    }
}
