//! The road topology shared by all vehicles: junction nodes and edges that keep their full
//! geometry.
//!
//! Highway ways are cut at every node shared with another way (and at their ends), so
//! intermediate bends live in the edge geometry instead of becoming graph nodes. Each edge
//! remembers its way so per-vehicle access can be looked up.

use std::collections::{HashMap, HashSet};

use crate::coords::LatLon;
use crate::junction_rules::{TurnRule, barrier_blocks, is_u_turn, restriction_for};
use crate::osm::{MemberKind, OsmExtract, OsmRelation, OsmWay};
use crate::profile::{WayAccess, way_access};
use crate::storage::{Reader, Slab, StorageError, Writer};
use crate::vehicle::Vehicle;

pub(crate) type NodeIndex = u32;
pub(crate) type EdgeIndex = u32;

/// Access of one way for every vehicle (indexed by [`Vehicle::index`]).
pub(crate) type VehicleAccess = [Option<WayAccess>; Vehicle::ALL.len()];

#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct RoadEdge {
    pub(crate) length_metres: f64,
    pub(crate) from: NodeIndex,
    pub(crate) to: NodeIndex,
    /// Range into [`RoadGraph::points`], from the `from` node to the `to` node inclusive.
    geometry_start: u32,
    geometry_len: u32,
    /// Index into [`RoadGraph::way_access`].
    pub(crate) way: u32,
    /// Keeps the record free of implicit padding, so it can be stored as plain bytes.
    reserved: u32,
}

/// A junction some vehicles may not pass (indexed by [`Vehicle::index`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Barrier {
    pub(crate) node: NodeIndex,
    pub(crate) blocks: [bool; Vehicle::ALL.len()],
}

/// A via-node turn restriction resolved onto edges: arriving at `via` on the first edge of a
/// pair and leaving on the second is the turn the restriction names.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct TurnRestriction {
    pub(crate) via: NodeIndex,
    pub(crate) turns: Vec<(EdgeIndex, EdgeIndex)>,
    /// Per vehicle (indexed by [`Vehicle::index`]), what the restriction says, if it binds it.
    pub(crate) rule: [Option<TurnRule>; Vehicle::ALL.len()],
}

/// Turn restrictions of the extract that could not be applied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct SkippedRestrictions {
    /// Via-way restrictions, which are not modelled.
    pub(crate) via_way: usize,
    /// Members missing from the extract, not on a usable road, or not meeting at the via node.
    pub(crate) unresolved: usize,
}

#[derive(Debug, Default)]
pub(crate) struct RoadGraph {
    pub(crate) node_positions: Slab<LatLon>,
    pub(crate) edges: Slab<RoadEdge>,
    pub(crate) points: Slab<LatLon>,
    /// Per routable way, how each vehicle may use it.
    pub(crate) way_access: Vec<VehicleAccess>,
    pub(crate) barriers: Vec<Barrier>,
    pub(crate) restrictions: Vec<TurnRestriction>,
    pub(crate) skipped_restrictions: SkippedRestrictions,
}

impl RoadGraph {
    pub(crate) fn geometry(&self, edge: EdgeIndex) -> &[LatLon] {
        let e = &self.edges[edge as usize];
        &self.points[e.geometry_start as usize..(e.geometry_start + e.geometry_len) as usize]
    }

    pub(crate) fn access(&self, edge: EdgeIndex, vehicle: Vehicle) -> Option<WayAccess> {
        self.way_access[self.edges[edge as usize].way as usize][vehicle.index()]
    }

    /// Every coordinate on a road, junction or bend.
    pub(crate) fn points(&self) -> &[LatLon] {
        &self.points
    }

    pub(crate) fn write(&self, writer: &mut Writer) {
        writer.records("graph.nodes", &self.node_positions);
        writer.records("graph.edges", &self.edges);
        writer.records("graph.points", &self.points);
        writer.value(
            "graph.rules",
            &(
                &self.way_access,
                &self.barriers,
                &self.restrictions,
                self.skipped_restrictions,
            ),
        );
    }

