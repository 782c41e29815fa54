//! The webhook engine (spec sections 4 "Webhooks" and 6): endpoints, the fan-out of the events
//! outbox into delivery records, and the workers that sign, send, retry and suspend.
//!
//! - `endpoints`: the merchant-facing operations (register, list, rotate, resume, delete).
//! - `fanout`: events → one delivery per subscribed active endpoint, body shaped once.
//! - `schedule`: which claimed delivery takes the next send slot (fair between merchants, then
//!   between endpoints).
//! - `delivery`: the attempts, their results, retries and suspension.
//! - `client`: the outbound HTTP client that only connects to vetted public addresses.
//! - `signer`, `secret`: signatures, encrypted secrets (address rules: `courier_plugins::is_public_address`).

mod batch;
mod client;
mod config;
mod delivery;
mod endpoints;
mod fanout;
mod notices;
mod round;
mod schedule;
mod secret;
mod test_event;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use courier_plugins::{PayloadShaper, PluginEngine};
use sqlx::pool::PoolConnection;
use sqlx::{PgPool, Postgres};
use thiserror::Error;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub use client::ClientError;
pub use config::WebhookConfig;
use courier_store::webhooks as store;
pub use courier_store::webhooks::{AttemptRecord, DeliveryDetail, HealthBucket, LogSearch, Owner};
pub use endpoints::{
    DeliveryRecord, Endpoint, Endpoints, FailureWarning, HEALTH_HOURS, Health, JobEvent,
    JobEventDelivery, MAX_OVERLAP, Recovery, TestEvent, WebhookError,
};
pub use notices::FailureNotices;

use crate::events::FanOutWakeup;
use crate::infra::secrets::SecretKey;
use delivery::Dispatcher;
use secret::SecretCipher;

/// Database connections of the fan-out, the delivery workers and the events listener, per
/// process.
const ATTEMPT_CONNECTIONS: u32 = 8;
/// Fan-out rounds open at once, each holding a connection while its first attempts are made;
/// the other connections stay free for claims and records.
const ROUNDS_AT_ONCE: usize = 3;
/// How long a round may go without an answer before the next opens beside it. Rounds whose
/// answers keep coming follow one another (the next opens as the last starts writing), each
/// taking the events recorded meanwhile in one batch; slow answers make them overlap, so
/// they do not hold up the events behind them.
const ROUNDS_OVERLAP_AFTER: Duration = Duration::from_millis(15);

#[derive(Debug, Error)]
pub enum WebhookStartError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("loading the payload shaper: {0}")]
    Shaper(#[from] courier_plugins::PluginError),
}

/// The webhook engine of one process.
pub struct Webhooks {
    pool: PgPool,
    cipher: SecretCipher,
    config: WebhookConfig,
    client: client::WebhookClient,
    /// Woken by this process's event recorders; wakes the fan-out.
    wakeup: FanOutWakeup,
    endpoints: Endpoints,
    /// Mail owed when an endpoint keeps failing.
    notices: FailureNotices,
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhooks")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Webhooks {
    /// `mail`: the outbox and the service's public URL, for mail to a merchant's developers
    /// when an endpoint keeps failing.
    pub fn new(
        pool: PgPool,
        key: &SecretKey,
        config: WebhookConfig,
        (outbox, public_url): (crate::mail::Outbox, String),
    ) -> Result<Arc<Self>, WebhookStartError> {
        let cipher = SecretCipher::new(key);
        Ok(Arc::new(Self {
            notices: FailureNotices::new(
                outbox,
                public_url,
                config.warn_after,
                config.suspend_after,
            ),
            client: client::WebhookClient::new(&config)?,
            endpoints: Endpoints::new(pool.clone(), cipher.clone(), &config),
            cipher,
            pool,
            config,
            wakeup: FanOutWakeup::default(),
        }))
    }

    /// Registering, listing, rotating, resuming and deleting endpoints.
    pub fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    /// What wakes this process's fan-out; wake it after committing events.
    pub fn wakeup(&self) -> FanOutWakeup {
        self.wakeup.clone()
    }

