//! What tags at junctions mean for each vehicle: turn restrictions (`type=restriction`
//! relations) and barriers (`barrier=*` nodes). The rules are listed on [`Vehicle`].

use crate::osm::Tags;
use crate::profile::{AccessValue, access_keys, tagged_access};
use crate::vehicle::Vehicle;

/// What a turn restriction says about the turn it names.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub(crate) enum TurnRule {
    /// `no_*`: this turn is forbidden.
    Prohibited,
    /// `only_*`: arriving on the `from` way, this turn is the only one allowed.
    Mandatory,
}

/// Barriers a motor vehicle passes unless access tags close them: gates are opened, booths
/// and grids are driven over.
const MOTOR_PASSABLE_BARRIERS: &[&str] = &[
    "gate",
    "lift_gate",
    "swing_gate",
    "sliding_gate",
    "hampshire_gate",
    "toll_booth",
    "border_control",
    "cattle_grid",
    "entrance",
    "sally_port",
    "height_restrictor",
    "arch",
    "no",
];

/// Barriers that stop a bicycle unless access tags open them; it is wheeled past the rest
/// (bollards, chains, cycle barriers, gates).
const BICYCLE_STOPPING_BARRIERS: &[&str] = &[
    "wall",
    "fence",
    "hedge",
    "city_wall",
    "retaining_wall",
    "ditch",
    "stile",
    "turnstile",
    "full-height_turnstile",
    "yes",
];

/// The keys naming `vehicle` in `restriction:<key>` and `except`, most specific first.
fn transport_keys(vehicle: Vehicle) -> &'static [&'static str] {
    let keys = access_keys(vehicle);
    &keys[..keys.len() - 1]
}

/// The restriction value that applies to `vehicle`: the most specific `restriction:<key>`,
/// else `restriction` unless `except` names the vehicle.
fn restriction_value(tags: &Tags, vehicle: Vehicle) -> Option<&str> {
    let keys = transport_keys(vehicle);
    if let Some(value) = keys
        .iter()
        .find_map(|key| tags.get(&format!("restriction:{key}")))
    {
        return Some(value);
    }
    let excepted = tags.get("except").is_some_and(|list| {
        list.split(';')
            .map(str::trim)
            .any(|name| keys.contains(&name))
    });
    if excepted {
        return None;
    }
    tags.get("restriction")
}

/// How a restriction relation's tags bind `vehicle`, or `None` when they do not.
pub(crate) fn restriction_for(tags: &Tags, vehicle: Vehicle) -> Option<TurnRule> {
    let value = restriction_value(tags, vehicle)?;
    if value.starts_with("no_") {
        Some(TurnRule::Prohibited)
    } else if value.starts_with("only_") {
        Some(TurnRule::Mandatory)
    } else {
        None
    }
}

/// True when the restriction names a U-turn (`no_u_turn`, `only_u_turn`), which matters when
/// its `from` and `to` are the same way.
pub(crate) fn is_u_turn(tags: &Tags, vehicle: Vehicle) -> bool {
    restriction_value(tags, vehicle).is_some_and(|value| value.ends_with("u_turn"))
}

