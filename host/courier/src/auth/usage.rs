//! `last_used_at` of keys, kept off the request path: requests note the key in memory, and
//! one batched UPDATE every interval writes them (at most once per key per interval).

use std::time::Duration;

use tokio::task::JoinHandle;

use super::credentials::Authenticator;
use crate::store;

pub struct UsageFlusher {
    task: JoinHandle<()>,
    authenticator: Authenticator,
}

impl UsageFlusher {
    pub fn spawn(authenticator: Authenticator, every: Duration) -> Self {
        let flushing = authenticator.clone();
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                flush(&flushing).await;
            }
        });
        Self {
            task,
            authenticator,
        }
    }

    /// Stops flushing, after writing what is still noted.
    pub async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
        flush(&self.authenticator).await;
    }
}

async fn flush(authenticator: &Authenticator) {
    let used = authenticator.take_used();
    if used.is_empty() {
        return;
    }
    let at = crate::clock::now();
    if let Err(e) = store::merchants::mark_keys_used(authenticator.pool(), &used, at).await {
        // Only the freshness of `last_used_at` suffers; the next use notes the key again.
        tracing::warn!(error = %e, keys = used.len(), "recording key use failed");
    }
}
