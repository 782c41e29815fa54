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
mod round;
mod schedule;
mod secret;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use courier_plugins::{PayloadShaper, PluginEngine};
use sqlx::PgPool;
use thiserror::Error;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub use client::ClientError;
pub use config::WebhookConfig;
pub use courier_store::webhooks::Owner;
pub use endpoints::{DeliveryRecord, Endpoint, Endpoints, WebhookError};

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
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhooks")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Webhooks {
    pub fn new(
        pool: PgPool,
        key: &SecretKey,
        config: WebhookConfig,
    ) -> Result<Arc<Self>, WebhookStartError> {
        let cipher = SecretCipher::new(key);
        Ok(Arc::new(Self {
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
        );
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
            tokio::select! {
                () = stop.cancelled() => {}
                _ = self.wakeup.woken() => {}
                _ = tokio::time::sleep(self.poll) => {}
            }
        }
    }
}
