//! Point-to-point routes: snapping both ends, searching, and assembling distance, duration and
//! the travelled shape.

use crate::arc::Millis;
use crate::coords::LatLon;
use crate::graph::RoadGraph;
use crate::routing_graph::{EdgeEnd, RoadPath, RoutingGraph};
use crate::snap::{MAX_SNAP_DISTANCE_METRES, Snap, Snapper};
use crate::vehicle::Vehicle;

/// A route between two coordinates for one vehicle.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub distance_metres: u32,
    pub duration_seconds: u32,
    /// Every road bend in travel order, from the origin's projection onto its road to the
    /// destination's projection onto its road; always at least two points.
    pub shape: Vec<LatLon>,
}

/// Which end of a route a problem concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Origin,
    Destination,
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Endpoint::Origin => "origin",
            Endpoint::Destination => "destination",
        })
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RouteError {
    #[error("the {endpoint} ({coordinate:?}) is not a valid latitude/longitude")]
    InvalidCoordinate {
        endpoint: Endpoint,
        coordinate: LatLon,
    },
    #[error("the {endpoint} is more than {max_metres} m from any road a {vehicle} may use")]
    TooFarFromRoad {
        endpoint: Endpoint,
        vehicle: Vehicle,
        max_metres: u32,
    },
    #[error("the road network was not prepared for {0}")]
    VehicleNotPrepared(Vehicle),
    #[error("no road connects the origin to the destination for a {0}")]
    NoRoute(Vehicle),
}

/// Which shortest-path engine answers a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Engine {
    Hierarchy,
    Dijkstra,
}

/// The road, snapping index and `vehicle`'s routing graph a query runs on.
pub(crate) struct RoutingContext<'a> {
    pub(crate) graph: &'a RoadGraph,
    pub(crate) snapper: &'a Snapper,
    pub(crate) routing: &'a RoutingGraph,
    pub(crate) vehicle: Vehicle,
}

pub(crate) fn route(
    context: &RoutingContext,
    engine: Engine,
    from: LatLon,
    to: LatLon,
) -> Result<Route, RouteError> {
    let RoutingContext {
        graph,
        snapper,
        routing,
        vehicle,
    } = *context;
    let snap = |endpoint: Endpoint, at: LatLon| {
        if !at.is_valid() {
            return Err(RouteError::InvalidCoordinate {
                endpoint,
                coordinate: at,
            });
        }
        snapper
            .snap(graph, at, MAX_SNAP_DISTANCE_METRES, |e| {
                routing.is_snappable(e)
            })
            .ok_or(RouteError::TooFarFromRoad {
                endpoint,
                vehicle,
                max_metres: MAX_SNAP_DISTANCE_METRES as u32,
            })
    };
    let origin = snap(Endpoint::Origin, from)?;
    let destination = snap(Endpoint::Destination, to)?;

    let sources = leaving(routing, &origin);
    let targets = arriving(routing, &destination);
    let network_path = match engine {
        Engine::Hierarchy => routing.hierarchy_path(graph, &sources, &targets),
        Engine::Dijkstra => routing.dijkstra_path(graph, &sources, &targets),
    };
    let along_same_edge = same_edge_millis(routing, &origin, &destination);
    match (network_path, along_same_edge) {
        (Some(path), Some(direct)) if direct <= path.weight => {
            Ok(same_edge_route(graph, &origin, &destination, direct))
        }
        (None, Some(direct)) => Ok(same_edge_route(graph, &origin, &destination, direct)),
        (Some(path), _) => Ok(network_route(
            graph,
            &origin,
            &destination,
            sources[path.source].forward,
            targets[path.target].forward,
            &path,
        )),
        (None, None) => Err(RouteError::NoRoute(vehicle)),
    }
}

fn scaled(weight: Millis, fraction: f64) -> Millis {
    (weight as f64 * fraction).round() as Millis
}

/// Ways off a snapped origin: along its edge forward (to its `to` junction) or backward, with
/// the partial cost.
fn leaving(routing: &RoutingGraph, snap: &Snap) -> Vec<EdgeEnd> {
    let weights = routing.weights(snap.edge);
    let mut sources = Vec::with_capacity(2);
    if let Some(w) = weights.forward {
        sources.push(EdgeEnd {
            edge: snap.edge,
            forward: true,
            millis: scaled(w, 1.0 - snap.fraction),
        });
    }
    if let Some(w) = weights.backward {
        sources.push(EdgeEnd {
            edge: snap.edge,
            forward: false,
            millis: scaled(w, snap.fraction),
        });
    }
    sources
}

