//! Markets: where the service operates, each with its road network, currency, time zone and
//! price book. Every lookup by location goes through [`Markets`], so how markets are found
//! (and, later, which process serves which) stays behind this one interface.

mod file;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use courier_geo::{
    ExtractSource, LatLon, LoadError, LoadOptions, Origin, Place, PrepareReport, Progress,
    RoadNetwork, Route, RouteError, Vehicle,
};
use thiserror::Error;

pub use file::{BundleLimits, MarketDefinition, MarketsError, NetworkSource};

use courier_domain::error::Code;
use courier_domain::error::ErrorCode;

pub const NOT_READY: Code = Code::new(
    503,
    "lookup.not_ready",
    "The market's road network is still loading (lookups, quotes).",
);
pub const UNAVAILABLE: Code = Code::new(
    503,
    "lookup.unavailable",
    "The market's road network failed to load (see the log).",
);
pub const MARKET_NOT_FOUND: Code = Code::new(404, "market.not_found", "No such market.");

/// A finished step of preparing a market's network (see [`Market::prepare`]).
pub use courier_geo::Step as PrepareStep;

/// The built-in demo market, used when no markets file is configured.
const DEMO_MARKETS: &str = include_str!("demo.toml");

/// Why a journey cannot be routed. Quotes and the route lookup share these.
#[derive(Debug, Error, PartialEq, Eq, ErrorCode)]
pub enum RoutingError {
    #[error("the pickup is outside every served area")]
    #[code(courier_domain::quote::ORIGIN_NOT_COVERED)]
    OriginNotCovered,
    #[error("the drop-off is outside the pickup's served area")]
    #[code(courier_domain::quote::DESTINATION_NOT_COVERED)]
    DestinationNotCovered,
    #[error("the {0} vehicle is not offered in this market")]
    #[code(courier_domain::quote::VEHICLE_NOT_AVAILABLE)]
    VehicleNotAvailable(&'static str),
    #[error("there is no route between these points for a {0}")]
    #[code(courier_domain::quote::NO_ROUTE)]
    NoRoute(&'static str),
    #[error("the road network is still loading; try again shortly")]
    #[code(NOT_READY)]
    NotReady,
    #[error("the road network of this market could not be loaded")]
    #[code(UNAVAILABLE)]
    Unavailable,
}

/// A market's road network: loading, loaded, or failed to load.
#[derive(Default)]
struct NetworkSlot {
    loaded: OnceLock<Result<Arc<RoadNetwork>, String>>,
}

pub struct Market {
    pub definition: MarketDefinition,
    network: NetworkSlot,
}

impl std::fmt::Debug for Market {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Market")
            .field("id", &self.definition.id)
            .finish_non_exhaustive()
    }
}

impl Market {
    pub fn id(&self) -> &str {
        &self.definition.id
    }

    /// The smallest vehicle offered.
    pub fn smallest_vehicle(&self) -> Vehicle {
        self.definition.vehicles[0]
    }

    pub fn offers(&self, vehicle: Vehicle) -> bool {
        self.definition.vehicles.contains(&vehicle)
    }

    pub fn network(&self) -> Result<&Arc<RoadNetwork>, RoutingError> {
        match self.network.loaded.get() {
            None => Err(RoutingError::NotReady),
            Some(Ok(network)) => Ok(network),
            Some(Err(_)) => Err(RoutingError::Unavailable),
        }
    }

    /// Whether `point` is served: inside the configured coverage, else inside the area of the
    /// road network.
    pub fn covers(&self, point: LatLon) -> Result<bool, RoutingError> {
        match &self.definition.coverage {
            Some(polygon) => Ok(polygon.contains(point)),
            None => Ok(self.network()?.network_area().contains(point)),
        }
    }

    /// A route for `vehicle` between two points this market covers.
    pub fn route(&self, vehicle: Vehicle, from: LatLon, to: LatLon) -> Result<Route, RoutingError> {
        if !self.offers(vehicle) {
            return Err(RoutingError::VehicleNotAvailable(vehicle.as_str()));
        }
        if !self.covers(to)? {
            return Err(RoutingError::DestinationNotCovered);
        }
        self.network()?
            .route(vehicle, from, to)
            .map_err(|e| match e {
                RouteError::TooFarFromRoad { .. } | RouteError::NoRoute(_) => {
                    RoutingError::NoRoute(vehicle.as_str())
                }
                other => {
                    tracing::error!(market = self.id(), error = %other, "routing failed");
                    RoutingError::NoRoute(vehicle.as_str())
                }
            })
    }

