//! The prepared form of the settings: what `prepare-settings` returns and
//! `price` reads. Built once per settings document, so everything that can
//! be worked out in advance is: time windows parsed, postcode prefixes
//! normalised and ordered longest first, merchants sorted for binary
//! search. Encoded with postcard behind a format byte: decoding it is a
//! fraction of the cost of parsing the JSON document.

use alloc::string::String;
use alloc::vec::Vec;
use alloc::{format, vec};

use serde::{Deserialize, Serialize};

use crate::Vehicle;
use crate::settings::{Settings, normalise_postcode};

/// Bumped whenever `Book` changes shape; bytes of another format are
/// refused rather than misread.
const FORMAT: u8 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Book {
    pub currency: Option<String>,
    /// In vehicle order.
    pub vehicles: Vec<(Vehicle, Rates)>,
    pub windows: Vec<Window>,
    /// Percent by weekday, Monday first.
    pub weekdays: [i64; 7],
    pub demand: Option<Demand>,
    pub zones_required: bool,
    /// Normalised prefix and amount, longest prefix first.
    pub zones: Vec<(String, i64)>,
    /// Sorted by merchant id.
    pub merchants: Vec<(String, Adjustment)>,
    pub tax_rate_bp: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    pub base_fare_minor: i64,
    pub per_km_minor: i64,
    pub per_minute_minor: i64,
    pub minimum_fare_minor: i64,
    /// (inclusive upper bound in grams, surcharge), ascending.
    pub weight_brackets: Vec<(u32, i64)>,
}

/// Minutes after midnight, `from` inclusive, `until` exclusive, wrapping
/// past midnight when `until` < `from`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub from: u16,
    pub until: u16,
    pub percent: i64,
}

impl Window {
    pub fn contains(&self, minute_of_day: u16) -> bool {
        if self.from <= self.until {
            (self.from..self.until).contains(&minute_of_day)
        } else {
            minute_of_day >= self.from || minute_of_day < self.until
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Demand {
    pub threshold_permille: u32,
    pub cap_permille: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Adjustment {
    Percent(i64),
    Amount(i64),
}

impl Book {
    /// From validated settings.
    pub fn new(s: &Settings) -> Result<Book, String> {
        let mut weekdays = [0; 7];
        for (day, percent) in &s.weekdays {
            weekdays[*day as usize] = *percent;
        }
        let mut zones: Vec<(String, i64)> = s
            .postcode_zones
            .iter()
            .flat_map(|z| &z.zones)
            .map(|z| (normalise_postcode(&z.prefix), z.amount_minor))
            .collect();
        // Longest first, so the first match is the longest match.
        zones.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        let merchants = s
            .merchants
            .iter()
            .map(|(id, adj)| {
                let adj = match (adj.percent, adj.amount_minor) {
                    (Some(p), None) => Adjustment::Percent(p),
                    (None, Some(a)) => Adjustment::Amount(a),
                    _ => unreachable!("validated: exactly one of percent or amount"),
                };
                (id.clone(), adj)
            })
            .collect(); // BTreeMap order: sorted by id
        Ok(Book {
            currency: s.currency.clone(),
            vehicles: s
                .vehicles
                .iter()
                .map(|(v, r)| {
                    (
                        *v,
                        Rates {
                            base_fare_minor: r.base_fare_minor,
                            per_km_minor: r.per_km_minor,
                            per_minute_minor: r.per_minute_minor,
                            minimum_fare_minor: r.minimum_fare_minor,
                            weight_brackets: r
                                .weight_brackets
                                .iter()
                                .map(|b| (b.up_to_grams, b.surcharge_minor))
                                .collect(),
                        },
                    )
                })
                .collect(),
            windows: s.windows()?,
            weekdays,
            demand: s.demand_surge.as_ref().map(|d| Demand {
                threshold_permille: d.threshold_permille,
                cap_permille: d.cap_permille,
            }),
            zones_required: s.postcode_zones.as_ref().is_some_and(|z| z.required),
            zones,
            merchants,
            tax_rate_bp: s.tax_rate_bp,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![FORMAT];
        // Serialising plain data into a Vec cannot fail.
        out.extend(postcard::to_allocvec(self).expect("postcard encoding"));
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Book, String> {
        match bytes.split_first() {
            Some((&FORMAT, rest)) => postcard::from_bytes(rest)
                .map_err(|e| format!("prepared settings are damaged: {e}")),
            _ => Err("settings were not prepared by this version of the book".into()),
        }
    }

    pub fn rates(&self, v: Vehicle) -> Option<&Rates> {
        self.vehicles.iter().find(|(x, _)| *x == v).map(|(_, r)| r)
    }

    pub fn merchant(&self, id: &str) -> Option<Adjustment> {
        self.merchants
            .binary_search_by(|(m, _)| m.as_str().cmp(id))
            .ok()
            .map(|i| self.merchants[i].1)
    }
}
