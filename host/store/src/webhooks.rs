//! Webhook endpoints, delivery records and the claims of the delivery workers.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use courier_domain::Environment;
use courier_domain::event::NewEvent;
use courier_domain::webhook::{DeliveryStatus, EndpointStatus};

use crate::text_columns::Text;

/// An endpoint as the API shows it (never the secret).
#[derive(Clone, Debug)]
pub struct EndpointRow {
    pub id: Uuid,
    pub url: String,
    pub status: EndpointStatus,
    pub events: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub last_succeeded_at: Option<DateTime<Utc>>,
    pub last_failed_at: Option<DateTime<Utc>>,
    pub consecutive_failures: i32,
    pub suspension_reason: Option<String>,
    pub description: Option<String>,
    /// Until when a rotated-away secret still signs beside the current one (None once past).
    pub previous_secret_until: Option<DateTime<Utc>>,
}

/// Whose endpoint: a merchant in one environment.
#[derive(Clone, Copy, Debug)]
pub struct Owner {
    pub merchant_id: Uuid,
    pub environment: Environment,
}

pub struct NewEndpoint<'a> {
    pub id: Uuid,
    pub owner: Owner,
    pub url: &'a str,
    pub events: &'a [String],
    pub description: Option<&'a str>,
    pub secret_ciphertext: &'a [u8],
}

/// Inserts the endpoint unless its owner already has `max` of them (None then). Registrations
/// of one owner are serialised, so racing ones cannot pass the cap together.
pub async fn insert_endpoint(
    pool: &PgPool,
    endpoint: &NewEndpoint<'_>,
    max: i32,
) -> Result<Option<EndpointRow>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(hashtextextended('webhook_endpoints:' || $1::text || ':' || $2, 0))",
        endpoint.owner.merchant_id.to_string(),
        endpoint.owner.environment.as_str(),
    )
    .execute(&mut *tx)
    .await?;
    let count = sqlx::query_scalar!(
        "SELECT count(*) AS \"count!\" FROM webhook_endpoints \
         WHERE merchant_id = $1 AND environment = $2",
        endpoint.owner.merchant_id,
        endpoint.owner.environment.as_str(),
    )
    .fetch_one(&mut *tx)
    .await?;
    if count >= i64::from(max) {
        return Ok(None);
    }
    let row = sqlx::query_as!(
        EndpointRow,
        "INSERT INTO webhook_endpoints (id, merchant_id, environment, url, events, \
         secret_ciphertext, description) VALUES ($1, $2, $3, $4, $5, $6, $7) \
         RETURNING id, url, description, status AS \"status: Text<EndpointStatus>\", events, created_at, \
           last_succeeded_at, last_failed_at, consecutive_failures, suspension_reason, \
           CASE WHEN previous_secret_until > now() THEN previous_secret_until END AS previous_secret_until",
        endpoint.id,
        endpoint.owner.merchant_id,
        endpoint.owner.environment.as_str(),
        endpoint.url,
        endpoint.events,
        endpoint.secret_ciphertext,
        endpoint.description,
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Some(row))
}

pub async fn list_endpoints(pool: &PgPool, owner: Owner) -> Result<Vec<EndpointRow>, sqlx::Error> {
    sqlx::query_as!(
        EndpointRow,
        "SELECT id, url, description, status AS \"status: Text<EndpointStatus>\", events, created_at, \
           last_succeeded_at, last_failed_at, consecutive_failures, suspension_reason, \
           CASE WHEN previous_secret_until > now() THEN previous_secret_until END AS previous_secret_until \
         FROM webhook_endpoints \
         WHERE merchant_id = $1 AND environment = $2 ORDER BY created_at, id",
        owner.merchant_id,
        owner.environment.as_str(),
    )
    .fetch_all(pool)
    .await
}

pub async fn endpoint_exists(pool: &PgPool, id: Uuid, owner: Owner) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT EXISTS (SELECT 1 FROM webhook_endpoints \
         WHERE id = $1 AND merchant_id = $2 AND environment = $3) AS \"exists!\"",
        id,
        owner.merchant_id,
        owner.environment.as_str(),
    )
    .fetch_one(pool)
    .await
}

/// Reactivates an endpoint; events recorded from now on are sent to it again.
pub async fn resume(
    pool: &PgPool,
    id: Uuid,
    owner: Owner,
) -> Result<Option<EndpointRow>, sqlx::Error> {
    sqlx::query_as!(
        EndpointRow,
        "UPDATE webhook_endpoints SET \
           active_since = CASE WHEN status = 'active' THEN active_since ELSE now() END, \
           status = 'active', consecutive_failures = 0, suspension_reason = NULL \
         WHERE id = $1 AND merchant_id = $2 AND environment = $3 RETURNING id, url, description, status AS \"status: Text<EndpointStatus>\", events, created_at, \
           last_succeeded_at, last_failed_at, consecutive_failures, suspension_reason, \
           CASE WHEN previous_secret_until > now() THEN previous_secret_until END AS previous_secret_until",
        id,
        owner.merchant_id,
        owner.environment.as_str(),
    )
    .fetch_optional(pool)
    .await
}

