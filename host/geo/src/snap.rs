//! Snapping coordinates onto the nearest usable road segment.

use crate::coords::{LatLon, LocalProjection, interpolate, project_onto_segment};
use crate::graph::{EdgeIndex, RoadGraph};
use crate::storage::{Reader, Slab, StorageError, Writer};

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

/// Grid cells are at least this wide (metres), and wider when the area is large, so that the
/// grid stays under [`MAX_CELLS`] cells.
const MIN_CELL_METRES: f64 = 100.0;
const MAX_CELLS: f64 = 4_000_000.0;

/// A uniform grid over every segment of every edge, in planar metres: each cell lists the
/// segments whose bounding box overlaps it. Flat arrays, so a prepared file maps it in place.
pub(crate) struct Snapper {
    projection: LocalProjection,
    layout: GridLayout,
    /// Segments of cell `c` are `segments[cell_start[c]..cell_start[c + 1]]`.
    cell_start: Slab<u32>,
    /// `(edge, segment index within the edge's geometry)`.
    segments: Slab<[u32; 2]>,
}

/// A grid cell's column and row (outside the grid when negative or too large).
type Cell = (i64, i64);

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
struct GridLayout {
    west: f64,
    south: f64,
    cell: f64,
    columns: u32,
    rows: u32,
}

impl GridLayout {
    fn covering(points: impl Iterator<Item = [f64; 2]>) -> Self {
        let (mut west, mut south) = (f64::INFINITY, f64::INFINITY);
        let (mut east, mut north) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
        for [x, y] in points {
            (west, east) = (west.min(x), east.max(x));
            (south, north) = (south.min(y), north.max(y));
        }
        if west > east {
            (west, east, south, north) = (0.0, 0.0, 0.0, 0.0);
        }
        let (width, height) = (east - west, north - south);
        let cell = MIN_CELL_METRES.max((width * height / MAX_CELLS).sqrt());
        Self {
            west,
            south,
            cell,
            columns: (width / cell) as u32 + 1,
            rows: (height / cell) as u32 + 1,
        }
    }

    /// The cell column and row of a planar point, possibly outside the grid.
    fn cell_of(&self, [x, y]: [f64; 2]) -> Cell {
        (
            ((x - self.west) / self.cell).floor() as i64,
            ((y - self.south) / self.cell).floor() as i64,
        )
    }

    fn index(&self, column: i64, row: i64) -> Option<usize> {
        let inside = (0..i64::from(self.columns)).contains(&column)
            && (0..i64::from(self.rows)).contains(&row);
        inside.then(|| row as usize * self.columns as usize + column as usize)
    }

    fn cells(&self) -> usize {
        self.columns as usize * self.rows as usize
    }
}

impl Snapper {
    pub(crate) fn new(graph: &RoadGraph) -> Self {
        let projection = LocalProjection::fitting(graph.node_positions.iter().copied());
        let layout = GridLayout::covering(graph.points().iter().map(|p| projection.to_plane(*p)));
        // Each segment, with the range of cells its bounding box covers.
        let mut covered: Vec<([u32; 2], Cell, Cell)> = Vec::new();
        for edge in 0..graph.edges.len() as EdgeIndex {
            for (i, pair) in graph.geometry(edge).windows(2).enumerate() {
                let (a, b) = (projection.to_plane(pair[0]), projection.to_plane(pair[1]));
                let low = layout.cell_of([a[0].min(b[0]), a[1].min(b[1])]);
                let high = layout.cell_of([a[0].max(b[0]), a[1].max(b[1])]);
                covered.push(([edge, i as u32], low, high));
            }
        }
        let mut counts = vec![0u32; layout.cells() + 1];
        let each_cell = |low: Cell, high: Cell, f: &mut dyn FnMut(usize)| {
            for row in low.1..=high.1 {
                for column in low.0..=high.0 {
                    if let Some(cell) = layout.index(column, row) {
                        f(cell);
                    }
                }
            }
        };
        for &(_, low, high) in &covered {
            each_cell(low, high, &mut |cell| counts[cell + 1] += 1);
        }
        for i in 1..counts.len() {
            counts[i] += counts[i - 1];
        }
        let mut cursor = counts.clone();
        let mut segments = vec![[0u32; 2]; counts[layout.cells()] as usize];
        for &(segment, low, high) in &covered {
            each_cell(low, high, &mut |cell| {
                segments[cursor[cell] as usize] = segment;
                cursor[cell] += 1;
            });
        }
        Self {
            projection,
            layout,
            cell_start: counts.into(),
            segments: segments.into(),
        }
    }

