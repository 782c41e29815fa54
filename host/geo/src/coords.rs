//! Coordinates, great-circle distances and a local metric projection.

/// Mean Earth radius in metres (IUGG), used for all distance maths.
const EARTH_RADIUS_METRES: f64 = 6_371_008.8;

/// A WGS84 coordinate in decimal degrees.
#[repr(C)]
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    bytemuck::Pod,
    bytemuck::Zeroable,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct LatLon {
    pub lat: f64,
    pub lon: f64,
}

impl LatLon {
    pub const fn new(lat: f64, lon: f64) -> Self {
        Self { lat, lon }
    }

    /// True when both parts are finite and inside the WGS84 ranges.
    pub fn is_valid(&self) -> bool {
        self.lat.is_finite()
            && self.lon.is_finite()
            && (-90.0..=90.0).contains(&self.lat)
            && (-180.0..=180.0).contains(&self.lon)
    }

    /// Great-circle (haversine) distance in metres.
    pub fn distance_metres(&self, other: LatLon) -> f64 {
        let (lat1, lat2) = (self.lat.to_radians(), other.lat.to_radians());
        let dlat = lat2 - lat1;
        let dlon = (other.lon - self.lon).to_radians();
        let a = (dlat / 2.0).sin().powi(2) + lat1.cos() * lat2.cos() * (dlon / 2.0).sin().powi(2);
        2.0 * EARTH_RADIUS_METRES * a.sqrt().min(1.0).asin()
    }
}

/// Equirectangular projection around a reference latitude, giving planar metres.
///
/// Extracts span at most a few hundred kilometres, where the distortion of this projection
/// stays well below the snapping and search tolerances, and it is far cheaper than haversine
/// inside R-tree searches.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(crate) struct LocalProjection {
    metres_per_degree_lon: f64,
    metres_per_degree_lat: f64,
}

impl LocalProjection {
    pub(crate) fn around_latitude(lat: f64) -> Self {
        let metres_per_degree_lat = EARTH_RADIUS_METRES.to_radians();
        Self {
            metres_per_degree_lon: metres_per_degree_lat * lat.to_radians().cos().max(0.01),
            metres_per_degree_lat,
        }
    }

    /// Projection centred on the mean latitude of `points` (equator when empty).
    pub(crate) fn fitting(points: impl IntoIterator<Item = LatLon>) -> Self {
        let (sum, count) = points
            .into_iter()
            .fold((0.0, 0usize), |(sum, count), p| (sum + p.lat, count + 1));
        let mean = if count == 0 { 0.0 } else { sum / count as f64 };
        Self::around_latitude(mean)
    }

    pub(crate) fn to_plane(self, p: LatLon) -> [f64; 2] {
        [
            p.lon * self.metres_per_degree_lon,
            p.lat * self.metres_per_degree_lat,
        ]
    }

    pub(crate) fn to_lat_lon(self, xy: [f64; 2]) -> LatLon {
        LatLon::new(
            xy[1] / self.metres_per_degree_lat,
            xy[0] / self.metres_per_degree_lon,
        )
    }
}

/// Closest point to `p` on segment `a`-`b` in the plane, as the fraction along the segment
/// (0 at `a`, 1 at `b`) and the squared distance.
pub(crate) fn project_onto_segment(p: [f64; 2], a: [f64; 2], b: [f64; 2]) -> (f64, f64) {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    let length_2 = dx * dx + dy * dy;
    let t = if length_2 == 0.0 {
        0.0
    } else {
        (((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / length_2).clamp(0.0, 1.0)
    };
    let (x, y) = (a[0] + t * dx, a[1] + t * dy);
    let distance_2 = (p[0] - x).powi(2) + (p[1] - y).powi(2);
    (t, distance_2)
}

/// Linear interpolation between two coordinates (fine over one road segment).
pub(crate) fn interpolate(a: LatLon, b: LatLon, t: f64) -> LatLon {
    LatLon::new(a.lat + (b.lat - a.lat) * t, a.lon + (b.lon - a.lon) * t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_rejects_out_of_range_and_non_finite() {
        assert!(LatLon::new(47.14, 9.52).is_valid());
        assert!(LatLon::new(-90.0, 180.0).is_valid());
        assert!(!LatLon::new(90.5, 0.0).is_valid());
        assert!(!LatLon::new(0.0, -180.1).is_valid());
        assert!(!LatLon::new(f64::NAN, 0.0).is_valid());
        assert!(!LatLon::new(0.0, f64::INFINITY).is_valid());
    }

    #[test]
    fn haversine_matches_known_distance() {
        // One degree of latitude is ~111.2 km everywhere.
        let d = LatLon::new(47.0, 9.5).distance_metres(LatLon::new(48.0, 9.5));
        assert!((d - 111_195.0).abs() < 10.0, "{d}");
        // Two points in Vaduz and Schaan, about 2.8 km apart.
        let d = LatLon::new(47.1410, 9.5209).distance_metres(LatLon::new(47.1650, 9.5097));
        assert!((2_500.0..3_000.0).contains(&d), "{d}");
    }

    #[test]
    fn projection_agrees_with_haversine_locally() {
        let a = LatLon::new(39.29, -76.60);
        let b = LatLon::new(39.30, -76.58);
        let proj = LocalProjection::around_latitude(39.29);
        let (pa, pb) = (proj.to_plane(a), proj.to_plane(b));
        let planar = ((pa[0] - pb[0]).powi(2) + (pa[1] - pb[1]).powi(2)).sqrt();
        let great_circle = a.distance_metres(b);
        assert!((planar - great_circle).abs() / great_circle < 0.002);
        let back = proj.to_lat_lon(pa);
        assert!((back.lat - a.lat).abs() < 1e-9 && (back.lon - a.lon).abs() < 1e-9);
    }

    #[test]
    fn projection_onto_segment_clamps_to_ends() {
        let (t, d2) = project_onto_segment([5.0, 3.0], [0.0, 0.0], [10.0, 0.0]);
        assert_eq!((t, d2), (0.5, 9.0));
        let (t, d2) = project_onto_segment([-4.0, 3.0], [0.0, 0.0], [10.0, 0.0]);
        assert_eq!((t, d2), (0.0, 25.0));
        let (t, _) = project_onto_segment([1.0, 1.0], [2.0, 2.0], [2.0, 2.0]);
        assert_eq!(t, 0.0);
    }
}
