//! The merchant-facing operations on webhook endpoints.

use chrono::{DateTime, DurationRound, Utc};
use reqwest::Url;
use serde::Serialize;
use serde_json::Value;
use thiserror::Error;
use uuid::Uuid;

use sqlx::PgPool;

use super::config::WebhookConfig;
use super::secret::{self, SecretCipher};
use super::test_event::test_event;
use courier_domain::event::EventName;
use courier_domain::webhook::{DeliveryStatus, EndpointStatus};
use courier_plugins::is_public_address as is_public;
use courier_store::webhooks::{self as store, DeliveryRow, EndpointRow, NewEndpoint, Owner};

use courier_domain::error::Code;
use courier_domain::error::ErrorCode;

pub const INVALID_URL: Code = Code::new(
    422,
    "webhook.invalid_url",
    "`url` missing, not a string, not an absolute `https` URL, longer than 2,048 characters, carrying a user name or password, or a literal non-public IP address.",
);
pub const UNKNOWN_EVENT: Code = Code::new(
    422,
    "webhook.unknown_event",
    "An `events` entry is not one of the spec's event names.",
);
pub const TOO_MANY_ENDPOINTS: Code = Code::new(
    422,
    "webhook.too_many_endpoints",
    "The merchant already has the most webhook endpoints one environment may have (`COURIER_WEBHOOK_MAX_ENDPOINTS`, 16 by default); delete one first.",
);
pub const INVALID_DESCRIPTION: Code = Code::new(
    422,
    "webhook.invalid_description",
    "`description` not a string or null, or longer than 500 characters.",
);
pub const INVALID_OVERLAP: Code = Code::new(
    422,
    "webhook.invalid_overlap",
    "`overlap_seconds` of a secret rotation not a whole number from 0 to 86,400 (a day).",
);
pub const ENDPOINT_NOT_FOUND: Code = Code::new(
    404,
    "webhook.not_found",
    "Another merchant's or the other environment's endpoint, an unknown id, or an id that is not a UUID.",
);

/// Delivery records listed per endpoint (spec section 8).
pub const DELIVERIES_LISTED: i64 = 50;
/// Longest endpoint URL accepted.
const MAX_URL_LENGTH: usize = 2048;
/// Longest endpoint description accepted, in characters.
const MAX_DESCRIPTION_LENGTH: usize = 500;
/// Longest overlap of a rotated-away secret: a day, as long as a receiver should need to
/// deploy its new secret.
pub const MAX_OVERLAP: std::time::Duration = std::time::Duration::from_secs(86_400);

#[derive(Debug, Error, ErrorCode)]
pub enum WebhookError {
    #[error("`url` {0}")]
    #[code(INVALID_URL)]
    InvalidUrl(String),
    #[error("{0:?} is not an event name")]
    #[code(UNKNOWN_EVENT)]
    UnknownEvent(String),
    #[error("`description` {0}")]
    #[code(INVALID_DESCRIPTION)]
    InvalidDescription(&'static str),
    #[error("`overlap_seconds` must be a whole number of seconds from 0 to 86400")]
    #[code(INVALID_OVERLAP)]
    InvalidOverlap,
    #[error("{0}")]
    #[code(courier_domain::error::INVALID_BODY)]
    InvalidEdit(String),
    #[error("`events` must be null or an array of event names")]
    #[code(courier_domain::error::INVALID_BODY)]
    InvalidEvents,
    #[error("this environment already has {0} webhook endpoints, the most it may have")]
    #[code(TOO_MANY_ENDPOINTS)]
    TooManyEndpoints(i32),
    #[error("no such webhook endpoint")]
    #[code(ENDPOINT_NOT_FOUND)]
    NotFound,
    #[error(transparent)]
    #[code(fault)]
    Store(#[from] sqlx::Error),
}

/// What recovering an endpoint's deliveries came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// This many deliveries are on their way again.
    SentAgain(u64),
    /// The endpoint is suspended or disabled: nothing is sent until it is resumed.
    NotActive,
}

/// A webhook endpoint as the API shows it (spec section 2).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Endpoint {
    pub id: Uuid,
    pub url: String,
    pub status: EndpointStatus,
    /// Subscribed event names; empty means every event.
    #[schema(value_type = Vec<EventName>)]
    pub events: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub last_succeeded_at: Option<DateTime<Utc>>,
    pub last_failed_at: Option<DateTime<Utc>>,
    pub consecutive_failures: i32,
    pub suspension_reason: Option<String>,
    /// What the merchant wrote to tell their endpoints apart; null when nothing.
    pub description: Option<String>,
    /// Set after a rotation with an overlap: until then the previous secret also signs each
    /// request (a second `v1` entry of `Courier-Signature`); null otherwise.
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
    /// Only in the response that created or rotated it.
    pub signing_secret: Option<String>,
}