pub async fn replace_secret(
    pool: &PgPool,
    id: Uuid,
    owner: Owner,
    secret_ciphertext: &[u8],
    overlap: Duration,
) -> Result<Option<EndpointRow>, sqlx::Error> {
    sqlx::query_as!(
        EndpointRow,
        "UPDATE webhook_endpoints SET \
           previous_secret_ciphertext = CASE WHEN $5 > 0 THEN secret_ciphertext END, \
           previous_secret_until = CASE WHEN $5 > 0 \
             THEN now() + make_interval(secs => $5::float8 / 1000) END, \
           secret_ciphertext = $4 \
         WHERE id = $1 AND merchant_id = $2 AND environment = $3 RETURNING id, url, description, status AS \"status: Text<EndpointStatus>\", events, created_at, \
           last_succeeded_at, last_failed_at, consecutive_failures, suspension_reason, \
           CASE WHEN previous_secret_until > now() THEN previous_secret_until END AS previous_secret_until",
        id,
        owner.merchant_id,
        owner.environment.as_str(),
        secret_ciphertext,
        overlap.as_millis() as i64,
    )
    .fetch_optional(pool)
    .await
}

/// What an edit changes: each field given is set (`description: Some(None)` clears it).
#[derive(Debug, Default)]
pub struct EndpointEdit<'a> {
    pub url: Option<&'a str>,
    pub events: Option<&'a [String]>,
    pub description: Option<Option<&'a str>>,
}

/// Changes an endpoint's URL, events or description; its secret, status and deliveries stay.
/// Attempts read the endpoint as they start, so pending deliveries go to the new URL.
pub async fn edit_endpoint(
    pool: &PgPool,
    id: Uuid,
    owner: Owner,
    edit: &EndpointEdit<'_>,
) -> Result<Option<EndpointRow>, sqlx::Error> {
    sqlx::query_as!(
        EndpointRow,
        "UPDATE webhook_endpoints SET url = coalesce($4, url), events = coalesce($5, events), \
           description = CASE WHEN $6 THEN $7 ELSE description END \
         WHERE id = $1 AND merchant_id = $2 AND environment = $3 RETURNING id, url, description, status AS \"status: Text<EndpointStatus>\", events, created_at, \
           last_succeeded_at, last_failed_at, consecutive_failures, suspension_reason, \
           CASE WHEN previous_secret_until > now() THEN previous_secret_until END AS previous_secret_until",
        id,
        owner.merchant_id,
        owner.environment.as_str(),
        edit.url,
        edit.events,
        edit.description.is_some(),
        edit.description.flatten(),
    )
    .fetch_optional(pool)
    .await
}

/// Deletes the endpoint and its delivery records; true when it existed. A worker recording a
/// success locks its delivery, then the endpoint, while the cascade here goes the other way; the
/// rare deadlock that can cause is resolved by Postgres aborting one side, and retried here.
pub async fn delete(pool: &PgPool, id: Uuid, owner: Owner) -> Result<bool, sqlx::Error> {
    retrying_deadlocks(|| delete_once(pool, id, owner)).await
}

/// Runs `once` again (three tries in all) when Postgres resolved a deadlock by aborting it.
async fn retrying_deadlocks<T, F, Fut>(mut once: F) -> Result<T, sqlx::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, sqlx::Error>>,
{
    let mut tries = 0;
    loop {
        tries += 1;
        match once().await {
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("40P01") && tries < 3 => {}
            other => return other,
        }
    }
}

async fn delete_once(pool: &PgPool, id: Uuid, owner: Owner) -> Result<bool, sqlx::Error> {
    let done = sqlx::query!(
        "DELETE FROM webhook_endpoints WHERE id = $1 AND merchant_id = $2 AND environment = $3",
        id,
        owner.merchant_id,
        owner.environment.as_str(),
    )
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A delivery record as the API shows it.
#[derive(Clone, Debug)]
pub struct DeliveryRow {
    pub id: Uuid,
    pub event_name: String,
    pub status: DeliveryStatus,
    pub attempts: i32,
    pub occurred_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub response_status_code: Option<i32>,
    pub last_error: Option<String>,
}

pub async fn recent_deliveries(
    pool: &PgPool,
    endpoint_id: Uuid,
    limit: i64,
) -> Result<Vec<DeliveryRow>, sqlx::Error> {
    sqlx::query_as!(
        DeliveryRow,
        "SELECT id, event_name, status AS \"status: Text<DeliveryStatus>\", attempts, occurred_at, delivered_at, next_attempt_at, \
         response_status_code, last_error FROM webhook_deliveries WHERE endpoint_id = $1 \
         ORDER BY created_at DESC, occurred_at DESC LIMIT $2",
        endpoint_id,
        limit,
    )
    .fetch_all(pool)
    .await
}

/// What a page of an endpoint's delivery log is filtered by; None is any.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogSearch<'a> {
    pub status: Option<DeliveryStatus>,
    /// The event's name (`job.delivered`…).
    pub event: Option<&'a str>,
    /// The reference of the job the event is about.
    pub reference: Option<&'a str>,
    /// Made before this delivery (from the top when None; nothing when it is not one of the
    /// endpoint's deliveries).
    pub before: Option<Uuid>,
}

/// A page of an endpoint's delivery log, newest first, those `search` finds, up to `limit`.
/// A job's reference names one job (references are unique), whose few events are found by
/// their index; the log is read newest first along the endpoint's.
pub async fn delivery_log(
    pool: &PgPool,
    endpoint_id: Uuid,
    search: &LogSearch<'_>,
    limit: i64,
) -> Result<Vec<DeliveryRow>, sqlx::Error> {
    sqlx::query_as!(
        DeliveryRow,
        "SELECT id, event_name, status AS \"status: Text<DeliveryStatus>\", attempts, occurred_at, delivered_at, next_attempt_at, \
         response_status_code, last_error FROM webhook_deliveries d WHERE endpoint_id = $1 \
         AND ($2::text IS NULL OR status = $2) \
         AND ($3::uuid IS NULL OR (created_at, id) < \
              (SELECT created_at, id FROM webhook_deliveries WHERE id = $3 AND endpoint_id = $1)) \
         AND ($5::text IS NULL OR event_name = $5) \
         AND ($6::text IS NULL OR event_id IN (SELECT ev.id FROM events ev \
              JOIN jobs j ON j.id = ev.job_id WHERE j.reference = $6)) \
         ORDER BY created_at DESC, id DESC LIMIT $4",
        endpoint_id,
        search.status.map(|s| s.as_str()),
        search.before,
        limit,
        search.event,
        search.reference,
    )
    .fetch_all(pool)
    .await
}

