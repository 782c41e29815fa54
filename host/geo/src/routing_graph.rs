//! A vehicle's view of the road graph: travel-time weights, adjacency, the connected core it
//! may snap to, and its contraction hierarchy. Vehicles with identical travel times share one.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use fast_paths::InputGraph;

use crate::arc::{Arc, EdgeMillis, Millis};
use crate::dijkstra;
use crate::graph::{EdgeIndex, NodeIndex, RoadGraph};
use crate::hierarchy::Hierarchy;
use crate::storage::{Reader, Slab, StorageError, Writer};
use crate::turns::TurnRules;
use crate::vehicle::Vehicle;

/// Travel times of one edge; `None` where the direction is closed.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EdgeWeights {
    pub(crate) forward: Option<Millis>,
    pub(crate) backward: Option<Millis>,
}

fn open(weight: EdgeMillis) -> Option<Millis> {
    (weight > 0).then_some(Millis::from(weight))
}

/// One way onto or off a snapped edge: travelling it in one direction, at a partial cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct EdgeEnd {
    pub(crate) edge: EdgeIndex,
    pub(crate) forward: bool,
    pub(crate) millis: Millis,
}

/// A shortest path between snapped edges: which source and target [`EdgeEnd`] it uses, the
/// edges travelled in full between them (with their direction), and the total weight
/// (including both partial costs).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RoadPath {
    pub(crate) weight: Millis,
    pub(crate) source: usize,
    pub(crate) target: usize,
    pub(crate) steps: Vec<(EdgeIndex, bool)>,
}

/// One vehicle's travel times (forward and backward per edge, 0 where closed) and its rules
/// at junctions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EdgeTimes {
    times: Vec<[EdgeMillis; 2]>,
    turns: TurnRules,
}

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
        Self {
            times,
            turns: TurnRules::for_vehicle(graph, vehicle),
        }
    }

    /// True when both open exactly the same edge directions and turns (only the times
    /// differ), so a contraction order computed for one suits the other.
    pub(crate) fn same_topology(&self, other: &EdgeTimes) -> bool {
        self.times.len() == other.times.len()
            && self.turns == other.turns
            && self
                .times
                .iter()
                .zip(&other.times)
                .all(|(a, b)| (a[0] > 0) == (b[0] > 0) && (a[1] > 0) == (b[1] > 0))
    }
}

/// Marks a closed direction in [`RoutingGraph::entries`].
const NO_NODE: NodeIndex = NodeIndex::MAX;

/// Routing runs on the road graph's junctions, except that a junction with turn rules is
/// replaced by one copy per road arriving at it: a search at a copy knows how it arrived, so
/// only the allowed turns leave it. Copies are numbered after the junctions, grouped by the
/// junction they stand for.
pub(crate) struct RoutingGraph {
    /// Forward and backward travel time per edge, 0 where closed.
    weights: Slab<[EdgeMillis; 2]>,
    junctions: usize,
    /// Per copy (routing node `junctions + i`), the junction it stands for.
    copy_junction: Slab<NodeIndex>,
    /// Per edge, the routing node reached by travelling it forward and backward.
    entries: Slab<[NodeIndex; 2]>,
    /// Compressed adjacency: arcs leaving node `n` are `arcs[offsets[n]..offsets[n + 1]]`.
    offsets: Slab<u32>,
    arcs: Slab<Arc>,
    /// Per edge, 1 when it lies inside the largest strongly connected component; only these
    /// are snap targets, so every snapped pair is mutually reachable unless the input is
    /// disconnected on purpose.
    snappable: Slab<u8>,
    /// The rules themselves, and the plain junction graph, for the reference search.
    turns: TurnRules,
    plain: OnceLock<PlainGraph>,
    hierarchy: Hierarchy,
    pub(crate) stats: RoutingGraphStats,
}

/// What a prepared file keeps of a routing graph besides its arrays.
#[derive(serde::Serialize, serde::Deserialize)]
struct RoutingMeta {
    junctions: usize,
    turns: TurnRules,
    stats: RoutingGraphStats,
}

