//! The settings document (schema 1) and its validation.
//!
//! Unknown fields are refused so that a misspelt key is an upload error
//! rather than a silently ignored rate.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde::Deserialize;

use crate::Vehicle;
use crate::compiled::Window;

/// The only schema this book understands.
pub const SCHEMA: u32 = 1;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub schema: u32,
    /// When present, requests in another currency are refused as
    /// invalid settings (the book was attached to the wrong market).
    #[serde(default)]
    pub currency: Option<String>,
    pub vehicles: BTreeMap<Vehicle, VehicleRates>,
    #[serde(default)]
    pub time_of_day: Vec<TimeWindow>,
    /// Weekday name -> percent, added to the time-of-day percent.
    #[serde(default)]
    pub weekdays: BTreeMap<Weekday, i64>,
    #[serde(default)]
    pub demand_surge: Option<DemandSurge>,
    #[serde(default)]
    pub postcode_zones: Option<PostcodeZones>,
    /// Merchant id -> adjustment.
    #[serde(default)]
    pub merchants: BTreeMap<String, MerchantAdjustment>,
    /// Tax on the pre-tax total, in basis points (2000 = 20%).
    #[serde(default)]
    pub tax_rate_bp: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VehicleRates {
    pub base_fare_minor: i64,
    pub per_km_minor: i64,
    pub per_minute_minor: i64,
    #[serde(default)]
    pub minimum_fare_minor: i64,
    /// Ascending by `up_to_grams`. A weight above the last bound means the
    /// vehicle is not offered for that parcel. Empty means any weight, no
    /// surcharge.
    #[serde(default)]
    pub weight_brackets: Vec<WeightBracket>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightBracket {
    /// Inclusive upper bound.
    pub up_to_grams: u32,
    pub surcharge_minor: i64,
}

/// A daily window in local time, `from` inclusive, `until` exclusive,
/// "HH:MM". `until` before `from` wraps past midnight ("22:00" to "06:00").
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeWindow {
    pub from: String,
    pub until: String,
    pub percent: i64,
    #[serde(default)]
    pub label: Option<String>,
}

/// Declared Monday first: `as usize` is the index into `Book::weekdays`.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Weekday {
    Monday,
    Tuesday,
    Wednesday,
    Thursday,
    Friday,
    Saturday,
    Sunday,
}

/// The surge multiplier is the demand ratio itself (open jobs per free
/// courier), applied once demand reaches `threshold_permille` and capped at
/// `cap_permille`. 1000 = x1.0.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DemandSurge {
    pub threshold_permille: u32,
    pub cap_permille: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostcodeZones {
    /// When true, a stop without a postcode, or whose postcode matches no
    /// zone, is not covered.
    #[serde(default)]
    pub required: bool,
    pub zones: Vec<Zone>,
}

/// Prefixes compare case-insensitively with spaces removed; the longest
/// matching prefix wins. The amount applies once per stop that matches.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Zone {
    pub prefix: String,
    pub amount_minor: i64,
}

/// Exactly one of the two.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MerchantAdjustment {
    #[serde(default)]
    pub percent: Option<i64>,
    #[serde(default)]
    pub amount_minor: Option<i64>,
}

/// Normalises a postcode or prefix for comparison.
pub fn normalise_postcode(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_uppercase)
        .collect()
}

fn parse_hhmm(s: &str) -> Result<u16, String> {
    let bad = || format!("time {s:?} is not HH:MM");
    let (h, m) = s.split_once(':').ok_or_else(bad)?;
    if h.len() != 2 || m.len() != 2 {
        return Err(bad());
    }
    let h: u16 = h.parse().map_err(|_| bad())?;
    let m: u16 = m.parse().map_err(|_| bad())?;
    if h > 23 || m > 59 {
        return Err(bad());
    }
    Ok(h * 60 + m)
}

/// Percentages are bounded so a typo cannot produce absurd prices; a
/// discount can at most cancel the amount out.
const PERCENT_RANGE: core::ops::RangeInclusive<i64> = -100..=1000;
/// No single configured amount may exceed this (10^12 minor units), which
/// keeps every intermediate product far inside i128.
const AMOUNT_LIMIT: i64 = 1_000_000_000_000;

