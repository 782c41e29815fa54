//! Fan-out: turns each recorded event into one delivery per subscribed, active endpoint of the
//! event's merchant and environment, with the body shaped once and stored for every retry. A
//! batch of events is a [`Round`]: its deliveries are attempted first and written after, once.

use chrono::SecondsFormat;
use courier_domain::webhook::EndpointStatus;
use courier_plugins::{EventJob, PayloadShaper, Proof, WebhookEvent};
use sha2::{Digest, Sha256};
use sqlx::{PgPool, Postgres, Transaction};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

use courier_domain::event::{EventDetails, JobFacts};
use courier_store::webhooks::{
    self as store, Answered, EventRow, NewDelivery, SubscriberRow, TargetRow,
};

use super::delivery::{Claimed, Content, First, Job};
use super::round::Round;

/// Events taken per round.
pub const BATCH: i64 = 256;
/// A round writes its deliveries once every first attempt it started has finished, or none
/// has for this long (the rest are slow), or [`ROUND_MOST`] after it opened: a delivery
/// answered 2xx before that is written once, already delivered.
const ROUND_QUIET: Duration = Duration::from_millis(50);
/// The longest a round holds its events.
const ROUND_MOST: Duration = Duration::from_secs(1);

/// A round whose events are held by its transaction while its first attempts are made.
pub struct OpenRound {
    tx: Transaction<'static, Postgres>,
    round: Arc<Round>,
    token: Uuid,
    deliveries: Vec<NewDelivery>,
    /// Events fanned out by this round (some had no delivery to make).
    done: Vec<Uuid>,
    /// The batch was full: more events may be waiting.
    pub full: bool,
}

/// Claims a batch of events and makes their deliveries: the round, and the deliveries as jobs
/// to attempt at once. None when no event waits.
///
/// `pool`'s connections may commit without waiting for the disk: if a database crash loses
/// the round's transaction, the events are fanned out again into the same delivery ids and the
/// same bodies, so a receiver that already had one sees a duplicate it can recognise, never a
/// new delivery.
pub async fn open_round(
    pool: &PgPool,
    shaper: &PayloadShaper,
) -> Result<Option<(OpenRound, Vec<Job>)>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let events = store::claim_events(&mut tx, BATCH).await?;
    let full = events.len() as i64 == BATCH;
    if events.is_empty() {
        return Ok(None);
    }
    let mut merchants: Vec<Uuid> = events.iter().map(|e| e.merchant_id).collect();
    merchants.sort_unstable();
    merchants.dedup();
    let endpoints = store::active_endpoints_of(&mut tx, &merchants).await?;
    let round = Arc::new(Round::default());
    let token = Uuid::new_v4();
    let at = Instant::now();
    let mut deliveries = Vec::new();
    let mut jobs = Vec::new();
    let mut done = Vec::with_capacity(events.len());
    // Each endpoint as the round's first attempts reach it, shared by its jobs.
    let mut targets: HashMap<Uuid, Arc<TargetRow>> = HashMap::new();
    for event in &events {
        let subscribers: Vec<&SubscriberRow> =
            endpoints.iter().filter(|e| subscribes(e, event)).collect();
        if subscribers.is_empty() {
            done.push(event.id);
            continue;
        }
        let body = match shape(shaper, event) {
            Ok(body) => body,
            Err(Shaping::Refused(reason)) => {
                // The event's facts do not fit its name: a defect where it was raised. Retrying
                // cannot help, so it is logged loudly and not sent.
                tracing::error!(event = %event.id, name = %event.name, %reason,
                    "the payload shaper refused an event; it will not be sent");
                done.push(event.id);
                continue;
            }
            Err(Shaping::Broken(reason)) => {
                // The shaper itself failed (busy, trapped): leave the event for a later round.
                tracing::warn!(event = %event.id, %reason, "shaping failed; will retry");
                continue;
            }
        };
        let content = Arc::new(Content {
            event_name: event.name.clone(),
            body: body.clone().into(),
            attempts: 0,
        });
        for endpoint in subscribers {
            let id = delivery_id(event.id, endpoint.id);
            let target = targets.entry(endpoint.id).or_insert_with(|| {
                Arc::new(TargetRow {
                    id: endpoint.id,
                    url: endpoint.url.clone(),
                    secret_ciphertext: endpoint.secret_ciphertext.clone(),
                    previous_secret_ciphertext: endpoint.previous_secret_ciphertext.clone(),
                    status: EndpointStatus::Active,
                })
            });
            jobs.push(Job {
                id,
                endpoint_id: endpoint.id,
                merchant_id: endpoint.merchant_id,
                token,
                claimed: Claimed {
                    at,
                    content: Arc::clone(&content),
                },
                first: Some(First {
                    round: Arc::clone(&round),
                    target: Arc::clone(target),
                }),
            });
            deliveries.push(NewDelivery {
                id,
                endpoint_id: endpoint.id,
                merchant_id: endpoint.merchant_id,
                event_id: event.id,
                event_name: event.name.clone(),
                occurred_at: event.occurred_at,
                body: body.clone(),
                answered: None,
            });
        }
        done.push(event.id);
    }
    round.queued(jobs.len());
    let open = OpenRound {
        tx,
        round,
        token,
        deliveries,
        done,
        full,
    };
    Ok(Some((open, jobs)))
}

