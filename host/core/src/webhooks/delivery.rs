//! The delivery workers: claimed deliveries are attempted with bounded concurrency per
//! endpoint (a slow or dead endpoint occupies only its own lane) and a global bound shared
//! first-come first-served across lanes; results, retries and suspensions are recorded.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use courier_domain::backoff::Backoff;
use courier_domain::webhook::EndpointStatus;
use sqlx::PgPool;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::client::{Outcome, Request, WebhookClient};
use super::config::WebhookConfig;
use super::secret::SecretCipher;
use crate::infra::workers::Workers;
use courier_store::webhooks::{self as store, Failure};

/// Requests in flight at once in this process, all endpoints together.
const GLOBAL_CONCURRENCY: usize = 256;
/// Due deliveries claimed per poll.
const CLAIM_BATCH: i64 = 256;

/// A claimed delivery; only the holder of `token` may attempt it.
#[derive(Clone, Copy, Debug)]
pub struct Job {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub token: Uuid,
}

#[derive(Default)]
struct Lane {
    in_flight: usize,
    waiting: VecDeque<Job>,
    /// Jobs were turned away: wake the poller once there is room again.
    overflowed: bool,
}

#[derive(Clone)]
pub struct Dispatcher {
    inner: Arc<Inner>,
}

struct Inner {
    pool: PgPool,
    client: WebhookClient,
    cipher: SecretCipher,
    config: WebhookConfig,
    lanes: Mutex<HashMap<Uuid, Lane>>,
    global: Semaphore,
    /// Wakes the poller of due retries.
    due: Notify,
    /// Lanes run as parts of the workers: the stop waits for their attempts in flight.
    workers: Workers,
}