/// One delivery as its endpoint's log shows it: where it goes, what was sent and what the
/// last attempt heard back.
#[derive(Clone, Debug)]
pub struct DeliveryDetail {
    pub id: Uuid,
    /// The endpoint's URL.
    pub url: String,
    pub event_name: String,
    pub body: Vec<u8>,
    pub status: DeliveryStatus,
    pub attempts: i32,
    pub occurred_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub last_attempt_at: Option<DateTime<Utc>>,
    pub response_status_code: Option<i32>,
    pub response_ms: Option<i32>,
    pub response_excerpt: Option<String>,
    pub last_error: Option<String>,
}

/// The delivery `id` of the owner's endpoint `endpoint_id`; None for another owner's
/// endpoint or another endpoint's delivery.
pub async fn delivery_of(
    pool: &PgPool,
    owner: Owner,
    endpoint_id: Uuid,
    id: Uuid,
) -> Result<Option<DeliveryDetail>, sqlx::Error> {
    sqlx::query_as!(
        DeliveryDetail,
        "SELECT d.id, e.url, d.event_name, d.body, \
           d.status AS \"status: Text<DeliveryStatus>\", d.attempts, d.occurred_at, \
           d.created_at, d.delivered_at, d.next_attempt_at, d.last_attempt_at, \
           d.response_status_code, d.response_ms, d.response_excerpt, d.last_error \
         FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id \
         WHERE d.id = $1 AND d.endpoint_id = $2 AND e.merchant_id = $3 \
           AND e.environment = $4",
        id,
        endpoint_id,
        owner.merchant_id,
        owner.environment.as_str(),
    )
    .fetch_optional(pool)
    .await
}

// ---- Fan-out -------------------------------------------------------------------------------

/// An event waiting to be fanned out.
#[derive(Clone, Debug)]
pub struct EventRow {
    pub id: Uuid,
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub name: String,
    pub occurred_at: DateTime<Utc>,
    pub recorded_at: DateTime<Utc>,
    pub job: Option<serde_json::Value>,
    pub details: serde_json::Value,
    /// A test event's endpoint: the only one it goes to.
    pub only_endpoint_id: Option<Uuid>,
}

/// Locks up to `limit` events not yet fanned out; other workers skip them.
pub async fn claim_events(
    conn: &mut PgConnection,
    limit: i64,
) -> Result<Vec<EventRow>, sqlx::Error> {
    sqlx::query_as!(
        EventRow,
        "SELECT id, merchant_id, environment AS \"environment: Text<Environment>\", name, occurred_at, recorded_at, job, details, \
           only_endpoint_id \
         FROM events WHERE fanned_out_at IS NULL ORDER BY recorded_at LIMIT $1 \
         FOR NO KEY UPDATE SKIP LOCKED",
        limit,
    )
    .fetch_all(conn)
    .await
}

/// Records `event` as a test event of the endpoint `endpoint_id`, for that endpoint only, if
/// it is an active endpoint of the event's merchant and environment; answers the event's id,
/// or `None` when there is no such active endpoint.
pub async fn record_test_event(
    pool: &PgPool,
    endpoint_id: Uuid,
    event: &NewEvent,
) -> Result<Option<Uuid>, sqlx::Error> {
    let job = event
        .job
        .as_ref()
        .map(|j| serde_json::to_value(j).expect("job facts serialise"));
    let details = serde_json::to_value(&event.details).expect("event details serialise");
    sqlx::query_scalar!(
        "INSERT INTO events (id, merchant_id, environment, name, job_id, occurred_at, job, \
           details, only_endpoint_id) \
         SELECT $1, e.merchant_id, e.environment, $2, NULL, $3, $4, $5, e.id \
         FROM webhook_endpoints e \
         WHERE e.id = $6 AND e.merchant_id = $7 AND e.environment = $8 AND e.status = 'active' \
         RETURNING id",
        Uuid::new_v4(),
        event.name.as_str(),
        event.occurred_at,
        job,
        details,
        endpoint_id,
        event.merchant_id,
        event.environment.as_str(),
    )
    .fetch_optional(pool)
    .await
}

/// Marks fanned out, in one statement with its commit, those of the oldest `limit` events
/// awaiting fan-out whose merchant has no active endpoint in the event's environment: no
/// delivery can come of them. Says how many it marked, and whether other events await
/// fan-out (some may be another round's).
pub async fn pass_over_unsubscribed(
    conn: &mut PgConnection,
    limit: i64,
) -> Result<(i64, bool), sqlx::Error> {
    let row = sqlx::query!(
        "WITH oldest AS ( \
           SELECT id, merchant_id, environment FROM events WHERE fanned_out_at IS NULL \
           ORDER BY recorded_at LIMIT $1 FOR NO KEY UPDATE SKIP LOCKED), \
         passed AS ( \
           UPDATE events SET fanned_out_at = now() \
           WHERE id IN (SELECT o.id FROM oldest o WHERE NOT EXISTS ( \
             SELECT 1 FROM webhook_endpoints w WHERE w.merchant_id = o.merchant_id \
               AND w.environment = o.environment AND w.status = 'active')) \
           RETURNING id) \
         SELECT (SELECT count(*) FROM passed) AS \"passed!\", \
           EXISTS (SELECT 1 FROM events WHERE fanned_out_at IS NULL \
             AND id NOT IN (SELECT id FROM passed)) AS \"more!\"",
        limit,
    )
    .fetch_one(conn)
    .await?;
    Ok((row.passed, row.more))
}

