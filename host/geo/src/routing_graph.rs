//! A vehicle's view of the road graph: travel-time weights, adjacency, the connected core it
//! may snap to, and its contraction hierarchy. Vehicles with identical travel times share one.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use fast_paths::{FastGraph, InputGraph, PathCalculator};

use crate::dijkstra;
use crate::graph::{EdgeIndex, NodeIndex, RoadGraph};
use crate::vehicle::Vehicle;

/// Travel time in milliseconds (path totals).
pub(crate) type Millis = u64;

/// One edge's travel time in milliseconds; 0 marks a closed direction. Kept at 32 bits
/// because graphs hold millions of them (the limit is 49 days per edge).
type EdgeMillis = u32;

/// An edge traversal leaving a node, packed into 12 bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arc {
    pub(crate) head: NodeIndex,
    pub(crate) weight: EdgeMillis,
    /// Edge index in the low 31 bits, direction in the top bit.
    edge_and_direction: u32,
}

const BACKWARD_BIT: u32 = 1 << 31;

impl Arc {
    pub(crate) fn new(head: NodeIndex, weight: EdgeMillis, edge: EdgeIndex, forward: bool) -> Self {
        debug_assert!(edge < BACKWARD_BIT, "edge indices fit in 31 bits");
        let direction = if forward { 0 } else { BACKWARD_BIT };
        Self {
            head,
            weight,
            edge_and_direction: edge | direction,
        }
    }

    pub(crate) fn edge(&self) -> EdgeIndex {
        self.edge_and_direction & !BACKWARD_BIT
    }

    /// True when the edge is traversed in its drawing direction.
    pub(crate) fn is_forward(&self) -> bool {
        self.edge_and_direction & BACKWARD_BIT == 0
    }
}

/// Travel times of one edge; `None` where the direction is closed.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EdgeWeights {
    pub(crate) forward: Option<Millis>,
    pub(crate) backward: Option<Millis>,
}

fn open(weight: EdgeMillis) -> Option<Millis> {
    (weight > 0).then_some(Millis::from(weight))
}

/// A shortest path over graph nodes, with its total weight (including start and end offsets).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NodePath {
    pub(crate) weight: Millis,
    pub(crate) nodes: Vec<NodeIndex>,
}

/// One vehicle's forward and backward travel time per edge, 0 where closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EdgeTimes(Vec<[EdgeMillis; 2]>);

impl EdgeTimes {
    pub(crate) fn for_vehicle(graph: &RoadGraph, vehicle: Vehicle) -> Self {
        let times = (0..graph.edges.len())
            .map(|edge| {
                let length = graph.edges[edge].length_metres;
                match graph.access(edge as EdgeIndex, vehicle) {
                    None => [0, 0],
                    Some(access) => {
                        let millis = travel_millis(length, access.speed_kmh);
                        [
                            if access.forward { millis } else { 0 },
                            if access.backward { millis } else { 0 },
                        ]
                    }
                }
            })
            .collect();
        Self(times)
    }

    /// True when both open exactly the same edge directions (only the times differ), so a
    /// contraction order computed for one suits the other.
    pub(crate) fn same_topology(&self, other: &EdgeTimes) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|(a, b)| (a[0] > 0) == (b[0] > 0) && (a[1] > 0) == (b[1] > 0))
    }
}

pub(crate) struct RoutingGraph {
    /// Forward and backward travel time per edge, 0 where closed.
    weights: Vec<[EdgeMillis; 2]>,
    /// Compressed adjacency: arcs leaving node `n` are `arcs[offsets[n]..offsets[n + 1]]`.
    offsets: Vec<u32>,
    arcs: Vec<Arc>,
    /// Edges inside the largest strongly connected component; only these are snap targets, so
    /// every snapped pair is mutually reachable unless the input is disconnected on purpose.
    snappable: Vec<bool>,
    hierarchy: FastGraph,
    calculators: Mutex<Vec<PathCalculator>>,
    pub(crate) stats: RoutingGraphStats,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RoutingGraphStats {
    /// Nodes with at least one usable edge.
    pub(crate) nodes: usize,
    /// Directed arcs (a two-way edge counts twice).
    pub(crate) arcs: usize,
    /// Nodes in the largest strongly connected component.
    pub(crate) core_nodes: usize,
    /// Arcs of the prepared hierarchy, shortcuts included.
    pub(crate) hierarchy_arcs: usize,
    pub(crate) preparation: Duration,
    /// The contraction order came from a graph of the same shape instead of being computed.
    pub(crate) reused_order: bool,
}

/// Converts a length and speed into milliseconds, never 0 (zero-weight arcs break the
/// hierarchy's invariants).
fn travel_millis(length_metres: f64, speed_kmh: f64) -> EdgeMillis {
    ((length_metres * 3_600.0 / speed_kmh).round() as EdgeMillis).max(1)
}

impl RoutingGraph {
    /// Prepares routing over `times`. With `order_from`, a graph of the same shape, its
    /// contraction order is reused: contraction stays exact with any order, and skipping the
    /// order search makes preparation several times faster.
    pub(crate) fn prepare(
        graph: &RoadGraph,
        times: EdgeTimes,
        order_from: Option<&RoutingGraph>,
    ) -> Self {
        let started = Instant::now();
        let node_count = graph.node_positions.len();
        let weights = times.0;
        let mut degree = vec![0u32; node_count + 1];
        let mut arcs_unordered = Vec::new();
        for (edge, (road, &[forward, backward])) in graph.edges.iter().zip(&weights).enumerate() {
            let edge = edge as EdgeIndex;
            if forward > 0 {
                arcs_unordered.push((road.from, Arc::new(road.to, forward, edge, true)));
            }
            if backward > 0 {
                arcs_unordered.push((road.to, Arc::new(road.from, backward, edge, false)));
            }
        }
        for (tail, _) in &arcs_unordered {
            degree[*tail as usize + 1] += 1;
        }
        let mut offsets = degree;
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        let mut cursor = offsets.clone();
        let mut arcs = vec![Arc::new(0, 0, 0, true); arcs_unordered.len()];
        for (tail, arc) in arcs_unordered {
            arcs[cursor[tail as usize] as usize] = arc;
            cursor[tail as usize] += 1;
        }

        let core = dijkstra::largest_strongly_connected_component(&offsets, &arcs);
        let snappable = graph
            .edges
            .iter()
            .zip(&weights)
            .map(|(e, w)| (w[0] > 0 || w[1] > 0) && core[e.from as usize] && core[e.to as usize])
            .collect();

        let mut input = InputGraph::new();
        for (tail, window) in offsets.windows(2).enumerate() {
            for arc in &arcs[window[0] as usize..window[1] as usize] {
                input.add_edge(tail, arc.head as usize, arc.weight as usize);
            }
        }
        input.freeze();
        let ordered = order_from.and_then(|template| {
            let order = fast_paths::get_node_ordering(&template.hierarchy);
            fast_paths::prepare_with_order(&input, &order).ok()
        });
        let reused_order = ordered.is_some();
        let hierarchy = ordered.unwrap_or_else(|| fast_paths::prepare(&input));

        let stats = RoutingGraphStats {
            nodes: count_touched_nodes(node_count, &arcs, &offsets),
            arcs: arcs.len(),
            core_nodes: core.iter().filter(|&&c| c).count(),
            hierarchy_arcs: hierarchy.get_num_out_edges() + hierarchy.get_num_in_edges(),
            preparation: started.elapsed(),
            reused_order,
        };
        Self {
            weights,
            offsets,
            arcs,
            snappable,
            hierarchy,
            calculators: Mutex::new(Vec::new()),
            stats,
        }
    }

