//! Which courier gets an offer: the one with the shortest road travel time to the pickup.

use uuid::Uuid;

/// A courier who could take the job, and how long the road trip to the pickup takes (None
/// when there is no road route for its vehicle from where it is).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reachable {
    pub courier_id: Uuid,
    pub travel_seconds: Option<u32>,
    /// Straight-line order from the spatial prefilter (0 = nearest): breaks ties.
    pub rank: usize,
}

/// The courier to offer the job to: shortest travel time; on a tie, the nearer in a straight
/// line. Couriers with no route are never chosen.
pub fn choose(candidates: &[Reachable]) -> Option<Reachable> {
    candidates
        .iter()
        .filter(|c| c.travel_seconds.is_some())
        .min_by_key(|c| (c.travel_seconds, c.rank))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn courier(n: u128, travel_seconds: Option<u32>, rank: usize) -> Reachable {
        Reachable {
            courier_id: Uuid::from_u128(n),
            travel_seconds,
            rank,
        }
    }

    #[test]
    fn the_shortest_road_trip_wins_over_the_straight_line() {
        // The nearest in a straight line is across a river: 9 minutes by road.
        let chosen = choose(&[
            courier(1, Some(540), 0),
            courier(2, Some(180), 1),
            courier(3, Some(300), 2),
        ]);
        assert_eq!(chosen.unwrap().courier_id, Uuid::from_u128(2));
    }

    #[test]
    fn ties_go_to_the_nearer_and_unroutable_couriers_are_skipped() {
        let chosen = choose(&[
            courier(1, None, 0),
            courier(2, Some(60), 2),
            courier(3, Some(60), 1),
        ]);
        assert_eq!(chosen.unwrap().courier_id, Uuid::from_u128(3));
        assert_eq!(choose(&[courier(1, None, 0)]), None);
        assert_eq!(choose(&[]), None);
    }
}
