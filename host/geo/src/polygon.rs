//! Coverage polygons: the area a road network (or a market) serves.

use crate::coords::LatLon;

/// Why a polygon could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolygonError {
    #[error("a polygon needs at least 3 distinct vertices, got {0}")]
    TooFewVertices(usize),
    #[error("vertex {index} ({lon}, {lat}) is not a valid longitude/latitude")]
    InvalidVertex { index: usize, lon: f64, lat: f64 },
}

/// A simple polygon in longitude/latitude, without holes.
///
/// Edges are straight in degree space, which is what GeoJSON consumers draw too. Polygons must
/// not cross the antimeridian.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Polygon {
    /// Vertices in order, the ring is closed implicitly (last connects to first).
    vertices: Vec<LatLon>,
}

impl Polygon {
    /// Builds a polygon from `(longitude, latitude)` pairs (GeoJSON order). A closing vertex
    /// equal to the first is accepted and dropped.
    pub fn from_lon_lat(pairs: &[(f64, f64)]) -> Result<Self, PolygonError> {
        let mut vertices = Vec::with_capacity(pairs.len());
        for (index, &(lon, lat)) in pairs.iter().enumerate() {
            let vertex = LatLon::new(lat, lon);
            if !vertex.is_valid() {
                return Err(PolygonError::InvalidVertex { index, lon, lat });
            }
            vertices.push(vertex);
        }
        if vertices.len() > 1 && vertices.first() == vertices.last() {
            vertices.pop();
        }
        vertices.dedup();
        if vertices.len() < 3 {
            return Err(PolygonError::TooFewVertices(vertices.len()));
        }
        Ok(Self { vertices })
    }

    /// The convex hull of `points` (Andrew's monotone chain), or `None` when the points are
    /// fewer than 3 or all collinear.
    pub(crate) fn convex_hull(points: impl IntoIterator<Item = LatLon>) -> Option<Self> {
        let mut points: Vec<LatLon> = points.into_iter().collect();
        points.sort_by(|a, b| a.lon.total_cmp(&b.lon).then(a.lat.total_cmp(&b.lat)));
        points.dedup();
        if points.len() < 3 {
            return None;
        }
        let cross = |o: LatLon, a: LatLon, b: LatLon| {
            (a.lon - o.lon) * (b.lat - o.lat) - (a.lat - o.lat) * (b.lon - o.lon)
        };
        let mut hull: Vec<LatLon> = Vec::with_capacity(points.len() * 2);
        for pass in [
            &points[..],
            &points.iter().rev().copied().collect::<Vec<_>>()[..],
        ] {
            let floor = hull.len();
            for &p in pass {
                while hull.len() >= floor + 2
                    && cross(hull[hull.len() - 2], hull[hull.len() - 1], p) <= 0.0
                {
                    hull.pop();
                }
                hull.push(p);
            }
            // The last point of each pass is the first point of the next one.
            hull.pop();
        }
        (hull.len() >= 3).then_some(Self { vertices: hull })
    }

    /// The convex hull of `points`, or for degenerate inputs (fewer than 3 points, or all on
    /// one line) their bounding box grown by `margin_degrees`; `None` without points.
    pub(crate) fn covering(points: &[LatLon], margin_degrees: f64) -> Option<Self> {
        if let Some(hull) = Self::convex_hull(points.iter().copied()) {
            return Some(hull);
        }
        let first = points.first()?;
        let (mut south, mut west, mut north, mut east) =
            (first.lat, first.lon, first.lat, first.lon);
        for p in points {
            south = south.min(p.lat);
            north = north.max(p.lat);
            west = west.min(p.lon);
            east = east.max(p.lon);
        }
        let (south, north) = (south - margin_degrees, north + margin_degrees);
        let (west, east) = (west - margin_degrees, east + margin_degrees);
        Some(Self {
            vertices: vec![
                LatLon::new(south, west),
                LatLon::new(south, east),
                LatLon::new(north, east),
                LatLon::new(north, west),
            ],
        })
    }

