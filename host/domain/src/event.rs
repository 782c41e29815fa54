//! Events: facts about state changes, as recorded in the outbox and sent to webhooks.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::Environment;
use crate::job::JobStatus;

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

/// What a test event says: the facts its name carries, made up and marked as a test so no
/// receiver mistakes them for a delivery's (reference `test-event`, currency `XTS`, ISO 4217's
/// code for testing; a job id that names no job).
pub const TEST_REFERENCE: &str = "test-event";
const TEST_CURRENCY: &str = "XTS";
const TEST_COURIER: &str = "courier_test";
const TEST_REASON: &str = "test_event";

impl NewEvent {
    /// A test event named `name`, with the facts the spec lists for it.
    pub fn test(
        name: EventName,
        merchant_id: Uuid,
        environment: Environment,
        occurred_at: DateTime<Utc>,
    ) -> Self {
        let job = (name != EventName::PaymentMethodDead).then(|| JobFacts {
            id: Uuid::new_v4(),
            reference: TEST_REFERENCE.into(),
            market: "test".into(),
            currency: TEST_CURRENCY.into(),
            price_amount_minor: 1250,
            tax_amount_minor: 250,
            scheduled_for: None,
        });
        let courier = || Some(TEST_COURIER.to_owned());
        let reason = || Some(TEST_REASON.to_owned());
        let details = match name {
            EventName::JobBooked => EventDetails::default(),
            EventName::JobCourierAssigned | EventName::JobPickedUp => EventDetails {
                courier: courier(),
                ..EventDetails::default()
            },
            EventName::JobDelivered => EventDetails {
                courier: courier(),
                proof: Some(ProofFacts {
                    outcome: "handed_to_recipient".into(),
                    recipient_name: Some("Test Recipient".into()),
                    has_photo: false,
                    has_signature: false,
                }),
                ..EventDetails::default()
            },
            EventName::JobReturned => EventDetails {
                courier: courier(),
                reason: reason(),
                ..EventDetails::default()
            },
            EventName::JobCancelled | EventName::JobFailed => EventDetails {
                reason: reason(),
                ..EventDetails::default()
            },
            EventName::JobStatusChanged => EventDetails {
                from: Some(JobStatus::Searching.as_str().into()),
                to: Some(JobStatus::Cancelled.as_str().into()),
                reason: reason(),
                ..EventDetails::default()
            },
            EventName::PaymentMethodDead => EventDetails {
                payment_method_id: Some(Uuid::new_v4()),
                brand: Some("visa".into()),
                last_four: Some("0000".into()),
                reason: reason(),
                ..EventDetails::default()
            },
        };
        NewEvent {
            name,
            merchant_id,
            environment,
            occurred_at,
            job,
            details,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_event_carries_what_its_name_needs_and_says_it_is_a_test() {
        let merchant = Uuid::new_v4();
        for name in EventName::ALL {
            let event = NewEvent::test(name, merchant, Environment::Live, Utc::now());
            let d = &event.details;
            match name {
                EventName::PaymentMethodDead => {
                    assert!(event.job.is_none());
                    assert!(d.payment_method_id.is_some() && d.brand.is_some());
                    assert!(d.last_four.is_some() && d.reason.is_some());
                }
                _ => {
                    let job = event.job.as_ref().expect("a job event has its job");
                    assert_eq!(job.reference, TEST_REFERENCE);
                    assert_eq!(job.currency, "XTS");
                }
            }
            let needs_courier = matches!(
                name,
                EventName::JobCourierAssigned
                    | EventName::JobPickedUp
                    | EventName::JobDelivered
                    | EventName::JobReturned
            );
            assert_eq!(d.courier.is_some(), needs_courier, "{name:?}");
            assert_eq!(d.proof.is_some(), name == EventName::JobDelivered);
            assert_eq!(
                d.from.is_some() && d.to.is_some(),
                name == EventName::JobStatusChanged
            );
        }
    }

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