impl OpenRound {
    /// The round, to wait for its end.
    pub fn round(&self) -> Arc<Round> {
        Arc::clone(&self.round)
    }

    /// Waits for the round's first attempts (see [`ROUND_QUIET`]), writes its deliveries
    /// with the 2xx answers taken, marks its events fanned out and commits. Jobs whose
    /// outcome came too late record it once this has ended ([`Round::committed`]).
    pub async fn close(mut self, lease_ms: i64) {
        let mut answered: HashMap<Uuid, Answered> = self
            .round
            .close_when_quiet(ROUND_QUIET, ROUND_MOST)
            .await
            .into_iter()
            .collect();
        for delivery in &mut self.deliveries {
            delivery.answered = answered.remove(&delivery.id);
        }
        let written = async {
            store::record_fan_out(
                &mut self.tx,
                &self.deliveries,
                &self.done,
                lease_ms,
                self.token,
            )
            .await?;
            self.tx.commit().await
        }
        .await;
        if let Err(e) = &written {
            // The events stay to be fanned out again, into the same deliveries.
            tracing::warn!(error = %e, "writing a fan-out round failed; its events will be sent again");
        }
        self.round.end(written.is_ok());
    }
}

/// The delivery of an event to an endpoint has one id, however often it is fanned out.
pub(crate) fn delivery_id(event_id: Uuid, endpoint_id: Uuid) -> Uuid {
    let digest = Sha256::new()
        .chain_update(b"courier-webhook-delivery")
        .chain_update(event_id.as_bytes())
        .chain_update(endpoint_id.as_bytes())
        .finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// Same merchant and environment, and then: for a test event, the endpoint it was sent to;
/// for any other, active since before the event was recorded and subscribed to its name (an
/// empty list subscribes to everything).
fn subscribes(endpoint: &SubscriberRow, event: &EventRow) -> bool {
    let owners =
        endpoint.merchant_id == event.merchant_id && endpoint.environment == event.environment;
    owners
        && match event.only_endpoint_id {
            Some(only) => endpoint.id == only,
            None => {
                endpoint.active_since <= event.recorded_at
                    && (endpoint.events.is_empty() || endpoint.events.contains(&event.name))
            }
        }
}

enum Shaping {
    Refused(String),
    Broken(String),
}

fn shape(shaper: &PayloadShaper, event: &EventRow) -> Result<Vec<u8>, Shaping> {
    let input = to_webhook_event(event).map_err(Shaping::Refused)?;
    match shaper.shape(&input) {
        Ok(Ok(payload)) => Ok(payload.body),
        Ok(Err(reason)) => Err(Shaping::Refused(reason)),
        Err(e) => Err(Shaping::Broken(e.to_string())),
    }
}

fn rfc3339(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The stored event as the shaper's input.
fn to_webhook_event(event: &EventRow) -> Result<WebhookEvent, String> {
    let environment = match event.environment.as_str() {
        "live" => courier_plugins::Environment::Live,
        _ => courier_plugins::Environment::Test,
    };
    let mut shaped = WebhookEvent::new(
        event.name.clone(),
        rfc3339(event.occurred_at),
        environment,
        event.merchant_id.to_string(),
    );
    if let Some(job) = &event.job {
        let job: JobFacts =
            serde_json::from_value(job.clone()).map_err(|e| format!("job facts: {e}"))?;
        shaped.job = Some(EventJob {
            id: job.id.to_string(),
            reference: job.reference,
            market: job.market,
            currency: job.currency,
            price_amount_minor: job.price_amount_minor,
            tax_amount_minor: job.tax_amount_minor,
            scheduled_for: job.scheduled_for.map(rfc3339),
        });
    }
    let details: EventDetails =
        serde_json::from_value(event.details.clone()).map_err(|e| format!("details: {e}"))?;
    shaped.courier = details.courier;
    shaped.proof = details.proof.map(|p| Proof {
        outcome: p.outcome,
        recipient_name: p.recipient_name,
        has_photo: p.has_photo,
        has_signature: p.has_signature,
    });
    shaped.reason = details.reason;
    shaped.from = details.from;
    shaped.to = details.to;
    shaped.assigned_courier = details.assigned_courier;
    shaped.payment_method_id = details.payment_method_id.map(|id| id.to_string());
    shaped.brand = details.brand;
    shaped.last_four = details.last_four;
    Ok(shaped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_id_depends_on_event_and_endpoint_only() {
        let (event, endpoint) = (Uuid::new_v4(), Uuid::new_v4());
        assert_eq!(delivery_id(event, endpoint), delivery_id(event, endpoint));
        assert_ne!(delivery_id(event, endpoint), delivery_id(endpoint, event));
        assert_ne!(
            delivery_id(event, endpoint),
            delivery_id(event, Uuid::new_v4())
        );
        assert_eq!(delivery_id(event, endpoint).get_version_num(), 4);
    }

    fn endpoint(merchant: Uuid, events: &[&str]) -> SubscriberRow {
        SubscriberRow {
            id: Uuid::new_v4(),
            merchant_id: merchant,
            environment: courier_domain::Environment::Test,
            events: events.iter().map(|e| (*e).to_owned()).collect(),
            active_since: chrono::Utc::now() - chrono::Duration::hours(1),
            url: "https://example.com/hooks".into(),
            secret_ciphertext: Vec::new(),
            previous_secret_ciphertext: None,
        }
    }

    fn event(merchant: Uuid, name: &str, only: Option<Uuid>) -> EventRow {
        EventRow {
            id: Uuid::new_v4(),
            merchant_id: merchant,
            environment: courier_domain::Environment::Test,
            name: name.into(),
            occurred_at: chrono::Utc::now(),
            recorded_at: chrono::Utc::now(),
            job: None,
            details: serde_json::json!({}),
            only_endpoint_id: only,
        }
    }

    #[test]
    fn a_test_event_goes_to_its_endpoint_only_whatever_its_filter() {
        let merchant = Uuid::new_v4();
        let everything = endpoint(merchant, &[]);
        let cancellations = endpoint(merchant, &["job.cancelled"]);
        let other_merchant = endpoint(Uuid::new_v4(), &[]);
        let ordinary = event(merchant, "job.booked", None);
        assert!(subscribes(&everything, &ordinary));
        assert!(!subscribes(&cancellations, &ordinary));
        assert!(!subscribes(&other_merchant, &ordinary));

        let test = event(merchant, "job.booked", Some(cancellations.id));
        assert!(subscribes(&cancellations, &test), "sent where it was asked");
        assert!(!subscribes(&everything, &test), "and nowhere else");
        let mut stolen = event(Uuid::new_v4(), "job.booked", Some(other_merchant.id));
        assert!(!subscribes(&cancellations, &stolen));
        stolen.merchant_id = merchant;
        assert!(
            !subscribes(&other_merchant, &stolen),
            "never another merchant's"
        );
    }
}