/// The junction graph without copies, and per edge its arcs' positions in it.
struct PlainGraph {
    offsets: Vec<u32>,
    arcs: Vec<Arc>,
    arc_of: Vec<[u32; 2]>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct RoutingGraphStats {
    /// Nodes with at least one usable edge.
    pub(crate) nodes: usize,
    /// Directed arcs (a two-way edge counts twice).
    pub(crate) arcs: usize,
    /// Nodes in the largest strongly connected component.
    pub(crate) core_nodes: usize,
    /// Arcs of the prepared hierarchy, shortcuts included.
    pub(crate) hierarchy_arcs: usize,
    /// Junctions this vehicle cannot pass, and junctions with turn restrictions for it.
    pub(crate) barriers: usize,
    pub(crate) restricted_junctions: usize,
    pub(crate) preparation: Duration,
    /// The contraction order came from a graph of the same shape instead of being computed.
    pub(crate) reused_order: bool,
}

/// Converts a length and speed into milliseconds, never 0 (zero-weight arcs break the
/// hierarchy's invariants).
fn travel_millis(length_metres: f64, speed_kmh: f64) -> EdgeMillis {
    ((length_metres * 3_600.0 / speed_kmh).round() as EdgeMillis).max(1)
}

/// Builds compressed adjacency from `(tail, arc)` pairs over `node_count` nodes.
fn compress(node_count: usize, tailed: Vec<(NodeIndex, Arc)>) -> (Vec<u32>, Vec<Arc>) {
    let mut offsets = vec![0u32; node_count + 1];
    for (tail, _) in &tailed {
        offsets[*tail as usize + 1] += 1;
    }
    for i in 1..offsets.len() {
        offsets[i] += offsets[i - 1];
    }
    let mut cursor = offsets.clone();
    let mut arcs = vec![Arc::new(0, 0, 0, true); tailed.len()];
    for (tail, arc) in tailed {
        arcs[cursor[tail as usize] as usize] = arc;
        cursor[tail as usize] += 1;
    }
    (offsets, arcs)
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
        let junctions = graph.node_positions.len();
        let EdgeTimes {
            times: weights,
            turns,
        } = times;

        // One copy per (rule-bound junction, edge arriving at it), grouped by junction.
        let mut arrivals: Vec<(NodeIndex, EdgeIndex)> = Vec::new();
        for (edge, (road, &[forward, backward])) in graph.edges.iter().zip(&weights).enumerate() {
            if forward > 0 && turns.constrains(road.to) {
                arrivals.push((road.to, edge as EdgeIndex));
            }
            if backward > 0 && turns.constrains(road.from) {
                arrivals.push((road.from, edge as EdgeIndex));
            }
        }
        arrivals.sort_unstable();
        let copy_junction: Vec<NodeIndex> = arrivals.iter().map(|a| a.0).collect();
        let copy_of = |junction: NodeIndex, edge: EdgeIndex| -> NodeIndex {
            let i = arrivals
                .binary_search(&(junction, edge))
                .expect("every open arrival at a bound junction has a copy");
            (junctions + i) as NodeIndex
        };
        let node_count = junctions + arrivals.len();

        let entries: Vec<[NodeIndex; 2]> = graph
            .edges
            .iter()
            .zip(&weights)
            .enumerate()
            .map(|(edge, (road, &[forward, backward]))| {
                let edge = edge as EdgeIndex;
                let enter = |open: EdgeMillis, node: NodeIndex| match open {
                    0 => NO_NODE,
                    _ if turns.constrains(node) => copy_of(node, edge),
                    _ => node,
                };
                [enter(forward, road.to), enter(backward, road.from)]
            })
            .collect();

        let mut tailed = Vec::new();
        for (edge, (road, &[forward, backward])) in graph.edges.iter().zip(&weights).enumerate() {
            let edge = edge as EdgeIndex;
            for (weight, tail, direction) in [(forward, road.from, 0), (backward, road.to, 1)] {
                if weight == 0 {
                    continue;
                }
                let arc = Arc::new(
                    entries[edge as usize][direction],
                    weight,
                    edge,
                    direction == 0,
                );
                if turns.constrains(tail) {
                    let first = arrivals.partition_point(|a| a.0 < tail);
                    for (i, &(_, arrival)) in arrivals[first..]
                        .iter()
                        .take_while(|a| a.0 == tail)
                        .enumerate()
                    {
                        if turns.allows(tail, arrival, edge) {
                            tailed.push(((junctions + first + i) as NodeIndex, arc));
                        }
                    }
                } else {
                    tailed.push((tail, arc));
                }
            }
        }
        let (offsets, arcs) = compress(node_count, tailed);

        let core = dijkstra::largest_strongly_connected_component(&offsets, &arcs);
        let mut snappable = vec![0u8; graph.edges.len()];
        for (tail, window) in offsets.windows(2).enumerate() {
            for arc in &arcs[window[0] as usize..window[1] as usize] {
                if core[tail] && core[arc.head as usize] {
                    snappable[arc.edge() as usize] = 1;
                }
            }
        }

        // Parallel roads between two junctions: the hierarchy needs only the cheapest.
        let mut cheapest: Vec<(usize, usize, usize)> = Vec::with_capacity(arcs.len());
        for (tail, window) in offsets.windows(2).enumerate() {
            for arc in &arcs[window[0] as usize..window[1] as usize] {
                cheapest.push((tail, arc.head as usize, arc.weight as usize));
            }
        }
        cheapest.sort_unstable();
        cheapest.dedup_by_key(|(tail, head, _)| (*tail, *head));
        let mut input = InputGraph::new();
        for (tail, head, weight) in cheapest {
            input.add_edge(tail, head, weight);
        }
        input.freeze();
        let ordered = order_from.and_then(|template| {
            fast_paths::prepare_with_order(&input, &template.hierarchy.order()).ok()
        });
        let reused_order = ordered.is_some();
        let contracted = ordered.unwrap_or_else(|| fast_paths::prepare(&input));
        let hierarchy = Hierarchy::from_fast_graph(&contracted);
        drop(contracted);

        let (barriers, restricted_junctions) = turns.counts();
        let stats = RoutingGraphStats {
            nodes: count_touched_junctions(junctions, &copy_junction, &offsets, &arcs),
            arcs: arcs.len(),
            core_nodes: core.iter().filter(|&&c| c).count(),
            hierarchy_arcs: hierarchy.edge_count(),
            barriers,
            restricted_junctions,
            preparation: started.elapsed(),
            reused_order,
        };
        Self {
            weights: weights.into(),
            junctions,
            copy_junction: copy_junction.into(),
            entries: entries.into(),
            offsets: offsets.into(),
            arcs: arcs.into(),
            snappable: snappable.into(),
            turns,
            plain: OnceLock::new(),
            hierarchy,
            stats,
        }
    }