    pub(crate) fn weights(&self, edge: EdgeIndex) -> EdgeWeights {
        let [forward, backward] = self.weights[edge as usize];
        EdgeWeights {
            forward: open(forward),
            backward: open(backward),
        }
    }

    pub(crate) fn is_snappable(&self, edge: EdgeIndex) -> bool {
        self.snappable[edge as usize]
    }

    pub(crate) fn arcs_from(&self, node: NodeIndex) -> &[Arc] {
        let n = node as usize;
        &self.arcs[self.offsets[n] as usize..self.offsets[n + 1] as usize]
    }

    /// The cheapest arc from `tail` to `head` (parallel edges between two junctions exist).
    pub(crate) fn cheapest_arc(&self, tail: NodeIndex, head: NodeIndex) -> Option<Arc> {
        self.arcs_from(tail)
            .iter()
            .filter(|arc| arc.head == head)
            .min_by_key(|arc| arc.weight)
            .copied()
    }

    /// Shortest path over the contraction hierarchy from any source to any target, each given
    /// with an initial weight.
    pub(crate) fn hierarchy_path(
        &self,
        sources: &[(NodeIndex, Millis)],
        targets: &[(NodeIndex, Millis)],
    ) -> Option<NodePath> {
        let in_range = |n: &&(NodeIndex, Millis)| (n.0 as usize) < self.hierarchy.get_num_nodes();
        let to_fast = |list: &[(NodeIndex, Millis)]| -> Vec<(usize, usize)> {
            list.iter()
                .filter(in_range)
                .map(|&(n, w)| (n as usize, w as usize))
                .collect()
        };
        let (sources, targets) = (to_fast(sources), to_fast(targets));
        if sources.is_empty() || targets.is_empty() {
            return None;
        }
        let mut calculator = self
            .calculators
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop()
            .unwrap_or_else(|| fast_paths::create_calculator(&self.hierarchy));
        let path =
            calculator.calc_path_multiple_sources_and_targets(&self.hierarchy, sources, targets);
        self.calculators
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(calculator);
        path.map(|p| NodePath {
            weight: p.get_weight() as Millis,
            nodes: p.get_nodes().iter().map(|&n| n as NodeIndex).collect(),
        })
    }

    /// The same search with plain Dijkstra, the reference the hierarchy is checked against.
    pub(crate) fn dijkstra_path(
        &self,
        sources: &[(NodeIndex, Millis)],
        targets: &[(NodeIndex, Millis)],
    ) -> Option<NodePath> {
        dijkstra::shortest_path(&self.offsets, &self.arcs, sources, targets)
    }
}

fn count_touched_nodes(node_count: usize, arcs: &[Arc], offsets: &[u32]) -> usize {
    let mut touched = vec![false; node_count];
    for (tail, window) in offsets.windows(2).enumerate() {
        if window[0] != window[1] {
            touched[tail] = true;
        }
    }
    for arc in arcs {
        touched[arc.head as usize] = true;
    }
    touched.iter().filter(|&&t| t).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arcs_pack_edge_and_direction() {
        assert_eq!(std::mem::size_of::<Arc>(), 12);
        let backward = Arc::new(7, 1_500, BACKWARD_BIT - 1, false);
        assert_eq!(
            (backward.edge(), backward.is_forward()),
            (BACKWARD_BIT - 1, false)
        );
        let forward = Arc::new(7, 1_500, 42, true);
        assert_eq!((forward.edge(), forward.is_forward()), (42, true));
    }

    #[test]
    fn travel_time_is_never_zero() {
        assert_eq!(travel_millis(100.0, 36.0), 10_000);
        assert_eq!(travel_millis(0.0, 36.0), 1);
        assert_eq!(open(0), None);
        assert_eq!(open(5), Some(5));
    }
}
