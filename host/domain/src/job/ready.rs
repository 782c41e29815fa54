//! When a parcel will be ready at its pickup (`pickup_ready_at`): sent with a booking, or with
//! a quote for its estimate, or taken from the merchant's `preparation_minutes`.
//!
//! A job is due when its search starts: at booking, or at `scheduled_for` for a scheduled
//! job. Its parcel may be ready from then until the dispatch deadline after it; the dispatcher
//! sends a courier to arrive about then, and the deadline counts from the ready time.

use chrono::{DateTime, Duration, SubsecRound, Utc};
use serde_json::Value;
use thiserror::Error;

use crate::error::Code;
use crate::error::ErrorCode;

pub const INVALID_PICKUP_READY_AT: Code = Code::new(
    422,
    "request.invalid_pickup_ready_at",
    "`pickup_ready_at` is not an ISO 8601 date-time with an offset (quotes and bookings).",
);
pub const PICKUP_READY_OUT_OF_RANGE: Code = Code::new(
    422,
    "job.pickup_ready_out_of_range",
    "`pickup_ready_at` is before now (a minute's grace), before `scheduled_for` for a scheduled job, or later than the dispatch deadline after the job is due (quotes and bookings).",
);

/// How far in the past a ready time may be and still be read as "now": clocks differ and
/// requests take time.
pub const PAST_GRACE: Duration = Duration::seconds(60);
/// The longest preparation a merchant may set as its default.
pub const MAX_PREPARATION_MINUTES: i32 = 240;

#[derive(Debug, Error, PartialEq, Eq, ErrorCode)]
pub enum ReadyError {
    #[error(
        "pickup_ready_at must be an ISO 8601 date-time with an offset, e.g. 2026-11-21T18:30:00Z"
    )]
    #[code(INVALID_PICKUP_READY_AT)]
    Invalid,
    #[error("pickup_ready_at must not be before {earliest} ({why})")]
    #[code(PICKUP_READY_OUT_OF_RANGE)]
    TooEarly {
        earliest: DateTime<Utc>,
        why: &'static str,
    },
    #[error(
        "pickup_ready_at must not be after {latest}, the dispatch deadline after the job is due"
    )]
    #[code(PICKUP_READY_OUT_OF_RANGE)]
    TooLate { latest: DateTime<Utc> },
}

/// `pickup_ready_at` as sent: absent or null is none.
pub fn parse(value: Option<&Value>) -> Result<Option<DateTime<Utc>>, ReadyError> {
    let text = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) => text,
        Some(_) => return Err(ReadyError::Invalid),
    };
    DateTime::parse_from_rfc3339(text.trim())
        .map(|at| Some(at.with_timezone(&Utc).trunc_subsecs(6)))
        .map_err(|_| ReadyError::Invalid)
}

/// When a job's parcel may be ready: from when the job is due to the dispatch deadline after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadyWindow {
    now: DateTime<Utc>,
    scheduled: bool,
    earliest: DateTime<Utc>,
    latest: DateTime<Utc>,
}

impl ReadyWindow {
    /// `deadline`: how long a search may last (`COURIER_DISPATCH_DEADLINE_SECS`).
    pub fn new(
        now: DateTime<Utc>,
        scheduled_for: Option<DateTime<Utc>>,
        deadline: Duration,
    ) -> Self {
        let earliest = scheduled_for.unwrap_or(now);
        Self {
            now,
            scheduled: scheduled_for.is_some(),
            earliest,
            latest: earliest + deadline,
        }
    }

    /// `at` if the window holds it; a time within [`PAST_GRACE`] before now reads as now.
    pub fn check(&self, at: DateTime<Utc>) -> Result<DateTime<Utc>, ReadyError> {
        if self.scheduled && at < self.earliest {
            return Err(ReadyError::TooEarly {
                earliest: self.earliest,
                why: "the job is scheduled for then",
            });
        }
        if at < self.now - PAST_GRACE {
            return Err(ReadyError::TooEarly {
                earliest: self.now,
                why: "it has passed",
            });
        }
        if at > self.latest {
            return Err(ReadyError::TooLate {
                latest: self.latest,
            });
        }
        Ok(at.max(self.earliest))
    }