    /// Where this market's prepared network lives under `dir`: the market id when it is a
    /// plain file name, else its bytes in hex.
    pub fn prepared_path(&self, dir: &Path) -> PathBuf {
        let id = self.id();
        let plain = id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        let name = if plain {
            id.to_owned()
        } else {
            id.bytes().map(|b| format!("{b:02x}")).collect()
        };
        dir.join(format!("{name}.network"))
    }

    /// Only the vehicles the market offers: each profile costs load time and memory.
    fn load_options(&self) -> LoadOptions {
        LoadOptions {
            vehicles: self.definition.vehicles.clone(),
        }
    }

    /// Builds this market's network from its extract and writes it under `dir`, reporting
    /// each step to `progress`.
    pub fn prepare(
        &self,
        dir: &Path,
        progress: Progress,
    ) -> Result<(RoadNetwork, PrepareReport), LoadError> {
        let options = self.load_options();
        let path = self.prepared_path(dir);
        match &self.definition.source {
            NetworkSource::File(extract) => {
                RoadNetwork::prepare(ExtractSource::File(extract), &options, &path, progress)
            }
            NetworkSource::DemoCity => {
                let bytes = courier_geo::demo_city_pbf();
                RoadNetwork::prepare(ExtractSource::Bytes(&bytes), &options, &path, progress)
            }
        }
    }

