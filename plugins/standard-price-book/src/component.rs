//! The WIT boundary: converts between the generated types and the plain
//! ones the logic uses. `guest-rt` supplies what std would (allocator,
//! panic handler, `cabi_realloc`).

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec::Vec;

use guest_rt as _;

wit_bindgen::generate!({
    path: "../../wit/pricing",
    world: "price-book",
    // Gates the generated `std::error::Error` impls behind a `std` feature
    // this crate does not have: it is no_std.
    std_feature,
});

use courier::pricing::types as wit;
use exports::courier::pricing::book::Guest;

struct Component;

export!(Component);

fn vehicle_from(v: wit::Vehicle) -> crate::Vehicle {
    match v {
        wit::Vehicle::Bicycle => crate::Vehicle::Bicycle,
        wit::Vehicle::ElectricBicycle => crate::Vehicle::ElectricBicycle,
        wit::Vehicle::Motorcycle => crate::Vehicle::Motorcycle,
        wit::Vehicle::Car => crate::Vehicle::Car,
        wit::Vehicle::Van => crate::Vehicle::Van,
    }
}

fn vehicle_to(v: crate::Vehicle) -> wit::Vehicle {
    match v {
        crate::Vehicle::Bicycle => wit::Vehicle::Bicycle,
        crate::Vehicle::ElectricBicycle => wit::Vehicle::ElectricBicycle,
        crate::Vehicle::Motorcycle => wit::Vehicle::Motorcycle,
        crate::Vehicle::Car => wit::Vehicle::Car,
        crate::Vehicle::Van => wit::Vehicle::Van,
    }
}

fn weekday_from(w: wit::Weekday) -> crate::Weekday {
    match w {
        wit::Weekday::Monday => crate::Weekday::Monday,
        wit::Weekday::Tuesday => crate::Weekday::Tuesday,
        wit::Weekday::Wednesday => crate::Weekday::Wednesday,
        wit::Weekday::Thursday => crate::Weekday::Thursday,
        wit::Weekday::Friday => crate::Weekday::Friday,
        wit::Weekday::Saturday => crate::Weekday::Saturday,
        wit::Weekday::Sunday => crate::Weekday::Sunday,
    }
}

impl Guest for Component {
    fn price(
        request: wit::PriceRequest,
        settings: Vec<u8>,
    ) -> Result<Vec<wit::Line>, wit::Refusal> {
        let request = crate::Request {
            currency: request.currency,
            vehicle: vehicle_from(request.vehicle),
            distance_metres: request.distance_metres,
            duration_seconds: request.duration_seconds,
            weight_grams: request.weight_grams,
            pickup_postcode: request.pickup_postcode,
            dropoff_postcode: request.dropoff_postcode,
            local_time: crate::LocalTime {
                hour: request.local_time.hour,
                minute: request.local_time.minute,
                weekday: weekday_from(request.local_time.weekday),
            },
            demand_permille: request.demand_permille,
            merchant: request.merchant,
        };
        match crate::price(&settings, &request) {
            Ok(lines) => Ok(lines
                .into_iter()
                .map(|l| wit::Line {
                    code: l.code.to_owned(),
                    description: l.description,
                    amount_minor: l.amount_minor,
                })
                .collect()),
            Err(crate::Refusal::VehicleNotOffered) => Err(wit::Refusal::VehicleNotOffered),
            Err(crate::Refusal::NotCovered) => Err(wit::Refusal::NotCovered),
            Err(crate::Refusal::InvalidSettings(m)) => Err(wit::Refusal::InvalidSettings(m)),
        }
    }

    fn prepare_settings(settings: String) -> Result<wit::PreparedSettings, String> {
        let prepared = crate::prepare(&settings)?;
        Ok(wit::PreparedSettings {
            info: wit::BookInfo {
                name: "standard".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                settings_schema: crate::SCHEMA,
                vehicles: prepared.vehicles.into_iter().map(vehicle_to).collect(),
            },
            compiled: prepared.compiled,
        })
    }
}