    pub(crate) fn write(&self, writer: &mut Writer, prefix: &str) {
        writer.records(&format!("{prefix}.weights"), &self.weights);
        writer.records(&format!("{prefix}.copies"), &self.copy_junction);
        writer.records(&format!("{prefix}.entries"), &self.entries);
        writer.records(&format!("{prefix}.offsets"), &self.offsets);
        writer.records(&format!("{prefix}.arcs"), &self.arcs);
        writer.records(&format!("{prefix}.snappable"), &self.snappable);
        writer.value(
            &format!("{prefix}.meta"),
            &RoutingMeta {
                junctions: self.junctions,
                turns: self.turns.clone(),
                stats: self.stats,
            },
        );
        self.hierarchy.write(writer, &format!("{prefix}.hierarchy"));
    }

    /// Reads a routing graph written by [`RoutingGraph::write`] for `graph`, checking every
    /// index a query follows.
    pub(crate) fn read(
        reader: &Reader,
        prefix: &str,
        graph: &RoadGraph,
    ) -> Result<Self, StorageError> {
        let meta: RoutingMeta = reader.value(&format!("{prefix}.meta"))?;
        let routing = Self {
            weights: reader.records(&format!("{prefix}.weights"))?,
            junctions: meta.junctions,
            copy_junction: reader.records(&format!("{prefix}.copies"))?,
            entries: reader.records(&format!("{prefix}.entries"))?,
            offsets: reader.records(&format!("{prefix}.offsets"))?,
            arcs: reader.records(&format!("{prefix}.arcs"))?,
            snappable: reader.records(&format!("{prefix}.snappable"))?,
            turns: meta.turns,
            plain: OnceLock::new(),
            hierarchy: Hierarchy::read(reader, &format!("{prefix}.hierarchy"))?,
            stats: meta.stats,
        };
        let nodes = routing.junctions + routing.copy_junction.len();
        let edges = graph.edges.len();
        let valid = routing.junctions == graph.node_positions.len()
            && routing.weights.len() == edges
            && routing.entries.len() == edges
            && routing.snappable.len() == edges
            && routing.offsets.len() == nodes + 1
            && routing.hierarchy.node_count() == nodes
            && routing.offsets.windows(2).all(|w| w[0] <= w[1])
            && routing.offsets[nodes] as usize == routing.arcs.len()
            && routing
                .copy_junction
                .iter()
                .all(|&j| (j as usize) < routing.junctions)
            && routing
                .entries
                .iter()
                .flatten()
                .all(|&n| n == NO_NODE || (n as usize) < nodes)
            && routing
                .arcs
                .iter()
                .all(|a| (a.head as usize) < nodes && (a.edge() as usize) < edges);
        if !valid {
            return Err(StorageError::Corrupt(format!("{prefix}: routing arrays")));
        }
        Ok(routing)
    }

