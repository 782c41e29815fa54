//! The webhook engine (spec sections 4 "Webhooks" and 6): endpoints, the fan-out of the events
//! outbox into delivery records, and the workers that sign, send, retry and suspend.
//!
//! - `endpoints`: the merchant-facing operations (register, list, rotate, resume, delete).
//! - `fanout`: events → one delivery per subscribed active endpoint, body shaped once.
//! - `delivery`: claimed deliveries attempted in per-endpoint lanes; retries and suspension.
//! - `client`: the outbound HTTP client that only connects to vetted public addresses.
//! - `signer`, `secret`: signatures, encrypted secrets (address rules: `courier_plugins::is_public_address`).

mod client;
mod config;
mod delivery;
mod endpoints;
mod fanout;
mod secret;

use std::sync::Arc;
use std::time::Duration;

use courier_plugins::{PayloadShaper, PluginEngine};
use sqlx::PgPool;
use sqlx::postgres::{PgListener, PgPoolOptions};
use thiserror::Error;
use tokio::task::JoinHandle;

pub use client::ClientError;
pub use config::WebhookConfig;
pub use endpoints::{DeliveryRecord, Endpoint, Endpoints, WebhookError};

use crate::events::{EVENTS_CHANNEL, EventBell};
use crate::secrets::SecretKey;
use delivery::Dispatcher;
use secret::SecretCipher;

/// Database connections of the fan-out, the delivery workers and the events listener, per
/// process.
const ATTEMPT_CONNECTIONS: u32 = 8;

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
    /// Rung by this process's event recorders; wakes the fan-out.
    bell: EventBell,
    endpoints: Endpoints,
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhooks")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The running workers; stopped when dropped.
pub struct Workers {
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Workers {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Webhooks {
    pub fn new(
        pool: PgPool,
        key: &SecretKey,
        config: WebhookConfig,
    ) -> Result<Arc<Self>, WebhookStartError> {
        Ok(Arc::new(Self {
            client: client::WebhookClient::new(&config)?,
            cipher: SecretCipher::new(key),
            endpoints: Endpoints::new(pool.clone(), SecretCipher::new(key), config.allow_private),
            pool,
            config,
            bell: EventBell::default(),
        }))
    }

    /// Registering, listing, rotating, resuming and deleting endpoints.
    pub fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    /// The bell that wakes this process's fan-out; ring it after committing events.
    pub fn bell(&self) -> EventBell {
        self.bell.clone()
    }

    /// Loads the payload shaper and starts the fan-out, its wake-ups and the delivery workers.
    pub async fn start_workers(&self, engine: &PluginEngine) -> Result<Workers, WebhookStartError> {
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
        );
        let lease_ms = self.config.lease().as_millis() as i64;
        let tasks = vec![
            // The listener holds one connection for good: not one of the API's.
            tokio::spawn(listen(workers_pool.clone(), self.bell())),
            tokio::spawn(fan_out(
                workers_pool,
                shaper,
                dispatcher.clone(),
                self.bell(),
                lease_ms,
                self.config.poll,
            )),
            tokio::spawn(dispatcher.poll_due()),
        ];
        Ok(Workers { tasks })
    }
}

/// Connections of the fan-out and the delivery workers (claims, lease renewals, results),
/// committed without waiting for the disk. Only a database crash can lose such a commit, and
/// every loss is redone the same way: the fan-out again into the same delivery ids, an attempt
/// again with the same `Courier-Delivery` (at least once), never dropped.
fn attempts_pool(pool: &PgPool) -> PgPool {
    let options = pool
        .connect_options()
        .as_ref()
        .clone()
        .options([("synchronous_commit", "off")]);
    PgPoolOptions::new()
        .max_connections(ATTEMPT_CONNECTIONS)
        .min_connections(0)
        .connect_lazy_with(options)
}

/// Turns notifications on the events channel (events committed by other processes) into
/// fan-out wake-ups.
async fn listen(pool: PgPool, bell: EventBell) {
    loop {
        let listened = async {
            let mut listener = PgListener::connect_with(&pool).await?;
            listener.listen(EVENTS_CHANNEL).await?;
            // Anything recorded while not listening.
            bell.ring();
            loop {
                // `None` means the connection was re-established and notifications may have
                // been lost: a fan-out round catches up either way.
                listener.try_recv().await?;
                bell.ring();
            }
        };
        let result: Result<(), sqlx::Error> = listened.await;
        if let Err(e) = result {
            tracing::warn!(error = %e, "listening for events failed; retrying");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Fans events out as they are recorded (and every `poll`, for events nothing woke it for).
async fn fan_out(
    pool: PgPool,
    shaper: PayloadShaper,
    dispatcher: Dispatcher,
    bell: EventBell,
    lease_ms: i64,
    poll: Duration,
) {
    loop {
        match fanout::fan_out_batch(&pool, &shaper, lease_ms).await {
            Ok((token, made, more)) => {
                dispatcher
                    .submit_all(token, made.into_iter().map(|m| (m.id, m.endpoint_id)))
                    .await;
                if more {
                    continue;
                }
            }
            Err(e) => tracing::warn!(error = %e, "fanning out events failed; retrying"),
        }
        tokio::select! {
            _ = bell.rung() => {}
            _ = tokio::time::sleep(poll) => {}
        }
    }
}
