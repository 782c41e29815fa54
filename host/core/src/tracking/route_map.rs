//! A courier's route drawn for its app: every stop in order, joined by road (a straight line
//! where no road route is known), the courier where it was last seen, and the streets around,
//! in the tracking page's drawing.

use courier_geo::LatLon;
use serde_json::Value;

use super::map::{Point, Projection};
use super::{Tracking, stop_point};
use crate::markets::Market;
use courier_domain::Vehicle;

/// Fewer street points than a tracking page: an offer and a route share one phone screen and
/// its page budget.
const MAX_ROUTE_STREET_POINTS: usize = 1_200;

/// What the map shows, in view-box units, with the route's length and time by road.
#[derive(Clone, Debug, PartialEq)]
pub struct RouteMap {
    pub view_box: String,
    pub streets: String,
    /// Courier (if seen) to the first stop, then stop to stop.
    pub route: String,
    pub stops: Vec<Point>,
    pub courier: Option<Point>,
    /// Along the route from the first stop to the last (no leg to the first).
    pub distance_metres: u32,
    pub duration_seconds: u32,
    /// From the courier to the first stop, when it is seen and a road route is known.
    pub to_first_stop_seconds: Option<u32>,
}

/// The streets `projection` shows of `market`'s network, as one SVG path.
fn streets_in_view(market: Option<&Market>, projection: &Projection) -> String {
    let visible = projection.visible();
    let streets = market
        .and_then(|m| m.network().ok())
        .map_or_else(Vec::new, |network| {
            network.streets_in(
                visible.south_west,
                visible.north_east,
                visible.street_tolerance_metres(),
                MAX_ROUTE_STREET_POINTS,
            )
        });
    streets
        .iter()
        .map(|street| projection.path(street))
        .filter(|d| d.contains('L'))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Where a courier has been, drawn over the streets around.
#[derive(Clone, Debug, PartialEq)]
pub struct TrailMap {
    pub view_box: String,
    pub streets: String,
    pub trail: String,
    /// The latest point.
    pub last: Point,
    /// The trail's length in a straight line from point to point.
    pub distance_metres: u32,
}

impl Tracking {
    /// `trail` (oldest first) in `market_id`'s drawing; None without a point.
    pub fn trail_map(&self, market_id: &str, trail: &[LatLon]) -> Option<TrailMap> {
        let last = *trail.last()?;
        let market = self.markets.get(market_id);
        let projection = Projection::fit(trail);
        let distance_metres = trail
            .windows(2)
            .map(|pair| pair[0].distance_metres(pair[1]))
            .sum::<f64>()
            .round() as u32;
        Some(TrailMap {
            view_box: projection.view_box(),
            streets: streets_in_view(market.map(|m| m.as_ref()), &projection),
            trail: projection.path(trail),
            last: projection.project(last),
            distance_metres,
        })
    }

    /// The route through `stops` (each a stop as jobs keep them: `latitude`, `longitude`) in
    /// `market_id` for `vehicle`, from `courier` when it is known.
    pub fn route_map(
        &self,
        market_id: &str,
        vehicle: Vehicle,
        courier: Option<LatLon>,
        stops: &[&Value],
    ) -> RouteMap {
        let market = self.markets.get(market_id);
        let points: Vec<LatLon> = stops
            .iter()
            .map(|stop| stop_point(stop).unwrap_or(LatLon::new(0.0, 0.0)))
            .collect();
        let leg = |from: LatLon, to: LatLon| {
            market
                .as_ref()
                .and_then(|m| m.route(vehicle, from, to).ok())
        };
        let mut shape: Vec<LatLon> = Vec::new();
        let (mut distance_metres, mut duration_seconds) = (0u32, 0u32);
        let mut to_first_stop_seconds = None;
        if let (Some(from), Some(first)) = (courier, points.first()) {
            match leg(from, *first) {
                Some(route) => {
                    to_first_stop_seconds = Some(route.duration_seconds);
                    shape.extend(route.shape);
                }
                None => shape.extend([from, *first]),
            }
        }
        for pair in points.windows(2) {
            match leg(pair[0], pair[1]) {
                Some(route) => {
                    distance_metres += route.distance_metres;
                    duration_seconds += route.duration_seconds;
                    shape.extend(route.shape);
                }
                None => {
                    distance_metres += pair[0].distance_metres(pair[1]).round() as u32;
                    shape.extend([pair[0], pair[1]]);
                }
            }
        }
        let mut all = shape.clone();
        all.extend(points.iter().copied());
        all.extend(courier);
        let projection = Projection::fit(&all);
        RouteMap {
            view_box: projection.view_box(),
            streets: streets_in_view(market.map(|m| m.as_ref()), &projection),
            route: projection.path(&shape),
            stops: points.iter().map(|p| projection.project(*p)).collect(),
            courier: courier.map(|c| projection.project(c)),
            distance_metres,
            duration_seconds,
            to_first_stop_seconds,
        }
    }
}
