//! The map: the service's own road geometry drawn as SVG, no tiles and nothing from other
//! hosts. Coordinates are projected onto a fixed-width view box (equirectangular, scaled by
//! the cosine of the middle latitude, which is true enough at city scale).

use courier_geo::LatLon;
use serde::Serialize;

/// View box width; the height follows the journey's shape within the bounds below.
pub const WIDTH: f64 = 1000.0;
const MIN_HEIGHT: f64 = 560.0;
/// Taller would push the rest of the page off a phone's screen.
const MAX_HEIGHT: f64 = 800.0;
/// Room around the drawing, as a share of each side.
const PADDING: f64 = 0.08;
/// The smallest area drawn (degrees of latitude, ~330 m), so a short journey is not a blur.
const MIN_SPAN: f64 = 0.003;
/// Streets are simplified to this many view-box units: finer detail would not show.
const STREET_TOLERANCE_UNITS: f64 = 1.5;
/// The most street points one map carries, which bounds the page's weight.
pub const MAX_STREET_POINTS: usize = 2_500;
const METRES_PER_DEGREE_LAT: f64 = 111_320.0;

/// A point in view-box units, to a tenth.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[schema(as = TrackingMapPoint)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

impl Point {
    fn new(x: f64, y: f64) -> Self {
        Self {
            x: (x * 10.0).round() / 10.0,
            y: (y * 10.0).round() / 10.0,
        }
    }
}

/// From coordinates to view-box units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Projection {
    cos_lat: f64,
    left: f64,
    top: f64,
    scale: f64,
    height: f64,
}

impl Projection {
    /// The projection that shows every point, with padding, north up.
    pub fn fit(points: &[LatLon]) -> Self {
        let (mut south, mut north, mut west, mut east) = (90.0f64, -90.0f64, 180.0f64, -180.0f64);
        for p in points.iter().filter(|p| p.is_valid()) {
            south = south.min(p.lat);
            north = north.max(p.lat);
            west = west.min(p.lon);
            east = east.max(p.lon);
        }
        if south > north {
            (south, north, west, east) = (0.0, 0.0, 0.0, 0.0);
        }
        let middle_lat = (south + north) / 2.0;
        let cos_lat = middle_lat.to_radians().cos().max(0.01);
        let mut span_x = ((east - west) * cos_lat).max(MIN_SPAN) * (1.0 + 2.0 * PADDING);
        let mut span_y = (north - south).max(MIN_SPAN) * (1.0 + 2.0 * PADDING);
        let mut height = (WIDTH * span_y / span_x).round();
        if height < MIN_HEIGHT {
            height = MIN_HEIGHT;
            span_y = span_x * MIN_HEIGHT / WIDTH;
        } else if height > MAX_HEIGHT {
            height = MAX_HEIGHT;
            span_x = span_y * WIDTH / MAX_HEIGHT;
        }
        let centre_x = (west + east) / 2.0 * cos_lat;
        Self {
            cos_lat,
            left: centre_x - span_x / 2.0,
            top: middle_lat + span_y / 2.0,
            scale: WIDTH / span_x,
            height,
        }
    }

    pub fn project(&self, p: LatLon) -> Point {
        Point::new(
            (p.lon * self.cos_lat - self.left) * self.scale,
            (self.top - p.lat) * self.scale,
        )
    }

    /// The area the view box shows.
    pub fn visible(&self) -> Visible {
        let width_degrees = WIDTH / self.scale / self.cos_lat;
        let west = self.left / self.cos_lat;
        Visible {
            south_west: LatLon::new(self.top - self.height / self.scale, west),
            north_east: LatLon::new(self.top, west + width_degrees),
            metres_per_unit: METRES_PER_DEGREE_LAT / self.scale,
        }
    }

    /// The view box's width and height.
    pub fn size(&self) -> (f64, f64) {
        (WIDTH, self.height)
    }

    pub fn view_box(&self) -> String {
        format!("0 0 {WIDTH} {}", self.height)
    }

