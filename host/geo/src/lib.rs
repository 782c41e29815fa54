//! Road networks, routing and places from OpenStreetMap extracts.
//!
//! A [`RoadNetwork`] is loaded once from an `.osm.pbf` extract (a file or bytes) and then shared
//! between threads (it is `Send + Sync`):
//!
//! ```no_run
//! use courier_geo::{LatLon, RoadNetwork, Vehicle};
//!
//! let network = RoadNetwork::from_pbf_file("liechtenstein.osm.pbf".as_ref())?;
//! let route = network.route(
//!     Vehicle::Car,
//!     LatLon::new(47.1410, 9.5209),
//!     LatLon::new(47.1650, 9.5097),
//! )?;
//! println!("{} m, {} s", route.distance_metres, route.duration_seconds);
//! let hits = network.places().search("Städtle 1 Vaduz", None, 5);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Public surface
//!
//! - [`LatLon`], [`Polygon`] (coverage areas; [`RoadNetwork::network_area`] is the convex hull
//!   of the roads, markets may build their own with [`Polygon::from_lon_lat`]).
//! - [`Vehicle`]: `bicycle`, `electric_bicycle`, `motorcycle`, `car`, `van`, ordered smallest
//!   first (see the vehicle rules below).
//! - [`RoadNetwork::from_pbf_file`] / [`RoadNetwork::from_pbf_bytes`] (every vehicle) or the
//!   `_with` variants taking [`LoadOptions`] (a subset of vehicles) → [`LoadError`];
//!   [`RoadNetwork::stats`] → [`NetworkStats`] (sizes and build timings per vehicle).
//! - [`RoadNetwork::route`] → [`Route`] (metres, seconds, shape) or [`RouteError`]. Endpoints
//!   are snapped to the nearest road the vehicle may use within [`MAX_SNAP_DISTANCE_METRES`];
//!   farther away is [`RouteError::TooFarFromRoad`]. Routes start and end at the projections of
//!   the endpoints onto their roads. [`RoadNetwork::route_reference`] answers the same query
//!   with plain Dijkstra (slow; for verification).
//! - [`RoadNetwork::streets_in`]: the roads inside a box, simplified, for drawing a base map.
//! - [`PlaceIndex::search`] (free text) and [`PlaceIndex::reverse`] (nearest address within
//!   [`REVERSE_ADDRESS_RADIUS_METRES`], else nearest named street within
//!   [`REVERSE_STREET_RADIUS_METRES`]) → [`Place`]; [`PlaceIndex::street_at`] (the street
//!   only, never the door).
//! - [`demo_city_pbf`]: a generated fictional city in PBF format; [`grid_city_pbf`]: larger
//!   plain grids for capacity measurements.
//!
//! # Vehicle rules (summary)
//!
//! Motor vehicles use public roads from motorways down to service roads, tracks and pedestrian
//! streets only when tagged for them; bicycles use everything but motorways and `motorroad=yes`
//! roads, plus cycleways and paths, and are pushed at walking pace on footways and pedestrian
//! streets unless riding is allowed there. `access` tags refine this per vehicle (most specific
//! key wins), one-way rules follow `oneway`, roundabouts and motorways with bicycle contraflow
//! exceptions, and speeds come from `maxspeed` or class defaults, capped per vehicle. Via-node
//! turn restrictions (`no_*`, `only_*`, per vehicle with `except`) and barriers on nodes
//! (bollards stop cars, not bicycles) are honoured. The full rules (tables of classes, access
//! keys and values, speeds, restrictions and barriers) are on [`Vehicle`].
//!
//! # How routing works
//!
//! Ways are cut at shared nodes into edges that keep every bend. A junction where a vehicle has
//! turn rules (a barrier or a restriction) is replaced, for that vehicle, by one copy per road
//! arriving at it, and each copy keeps only the turns allowed after that arrival, so plain
//! shortest-path searches honour the rules. Each vehicle gets travel-time
//! weights (milliseconds) and a contraction hierarchy ([`fast_paths`]), prepared in parallel at
//! load time; vehicles with identical weights share one, and a vehicle using the same roads as
//! another with different speeds reuses its contraction order ([`Preparation`]). Only the
//! largest strongly connected part of each vehicle's graph is used for snapping, so a point
//! next to an isolated car park still gets a route.

mod arc;
mod coords;
mod demo_city;
mod dijkstra;
mod graph;
mod hierarchy;
mod junction_rules;
mod network;
mod osm;
mod pbf_writer;
mod places;
mod polygon;
mod prepared;
mod profile;
mod route;
mod routing_graph;
mod segment_grid;
mod snap;
mod storage;
mod streets;
mod turns;
mod vehicle;

pub use coords::LatLon;
pub use demo_city::{demo_city_pbf, grid_city_pbf};
pub use network::{
    LoadError, LoadOptions, NetworkStats, Preparation, ProfileStats, Progress, RoadNetwork, Step,
    no_progress,
};
pub use places::{Place, PlaceIndex, REVERSE_ADDRESS_RADIUS_METRES, REVERSE_STREET_RADIUS_METRES};
pub use polygon::{Polygon, PolygonError};
pub use prepared::{ExtractSource, Origin, PrepareReport, RULES_VERSION};
pub use route::{Endpoint, Route, RouteError};
pub use snap::MAX_SNAP_DISTANCE_METRES;
pub use storage::{FORMAT_VERSION, StorageError};
pub use vehicle::{UnknownVehicle, Vehicle};

#[cfg(test)]
mod send_sync {
    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn network_is_shareable_between_threads() {
        assert_send_sync::<super::RoadNetwork>();
    }
}
