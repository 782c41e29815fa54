//! Events: facts about state changes, recorded in the same transaction as the change (the
//! transactional outbox), so an event exists exactly when its change committed. The webhook
//! engine fans them out; the tracking page reads a job's events (names and times) for its
//! timeline.
//!
//! The fan-out is woken after commit, not by a `NOTIFY` inside the recording transaction:
//! Postgres holds one database-wide lock from a notifying transaction's pre-commit until its
//! commit record is on disk, so notifying transactions commit one at a time (bookings were
//! capped at one per disk flush; BENCHMARKS.md). The process that commits rings its own
//! [`EventBell`]; anything else that records events calls [`announce`] after its commit.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::{PgConnection, PgExecutor, Postgres, QueryBuilder};
use tokio::sync::Notify;
use uuid::Uuid;

use crate::domain::Environment;
use crate::store::writes::Writes;

/// Channel that wakes the fan-out of every process listening (see [`announce`]).
pub const EVENTS_CHANNEL: &str = "courier_events";

/// Wakes this process's webhook fan-out once a transaction that recorded events has
/// committed. Rings close together wake it once; a ring nobody waits for is kept for the next
/// wait. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct EventBell(Arc<Notify>);

impl EventBell {
    /// Call after the commit of a transaction that recorded events.
    pub fn ring(&self) {
        self.0.notify_one();
    }

    /// Resolves at the next ring (at once if one came since the last wait).
    pub async fn rung(&self) {
        self.0.notified().await;
    }
}

/// Tells the fan-out of every process that events were committed: for recorders outside the
/// service's processes. Must run after the recording transaction commits (a notification
/// sent on its own costs no disk flush and does not hold other commits back).
pub async fn announce(executor: impl PgExecutor<'_>) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_notify($1, '')")
        .bind(EVENTS_CHANNEL)
        .execute(executor)
        .await?;
    Ok(())
}

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

/// Records `event` on `conn`, which must be the transaction of the change that raised it;
/// ring the [`EventBell`] after that transaction commits.
pub async fn record(conn: &mut PgConnection, event: &NewEvent) -> Result<Uuid, sqlx::Error> {
    let id = Uuid::new_v4();
    Writes::new().and(insert(id, event)).execute(conn).await?;
    Ok(id)
}

/// [`record`] as one write of a statement that makes others ([`Writes`]).
pub fn insert<'a>(
    id: Uuid,
    event: &'a NewEvent,
) -> impl FnOnce(&mut QueryBuilder<'a, Postgres>) + Send + 'a {
    move |query| {
        let job = event
            .job
            .as_ref()
            .map(|j| serde_json::to_value(j).expect("job facts serialise"));
        let details = serde_json::to_value(&event.details).expect("event details serialise");
        query.push(
            "INSERT INTO events (id, merchant_id, environment, name, job_id, occurred_at, job, \
             details) ",
        );
        query.push_values([(job, details)], |mut row, (job, details)| {
            row.push_bind(id)
                .push_bind(event.merchant_id)
                .push_bind(event.environment.as_str())
                .push_bind(event.name.as_str())
                .push_bind(event.job.as_ref().map(|j| j.id))
                .push_bind(event.occurred_at)
                .push_bind(job)
                .push_bind(details);
        });
    }
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