    /// Loads the payload shaper and starts, under `workers`, the fan-out and the delivery
    /// workers, unless delivery is off in this process. The fan-out's first round catches up on events recorded before; later ones are
    /// woken by the [`wakeup`](Self::wakeup), which other processes' notices wake too (the caller
    /// has the LISTEN hub wake it).
    pub async fn start_workers(
        &self,
        engine: &PluginEngine,
        workers: &crate::infra::workers::Workers,
    ) -> Result<(), WebhookStartError> {
        if !self.config.delivery {
            tracing::info!("webhook delivery is off in this process (COURIER_WEBHOOK_DELIVERY)");
            return Ok(());
        }
        let engine = engine.clone();
        let shaper = tokio::task::spawn_blocking(move || {
            PayloadShaper::load(&engine, courier_plugins::defaults::STANDARD_SHAPER)
        })
        .await
        .expect("loading the shaper does not panic")?;
        let workers_pool = attempts_pool(&self.pool);
        let dispatcher = Dispatcher::new(
            workers_pool.clone(),
            self.client.clone(),
            self.cipher.clone(),
            self.config.clone(),
            workers.clone(),
        )
        .with_notices(self.notices.clone());
        let lease_ms = self.config.lease().as_millis() as i64;
        let fan_out = FanOut {
            pool: workers_pool,
            shaper,
            dispatcher: dispatcher.clone(),
            workers: workers.clone(),
            wakeup: self.wakeup(),
            lease_ms,
            poll: self.config.poll,
        };
        workers.spawn(move |stop| fan_out.run(stop));
        workers.spawn(move |stop| dispatcher.poll_due(stop));
        Ok(())
    }
}

/// Connections of the fan-out and the delivery workers (claims, lease renewals, results),
/// committed without waiting for the disk. Only a database crash can lose such a commit, and
/// every loss is redone the same way: the fan-out again into the same delivery ids, an attempt
/// again with the same `Courier-Delivery` (at least once), never dropped.
///
/// Their statements are planned with each execution, for the values it has, though they stay
/// prepared: the outbox grows from nothing in bursts, and a plan kept from when it was small
/// reads the whole table once it has grown (BENCHMARKS.md).
///
/// And they read the outboxes' queues (events awaiting fan-out, deliveries due) through their
/// indexes in order, never as bitmaps: an index scan marks the entries of rows already taken
/// as dead as it passes them, so the next claim skips them, while a bitmap scan visits every
/// one of them again on each claim until vacuum removes them.
fn attempts_pool(pool: &PgPool) -> PgPool {
    let options = crate::infra::db::options_with(
        pool,
        &[
            ("synchronous_commit", "off"),
            ("plan_cache_mode", "force_custom_plan"),
            ("enable_bitmapscan", "off"),
        ],
    );
    crate::infra::db::pool_options(ATTEMPT_CONNECTIONS)
        // Lanes wait their turn for a connection rather than fail a pass.
        .acquire_timeout(std::time::Duration::from_secs(30))
        .min_connections(0)
        .connect_lazy_with(options)
}

/// The fan-out worker of one process.
struct FanOut {
    pool: PgPool,
    shaper: PayloadShaper,
    dispatcher: Dispatcher,
    workers: crate::infra::workers::Workers,
    wakeup: FanOutWakeup,
    lease_ms: i64,
    poll: Duration,
}

