//! Job states. The spec names `pending`, `searching`, `in_transit`, `delivered`, `returned`;
//! this service adds `assigned` (a courier took it, not yet collected), `cancelled` and
//! `failed` (no courier before the dispatch deadline).

pub mod proof;
pub mod ready;
pub mod reference;
pub mod transitions;

use crate::error::Code;

pub const JOB_NOT_FOUND: Code = Code::new(
    404,
    "job.not_found",
    "The job is not the caller's: another merchant's job, a job of the other environment, an unknown id and a non-UUID id all answer it, with the same body (also for proof files). Sandbox endpoints: no such test job of this merchant. Courier API: a job that is not the courier's.",
);

crate::names::named_enum! {
    /// A job's status
    #[schema(as = JobStatusName)]
    pub enum JobStatus {
        Pending,
        Searching,
        Assigned,
        InTransit,
        Delivered,
        Returned,
        Cancelled,
        Failed,
    }
}

impl JobStatus {
    pub const ALL: [JobStatus; 8] = [
        JobStatus::Pending,
        JobStatus::Searching,
        JobStatus::Assigned,
        JobStatus::InTransit,
        JobStatus::Delivered,
        JobStatus::Returned,
        JobStatus::Cancelled,
        JobStatus::Failed,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for status in JobStatus::ALL {
            assert_eq!(JobStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(JobStatus::parse("lost"), None);
        for status in JobStatus::ALL {
            let named = serde_json::to_value(status).unwrap();
            assert_eq!(named, serde_json::json!(status.as_str()));
        }
        assert_eq!(JobStatus::parse("Searching"), None);
    }
}
