//! Snapping coordinates onto the nearest usable road segment.

use rstar::RTree;
use rstar::primitives::{GeomWithData, Line};

use crate::coords::{LatLon, LocalProjection, interpolate, project_onto_segment};
use crate::graph::{EdgeIndex, RoadGraph};

/// Farthest a route endpoint may be from a usable road, in metres. Generous enough for a
/// door set back from the street or a large car park, small enough that a point in a lake or
/// a field far from any road is refused rather than routed from a road kilometres away.
pub const MAX_SNAP_DISTANCE_METRES: f64 = 500.0;

/// A point projected onto a road edge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Snap {
    pub(crate) edge: EdgeIndex,
    /// Index of the geometry segment the point lies on.
    pub(crate) segment: usize,
    /// Where along the whole edge the point lies, 0 at its `from` node, 1 at its `to` node.
    pub(crate) fraction: f64,
    pub(crate) point: LatLon,
    /// Distance from the original coordinate to `point`.
    pub(crate) distance_metres: f64,
}

type Segment = GeomWithData<Line<[f64; 2]>, (EdgeIndex, u32)>;

/// R-tree over every segment of every edge, in planar metres.
pub(crate) struct Snapper {
    projection: LocalProjection,
    tree: RTree<Segment>,
}

impl Snapper {
    pub(crate) fn new(graph: &RoadGraph) -> Self {
        let projection = LocalProjection::fitting(graph.node_positions.iter().copied());
        let mut segments = Vec::new();
        for edge in 0..graph.edges.len() as EdgeIndex {
            for (i, pair) in graph.geometry(edge).windows(2).enumerate() {
                let line = Line::new(projection.to_plane(pair[0]), projection.to_plane(pair[1]));
                segments.push(Segment::new(line, (edge, i as u32)));
            }
        }
        Self {
            projection,
            tree: RTree::bulk_load(segments),
        }
    }

    /// The nearest segment of an edge accepted by `usable`, within `max_metres`.
    pub(crate) fn snap(
        &self,
        graph: &RoadGraph,
        at: LatLon,
        max_metres: f64,
        usable: impl Fn(EdgeIndex) -> bool,
    ) -> Option<Snap> {
        let query = self.projection.to_plane(at);
        // Planar distances are approximate; allow a margin and check exactly afterwards.
        let max_planar_2 = (max_metres * 1.02).powi(2);
        let (segment, _) = self
            .tree
            .nearest_neighbor_iter_with_distance_2(query)
            .take_while(|(_, d2)| *d2 <= max_planar_2)
            .find(|(segment, _)| usable(segment.data.0))?;
        let (edge, index) = segment.data;
        let line = segment.geom();
        let (t, _) = project_onto_segment(query, line.from, line.to);
        let geometry = graph.geometry(edge);
        let index = index as usize;
        let point = interpolate(geometry[index], geometry[index + 1], t);
        let distance_metres = at.distance_metres(point);
        if distance_metres > max_metres {
            return None;
        }
        let before: f64 = geometry[..=index]
            .windows(2)
            .map(|w| w[0].distance_metres(w[1]))
            .sum();
        let along = before + geometry[index].distance_metres(geometry[index + 1]) * t;
        let length = graph.edges[edge as usize].length_metres;
        let fraction = if length > 0.0 {
            (along / length).clamp(0.0, 1.0)
        } else {
            0.0
        };
        Some(Snap {
            edge,
            segment: index,
            fraction,
            point,
            distance_metres,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::fixtures::ExtractBuilder;
    use crate::vehicle::Vehicle;

    fn bent_road() -> RoadGraph {
        // One edge 1-2-3 bending at node 2, and a separate footway 4-5 to the north.
        let extract = ExtractBuilder::default()
            .node(1, 0.0, 0.0)
            .node(2, 1.0, 0.0)
            .node(3, 1.0, 1.0)
            .node(4, 0.0, 3.0)
            .node(5, 1.0, 3.0)
            .way(&[1, 2, 3], &[("highway", "residential")])
            .way(&[4, 5], &[("highway", "footway")])
            .build();
        RoadGraph::build(&extract, &Vehicle::ALL)
    }

    #[test]
    fn projects_onto_the_nearest_segment_and_measures_along_the_edge() {
        let graph = bent_road();
        let snapper = Snapper::new(&graph);
        // 20 m south of the middle of the first segment.
        let at = ExtractBuilder::at(0.5, -0.18);
        let snap = snapper.snap(&graph, at, 500.0, |_| true).unwrap();
        assert_eq!((snap.edge, snap.segment), (0, 0));
        assert!(
            (snap.distance_metres - 20.0).abs() < 1.0,
            "{}",
            snap.distance_metres
        );
        let expected = ExtractBuilder::at(0.5, 0.0);
        assert!(snap.point.distance_metres(expected) < 0.5);
        // Half of the first segment is a quarter of the whole bent edge.
        assert!((snap.fraction - 0.25).abs() < 0.01, "{}", snap.fraction);

        // On the second segment, three quarters along.
        let snap = snapper
            .snap(&graph, ExtractBuilder::at(1.05, 0.5), 500.0, |_| true)
            .unwrap();
        assert_eq!(snap.segment, 1);
        assert!((snap.fraction - 0.75).abs() < 0.01, "{}", snap.fraction);
    }

    #[test]
    fn skips_unusable_edges_and_respects_the_radius() {
        let graph = bent_road();
        let snapper = Snapper::new(&graph);
        let near_footway = ExtractBuilder::at(0.5, 2.9);
        let footway = snapper.snap(&graph, near_footway, 500.0, |_| true).unwrap();
        assert_eq!(footway.edge, 1);
        let road = snapper
            .snap(&graph, near_footway, 500.0, |e| e == 0)
            .unwrap();
        assert_eq!(road.edge, 0);
        assert!(road.distance_metres > 200.0);
        assert!(
            snapper
                .snap(&graph, near_footway, 150.0, |e| e == 0)
                .is_none()
        );
    }
}
