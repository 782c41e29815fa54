//! The markets file (TOML), named by `COURIER_MARKETS_FILE`. Format in docs/configuration.md.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use courier_geo::{Polygon, Vehicle};
use serde::Deserialize;

use courier_domain::Currency;
use courier_domain::pay::CourierPay;
use thiserror::Error;

/// Where a market's road network comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum NetworkSource {
    /// An `.osm.pbf` extract.
    File(PathBuf),
    /// The generated Demo City, loaded through the same PBF reader.
    DemoCity,
}

/// `osm = "builtin:demo-city"` names the generated demo city instead of a file.
const DEMO_CITY_SOURCE: &str = "builtin:demo-city";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MarketsFile {
    #[serde(rename = "market", default)]
    markets: Vec<RawMarket>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMarket {
    id: String,
    name: String,
    currency: String,
    timezone: String,
    osm: String,
    price_book: String,
    vehicles: Vec<String>,
    #[serde(default)]
    coverage: Option<Vec<(f64, f64)>>,
    #[serde(default)]
    priced_by_postcode: bool,
    #[serde(default)]
    country: Option<String>,
    #[serde(default)]
    text_countries: Option<Vec<String>>,
    #[serde(default)]
    price_book_settings: Option<toml::Table>,
    #[serde(default)]
    price_book_settings_file: Option<PathBuf>,
    #[serde(default)]
    bundles: Option<RawBundles>,
    #[serde(default)]
    bundles_by_vehicle: Option<std::collections::BTreeMap<String, RawBundles>>,
    #[serde(default)]
    courier_pay: Option<RawCourierPay>,
}

/// `[market.courier_pay]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCourierPay {
    #[serde(default)]
    per_job_minor: u32,
    #[serde(default)]
    per_km_minor: u32,
}

/// `[market.bundles]` and `[market.bundles_by_vehicle.<vehicle>]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBundles {
    max_jobs: Option<usize>,
    window_secs: Option<u32>,
    max_detour_secs: Option<u32>,
}

/// How jobs of one pickup may ride together, where a market (or one of its vehicles) says
/// other than the service's `COURIER_DISPATCH_*` settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BundleLimits {
    /// Jobs in one offer at most (1: no bundles).
    pub max_jobs: Option<usize>,
    /// Jobs ride together only when ready within this of each other.
    pub window: Option<chrono::Duration>,
    /// The most riding together may delay a drop-off, against riding alone.
    pub max_detour: Option<chrono::Duration>,
}

impl BundleLimits {
    /// These limits, with `fallback`'s where these say nothing.
    pub fn or(self, fallback: BundleLimits) -> BundleLimits {
        BundleLimits {
            max_jobs: self.max_jobs.or(fallback.max_jobs),
            window: self.window.or(fallback.window),
            max_detour: self.max_detour.or(fallback.max_detour),
        }
    }
}

fn bundle_limits(raw: RawBundles) -> Result<BundleLimits, String> {
    if raw.max_jobs == Some(0) {
        return Err("bundles: `max_jobs` must be at least 1".into());
    }
    let seconds = |s: u32| chrono::Duration::seconds(i64::from(s));
    Ok(BundleLimits {
        max_jobs: raw.max_jobs,
        window: raw.window_secs.map(seconds),
        max_detour: raw.max_detour_secs.map(seconds),
    })
}

/// One market as configured, validated.
#[derive(Debug)]
pub struct MarketDefinition {
    pub id: String,
    pub name: String,
    pub currency: Currency,
    pub timezone: chrono_tz::Tz,
    pub source: NetworkSource,
    pub price_book: String,
    /// Offered vehicles, smallest first.
    pub vehicles: Vec<Vehicle>,
    pub coverage: Option<Polygon>,
    pub priced_by_postcode: bool,
    /// ISO 3166-1 alpha-2 country: the default region for phone numbers.
    pub country: Option<String>,
    /// Countries (alpha-2) whose phone numbers customer texts may go to; by default the
    /// market's `country` alone, and none when the market has no country.
    pub text_countries: Vec<String>,
    /// The settings document handed to the market's default price book.
    pub price_book_settings: serde_json::Value,
    /// Bundles for every vehicle of the market, where the market says.
    pub bundles: BundleLimits,
    /// Bundles for one vehicle, where the market says, over `bundles`.
    pub bundles_by_vehicle: Vec<(Vehicle, BundleLimits)>,
    /// What its couriers earn, where the market says.
    pub courier_pay: Option<CourierPay>,
}

impl MarketDefinition {
    /// The bundle limits the market sets for `vehicle`: its own, then the market's.
    pub fn bundle_limits(&self, vehicle: Vehicle) -> BundleLimits {
        self.bundles_by_vehicle
            .iter()
            .find(|(v, _)| *v == vehicle)
            .map_or(self.bundles, |(_, limits)| limits.or(self.bundles))
    }
}

#[derive(Debug, Error)]
pub enum MarketsError {
    #[error("reading the markets file {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the markets file is not valid: {0}")]
    Format(String),
    #[error("market {id:?}: {reason}")]
    Market { id: String, reason: String },
}