    fn load(&self, prepared_dir: Option<&Path>) {
        let started = Instant::now();
        let options = self.load_options();
        let demo_bytes;
        let source = match &self.definition.source {
            NetworkSource::File(path) => ExtractSource::File(path),
            NetworkSource::DemoCity => {
                demo_bytes = courier_geo::demo_city_pbf();
                ExtractSource::Bytes(&demo_bytes)
            }
        };
        let loaded = match prepared_dir {
            Some(dir) => RoadNetwork::load_or_prepare(source, &options, &self.prepared_path(dir))
                .map(|(network, report)| {
                    match &report.origin {
                        Origin::Prepared {
                            written: false,
                            reason,
                        } => tracing::warn!(
                            market = self.id(),
                            reason,
                            "the road network was built but could not be written to the data folder"
                        ),
                        origin => tracing::info!(
                            market = self.id(),
                            ?origin,
                            ?report,
                            "prepared road network"
                        ),
                    }
                    network
                }),
            None => match source {
                ExtractSource::File(path) => RoadNetwork::from_pbf_file_with(path, &options),
                ExtractSource::Bytes(bytes) => RoadNetwork::from_pbf_bytes_with(bytes, &options),
            },
        };
        let outcome = match loaded {
            Ok(network) => {
                let stats = network.stats();
                tracing::info!(
                    market = self.id(),
                    seconds = started.elapsed().as_secs_f64(),
                    places = network.places().len(),
                    ?stats,
                    "road network loaded"
                );
                Ok(Arc::new(network))
            }
            Err(e) => {
                tracing::error!(market = self.id(), error = %e, "loading the road network failed");
                Err(e.to_string())
            }
        };
        let _ = self.network.loaded.set(outcome);
    }
}

/// All markets of this process.
#[derive(Debug)]
pub struct Markets {
    markets: Vec<Arc<Market>>,
}

impl Markets {
    /// The markets of `file`, or the built-in demo market when `file` is None. Networks are
    /// not loaded yet: see [`Markets::load_networks`].
    pub fn from_file(file: Option<&Path>) -> Result<Self, MarketsError> {
        let definitions = match file {
            None => file::parse(DEMO_MARKETS, Path::new("."))?,
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| MarketsError::Read {
                    path: path.display().to_string(),
                    source,
                })?;
                file::parse(&text, path.parent().unwrap_or(Path::new(".")))?
            }
        };
        Ok(Self::from_definitions(definitions))
    }

    pub fn from_definitions(definitions: Vec<MarketDefinition>) -> Self {
        Self {
            markets: definitions
                .into_iter()
                .map(|definition| {
                    Arc::new(Market {
                        definition,
                        network: NetworkSlot::default(),
                    })
                })
                .collect(),
        }
    }

    /// Loads every market's road network, one after another (each load is itself parallel).
    /// Blocking; lookups answer `NotReady` for a market until its network is in.
    /// With `prepared_dir`, each network is mapped from its prepared file there when that
    /// matches the extract, and built and written there otherwise.
    pub fn load_networks(&self, prepared_dir: Option<&Path>) {
        for market in &self.markets {
            market.load(prepared_dir);
        }
    }

    pub fn all(&self) -> &[Arc<Market>] {
        &self.markets
    }

    pub fn get(&self, id: &str) -> Option<&Arc<Market>> {
        self.markets.iter().find(|m| m.id() == id)
    }

    /// The market serving `point`. A market whose coverage is not known yet (its network is
    /// still loading) makes the answer `NotReady` rather than a wrong "not covered".
    pub fn locate(&self, point: LatLon) -> Result<&Arc<Market>, RoutingError> {
        let mut not_ready = false;
        for market in &self.markets {
            match market.covers(point) {
                Ok(true) => return Ok(market),
                Ok(false) | Err(RoutingError::Unavailable) => {}
                Err(_) => not_ready = true,
            }
        }
        Err(if not_ready {
            RoutingError::NotReady
        } else {
            RoutingError::OriginNotCovered
        })
    }

    /// Places matching `query`: from the market around `near` when given, else from every
    /// market, best matches of each interleaved.
    pub fn search_places(
        &self,
        query: &str,
        near: Option<LatLon>,
        limit: usize,
    ) -> Result<Vec<Place>, RoutingError> {
        if let Some(point) = near
            && let Ok(market) = self.locate(point)
        {
            return Ok(market.network()?.places().search(query, near, limit));
        }
        let mut per_market = Vec::with_capacity(self.markets.len());
        for market in &self.markets {
            per_market.push(market.network()?.places().search(query, near, limit));
        }
        let mut merged = Vec::with_capacity(limit);
        for rank in 0.. {
            let mut any = false;
            for results in &per_market {
                if let Some(place) = results.get(rank) {
                    any = true;
                    if merged.len() < limit {
                        merged.push(place.clone());
                    }
                }
            }
            if !any || merged.len() >= limit {
                break;
            }
        }
        Ok(merged)
    }

    /// The address (else street) nearest `point`, in the market serving it.
    pub fn reverse_place(&self, point: LatLon) -> Result<Option<Place>, RoutingError> {
        match self.locate(point) {
            Ok(market) => Ok(market.network()?.places().reverse(point)),
            Err(RoutingError::OriginNotCovered) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo() -> Markets {
        Markets::from_file(None).unwrap()
    }

    #[test]
    fn lookups_say_not_ready_until_the_network_is_loaded() {
        let markets = demo();
        let point = LatLon::new(20.005, 50.005);
        assert_eq!(markets.locate(point).unwrap_err(), RoutingError::NotReady);
        assert_eq!(
            markets.search_places("4th Street", None, 5).unwrap_err(),
            RoutingError::NotReady
        );
        markets.load_networks(None);
        assert_eq!(markets.locate(point).unwrap().id(), "demo");
    }

    #[test]
    fn the_demo_market_covers_demo_city_only() {
        let markets = demo();
        markets.load_networks(None);
        assert!(markets.locate(LatLon::new(20.01, 50.01)).is_ok());
        assert_eq!(
            markets.locate(LatLon::new(47.14, 9.52)).unwrap_err(),
            RoutingError::OriginNotCovered
        );
        let market = markets.get("demo").unwrap();
        assert_eq!(market.smallest_vehicle(), Vehicle::Bicycle);
        assert_eq!(
            market
                .route(
                    Vehicle::Car,
                    LatLon::new(20.01, 50.01),
                    LatLon::new(47.14, 9.52)
                )
                .unwrap_err(),
            RoutingError::DestinationNotCovered
        );
    }
}
