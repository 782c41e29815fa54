//! What a price book would change: the tally of a market's recent quotes re-priced under an
//! upload, how many prices move and by how much, before the operator activates it.

use serde::Serialize;

/// How many recent quotes a comparison re-prices.
pub const COMPARE_SAMPLE: i64 = 1000;

/// What activating an upload would change, over the market's recent quotes.
#[derive(Debug, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[schema(as = PriceBookComparison)]
pub struct Comparison {
    pub market: String,
    pub version: i32,
    pub quotes_compared: u64,
    pub changed: u64,
    pub increased: u64,
    pub decreased: u64,
    /// Quotes the new book refuses to price (vehicle not offered, not covered).
    pub refused: u64,
    pub total_before_minor: i64,
    pub total_after_minor: i64,
    pub largest_increase_minor: i64,
    pub largest_decrease_minor: i64,
    /// Mean change over the re-priced quotes, in minor units, rounded toward zero.
    pub mean_change_minor: i64,
}

impl Comparison {
    pub(super) fn record(&mut self, before: i64, after: Option<i64>) {
        self.quotes_compared += 1;
        let Some(after) = after else {
            self.refused += 1;
            return;
        };
        self.total_before_minor += before;
        self.total_after_minor += after;
        let change = after - before;
        if change != 0 {
            self.changed += 1;
        }
        if change > 0 {
            self.increased += 1;
            self.largest_increase_minor = self.largest_increase_minor.max(change);
        } else if change < 0 {
            self.decreased += 1;
            self.largest_decrease_minor = self.largest_decrease_minor.max(-change);
        }
    }

    pub(super) fn finish(mut self) -> Self {
        let priced = self.quotes_compared - self.refused;
        if priced > 0 {
            self.mean_change_minor =
                (self.total_after_minor - self.total_before_minor) / priced as i64;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comparison_counts_moves_in_each_direction() {
        let mut comparison = Comparison::default();
        comparison.record(1000, Some(1100));
        comparison.record(1000, Some(1000));
        comparison.record(2000, Some(1700));
        comparison.record(500, None);
        let comparison = comparison.finish();
        assert_eq!(comparison.quotes_compared, 4);
        assert_eq!(comparison.refused, 1);
        assert_eq!(
            (
                comparison.changed,
                comparison.increased,
                comparison.decreased
            ),
            (2, 1, 1)
        );
        assert_eq!(comparison.largest_increase_minor, 100);
        assert_eq!(comparison.largest_decrease_minor, 300);
        assert_eq!(comparison.total_before_minor, 4000);
        assert_eq!(comparison.total_after_minor, 3800);
        assert_eq!(comparison.mean_change_minor, -66);
    }
}