impl Endpoint {
    fn from_row(row: EndpointRow, signing_secret: Option<String>) -> Self {
        Self {
            id: row.id,
            url: row.url,
            status: row.status,
            events: row.events,
            created_at: row.created_at,
            last_succeeded_at: row.last_succeeded_at,
            last_failed_at: row.last_failed_at,
            consecutive_failures: row.consecutive_failures,
            suspension_reason: row.suspension_reason,
            description: row.description,
            previous_secret_expires_at: row.previous_secret_until,
            signing_secret,
        }
    }
}

/// A delivery record (spec section 2). `status`: `pending` (an attempt is due or in progress),
/// `delivered` (a 2xx came back), `failed` (ten attempts failed, or the receiver answered 410),
/// `cancelled` (the endpoint was suspended before it could be delivered).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeliveryRecord {
    pub id: Uuid,
    #[schema(value_type = EventName)]
    pub event: String,
    pub status: DeliveryStatus,
    pub attempts: i32,
    pub occurred_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub response_status_code: Option<i32>,
    pub last_error: Option<String>,
}

impl From<DeliveryRow> for DeliveryRecord {
    fn from(row: DeliveryRow) -> Self {
        Self {
            id: row.id,
            event: row.event_name,
            status: row.status,
            attempts: row.attempts,
            occurred_at: row.occurred_at,
            delivered_at: row.delivered_at,
            next_attempt_at: row.next_attempt_at,
            response_status_code: row.response_status_code,
            last_error: row.last_error,
        }
    }
}

/// What became of a test event.
#[derive(Debug, PartialEq, Eq)]
pub enum TestEvent {
    /// Recorded (this is its event id); its delivery shows in the endpoint's log.
    Sent(Uuid),
    /// Not sent: a suspended endpoint is sent nothing until it is resumed.
    Suspended,
}

/// The merchant-facing operations on webhook endpoints.
pub struct Endpoints {
    pool: PgPool,
    cipher: SecretCipher,
    /// `COURIER_WEBHOOK_ALLOW_PRIVATE`: endpoints may be on non-public addresses.
    allow_private: bool,
    /// `COURIER_WEBHOOK_MAX_ENDPOINTS`: endpoints per merchant and environment.
    max_endpoints: i32,
    /// `COURIER_WEBHOOK_WARN_AFTER` and `COURIER_WEBHOOK_SUSPEND_AFTER`.
    warn_after: i32,
    suspend_after: i32,
}

/// How an endpoint's deliveries went over the last day, hour by hour (see [`Endpoints::health`]).
#[derive(Clone, Debug)]
pub struct Health {
    /// The start of the first hour: the hour 23 hours before the current one.
    pub since: DateTime<Utc>,
    /// One per hour, oldest first, the current (partial) hour last: 24 in all.
    pub hours: Vec<store::HealthBucket>,
    /// The whole day's.
    pub day: store::HealthBucket,
}

/// Hours in the health view.
pub const HEALTH_HOURS: i64 = 24;

/// Whether an endpoint is failing often enough to be warned about, and how close it is to
/// suspension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FailureWarning {
    pub failures: i32,
    pub suspend_after: i32,
}

impl Endpoints {
    pub fn new(pool: PgPool, cipher: SecretCipher, config: &WebhookConfig) -> Self {
        Self {
            pool,
            cipher,
            allow_private: config.allow_private,
            max_endpoints: config.max_endpoints,
            warn_after: config.warn_after,
            suspend_after: config.suspend_after,
        }
    }

