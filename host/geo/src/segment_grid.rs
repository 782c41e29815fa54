//! A uniform grid over the segments of many polylines, for nearest-segment and in-box lookups.
//! Flat arrays, so a prepared file maps it in place; snapping to roads and finding the street
//! at a point both use it.

use crate::coords::{LatLon, LocalProjection, project_onto_segment};
use crate::storage::{Reader, Slab, StorageError, Writer};

/// Grid cells are at least this wide (metres), and wider when the area is large, so that the
/// grid stays under [`MAX_CELLS`] cells.
const MIN_CELL_METRES: f64 = 100.0;
const MAX_CELLS: f64 = 4_000_000.0;

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

/// The nearest segment found by [`SegmentGrid::nearest`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Nearest {
    pub(crate) line: u32,
    /// Index of the segment within its line (from point `segment` to `segment + 1`).
    pub(crate) segment: usize,
    /// Where the nearest point lies along the segment, 0 to 1.
    pub(crate) t: f64,
}

/// Each cell lists the segments whose bounding box overlaps it, as `(line, segment index)`.
/// The default grid is empty.
pub(crate) struct SegmentGrid {
    projection: LocalProjection,
    layout: GridLayout,
    /// Segments of cell `c` are `segments[cell_start[c]..cell_start[c + 1]]`.
    cell_start: Slab<u32>,
    segments: Slab<[u32; 2]>,
}

impl Default for SegmentGrid {
    fn default() -> Self {
        Self::build(LocalProjection::around_latitude(0.0), 0, |_| &[])
    }
}

impl SegmentGrid {
    /// Indexes lines `0..count`, whose points `line` gives, in planar metres of `projection`.
    pub(crate) fn build<'a>(
        projection: LocalProjection,
        count: usize,
        line: impl Fn(u32) -> &'a [LatLon],
    ) -> Self {
        let layout = GridLayout::covering(
            (0..count as u32).flat_map(|l| line(l).iter().map(|p| projection.to_plane(*p))),
        );
        // Each segment, with the range of cells its bounding box covers.
        let mut covered: Vec<([u32; 2], Cell, Cell)> = Vec::new();
        for l in 0..count as u32 {
            for (i, pair) in line(l).windows(2).enumerate() {
                let (a, b) = (projection.to_plane(pair[0]), projection.to_plane(pair[1]));
                let low = layout.cell_of([a[0].min(b[0]), a[1].min(b[1])]);
                let high = layout.cell_of([a[0].max(b[0]), a[1].max(b[1])]);
                covered.push(([l, i as u32], low, high));
            }
        }
        let each_cell = |low: Cell, high: Cell, f: &mut dyn FnMut(usize)| {
            for row in low.1..=high.1 {
                for column in low.0..=high.0 {
                    if let Some(cell) = layout.index(column, row) {
                        f(cell);
                    }
                }
            }
        };
        let mut counts = vec![0u32; layout.cells() + 1];
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

    #[cfg(test)]
    pub(crate) fn projection(&self) -> LocalProjection {
        self.projection
    }

    pub(crate) fn write(&self, writer: &mut Writer, prefix: &str) {
        writer.value(&format!("{prefix}.layout"), &(self.projection, self.layout));
        writer.records(&format!("{prefix}.cells"), &self.cell_start);
        writer.records(&format!("{prefix}.segments"), &self.segments);
    }

    /// Reads a grid written by [`SegmentGrid::write`] over lines whose point counts
    /// `line_len` gives (`None` for a line that does not exist), checking every index.
    pub(crate) fn read(
        reader: &Reader,
        prefix: &str,
        line_len: impl Fn(u32) -> Option<usize>,
    ) -> Result<Self, StorageError> {
        let (projection, layout): (LocalProjection, GridLayout) =
            reader.value(&format!("{prefix}.layout"))?;
        let grid = Self {
            projection,
            layout,
            cell_start: reader.records(&format!("{prefix}.cells"))?,
            segments: reader.records(&format!("{prefix}.segments"))?,
        };
        let cells = layout.cells();
        let valid = layout.cell > 0.0
            && grid.cell_start.len() == cells + 1
            && grid.cell_start.windows(2).all(|w| w[0] <= w[1])
            && grid.cell_start[cells] as usize == grid.segments.len()
            && grid
                .segments
                .iter()
                .all(|&[line, index]| line_len(line).is_some_and(|n| (index as usize) + 1 < n));
        if !valid {
            return Err(StorageError::Corrupt(format!("{prefix}: segment grid")));
        }
        Ok(grid)
    }

    pub(crate) fn owned_bytes(&self) -> usize {
        self.cell_start.owned_bytes() + self.segments.owned_bytes()
    }

    /// The segment nearest to `at` within `max_metres` (planar) among lines `usable` accepts;
    /// ties go to the lowest line and segment.
    pub(crate) fn nearest<'a>(
        &self,
        at: LatLon,
        max_metres: f64,
        line: impl Fn(u32) -> &'a [LatLon],
        usable: impl Fn(u32) -> bool,
    ) -> Option<Nearest> {
        let query = self.projection.to_plane(at);
        let (column, row) = self.layout.cell_of(query);
        let cell = self.layout.cell;
        let max_2 = max_metres * max_metres;
        let mut best: Option<(f64, u32, usize, f64)> = None;
        // Rings of cells around the query's cell, until no nearer segment can remain.
        for ring in 0..=((max_metres / cell) as i64 + 1) {
            let nearest_possible = (ring as f64 - 1.0).max(0.0) * cell;
            if nearest_possible * nearest_possible > best.map_or(max_2, |b| b.0) {
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
                    for &[l, segment] in &self.segments[range] {
                        if !usable(l) {
                            continue;
                        }
                        let points = line(l);
                        let (a, b) = (points[segment as usize], points[segment as usize + 1]);
                        let (t, d2) = project_onto_segment(
                            query,
                            self.projection.to_plane(a),
                            self.projection.to_plane(b),
                        );
                        let nearer = best.is_none_or(|(best_d2, best_line, best_segment, _)| {
                            (d2, l, segment as usize) < (best_d2, best_line, best_segment)
                        });
                        if d2 <= max_2 && nearer {
                            best = Some((d2, l, segment as usize, t));
                        }
                    }
                }
            }
        }
        best.map(|(_, line, segment, t)| Nearest { line, segment, t })
    }

    /// Lines with a segment whose bounding box meets the box from `south_west` to
    /// `north_east`, each once, in index order.
    pub(crate) fn lines_in(&self, south_west: LatLon, north_east: LatLon) -> Vec<u32> {
        let low = self.layout.cell_of(self.projection.to_plane(south_west));
        let high = self.layout.cell_of(self.projection.to_plane(north_east));
        let mut lines = Vec::new();
        for row in low.1.max(0)..=high.1.min(i64::from(self.layout.rows) - 1) {
            for column in low.0.max(0)..=high.0.min(i64::from(self.layout.columns) - 1) {
                if let Some(cell) = self.layout.index(column, row) {
                    let range = self.cell_start[cell] as usize..self.cell_start[cell + 1] as usize;
                    lines.extend(self.segments[range].iter().map(|&[line, _]| line));
                }
            }
        }
        lines.sort_unstable();
        lines.dedup();
        lines
    }
}
