//! A simulated drive: a road shape and where on it the courier is after some of its time.
//! Pure.

use courier_geo::LatLon;
use serde_json::Value;

/// The point `fraction` (0 to 1) of the way along `shape`, by distance: the courier moves at
/// the leg's average speed, bend by bend.
pub fn point_along(shape: &[LatLon], fraction: f64) -> Option<LatLon> {
    let (first, rest) = shape.split_first()?;
    let lengths: Vec<f64> = shape
        .windows(2)
        .map(|pair| pair[0].distance_metres(pair[1]))
        .collect();
    let total: f64 = lengths.iter().sum();
    if rest.is_empty() || total <= 0.0 {
        return Some(*first);
    }
    let mut remaining = total * fraction.clamp(0.0, 1.0);
    for (pair, length) in shape.windows(2).zip(&lengths) {
        if remaining <= *length {
            let t = if *length > 0.0 {
                remaining / length
            } else {
                0.0
            };
            return Some(LatLon::new(
                pair[0].lat + (pair[1].lat - pair[0].lat) * t,
                pair[0].lon + (pair[1].lon - pair[0].lon) * t,
            ));
        }
        remaining -= length;
    }
    shape.last().copied()
}

/// How far along its leg a courier is after `elapsed_seconds` of real time at `speed`.
pub fn fraction_done(elapsed_seconds: f64, speed: f64, leg_seconds: f64) -> f64 {
    if leg_seconds <= 0.0 {
        return 1.0;
    }
    (elapsed_seconds.max(0.0) * speed / leg_seconds).clamp(0.0, 1.0)
}

/// A shape as stored: `[[lat, lon], ...]`.
pub fn to_json(shape: &[LatLon]) -> Value {
    Value::Array(
        shape
            .iter()
            .map(|p| Value::from(vec![p.lat, p.lon]))
            .collect(),
    )
}

pub fn from_json(stored: &Value) -> Vec<LatLon> {
    stored
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|pair| Some(LatLon::new(pair[0].as_f64()?, pair[1].as_f64()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: LatLon, b: LatLon) -> bool {
        a.distance_metres(b) < 0.5
    }

    #[test]
    fn the_courier_moves_along_the_bends_by_distance() {
        // An L: 1 km north, then 1 km east (roughly, at this latitude).
        let corner = LatLon::new(47.009, 9.5);
        let shape = [LatLon::new(47.0, 9.5), corner, LatLon::new(47.009, 9.5132)];
        assert!(close(point_along(&shape, 0.0).unwrap(), shape[0]));
        assert!(close(point_along(&shape, 1.0).unwrap(), shape[2]));
        let first_leg = shape[0].distance_metres(corner);
        let total = first_leg + corner.distance_metres(shape[2]);
        assert!(close(
            point_along(&shape, first_leg / total).unwrap(),
            corner
        ));
        let quarter = point_along(&shape, 0.25).unwrap();
        assert!(
            (quarter.lon - 9.5).abs() < 1e-9,
            "still on the first stretch"
        );
        assert!(quarter.lat > 47.0 && quarter.lat < 47.009);
        // Out of range is clamped; degenerate shapes stay put.
        assert!(close(point_along(&shape, 7.0).unwrap(), shape[2]));
        assert!(close(point_along(&shape[..1], 0.5).unwrap(), shape[0]));
        assert!(point_along(&[], 0.5).is_none());
    }

    #[test]
    fn progress_scales_with_speed_and_ends_at_one() {
        assert_eq!(fraction_done(30.0, 1.0, 60.0), 0.5);
        assert_eq!(fraction_done(1.0, 60.0, 120.0), 0.5);
        assert_eq!(fraction_done(500.0, 1.0, 60.0), 1.0);
        assert_eq!(fraction_done(-5.0, 1.0, 60.0), 0.0);
        assert_eq!(fraction_done(1.0, 1.0, 0.0), 1.0);
    }

    #[test]
    fn shapes_round_trip_through_json() {
        let shape = vec![LatLon::new(1.5, 2.25), LatLon::new(-3.0, 4.0)];
        let back = from_json(&to_json(&shape));
        assert_eq!(back.len(), 2);
        assert!(close(back[1], shape[1]));
    }
}