    /// The warning an active endpoint's pages show once its consecutive failures reach
    /// `COURIER_WEBHOOK_WARN_AFTER` (when its developers are mailed), before it is suspended.
    pub fn failure_warning(&self, endpoint: &Endpoint) -> Option<FailureWarning> {
        (endpoint.status == EndpointStatus::Active
            && self.warn_after < self.suspend_after
            && endpoint.consecutive_failures >= self.warn_after)
            .then_some(FailureWarning {
                failures: endpoint.consecutive_failures,
                suspend_after: self.suspend_after,
            })
    }

    /// The owner's endpoint's attempts over the last 24 hours (the current one and the 23
    /// whole hours before it), hour by hour: how many succeeded and failed, and how long the
    /// receiver took to answer.
    pub async fn health(
        &self,
        owner: Owner,
        id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<Health, WebhookError> {
        if !store::endpoint_exists(&self.pool, id, owner).await? {
            return Err(WebhookError::NotFound);
        }
        let hour = chrono::Duration::hours(1);
        let current = now.duration_trunc(hour).unwrap_or(now);
        let since = current - hour * (HEALTH_HOURS as i32 - 1);
        let rows = store::endpoint_health(
            &self.pool,
            id,
            since,
            std::time::Duration::from_secs(3600),
            std::time::Duration::from_secs(2 * 3600),
        )
        .await?;
        let empty = |starts_at| store::HealthBucket {
            starts_at,
            succeeded: 0,
            failed: 0,
            median_ms: None,
            p95_ms: None,
        };
        let hours = (0..HEALTH_HOURS)
            .map(|n| {
                let starts = since + hour * n as i32;
                rows.iter()
                    .find(|row| row.starts_at == Some(starts))
                    .cloned()
                    .unwrap_or_else(|| empty(Some(starts)))
            })
            .collect();
        let day = rows
            .iter()
            .find(|row| row.starts_at.is_none())
            .cloned()
            .unwrap_or_else(|| empty(None));
        Ok(Health { since, hours, day })
    }

    /// Every attempt kept of the owner's endpoint's delivery, newest first.
    pub async fn attempts(
        &self,
        owner: Owner,
        endpoint_id: Uuid,
        delivery_id: Uuid,
    ) -> Result<Vec<store::AttemptRecord>, WebhookError> {
        // Whose it is first: the attempts are read by the delivery's id alone.
        self.delivery(owner, endpoint_id, delivery_id).await?;
        Ok(store::attempts_of(&self.pool, delivery_id).await?)
    }

    /// Registers an endpoint from the request body `{url, events, description}`.
    pub async fn create(&self, owner: Owner, body: &Value) -> Result<Endpoint, WebhookError> {
        let url = self.valid_url(body.get("url"))?;
        let events = valid_events(body.get("events"))?;
        let description = valid_description(body.get("description"))?;
        let id = Uuid::new_v4();
        let signing_secret = secret::generate();
        let sealed = self.cipher.seal(id, &signing_secret);
        let row = store::insert_endpoint(
            &self.pool,
            &NewEndpoint {
                id,
                owner,
                url: url.as_str(),
                events: &events,
                description: description.as_deref(),
                secret_ciphertext: &sealed,
            },
            self.max_endpoints,
        )
        .await?
        .ok_or(WebhookError::TooManyEndpoints(self.max_endpoints))?;
        Ok(Endpoint::from_row(row, Some(signing_secret)))
    }

    pub async fn list(&self, owner: Owner) -> Result<Vec<Endpoint>, WebhookError> {
        let rows = store::list_endpoints(&self.pool, owner).await?;
        Ok(rows
            .into_iter()
            .map(|row| Endpoint::from_row(row, None))
            .collect())
    }

    pub async fn deliveries(
        &self,
        owner: Owner,
        id: Uuid,
    ) -> Result<Vec<DeliveryRecord>, WebhookError> {
        if !store::endpoint_exists(&self.pool, id, owner).await? {
            return Err(WebhookError::NotFound);
        }
        let rows = store::recent_deliveries(&self.pool, id, DELIVERIES_LISTED).await?;
        Ok(rows.into_iter().map(DeliveryRecord::from).collect())
    }

    /// A page of the owner's endpoint's delivery log, newest first (see
    /// [`store::delivery_log`]), and whether older ones follow it.
    pub async fn delivery_log(
        &self,
        owner: Owner,
        id: Uuid,
        search: &store::LogSearch<'_>,
    ) -> Result<(Vec<DeliveryRecord>, bool), WebhookError> {
        if !store::endpoint_exists(&self.pool, id, owner).await? {
            return Err(WebhookError::NotFound);
        }
        let mut rows = store::delivery_log(&self.pool, id, search, DELIVERIES_LISTED + 1).await?;
        let more = rows.len() as i64 > DELIVERIES_LISTED;
        rows.truncate(DELIVERIES_LISTED as usize);
        Ok((rows.into_iter().map(DeliveryRecord::from).collect(), more))
    }

    /// The events recorded for the owner's job, oldest first, each with its delivery to each
    /// of the owner's endpoints that has one (looked up by the ids the fan-out gives them).
    pub async fn job_events(
        &self,
        owner: Owner,
        job_id: Uuid,
    ) -> Result<Vec<JobEvent>, WebhookError> {
        let (events, endpoints) = tokio::try_join!(
            store::events_of_job(&self.pool, owner, job_id),
            store::list_endpoints(&self.pool, owner),
        )?;
        let ids: Vec<Uuid> = events
            .iter()
            .flat_map(|event| {
                endpoints
                    .iter()
                    .map(|endpoint| super::fanout::delivery_id(event.id, endpoint.id))
            })
            .collect();
        let found = if ids.is_empty() {
            Vec::new()
        } else {
            store::deliveries_by_id(&self.pool, &ids).await?
        };
        Ok(events
            .into_iter()
            .map(|event| JobEvent {
                deliveries: found
                    .iter()
                    .filter(|d| d.event_id == event.id)
                    .filter_map(|d| {
                        let endpoint = endpoints.iter().find(|e| e.id == d.endpoint_id)?;
                        Some(JobEventDelivery {
                            endpoint_id: endpoint.id,
                            url: endpoint.url.clone(),
                            delivery_id: d.id,
                            status: d.status,
                            attempts: d.attempts,
                            response_status_code: d.response_status_code,
                        })
                    })
                    .collect(),
                name: event.name,
                occurred_at: event.occurred_at,
            })
            .collect())
    }

    /// One delivery of the owner's endpoint, with what was sent and what its last attempt
    /// heard back; not found for another owner's endpoint or another endpoint's delivery.
    pub async fn delivery(
        &self,
        owner: Owner,
        endpoint_id: Uuid,
        delivery_id: Uuid,
    ) -> Result<store::DeliveryDetail, WebhookError> {
        store::delivery_of(&self.pool, owner, endpoint_id, delivery_id)
            .await?
            .ok_or(WebhookError::NotFound)
    }

    pub async fn resume(&self, owner: Owner, id: Uuid) -> Result<Endpoint, WebhookError> {
        let row = store::resume(&self.pool, id, owner).await?;
        row.map(|row| Endpoint::from_row(row, None))
            .ok_or(WebhookError::NotFound)
    }

    /// A new secret. With no `overlap` the old one signs nothing from the moment this commits;
    /// with one, it signs beside the new one until the overlap ends (an earlier overlap's
    /// secret is dropped).
    pub async fn rotate_secret(
        &self,
        owner: Owner,
        id: Uuid,
        overlap: std::time::Duration,
    ) -> Result<Endpoint, WebhookError> {
        if overlap > MAX_OVERLAP {
            return Err(WebhookError::InvalidOverlap);
        }
        let signing_secret = secret::generate();
        let sealed = self.cipher.seal(id, &signing_secret);
        let row = store::replace_secret(&self.pool, id, owner, &sealed, overlap).await?;
        row.map(|row| Endpoint::from_row(row, Some(signing_secret)))
            .ok_or(WebhookError::NotFound)
    }

    /// Changes the endpoint's `url`, `events` or `description` from a request body holding any
    /// of them (and nothing else); its secret, status and deliveries stay as they are.
    pub async fn edit(
        &self,
        owner: Owner,
        id: Uuid,
        body: &Value,
    ) -> Result<Endpoint, WebhookError> {
        let Value::Object(fields) = body else {
            return Err(WebhookError::InvalidEdit(
                "the body must be an object of `url`, `events` and `description`".into(),
            ));
        };
        if let Some(unknown) = fields
            .keys()
            .find(|k| !["url", "events", "description"].contains(&k.as_str()))
        {
            return Err(WebhookError::InvalidEdit(format!(
                "`{unknown}` cannot be changed: only `url`, `events` and `description`"
            )));
        }
        let url = match fields.get("url") {
            Some(value) => Some(self.valid_url(Some(value))?),
            None => None,
        };
        let events = match fields.get("events") {
            Some(value) => Some(valid_events(Some(value))?),
            None => None,
        };
        let description = match fields.get("description") {
            Some(value) => Some(valid_description(Some(value))?),
            None => None,
        };
        let edit = store::EndpointEdit {
            url: url.as_ref().map(Url::as_str),
            events: events.as_deref(),
            description: description.as_ref().map(Option::as_deref),
        };
        let row = store::edit_endpoint(&self.pool, id, owner, &edit).await?;
        row.map(|row| Endpoint::from_row(row, None))
            .ok_or(WebhookError::NotFound)
    }

    /// Sends a finished delivery of the endpoint again, at once (one more attempt).
    pub async fn resend(
        &self,
        owner: Owner,
        endpoint_id: Uuid,
        delivery_id: Uuid,
    ) -> Result<(), WebhookError> {
        if store::resend(&self.pool, endpoint_id, delivery_id, owner).await? {
            Ok(())
        } else {
            Err(WebhookError::NotFound)
        }
    }

    /// Sends again every delivery of the endpoint owed and not delivered (failed, or cancelled
    /// by its suspension) whose event occurred since `since`, each once: how many, or that the
    /// endpoint must be resumed first.
    pub async fn recover_undelivered(
        &self,
        owner: Owner,
        endpoint_id: Uuid,
        since: DateTime<Utc>,
    ) -> Result<Recovery, WebhookError> {
        if !store::endpoint_exists(&self.pool, endpoint_id, owner).await? {
            return Err(WebhookError::NotFound);
        }
        Ok(
            match store::recover_undelivered(&self.pool, endpoint_id, owner, since).await? {
                Some(count) => Recovery::SentAgain(count),
                None => Recovery::NotActive,
            },
        )
    }

    /// Sends the endpoint a test event named `name` (made-up facts, marked as a test: see
    /// [`test_event`]), through the fan-out like any event, to that endpoint only.
    pub async fn send_test_event(
        &self,
        owner: Owner,
        endpoint_id: Uuid,
        name: &str,
    ) -> Result<TestEvent, WebhookError> {
        let name = EventName::parse(name).ok_or_else(|| WebhookError::UnknownEvent(name.into()))?;
        let event = test_event(name, owner.merchant_id, owner.environment, Utc::now());
        if let Some(id) = store::record_test_event(&self.pool, endpoint_id, &event).await? {
            crate::events::announce(&self.pool).await?;
            return Ok(TestEvent::Sent(id));
        }
        if store::endpoint_exists(&self.pool, endpoint_id, owner).await? {
            Ok(TestEvent::Suspended)
        } else {
            Err(WebhookError::NotFound)
        }
    }

    /// Deletes the endpoint; attempts not yet started find it gone and are not made.
    pub async fn delete(&self, owner: Owner, id: Uuid) -> Result<(), WebhookError> {
        if store::delete(&self.pool, id, owner).await? {
            Ok(())
        } else {
            Err(WebhookError::NotFound)
        }
    }

    fn valid_url(&self, value: Option<&Value>) -> Result<Url, WebhookError> {
        let invalid = |why: &str| WebhookError::InvalidUrl(why.to_owned());
        let text = match value {
            Some(Value::String(text)) => text.trim(),
            Some(Value::Null) | None => return Err(invalid("is required")),
            Some(_) => return Err(invalid("must be a string")),
        };
        if text.len() > MAX_URL_LENGTH {
            return Err(invalid("is longer than 2048 characters"));
        }
        let url =
            Url::parse(text).map_err(|e| invalid(&format!("is not an absolute URL ({e})")))?;
        if url.scheme() != "https" {
            return Err(invalid("must be an https URL"));
        }
        let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
            return Err(invalid("must name a host"));
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(invalid("must not carry credentials"));
        }
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = literal.parse()
            && !self.allow_private
            && !is_public(ip)
        {
            return Err(invalid("must not point at a private or local address"));
        }
        Ok(url)
    }
}

