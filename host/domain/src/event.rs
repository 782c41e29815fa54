//! Events: facts about state changes, as recorded in the outbox and sent to webhooks.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::Environment;

/// The spec's event names (section 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
pub enum EventName {
    #[serde(rename = "job.booked")]
    JobBooked,
    #[serde(rename = "job.courier_assigned")]
    JobCourierAssigned,
    #[serde(rename = "job.picked_up")]
    JobPickedUp,
    #[serde(rename = "job.delivered")]
    JobDelivered,
    #[serde(rename = "job.returned")]
    JobReturned,
    #[serde(rename = "job.cancelled")]
    JobCancelled,
    #[serde(rename = "job.failed")]
    JobFailed,
    #[serde(rename = "job.status_changed")]
    JobStatusChanged,
    #[serde(rename = "payment_method.dead")]
    PaymentMethodDead,
}

impl EventName {
    pub const ALL: [EventName; 9] = [
        EventName::JobBooked,
        EventName::JobCourierAssigned,
        EventName::JobPickedUp,
        EventName::JobDelivered,
        EventName::JobReturned,
        EventName::JobCancelled,
        EventName::JobFailed,
        EventName::JobStatusChanged,
        EventName::PaymentMethodDead,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventName::JobBooked => "job.booked",
            EventName::JobCourierAssigned => "job.courier_assigned",
            EventName::JobPickedUp => "job.picked_up",
            EventName::JobDelivered => "job.delivered",
            EventName::JobReturned => "job.returned",
            EventName::JobCancelled => "job.cancelled",
            EventName::JobFailed => "job.failed",
            EventName::JobStatusChanged => "job.status_changed",
            EventName::PaymentMethodDead => "payment_method.dead",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

/// Facts about the job an event concerns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobFacts {
    pub id: Uuid,
    pub reference: String,
    pub market: String,
    pub currency: String,
    pub price_amount_minor: i64,
    pub tax_amount_minor: i64,
    pub scheduled_for: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProofFacts {
    pub outcome: String,
    pub recipient_name: Option<String>,
    pub has_photo: bool,
    pub has_signature: bool,
}

/// Event-specific facts; each event fills the ones the spec lists for it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EventDetails {
    /// An opaque courier id, never a name or phone number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub courier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<ProofFacts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assigned_courier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment_method_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brand: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_four: Option<String>,
}

/// An event to record.
#[derive(Clone, Debug)]
pub struct NewEvent {
    pub name: EventName,
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub occurred_at: DateTime<Utc>,
    pub job: Option<JobFacts>,
    pub details: EventDetails,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in EventName::ALL {
            assert_eq!(EventName::parse(name.as_str()), Some(name));
            assert_eq!(
                serde_json::to_value(name).unwrap(),
                serde_json::json!(name.as_str())
            );
        }
        assert_eq!(EventName::parse("job.exploded"), None);
    }
}
