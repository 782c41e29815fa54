//! The one way the tests wait for something the service does in its own time.

use std::future::Future;
use std::time::{Duration, Instant};

/// Polls `check` until it returns `Some(value)`, sleeping `every` between tries; panics with
/// `what` and the elapsed time once `within` has passed.
///
/// `check` runs at least once; after a miss it sleeps and tries again only if `within` has not
/// passed yet.
pub async fn eventually<T, F, Fut>(what: &str, within: Duration, every: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        let elapsed = started.elapsed();
        assert!(
            elapsed < within,
            "timed out after {elapsed:?} (limit {within:?}) waiting for {what}"
        );
        tokio::time::sleep(every).await;
    }
}
