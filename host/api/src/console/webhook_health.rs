//! An endpoint's health over the last day as the portal draws it: attempts per hour as
//! stacked bars (succeeded below, failed above) and the receiver's time to answer (median and
//! 95th percentile) as dots, in SVG laid out here, with the same figures in a table.

use chrono::Timelike;
use courier_core::webhooks::{Health, HealthBucket};

/// Width of one hour's column, and of its bar, in SVG units.
const COLUMN: u32 = 20;
const BAR: u32 = 14;
/// Height of the drawing area of each chart.
const PLOT: u32 = 120;
/// Room under each chart for the hour labels, and above it for a dot at the very top.
const LABELS: u32 = 16;
const TOP: u32 = 6;

pub(super) struct HealthView {
    pub width: u32,
    pub height: u32,
    /// Where the axis line is drawn.
    pub axis_y: u32,
    /// The day in words: how many attempts, how many succeeded, how fast.
    pub summary: String,
    pub hours: Vec<HourView>,
    /// The slowest 95th percentile drawn, in milliseconds (the time chart's top).
    pub slowest_ms: u32,
}

pub(super) struct HourView {
    /// `14:00`.
    pub label: String,
    /// Shown under the axis: every sixth hour but the first column's (its label would be cut
    /// at the chart's edge).
    pub labelled: bool,
    pub x: u32,
    pub label_x: u32,
    pub succeeded: i64,
    pub failed: i64,
    pub succeeded_y: u32,
    pub succeeded_height: u32,
    pub failed_y: u32,
    pub failed_height: u32,
    pub median: String,
    pub p95: String,
    /// Where the time dots go, when the hour had an answer.
    pub median_y: Option<u32>,
    pub p95_y: Option<u32>,
}

fn millis(value: Option<f64>) -> String {
    value.map_or_else(|| "—".to_owned(), |ms| format!("{} ms", ms.round() as i64))
}

/// `part` of `whole` as a height out of [`PLOT`], at least 1 for anything above nothing.
fn scaled(part: f64, whole: f64) -> u32 {
    if part <= 0.0 || whole <= 0.0 {
        return 0;
    }
    ((part / whole * f64::from(PLOT)).round() as u32).clamp(1, PLOT)
}

fn summary(day: &HealthBucket) -> String {
    let total = day.succeeded + day.failed;
    if total == 0 {
        return "No attempts in the last 24 hours.".to_owned();
    }
    let share = day.succeeded as f64 * 100.0 / total as f64;
    let attempts = if total == 1 { "attempt" } else { "attempts" };
    format!(
        "In the last 24 hours {share:.1}% of {total} {attempts} succeeded ({} failed); \
         median time to answer {}, 95th percentile {}.",
        day.failed,
        millis(day.median_ms),
        millis(day.p95_ms)
    )
}

impl HealthView {
    pub fn of(health: &Health) -> Self {
        let most = health
            .hours
            .iter()
            .map(|h| h.succeeded + h.failed)
            .max()
            .unwrap_or(0)
            .max(1) as f64;
        let slowest = health
            .hours
            .iter()
            .filter_map(|h| h.p95_ms)
            .fold(0.0_f64, f64::max)
            .max(1.0);
        let hours = health
            .hours
            .iter()
            .enumerate()
            .map(|(n, hour)| {
                let x = n as u32 * COLUMN + (COLUMN - BAR) / 2;
                let succeeded_height = scaled(hour.succeeded as f64, most);
                let failed_height = scaled(hour.failed as f64, most);
                let starts = hour.starts_at.unwrap_or(health.since);
                HourView {
                    label: format!("{:02}:00", starts.hour()),
                    labelled: n > 0 && starts.hour() % 6 == 0,
                    x,
                    label_x: n as u32 * COLUMN + COLUMN / 2,
                    succeeded: hour.succeeded,
                    failed: hour.failed,
                    succeeded_y: TOP + PLOT - succeeded_height,
                    succeeded_height,
                    failed_y: TOP + PLOT - succeeded_height - failed_height,
                    failed_height,
                    median: millis(hour.median_ms),
                    p95: millis(hour.p95_ms),
                    median_y: hour.median_ms.map(|ms| TOP + PLOT - scaled(ms, slowest)),
                    p95_y: hour.p95_ms.map(|ms| TOP + PLOT - scaled(ms, slowest)),
                }
            })
            .collect::<Vec<_>>();
        HealthView {
            width: hours.len() as u32 * COLUMN,
            height: TOP + PLOT + LABELS,
            axis_y: TOP + PLOT,
            summary: summary(&health.day),
            hours,
            slowest_ms: slowest.round() as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn bucket(hour: u32, succeeded: i64, failed: i64, p95: Option<f64>) -> HealthBucket {
        HealthBucket {
            starts_at: Some(Utc.with_ymd_and_hms(2026, 12, 7, hour, 0, 0).unwrap()),
            succeeded,
            failed,
            median_ms: p95.map(|ms| ms / 2.0),
            p95_ms: p95,
        }
    }

    #[test]
    fn bars_are_stacked_and_scaled_to_the_busiest_hour() {
        let health = Health {
            since: Utc.with_ymd_and_hms(2026, 12, 7, 0, 0, 0).unwrap(),
            hours: vec![
                bucket(0, 30, 10, Some(200.0)),
                bucket(1, 0, 0, None),
                bucket(2, 1, 0, Some(50.0)),
            ],
            day: HealthBucket {
                starts_at: None,
                succeeded: 31,
                failed: 10,
                median_ms: Some(80.0),
                p95_ms: Some(190.4),
            },
        };
        let view = HealthView::of(&health);
        assert_eq!(view.width, 3 * COLUMN);
        let busiest = &view.hours[0];
        assert_eq!(busiest.succeeded_height + busiest.failed_height, PLOT);
        assert_eq!(busiest.failed_y, TOP);
        assert_eq!(busiest.succeeded_y, TOP + PLOT - 90);
        assert_eq!(
            view.hours[1].succeeded_height + view.hours[1].failed_height,
            0
        );
        assert_eq!(
            view.hours[2].succeeded_height, 3,
            "one of forty is still seen"
        );
        assert_eq!(busiest.p95_y, Some(TOP), "the slowest hour reaches the top");
        assert_eq!(view.hours[1].median_y, None);
        assert!(!busiest.labelled, "the first column's label would be cut");
        assert!(!view.hours[2].labelled);
        assert_eq!(busiest.label, "00:00");
        assert_eq!(
            view.summary,
            "In the last 24 hours 75.6% of 41 attempts succeeded (10 failed); median time to \
             answer 80 ms, 95th percentile 190 ms."
        );
    }

    #[test]
    fn a_quiet_day_says_so() {
        let day = HealthBucket {
            starts_at: None,
            succeeded: 0,
            failed: 0,
            median_ms: None,
            p95_ms: None,
        };
        assert_eq!(summary(&day), "No attempts in the last 24 hours.");
    }
}