    pub(crate) fn write(&self, writer: &mut Writer) {
        writer.value("snapper.layout", &(self.projection, self.layout));
        writer.records("snapper.cells", &self.cell_start);
        writer.records("snapper.segments", &self.segments);
    }

    /// Reads a grid written by [`Snapper::write`] for `graph`, checking every index it holds.
    pub(crate) fn read(reader: &Reader, graph: &RoadGraph) -> Result<Self, StorageError> {
        let (projection, layout): (LocalProjection, GridLayout) = reader.value("snapper.layout")?;
        let snapper = Self {
            projection,
            layout,
            cell_start: reader.records("snapper.cells")?,
            segments: reader.records("snapper.segments")?,
        };
        let cells = layout.cells();
        let valid = layout.cell > 0.0
            && snapper.cell_start.len() == cells + 1
            && snapper.cell_start.windows(2).all(|w| w[0] <= w[1])
            && snapper.cell_start[cells] as usize == snapper.segments.len()
            && snapper.segments.iter().all(|&[edge, index]| {
                (edge as usize) < graph.edges.len()
                    && (index as usize) + 1 < graph.geometry(edge).len()
            });
        if !valid {
            return Err(StorageError::Corrupt("snapping grid".to_owned()));
        }
        Ok(snapper)
    }

    pub(crate) fn owned_bytes(&self) -> usize {
        self.cell_start.owned_bytes() + self.segments.owned_bytes()
    }

    /// Edges with a segment whose bounding box meets the box from `south_west` to
    /// `north_east`, each once, in index order.
    pub(crate) fn edges_in(&self, south_west: LatLon, north_east: LatLon) -> Vec<EdgeIndex> {
        let low = self.layout.cell_of(self.projection.to_plane(south_west));
        let high = self.layout.cell_of(self.projection.to_plane(north_east));
        let mut edges = Vec::new();
        for row in low.1.max(0)..=high.1.min(i64::from(self.layout.rows) - 1) {
            for column in low.0.max(0)..=high.0.min(i64::from(self.layout.columns) - 1) {
                if let Some(cell) = self.layout.index(column, row) {
                    let range = self.cell_start[cell] as usize..self.cell_start[cell + 1] as usize;
                    edges.extend(self.segments[range].iter().map(|&[edge, _]| edge));
                }
            }
        }
        edges.sort_unstable();
        edges.dedup();
        edges
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
        let max_planar = max_metres * 1.02;
        let (column, row) = self.layout.cell_of(query);
        let cell = self.layout.cell;
        let mut best: Option<(f64, EdgeIndex, usize, f64)> = None;
        // Rings of cells around the query's cell, until no nearer segment can remain.
        for ring in 0..=((max_planar / cell) as i64 + 1) {
            let nearest_possible = (ring as f64 - 1.0).max(0.0) * cell;
            let bound = best.map_or(max_planar * max_planar, |b| b.0);
            if nearest_possible * nearest_possible > bound {
                break;
            }
            for r in row - ring..=row + ring {
                let on_edge = r == row - ring || r == row + ring;
                let step = if on_edge {
                    1
                } else {
                    (2 * ring).max(1) as usize
                };
                for c in (column - ring..=column + ring).step_by(step) {
                    let Some(index) = self.layout.index(c, r) else {
                        continue;
                    };
                    let range =
                        self.cell_start[index] as usize..self.cell_start[index + 1] as usize;
                    for &[edge, segment] in &self.segments[range] {
                        if !usable(edge) {
                            continue;
                        }
                        let geometry = graph.geometry(edge);
                        let (a, b) = (geometry[segment as usize], geometry[segment as usize + 1]);
                        let (t, d2) = project_onto_segment(
                            query,
                            self.projection.to_plane(a),
                            self.projection.to_plane(b),
                        );
                        let nearer = best.is_none_or(|(best_d2, best_edge, best_segment, _)| {
                            (d2, edge, segment as usize) < (best_d2, best_edge, best_segment)
                        });
                        if d2 <= max_planar * max_planar && nearer {
                            best = Some((d2, edge, segment as usize, t));
                        }
                    }
                }
            }
        }
        let (_, edge, index, t) = best?;
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
        let projection = snapper.projection;
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
