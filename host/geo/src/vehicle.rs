//! The vehicles a courier may ride or drive.

use std::fmt;
use std::str::FromStr;

/// A courier vehicle, ordered from smallest to largest (markets use "the smallest vehicle the
/// market offers", so the order is part of the contract).
///
/// # Road rules
///
#[doc = include_str!("vehicle_rules.md")]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Vehicle {
    Bicycle,
    ElectricBicycle,
    Motorcycle,
    Car,
    Van,
}

impl Vehicle {
    /// Every vehicle, smallest first.
    pub const ALL: [Vehicle; 5] = [
        Vehicle::Bicycle,
        Vehicle::ElectricBicycle,
        Vehicle::Motorcycle,
        Vehicle::Car,
        Vehicle::Van,
    ];

    /// The stable wire name (`bicycle`, `electric_bicycle`, `motorcycle`, `car`, `van`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Vehicle::Bicycle => "bicycle",
            Vehicle::ElectricBicycle => "electric_bicycle",
            Vehicle::Motorcycle => "motorcycle",
            Vehicle::Car => "car",
            Vehicle::Van => "van",
        }
    }

    /// Position in [`Vehicle::ALL`], for per-vehicle tables.
    pub(crate) const fn index(self) -> usize {
        self as usize
    }

    pub(crate) const fn is_bicycle(self) -> bool {
        matches!(self, Vehicle::Bicycle | Vehicle::ElectricBicycle)
    }
}

impl fmt::Display for Vehicle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name is not one of the vehicle wire names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown vehicle {0:?} (expected bicycle, electric_bicycle, motorcycle, car or van)")]
pub struct UnknownVehicle(pub String);

impl FromStr for Vehicle {
    type Err = UnknownVehicle;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Vehicle::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| UnknownVehicle(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for vehicle in Vehicle::ALL {
            assert_eq!(
                serde_json::to_value(vehicle).unwrap(),
                serde_json::json!(vehicle.as_str())
            );
            assert_eq!(vehicle.as_str().parse::<Vehicle>(), Ok(vehicle));
            assert_eq!(vehicle.to_string(), vehicle.as_str());
        }
        assert_eq!(
            "Car".parse::<Vehicle>(),
            Err(UnknownVehicle("Car".to_owned()))
        );
    }

    #[test]
    fn ordered_smallest_to_largest() {
        let mut shuffled = vec![Vehicle::Van, Vehicle::Bicycle, Vehicle::Car];
        shuffled.extend([Vehicle::Motorcycle, Vehicle::ElectricBicycle]);
        shuffled.sort();
        assert_eq!(shuffled, Vehicle::ALL);
        assert_eq!(Vehicle::ALL.iter().min(), Some(&Vehicle::Bicycle));
        for (i, v) in Vehicle::ALL.iter().enumerate() {
            assert_eq!(v.index(), i);
        }
    }
}
