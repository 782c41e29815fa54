//! The standard price book: a `courier:pricing/book@1.0.0` component whose
//! every rate, bracket and surcharge comes from its JSON settings document.
//! See `settings.example.json` and the README for the schema, `compiled.rs`
//! for the prepared form `price` reads, and `pricing.rs` for the order of
//! the lines and the rounding.
//!
//! The pricing logic is plain Rust over the types below so it is unit
//! tested natively; only `component.rs` knows about the WIT bindings.
//!
//! On wasm the crate is `no_std` (alloc only): linking Rust's standard
//! library would make the component import a dozen WASI interfaces it
//! never calls, each of which costs the host a little on every
//! instantiation.

#![cfg_attr(target_family = "wasm", no_std)]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;

mod compiled;
mod pricing;
mod settings;

#[cfg(target_family = "wasm")]
mod component;

use serde::{Deserialize, Serialize};

pub use settings::{SCHEMA, Settings};

/// Declared smallest to largest: the derived ordering is "by size".
#[derive(Debug, Deserialize, Serialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Vehicle {
    Bicycle,
    ElectricBicycle,
    Motorcycle,
    Car,
    Van,
}

impl Vehicle {
    pub fn name(self) -> &'static str {
        match self {
            Vehicle::Bicycle => "bicycle",
            Vehicle::ElectricBicycle => "electric_bicycle",
            Vehicle::Motorcycle => "motorcycle",
            Vehicle::Car => "car",
            Vehicle::Van => "van",
        }
    }
}

/// Monday first: `as usize` indexes the prepared weekday table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weekday {
    Monday,
    Tuesday,
    Wednesday,
    Thursday,
    Friday,
    Saturday,
    Sunday,
}

#[derive(Debug, Clone, Copy)]
pub struct LocalTime {
    pub hour: u8,
    pub minute: u8,
    pub weekday: Weekday,
}

#[derive(Debug, Clone)]
pub struct Request {
    pub currency: String,
    pub vehicle: Vehicle,
    pub distance_metres: u32,
    pub duration_seconds: u32,
    pub weight_grams: u32,
    pub pickup_postcode: Option<String>,
    pub dropoff_postcode: Option<String>,
    pub local_time: LocalTime,
    pub demand_permille: u32,
    pub merchant: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub code: &'static str,
    pub description: String,
    pub amount_minor: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    VehicleNotOffered,
    NotCovered,
    InvalidSettings(String),
}

/// A checked settings document, prepared for `price`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// Offered vehicles, smallest first.
    pub vehicles: Vec<Vehicle>,
    /// The bytes `price` reads.
    pub compiled: Vec<u8>,
}

/// Parses, validates and prepares a settings document; the error is for
/// the operator.
pub fn prepare(settings: &str) -> Result<Prepared, String> {
    let settings = Settings::parse(settings)?;
    Ok(Prepared {
        vehicles: settings.vehicles(),
        compiled: compiled::Book::new(&settings)?.encode(),
    })
}

/// Prices one journey with prepared settings.
pub fn price(compiled: &[u8], request: &Request) -> Result<Vec<Line>, Refusal> {
    let book = compiled::Book::decode(compiled).map_err(Refusal::InvalidSettings)?;
    pricing::price(&book, request)
}

#[cfg(test)]
mod tests;