/// Ways onto a snapped destination: entering its edge forward (from its `from` junction) or
/// backward, with the partial cost.
fn arriving(routing: &RoutingGraph, snap: &Snap) -> Vec<EdgeEnd> {
    let weights = routing.weights(snap.edge);
    let mut targets = Vec::with_capacity(2);
    if let Some(w) = weights.forward {
        targets.push(EdgeEnd {
            edge: snap.edge,
            forward: true,
            millis: scaled(w, snap.fraction),
        });
    }
    if let Some(w) = weights.backward {
        targets.push(EdgeEnd {
            edge: snap.edge,
            forward: false,
            millis: scaled(w, 1.0 - snap.fraction),
        });
    }
    targets
}

/// Cost of travelling directly from origin to destination when both lie on the same edge and
/// its direction allows it.
fn same_edge_millis(routing: &RoutingGraph, origin: &Snap, destination: &Snap) -> Option<Millis> {
    if origin.edge != destination.edge {
        return None;
    }
    let weights = routing.weights(origin.edge);
    let delta = destination.fraction - origin.fraction;
    match (weights.forward, weights.backward) {
        (Some(w), _) if delta >= 0.0 => Some(scaled(w, delta)),
        (_, Some(w)) if delta <= 0.0 => Some(scaled(w, -delta)),
        _ => None,
    }
}

fn to_route(distance_metres: f64, millis: Millis, mut shape: Vec<LatLon>) -> Route {
    // A line needs two points even when origin and destination coincide.
    if let [only] = shape[..] {
        shape.push(only);
    }
    Route {
        distance_metres: distance_metres.round() as u32,
        duration_seconds: (millis as f64 / 1000.0).round() as u32,
        shape,
    }
}

fn same_edge_route(graph: &RoadGraph, origin: &Snap, destination: &Snap, millis: Millis) -> Route {
    let geometry = graph.geometry(origin.edge);
    let mut shape = vec![origin.point];
    if origin.segment < destination.segment {
        shape.extend(&geometry[origin.segment + 1..=destination.segment]);
    } else if origin.segment > destination.segment {
        shape.extend(
            geometry[destination.segment + 1..=origin.segment]
                .iter()
                .rev(),
        );
    }
    shape.push(destination.point);
    shape.dedup();
    let length = graph.edges[origin.edge as usize].length_metres;
    let distance = (destination.fraction - origin.fraction).abs() * length;
    to_route(distance, millis, shape)
}

fn network_route(
    graph: &RoadGraph,
    origin: &Snap,
    destination: &Snap,
    leaves_forward: bool,
    enters_forward: bool,
    path: &RoadPath,
) -> Route {
    let mut shape = vec![origin.point];
    let mut distance = 0.0;

    // From the origin's projection to the first node, along the origin's edge.
    let start_edge = &graph.edges[origin.edge as usize];
    let start_geometry = graph.geometry(origin.edge);
    if leaves_forward {
        shape.extend(&start_geometry[origin.segment + 1..]);
        distance += (1.0 - origin.fraction) * start_edge.length_metres;
    } else {
        shape.extend(start_geometry[..=origin.segment].iter().rev());
        distance += origin.fraction * start_edge.length_metres;
    }

    for &(edge, forward) in &path.steps {
        let geometry = graph.geometry(edge);
        if forward {
            shape.extend(&geometry[1..]);
        } else {
            shape.extend(geometry[..geometry.len() - 1].iter().rev());
        }
        distance += graph.edges[edge as usize].length_metres;
    }

    // From the last node to the destination's projection.
    let end_edge = &graph.edges[destination.edge as usize];
    let end_geometry = graph.geometry(destination.edge);
    if enters_forward {
        shape.extend(&end_geometry[1..=destination.segment]);
        distance += destination.fraction * end_edge.length_metres;
    } else {
        shape.extend(
            end_geometry[destination.segment + 1..end_geometry.len() - 1]
                .iter()
                .rev(),
        );
        distance += (1.0 - destination.fraction) * end_edge.length_metres;
    }
    shape.push(destination.point);
    shape.dedup();
    to_route(distance, path.weight, shape)
}
