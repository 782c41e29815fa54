//! The delivery workers: claimed deliveries wait in a fair [`Schedule`] (round-robin between
//! merchants, then between each merchant's endpoints, each with a cap) for one of the
//! process's send slots; results, retries and suspensions are recorded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;

use chrono::Utc;
use courier_domain::backoff::Backoff;
use courier_domain::webhook::EndpointStatus;
use sqlx::PgPool;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::batch::Batcher;
use super::client::{Outcome, Request, WebhookClient};
use super::config::WebhookConfig;
use super::round::{Report, Round};
use super::schedule::{Limits, Schedule};
use super::secret::SecretCipher;
use crate::infra::workers::Workers;
use courier_store::webhooks::{self as store, Answered, Failure, Reply, Success, TargetRow};

/// Due deliveries claimed per poll.
const CLAIM_BATCH: i64 = 256;
/// Time left on a claim, after the longest attempt, for recording its outcome.
const RECORD_MARGIN: Duration = Duration::from_secs(2);
/// How often [`Dispatcher::wait_for_room`] looks at the queues again.
const ROOM_CHECK: Duration = Duration::from_millis(2);

/// Tells the rounds of `jobs` that those deliveries will not start here.
fn withdraw_from_rounds(jobs: &[Job]) {
    for first in jobs.iter().filter_map(|job| job.first.as_ref()) {
        first.round.withdrawn();
    }
}

/// A claimed delivery; only the holder of `token` may attempt it.
#[derive(Clone)]
pub struct Job {
    pub id: Uuid,
    pub endpoint_id: Uuid,
    pub merchant_id: Uuid,
    pub token: Uuid,
    /// When the claim was taken, and what it read of the delivery.
    pub claimed: Claimed,
    /// Made by a fan-out round not written yet: sent first, written after.
    pub first: Option<First>,
}

/// A delivery of a fan-out round ([`Round`]), with its endpoint as the round read it.
#[derive(Clone)]
pub struct First {
    pub round: Arc<Round>,
    pub target: Arc<TargetRow>,
}

/// What a claim read of its delivery, when.
#[derive(Clone, Debug)]
pub struct Claimed {
    pub at: Instant,
    pub content: Arc<Content>,
}

/// What an attempt sends, the same on every attempt.
#[derive(Debug)]
pub struct Content {
    pub event_name: String,
    pub body: Bytes,
    /// Attempts made before the claim.
    pub attempts: i32,
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
    schedule: Mutex<Schedule<Job>>,
    /// The endpoints of attempts about to start, read together.
    targets: Batcher<Uuid, Option<TargetRow>>,
    /// 2xx answers, recorded together.
    successes: Batcher<Success, ()>,
    /// Wakes the poller of due retries.
    due: Notify,
    /// Attempts run as parts of the workers: the stop waits for those in flight.
    workers: Workers,
    /// Mail owed when an endpoint keeps failing.
    notices: super::notices::FailureNotices,
}

impl Dispatcher {
    pub fn new(
        pool: PgPool,
        client: WebhookClient,
        cipher: SecretCipher,
        config: WebhookConfig,
        workers: Workers,
    ) -> Self {
        // Most deliveries an endpoint queues in memory. Beyond that claims are given back and
        // taken again by the poller once the endpoint has drained, so a dead endpoint cannot
        // grow this process's memory, and nothing waits for a lease to lapse.
        let limits = Limits {
            total: config.concurrency,
            per_merchant: config.merchant_concurrency,
            per_endpoint: config.endpoint_concurrency,
            backlog_per_endpoint: config.endpoint_concurrency * 64,
        };
        let targets = {
            let pool = pool.clone();
            Batcher::start(move |ids: Vec<Uuid>| read_targets(pool.clone(), ids))
        };
        let successes = {
            let pool = pool.clone();
            Batcher::start(move |done: Vec<Success>| record_successes(pool.clone(), done))
        };
        Self {
            inner: Arc::new(Inner {
                pool,
                client,
                cipher,
                config,
                schedule: Mutex::new(Schedule::new(limits)),
                targets,
                successes,
                due: Notify::new(),
                workers,
                notices: super::notices::FailureNotices::default(),
            }),
        }
    }