/// A description trimmed, None when absent, null or blank.
fn valid_description(value: Option<&Value>) -> Result<Option<String>, WebhookError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.chars().count() > MAX_DESCRIPTION_LENGTH => Err(
            WebhookError::InvalidDescription("is longer than 500 characters"),
        ),
        Some(Value::String(text)) => {
            let text = text.trim();
            Ok((!text.is_empty()).then(|| text.to_owned()))
        }
        Some(_) => Err(WebhookError::InvalidDescription("must be a string or null")),
    }
}

/// The subscribed names, each known, without repeats; empty (or null) means every event.
fn valid_events(value: Option<&Value>) -> Result<Vec<String>, WebhookError> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(WebhookError::InvalidEvents),
    };
    let mut names: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let Value::String(name) = item else {
            return Err(WebhookError::InvalidEvents);
        };
        let known =
            EventName::parse(name).ok_or_else(|| WebhookError::UnknownEvent(name.clone()))?;
        if !names.iter().any(|n| n == known.as_str()) {
            names.push(known.as_str().to_owned());
        }
    }
    Ok(names)
}

/// An event recorded for a job, and where it was delivered.
#[derive(Clone, Debug)]
pub struct JobEvent {
    pub name: String,
    pub occurred_at: DateTime<Utc>,
    pub deliveries: Vec<JobEventDelivery>,
}