    /// Reads a graph written by [`RoadGraph::write`], checking that every edge's nodes and
    /// geometry lie within the file.
    pub(crate) fn read(reader: &Reader) -> Result<Self, StorageError> {
        let (way_access, barriers, restrictions, skipped_restrictions) =
            reader.value("graph.rules")?;
        let graph = Self {
            node_positions: reader.records("graph.nodes")?,
            edges: reader.records("graph.edges")?,
            points: reader.records("graph.points")?,
            way_access,
            barriers,
            restrictions,
            skipped_restrictions,
        };
        let (nodes, points, ways) = (
            graph.node_positions.len(),
            graph.points.len(),
            graph.way_access.len(),
        );
        let valid = graph.edges.iter().all(|e| {
            (e.from as usize) < nodes
                && (e.to as usize) < nodes
                && (e.way as usize) < ways
                && e.geometry_len >= 2
                && (e.geometry_start as usize + e.geometry_len as usize) <= points
        });
        if !valid {
            return Err(StorageError::Corrupt("road edges".to_owned()));
        }
        Ok(graph)
    }

    pub(crate) fn owned_bytes(&self) -> usize {
        self.node_positions.owned_bytes() + self.edges.owned_bytes() + self.points.owned_bytes()
    }

    /// Builds the topology from the highway ways of `extract` that at least one of `vehicles`
    /// may use.
    pub(crate) fn build(extract: &OsmExtract, vehicles: &[Vehicle]) -> Self {
        let mut graph = RoadGraph::default();
        // Runs of consecutive nodes with known positions, per routable way.
        let mut runs: Vec<(u32, Vec<i64>)> = Vec::new();
        let mut way_index_of: HashMap<i64, u32> = HashMap::new();
        for way in &extract.ways {
            let access = vehicle_access(way);
            if vehicles.iter().all(|v| access[v.index()].is_none()) {
                continue;
            }
            let way_index = graph.way_access.len() as u32;
            graph.way_access.push(access);
            way_index_of.insert(way.id, way_index);
            runs.extend(
                present_runs(way, extract)
                    .into_iter()
                    .map(|run| (way_index, run)),
            );
        }

        // Barriers and restriction via nodes must be graph nodes for their rules to apply.
        let barrier_blocks: HashMap<i64, [bool; Vehicle::ALL.len()]> = extract
            .barriers
            .iter()
            .map(|node| {
                let blocks =
                    Vehicle::ALL.map(|v| vehicles.contains(&v) && barrier_blocks(&node.tags, v));
                (node.id, blocks)
            })
            .filter(|(_, blocks)| blocks.iter().any(|&b| b))
            .collect();
        let via_nodes: HashSet<i64> = extract
            .restrictions
            .iter()
            .filter_map(via_node)
            .chain(barrier_blocks.keys().copied())
            .collect();
        let mut junctions = find_junctions(&runs, &via_nodes);
        break_self_loops(&runs, &mut junctions);

        let mut node_index: HashMap<i64, NodeIndex> = HashMap::with_capacity(junctions.len());
        for (way, run) in &runs {
            let mut piece_start = 0;
            for i in 1..run.len() {
                if !junctions.contains_key(&run[i]) {
                    continue;
                }
                let piece = &run[piece_start..=i];
                let from = graph.intern_node(&mut node_index, piece[0], extract);
                let to = graph.intern_node(&mut node_index, run[i], extract);
                graph.push_edge(from, to, *way, piece, extract);
                piece_start = i;
            }
        }
        graph.barriers = barrier_blocks
            .into_iter()
            .filter_map(|(id, blocks)| {
                let node = *node_index.get(&id)?;
                Some(Barrier { node, blocks })
            })
            .collect();
        graph.barriers.sort_by_key(|b| b.node);
        graph.resolve_restrictions(extract, vehicles, &node_index, &way_index_of);
        graph
    }

