//! Test events, sent from the merchant console to one endpoint: made-up facts of the event
//! named, marked as a test.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use courier_domain::Environment;
use courier_domain::JobStatus;
use courier_domain::event::{EventDetails, EventName, JobFacts, NewEvent, ProofFacts};

/// What a test event says: the facts its name carries, made up and marked as a test so no
/// receiver mistakes them for a delivery's (reference `test-event`, currency `XTS`, ISO 4217's
/// code for testing; a job id that names no job).
pub const TEST_REFERENCE: &str = "test-event";
const TEST_CURRENCY: &str = "XTS";
const TEST_COURIER: &str = "courier_test";
const TEST_REASON: &str = "test_event";

/// A test event named `name`, with the facts the spec lists for it.
pub fn test_event(
    name: EventName,
    merchant_id: Uuid,
    environment: Environment,
    occurred_at: DateTime<Utc>,
) -> NewEvent {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_event_carries_what_its_name_needs_and_says_it_is_a_test() {
        let merchant = Uuid::new_v4();
        for name in EventName::ALL {
            let event = test_event(name, merchant, Environment::Live, Utc::now());
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
}