/// An active endpoint of one of the merchants, with what fan-out needs to choose it and what
/// the round's first attempts need to reach it.
#[derive(Clone, Debug)]
pub struct SubscriberRow {
    pub id: Uuid,
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub events: Vec<String>,
    pub active_since: DateTime<Utc>,
    pub url: String,
    pub secret_ciphertext: Vec<u8>,
    /// The rotated-away secret while its overlap lasts.
    pub previous_secret_ciphertext: Option<Vec<u8>>,
}

pub async fn active_endpoints_of(
    conn: &mut PgConnection,
    merchant_ids: &[Uuid],
) -> Result<Vec<SubscriberRow>, sqlx::Error> {
    sqlx::query_as!(
        SubscriberRow,
        "SELECT id, merchant_id, environment AS \"environment: Text<Environment>\", events, active_since, \
           url, secret_ciphertext, \
           CASE WHEN previous_secret_until > now() THEN previous_secret_ciphertext END \
             AS previous_secret_ciphertext \
         FROM webhook_endpoints WHERE merchant_id = ANY($1) AND status = 'active'",
        merchant_ids,
    )
    .fetch_all(conn)
    .await
}

/// A delivery to create: already delivered when its round took a 2xx answer, else claimed by
/// the worker that creates it.
pub struct NewDelivery {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    /// The endpoint's owner (not stored with the delivery).
    pub merchant_id: Uuid,
    pub event_id: Uuid,
    pub event_name: String,
    pub occurred_at: DateTime<Utc>,
    pub body: Vec<u8>,
    /// The first attempt's 2xx answer, when the round took it.
    pub answered: Option<Answered>,
}

/// What an attempt heard back: how long the receiver took to answer (or to fail), and the
/// start of its answer's body, as text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    pub took_ms: i32,
    pub excerpt: Option<String>,
}

/// A 2xx answer: its status code, and what came with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answered {
    pub status_code: i32,
    pub reply: Reply,
}

/// Inserts the deliveries made from a batch of events (those answered 2xx as delivered, with
/// one attempt; the others pending, claimed with `token` for `lease_ms`), marks the batch's
/// `done` events fanned out, and refreshes the answering endpoints as
/// [`record_successes`] does, in one statement. Deliveries to an endpoint deleted since the
/// batch was read, or being deleted now (the lock waits for that to end), are left out: they
/// would fail the whole batch, and its other deliveries, already sent, would be sent again.
///
/// Run on the webhook workers' connections, which plan each execution for its own values
/// (`plan_cache_mode = force_custom_plan`): the statement stays prepared, parsed once per
/// connection, while no plan made when the outbox was small outlives its growth.
pub async fn record_fan_out(
    conn: &mut PgConnection,
    deliveries: &[NewDelivery],
    done: &[Uuid],
    lease_ms: i64,
    token: Uuid,
) -> Result<(), sqlx::Error> {
    let column = |f: fn(&NewDelivery) -> Uuid| deliveries.iter().map(f).collect::<Vec<_>>();
    let names: Vec<String> = deliveries.iter().map(|d| d.event_name.clone()).collect();
    let occurred: Vec<DateTime<Utc>> = deliveries.iter().map(|d| d.occurred_at).collect();
    let bodies: Vec<Vec<u8>> = deliveries.iter().map(|d| d.body.clone()).collect();
    let answered: Vec<Option<i32>> = deliveries
        .iter()
        .map(|d| d.answered.as_ref().map(|a| a.status_code))
        .collect();
    let took: Vec<Option<i32>> = deliveries
        .iter()
        .map(|d| d.answered.as_ref().map(|a| a.reply.took_ms))
        .collect();
    let excerpts: Vec<Option<String>> = deliveries
        .iter()
        .map(|d| d.answered.as_ref().and_then(|a| a.reply.excerpt.clone()))
        .collect();
    sqlx::query!(
        "WITH live AS ( \
           SELECT id FROM webhook_endpoints WHERE id = ANY($2) FOR KEY SHARE), \
         made AS ( \
           INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_name, occurred_at, \
             body, status, attempts, next_attempt_at, lease_until, lease_token, delivered_at, \
             response_status_code, last_attempt_at, response_ms, response_excerpt) \
           SELECT d.id, d.endpoint_id, d.event_id, d.event_name, d.occurred_at, d.body, \
             CASE WHEN d.code IS NULL THEN 'pending' ELSE 'delivered' END, \
             CASE WHEN d.code IS NULL THEN 0 ELSE 1 END, \
             CASE WHEN d.code IS NULL THEN now() END, \
             CASE WHEN d.code IS NULL THEN now() + make_interval(secs => $8::float8 / 1000) END, \
             CASE WHEN d.code IS NULL THEN $9::uuid END, \
             CASE WHEN d.code IS NOT NULL THEN now() END, d.code, \
             CASE WHEN d.code IS NOT NULL THEN now() END, d.took, d.excerpt \
           FROM UNNEST($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::timestamptz[], \
             $6::bytea[], $7::int4[], $11::int4[], $12::text[]) AS d (id, endpoint_id, event_id, \
             event_name, occurred_at, body, code, took, excerpt) \
           WHERE d.endpoint_id IN (SELECT id FROM live) \
           ON CONFLICT (id) DO NOTHING \
           RETURNING endpoint_id, response_status_code), \
         fanned AS (UPDATE events SET fanned_out_at = now() WHERE id = ANY($10)), \
         stale AS ( \
           SELECT e.id FROM webhook_endpoints e \
           WHERE e.id IN (SELECT endpoint_id FROM made WHERE response_status_code IS NOT NULL) \
             AND (e.consecutive_failures <> 0 OR e.last_succeeded_at IS NULL \
               OR e.last_succeeded_at < now() - interval '1 second') \
           ORDER BY e.id FOR NO KEY UPDATE) \
         UPDATE webhook_endpoints e SET last_succeeded_at = now(), consecutive_failures = 0 \
         FROM stale WHERE e.id = stale.id",
        &column(|d| d.id),
        &column(|d| d.endpoint_id),
        &column(|d| d.event_id),
        &names as &[String],
        &occurred,
        &bodies as &[Vec<u8>],
        &answered as &[Option<i32>],
        lease_ms as f64,
        token,
        done,
        &took as &[Option<i32>],
        &excerpts as &[Option<String>],
    )
    .execute(conn)
    .await?;
    Ok(())
}

