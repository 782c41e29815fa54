//! The histogram of a comparison's price changes, as the page draws it (SVG, server-side):
//! unchanged quotes in a bar of their own, changes up and down in bins of a round width.

/// Bins on each side of "unchanged", at most.
const BINS_PER_SIDE: i64 = 8;
/// The drawing's size, in SVG user units.
pub(super) const WIDTH: u32 = 720;
pub(super) const HEIGHT: u32 = 220;
/// Room under the bars for the axis.
const AXIS: u32 = 24;

/// One bar: changes from `from_minor` to `to_minor` (both inclusive; 0 to 0 is "unchanged").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Bin {
    pub from_minor: i64,
    pub to_minor: i64,
    pub count: u64,
    /// `down`, `same` or `up`: how the bar is coloured.
    pub direction: &'static str,
    pub label: String,
    /// The bar's box in the drawing.
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Histogram {
    pub bins: Vec<Bin>,
    /// The width of a bin, in minor units.
    pub step_minor: i64,
    /// The tallest bar's count.
    pub most: u64,
    pub width: u32,
    pub height: u32,
    /// Where the axis line is drawn.
    pub axis_y: u32,
}

/// The smallest round width (1, 2 or 5 times a power of ten, minor units) that fits changes
/// as large as `largest` in [`BINS_PER_SIDE`] bins.
fn step_for(largest: i64) -> i64 {
    let mut power = 1i64;
    loop {
        for factor in [1, 2, 5] {
            let step = factor * power;
            if step * BINS_PER_SIDE >= largest {
                return step;
            }
        }
        power = power.saturating_mul(10);
    }
}

/// The histogram of `changes` (new price minus old, minor units), labelled by `money`.
pub(super) fn histogram(changes: &[i64], money: impl Fn(i64) -> String) -> Histogram {
    let largest = changes
        .iter()
        .map(|c| c.saturating_abs())
        .max()
        .unwrap_or(0);
    let step = step_for(largest.max(1));
    let below = changes
        .iter()
        .filter(|c| **c < 0)
        .map(|c| (-c + step - 1) / step)
        .max()
        .unwrap_or(0);
    let above = changes
        .iter()
        .filter(|c| **c > 0)
        .map(|c| (c + step - 1) / step)
        .max()
        .unwrap_or(0);
    let mut bins = Vec::new();
    for k in (1..=below).rev() {
        let (from, to) = (-k * step, -(k - 1) * step - 1);
        bins.push((
            from,
            to,
            "down",
            format!("{} to {}", money(from), money(to)),
        ));
    }
    bins.push((0, 0, "same", "unchanged".to_owned()));
    for k in 1..=above {
        let (from, to) = ((k - 1) * step + 1, k * step);
        bins.push((
            from,
            to,
            "up",
            format!("+{} to +{}", money(from), money(to)),
        ));
    }
    let counts: Vec<u64> = bins
        .iter()
        .map(|(from, to, _, _)| {
            changes
                .iter()
                .filter(|c| (*from..=*to).contains(*c))
                .count() as u64
        })
        .collect();
    let most = counts.iter().copied().max().unwrap_or(0);
    let slot = WIDTH / u32::try_from(bins.len()).unwrap_or(1).max(1);
    let room = HEIGHT - AXIS;
    let bins = bins
        .into_iter()
        .zip(counts)
        .enumerate()
        .map(|(i, ((from, to, direction, label), count))| {
            let height = (count * u64::from(room))
                .checked_div(most)
                .map_or(0, |h| u32::try_from(h).unwrap_or(room));
            Bin {
                from_minor: from,
                to_minor: to,
                count,
                direction,
                label,
                x: u32::try_from(i).unwrap_or(0) * slot + 2,
                y: room - height,
                width: slot.saturating_sub(4).max(1),
                height,
            }
        })
        .collect();
    Histogram {
        bins,
        step_minor: step,
        most,
        width: WIDTH,
        height: HEIGHT,
        axis_y: room,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pence(minor: i64) -> String {
        format!("{minor}p")
    }

    #[test]
    fn steps_are_round_and_fit_the_largest_change() {
        assert_eq!(step_for(1), 1);
        assert_eq!(step_for(8), 1);
        assert_eq!(step_for(9), 2);
        assert_eq!(step_for(40), 5);
        assert_eq!(step_for(41), 10);
        assert_eq!(step_for(7_999), 1_000);
        assert_eq!(step_for(8_001), 2_000);
    }

    #[test]
    fn every_change_is_counted_once_on_its_side_of_unchanged() {
        let changes = [0, 0, 5, 10, 11, 40, -1, -10, -11, -39];
        let h = histogram(&changes, pence);
        assert_eq!(h.step_minor, 5);
        let total: u64 = h.bins.iter().map(|b| b.count).sum();
        assert_eq!(total, changes.len() as u64);
        let side = |direction: &str| -> u64 {
            h.bins
                .iter()
                .filter(|b| b.direction == direction)
                .map(|b| b.count)
                .sum()
        };
        assert_eq!((side("down"), side("same"), side("up")), (4, 2, 4));
        // Bins are contiguous and ordered from the largest decrease to the largest increase.
        for pair in h.bins.windows(2) {
            assert_eq!(pair[0].to_minor + 1, pair[1].from_minor);
        }
        assert_eq!(h.bins.first().unwrap().from_minor, -40);
        assert_eq!(h.bins.last().unwrap().to_minor, 40);
        let ten = h.bins.iter().find(|b| b.from_minor == 6).unwrap();
        assert_eq!(
            (ten.to_minor, ten.count, ten.label.as_str()),
            (10, 1, "+6p to +10p")
        );
    }

    #[test]
    fn the_tallest_bar_fills_the_room_and_the_others_are_in_proportion() {
        let h = histogram(&[0, 0, 0, 0, 3], pence);
        let same = h.bins.iter().find(|b| b.direction == "same").unwrap();
        let up = h.bins.iter().find(|b| b.count == 1).unwrap();
        assert_eq!((up.from_minor, up.to_minor), (3, 3));
        assert_eq!(same.height, HEIGHT - AXIS);
        assert_eq!(up.height, (HEIGHT - AXIS) / 4);
        assert_eq!(up.y + up.height, h.axis_y);
    }

    #[test]
    fn no_quotes_draw_only_the_unchanged_bar_empty() {
        let h = histogram(&[], pence);
        assert_eq!(h.bins.len(), 1);
        assert_eq!((h.bins[0].count, h.bins[0].height), (0, 0));
    }
}