    /// Vertices as `(longitude, latitude)` pairs (GeoJSON order), without the closing vertex.
    pub fn to_lon_lat(&self) -> Vec<(f64, f64)> {
        self.vertices.iter().map(|v| (v.lon, v.lat)).collect()
    }

    pub fn vertices(&self) -> &[LatLon] {
        &self.vertices
    }

    /// Even-odd ray casting; points exactly on an edge may fall either way.
    pub fn contains(&self, point: LatLon) -> bool {
        if !point.is_valid() {
            return false;
        }
        let mut inside = false;
        let mut previous = self.vertices[self.vertices.len() - 1];
        for &current in &self.vertices {
            if (current.lat > point.lat) != (previous.lat > point.lat) {
                let crossing_lon = current.lon
                    + (point.lat - current.lat) * (previous.lon - current.lon)
                        / (previous.lat - current.lat);
                if point.lon < crossing_lon {
                    inside = !inside;
                }
            }
            previous = current;
        }
        inside
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn square_contains_inside_and_rejects_outside() {
        let square =
            Polygon::from_lon_lat(&[(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0), (0.0, 0.0)])
                .unwrap();
        assert_eq!(square.vertices().len(), 4);
        assert!(square.contains(LatLon::new(0.5, 0.5)));
        assert!(!square.contains(LatLon::new(1.5, 0.5)));
        assert!(!square.contains(LatLon::new(0.5, -0.1)));
        assert!(!square.contains(LatLon::new(f64::NAN, 0.5)));
    }

    #[test]
    fn concave_polygon_excludes_its_notch() {
        // A "U" shape: the notch between the arms is outside.
        let u = Polygon::from_lon_lat(&[
            (0.0, 0.0),
            (3.0, 0.0),
            (3.0, 3.0),
            (2.0, 3.0),
            (2.0, 1.0),
            (1.0, 1.0),
            (1.0, 3.0),
            (0.0, 3.0),
        ])
        .unwrap();
        assert!(u.contains(LatLon::new(2.0, 0.5)));
        assert!(!u.contains(LatLon::new(2.0, 1.5)));
        assert!(u.contains(LatLon::new(2.0, 2.5)));
    }

    #[test]
    fn rejects_degenerate_and_invalid_input() {
        assert_eq!(
            Polygon::from_lon_lat(&[(0.0, 0.0), (1.0, 1.0), (0.0, 0.0)]),
            Err(PolygonError::TooFewVertices(2))
        );
        assert!(matches!(
            Polygon::from_lon_lat(&[(0.0, 0.0), (1.0, 95.0), (1.0, 1.0)]),
            Err(PolygonError::InvalidVertex { index: 1, .. })
        ));
    }

    #[test]
    fn convex_hull_drops_interior_points() {
        let mut points = vec![
            LatLon::new(0.0, 0.0),
            LatLon::new(0.0, 2.0),
            LatLon::new(2.0, 2.0),
            LatLon::new(2.0, 0.0),
        ];
        points.extend((1..10).map(|i| LatLon::new(0.1 * i as f64, 1.0)));
        points.push(LatLon::new(1.0, 2.0)); // on an edge: not a vertex
        let hull = Polygon::convex_hull(points).unwrap();
        assert_eq!(hull.vertices().len(), 4);
        assert!(hull.contains(LatLon::new(1.0, 1.0)));
        assert!(!hull.contains(LatLon::new(3.0, 1.0)));
        assert!(Polygon::convex_hull([LatLon::new(0.0, 0.0), LatLon::new(1.0, 1.0)]).is_none());
        let collinear: Vec<LatLon> = (0..5).map(|i| LatLon::new(i as f64, i as f64)).collect();
        assert!(Polygon::convex_hull(collinear.iter().copied()).is_none());
        let boxed = Polygon::covering(&collinear, 0.5).unwrap();
        assert_eq!(boxed.vertices().len(), 4);
        assert!(boxed.contains(LatLon::new(2.0, 2.2)));
        assert!(!boxed.contains(LatLon::new(2.0, 4.6)));
        assert!(Polygon::covering(&[], 0.5).is_none());
    }
}
