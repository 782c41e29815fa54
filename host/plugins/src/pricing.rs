//! Price books (`courier:pricing/price-book@1.0.0`).
//!
//! Calls are synchronous and take microseconds: call them directly from
//! async code on the quote path.

use std::sync::Arc;

use wasmtime::Store;

use crate::PluginError;
use crate::calls::CallStart;
use crate::engine::{CallState, PluginEngine, Runtime, fuel_used};
use crate::limits::{check_input, check_output};

mod wit {
    wasmtime::component::bindgen!({
        path: "../../wit/pricing",
        world: "price-book",
    });
}

use wit::courier::pricing::types as w;

/// The world a price book implements.
pub const WORLD: &str = "courier:pricing/price-book@1.0.0";

/// The five vehicles, smallest first (the derived order is by size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Vehicle {
    Bicycle,
    ElectricBicycle,
    Motorcycle,
    Car,
    Van,
}

impl Vehicle {
    pub const ALL: [Vehicle; 5] = [
        Vehicle::Bicycle,
        Vehicle::ElectricBicycle,
        Vehicle::Motorcycle,
        Vehicle::Car,
        Vehicle::Van,
    ];

    /// The API's name for it (`electric_bicycle`).
    pub fn as_str(self) -> &'static str {
        match self {
            Vehicle::Bicycle => "bicycle",
            Vehicle::ElectricBicycle => "electric_bicycle",
            Vehicle::Motorcycle => "motorcycle",
            Vehicle::Car => "car",
            Vehicle::Van => "van",
        }
    }

    /// Parses the API's name.
    pub fn from_name(name: &str) -> Option<Vehicle> {
        Vehicle::ALL.into_iter().find(|v| v.as_str() == name)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Weekday {
    Monday,
    Tuesday,
    Wednesday,
    Thursday,
    Friday,
    Saturday,
    Sunday,
}

/// Wall-clock time in the market's time zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalDateTime {
    pub year: u16,
    pub month: u8,
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
    pub weekday: Weekday,
}

/// One journey to price; see `wit/pricing/pricing.wit` for each field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceRequest {
    pub market: String,
    pub currency: String,
    pub vehicle: Vehicle,
    pub distance_metres: u32,
    pub duration_seconds: u32,
    pub weight_grams: u32,
    pub pickup_postcode: Option<String>,
    pub dropoff_postcode: Option<String>,
    pub local_time: LocalDateTime,
    /// Open jobs per available courier, x1000; `u32::MAX` when nobody is
    /// available.
    pub demand_permille: u32,
    pub merchant: String,
}

/// The breakdown codes the spec allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LineCode {
    BaseFare,
    Distance,
    Duration,
    Surge,
    MinimumFare,
    MerchantAdjustment,
    Tax,
}

impl LineCode {
    pub const ALL: [LineCode; 7] = [
        LineCode::BaseFare,
        LineCode::Distance,
        LineCode::Duration,
        LineCode::Surge,
        LineCode::MinimumFare,
        LineCode::MerchantAdjustment,
        LineCode::Tax,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LineCode::BaseFare => "base_fare",
            LineCode::Distance => "distance",
            LineCode::Duration => "duration",
            LineCode::Surge => "surge",
            LineCode::MinimumFare => "minimum_fare",
            LineCode::MerchantAdjustment => "merchant_adjustment",
            LineCode::Tax => "tax",
        }
    }

    pub fn from_code(code: &str) -> Option<LineCode> {
        LineCode::ALL.into_iter().find(|c| c.as_str() == code)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceLine {
    pub code: LineCode,
    pub description: String,
    pub amount_minor: i64,
}

/// The sum of a breakdown. `price` has already checked it fits in an i64.
pub fn total_minor(lines: &[PriceLine]) -> i64 {
    lines.iter().map(|l| l.amount_minor).sum()
}

/// Why a book gives no price.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PriceRefusal {
    VehicleNotOffered,
    NotCovered,
    InvalidSettings(String),
}

/// What a book says about a settings document it accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BookInfo {
    pub name: String,
    pub version: String,
    pub settings_schema: u32,
    /// Smallest first.
    pub vehicles: Vec<Vehicle>,
}

/// A settings document a price book has checked and prepared. Only the book
/// that prepared it (the same component bytes) can price with it. Build it
/// when a book version is loaded or activated, never per quote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedSettings {
    info: BookInfo,
    compiled: Arc<[u8]>,
    book_sha256: Arc<str>,
}

