//! A contraction hierarchy in flat arrays, and its shortest-path query.
//!
//! [`fast_paths`] contracts the graph; its result is converted into [`Slab`]s, which a
//! prepared file stores and later maps back in place, and queried here with the same
//! bidirectional search and stall-on-demand that `fast_paths` uses.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Mutex;

use bytemuck::{Pod, Zeroable};
use fast_paths::FastGraph;
use serde::Deserialize;

use crate::storage::{Reader, Slab, StorageError, Writer};

/// Marks "no edge" in [`HierarchyEdge`]'s replaced edges and in search labels.
const NO_EDGE: u32 = u32::MAX;
const UNREACHED: u64 = u64::MAX;

/// An edge of the hierarchy, upward (in the forward list) or downward (in the backward list,
/// stored from its upper end). A shortcut names the two edges it replaces: `replaced_in` in
/// the backward list and `replaced_out` in the forward list.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub(crate) struct HierarchyEdge {
    base: u32,
    adj: u32,
    weight: u32,
    replaced_in: u32,
    replaced_out: u32,
}

impl HierarchyEdge {
    fn is_shortcut(&self) -> bool {
        self.replaced_in != NO_EDGE
    }
}

/// The contracted graph: edges by the rank of their lower node.
pub(crate) struct Hierarchy {
    ranks: Slab<u32>,
    first_up: Slab<u32>,
    up: Slab<HierarchyEdge>,
    first_down: Slab<u32>,
    down: Slab<HierarchyEdge>,
    searches: Mutex<Vec<Search>>,
}

/// `fast_paths`' graph as it serialises (its fields are private), to convert it.
#[derive(Deserialize)]
struct FastGraphFields {
    _num_nodes: usize,
    ranks: Vec<usize>,
    edges_fwd: Vec<FastEdgeFields>,
    first_edge_ids_fwd: Vec<usize>,
    edges_bwd: Vec<FastEdgeFields>,
    first_edge_ids_bwd: Vec<usize>,
}

#[derive(Deserialize)]
struct FastEdgeFields {
    base_node: usize,
    adj_node: usize,
    weight: usize,
    replaced_in_edge: usize,
    replaced_out_edge: usize,
}

fn narrow(value: usize) -> u32 {
    if value == usize::MAX {
        NO_EDGE
    } else {
        u32::try_from(value).expect("hierarchy indices and weights fit in 32 bits")
    }
}

impl From<FastEdgeFields> for HierarchyEdge {
    fn from(e: FastEdgeFields) -> Self {
        Self {
            base: narrow(e.base_node),
            adj: narrow(e.adj_node),
            weight: narrow(e.weight),
            replaced_in: narrow(e.replaced_in_edge),
            replaced_out: narrow(e.replaced_out_edge),
        }
    }
}

fn narrow_all(values: Vec<usize>) -> Slab<u32> {
    values.into_iter().map(narrow).collect::<Vec<_>>().into()
}

