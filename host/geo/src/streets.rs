//! Road geometry for drawing: the streets inside an area, simplified to what a map can show.

use crate::coords::{LatLon, LocalProjection, project_onto_segment};
use crate::network::RoadNetwork;

impl RoadNetwork {
    /// The roads inside the box from `south_west` to `north_east`, for a base map: every road
    /// edge with a segment in the box, simplified so that no dropped bend lies farther than
    /// `tolerance_metres` from the line drawn, longest first until `max_points` points. Roads
    /// shorter than the tolerance are left out: they would not show.
    pub fn streets_in(
        &self,
        south_west: LatLon,
        north_east: LatLon,
        tolerance_metres: f64,
        max_points: usize,
    ) -> Vec<Vec<LatLon>> {
        let projection = LocalProjection::around_latitude((south_west.lat + north_east.lat) / 2.0);
        let mut edges: Vec<(f64, u32)> = self
            .snapper
            .edges_in(south_west, north_east)
            .into_iter()
            .map(|edge| (self.graph.edges[edge as usize].length_metres, edge))
            .filter(|(length, _)| *length >= tolerance_metres)
            .collect();
        edges.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut streets = Vec::new();
        let mut points = 0;
        for (_, edge) in edges {
            let line = simplify(self.graph.geometry(edge), tolerance_metres, projection);
            if points + line.len() > max_points {
                break;
            }
            points += line.len();
            streets.push(line);
        }
        streets
    }
}

/// Douglas-Peucker: keeps the ends and every bend farther than `tolerance_metres` from the
/// simplified line.
fn simplify(points: &[LatLon], tolerance_metres: f64, projection: LocalProjection) -> Vec<LatLon> {
    if points.len() <= 2 {
        return points.to_vec();
    }
    let plane: Vec<[f64; 2]> = points.iter().map(|p| projection.to_plane(*p)).collect();
    let mut keep = vec![false; points.len()];
    keep[0] = true;
    keep[points.len() - 1] = true;
    let mut pending = vec![(0, points.len() - 1)];
    let tolerance_2 = tolerance_metres * tolerance_metres;
    while let Some((first, last)) = pending.pop() {
        let farthest = (first + 1..last)
            .map(|i| {
                (
                    i,
                    project_onto_segment(plane[i], plane[first], plane[last]).1,
                )
            })
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((i, distance_2)) = farthest
            && distance_2 > tolerance_2
        {
            keep[i] = true;
            pending.push((first, i));
            pending.push((i, last));
        }
    }
    points
        .iter()
        .zip(keep)
        .filter_map(|(p, kept)| kept.then_some(*p))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(x_metres: f64, y_metres: f64) -> LatLon {
        let projection = LocalProjection::around_latitude(0.0);
        projection.to_lat_lon([x_metres, y_metres])
    }

    #[test]
    fn bends_within_the_tolerance_are_dropped_and_others_kept() {
        let projection = LocalProjection::around_latitude(0.0);
        // A straight run with a 2 m wobble, then a 50 m corner.
        let line = [at(0.0, 0.0), at(50.0, 2.0), at(100.0, 0.0), at(100.0, 50.0)];
        let simplified = simplify(&line, 5.0, projection);
        assert_eq!(simplified, [line[0], line[2], line[3]]);
        let fine = simplify(&line, 1.0, projection);
        assert_eq!(fine.len(), 4);
        assert_eq!(simplify(&line[..2], 100.0, projection), &line[..2]);
    }

    #[test]
    fn streets_in_a_box_are_the_roads_there_longest_first_within_the_budget() {
        let network = RoadNetwork::from_pbf_bytes(&crate::demo_city_pbf()).unwrap();
        // A box in the middle of Demo City (20.00-20.02 N, 50.00-50.02 E).
        let (south_west, north_east) = (LatLon::new(20.005, 50.005), LatLon::new(20.01, 50.01));
        let streets = network.streets_in(south_west, north_east, 2.0, 10_000);
        assert!(streets.len() > 20, "{}", streets.len());
        let near_box =
            |p: &LatLon| (20.003..=20.012).contains(&p.lat) && (50.003..=50.012).contains(&p.lon);
        assert!(
            streets
                .iter()
                .all(|s| s.len() >= 2 && s.iter().any(near_box))
        );
        let length =
            |s: &Vec<LatLon>| -> f64 { s.windows(2).map(|w| w[0].distance_metres(w[1])).sum() };
        assert!(length(&streets[0]) >= length(streets.last().unwrap()));
        // A small budget keeps the longest roads only.
        let few = network.streets_in(south_west, north_east, 2.0, 20);
        assert!(few.iter().map(Vec::len).sum::<usize>() <= 20);
        assert!(!few.is_empty() && few.len() < streets.len());
        assert_eq!(few[0], streets[0]);
        // Nothing far away.
        let far = network.streets_in(LatLon::new(30.0, 30.0), LatLon::new(30.01, 30.01), 2.0, 100);
        assert!(far.is_empty());
    }
}