    /// Turns the extract's restriction relations into edge pairs at their via nodes.
    fn resolve_restrictions(
        &mut self,
        extract: &OsmExtract,
        vehicles: &[Vehicle],
        node_index: &HashMap<i64, NodeIndex>,
        way_index_of: &HashMap<i64, u32>,
    ) {
        let mut incident: HashMap<NodeIndex, Vec<EdgeIndex>> = HashMap::new();
        let wanted: HashSet<NodeIndex> = extract
            .restrictions
            .iter()
            .filter_map(via_node)
            .filter_map(|id| node_index.get(&id).copied())
            .collect();
        for (index, edge) in self.edges.iter().enumerate() {
            for end in [edge.from, edge.to] {
                if wanted.contains(&end) {
                    incident.entry(end).or_default().push(index as EdgeIndex);
                }
            }
        }
        for relation in &extract.restrictions {
            let rule = Vehicle::ALL.map(|v| {
                vehicles
                    .contains(&v)
                    .then(|| restriction_for(&relation.tags, v))
                    .flatten()
            });
            if rule.iter().all(Option::is_none) {
                continue;
            }
            if relation
                .members
                .iter()
                .any(|m| m.role == "via" && m.kind == MemberKind::Way)
            {
                self.skipped_restrictions.via_way += 1;
                continue;
            }
            let resolved = via_node(relation)
                .and_then(|id| node_index.get(&id).copied())
                .and_then(|via| {
                    let edges = incident.get(&via)?;
                    let on_ways = |role: &str| -> Vec<EdgeIndex> {
                        let ways: Vec<u32> = relation
                            .members
                            .iter()
                            .filter(|m| m.role == role && m.kind == MemberKind::Way)
                            .filter_map(|m| way_index_of.get(&m.id).copied())
                            .collect();
                        edges
                            .iter()
                            .copied()
                            .filter(|&e| ways.contains(&self.edges[e as usize].way))
                            .collect()
                    };
                    let (from, to) = (on_ways("from"), on_ways("to"));
                    let u_turn = Vehicle::ALL
                        .iter()
                        .any(|&v| rule[v.index()].is_some() && is_u_turn(&relation.tags, v));
                    let turns: Vec<(EdgeIndex, EdgeIndex)> = from
                        .iter()
                        .flat_map(|&f| to.iter().map(move |&t| (f, t)))
                        .filter(|&(f, t)| {
                            // On one way through the via node, a U-turn pairs an edge with
                            // itself and any other turn continues along the way.
                            let same_way = self.edges[f as usize].way == self.edges[t as usize].way;
                            !same_way || (f == t) == u_turn
                        })
                        .collect();
                    (!turns.is_empty()).then_some(TurnRestriction { via, turns, rule })
                });
            match resolved {
                Some(restriction) => self.restrictions.push(restriction),
                None => self.skipped_restrictions.unresolved += 1,
            }
        }
    }

    fn intern_node(
        &mut self,
        node_index: &mut HashMap<i64, NodeIndex>,
        osm_id: i64,
        extract: &OsmExtract,
    ) -> NodeIndex {
        *node_index.entry(osm_id).or_insert_with(|| {
            let position = extract.position(osm_id).expect("runs hold known nodes");
            let positions = self.node_positions.vec_mut();
            positions.push(position);
            (positions.len() - 1) as NodeIndex
        })
    }

    fn push_edge(
        &mut self,
        from: NodeIndex,
        to: NodeIndex,
        way: u32,
        piece: &[i64],
        extract: &OsmExtract,
    ) {
        let geometry_start = self.points.len() as u32;
        self.points.vec_mut().extend(
            piece
                .iter()
                .map(|id| extract.position(*id).expect("runs hold known nodes")),
        );
        let geometry = &self.points[geometry_start as usize..];
        let length_metres = geometry
            .windows(2)
            .map(|w| w[0].distance_metres(w[1]))
            .sum();
        self.edges.vec_mut().push(RoadEdge {
            length_metres,
            from,
            to,
            geometry_start,
            geometry_len: piece.len() as u32,
            way,
            reserved: 0,
        });
    }
}

fn vehicle_access(way: &OsmWay) -> VehicleAccess {
    Vehicle::ALL.map(|vehicle| way_access(&way.tags, vehicle))
}

/// Splits a way's node list into runs of nodes present in the extract (extracts clip ways at
/// their border), dropping immediate repeats. Runs shorter than two nodes are discarded.
fn present_runs(way: &OsmWay, extract: &OsmExtract) -> Vec<Vec<i64>> {
    let mut runs = Vec::new();
    let mut current: Vec<i64> = Vec::new();
    for &id in &way.node_ids {
        if extract.position(id).is_none() {
            if current.len() >= 2 {
                runs.push(std::mem::take(&mut current));
            }
            current.clear();
        } else if current.last() != Some(&id) {
            current.push(id);
        }
    }
    if current.len() >= 2 {
        runs.push(current);
    }
    runs
}