    pub(crate) fn owned_bytes(&self) -> usize {
        self.weights.owned_bytes()
            + self.copy_junction.owned_bytes()
            + self.entries.owned_bytes()
            + self.offsets.owned_bytes()
            + self.arcs.owned_bytes()
            + self.snappable.owned_bytes()
            + self.hierarchy.owned_bytes()
    }

    pub(crate) fn weights(&self, edge: EdgeIndex) -> EdgeWeights {
        let [forward, backward] = self.weights[edge as usize];
        EdgeWeights {
            forward: open(forward),
            backward: open(backward),
        }
    }

    pub(crate) fn is_snappable(&self, edge: EdgeIndex) -> bool {
        self.snappable[edge as usize] != 0
    }

    fn arcs_from(&self, node: NodeIndex) -> &[Arc] {
        let n = node as usize;
        &self.arcs[self.offsets[n] as usize..self.offsets[n + 1] as usize]
    }

    /// The junction a routing node stands for.
    fn junction(&self, node: NodeIndex) -> NodeIndex {
        match (node as usize).checked_sub(self.junctions) {
            Some(copy) => self.copy_junction[copy],
            None => node,
        }
    }

    /// The routing node reached by travelling `edge` in a direction.
    fn entry(&self, end: &EdgeEnd) -> Option<NodeIndex> {
        let node = self.entries[end.edge as usize][usize::from(!end.forward)];
        (node != NO_NODE).then_some(node)
    }

    /// The routing nodes from which `edge` may be entered in a direction: its start junction,
    /// or those of its copies whose arrival allows the turn onto it.
    fn departures(&self, graph: &RoadGraph, end: &EdgeEnd) -> Vec<NodeIndex> {
        let road = &graph.edges[end.edge as usize];
        let start = if end.forward { road.from } else { road.to };
        if !self.turns.constrains(start) {
            return vec![start];
        }
        let first = self.copy_junction.partition_point(|&j| j < start);
        let count = self.copy_junction[first..]
            .iter()
            .take_while(|&&j| j == start)
            .count();
        (first..first + count)
            .map(|copy| (self.junctions + copy) as NodeIndex)
            .filter(|&node| {
                self.arcs_from(node)
                    .iter()
                    .any(|arc| arc.edge() == end.edge && arc.is_forward() == end.forward)
            })
            .collect()
    }

    /// The cheapest arc from `tail` to `head` (parallel edges between two junctions exist).
    fn cheapest_arc(&self, tail: NodeIndex, head: NodeIndex) -> Option<Arc> {
        self.arcs_from(tail)
            .iter()
            .filter(|arc| arc.head == head)
            .min_by_key(|arc| arc.weight)
            .copied()
    }

    /// Shortest path over the contraction hierarchy from any source to any target.
    pub(crate) fn hierarchy_path(
        &self,
        graph: &RoadGraph,
        sources: &[EdgeEnd],
        targets: &[EdgeEnd],
    ) -> Option<RoadPath> {
        let in_range = |n: NodeIndex| (n as usize) < self.hierarchy.node_count();
        let fast_sources: Vec<(NodeIndex, Millis)> = sources
            .iter()
            .filter_map(|s| Some((self.entry(s)?, s.millis)))
            .filter(|&(n, _)| in_range(n))
            .collect();
        let fast_targets: Vec<(NodeIndex, Millis)> = targets
            .iter()
            .flat_map(|t| {
                self.departures(graph, t)
                    .into_iter()
                    .map(move |n| (n, t.millis))
            })
            .filter(|&(n, _)| in_range(n))
            .collect();
        if fast_sources.is_empty() || fast_targets.is_empty() {
            return None;
        }
        let (weight, nodes) = self.hierarchy.path(&fast_sources, &fast_targets)?;
        let (first, last) = (nodes[0], *nodes.last()?);
        let source = sources.iter().position(|s| self.entry(s) == Some(first))?;
        let last_junction = self.junction(last);
        let target = targets.iter().position(|t| {
            let road = &graph.edges[t.edge as usize];
            last_junction == if t.forward { road.from } else { road.to }
        })?;
        let steps = nodes
            .windows(2)
            .map(|pair| {
                let arc = self
                    .cheapest_arc(pair[0], pair[1])
                    .expect("consecutive path nodes are joined by an arc");
                (arc.edge(), arc.is_forward())
            })
            .collect();
        Some(RoadPath {
            weight,
            source,
            target,
            steps,
        })
    }