/// An event's delivery to one endpoint.
#[derive(Clone, Debug)]
pub struct JobEventDelivery {
    pub endpoint_id: Uuid,
    pub url: String,
    pub delivery_id: Uuid,
    pub status: DeliveryStatus,
    pub attempts: i32,
    pub response_status_code: Option<i32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn descriptions_are_trimmed_and_bounded() {
        assert_eq!(valid_description(None).unwrap(), None);
        assert_eq!(valid_description(Some(&json!("  "))).unwrap(), None);
        assert_eq!(
            valid_description(Some(&json!(" Orders ")))
                .unwrap()
                .as_deref(),
            Some("Orders")
        );
        assert!(valid_description(Some(&json!("é".repeat(500)))).is_ok());
        assert!(matches!(
            valid_description(Some(&json!("é".repeat(501)))),
            Err(WebhookError::InvalidDescription(_))
        ));
        assert!(matches!(
            valid_description(Some(&json!(7))),
            Err(WebhookError::InvalidDescription(_))
        ));
    }

    #[test]
    fn events_are_checked_and_deduplicated() {
        assert!(valid_events(None).unwrap().is_empty());
        assert!(valid_events(Some(&json!(null))).unwrap().is_empty());
        assert!(valid_events(Some(&json!([]))).unwrap().is_empty());
        assert_eq!(
            valid_events(Some(&json!([
                "job.booked",
                "job.booked",
                "payment_method.dead"
            ])))
            .unwrap(),
            vec!["job.booked", "payment_method.dead"]
        );
        assert!(matches!(
            valid_events(Some(&json!(["job.exploded"]))),
            Err(WebhookError::UnknownEvent(name)) if name == "job.exploded"
        ));
        assert!(matches!(
            valid_events(Some(&json!("job.booked"))),
            Err(WebhookError::InvalidEvents)
        ));
    }
}