impl PreparedSettings {
    /// What the book said about the document.
    pub fn info(&self) -> &BookInfo {
        &self.info
    }
}

/// A loaded price book: compiled, linked, ready to instantiate. Cheap to
/// clone; every call gets a fresh instance.
#[derive(Clone)]
pub struct PriceBook {
    inner: Arc<Loaded>,
}

struct Loaded {
    runtime: Arc<Runtime>,
    pre: wit::PriceBookPre<CallState>,
    sha256: Arc<str>,
}

impl std::fmt::Debug for PriceBook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PriceBook")
            .field("sha256", &self.inner.sha256)
            .finish_non_exhaustive()
    }
}

impl PriceBook {
    /// Compiles (or loads from the cache) and links a price book. Slow
    /// (milliseconds to a second): keep it off the request path.
    pub fn load(engine: &PluginEngine, bytes: &[u8]) -> Result<Self, PluginError> {
        let runtime = engine.runtime.clone();
        let component = runtime.component(bytes)?;
        let pre = runtime.instance_pre(WORLD, &component, |_| Ok(()))?;
        let pre = wit::PriceBookPre::new(pre).map_err(|e| PluginError::Incompatible {
            world: WORLD,
            reason: format!("{e:#}"),
        })?;
        Ok(PriceBook {
            inner: Arc::new(Loaded {
                runtime,
                pre,
                sha256: crate::engine::sha256_hex(bytes).into(),
            }),
        })
    }

    /// The sha256 of the component's bytes, lower-case hex.
    pub fn sha256(&self) -> &str {
        &self.inner.sha256
    }

    /// Checks a settings document and prepares it for `price`: at upload
    /// (`Ok(Err(message))` tells the operator what is wrong) and whenever a
    /// book version is loaded.
    pub fn prepare(&self, settings: &str) -> Result<Result<PreparedSettings, String>, PluginError> {
        let limits = &self.inner.runtime.limits;
        check_input("settings", settings, limits.max_settings_bytes)?;
        let answer = self.run("prepare-settings", |book, store| {
            book.courier_pricing_book()
                .call_prepare_settings(store, settings)
        })?;
        let prepared = match answer {
            Ok(p) => p,
            Err(message) => {
                check_output("settings error", &message, limits.max_text_bytes)?;
                return Ok(Err(message));
            }
        };
        let info = prepared.info;
        check_output("book name", &info.name, limits.max_text_bytes)?;
        check_output("book version", &info.version, limits.max_text_bytes)?;
        if prepared.compiled.len() > limits.max_settings_bytes {
            return Err(PluginError::OutputTooLarge(format!(
                "prepared settings are {} bytes, over the limit of {}",
                prepared.compiled.len(),
                limits.max_settings_bytes
            )));
        }
        let mut vehicles: Vec<Vehicle> = info.vehicles.into_iter().map(from_wire).collect();
        vehicles.sort();
        vehicles.dedup();
        Ok(Ok(PreparedSettings {
            info: BookInfo {
                name: info.name,
                version: info.version,
                settings_schema: info.settings_schema,
                vehicles,
            },
            compiled: prepared.compiled.into(),
            book_sha256: self.inner.sha256.clone(),
        }))
    }

    /// Prices one journey.
    pub fn price(
        &self,
        request: &PriceRequest,
        settings: &PreparedSettings,
    ) -> Result<Result<Vec<PriceLine>, PriceRefusal>, PluginError> {
        if settings.book_sha256 != self.inner.sha256 {
            return Err(PluginError::Incompatible {
                world: WORLD,
                reason: "the settings were prepared by another price book".into(),
            });
        }
        let limits = &self.inner.runtime.limits;
        for (what, value) in [
            ("market", Some(&request.market)),
            ("currency", Some(&request.currency)),
            ("merchant", Some(&request.merchant)),
            ("pickup postcode", request.pickup_postcode.as_ref()),
            ("dropoff postcode", request.dropoff_postcode.as_ref()),
        ] {
            check_input(what, value.map_or("", |s| s), limits.max_field_bytes)?;
        }
        let wire = to_wire(request);
        let answer = self.run("price", |book, store| {
            book.courier_pricing_book()
                .call_price(store, &wire, &settings.compiled)
        })?;
        match answer {
            Ok(lines) => self.lines(lines).map(Ok),
            Err(refusal) => self.refusal(refusal).map(Err),
        }
    }