    /// Owes mail, as `notices` say, when an endpoint keeps failing. Before the dispatcher is
    /// shared.
    pub fn with_notices(mut self, notices: super::notices::FailureNotices) -> Self {
        Arc::get_mut(&mut self.inner)
            .expect("the dispatcher is not shared yet")
            .notices = notices;
        self
    }

    fn lease_ms(&self) -> i64 {
        self.inner.config.lease().as_millis() as i64
    }

    fn schedule(&self) -> std::sync::MutexGuard<'_, Schedule<Job>> {
        self.inner.schedule.lock().expect("schedule lock")
    }

    /// Queues each job for a send slot and starts what may start; gives back the claims of
    /// those a full endpoint backlog cannot take.
    pub async fn submit_all(&self, jobs: impl IntoIterator<Item = Job>) {
        let refused: Vec<Job> = {
            let mut schedule = self.schedule();
            jobs.into_iter()
                .filter_map(|job| schedule.offer(job.merchant_id, job.endpoint_id, job).err())
                .collect()
        };
        withdraw_from_rounds(&refused);
        self.start_what_may_start();
        if refused.iter().any(|job| job.first.is_some()) {
            // A round's claims exist once it has committed, after this returns.
            let this = self.clone();
            self.inner
                .workers
                .spawn_part(async move { this.give_back(refused).await });
        } else {
            self.give_back(refused).await;
        }
    }

    /// Starts queued deliveries while send slots are free.
    fn start_what_may_start(&self) {
        loop {
            let (next, wake) = {
                let mut schedule = self.schedule();
                (schedule.next(), schedule.take_wake())
            };
            if wake {
                self.inner.due.notify_one();
            }
            let Some((_, job)) = next else { return };
            // Counted by its round now, before the round can close.
            let in_round = job
                .first
                .as_ref()
                .is_some_and(|first| first.round.started());
            let this = self.clone();
            self.inner.workers.spawn_part(this.run(job, in_round));
        }
    }

    async fn run(self, job: Job, in_round: bool) {
        let endpoint_id = job.endpoint_id;
        self.attempt(job, in_round).await;
        self.schedule().finish(endpoint_id);
        if self.inner.workers.stopping() {
            // Queued deliveries go back, claimed by nobody, so another instance takes them at
            // once rather than when their leases lapse.
            let queued = self.schedule().drain();
            withdraw_from_rounds(&queued);
            self.give_back(queued).await;
            return;
        }
        self.start_what_may_start();
    }

    /// Returns once the deliveries queued for endpoints that are being worked through (see
    /// [`Schedule::queued_for_moving`]) fit in the send slots, or at `stop`: the fan-out
    /// takes more events only then, so a backlog's deliveries are attempted in the round
    /// that makes them, and written once.
    pub async fn wait_for_room(&self, moving_within: Duration, stop: &CancellationToken) {
        let room = self.inner.config.concurrency;
        loop {
            let since = Instant::now()
                .checked_sub(moving_within)
                .unwrap_or_else(Instant::now);
            if self.schedule().queued_for_moving(since) <= room || stop.is_cancelled() {
                return;
            }
            tokio::time::sleep(ROOM_CHECK).await;
        }
    }

    /// Releases the claims on `jobs`: one statement per claim (fan-out round or poll) they
    /// came from.
    async fn give_back(&self, jobs: Vec<Job>) {
        let mut by_claim: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
        for job in jobs {
            if let Some(first) = &job.first
                && !first.round.committed().await
            {
                // Not written: its events are fanned out again.
                continue;
            }
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
    /// (with the same `Courier-Delivery`) rather than lost. `in_round`: the job's round is
    /// open and counts it; the round may take its 2xx answer.
    async fn attempt(&self, job: Job, in_round: bool) {
        let inner = &self.inner;
        let prepared = match &job.first {
            Some(first) if in_round => Some((
                Arc::clone(&job.claimed.content),
                TargetRow::clone(&first.target),
            )),
            Some(first) => {
                // Its row exists once the round has committed.
                if !first.round.committed().await {
                    return;
                }
                self.prepare(&job).await
            }
            None => self.prepare(&job).await,
        };
        let Some((content, target)) = prepared else {
            return;
        };
        if target.status != EndpointStatus::Active {
            let reason = "the endpoint was suspended";
            if let Err(e) = store::cancel(&inner.pool, job.id, job.token, reason).await {
                tracing::warn!(delivery = %job.id, error = %e, "cannot cancel a delivery");
            }
            return;
        }
        let (outcome, reply) = match self.secrets_of(&target) {
            Ok(secrets) => {
                let signature = courier_domain::webhook::signature_with(
                    &secrets,
                    Utc::now().timestamp(),
                    &content.body,
                );
                let delivery_id = job.id.to_string();
                inner
                    .client
                    .send(Request {
                        url: &target.url,
                        event: &content.event_name,
                        delivery_id: &delivery_id,
                        signature: &signature,
                        body: content.body.clone(),
                    })
                    .await
            }
            Err(e) => {
                tracing::error!(endpoint = %job.endpoint_id, error = %e, "cannot sign a webhook");
                let failed = Outcome::Failed {
                    status: None,
                    error: "the service could not sign the request".into(),
                };
                (failed, Reply::default())
            }
        };
        if let (Some(first), true) = (&job.first, in_round) {
            let success = match &outcome {
                Outcome::Succeeded { status } => Some(Answered {
                    status_code: i32::from(*status),
                    reply: reply.clone(),
                }),
                Outcome::Failed { .. } => None,
            };
            if first.round.finished(job.id, success) == Report::Taken
                || !first.round.committed().await
            {
                return;
            }
        }
        let attempt = u32::try_from(content.attempts).unwrap_or(0) + 1;
        if let Err(e) = self.record(&job, attempt, outcome, reply).await {
            tracing::warn!(delivery = %job.id, error = %e, "cannot record a webhook attempt");
        }
    }

    /// The secrets that sign an attempt to `target`: its current one, then the rotated-away
    /// one while its overlap lasts (an undecryptable previous secret is left out).
    fn secrets_of(
        &self,
        target: &TargetRow,
    ) -> Result<Vec<String>, super::secret::UndecryptableSecret> {
        let cipher = &self.inner.cipher;
        let mut secrets = vec![cipher.open(target.id, &target.secret_ciphertext)?];
        if let Some(previous) = &target.previous_secret_ciphertext {
            match cipher.open(target.id, previous) {
                Ok(secret) => secrets.push(secret),
                Err(e) => tracing::warn!(endpoint = %target.id, error = %e,
                    "the previous signing secret cannot be decrypted; signing with the current one"),
            }
        }
        Ok(secrets)
    }

    /// What the attempt sends and where, read as it starts. A claim young enough to outlast
    /// the attempt and its record needs only the endpoint's current URL, secret and status
    /// (read with other attempts', no write); an older one is renewed first, and read back.
    async fn prepare(&self, job: &Job) -> Option<(Arc<Content>, TargetRow)> {
        let config = &self.inner.config;
        let needed = config.timeout + RECORD_MARGIN;
        if job.claimed.at.elapsed() + needed <= config.lease() {
            let target = self.inner.targets.run(job.endpoint_id).await?;
            // None: the endpoint was deleted, and its deliveries with it.
            return Some((Arc::clone(&job.claimed.content), target?));
        }
        match store::begin_attempt(&self.inner.pool, job.id, job.token, self.lease_ms()).await {
            Ok(Some(row)) => Some((
                Arc::new(Content {
                    event_name: row.event_name,
                    body: row.body.into(),
                    attempts: row.attempts,
                }),
                TargetRow {
                    id: job.endpoint_id,
                    url: row.url,
                    secret_ciphertext: row.secret_ciphertext,
                    previous_secret_ciphertext: row.previous_secret_ciphertext,
                    status: row.endpoint_status,
                },
            )),
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(delivery = %job.id, error = %e, "cannot start a webhook attempt");
                None
            }
        }
    }

    /// Records the outcome of `job`'s `attempt`-th attempt.
    async fn record(
        &self,
        job: &Job,
        attempt: u32,
        outcome: Outcome,
        reply: Reply,
    ) -> Result<(), sqlx::Error> {
        let inner = &self.inner;
        match outcome {
            Outcome::Succeeded { status } => {
                let success = Success {
                    id: job.id,
                    token: job.token,
                    status_code: status.into(),
                    reply,
                };
                // None was logged by the batch: the lease lapses and the delivery is sent again.
                let _ = inner.successes.run(success).await;
                Ok(())
            }
            Outcome::Failed { status, error } => {
                let failure = Failure {
                    status_code: status.map(i32::from),
                    error: &error,
                    reply: &reply,
                    final_now: status == Some(410),
                    max_attempts: inner.config.max_attempts,
                    retry_after: Backoff::new(inner.config.retry_base).wait_after(attempt),
                    suspend_after: inner.config.suspend_after,
                };
                let mut tx = inner.pool.begin().await?;
                let recorded =
                    store::record_failure(&mut tx, job.id, job.endpoint_id, job.token, &failure)
                        .await?;
                let Some(recorded) = recorded else {
                    // The claim was lost or the delivery cancelled meanwhile: nothing to count.
                    return Ok(());
                };
                inner
                    .notices
                    .owed(&mut tx, job.endpoint_id, &recorded, &error)
                    .await?;
                tx.commit().await?;
                if let Some(at) = recorded.next_attempt_at {
                    self.wake_at(at);
                }
                if recorded.suspended_now {
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
            let saturated = self.schedule().saturated();
            let claimed = store::claim_due(
                &self.inner.pool,
                CLAIM_BATCH,
                self.lease_ms(),
                token,
                &saturated,
            );
            match claimed.await {
                Ok(rows) => {
                    let full = rows.len() as i64 == CLAIM_BATCH;
                    let at = Instant::now();
                    self.submit_all(rows.into_iter().map(|r| Job {
                        id: r.id,
                        endpoint_id: r.endpoint_id,
                        merchant_id: r.merchant_id,
                        token,
                        claimed: Claimed {
                            at,
                            content: Arc::new(Content {
                                event_name: r.event_name,
                                body: r.body.into(),
                                attempts: r.attempts,
                            }),
                        },
                        first: None,
                    }))
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

/// The endpoints of `ids` (in order; None for one that no longer exists), or None when the
/// read failed.
async fn read_targets(pool: PgPool, ids: Vec<Uuid>) -> Option<Vec<Option<TargetRow>>> {
    let mut distinct = ids.clone();
    distinct.sort_unstable();
    distinct.dedup();
    match store::attempt_targets(&pool, &distinct).await {
        Ok(rows) => {
            let by_id: HashMap<Uuid, TargetRow> = rows.into_iter().map(|r| (r.id, r)).collect();
            Some(ids.iter().map(|id| by_id.get(id).cloned()).collect())
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read webhook endpoints for attempts");
            None
        }
    }
}

/// Records a batch of 2xx answers, or None when that failed (their leases then lapse and they
/// are sent again, with the same `Courier-Delivery`).
async fn record_successes(pool: PgPool, done: Vec<Success>) -> Option<Vec<()>> {
    match store::record_successes(&pool, &done).await {
        Ok(()) => Some(vec![(); done.len()]),
        Err(e) => {
            tracing::warn!(error = %e, count = done.len(), "cannot record webhook successes");
            None
        }
    }
}