// ---- Delivery workers ----------------------------------------------------------------------

/// A claimed delivery: only the holder of `token` may attempt it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ClaimRow {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub merchant_id: Uuid,
    pub event_name: String,
    pub body: Vec<u8>,
    /// Attempts made before this claim.
    pub attempts: i32,
}

/// Claims due deliveries nobody holds (or whose holder's lease ran out), with what an attempt
/// sends. On the webhook workers' connections, as [`record_fan_out`].
pub async fn claim_due(
    pool: &PgPool,
    limit: i64,
    lease_ms: i64,
    token: Uuid,
    skip_endpoints: &[Uuid],
) -> Result<Vec<ClaimRow>, sqlx::Error> {
    sqlx::query_as::<_, ClaimRow>(
        "WITH due AS ( \
           SELECT id FROM webhook_deliveries \
           WHERE status = 'pending' AND next_attempt_at <= now() \
             AND (lease_until IS NULL OR lease_until < now()) \
             AND endpoint_id <> ALL($4) \
           ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED) \
         UPDATE webhook_deliveries d \
         SET lease_until = now() + make_interval(secs => $2::float8 / 1000), lease_token = $3 \
         FROM due, webhook_endpoints e WHERE d.id = due.id AND e.id = d.endpoint_id \
         RETURNING d.id, d.endpoint_id, e.merchant_id, d.event_name, d.body, d.attempts",
    )
    .bind(limit)
    .bind(lease_ms)
    .bind(token)
    .bind(skip_endpoints)
    .fetch_all(pool)
    .await
}

