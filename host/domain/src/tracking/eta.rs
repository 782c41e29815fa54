//! The estimated arrival at the drop-off, from road travel times of the market's routing.

use chrono::{DateTime, Duration, Utc};

use crate::JobStatus;

/// Travel times known for a job, in seconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct TravelTimes {
    /// Pickup to drop-off by road for the job's vehicle.
    pub journey: Option<u32>,
    /// From the courier's fresh position to the next stop (the pickup before collection, the
    /// drop-off after).
    pub courier_to_next_stop: Option<u32>,
}

/// When the parcel should reach the drop-off, or `None` once the job has ended (or when no
/// travel time is known).
pub fn arrival(
    status: Option<JobStatus>,
    now: DateTime<Utc>,
    scheduled_for: Option<DateTime<Utc>>,
    times: TravelTimes,
) -> Option<DateTime<Utc>> {
    let seconds = |s: u32| Duration::seconds(i64::from(s));
    match status? {
        JobStatus::Pending => {
            let start = scheduled_for.map_or(now, |at| at.max(now));
            Some(start + seconds(times.journey?))
        }
        JobStatus::Searching => Some(now + seconds(times.journey?)),
        // Without a fresh position, the courier is counted as already at the pickup.
        JobStatus::Assigned => {
            Some(now + seconds(times.courier_to_next_stop.unwrap_or(0) + times.journey?))
        }
        JobStatus::InTransit => Some(now + seconds(times.courier_to_next_stop.or(times.journey)?)),
        JobStatus::Delivered | JobStatus::Returned | JobStatus::Cancelled | JobStatus::Failed => {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-11-21T10:00:00Z".parse().unwrap()
    }

    fn times(journey: u32, courier: Option<u32>) -> TravelTimes {
        TravelTimes {
            journey: Some(journey),
            courier_to_next_stop: courier,
        }
    }

    #[test]
    fn before_collection_the_courier_leg_comes_first() {
        let at = |status, t| arrival(Some(status), now(), None, t);
        assert_eq!(
            at(JobStatus::Searching, times(600, None)),
            Some(now() + Duration::seconds(600))
        );
        assert_eq!(
            at(JobStatus::Assigned, times(600, Some(300))),
            Some(now() + Duration::seconds(900))
        );
        assert_eq!(
            at(JobStatus::Assigned, times(600, None)),
            Some(now() + Duration::seconds(600))
        );
    }

    #[test]
    fn after_collection_only_the_way_to_the_drop_off_counts() {
        let at = |t| arrival(Some(JobStatus::InTransit), now(), None, t);
        assert_eq!(
            at(times(600, Some(120))),
            Some(now() + Duration::seconds(120))
        );
        assert_eq!(at(times(600, None)), Some(now() + Duration::seconds(600)));
    }

    #[test]
    fn scheduled_jobs_arrive_after_their_time() {
        let scheduled = now() + Duration::hours(2);
        assert_eq!(
            arrival(
                Some(JobStatus::Pending),
                now(),
                Some(scheduled),
                times(600, None)
            ),
            Some(scheduled + Duration::seconds(600))
        );
    }

    #[test]
    fn ended_or_unroutable_jobs_have_no_estimate() {
        for status in [
            JobStatus::Delivered,
            JobStatus::Returned,
            JobStatus::Cancelled,
            JobStatus::Failed,
        ] {
            assert_eq!(arrival(Some(status), now(), None, times(600, None)), None);
        }
        assert_eq!(
            arrival(
                Some(JobStatus::Searching),
                now(),
                None,
                TravelTimes::default()
            ),
            None
        );
        assert_eq!(arrival(None, now(), None, times(600, None)), None);
    }
}
