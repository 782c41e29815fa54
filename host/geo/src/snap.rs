//! Snapping coordinates onto the nearest usable road segment.

use crate::coords::{LatLon, LocalProjection, interpolate};
use crate::graph::{EdgeIndex, RoadGraph};
use crate::segment_grid::SegmentGrid;
use crate::storage::{Reader, StorageError, Writer};

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

/// Every segment of every road edge in a [`SegmentGrid`] (lines are edges).
pub(crate) struct Snapper {
    grid: SegmentGrid,
}

impl Snapper {
    pub(crate) fn new(graph: &RoadGraph) -> Self {
        let projection = LocalProjection::fitting(graph.node_positions.iter().copied());
        Self {
            grid: SegmentGrid::build(projection, graph.edges.len(), |edge| graph.geometry(edge)),
        }
    }

    pub(crate) fn write(&self, writer: &mut Writer) {
        self.grid.write(writer, "snapper");
    }

    /// Reads a grid written by [`Snapper::write`] for `graph`, checking every index it holds.
    pub(crate) fn read(reader: &Reader, graph: &RoadGraph) -> Result<Self, StorageError> {
        let grid = SegmentGrid::read(reader, "snapper", |edge| {
            ((edge as usize) < graph.edges.len()).then(|| graph.geometry(edge).len())
        })?;
        Ok(Self { grid })
    }

    pub(crate) fn owned_bytes(&self) -> usize {
        self.grid.owned_bytes()
    }

    /// Edges with a segment in the box from `south_west` to `north_east`, in index order.
    pub(crate) fn edges_in(&self, south_west: LatLon, north_east: LatLon) -> Vec<EdgeIndex> {
        self.grid.lines_in(south_west, north_east)
    }

    /// The nearest segment of an edge accepted by `usable`, within `max_metres`.
    pub(crate) fn snap(
        &self,
        graph: &RoadGraph,
        at: LatLon,
        max_metres: f64,
        usable: impl Fn(EdgeIndex) -> bool,
    ) -> Option<Snap> {
        // Planar distances are approximate; allow a margin and check exactly afterwards.
        let nearest =
            self.grid
                .nearest(at, max_metres * 1.02, |edge| graph.geometry(edge), usable)?;
        let (edge, index, t) = (nearest.line, nearest.segment, nearest.t);
        let geometry = graph.geometry(edge);
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
    use crate::coords::project_onto_segment;
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

    #[test]
    fn the_grid_finds_the_same_nearest_segment_as_a_full_scan() {
        let bytes = crate::demo_city_pbf();
        let extract = crate::osm::read_pbf(|| Ok::<_, osmpbf::Error>(&bytes[..])).unwrap();
        let graph = RoadGraph::build(&extract, &Vehicle::ALL);
        let snapper = Snapper::new(&graph);
        let projection = snapper.grid.projection();
        let usable = |edge: EdgeIndex| !edge.is_multiple_of(3);
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut unit = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..300 {
            // Demo City spans 20.00-20.02 N, 50.00-50.02 E; look a little beyond it too.
            let at = LatLon::new(19.995 + 0.03 * unit(), 49.995 + 0.03 * unit());
            let query = projection.to_plane(at);
            let scanned = (0..graph.edges.len() as EdgeIndex)
                .filter(|&e| usable(e))
                .flat_map(|e| {
                    graph.geometry(e).windows(2).map(move |w| {
                        let (a, b) = (projection.to_plane(w[0]), projection.to_plane(w[1]));
                        project_onto_segment(query, a, b).1
                    })
                })
                .fold(f64::INFINITY, f64::min);
            match snapper.snap(&graph, at, 500.0, usable) {
                Some(snap) => {
                    let found = projection.to_plane(snap.point);
                    let d2 = (found[0] - query[0]).powi(2) + (found[1] - query[1]).powi(2);
                    assert!((d2.sqrt() - scanned.sqrt()).abs() < 1e-6, "{at:?}");
                }
                None => assert!(scanned.sqrt() > 490.0, "{at:?}: {}", scanned.sqrt()),
            }
        }
    }
}