    /// The same search with plain Dijkstra on the junction graph, checking every turn against
    /// the rules: the reference the hierarchy (and its junction copies) is verified against.
    pub(crate) fn dijkstra_path(
        &self,
        graph: &RoadGraph,
        sources: &[EdgeEnd],
        targets: &[EdgeEnd],
    ) -> Option<RoadPath> {
        let plain = self.plain.get_or_init(|| self.plain_graph(graph));
        let arc_of = |end: &EdgeEnd| plain.arc_of[end.edge as usize][usize::from(!end.forward)];
        let source_arcs: Vec<(u32, Millis)> = sources
            .iter()
            .filter(|s| arc_of(s) != u32::MAX)
            .map(|s| (arc_of(s), s.millis))
            .collect();
        let target_turns: Vec<(NodeIndex, EdgeIndex, Millis)> = targets
            .iter()
            .filter(|t| arc_of(t) != u32::MAX)
            .map(|t| {
                let road = &graph.edges[t.edge as usize];
                let start = if t.forward { road.from } else { road.to };
                (start, t.edge, t.millis)
            })
            .collect();
        let found = dijkstra::turn_aware_path(
            &plain.offsets,
            &plain.arcs,
            &source_arcs,
            &target_turns,
            |node, arriving, leaving| self.turns.allows(node, arriving, leaving),
        )?;
        let first = plain.arcs[found.arcs[0] as usize];
        let source = sources
            .iter()
            .position(|s| s.edge == first.edge() && s.forward == first.is_forward())?;
        let chosen = target_turns[found.target];
        let target = targets
            .iter()
            .position(|t| t.edge == chosen.1 && t.millis == chosen.2)?;
        let steps = found.arcs[1..]
            .iter()
            .map(|&a| {
                let arc = plain.arcs[a as usize];
                (arc.edge(), arc.is_forward())
            })
            .collect();
        Some(RoadPath {
            weight: found.weight,
            source,
            target,
            steps,
        })
    }

    fn plain_graph(&self, graph: &RoadGraph) -> PlainGraph {
        let mut tailed = Vec::new();
        for (edge, (road, &[forward, backward])) in
            graph.edges.iter().zip(self.weights.iter()).enumerate()
        {
            let edge = edge as EdgeIndex;
            if forward > 0 {
                tailed.push((road.from, Arc::new(road.to, forward, edge, true)));
            }
            if backward > 0 {
                tailed.push((road.to, Arc::new(road.from, backward, edge, false)));
            }
        }
        let (offsets, arcs) = compress(self.junctions, tailed);
        let mut arc_of = vec![[u32::MAX; 2]; graph.edges.len()];
        for (i, arc) in arcs.iter().enumerate() {
            arc_of[arc.edge() as usize][usize::from(!arc.is_forward())] = i as u32;
        }
        PlainGraph {
            offsets,
            arcs,
            arc_of,
        }
    }
}

/// Junctions with at least one arc, counting a junction and its copies once.
fn count_touched_junctions(
    junctions: usize,
    copy_junction: &[NodeIndex],
    offsets: &[u32],
    arcs: &[Arc],
) -> usize {
    let junction = |node: usize| match node.checked_sub(junctions) {
        Some(copy) => copy_junction[copy] as usize,
        None => node,
    };
    let mut touched = vec![false; junctions];
    for (tail, window) in offsets.windows(2).enumerate() {
        if window[0] != window[1] {
            touched[junction(tail)] = true;
        }
    }
    for arc in arcs {
        touched[junction(arc.head as usize)] = true;
    }
    touched.iter().filter(|&&t| t).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn travel_time_is_never_zero() {
        assert_eq!(travel_millis(100.0, 36.0), 10_000);
        assert_eq!(travel_millis(0.0, 36.0), 1);
        assert_eq!(open(0), None);
        assert_eq!(open(5), Some(5));
    }
}