/// True when a node with `tags` stops `vehicle`. Access tags on the node decide first (most
/// specific key wins); without them the barrier's kind does.
pub(crate) fn barrier_blocks(tags: &Tags, vehicle: Vehicle) -> bool {
    let Some(kind) = tags.get("barrier") else {
        return false;
    };
    match tagged_access(tags, access_keys(vehicle)) {
        Some(AccessValue::Allowed) => false,
        Some(AccessValue::Denied) => true,
        Some(AccessValue::Dismount) => !vehicle.is_bicycle(),
        None if vehicle.is_bicycle() => BICYCLE_STOPPING_BARRIERS.contains(&kind),
        None => !MOTOR_PASSABLE_BARRIERS.contains(&kind),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Vehicle::*;

    fn tags(pairs: &[(&str, &str)]) -> Tags {
        pairs.iter().copied().collect()
    }

    #[test]
    fn plain_restrictions_bind_every_vehicle() {
        let no_left = tags(&[("type", "restriction"), ("restriction", "no_left_turn")]);
        let only_straight = tags(&[("type", "restriction"), ("restriction", "only_straight_on")]);
        for vehicle in Vehicle::ALL {
            assert_eq!(
                restriction_for(&no_left, vehicle),
                Some(TurnRule::Prohibited)
            );
            assert_eq!(
                restriction_for(&only_straight, vehicle),
                Some(TurnRule::Mandatory)
            );
        }
        let unknown = tags(&[("type", "restriction"), ("restriction", "give_way")]);
        assert_eq!(restriction_for(&unknown, Car), None);
    }

    #[test]
    fn except_frees_the_named_vehicles() {
        let except = tags(&[("restriction", "no_right_turn"), ("except", "bicycle; psv")]);
        assert_eq!(restriction_for(&except, Bicycle), None);
        assert_eq!(restriction_for(&except, ElectricBicycle), None);
        assert_eq!(restriction_for(&except, Car), Some(TurnRule::Prohibited));
        let motorcar = tags(&[("restriction", "no_right_turn"), ("except", "motorcar")]);
        assert_eq!(restriction_for(&motorcar, Car), None);
        assert_eq!(restriction_for(&motorcar, Van), None, "a van is a motorcar");
        assert_eq!(
            restriction_for(&motorcar, Motorcycle),
            Some(TurnRule::Prohibited)
        );
    }

    #[test]
    fn vehicle_specific_restrictions_win() {
        let bicycles_only = tags(&[("restriction:bicycle", "no_left_turn")]);
        assert_eq!(
            restriction_for(&bicycles_only, Bicycle),
            Some(TurnRule::Prohibited)
        );
        assert_eq!(restriction_for(&bicycles_only, Car), None);
        let motor = tags(&[
            ("restriction", "no_left_turn"),
            ("restriction:motor_vehicle", "only_straight_on"),
        ]);
        assert_eq!(restriction_for(&motor, Car), Some(TurnRule::Mandatory));
        assert_eq!(restriction_for(&motor, Bicycle), Some(TurnRule::Prohibited));
        // `hgv` concerns lorries, not vans.
        let lorries = tags(&[("restriction:hgv", "no_left_turn")]);
        assert_eq!(restriction_for(&lorries, Van), None);
        let goods = tags(&[("restriction:goods", "no_left_turn")]);
        assert_eq!(restriction_for(&goods, Van), Some(TurnRule::Prohibited));
        assert_eq!(restriction_for(&goods, Car), None);
        assert!(is_u_turn(&tags(&[("restriction", "no_u_turn")]), Car));
        assert!(!is_u_turn(&tags(&[("restriction", "no_left_turn")]), Car));
    }

    #[test]
    fn bollards_stop_motors_not_bicycles() {
        let bollard = tags(&[("barrier", "bollard")]);
        for vehicle in [Motorcycle, Car, Van] {
            assert!(barrier_blocks(&bollard, vehicle), "{vehicle}");
        }
        assert!(!barrier_blocks(&bollard, Bicycle));
        assert!(!barrier_blocks(&bollard, ElectricBicycle));
        let cycle_barrier = tags(&[("barrier", "cycle_barrier")]);
        assert!(!barrier_blocks(&cycle_barrier, Bicycle) && barrier_blocks(&cycle_barrier, Car));
    }

    #[test]
    fn gates_open_unless_access_closes_them() {
        let gate = tags(&[("barrier", "gate")]);
        for vehicle in Vehicle::ALL {
            assert!(!barrier_blocks(&gate, vehicle), "{vehicle}");
        }
        let private = tags(&[("barrier", "gate"), ("access", "private")]);
        for vehicle in Vehicle::ALL {
            assert!(barrier_blocks(&private, vehicle), "{vehicle}");
        }
        let bicycles_through = tags(&[
            ("barrier", "lift_gate"),
            ("motor_vehicle", "no"),
            ("bicycle", "yes"),
        ]);
        assert!(barrier_blocks(&bicycles_through, Car));
        assert!(!barrier_blocks(&bicycles_through, Bicycle));
        let deliveries = tags(&[("barrier", "bollard"), ("motor_vehicle", "delivery")]);
        assert!(!barrier_blocks(&deliveries, Van));
    }

    #[test]
    fn walls_and_stiles_stop_everyone() {
        for kind in ["wall", "stile", "turnstile"] {
            let barrier = tags(&[("barrier", kind)]);
            for vehicle in Vehicle::ALL {
                assert!(barrier_blocks(&barrier, vehicle), "{kind} {vehicle}");
            }
        }
        let toll = tags(&[("barrier", "toll_booth")]);
        assert!(Vehicle::ALL.iter().all(|v| !barrier_blocks(&toll, *v)));
        assert!(!barrier_blocks(&tags(&[("highway", "crossing")]), Car));
        let motorcycle_barrier = tags(&[("barrier", "motorcycle_barrier")]);
        assert!(barrier_blocks(&motorcycle_barrier, Motorcycle));
        assert!(!barrier_blocks(&motorcycle_barrier, Bicycle));
    }
}