/// Gives back claims this worker cannot start soon, for any worker to take.
pub async fn release_claims(pool: &PgPool, ids: &[Uuid], token: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE webhook_deliveries SET lease_until = NULL, lease_token = NULL \
         WHERE id = ANY($1) AND lease_token = $2",
        ids,
        token,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Everything one attempt needs, read as the claim is renewed.
#[derive(Clone, Debug)]
pub struct AttemptRow {
    pub event_name: String,
    pub body: Vec<u8>,
    pub url: String,
    pub secret_ciphertext: Vec<u8>,
    /// The rotated-away secret while its overlap lasts.
    pub previous_secret_ciphertext: Option<Vec<u8>>,
    pub endpoint_status: EndpointStatus,
    /// Attempts made before this one.
    pub attempts: i32,
}

/// Renews the claim and reads the delivery with its endpoint's current URL and secret; None
/// when the claim was lost, the delivery is finished, or the endpoint is gone.
pub async fn begin_attempt(
    pool: &PgPool,
    id: Uuid,
    token: Uuid,
    lease_ms: i64,
) -> Result<Option<AttemptRow>, sqlx::Error> {
    sqlx::query_as!(
        AttemptRow,
        "UPDATE webhook_deliveries d \
         SET lease_until = now() + make_interval(secs => $3::float8 / 1000) \
         FROM webhook_endpoints e \
         WHERE d.id = $1 AND d.lease_token = $2 AND d.status = 'pending' AND e.id = d.endpoint_id \
         RETURNING d.event_name, d.body, e.url, e.secret_ciphertext, \
           CASE WHEN e.previous_secret_until > now() THEN e.previous_secret_ciphertext END \
             AS previous_secret_ciphertext, \
           e.status AS \"endpoint_status: Text<EndpointStatus>\", d.attempts",
        id,
        token,
        lease_ms as f64,
    )
    .fetch_optional(pool)
    .await
}

/// Where and how an attempt is sent: the endpoint as it is now.
#[derive(Clone, Debug)]
pub struct TargetRow {
    pub id: Uuid,
    pub url: String,
    pub secret_ciphertext: Vec<u8>,
    /// The rotated-away secret while its overlap lasts.
    pub previous_secret_ciphertext: Option<Vec<u8>>,
    pub status: EndpointStatus,
}

/// The current URL, secret and status of each of the endpoints that still exist.
pub async fn attempt_targets(pool: &PgPool, ids: &[Uuid]) -> Result<Vec<TargetRow>, sqlx::Error> {
    sqlx::query_as!(
        TargetRow,
        "SELECT id, url, secret_ciphertext, \
           CASE WHEN previous_secret_until > now() THEN previous_secret_ciphertext END \
             AS previous_secret_ciphertext, \
           status AS \"status: Text<EndpointStatus>\" \
         FROM webhook_endpoints WHERE id = ANY($1)",
        ids,
    )
    .fetch_all(pool)
    .await
}

/// A 2xx to record: the delivery, the claim it was sent under, the status code and what came
/// with it.
#[derive(Clone, Debug)]
pub struct Success {
    pub id: Uuid,
    pub token: Uuid,
    pub status_code: i32,
    pub reply: Reply,
}

/// Records 2xx answers, many in one statement. A delivery whose claim was lost meanwhile is
/// left alone. The endpoints' `last_succeeded_at` is refreshed at most once a second each, so
/// a busy endpoint's row is not a point of contention. Their rows are locked in id order, so
/// recorders in several processes cannot deadlock on them, and without taking the key (`NO KEY
/// UPDATE`), so the fan-out's inserts, whose foreign keys share the key, do not wait for them.
/// An endpoint deleted meanwhile can still deadlock with the batch (see [`delete`]): retried.
pub async fn record_successes(pool: &PgPool, successes: &[Success]) -> Result<(), sqlx::Error> {
    retrying_deadlocks(|| record_successes_once(pool, successes)).await
}

async fn record_successes_once(pool: &PgPool, successes: &[Success]) -> Result<(), sqlx::Error> {
    let ids: Vec<Uuid> = successes.iter().map(|s| s.id).collect();
    let tokens: Vec<Uuid> = successes.iter().map(|s| s.token).collect();
    let codes: Vec<i32> = successes.iter().map(|s| s.status_code).collect();
    let took: Vec<i32> = successes.iter().map(|s| s.reply.took_ms).collect();
    let excerpts: Vec<Option<String>> = successes.iter().map(|s| s.reply.excerpt.clone()).collect();
    // Joined to the list alone, a plan made while the outbox was small read all of it for every
    // batch later; `w.id = ANY($1)` leads the planner to the primary key. The workers' pool
    // also plans each execution afresh (`plan_cache_mode`).
    sqlx::query!(
        "WITH d AS ( \
           UPDATE webhook_deliveries w SET status = 'delivered', attempts = w.attempts + 1, \
             delivered_at = now(), next_attempt_at = NULL, lease_until = NULL, \
             lease_token = NULL, response_status_code = s.code, last_error = NULL, \
             last_attempt_at = now(), response_ms = s.took, response_excerpt = s.excerpt \
           FROM UNNEST($1::uuid[], $2::uuid[], $3::int4[], $4::int4[], $5::text[]) \
             AS s (id, token, code, took, excerpt) \
           WHERE w.id = ANY($1) AND w.id = s.id AND w.lease_token = s.token \
             AND w.status = 'pending' \
           RETURNING w.endpoint_id), \
         stale AS ( \
           SELECT e.id FROM webhook_endpoints e \
           WHERE e.id IN (SELECT endpoint_id FROM d) AND (e.consecutive_failures <> 0 \
             OR e.last_succeeded_at IS NULL OR e.last_succeeded_at < now() - interval '1 second') \
           ORDER BY e.id FOR NO KEY UPDATE) \
         UPDATE webhook_endpoints e SET last_succeeded_at = now(), consecutive_failures = 0 \
         FROM stale WHERE e.id = stale.id",
        &ids,
        &tokens,
        &codes,
        &took,
        &excerpts as &[Option<String>],
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// A failed attempt to record.
pub struct Failure<'a> {
    pub status_code: Option<i32>,
    pub error: &'a str,
    pub reply: &'a Reply,
    /// No further attempt whatever the count (a 410).
    pub final_now: bool,
    pub max_attempts: i32,
    /// The wait before the next attempt, if there is one.
    pub retry_after: Duration,
    pub suspend_after: i32,
}

/// What recording a failure led to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailureRecorded {
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The endpoint is suspended now, and was active before this failure.
    pub suspended_now: bool,
    /// The endpoint is suspended (now or already).
    pub suspended: bool,
    /// The endpoint's consecutive failures, this one included.
    pub consecutive_failures: i32,
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub url: String,
}

/// Records a failed attempt (on the delivery, and in its attempts), schedules the retry (or
/// gives up), counts the endpoint's consecutive failures and suspends it at the threshold, in
/// the caller's transaction. The endpoint row is locked first so concurrent recorders cannot
/// deadlock with the cancellation below. None when the claim was lost or the delivery
/// cancelled meanwhile (nothing is written then).
pub async fn record_failure(
    conn: &mut PgConnection,
    id: Uuid,
    endpoint_id: Uuid,
    token: Uuid,
    failure: &Failure<'_>,
) -> Result<Option<FailureRecorded>, sqlx::Error> {
    let Some(was_active) = sqlx::query_scalar!(
        "SELECT status = 'active' AS \"active!\" FROM webhook_endpoints WHERE id = $1 \
         FOR NO KEY UPDATE",
        endpoint_id,
    )
    .fetch_optional(&mut *conn)
    .await?
    else {
        return Ok(None);
    };
    let next = sqlx::query_scalar!(
        "WITH d AS ( \
           UPDATE webhook_deliveries SET attempts = attempts + 1, \
             status = CASE WHEN $3 OR attempts + 1 >= $4 THEN 'failed' ELSE 'pending' END, \
             next_attempt_at = CASE WHEN $3 OR attempts + 1 >= $4 THEN NULL \
               ELSE now() + make_interval(secs => $5::float8 / 1000) END, \
             lease_until = NULL, lease_token = NULL, response_status_code = $6, last_error = $7, \
             last_attempt_at = now(), response_ms = $8, response_excerpt = $9 \
           WHERE id = $1 AND lease_token = $2 AND status = 'pending' \
           RETURNING id, attempts, endpoint_id, next_attempt_at), \
         a AS ( \
           INSERT INTO webhook_attempts (delivery_id, attempt, endpoint_id, attempted_at, \
             status_code, response_ms, error, excerpt) \
           SELECT id, attempts, endpoint_id, now(), $6, $8, $7, $9 FROM d) \
         SELECT next_attempt_at FROM d",
        id,
        token,
        failure.final_now,
        failure.max_attempts,
        failure.retry_after.as_millis() as i64,
        failure.status_code,
        failure.error,
        failure.reply.took_ms,
        failure.reply.excerpt.as_deref(),
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(next_attempt_at) = next else {
        return Ok(None);
    };
    let endpoint = sqlx::query!(
        "UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1, \
           last_failed_at = now(), \
           suspension_reason = CASE WHEN status = 'active' AND consecutive_failures + 1 >= $2 \
             THEN format('%s consecutive failed deliveries; the last: %s', \
               consecutive_failures + 1, $3::text) \
             ELSE suspension_reason END, \
           status = CASE WHEN consecutive_failures + 1 >= $2 THEN 'suspended' ELSE status END \
         WHERE id = $1 \
         RETURNING status = 'suspended' AS \"suspended!\", consecutive_failures, merchant_id, \
           environment AS \"environment: Text<Environment>\", url",
        endpoint_id,
        failure.suspend_after,
        failure.error,
    )
    .fetch_one(&mut *conn)
    .await?;
    if endpoint.suspended {
        cancel_pending(conn, endpoint_id, "the endpoint was suspended").await?;
    }
    Ok(Some(FailureRecorded {
        next_attempt_at: if endpoint.suspended {
            None
        } else {
            next_attempt_at
        },
        suspended_now: endpoint.suspended && was_active,
        suspended: endpoint.suspended,
        consecutive_failures: endpoint.consecutive_failures,
        merchant_id: endpoint.merchant_id,
        environment: endpoint.environment.into(),
        url: endpoint.url,
    }))
}

/// Cancels an endpoint's unfinished deliveries. Rows another worker is recording right now are
/// skipped: their next attempt finds the endpoint inactive and cancels itself.
pub async fn cancel_pending(
    conn: &mut PgConnection,
    endpoint_id: Uuid,
    reason: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL, \
           lease_until = NULL, lease_token = NULL, last_error = coalesce(last_error, $2) \
         WHERE id IN (SELECT id FROM webhook_deliveries \
           WHERE endpoint_id = $1 AND status = 'pending' FOR UPDATE SKIP LOCKED)",
        endpoint_id,
        reason,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Cancels one delivery whose endpoint stopped taking deliveries.
pub async fn cancel(pool: &PgPool, id: Uuid, token: Uuid, reason: &str) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL, \
           lease_until = NULL, lease_token = NULL, last_error = coalesce(last_error, $3) \
         WHERE id = $1 AND lease_token = $2 AND status = 'pending'",
        id,
        token,
        reason,
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Sends a finished delivery (delivered, failed or cancelled) of the owner's endpoint again:
/// due at once, its attempts kept (so a resend that fails again fails at once). False when
/// there is no such finished delivery.
pub async fn resend(
    pool: &PgPool,
    endpoint_id: Uuid,
    delivery_id: Uuid,
    owner: Owner,
) -> Result<bool, sqlx::Error> {
    // A delivered attempt lives only on the delivery's row: kept in its attempts before the
    // resend's attempt takes its place there.
    let resent = sqlx::query_scalar!(
        "WITH kept AS ( \
           INSERT INTO webhook_attempts (delivery_id, attempt, endpoint_id, attempted_at, \
             status_code, response_ms, error, excerpt) \
           SELECT d.id, d.attempts, d.endpoint_id, d.last_attempt_at, d.response_status_code, \
             d.response_ms, NULL, d.response_excerpt \
           FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id \
           WHERE d.id = $1 AND d.endpoint_id = $2 AND e.merchant_id = $3 \
             AND e.environment = $4 AND d.status = 'delivered' \
             AND d.last_attempt_at IS NOT NULL \
           ON CONFLICT DO NOTHING) \
         UPDATE webhook_deliveries d SET status = 'pending', next_attempt_at = now(), \
           lease_until = NULL, lease_token = NULL \
         FROM webhook_endpoints e \
         WHERE d.id = $1 AND d.endpoint_id = $2 AND e.id = d.endpoint_id \
           AND e.merchant_id = $3 AND e.environment = $4 AND d.status <> 'pending' \
         RETURNING d.id",
        delivery_id,
        endpoint_id,
        owner.merchant_id,
        owner.environment.as_str(),
    )
    .fetch_optional(pool)
    .await?;
    Ok(resent.is_some())
}

/// Sends again every delivery of the owner's active endpoint that was owed and not delivered
/// (failed, or cancelled when the endpoint was suspended) whose event occurred at or after
/// `since`: due at once, each once (it is pending until it ends again). Answers how many; None
/// when the endpoint is not active (its deliveries would only be cancelled again).
pub async fn recover_undelivered(
    pool: &PgPool,
    endpoint_id: Uuid,
    owner: Owner,
    since: DateTime<Utc>,
) -> Result<Option<u64>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let active = sqlx::query_scalar!(
        "SELECT status = 'active' AS \"active!\" FROM webhook_endpoints \
         WHERE id = $1 AND merchant_id = $2 AND environment = $3 FOR SHARE",
        endpoint_id,
        owner.merchant_id,
        owner.environment.as_str(),
    )
    .fetch_optional(&mut *tx)
    .await?;
    if active != Some(true) {
        return Ok(None);
    }
    let recovered = sqlx::query!(
        "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), \
           lease_until = NULL, lease_token = NULL \
         WHERE endpoint_id = $1 AND status IN ('failed', 'cancelled') AND occurred_at >= $2",
        endpoint_id,
        since,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Some(recovered.rows_affected()))
}

/// An event recorded for a job of `owner`, oldest first.
#[derive(Clone, Debug)]
pub struct JobEventRow {
    pub id: Uuid,
    pub name: String,
    pub occurred_at: DateTime<Utc>,
}

pub async fn events_of_job(
    pool: &PgPool,
    owner: Owner,
    job_id: Uuid,
) -> Result<Vec<JobEventRow>, sqlx::Error> {
    sqlx::query_as!(
        JobEventRow,
        "SELECT id, name, occurred_at FROM events WHERE job_id = $1 AND merchant_id = $2 \
         AND environment = $3 ORDER BY occurred_at, id",
        job_id,
        owner.merchant_id,
        owner.environment.as_str(),
    )
    .fetch_all(pool)
    .await
}

/// A delivery found by id, with its endpoint.
#[derive(Clone, Debug)]
pub struct DeliveryBrief {
    pub id: Uuid,
    pub event_id: Uuid,
    pub endpoint_id: Uuid,
    pub status: DeliveryStatus,
    pub attempts: i32,
    pub response_status_code: Option<i32>,
}

/// The deliveries among `ids` (by primary key).
pub async fn deliveries_by_id(
    pool: &PgPool,
    ids: &[Uuid],
) -> Result<Vec<DeliveryBrief>, sqlx::Error> {
    sqlx::query_as!(
        DeliveryBrief,
        "SELECT id, event_id, endpoint_id, status AS \"status: Text<DeliveryStatus>\", attempts, \
         response_status_code FROM webhook_deliveries WHERE id = ANY($1)",
        ids,
    )
    .fetch_all(pool)
    .await
}

/// One attempt of a delivery, as its list shows it.
#[derive(Clone, Debug)]
pub struct AttemptRecord {
    pub attempt: i32,
    pub attempted_at: DateTime<Utc>,
    pub status_code: Option<i32>,
    pub response_ms: Option<i32>,
    pub error: Option<String>,
    pub excerpt: Option<String>,
}

/// Every attempt kept of a delivery, newest first: those in its attempts, and its delivered
/// last attempt, which is on its row.
pub async fn attempts_of(
    pool: &PgPool,
    delivery_id: Uuid,
) -> Result<Vec<AttemptRecord>, sqlx::Error> {
    sqlx::query_as!(
        AttemptRecord,
        "SELECT attempt AS \"attempt!\", attempted_at AS \"attempted_at!\", status_code, \
           response_ms, error, excerpt \
         FROM ( \
           SELECT attempt, attempted_at, status_code, response_ms, error, excerpt \
           FROM webhook_attempts WHERE delivery_id = $1 \
           UNION ALL \
           SELECT attempts, last_attempt_at, response_status_code, response_ms, NULL, \
             response_excerpt \
           FROM webhook_deliveries \
           WHERE id = $1 AND status = 'delivered' AND last_attempt_at IS NOT NULL \
         ) tries ORDER BY attempt DESC",
        delivery_id,
    )
    .fetch_all(pool)
    .await
}

/// An endpoint's attempts in one period of its health view, or in all of it (`starts_at`
/// None).
#[derive(Clone, Debug)]
pub struct HealthBucket {
    pub starts_at: Option<DateTime<Utc>>,
    pub succeeded: i64,
    pub failed: i64,
    /// Median and 95th percentile of the time to an answer, in milliseconds.
    pub median_ms: Option<f64>,
    pub p95_ms: Option<f64>,
}

/// The endpoint's attempts since `since`, in periods of `period` from `since`, oldest first
/// (periods without attempts are left out), then the whole span's. Delivered attempts are
/// read from deliveries made within `lookback` before `since` (a delivery's retries end within
/// two hours; a resend of an older delivery is left out of the view).
pub async fn endpoint_health(
    pool: &PgPool,
    endpoint_id: Uuid,
    since: DateTime<Utc>,
    period: Duration,
    lookback: Duration,
) -> Result<Vec<HealthBucket>, sqlx::Error> {
    sqlx::query_as!(
        HealthBucket,
        "WITH tries AS ( \
           SELECT last_attempt_at AS at, response_ms, true AS ok FROM webhook_deliveries \
           WHERE endpoint_id = $1 AND status = 'delivered' \
             AND created_at >= $2::timestamptz - make_interval(secs => $4::float8 / 1000) \
             AND last_attempt_at >= $2::timestamptz \
           UNION ALL \
           SELECT attempted_at, response_ms, coalesce(status_code BETWEEN 200 AND 299, false) \
           FROM webhook_attempts WHERE endpoint_id = $1 AND attempted_at >= $2) \
         SELECT date_bin(make_interval(secs => $3::float8 / 1000), at, $2) AS starts_at, \
           count(*) FILTER (WHERE ok) AS \"succeeded!\", \
           count(*) FILTER (WHERE NOT ok) AS \"failed!\", \
           percentile_cont(0.5) WITHIN GROUP (ORDER BY response_ms) AS median_ms, \
           percentile_cont(0.95) WITHIN GROUP (ORDER BY response_ms) AS p95_ms \
         FROM tries \
         GROUP BY GROUPING SETS ((date_bin(make_interval(secs => $3::float8 / 1000), at, $2)), ()) \
         ORDER BY 1 NULLS LAST",
        endpoint_id,
        since,
        period.as_millis() as f64,
        lookback.as_millis() as f64,
    )
    .fetch_all(pool)
    .await
}