/// The single via node of a via-node restriction.
fn via_node(relation: &OsmRelation) -> Option<i64> {
    let mut vias = relation.members.iter().filter(|m| m.role == "via");
    match (vias.next(), vias.next()) {
        (Some(via), None) if via.kind == MemberKind::Node => Some(via.id),
        _ => None,
    }
}

/// Nodes that must become graph nodes: run ends, nodes used more than once, and `forced` ones
/// (barriers, restriction via nodes) that lie on a run.
fn find_junctions(runs: &[(u32, Vec<i64>)], forced: &HashSet<i64>) -> HashMap<i64, u8> {
    let mut uses: HashMap<i64, u8> = HashMap::new();
    for (_, run) in runs {
        for (i, &id) in run.iter().enumerate() {
            let is_end = i == 0 || i == run.len() - 1;
            let count = uses.entry(id).or_insert(0);
            *count = count.saturating_add(if is_end { 2 } else { 1 });
        }
    }
    uses.retain(|id, count| *count >= 2 || forced.contains(id));
    uses
}

/// A piece that starts and ends at the same junction (a closed way touching the network once)
/// would be a loop edge, which shortest-path searches ignore; cut it at its middle node.
fn break_self_loops(runs: &[(u32, Vec<i64>)], junctions: &mut HashMap<i64, u8>) {
    for (_, run) in runs {
        let mut piece_start = 0;
        for i in 1..run.len() {
            if !junctions.contains_key(&run[i]) {
                continue;
            }
            if run[i] == run[piece_start] && i - piece_start >= 2 {
                junctions.insert(run[piece_start + (i - piece_start) / 2], 2);
            }
            piece_start = i;
        }
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Tiny hand-written extracts for graph and routing tests.

    use super::*;
    use crate::osm::{OsmWay, Tags};

    /// Builds an [`OsmExtract`] from nodes on a local grid of ~111 m cells.
    #[derive(Default)]
    pub(crate) struct ExtractBuilder {
        extract: OsmExtract,
        next_way_id: i64,
    }

    /// Grid cell size in degrees (about 111 m of latitude).
    pub(crate) const CELL: f64 = 0.001;

    impl ExtractBuilder {
        /// Node `id` at grid cell (`x` east, `y` north) from an origin at 10°N 10°E.
        pub(crate) fn node(mut self, id: i64, x: f64, y: f64) -> Self {
            self.extract.node_positions.insert(id, Self::at(x, y));
            self
        }

        /// A node with tags (an address, a place or a point of interest).
        pub(crate) fn tagged_node(
            mut self,
            id: i64,
            x: f64,
            y: f64,
            tags: &[(&str, &str)],
        ) -> Self {
            self = self.node(id, x, y);
            self.extract.tagged_nodes.push(crate::osm::OsmNode {
                id,
                position: Self::at(x, y),
                tags: tags.iter().copied().collect(),
            });
            self
        }

        /// A `barrier=*` node (with its access tags).
        pub(crate) fn barrier(mut self, id: i64, x: f64, y: f64, tags: &[(&str, &str)]) -> Self {
            self = self.node(id, x, y);
            self.extract.barriers.push(crate::osm::OsmNode {
                id,
                position: Self::at(x, y),
                tags: tags.iter().copied().collect(),
            });
            self
        }

        /// A `type=restriction` relation from way `from` (ways are numbered from 1 in the
        /// order they are added) over `via` (a node, or a way when `via_is_way`) to way `to`.
        pub(crate) fn restriction(
            mut self,
            tags: &[(&str, &str)],
            from: i64,
            via: (i64, bool),
            to: i64,
        ) -> Self {
            use crate::osm::{MemberKind, OsmMember, OsmRelation};
            let member = |kind, id, role: &str| OsmMember {
                kind,
                id,
                role: role.to_owned(),
            };
            let via_kind = if via.1 {
                MemberKind::Way
            } else {
                MemberKind::Node
            };
            let mut all_tags = vec![("type", "restriction")];
            all_tags.extend_from_slice(tags);
            self.extract.restrictions.push(OsmRelation {
                id: self.extract.restrictions.len() as i64 + 1,
                members: vec![
                    member(MemberKind::Way, from, "from"),
                    member(via_kind, via.0, "via"),
                    member(MemberKind::Way, to, "to"),
                ],
                tags: all_tags.into_iter().collect(),
            });
            self
        }

        pub(crate) fn at(x: f64, y: f64) -> LatLon {
            LatLon::new(10.0 + y * CELL, 10.0 + x * CELL)
        }

        pub(crate) fn way(mut self, node_ids: &[i64], tags: &[(&str, &str)]) -> Self {
            self.next_way_id += 1;
            self.extract.ways.push(OsmWay {
                id: self.next_way_id,
                node_ids: node_ids.to_vec(),
                tags: tags.iter().copied().collect::<Tags>(),
            });
            self
        }

        pub(crate) fn build(self) -> OsmExtract {
            self.extract
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::ExtractBuilder;
    use super::*;

    const ROAD: &[(&str, &str)] = &[("highway", "residential")];

    #[test]
    fn ways_are_cut_at_shared_nodes_and_keep_their_bends() {
        // A bent way 1-2-3-4 crossed at node 3 by way 5-3-6.
        let extract = ExtractBuilder::default()
            .node(1, 0.0, 0.0)
            .node(2, 1.0, 0.5)
            .node(3, 2.0, 0.0)
            .node(4, 3.0, 0.0)
            .node(5, 2.0, 1.0)
            .node(6, 2.0, -1.0)
            .way(&[1, 2, 3, 4], ROAD)
            .way(&[5, 3, 6], ROAD)
            .build();
        let graph = RoadGraph::build(&extract, &Vehicle::ALL);
        // Junctions: 1, 3, 4, 5, 6 (node 2 is a bend).
        assert_eq!(graph.node_positions.len(), 5);
        assert_eq!(graph.edges.len(), 4);
        let first = graph.geometry(0);
        assert_eq!(first.len(), 3, "the bend stays in the geometry");
        assert_eq!(first[1], ExtractBuilder::at(1.0, 0.5));
        let straight = first[0].distance_metres(first[2]);
        assert!(graph.edges[0].length_metres > straight);
    }

    #[test]
    fn closed_ways_do_not_become_loop_edges() {
        // A square 1-2-3-4-1 touching a road at node 1 only.
        let extract = ExtractBuilder::default()
            .node(1, 0.0, 0.0)
            .node(2, 1.0, 0.0)
            .node(3, 1.0, 1.0)
            .node(4, 0.0, 1.0)
            .node(9, -1.0, 0.0)
            .way(&[9, 1], ROAD)
            .way(
                &[1, 2, 3, 4, 1],
                &[("highway", "service"), ("junction", "roundabout")],
            )
            .build();
        let graph = RoadGraph::build(&extract, &Vehicle::ALL);
        assert!(graph.edges.iter().all(|e| e.from != e.to));
        let loop_length: f64 = graph.edges[1..].iter().map(|e| e.length_metres).sum();
        assert!((loop_length - 4.0 * 111.0).abs() < 15.0, "{loop_length}");
    }

    #[test]
    fn unroutable_ways_and_missing_nodes_are_dropped() {
        let extract = ExtractBuilder::default()
            .node(1, 0.0, 0.0)
            .node(2, 1.0, 0.0)
            .node(3, 2.0, 0.0)
            .node(5, 4.0, 0.0)
            .node(6, 5.0, 0.0)
            // Node 4 lies outside the extract: the way splits into 1-2-3 and 5-6.
            .way(&[1, 2, 2, 3, 4, 5, 6], ROAD)
            .way(&[1, 3], &[("highway", "steps")])
            .way(&[1, 5], &[("waterway", "river")])
            .build();
        let graph = RoadGraph::build(&extract, &Vehicle::ALL);
        assert_eq!(graph.edges.len(), 2);
        assert_eq!(graph.geometry(0).len(), 3);
        assert_eq!(graph.way_access.len(), 1);
    }

    #[test]
    fn ways_only_other_vehicles_use_are_skipped() {
        let extract = ExtractBuilder::default()
            .node(1, 0.0, 0.0)
            .node(2, 1.0, 0.0)
            .way(&[1, 2], &[("highway", "cycleway")])
            .build();
        assert!(RoadGraph::build(&extract, &[Vehicle::Car]).edges.is_empty());
        assert_eq!(
            RoadGraph::build(&extract, &[Vehicle::Bicycle]).edges.len(),
            1
        );
    }
}
