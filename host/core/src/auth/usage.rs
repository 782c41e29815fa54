//! `last_used_at` of keys, kept off the request path: requests note the key in memory, and
//! one batched UPDATE every interval writes them (at most once per key per interval).

use std::time::Duration;

use super::credentials::Authenticator;
use crate::infra::workers::Workers;
use courier_store as store;

/// Writes the keys' use every `every` until the workers stop, and what is still noted then.
pub fn flush_usage(authenticator: Authenticator, every: Duration, workers: &Workers) {
    workers.spawn(move |stop| async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(every) => {}
            }
            flush(&authenticator).await;
        }
        flush(&authenticator).await;
    });
}

async fn flush(authenticator: &Authenticator) {
    let used = authenticator.take_used();
    if used.is_empty() {
        return;
    }
    let at = crate::infra::clock::now();
    if let Err(e) = store::merchants::mark_keys_used(authenticator.pool(), &used, at).await {
        // Only the freshness of `last_used_at` suffers; the next use notes the key again.
        tracing::warn!(error = %e, keys = used.len(), "recording key use failed");
    }
}
