//! One lifecycle for every background task of the service: the workers that claim due work
//! (charge retries, interrupted bookings, customer texts, scheduled searches, dispatch, the
//! sandbox simulator), the LISTEN hub and those it wakes (price-book activations, credential
//! changes, the webhook fan-out), and the webhook deliveries. Each runs until the service
//! stops; the one stop asks them all and waits until each has finished what it was writing,
//! so none is cut off between a provider call, an attempt or a claim and the write of its
//! outcome.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// What one pass of a worker found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// A full batch: more may be due already, so the next pass runs at once.
    Full,
    /// Less than a batch: the next pass waits for the poll interval.
    Partial,
}

impl Pass {
    /// `Full` when `claimed` reached `batch`.
    pub fn of(claimed: usize, batch: i64) -> Self {
        if i64::try_from(claimed).is_ok_and(|n| n >= batch) {
            Pass::Full
        } else {
            Pass::Partial
        }
    }
}

/// The workers of one process and their common stop.
#[derive(Clone, Default)]
pub struct Workers {
    tracker: TaskTracker,
    stop: CancellationToken,
}

impl Workers {
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `pass` until [`Workers::stop`]: again at once after a full batch, else after
    /// `every`. A failed pass is logged (as `what`) and tried again after `every`.
    pub fn run<F, Fut, E>(&self, what: &'static str, every: Duration, mut pass: F)
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = Result<Pass, E>> + Send,
        E: Display,
    {
        let stop = self.stop.clone();
        self.tracker.spawn(async move {
            while !stop.is_cancelled() {
                match pass().await {
                    Ok(Pass::Full) => continue,
                    Ok(Pass::Partial) => {}
                    Err(error) => tracing::warn!(%error, "{what} failed; trying again"),
                }
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep(every) => {}
                }
            }
        });
    }

    /// Runs `task` with the stop signal; it must return soon after the signal fires, having
    /// finished what it was writing.
    pub fn spawn<F, Fut>(&self, task: F)
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.tracker.spawn(task(self.stop.clone()));
    }

    /// Runs `part`, a piece of work a task hands off (one webhook lane), under the same stop:
    /// the stop waits for it too.
    pub fn spawn_part<Fut>(&self, part: Fut)
    where
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.tracker.spawn(part);
    }

    /// Whether the stop was asked.
    pub fn stopping(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Asks every worker to stop and waits until each has finished its pass in progress.
    pub async fn stop(&self) {
        self.stop.cancel();
        self.tracker.close();
        self.tracker.wait().await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn a_batch_is_full_when_it_reached_its_size() {
        assert_eq!(Pass::of(5, 5), Pass::Full);
        assert_eq!(Pass::of(4, 5), Pass::Partial);
        assert_eq!(Pass::of(0, 5), Pass::Partial);
    }

    #[tokio::test]
    async fn full_passes_follow_at_once_and_the_stop_waits_for_the_pass_in_progress() {
        let workers = Workers::new();
        let passes = Arc::new(AtomicUsize::new(0));
        let finished = Arc::new(AtomicUsize::new(0));
        let (p, f) = (Arc::clone(&passes), Arc::clone(&finished));
        workers.run("test worker", Duration::from_secs(3600), move || {
            let (p, f) = (Arc::clone(&p), Arc::clone(&f));
            async move {
                // Three quick full batches, then a slow pass that finds less.
                let n = p.fetch_add(1, Ordering::SeqCst);
                let slow = n >= 3;
                tokio::time::sleep(Duration::from_millis(if slow { 400 } else { 10 })).await;
                f.fetch_add(1, Ordering::SeqCst);
                Ok::<_, std::convert::Infallible>(if slow { Pass::Partial } else { Pass::Full })
            }
        });
        while passes.load(Ordering::SeqCst) < 4 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Stopped while the fourth pass is in progress: the stop waits for it.
        workers.stop().await;
        assert_eq!(finished.load(Ordering::SeqCst), 4);
        assert_eq!(passes.load(Ordering::SeqCst), 4, "no pass after the stop");
    }

    #[tokio::test]
    async fn the_stop_waits_for_tasks_and_the_parts_they_hand_off() {
        let workers = Workers::new();
        let written = Arc::new(AtomicUsize::new(0));
        let parts = workers.clone();
        let w = Arc::clone(&written);
        workers.spawn(move |stop| async move {
            stop.cancelled().await;
            // Work handed off while stopping is still waited for.
            let w2 = Arc::clone(&w);
            parts.spawn_part(async move {
                tokio::time::sleep(Duration::from_millis(200)).await;
                w2.fetch_add(1, Ordering::SeqCst);
            });
            tokio::time::sleep(Duration::from_millis(100)).await;
            w.fetch_add(1, Ordering::SeqCst);
        });
        assert!(!workers.stopping());
        workers.stop().await;
        assert!(workers.stopping());
        assert_eq!(written.load(Ordering::SeqCst), 2);
    }
}