    /// The ready time of a job: the one sent, else the merchant's preparation time after the
    /// job is due (at most the window's end), else none.
    pub fn ready_at(
        &self,
        sent: Option<DateTime<Utc>>,
        preparation_minutes: Option<i32>,
    ) -> Result<Option<DateTime<Utc>>, ReadyError> {
        if let Some(at) = sent {
            return self.check(at).map(Some);
        }
        Ok(preparation_minutes.map(|minutes| {
            (self.earliest + Duration::minutes(i64::from(minutes.max(0)))).min(self.latest)
        }))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    fn now() -> DateTime<Utc> {
        at("2026-11-21T12:00:00Z")
    }

    const DEADLINE: Duration = Duration::minutes(15);

    #[test]
    fn a_ready_time_is_a_date_time_with_an_offset() {
        assert_eq!(
            parse(Some(&json!("2026-11-21T13:10:00+01:00"))),
            Ok(Some(at("2026-11-21T12:10:00Z")))
        );
        assert_eq!(parse(None), Ok(None));
        assert_eq!(parse(Some(&Value::Null)), Ok(None));
        for bad in [
            json!("2026-11-21T12:10:00"),
            json!("soon"),
            json!(1700000000),
        ] {
            assert_eq!(parse(Some(&bad)), Err(ReadyError::Invalid), "{bad}");
        }
    }

    #[test]
    fn a_job_for_now_is_ready_from_now_to_the_deadline() {
        let window = ReadyWindow::new(now(), None, DEADLINE);
        assert_eq!(
            window.check(at("2026-11-21T12:15:00Z")),
            Ok(at("2026-11-21T12:15:00Z"))
        );
        // A moment ago is now: the merchant's clock and the request's travel.
        assert_eq!(window.check(at("2026-11-21T11:59:30Z")), Ok(now()));
        assert!(matches!(
            window.check(at("2026-11-21T11:58:00Z")),
            Err(ReadyError::TooEarly { .. })
        ));
        assert_eq!(
            window.check(at("2026-11-21T12:15:01Z")),
            Err(ReadyError::TooLate {
                latest: at("2026-11-21T12:15:00Z")
            })
        );
    }

    #[test]
    fn a_scheduled_job_is_ready_from_its_time() {
        let window = ReadyWindow::new(now(), Some(at("2026-11-21T18:00:00Z")), DEADLINE);
        assert!(matches!(
            window.check(at("2026-11-21T17:59:00Z")),
            Err(ReadyError::TooEarly { .. })
        ));
        assert_eq!(
            window.check(at("2026-11-21T18:00:00Z")),
            Ok(at("2026-11-21T18:00:00Z"))
        );
        assert_eq!(
            window.check(at("2026-11-21T18:15:00Z")),
            Ok(at("2026-11-21T18:15:00Z"))
        );
        assert!(matches!(
            window.check(at("2026-11-21T18:16:00Z")),
            Err(ReadyError::TooLate { .. })
        ));
    }

    #[test]
    fn the_preparation_time_is_the_default_within_the_window() {
        let window = ReadyWindow::new(now(), None, DEADLINE);
        assert_eq!(window.ready_at(None, None), Ok(None));
        assert_eq!(
            window.ready_at(None, Some(12)),
            Ok(Some(at("2026-11-21T12:12:00Z")))
        );
        assert_eq!(
            window.ready_at(None, Some(40)),
            Ok(Some(at("2026-11-21T12:15:00Z")))
        );
        assert_eq!(window.ready_at(None, Some(0)), Ok(Some(now())));
        // What is sent wins over the default.
        assert_eq!(
            window.ready_at(Some(at("2026-11-21T12:05:00Z")), Some(12)),
            Ok(Some(at("2026-11-21T12:05:00Z")))
        );
        let scheduled = ReadyWindow::new(now(), Some(at("2026-11-21T18:00:00Z")), DEADLINE);
        assert_eq!(
            scheduled.ready_at(None, Some(10)),
            Ok(Some(at("2026-11-21T18:10:00Z")))
        );
    }
}
