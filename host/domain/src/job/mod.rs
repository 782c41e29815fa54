//! Job states. The spec names `pending`, `searching`, `in_transit`, `delivered`, `returned`;
//! this service adds `assigned` (a courier took it, not yet collected), `cancelled` and
//! `failed` (no courier before the dispatch deadline).

pub mod proof;
pub mod reference;
pub mod transitions;

use serde::{Deserialize, Serialize};

use crate::error::Code;

pub const JOB_NOT_FOUND: Code = Code::new(
    404,
    "job.not_found",
    "The job is not the caller's: another merchant's job, a job of the other environment, an unknown id and a non-UUID id all answer it, with the same body (also for proof files). Sandbox endpoints: no such test job of this merchant. Courier API: a job that is not the courier's.",
);

/// A job's status
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
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

    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Pending => "pending",
            JobStatus::Searching => "searching",
            JobStatus::Assigned => "assigned",
            JobStatus::InTransit => "in_transit",
            JobStatus::Delivered => "delivered",
            JobStatus::Returned => "returned",
            JobStatus::Cancelled => "cancelled",
            JobStatus::Failed => "failed",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// A stored job status this code does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a job status")]
pub struct UnknownJobStatus(pub String);

/// How a stored status is read: an unknown one is an error, never a guess.
impl TryFrom<String> for JobStatus {
    type Error = UnknownJobStatus;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value).ok_or(UnknownJobStatus(value))
    }
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
