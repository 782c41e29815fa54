//! What the tracking page says, in words: statuses, proof outcomes, times of day.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use crate::JobStatus;

/// A status as a headline and one sentence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusWords {
    pub headline: &'static str,
    pub detail: &'static str,
}

/// `None` is a status this page does not know yet: it still says something true.
pub fn status_words(status: Option<JobStatus>) -> StatusWords {
    let (headline, detail) = match status {
        Some(JobStatus::Pending) => (
            "Scheduled",
            "Your delivery is booked. We start looking for a courier shortly before it is due.",
        ),
        Some(JobStatus::Searching) => (
            "Finding a courier",
            "We are looking for a courier near the pickup.",
        ),
        Some(JobStatus::Assigned) => (
            "Courier on the way to pickup",
            "A courier has taken your delivery and is heading to the pickup.",
        ),
        Some(JobStatus::InTransit) => (
            "On the way to you",
            "Your parcel has been collected and is on its way to the drop-off.",
        ),
        Some(JobStatus::Delivered) => ("Delivered", "Your parcel has been delivered."),
        Some(JobStatus::Returned) => (
            "Returned to sender",
            "The parcel could not be delivered and has been taken back to the sender.",
        ),
        Some(JobStatus::Cancelled) => ("Cancelled", "This delivery has been cancelled."),
        Some(JobStatus::Failed) => (
            "No courier found",
            "No courier could take this delivery in time, so it will not go ahead.",
        ),
        None => (
            "In progress",
            "Your delivery is being handled. This page updates on its own.",
        ),
    };
    StatusWords { headline, detail }
}

/// The proof's outcome in words: the outcome only, never who received it.
pub fn proof_outcome(outcome: &str) -> String {
    match outcome {
        "handed_to_recipient" => "Handed to the recipient".to_owned(),
        other => {
            let words = other.replace('_', " ");
            let mut chars = words.trim().chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect(),
                None => "Recorded".to_owned(),
            }
        }
    }
}

/// A time in the market's zone: "14:05" today, else "Sat 21 Nov, 14:05".
pub fn local_time(at: DateTime<Utc>, zone: Tz, now: DateTime<Utc>) -> String {
    let local = at.with_timezone(&zone);
    if local.date_naive() == now.with_timezone(&zone).date_naive() {
        local.format("%H:%M").to_string()
    } else {
        local.format("%a %-d %b, %H:%M").to_string()
    }
}

/// A remaining travel time, rounded up to whole minutes: "less than a minute",
/// "about 12 minutes", "about 1 h 5 min".
pub fn duration(seconds: u32) -> String {
    if seconds < 60 {
        return "less than a minute".to_owned();
    }
    let minutes = seconds.div_ceil(60);
    match (minutes / 60, minutes % 60) {
        (0, 1) => "about 1 minute".to_owned(),
        (0, m) => format!("about {m} minutes"),
        (h, 0) => format!("about {h} h"),
        (h, m) => format!("about {h} h {m} min"),
    }
}

/// A distance for people: metres under a kilometre, else kilometres to one decimal.
pub fn distance(metres: u32) -> String {
    if metres < 1000 {
        format!("{} m", (metres / 10 * 10).max(10))
    } else {
        format!("{:.1} km", f64::from(metres) / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn every_status_has_its_own_headline() {
        let mut seen = std::collections::HashSet::new();
        for status in JobStatus::ALL {
            let words = status_words(Some(status));
            assert!(seen.insert(words.headline), "{status:?}");
            assert!(words.detail.ends_with('.'));
        }
        assert_eq!(
            status_words(Some(JobStatus::InTransit)).headline,
            "On the way to you"
        );
        assert_eq!(status_words(None).headline, "In progress");
    }

    #[test]
    fn proof_outcomes_read_as_words() {
        assert_eq!(
            proof_outcome("handed_to_recipient"),
            "Handed to the recipient"
        );
        assert_eq!(proof_outcome("left_at_door"), "Left at door");
        assert_eq!(proof_outcome(""), "Recorded");
    }

    #[test]
    fn times_are_local_and_dated_when_not_today() {
        let zone: Tz = "Asia/Riyadh".parse().unwrap();
        let now = Utc.with_ymd_and_hms(2026, 11, 21, 10, 0, 0).unwrap();
        let later = Utc.with_ymd_and_hms(2026, 11, 21, 11, 5, 0).unwrap();
        assert_eq!(local_time(later, zone, now), "14:05");
        let tomorrow = Utc.with_ymd_and_hms(2026, 11, 22, 6, 30, 0).unwrap();
        assert_eq!(local_time(tomorrow, zone, now), "Sun 22 Nov, 09:30");
        // 22:30 UTC is already the next day in Riyadh.
        let late = Utc.with_ymd_and_hms(2026, 11, 21, 22, 30, 0).unwrap();
        assert_eq!(local_time(late, zone, now), "Sun 22 Nov, 01:30");
    }

    #[test]
    fn durations_round_up_to_minutes() {
        assert_eq!(duration(0), "less than a minute");
        assert_eq!(duration(59), "less than a minute");
        assert_eq!(duration(60), "about 1 minute");
        assert_eq!(duration(61), "about 2 minutes");
        assert_eq!(duration(12 * 60), "about 12 minutes");
        assert_eq!(duration(3600), "about 1 h");
        assert_eq!(duration(3600 + 4 * 60 + 1), "about 1 h 5 min");
    }

    #[test]
    fn distances_are_rounded_for_reading() {
        assert_eq!(distance(3), "10 m");
        assert_eq!(distance(638), "630 m");
        assert_eq!(distance(2149), "2.1 km");
    }
}