impl Hierarchy {
    pub(crate) fn from_fast_graph(graph: &FastGraph) -> Self {
        let bytes = bincode::serialize(graph).expect("the hierarchy serialises");
        let fields: FastGraphFields =
            bincode::deserialize(&bytes).expect("fast_paths' layout is the one mirrored here");
        let edges = |list: Vec<FastEdgeFields>| -> Slab<HierarchyEdge> {
            list.into_iter()
                .map(HierarchyEdge::from)
                .collect::<Vec<_>>()
                .into()
        };
        Self {
            ranks: narrow_all(fields.ranks),
            first_up: narrow_all(fields.first_edge_ids_fwd),
            up: edges(fields.edges_fwd),
            first_down: narrow_all(fields.first_edge_ids_bwd),
            down: edges(fields.edges_bwd),
            searches: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn write(&self, writer: &mut Writer, prefix: &str) {
        writer.records(&format!("{prefix}.ranks"), &self.ranks);
        writer.records(&format!("{prefix}.first_up"), &self.first_up);
        writer.records(&format!("{prefix}.up"), &self.up);
        writer.records(&format!("{prefix}.first_down"), &self.first_down);
        writer.records(&format!("{prefix}.down"), &self.down);
    }

    pub(crate) fn read(reader: &Reader, prefix: &str) -> Result<Self, StorageError> {
        let hierarchy = Self {
            ranks: reader.records(&format!("{prefix}.ranks"))?,
            first_up: reader.records(&format!("{prefix}.first_up"))?,
            up: reader.records(&format!("{prefix}.up"))?,
            first_down: reader.records(&format!("{prefix}.first_down"))?,
            down: reader.records(&format!("{prefix}.down"))?,
            searches: Mutex::new(Vec::new()),
        };
        hierarchy.check()?;
        Ok(hierarchy)
    }

    /// Checks that every index stays in range, so that a query can never read out of bounds.
    fn check(&self) -> Result<(), StorageError> {
        let nodes = self.ranks.len();
        let bad = |what: &str| Err(StorageError::Corrupt(format!("hierarchy: {what}")));
        if self.first_up.len() != nodes + 1 || self.first_down.len() != nodes + 1 {
            return bad("edge offsets");
        }
        if self.ranks.iter().any(|&r| r as usize >= nodes) {
            return bad("ranks");
        }
        for (first, edges) in [(&self.first_up, &self.up), (&self.first_down, &self.down)] {
            if first.windows(2).any(|w| w[0] > w[1]) || first[nodes] as usize != edges.len() {
                return bad("edge offsets");
            }
            let in_range = |e: &HierarchyEdge| {
                (e.base as usize) < nodes
                    && (e.adj as usize) < nodes
                    && (e.replaced_in == NO_EDGE) == (e.replaced_out == NO_EDGE)
                    && (e.replaced_in == NO_EDGE
                        || ((e.replaced_in as usize) < self.down.len()
                            && (e.replaced_out as usize) < self.up.len()))
            };
            if !edges.iter().all(in_range) {
                return bad("edges");
            }
        }
        Ok(())
    }

    pub(crate) fn node_count(&self) -> usize {
        self.ranks.len()
    }

    pub(crate) fn edge_count(&self) -> usize {
        self.up.len() + self.down.len()
    }

    /// Nodes by rank, for contracting a graph of the same shape in the same order.
    pub(crate) fn order(&self) -> Vec<usize> {
        let mut order = vec![0; self.ranks.len()];
        for (node, &rank) in self.ranks.iter().enumerate() {
            order[rank as usize] = node;
        }
        order
    }

    pub(crate) fn owned_bytes(&self) -> usize {
        self.ranks.owned_bytes()
            + self.first_up.owned_bytes()
            + self.up.owned_bytes()
            + self.first_down.owned_bytes()
            + self.down.owned_bytes()
    }

    fn up_edges(&self, node: u32) -> std::ops::Range<usize> {
        let rank = self.ranks[node as usize] as usize;
        self.first_up[rank] as usize..self.first_up[rank + 1] as usize
    }

    fn down_edges(&self, node: u32) -> std::ops::Range<usize> {
        let rank = self.ranks[node as usize] as usize;
        self.first_down[rank] as usize..self.first_down[rank + 1] as usize
    }

    /// The shortest path from any source to any target (nodes with initial weights): its
    /// weight and nodes, or `None` when no target is reachable.
    pub(crate) fn path(
        &self,
        sources: &[(u32, u64)],
        targets: &[(u32, u64)],
    ) -> Option<(u64, Vec<u32>)> {
        let mut search = self
            .searches
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop()
            .unwrap_or_else(|| Search::new(self.node_count()));
        let found = search.run(self, sources, targets);
        self.searches
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(search);
        found
    }

    /// Appends the original edges' nodes a hierarchy edge stands for: each upward edge's
    /// lower end, each downward edge's upper end, shortcuts expanded in path order (or in
    /// reverse).
    fn unpack(&self, nodes: &mut Vec<u32>, upward: bool, edge: u32, reverse: bool) {
        let e = if upward {
            self.up[edge as usize]
        } else {
            self.down[edge as usize]
        };
        if !e.is_shortcut() {
            nodes.push(if upward { e.base } else { e.adj });
            return;
        }
        let (down, up) = ((false, e.replaced_in), (true, e.replaced_out));
        let (first, second) = if reverse { (up, down) } else { (down, up) };
        self.unpack(nodes, first.0, first.1, reverse);
        self.unpack(nodes, second.0, second.1, reverse);
    }
}

/// One direction's labels; a label is valid only when stamped with the current round.
struct Labels {
    weight: Vec<u64>,
    parent: Vec<u32>,
    edge: Vec<u32>,
    settled: Vec<bool>,
    stamp: Vec<u32>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Labels {
    fn new(nodes: usize) -> Self {
        Self {
            weight: vec![UNREACHED; nodes],
            parent: vec![0; nodes],
            edge: vec![NO_EDGE; nodes],
            settled: vec![false; nodes],
            stamp: vec![0; nodes],
            heap: BinaryHeap::new(),
        }
    }

    fn weight(&self, node: u32, round: u32) -> u64 {
        if self.stamp[node as usize] == round {
            self.weight[node as usize]
        } else {
            UNREACHED
        }
    }

    fn settled(&self, node: u32, round: u32) -> bool {
        self.stamp[node as usize] == round && self.settled[node as usize]
    }

    fn update(&mut self, node: u32, weight: u64, parent: u32, edge: u32, round: u32) {
        let n = node as usize;
        if self.stamp[n] != round {
            self.stamp[n] = round;
            self.settled[n] = false;
        }
        self.weight[n] = weight;
        self.parent[n] = parent;
        self.edge[n] = edge;
        self.heap.push(Reverse((weight, node)));
    }
}

struct Search {
    forward: Labels,
    backward: Labels,
    round: u32,
}

impl Search {
    fn new(nodes: usize) -> Self {
        Self {
            forward: Labels::new(nodes),
            backward: Labels::new(nodes),
            round: 0,
        }
    }

    fn next_round(&mut self) -> u32 {
        self.round = self.round.wrapping_add(1);
        if self.round == 0 {
            // Stamps wrapped: forget them all once every four billion searches.
            self.forward.stamp.fill(0);
            self.backward.stamp.fill(0);
            self.round = 1;
        }
        self.forward.heap.clear();
        self.backward.heap.clear();
        self.round
    }

    fn run(
        &mut self,
        hierarchy: &Hierarchy,
        sources: &[(u32, u64)],
        targets: &[(u32, u64)],
    ) -> Option<(u64, Vec<u32>)> {
        let round = self.next_round();
        let mut best = UNREACHED;
        let mut meeting = None;
        for &(source, source_weight) in sources {
            for &(target, target_weight) in targets {
                if source == target && source_weight + target_weight < best {
                    best = source_weight + target_weight;
                    meeting = Some(target);
                }
            }
        }
        // A root is its own parent, so unpacking ends on the source or target it started at.
        for &(node, weight) in sources {
            if weight < self.forward.weight(node, round) {
                self.forward.update(node, weight, node, NO_EDGE, round);
            }
        }
        for &(node, weight) in targets {
            if weight < self.backward.weight(node, round) {
                self.backward.update(node, weight, node, NO_EDGE, round);
            }
        }
        while !self.forward.heap.is_empty() || !self.backward.heap.is_empty() {
            for upward in [true, false] {
                if let Some((node, total)) = self.step(hierarchy, upward, round, best) {
                    best = total;
                    meeting = Some(node);
                }
            }
        }
        let meeting = meeting?;
        Some((best, self.nodes_through(hierarchy, meeting)))
    }

    /// Settles one node in one direction; returns a better meeting node and total, if found.
    fn step(
        &mut self,
        hierarchy: &Hierarchy,
        upward: bool,
        round: u32,
        best: u64,
    ) -> Option<(u32, u64)> {
        let (this, other) = if upward {
            (&mut self.forward, &self.backward)
        } else {
            (&mut self.backward, &self.forward)
        };
        while let Some(Reverse((weight, node))) = this.heap.pop() {
            if this.settled(node, round) {
                continue;
            }
            if weight > best {
                this.heap.clear();
                return None;
            }
            // Stall on demand: a node reached more cheaply from a higher one need not expand.
            let (back_range, back_edges) = if upward {
                (hierarchy.down_edges(node), &hierarchy.down)
            } else {
                (hierarchy.up_edges(node), &hierarchy.up)
            };
            let stalled = back_edges[back_range].iter().any(|e| {
                let reached = this.weight(e.adj, round);
                reached != UNREACHED && reached + u64::from(e.weight) < weight
            });
            if stalled {
                continue;
            }
            let (range, edges) = if upward {
                (hierarchy.up_edges(node), &hierarchy.up)
            } else {
                (hierarchy.down_edges(node), &hierarchy.down)
            };
            for index in range {
                let e = edges[index];
                let candidate = weight + u64::from(e.weight);
                if candidate < this.weight(e.adj, round) {
                    this.update(e.adj, candidate, node, index as u32, round);
                }
            }
            this.settled[node as usize] = true;
            let across = other.weight(node, round);
            if across != UNREACHED && weight + across < best {
                return Some((node, weight + across));
            }
            return None;
        }
        None
    }

    fn nodes_through(&self, hierarchy: &Hierarchy, meeting: u32) -> Vec<u32> {
        let mut nodes = Vec::new();
        let mut node = meeting;
        while self.forward.edge[node as usize] != NO_EDGE {
            hierarchy.unpack(&mut nodes, true, self.forward.edge[node as usize], true);
            node = self.forward.parent[node as usize];
        }
        // Upward edges gave each original edge's tail, from the meeting node back to the
        // source; downward edges give them onwards to the target, which closes the path.
        nodes.reverse();
        node = meeting;
        while self.backward.edge[node as usize] != NO_EDGE {
            hierarchy.unpack(&mut nodes, false, self.backward.edge[node as usize], false);
            node = self.backward.parent[node as usize];
        }
        nodes.push(node);
        nodes
    }
}