/// Parses a markets file; relative paths in it are relative to `base_dir`.
pub fn parse(text: &str, base_dir: &Path) -> Result<Vec<MarketDefinition>, MarketsError> {
    let file: MarketsFile =
        toml::from_str(text).map_err(|e| MarketsError::Format(e.to_string()))?;
    if file.markets.is_empty() {
        return Err(MarketsError::Format("no [[market]] is defined".into()));
    }
    let mut seen = HashSet::new();
    file.markets
        .into_iter()
        .map(|raw| {
            if !seen.insert(raw.id.clone()) {
                return Err(MarketsError::Format(format!(
                    "market {:?} is defined twice",
                    raw.id
                )));
            }
            definition(raw, base_dir)
        })
        .collect()
}

fn definition(raw: RawMarket, base_dir: &Path) -> Result<MarketDefinition, MarketsError> {
    let invalid = |reason: String| MarketsError::Market {
        id: raw.id.clone(),
        reason,
    };
    if raw.id.trim().is_empty() || raw.name.trim().is_empty() {
        return Err(invalid("`id` and `name` must not be empty".into()));
    }
    let currency = Currency::from_code(&raw.currency).map_err(|e| invalid(e.to_string()))?;
    let timezone = raw
        .timezone
        .parse()
        .map_err(|_| invalid(format!("{:?} is not an IANA time zone", raw.timezone)))?;
    let source = if raw.osm == DEMO_CITY_SOURCE {
        NetworkSource::DemoCity
    } else {
        let path = base_dir.join(&raw.osm);
        if !path.is_file() {
            return Err(invalid(format!(
                "extract {} does not exist",
                path.display()
            )));
        }
        NetworkSource::File(path)
    };
    let mut vehicles = raw
        .vehicles
        .iter()
        .map(|v| v.parse::<Vehicle>().map_err(|e| invalid(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    vehicles.sort();
    vehicles.dedup();
    if vehicles.is_empty() {
        return Err(invalid("`vehicles` must name at least one vehicle".into()));
    }
    let coverage = raw
        .coverage
        .as_deref()
        .map(Polygon::from_lon_lat)
        .transpose()
        .map_err(|e| invalid(format!("coverage: {e}")))?;
    let alpha2 = |c: String| {
        if c.len() == 2 && c.bytes().all(|b| b.is_ascii_uppercase()) {
            Ok(c)
        } else {
            Err(invalid(format!(
                "country {c:?} is not an ISO 3166 alpha-2 code"
            )))
        }
    };
    let country = raw.country.map(alpha2).transpose()?;
    let text_countries = match raw.text_countries {
        Some(countries) => countries
            .into_iter()
            .map(alpha2)
            .collect::<Result<Vec<_>, _>>()?,
        None => country.iter().cloned().collect(),
    };
    let price_book_settings = match (raw.price_book_settings, raw.price_book_settings_file) {
        (Some(table), None) => serde_json::to_value(table).map_err(|e| invalid(e.to_string()))?,
        (None, Some(file)) => {
            let path = base_dir.join(file);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| invalid(format!("reading {}: {e}", path.display())))?;
            serde_json::from_str(&text)
                .map_err(|e| invalid(format!("{} is not JSON: {e}", path.display())))?
        }
        (None, None) => {
            return Err(invalid(
                "set `price_book_settings` or `price_book_settings_file`".into(),
            ));
        }
        (Some(_), Some(_)) => {
            return Err(invalid(
                "set only one of `price_book_settings` and `price_book_settings_file`".into(),
            ));
        }
    };
    let bundles = raw
        .bundles
        .map(bundle_limits)
        .transpose()
        .map_err(&invalid)?
        .unwrap_or_default();
    let mut bundles_by_vehicle = Vec::new();
    for (name, raw_limits) in raw.bundles_by_vehicle.unwrap_or_default() {
        let vehicle = name
            .parse::<Vehicle>()
            .map_err(|e| invalid(format!("bundles_by_vehicle: {e}")))?;
        if !vehicles.contains(&vehicle) {
            return Err(invalid(format!(
                "bundles_by_vehicle: the market does not offer {name}"
            )));
        }
        bundles_by_vehicle.push((vehicle, bundle_limits(raw_limits).map_err(&invalid)?));
    }
    let courier_pay = raw.courier_pay.map(|pay| CourierPay {
        per_job_minor: i64::from(pay.per_job_minor),
        per_km_minor: i64::from(pay.per_km_minor),
    });
    Ok(MarketDefinition {
        courier_pay,
        bundles,
        bundles_by_vehicle,
        id: raw.id,
        name: raw.name,
        currency,
        timezone,
        source,
        price_book: raw.price_book,
        vehicles,
        coverage,
        priced_by_postcode: raw.priced_by_postcode,
        country,
        text_countries,
        price_book_settings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
        [[market]]
        id = "demo"
        name = "Demo"
        currency = "USD"
        timezone = "Asia/Riyadh"
        osm = "builtin:demo-city"
        price_book = "standard-price-book"
        vehicles = ["van", "bicycle", "car", "bicycle"]
        country = "SA"
        [market.price_book_settings]
        schema = 1
        tax_rate_bp = 1500
    "#;

    #[test]
    fn parses_a_market_and_orders_its_vehicles() {
        let markets = parse(MINIMAL, Path::new(".")).unwrap();
        let market = &markets[0];
        assert_eq!(market.source, NetworkSource::DemoCity);
        assert_eq!(
            market.vehicles,
            vec![Vehicle::Bicycle, Vehicle::Car, Vehicle::Van]
        );
        assert_eq!(market.price_book_settings["tax_rate_bp"], 1500);
        assert_eq!(market.timezone, chrono_tz::Asia::Riyadh);
        assert_eq!(market.text_countries, vec!["SA".to_owned()]);
        assert_eq!(market.courier_pay, None, "no pay unless the market says");
    }

    #[test]
    fn a_market_may_say_what_couriers_earn() {
        let text = MINIMAL.replace(
            "country = \"SA\"",
            "country = \"SA\"\n[market.courier_pay]\nper_job_minor = 300",
        );
        let markets = parse(&text, Path::new(".")).unwrap();
        assert_eq!(
            markets[0].courier_pay,
            Some(CourierPay {
                per_job_minor: 300,
                per_km_minor: 0
            })
        );
        let unknown = MINIMAL.replace(
            "country = \"SA\"",
            "country = \"SA\"\n[market.courier_pay]\nper_hour_minor = 300",
        );
        assert!(parse(&unknown, Path::new(".")).is_err());
    }

    #[test]
    fn text_countries_can_be_listed() {
        let text = MINIMAL.replace(
            "country = \"SA\"",
            "country = \"SA\"\ntext_countries = [\"SA\", \"AE\"]",
        );
        let markets = parse(&text, Path::new(".")).unwrap();
        assert_eq!(markets[0].text_countries, vec!["SA", "AE"]);
        let text = MINIMAL.replace("country = \"SA\"", "text_countries = [\"uae\"]");
        let error = parse(&text, Path::new(".")).unwrap_err().to_string();
        assert!(error.contains("alpha-2"), "{error}");
    }

    #[test]
    fn bundles_may_be_limited_per_market_and_per_vehicle() {
        let markets = parse(MINIMAL, Path::new(".")).unwrap();
        assert_eq!(
            markets[0].bundle_limits(Vehicle::Car),
            BundleLimits::default()
        );
        let text = format!(
            "{MINIMAL}\n[market.bundles]\nmax_jobs = 2\nwindow_secs = 300\n\
             [market.bundles_by_vehicle.bicycle]\nmax_jobs = 1\n"
        );
        let market = &parse(&text, Path::new(".")).unwrap()[0];
        let five_minutes = Some(chrono::Duration::minutes(5));
        assert_eq!(
            market.bundle_limits(Vehicle::Car),
            BundleLimits {
                max_jobs: Some(2),
                window: five_minutes,
                max_detour: None,
            }
        );
        assert_eq!(
            market.bundle_limits(Vehicle::Bicycle),
            BundleLimits {
                max_jobs: Some(1),
                window: five_minutes,
                max_detour: None,
            }
        );
        let service = BundleLimits {
            max_jobs: Some(3),
            window: Some(chrono::Duration::minutes(10)),
            max_detour: Some(chrono::Duration::minutes(10)),
        };
        assert_eq!(
            market.bundle_limits(Vehicle::Van).or(service),
            BundleLimits {
                max_jobs: Some(2),
                window: five_minutes,
                max_detour: Some(chrono::Duration::minutes(10)),
            }
        );
        for (extra, expected) in [
            ("[market.bundles]\nmax_jobs = 0\n", "at least 1"),
            ("[market.bundles_by_vehicle.truck]\nmax_jobs = 1\n", "truck"),
            (
                "[market.bundles_by_vehicle.motorcycle]\nmax_jobs = 1\n",
                "does not offer",
            ),
            ("[market.bundles]\nsize = 2\n", "size"),
        ] {
            let text = format!("{MINIMAL}\n{extra}");
            let error = parse(&text, Path::new(".")).unwrap_err().to_string();
            assert!(
                error.contains(expected),
                "{error:?} should mention {expected:?}"
            );
        }
    }

    #[test]
    fn names_what_is_wrong() {
        let cases = [
            (MINIMAL.replace("\"USD\"", "\"XYZ\""), "ISO 4217"),
            (MINIMAL.replace("Asia/Riyadh", "Mars/Base"), "IANA"),
            (MINIMAL.replace("\"van\"", "\"truck\""), "truck"),
            (
                MINIMAL.replace("builtin:demo-city", "missing.osm.pbf"),
                "does not exist",
            ),
            (MINIMAL.replace("\"SA\"", "\"sau\""), "alpha-2"),
            (
                MINIMAL.replace("[market.price_book_settings]", "[market.other]"),
                "other",
            ),
            (format!("{MINIMAL}\n{MINIMAL}"), "defined twice"),
            (String::new(), "no [[market]]"),
        ];
        for (text, expected) in cases {
            let error = parse(&text, Path::new(".")).unwrap_err().to_string();
            assert!(
                error.contains(expected),
                "{error:?} should mention {expected:?}"
            );
        }
    }
}
