//! The loaded road network: topology, per-vehicle routing graphs, snapping and coverage.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::coords::LatLon;
use crate::graph::RoadGraph;
use crate::osm::{self, OsmExtract};
use crate::places::PlaceIndex;
use crate::polygon::Polygon;
use crate::route::{self, Engine, Route, RouteError};
use crate::routing_graph::RoutingGraph;
use crate::snap::Snapper;
use crate::vehicle::Vehicle;

/// Margin around the roads when they are too few to span a hull (~500 m, the snap radius).
const DEGENERATE_AREA_MARGIN_DEGREES: f64 = 0.0045;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot open {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the OpenStreetMap PBF data: {0}")]
    Pbf(#[from] osmpbf::Error),
    #[error("the extract contains no roads usable by the requested vehicles")]
    NoRoads,
}

/// What to prepare when loading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// Vehicles to prepare routing for; routing any other vehicle fails with
    /// [`RouteError::VehicleNotPrepared`]. Defaults to every vehicle.
    pub vehicles: Vec<Vehicle>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            vehicles: Vehicle::ALL.to_vec(),
        }
    }
}

/// Sizes and build timings of a loaded network.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkStats {
    /// Graph nodes (junctions and way ends) over all prepared vehicles.
    pub junctions: usize,
    /// Undirected road edges between junctions.
    pub road_edges: usize,
    /// Coordinates kept for route shapes, bends included.
    pub shape_points: usize,
    pub places: usize,
    pub parse_time: Duration,
    /// Topology, snapping index, coverage and places.
    pub build_time: Duration,
    /// Wall-clock time of all contraction-hierarchy preparations (they run in parallel).
    pub prepare_time: Duration,
    pub profiles: Vec<ProfileStats>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProfileStats {
    pub vehicle: Vehicle,
    /// Junctions this vehicle can use.
    pub nodes: usize,
    /// Directed arcs (a two-way street counts twice).
    pub arcs: usize,
    /// Junctions in the largest strongly connected part, the only part routes snap to.
    pub connected_nodes: usize,
    /// Arcs in the contraction hierarchy, shortcuts included.
    pub hierarchy_arcs: usize,
    pub prepare_time: Duration,
}

/// A routable road network with its places, built once from an extract and shared (it is
/// `Send + Sync`; wrap it in an `Arc`).
pub struct RoadNetwork {
    graph: RoadGraph,
    snapper: Snapper,
    routing: Vec<RoutingGraph>,
    area: Polygon,
    places: PlaceIndex,
    stats: NetworkStats,
}

impl std::fmt::Debug for RoadNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoadNetwork")
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl RoadNetwork {
    /// Loads an `.osm.pbf` file, preparing every vehicle.
    pub fn from_pbf_file(path: &Path) -> Result<Self, LoadError> {
        Self::from_pbf_file_with(path, &LoadOptions::default())
    }

    /// Loads PBF bytes (for example [`crate::demo_city_pbf`]), preparing every vehicle.
    pub fn from_pbf_bytes(bytes: &[u8]) -> Result<Self, LoadError> {
        Self::from_pbf_bytes_with(bytes, &LoadOptions::default())
    }

    pub fn from_pbf_file_with(path: &Path, options: &LoadOptions) -> Result<Self, LoadError> {
        let started = Instant::now();
        let file = File::open(path).map_err(|source| LoadError::Open {
            path: path.to_owned(),
            source,
        })?;
        let extract = osm::read_pbf(BufReader::new(file))?;
        Self::from_extract(&extract, options, started.elapsed())
    }

    pub fn from_pbf_bytes_with(bytes: &[u8], options: &LoadOptions) -> Result<Self, LoadError> {
        let started = Instant::now();
        let extract = osm::read_pbf(bytes)?;
        Self::from_extract(&extract, options, started.elapsed())
    }

    pub(crate) fn from_extract(
        extract: &OsmExtract,
        options: &LoadOptions,
        parse_time: Duration,
    ) -> Result<Self, LoadError> {
        let mut vehicles = options.vehicles.clone();
        vehicles.sort();
        vehicles.dedup();

        let build_started = Instant::now();
        let graph = RoadGraph::build(extract, &vehicles);
        if graph.edges.is_empty() {
            return Err(LoadError::NoRoads);
        }
        let area = Polygon::covering(graph.points(), DEGENERATE_AREA_MARGIN_DEGREES)
            .ok_or(LoadError::NoRoads)?;
        let mut build_time = build_started.elapsed();

        let prepare_started = Instant::now();
        let ((routing, snapper), (places, places_time)) = rayon::join(
            || {
                rayon::join(
                    || {
                        vehicles
                            .par_iter()
                            .map(|&vehicle| RoutingGraph::build(&graph, vehicle))
                            .collect::<Vec<_>>()
                    },
                    || Snapper::new(&graph),
                )
            },
            || {
                let started = Instant::now();
                (PlaceIndex::build(extract), started.elapsed())
            },
        );
        let prepare_time = prepare_started.elapsed();
        build_time += places_time;

        let stats = NetworkStats {
            junctions: graph.node_positions.len(),
            road_edges: graph.edges.len(),
            shape_points: graph.points().len(),
            places: places.len(),
            parse_time,
            build_time,
            prepare_time,
            profiles: routing
                .iter()
                .map(|r| ProfileStats {
                    vehicle: r.vehicle,
                    nodes: r.stats.nodes,
                    arcs: r.stats.arcs,
                    connected_nodes: r.stats.core_nodes,
                    hierarchy_arcs: r.stats.hierarchy_arcs,
                    prepare_time: r.stats.preparation,
                })
                .collect(),
        };
        Ok(Self {
            graph,
            snapper,
            routing,
            area,
            places,
            stats,
        })
    }

    /// The fastest route for `vehicle`, answered by the contraction hierarchy.
    pub fn route(&self, vehicle: Vehicle, from: LatLon, to: LatLon) -> Result<Route, RouteError> {
        self.route_with(Engine::Hierarchy, vehicle, from, to)
    }

    /// The same route computed with plain Dijkstra: much slower, kept as the reference the
    /// hierarchy is verified against.
    pub fn route_reference(
        &self,
        vehicle: Vehicle,
        from: LatLon,
        to: LatLon,
    ) -> Result<Route, RouteError> {
        self.route_with(Engine::Dijkstra, vehicle, from, to)
    }

    fn route_with(
        &self,
        engine: Engine,
        vehicle: Vehicle,
        from: LatLon,
        to: LatLon,
    ) -> Result<Route, RouteError> {
        let routing = self
            .routing
            .iter()
            .find(|r| r.vehicle == vehicle)
            .ok_or(RouteError::VehicleNotPrepared(vehicle))?;
        route::route(&self.graph, &self.snapper, routing, engine, from, to)
    }

    /// Vehicles this network can route, smallest first.
    pub fn vehicles(&self) -> Vec<Vehicle> {
        self.routing.iter().map(|r| r.vehicle).collect()
    }

    /// The convex hull of every road coordinate: a default coverage area. (A network whose
    /// roads all lie on one line gets their bounding box plus ~500 m instead.)
    pub fn network_area(&self) -> &Polygon {
        &self.area
    }

    pub fn places(&self) -> &PlaceIndex {
        &self.places
    }

    pub fn stats(&self) -> NetworkStats {
        self.stats.clone()
    }
}

#[cfg(test)]
mod tests;