impl FanOut {
    /// Fans events out as they are recorded (and every `poll`, for events nothing woke it
    /// for): each batch a round whose deliveries are attempted at once, and written when their
    /// first answers are in.
    async fn run(self, stop: CancellationToken) {
        let rounds = Arc::new(Semaphore::new(ROUNDS_AT_ONCE));
        // Rounds under way, oldest first.
        let mut open: VecDeque<Arc<round::Round>> = VecDeque::new();
        let mut passing_over = PassingOver::default();
        let mut kept: Option<PoolConnection<Postgres>> = None;
        while !stop.is_cancelled() {
            open.retain(|round| !round.has_ended());
            let slot = match Arc::clone(&rounds).try_acquire_owned() {
                Ok(slot) => slot,
                Err(_) => {
                    // Every round is waiting on slow answers: the oldest writes what it has
                    // rather than hold up the events behind it.
                    if let Some(oldest) = open.front() {
                        oldest.hurry();
                    }
                    let Ok(slot) = Arc::clone(&rounds).acquire_owned().await else {
                        return;
                    };
                    slot
                }
            };
            // A backlog's next events wait until the send slots near the end of the queue
            // the rounds before made: taken earlier, their deliveries would queue behind, and
            // be written before they are attempted.
            self.dispatcher
                .wait_for_room(ROUNDS_OVERLAP_AFTER, &stop)
                .await;
            if passing_over.due() {
                match self.pass_over(&mut kept).await {
                    Ok((passed, more)) => {
                        passing_over.found(passed > 0 || !more);
                        if !more {
                            self.wait(&stop).await;
                            continue;
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "passing over events failed; retrying"),
                }
            }
            match fanout::open_round(&self.pool, &self.shaper).await {
                Ok(Some((round, jobs))) => {
                    let (full, ended) = (round.full, round.round());
                    open.push_back(Arc::clone(&ended));
                    self.dispatcher.submit_all(jobs).await;
                    let lease_ms = self.lease_ms;
                    self.workers.spawn_part(async move {
                        round.close(lease_ms).await;
                        drop(slot);
                    });
                    ended.closed_or_quiet(ROUNDS_OVERLAP_AFTER).await;
                    if full {
                        continue;
                    }
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "fanning out events failed; retrying"),
            }
            self.wait(&stop).await;
        }
    }

    /// Until stopped, woken, or the poll's time.
    async fn wait(&self, stop: &CancellationToken) {
        tokio::select! {
            () = stop.cancelled() => {}
            _ = self.wakeup.woken() => {}
            _ = tokio::time::sleep(self.poll) => {}
        }
    }

    /// Marks fanned out the oldest events no endpoint can take, on a connection the worker
    /// keeps (given back, sqlx would ping it: a round trip per pass). Says how many, and
    /// whether other events wait for a round.
    async fn pass_over(
        &self,
        kept: &mut Option<PoolConnection<Postgres>>,
    ) -> Result<(i64, bool), sqlx::Error> {
        let mut conn = match kept.take() {
            Some(conn) => conn,
            None => self.pool.acquire().await?,
        };
        let passed = store::pass_over_unsubscribed(&mut conn, fanout::BATCH).await?;
        *kept = Some(conn);
        Ok(passed)
    }
}

/// Whether to pass over the events no endpoint can take before a round: a round then
/// carries only events with somewhere to go, and events of merchants without endpoints
/// cost one statement with its commit instead of a round's transaction. A pass that left
/// every waiting event to a round costs a round trip for nothing, so after one the next
/// rounds go without, and a pass is tried again every [`PASS_OVER_AGAIN`] rounds.
#[derive(Default)]
struct PassingOver {
    rounds_without: u32,
}

/// Rounds without a pass after a pass that left every waiting event to a round.
const PASS_OVER_AGAIN: u32 = 8;

impl PassingOver {
    fn due(&mut self) -> bool {
        if self.rounds_without == 0 {
            return true;
        }
        self.rounds_without -= 1;
        false
    }

    /// `useful`: the pass marked events, or left none waiting.
    fn found(&mut self, useful: bool) {
        if !useful {
            self.rounds_without = PASS_OVER_AGAIN;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_that_left_every_event_to_a_round_is_skipped_for_the_next_rounds() {
        let mut passing = PassingOver::default();
        assert!(passing.due());
        // Useful: it marked some, or nothing was waiting at all.
        passing.found(true);
        assert!(passing.due());
        passing.found(false);
        let skipped = (0..PASS_OVER_AGAIN).filter(|_| !passing.due()).count();
        assert_eq!(skipped as u32, PASS_OVER_AGAIN);
        assert!(passing.due(), "tried again after {PASS_OVER_AGAIN} rounds");
    }
}