impl Dispatcher {
    pub fn new(
        pool: PgPool,
        client: WebhookClient,
        cipher: SecretCipher,
        config: WebhookConfig,
        workers: Workers,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                pool,
                client,
                cipher,
                config,
                lanes: Mutex::new(HashMap::new()),
                global: Semaphore::new(GLOBAL_CONCURRENCY),
                due: Notify::new(),
                workers,
            }),
        }
    }

    fn lease_ms(&self) -> i64 {
        self.inner.config.lease().as_millis() as i64
    }

    /// Most jobs a lane queues in memory. Beyond that claims are given back and taken again
    /// by the poller once the lane has drained, so a dead endpoint cannot grow this process's
    /// memory, and nothing waits for a lease to lapse.
    fn backlog_cap(&self) -> usize {
        self.inner.config.endpoint_concurrency * 64
    }

    /// Starts each job in its endpoint's lane or queues it there; gives back the claims of
    /// those a full lane cannot take.
    pub async fn submit_all(&self, token: Uuid, jobs: impl IntoIterator<Item = (Uuid, Uuid)>) {
        let mut refused = Vec::new();
        for (id, endpoint_id) in jobs {
            let job = Job {
                id,
                endpoint_id,
                token,
            };
            if !self.submit(job) {
                refused.push(id);
            }
        }
        if !refused.is_empty()
            && let Err(e) = store::release_claims(&self.inner.pool, &refused, token).await
        {
            // Their leases lapse on their own.
            tracing::warn!(error = %e, "cannot give back webhook deliveries");
        }
    }

    /// Starts `job` in its endpoint's lane or queues it behind the lane's requests; false when
    /// the lane is full.
    fn submit(&self, job: Job) -> bool {
        let cap = self.inner.config.endpoint_concurrency;
        let start = {
            let mut lanes = self.inner.lanes.lock().expect("lanes lock");
            let lane = lanes.entry(job.endpoint_id).or_default();
            if lane.in_flight < cap {
                lane.in_flight += 1;
                true
            } else if lane.waiting.len() < self.backlog_cap() {
                lane.waiting.push_back(job);
                false
            } else {
                lane.overflowed = true;
                return false;
            }
        };
        if start {
            let this = self.clone();
            self.inner.workers.spawn_part(this.run_lane(job));
        }
        true
    }

    /// Endpoints whose lanes are full: the poller leaves their deliveries alone for now.
    fn saturated(&self) -> Vec<Uuid> {
        let lanes = self.inner.lanes.lock().expect("lanes lock");
        lanes
            .iter()
            .filter(|(_, lane)| lane.waiting.len() >= self.backlog_cap())
            .map(|(id, _)| *id)
            .collect()
    }

    async fn run_lane(self, first: Job) {
        let mut job = first;
        loop {
            {
                let _permit = self.inner.global.acquire().await.expect("never closed");
                self.attempt(job).await;
            }
            if self.inner.workers.stopping() {
                self.give_back_lane(job.endpoint_id).await;
                return;
            }
            let next = {
                let mut lanes = self.inner.lanes.lock().expect("lanes lock");
                let Some(lane) = lanes.get_mut(&job.endpoint_id) else {
                    return;
                };
                if lane.overflowed && lane.waiting.len() <= self.backlog_cap() / 2 {
                    lane.overflowed = false;
                    self.inner.due.notify_one();
                }
                match lane.waiting.pop_front() {
                    Some(next) => Some(next),
                    None => {
                        lane.in_flight -= 1;
                        if lane.in_flight == 0 {
                            lanes.remove(&job.endpoint_id);
                        }
                        None
                    }
                }
            };
            match next {
                Some(next) => job = next,
                None => return,
            }
        }
    }

    /// While stopping: the lane's queued deliveries go back, claimed by nobody, so another
    /// instance takes them at once rather than when their leases lapse.
    async fn give_back_lane(&self, endpoint_id: Uuid) {
        let waiting: Vec<Job> = {
            let mut lanes = self.inner.lanes.lock().expect("lanes lock");
            let Some(lane) = lanes.get_mut(&endpoint_id) else {
                return;
            };
            lane.in_flight = lane.in_flight.saturating_sub(1);
            let waiting = lane.waiting.drain(..).collect();
            if lane.in_flight == 0 {
                lanes.remove(&endpoint_id);
            }
            waiting
        };
        // One statement per claim (fan-out round or poll) the queued deliveries came from.
        let mut by_claim: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
        for job in waiting {
            by_claim.entry(job.token).or_default().push(job.id);
        }
        for (token, ids) in by_claim {
            if let Err(e) = store::release_claims(&self.inner.pool, &ids, token).await {
                // Their leases lapse on their own.
                tracing::warn!(error = %e, "cannot give back webhook deliveries");
            }
        }
    }

    /// One attempt. Database errors leave the claim to expire, so the attempt is made again
    /// (with the same `Courier-Delivery`) rather than lost.
    async fn attempt(&self, job: Job) {
        let inner = &self.inner;
        let pool = &inner.pool;
        let row = match store::begin_attempt(pool, job.id, job.token, self.lease_ms()).await {
            Ok(Some(row)) => row,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(delivery = %job.id, error = %e, "cannot start a webhook attempt");
                return;
            }
        };
        if row.endpoint_status != EndpointStatus::Active {
            let reason = "the endpoint was suspended";
            if let Err(e) = store::cancel(pool, job.id, job.token, reason).await {
                tracing::warn!(delivery = %job.id, error = %e, "cannot cancel a delivery");
            }
            return;
        }
        let outcome = match inner.cipher.open(job.endpoint_id, &row.secret_ciphertext) {
            Ok(secret) => {
                let signature =
                    courier_domain::webhook::signature(&secret, Utc::now().timestamp(), &row.body);
                let delivery_id = job.id.to_string();
                inner
                    .client
                    .send(Request {
                        url: &row.url,
                        event: &row.event_name,
                        delivery_id: &delivery_id,
                        signature: &signature,
                        body: row.body,
                    })
                    .await
            }
            Err(e) => {
                tracing::error!(endpoint = %job.endpoint_id, error = %e, "cannot sign a webhook");
                Outcome::Failed {
                    status: None,
                    error: "the service could not sign the request".into(),
                }
            }
        };
        let attempt = u32::try_from(row.attempts).unwrap_or(0) + 1;
        if let Err(e) = self.record(job, attempt, outcome).await {
            tracing::warn!(delivery = %job.id, error = %e, "cannot record a webhook attempt");
        }
    }

    /// Records the outcome of `job`'s `attempt`-th attempt.
    async fn record(&self, job: Job, attempt: u32, outcome: Outcome) -> Result<(), sqlx::Error> {
        let inner = &self.inner;
        match outcome {
            Outcome::Succeeded { status } => {
                store::record_success(&inner.pool, job.id, job.token, status.into()).await
            }
            Outcome::Failed { status, error } => {
                let failure = Failure {
                    status_code: status.map(i32::from),
                    error: &error,
                    final_now: status == Some(410),
                    max_attempts: inner.config.max_attempts,
                    retry_after: Backoff::new(inner.config.retry_base).wait_after(attempt),
                    suspend_after: inner.config.suspend_after,
                };
                let recorded = store::record_failure(
                    &inner.pool,
                    job.id,
                    job.endpoint_id,
                    job.token,
                    &failure,
                )
                .await?;
                if let Some(at) = recorded.and_then(|r| r.next_attempt_at) {
                    self.wake_at(at);
                }
                if recorded.is_some_and(|r| r.suspended) {
                    tracing::warn!(endpoint = %job.endpoint_id, "webhook endpoint suspended");
                }
                Ok(())
            }
        }
    }

    /// Wakes the poller when a retry falls due. The row holds the due time, so a lost timer
    /// (a restart) only defers the retry to the next poll.
    fn wake_at(&self, at: chrono::DateTime<Utc>) {
        let wait = (at - Utc::now()).to_std().unwrap_or_default();
        let this = self.clone();
        self.inner.workers.spawn(move |stop| async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = tokio::time::sleep(wait) => this.inner.due.notify_one(),
            }
        });
    }

    /// Claims due deliveries (retries, and those whose holder's lease ran out) until `stop`.
    pub async fn poll_due(self, stop: CancellationToken) {
        while !stop.is_cancelled() {
            let token = Uuid::new_v4();
            let claimed = async {
                let saturated = self.saturated();
                store::claim_due(
                    &self.inner.pool,
                    CLAIM_BATCH,
                    self.lease_ms(),
                    token,
                    &saturated,
                )
                .await
            };
            match claimed.await {
                Ok(rows) => {
                    let full = rows.len() as i64 == CLAIM_BATCH;
                    self.submit_all(token, rows.into_iter().map(|r| (r.id, r.endpoint_id)))
                        .await;
                    if full {
                        tokio::task::yield_now().await;
                        continue;
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot claim due webhook deliveries"),
            }
            tokio::select! {
                () = stop.cancelled() => {}
                _ = self.inner.due.notified() => {}
                _ = tokio::time::sleep(self.poll_interval()) => {}
            }
        }
    }

    /// The regular poll: `COURIER_WEBHOOK_POLL_MS`, or sooner when retries are configured to be
    /// faster.
    fn poll_interval(&self) -> Duration {
        let config = &self.inner.config;
        config
            .poll
            .min(config.retry_base.max(Duration::from_millis(50)))
    }
}