    /// An SVG path through `points` ("M x y L x y …"), dropping points that project onto
    /// the one before.
    pub fn path(&self, points: &[LatLon]) -> String {
        let mut d = String::new();
        let mut last: Option<Point> = None;
        for &p in points {
            let q = self.project(p);
            if last == Some(q) {
                continue;
            }
            let command = if last.is_none() { 'M' } else { 'L' };
            if !d.is_empty() {
                d.push(' ');
            }
            d.push_str(&format!("{command}{} {}", q.x, q.y));
            last = Some(q);
        }
        d
    }
}

/// The area a map shows, for fetching what to draw in it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Visible {
    pub south_west: LatLon,
    pub north_east: LatLon,
    /// Ground metres one view-box unit covers.
    pub metres_per_unit: f64,
}

impl Visible {
    /// Detail smaller than this (metres) does not show on the map.
    pub fn street_tolerance_metres(&self) -> f64 {
        self.metres_per_unit * STREET_TOLERANCE_UNITS
    }
}

/// What the map shows, in view-box units.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[schema(as = TrackingMap)]
pub struct MapView {
    pub view_box: String,
    /// The streets around the journey, from the market's road network and simplified to what
    /// shows: a light base map (empty when the network is not loaded).
    pub streets: String,
    /// Pickup to drop-off by road (a straight line when no road route is known).
    pub route: String,
    /// The courier's way to the next stop, when the courier is seen.
    pub courier_leg: String,
    pub pickup: Point,
    pub dropoff: Point,
    pub courier: Option<Point>,
    /// The map in words (its text alternative).
    pub description: String,
}

/// The streets inside an area, as polylines.
pub type StreetsIn<'a> = &'a dyn Fn(&Visible) -> Vec<Vec<LatLon>>;

/// What to draw, in coordinates.
pub struct MapInput<'a> {
    pub pickup: LatLon,
    pub dropoff: LatLon,
    pub route: Option<&'a [LatLon]>,
    pub courier_leg: Option<&'a [LatLon]>,
    pub courier: Option<LatLon>,
    pub streets: Option<StreetsIn<'a>>,
}

