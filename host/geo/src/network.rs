//! The loaded road network: topology, per-vehicle routing graphs, snapping and coverage.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::coords::LatLon;
use crate::graph::RoadGraph;
use crate::osm::{self, OsmExtract};
use crate::places::PlaceIndex;
use crate::polygon::Polygon;
use crate::route::{self, Engine, Route, RouteError, RoutingContext};
use crate::routing_graph::{EdgeTimes, RoutingGraph};
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
    #[error(transparent)]
    Prepared(#[from] crate::storage::StorageError),
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

/// One finished step of building a network, for progress lines: `count` `unit`s done in
/// `seconds`.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub what: String,
    pub seconds: f64,
    pub count: u64,
    pub unit: &'static str,
}

/// Receives [`Step`]s as they finish (from several threads).
pub type Progress<'a> = &'a (dyn Fn(Step) + Sync);

/// A [`Progress`] that ignores every step.
pub fn no_progress(_: Step) {}

/// Sizes and build timings of a loaded network.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NetworkStats {
    /// Graph nodes (junctions and way ends) over all prepared vehicles.
    pub junctions: usize,
    /// Undirected road edges between junctions.
    pub road_edges: usize,
    /// Coordinates kept for route shapes, bends included.
    pub shape_points: usize,
    pub places: usize,
    /// Via-way turn restrictions, which are not modelled.
    pub restrictions_via_way: usize,
    /// Turn restrictions whose members are missing, unusable or do not meet at the via node.
    pub restrictions_unresolved: usize,
    pub parse_time: Duration,
    /// Cutting ways into the road graph and computing the coverage area.
    pub build_time: Duration,
    /// Building the places index (alongside the preparation, so included in `prepare_time`).
    pub places_time: Duration,
    /// Wall-clock time of the parallel phase: every vehicle's contraction hierarchy, the
    /// snapping index and the places index.
    pub prepare_time: Duration,
    pub profiles: Vec<ProfileStats>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// Junctions this vehicle cannot pass (barriers).
    pub barriers: usize,
    /// Junctions where turn restrictions bind this vehicle.
    pub restricted_junctions: usize,
    pub preparation: Preparation,
    /// Time to prepare this vehicle's hierarchy (shared hierarchies report their owner's).
    pub prepare_time: Duration,
}

/// How a vehicle's contraction hierarchy was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Preparation {
    /// Contracted from scratch.
    Contracted,
    /// Contracted in the order computed for this vehicle, whose roads are the same but whose
    /// travel times differ (electric bicycle after bicycle, van after car).
    OrderOf(Vehicle),
    /// The same hierarchy as this vehicle's: travel times are identical on every road.
    SharedWith(Vehicle),
}