fn check_amount(what: &str, v: i64, allow_negative: bool) -> Result<(), String> {
    if v.abs() > AMOUNT_LIMIT {
        return Err(format!("{what} is out of range"));
    }
    if !allow_negative && v < 0 {
        return Err(format!("{what} must not be negative"));
    }
    Ok(())
}

fn check_percent(what: &str, v: i64) -> Result<(), String> {
    if PERCENT_RANGE.contains(&v) {
        Ok(())
    } else {
        Err(format!("{what} must be between -100 and 1000 percent"))
    }
}

impl Settings {
    /// Parses and validates; the error says what an operator must fix.
    pub fn parse(doc: &str) -> Result<Self, String> {
        let s: Settings = serde_json::from_str(doc).map_err(|e| e.to_string())?;
        s.validate()?;
        Ok(s)
    }

    fn validate(&self) -> Result<(), String> {
        if self.schema != SCHEMA {
            return Err(format!(
                "settings schema {} is not supported (this book reads schema {SCHEMA})",
                self.schema
            ));
        }
        if let Some(c) = &self.currency
            && !(c.len() == 3 && c.bytes().all(|b| b.is_ascii_uppercase()))
        {
            return Err(format!("currency {c:?} is not an ISO 4217 code"));
        }
        if self.vehicles.is_empty() {
            return Err("at least one vehicle must be offered".into());
        }
        for (v, r) in &self.vehicles {
            let name = v.name();
            check_amount(&format!("{name}.base_fare_minor"), r.base_fare_minor, false)?;
            check_amount(&format!("{name}.per_km_minor"), r.per_km_minor, false)?;
            check_amount(
                &format!("{name}.per_minute_minor"),
                r.per_minute_minor,
                false,
            )?;
            check_amount(
                &format!("{name}.minimum_fare_minor"),
                r.minimum_fare_minor,
                false,
            )?;
            let mut last = None;
            for b in &r.weight_brackets {
                check_amount(
                    &format!("{name} weight surcharge"),
                    b.surcharge_minor,
                    false,
                )?;
                if last.is_some_and(|l| b.up_to_grams <= l) {
                    return Err(format!(
                        "{name}.weight_brackets must be in ascending order of up_to_grams"
                    ));
                }
                last = Some(b.up_to_grams);
            }
        }
        self.windows()?;
        for (day, p) in &self.weekdays {
            check_percent(&format!("weekdays.{day:?}"), *p)?;
        }
        if let Some(d) = &self.demand_surge
            && (d.cap_permille < 1000 || d.threshold_permille > d.cap_permille)
        {
            return Err(
                "demand_surge needs 1000 <= cap_permille and threshold_permille <= cap_permille"
                    .into(),
            );
        }
        if let Some(z) = &self.postcode_zones {
            for zone in &z.zones {
                if normalise_postcode(&zone.prefix).is_empty() {
                    return Err("postcode zone prefixes must not be empty".into());
                }
                check_amount("postcode zone amount", zone.amount_minor, true)?;
            }
        }
        for (m, adj) in &self.merchants {
            match (adj.percent, adj.amount_minor) {
                (Some(p), None) => check_percent(&format!("merchants.{m}.percent"), p)?,
                (None, Some(a)) => check_amount(&format!("merchants.{m}.amount_minor"), a, true)?,
                _ => {
                    return Err(format!(
                        "merchants.{m} needs exactly one of percent or amount_minor"
                    ));
                }
            }
        }
        if !(0..=10_000).contains(&self.tax_rate_bp) {
            return Err("tax_rate_bp must be between 0 and 10000".into());
        }
        Ok(())
    }

    /// The time-of-day windows with parsed bounds.
    pub fn windows(&self) -> Result<Vec<Window>, String> {
        self.time_of_day
            .iter()
            .map(|w| {
                check_percent("time_of_day percent", w.percent)?;
                let from = parse_hhmm(&w.from)?;
                let until = parse_hhmm(&w.until)?;
                if from == until {
                    return Err(format!("time window {}-{} is empty", w.from, w.until));
                }
                Ok(Window {
                    from,
                    until,
                    percent: w.percent,
                })
            })
            .collect()
    }

    /// The vehicles offered, smallest first.
    pub fn vehicles(&self) -> Vec<Vehicle> {
        // BTreeMap iterates in the enum's declaration order, which is by size.
        self.vehicles.keys().copied().collect()
    }
}