    fn run<R>(
        &self,
        operation: &'static str,
        call: impl FnOnce(&wit::PriceBook, &mut Store<CallState>) -> wasmtime::Result<R>,
    ) -> Result<R, PluginError> {
        let rt = &self.inner.runtime;
        let start = CallStart::now();
        let deadline = rt.limits.call_deadline;
        let mut store = rt.store(deadline, None);
        let result = self
            .inner
            .pre
            .instantiate(&mut store)
            .and_then(|book| call(&book, &mut store))
            .map_err(|e| rt.classify(&store, deadline, e));
        let used = (deadline, store.data().memory_peak(), fuel_used(&store));
        rt.record(
            &self.inner.sha256,
            operation,
            &start,
            used,
            &result,
            Vec::new(),
        );
        result
    }

    fn lines(&self, lines: Vec<w::Line>) -> Result<Vec<PriceLine>, PluginError> {
        let limits = &self.inner.runtime.limits;
        if lines.len() > limits.max_lines {
            return Err(PluginError::OutputTooLarge(format!(
                "{} breakdown lines, over the limit of {}",
                lines.len(),
                limits.max_lines
            )));
        }
        let mut total: i64 = 0;
        lines
            .into_iter()
            .map(|l| {
                check_output("line description", &l.description, limits.max_text_bytes)?;
                let code = LineCode::from_code(&l.code).ok_or_else(|| {
                    PluginError::InvalidOutput(format!("unknown breakdown code {:?}", l.code))
                })?;
                total = total.checked_add(l.amount_minor).ok_or_else(|| {
                    PluginError::InvalidOutput("breakdown total overflows".into())
                })?;
                Ok(PriceLine {
                    code,
                    description: l.description,
                    amount_minor: l.amount_minor,
                })
            })
            .collect()
    }

    fn refusal(&self, refusal: w::Refusal) -> Result<PriceRefusal, PluginError> {
        Ok(match refusal {
            w::Refusal::VehicleNotOffered => PriceRefusal::VehicleNotOffered,
            w::Refusal::NotCovered => PriceRefusal::NotCovered,
            w::Refusal::InvalidSettings(m) => {
                check_output(
                    "settings error",
                    &m,
                    self.inner.runtime.limits.max_text_bytes,
                )?;
                PriceRefusal::InvalidSettings(m)
            }
        })
    }
}

fn to_wire(r: &PriceRequest) -> w::PriceRequest {
    w::PriceRequest {
        market: r.market.clone(),
        currency: r.currency.clone(),
        vehicle: match r.vehicle {
            Vehicle::Bicycle => w::Vehicle::Bicycle,
            Vehicle::ElectricBicycle => w::Vehicle::ElectricBicycle,
            Vehicle::Motorcycle => w::Vehicle::Motorcycle,
            Vehicle::Car => w::Vehicle::Car,
            Vehicle::Van => w::Vehicle::Van,
        },
        distance_metres: r.distance_metres,
        duration_seconds: r.duration_seconds,
        weight_grams: r.weight_grams,
        pickup_postcode: r.pickup_postcode.clone(),
        dropoff_postcode: r.dropoff_postcode.clone(),
        local_time: w::LocalDateTime {
            year: r.local_time.year,
            month: r.local_time.month,
            day: r.local_time.day,
            hour: r.local_time.hour,
            minute: r.local_time.minute,
            weekday: match r.local_time.weekday {
                Weekday::Monday => w::Weekday::Monday,
                Weekday::Tuesday => w::Weekday::Tuesday,
                Weekday::Wednesday => w::Weekday::Wednesday,
                Weekday::Thursday => w::Weekday::Thursday,
                Weekday::Friday => w::Weekday::Friday,
                Weekday::Saturday => w::Weekday::Saturday,
                Weekday::Sunday => w::Weekday::Sunday,
            },
        },
        demand_permille: r.demand_permille,
        merchant: r.merchant.clone(),
    }
}

fn from_wire(v: w::Vehicle) -> Vehicle {
    match v {
        w::Vehicle::Bicycle => Vehicle::Bicycle,
        w::Vehicle::ElectricBicycle => Vehicle::ElectricBicycle,
        w::Vehicle::Motorcycle => Vehicle::Motorcycle,
        w::Vehicle::Car => Vehicle::Car,
        w::Vehicle::Van => Vehicle::Van,
    }
}