/// A routable road network with its places, built once from an extract and shared (it is
/// `Send + Sync`; wrap it in an `Arc`).
pub struct RoadNetwork {
    pub(crate) graph: RoadGraph,
    pub(crate) snapper: Snapper,
    /// Per prepared vehicle, smallest first; vehicles with identical times share a graph.
    pub(crate) routing: Vec<(Vehicle, Arc<RoutingGraph>)>,
    pub(crate) area: Polygon,
    pub(crate) places: PlaceIndex,
    pub(crate) stats: NetworkStats,
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
        Self::from_pbf_file_reporting(path, options, &no_progress)
    }

    pub(crate) fn from_pbf_file_reporting(
        path: &Path,
        options: &LoadOptions,
        progress: Progress,
    ) -> Result<Self, LoadError> {
        let started = Instant::now();
        let extract = osm::read_pbf(|| {
            let file = File::open(path).map_err(|source| LoadError::Open {
                path: path.to_owned(),
                source,
            })?;
            Ok::<_, LoadError>(BufReader::new(file))
        })?;
        Self::from_extract(&extract, options, started.elapsed(), progress)
    }

    pub fn from_pbf_bytes_with(bytes: &[u8], options: &LoadOptions) -> Result<Self, LoadError> {
        Self::from_pbf_bytes_reporting(bytes, options, &no_progress)
    }

    pub(crate) fn from_pbf_bytes_reporting(
        bytes: &[u8],
        options: &LoadOptions,
        progress: Progress,
    ) -> Result<Self, LoadError> {
        let started = Instant::now();
        let extract = osm::read_pbf(|| Ok::<_, LoadError>(bytes))?;
        Self::from_extract(&extract, options, started.elapsed(), progress)
    }

    pub(crate) fn from_extract(
        extract: &OsmExtract,
        options: &LoadOptions,
        parse_time: Duration,
        progress: Progress,
    ) -> Result<Self, LoadError> {
        progress(Step {
            what: "read the extract".into(),
            seconds: parse_time.as_secs_f64(),
            count: extract.node_positions.len() as u64,
            unit: "nodes",
        });
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
        let build_time = build_started.elapsed();
        progress(Step {
            what: "built the road graph".into(),
            seconds: build_time.as_secs_f64(),
            count: graph.edges.len() as u64,
            unit: "road edges",
        });

        let prepare_started = Instant::now();
        let ((prepared, snapper), (places, places_time)) = rayon::join(
            || {
                rayon::join(
                    || prepare_vehicles(&graph, &vehicles, progress),
                    || {
                        let started = Instant::now();
                        let snapper = Snapper::new(&graph);
                        progress(Step {
                            what: "indexed road segments for snapping".into(),
                            seconds: started.elapsed().as_secs_f64(),
                            count: graph.points().len() as u64,
                            unit: "points",
                        });
                        snapper
                    },
                )
            },
            || {
                let started = Instant::now();
                let places = PlaceIndex::build(extract);
                progress(Step {
                    what: "indexed places".into(),
                    seconds: started.elapsed().as_secs_f64(),
                    count: places.len() as u64,
                    unit: "places",
                });
                (places, started.elapsed())
            },
        );
        let prepare_time = prepare_started.elapsed();

        let stats = NetworkStats {
            junctions: graph.node_positions.len(),
            road_edges: graph.edges.len(),
            shape_points: graph.points().len(),
            places: places.len(),
            restrictions_via_way: graph.skipped_restrictions.via_way,
            restrictions_unresolved: graph.skipped_restrictions.unresolved,
            parse_time,
            build_time,
            places_time,
            prepare_time,
            profiles: prepared
                .iter()
                .map(|(vehicle, routing, preparation)| ProfileStats {
                    vehicle: *vehicle,
                    nodes: routing.stats.nodes,
                    arcs: routing.stats.arcs,
                    connected_nodes: routing.stats.core_nodes,
                    hierarchy_arcs: routing.stats.hierarchy_arcs,
                    barriers: routing.stats.barriers,
                    restricted_junctions: routing.stats.restricted_junctions,
                    preparation: *preparation,
                    prepare_time: routing.stats.preparation,
                })
                .collect(),
        };
        Ok(Self {
            graph,
            snapper,
            routing: prepared
                .into_iter()
                .map(|(vehicle, routing, _)| (vehicle, routing))
                .collect(),
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
        let (_, routing) = self
            .routing
            .iter()
            .find(|(v, _)| *v == vehicle)
            .ok_or(RouteError::VehicleNotPrepared(vehicle))?;
        let context = RoutingContext {
            graph: &self.graph,
            snapper: &self.snapper,
            routing,
            vehicle,
        };
        route::route(&context, engine, from, to)
    }

    /// Vehicles this network can route, smallest first.
    pub fn vehicles(&self) -> Vec<Vehicle> {
        self.routing.iter().map(|(vehicle, _)| *vehicle).collect()
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

/// How one vehicle's routing graph is obtained, by index into the prepared vehicles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    Contract,
    ContractInOrderOf(usize),
    ShareWith(usize),
}

/// Prepares routing for `vehicles` (sorted, distinct): vehicles with identical travel times
/// share one graph, and a vehicle whose roads match an earlier one's reuses its contraction
/// order. Graphs contracted from scratch are built in parallel first, the reordered ones after.
fn prepare_vehicles(
    graph: &RoadGraph,
    vehicles: &[Vehicle],
    progress: Progress,
) -> Vec<(Vehicle, Arc<RoutingGraph>, Preparation)> {
    let times: Vec<EdgeTimes> = vehicles
        .par_iter()
        .map(|&vehicle| EdgeTimes::for_vehicle(graph, vehicle))
        .collect();
    let mut plans: Vec<Plan> = Vec::with_capacity(vehicles.len());
    for i in 0..vehicles.len() {
        let identical = (0..i).find(|&j| times[j] == times[i]);
        let same_roads =
            (0..i).find(|&j| plans[j] == Plan::Contract && times[j].same_topology(&times[i]));
        plans.push(match (identical, same_roads) {
            (Some(j), _) => Plan::ShareWith(j),
            (None, Some(j)) => Plan::ContractInOrderOf(j),
            (None, None) => Plan::Contract,
        });
    }

    let mut times: Vec<Option<EdgeTimes>> = times.into_iter().map(Some).collect();
    let mut prepared: Vec<Option<Arc<RoutingGraph>>> = vec![None; vehicles.len()];
    let stages: [fn(Plan) -> bool; 2] = [
        |plan| plan == Plan::Contract,
        |plan| matches!(plan, Plan::ContractInOrderOf(_)),
    ];
    for in_stage in stages {
        let jobs: Vec<(usize, EdgeTimes, Option<Arc<RoutingGraph>>)> = (0..vehicles.len())
            .filter(|&i| in_stage(plans[i]))
            .map(|i| {
                let donor = match plans[i] {
                    Plan::ContractInOrderOf(j) => prepared[j].clone(),
                    _ => None,
                };
                let edge_times = times[i].take().expect("each vehicle is prepared once");
                (i, edge_times, donor)
            })
            .collect();
        let done: Vec<(usize, RoutingGraph)> = jobs
            .into_par_iter()
            .map(|(i, edge_times, donor)| {
                let routing = RoutingGraph::prepare(graph, edge_times, donor.as_deref());
                progress(Step {
                    what: format!("contracted the {} hierarchy", vehicles[i]),
                    seconds: routing.stats.preparation.as_secs_f64(),
                    count: routing.stats.hierarchy_arcs as u64,
                    unit: "arcs",
                });
                (i, routing)
            })
            .collect();
        for (i, routing) in done {
            prepared[i] = Some(Arc::new(routing));
        }
    }

    plans
        .iter()
        .enumerate()
        .map(|(i, plan)| {
            let (owner, preparation) = match *plan {
                Plan::Contract => (i, Preparation::Contracted),
                Plan::ContractInOrderOf(j) => (i, Preparation::OrderOf(vehicles[j])),
                Plan::ShareWith(j) => (j, Preparation::SharedWith(vehicles[j])),
            };
            let routing = prepared[owner].clone().expect("every plan was carried out");
            (vehicles[i], routing, preparation)
        })
        .collect()
}

#[cfg(test)]
mod tests;