pub fn draw(input: &MapInput<'_>, description: String) -> MapView {
    let straight = [input.pickup, input.dropoff];
    let route = input.route.unwrap_or(&straight);
    let leg = input.courier_leg.unwrap_or(&[]);
    let mut all: Vec<LatLon> = Vec::with_capacity(route.len() + leg.len() + 3);
    all.extend_from_slice(route);
    all.extend_from_slice(leg);
    all.extend([input.pickup, input.dropoff]);
    all.extend(input.courier);
    let projection = Projection::fit(&all);
    let streets = input
        .streets
        .map_or_else(Vec::new, |streets| streets(&projection.visible()));
    MapView {
        view_box: projection.view_box(),
        streets: streets
            .iter()
            .map(|street| projection.path(street))
            .filter(|d| d.contains('L'))
            .collect::<Vec<_>>()
            .join(" "),
        route: projection.path(route),
        courier_leg: projection.path(leg),
        pickup: projection.project(input.pickup),
        dropoff: projection.project(input.dropoff),
        courier: input.courier.map(|c| projection.project(c)),
        description,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn north_is_up_and_east_is_right_inside_the_view_box() {
        let (south_west, north_east) = (LatLon::new(20.000, 50.000), LatLon::new(20.010, 50.020));
        let projection = Projection::fit(&[south_west, north_east]);
        let (a, b) = (
            projection.project(south_west),
            projection.project(north_east),
        );
        assert!(a.x < b.x && a.y > b.y, "{a:?} {b:?}");
        let height: f64 = projection
            .view_box()
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        for p in [a, b] {
            assert!(
                p.x > 0.0 && p.x < WIDTH && p.y > 0.0 && p.y < height,
                "{p:?}"
            );
        }
        // Padding on both sides, equal: the drawing is centred.
        assert!((a.x - (WIDTH - b.x)).abs() < 0.2, "{a:?} {b:?}");
    }

    #[test]
    fn distances_keep_their_proportions() {
        // 0.01° of longitude at 60° N is half as long as 0.01° of latitude.
        let origin = LatLon::new(60.0, 10.0);
        let east = LatLon::new(60.0, 10.01);
        let north = LatLon::new(60.01, 10.0);
        let projection = Projection::fit(&[origin, east, north]);
        let (o, e, n) = (
            projection.project(origin),
            projection.project(east),
            projection.project(north),
        );
        let ratio = (e.x - o.x) / (o.y - n.y);
        assert!((ratio - 0.5).abs() < 0.01, "{ratio}");
    }

    #[test]
    fn tall_and_tiny_journeys_stay_within_the_height_bounds() {
        let tall = Projection::fit(&[LatLon::new(20.0, 50.0), LatLon::new(20.1, 50.0)]);
        assert_eq!(tall.view_box(), "0 0 1000 800");
        let wide = Projection::fit(&[LatLon::new(20.0, 50.0), LatLon::new(20.0, 50.1)]);
        assert_eq!(wide.view_box(), "0 0 1000 560");
        // A single point: the smallest area, as tall as allowed, the point in the middle.
        let tiny = Projection::fit(&[LatLon::new(20.0, 50.0)]);
        assert_eq!(tiny.view_box(), "0 0 1000 800");
        let centre = tiny.project(LatLon::new(20.0, 50.0));
        assert_eq!(centre, Point::new(500.0, 400.0));
    }

    #[test]
    fn paths_skip_points_that_land_on_the_same_spot() {
        let projection = Projection::fit(&[LatLon::new(20.0, 50.0), LatLon::new(20.01, 50.01)]);
        let d = projection.path(&[
            LatLon::new(20.0, 50.0),
            LatLon::new(20.0, 50.0000001),
            LatLon::new(20.01, 50.01),
        ]);
        assert_eq!(d.matches('M').count(), 1);
        assert_eq!(d.matches('L').count(), 1, "{d}");
        assert_eq!(projection.path(&[]), "");
    }

    #[test]
    fn without_a_road_route_the_map_draws_a_straight_line() {
        let view = draw(
            &MapInput {
                pickup: LatLon::new(20.0, 50.0),
                dropoff: LatLon::new(20.01, 50.01),
                route: None,
                courier_leg: None,
                courier: None,
                streets: None,
            },
            "a map".into(),
        );
        assert!(view.route.starts_with('M') && view.route.contains('L'));
        assert_eq!(view.courier_leg, "");
        assert_eq!(view.courier, None);
        assert_eq!(view.streets, "");
    }

    #[test]
    fn streets_are_asked_for_the_visible_area_and_drawn_as_one_path() {
        let (pickup, dropoff) = (LatLon::new(20.0, 50.0), LatLon::new(20.01, 50.02));
        let asked = std::cell::Cell::new(None);
        let streets = |visible: &Visible| {
            asked.set(Some(*visible));
            vec![
                vec![LatLon::new(20.005, 49.99), LatLon::new(20.005, 50.03)],
                // A street shorter than a view-box unit draws nothing.
                vec![LatLon::new(20.0, 50.0), LatLon::new(20.0, 50.0000001)],
                vec![LatLon::new(19.99, 50.01), LatLon::new(20.02, 50.01)],
            ]
        };
        let view = draw(
            &MapInput {
                pickup,
                dropoff,
                route: None,
                courier_leg: None,
                courier: None,
                streets: Some(&streets),
            },
            "a map".into(),
        );
        let visible = asked.get().expect("streets were asked for");
        // The visible area holds the journey with its padding, and no more than the view box.
        assert!(visible.south_west.lat < 20.0 && visible.north_east.lat > 20.01);
        assert!(visible.south_west.lon < 50.0 && visible.north_east.lon > 50.02);
        let projection = Projection::fit(&[pickup, dropoff]);
        let corner = projection.project(visible.north_east);
        assert!(
            (corner.x - WIDTH).abs() < 0.2 && corner.y.abs() < 0.2,
            "{corner:?}"
        );
        // 1000 units across ~2.3 km (0.02° at 20° N, plus padding).
        assert!((visible.metres_per_unit - 2.4).abs() < 0.3, "{visible:?}");
        assert_eq!(view.streets.matches('M').count(), 2, "{}", view.streets);
    }
}
