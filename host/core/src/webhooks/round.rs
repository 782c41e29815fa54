//! A fan-out round: the deliveries made from one batch of events are attempted before they are
//! written, while the round's transaction holds the events. A delivery answered 2xx while the
//! round is open is written once, already delivered; the rest are written claimed, as before,
//! and their outcomes recorded once the round has committed.
//!
//! At least once holds: until the round commits, its events are not fanned out, so a crash or
//! a failed commit fans them out again into the same delivery ids and bodies. No other worker
//! can attempt a delivery meanwhile: its row does not exist yet, and its event is locked.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use courier_store::webhooks::Answered;
use tokio::sync::{Notify, watch};
use uuid::Uuid;

/// What a finished attempt of a round's delivery needs to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// The round took the outcome: it is written with the delivery.
    Taken,
    /// Record it the usual way once the round has committed ([`Round::committed`]).
    RecordAfterCommit,
}

#[derive(Default)]
struct State {
    closed: bool,
    /// Asked to close without waiting for the attempts still running.
    hurried: bool,
    /// Attempts started while the round was open and not finished yet.
    running: usize,
    /// The round's deliveries queued for a send slot, not started yet.
    waiting: usize,
    /// When one of its attempts last started or finished.
    progress_at: Option<Instant>,
    /// 2xx answers taken: the delivery and its answer.
    succeeded: Vec<(Uuid, Answered)>,
}

pub struct Round {
    opened: Instant,
    state: Mutex<State>,
    settled: Notify,
    /// Set once the round takes no more answers (it is writing, or has written).
    closed: watch::Sender<bool>,
    /// None until the round's transaction ended; then whether it committed.
    outcome: watch::Sender<Option<bool>>,
}

impl Default for Round {
    fn default() -> Self {
        Self {
            opened: Instant::now(),
            state: Mutex::default(),
            settled: Notify::new(),
            closed: watch::Sender::new(false),
            outcome: watch::Sender::new(None),
        }
    }
}

impl Round {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("round lock")
    }

    /// `jobs` of the round's deliveries were queued for their send slots.
    pub fn queued(&self, jobs: usize) {
        self.state().waiting += jobs;
    }

    /// A queued delivery of the round will not start (its endpoint's backlog was full).
    pub fn withdrawn(&self) {
        let mut state = self.state();
        state.waiting = state.waiting.saturating_sub(1);
        if state.running == 0 && state.waiting == 0 {
            self.settled.notify_one();
        }
    }

    /// An attempt of the round's delivery starts; true when the round is still open (the
    /// attempt may then use the endpoint as the round read it).
    pub fn started(&self) -> bool {
        let mut state = self.state();
        state.waiting = state.waiting.saturating_sub(1);
        if !state.closed {
            state.running += 1;
            state.progress_at = Some(Instant::now());
        }
        !state.closed
    }

    /// An attempt that [`started`](Self::started) in the open round has finished, 2xx with
    /// `success`'s answer or otherwise.
    pub fn finished(&self, id: Uuid, success: Option<Answered>) -> Report {
        let mut state = self.state();
        state.running = state.running.saturating_sub(1);
        state.progress_at = Some(Instant::now());
        if state.running == 0 && state.waiting == 0 {
            self.settled.notify_one();
        }
        match success {
            Some(answered) if !state.closed => {
                state.succeeded.push((id, answered));
                Report::Taken
            }
            _ => Report::RecordAfterCommit,
        }
    }

    /// Waits until every delivery of the round has been attempted, or none of its attempts
    /// has started or finished for `quiet` (the rest are slow, or wait behind slow ones), or
    /// `most` has passed since the round opened; then closes the round and returns the 2xx
    /// answers it took.
    pub async fn close_when_quiet(&self, quiet: Duration, most: Duration) -> Vec<(Uuid, Answered)> {
        let deadline = self.opened + most;
        loop {
            let settled = self.settled.notified();
            if self.may_close() {
                break;
            }
            let wake = (self.last_progress() + quiet).min(deadline);
            if Instant::now() >= wake {
                break;
            }
            tokio::select! {
                () = settled => {}
                () = tokio::time::sleep_until(wake.into()) => {}
            }
        }
        let mut state = self.state();
        state.closed = true;
        self.closed.send_replace(true);
        std::mem::take(&mut state.succeeded)
    }

    /// Returns once the round has closed, or once none of its attempts has started or
    /// finished for `quiet`: then a round beside it does not wait behind slow answers.
    pub async fn closed_or_quiet(&self, quiet: Duration) {
        let mut closed = self.closed.subscribe();
        loop {
            if *closed.borrow_and_update() {
                return;
            }
            let wake = self.last_progress() + quiet;
            if Instant::now() >= wake {
                return;
            }
            tokio::select! {
                _ = closed.changed() => {}
                () = tokio::time::sleep_until(wake.into()) => {}
            }
        }
    }

    fn last_progress(&self) -> Instant {
        self.state().progress_at.unwrap_or(self.opened)
    }

    fn may_close(&self) -> bool {
        let state = self.state();
        (state.running == 0 && state.waiting == 0) || state.hurried
    }

    /// Closes the round now, whatever is still running: a new round is waiting for its
    /// connection.
    pub fn hurry(&self) {
        self.state().hurried = true;
        self.settled.notify_one();
    }

    /// Whether the round's transaction has ended.
    pub fn has_ended(&self) -> bool {
        self.outcome.borrow().is_some()
    }

    /// The round's transaction ended: `committed` or not (its events are then fanned out again
    /// later, and nothing of the round is recorded).
    pub fn end(&self, committed: bool) {
        self.outcome.send_replace(Some(committed));
    }

    /// Waits for the round's transaction to end; true when it committed.
    pub async fn committed(&self) -> bool {
        let mut outcome = self.outcome.subscribe();
        matches!(
            outcome.wait_for(Option::is_some).await.as_deref(),
            Ok(Some(true))
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use courier_store::webhooks::Reply;

    fn ok(status_code: i32) -> Option<Answered> {
        Some(Answered {
            status_code,
            reply: Reply {
                took_ms: 3,
                excerpt: Some("ok".into()),
            },
        })
    }

    #[tokio::test]
    async fn answers_before_the_close_are_taken_and_later_ones_wait_for_the_commit() {
        let round = Round::default();
        let (early, late) = (Uuid::new_v4(), Uuid::new_v4());
        assert!(round.started());
        assert!(round.started());
        assert_eq!(round.finished(early, ok(200)), Report::Taken);
        let taken = round
            .close_when_quiet(Duration::from_millis(20), Duration::from_secs(30))
            .await;
        assert_eq!(taken, vec![(early, ok(200).unwrap())]);
        assert!(!round.started(), "a closed round lends nothing");
        assert_eq!(round.finished(late, ok(204)), Report::RecordAfterCommit);
        round.end(true);
        assert!(round.committed().await);
    }

    #[tokio::test]
    async fn the_close_comes_as_soon_as_every_started_attempt_has_finished() {
        let round = std::sync::Arc::new(Round::default());
        let id = Uuid::new_v4();
        assert!(round.started());
        let answering = std::sync::Arc::clone(&round);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            answering.finished(id, ok(200));
        });
        let waited = std::time::Instant::now();
        let taken = round
            .close_when_quiet(Duration::from_secs(30), Duration::from_secs(30))
            .await;
        assert_eq!(taken, vec![(id, ok(200).unwrap())]);
        assert!(waited.elapsed() < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn a_round_waits_for_its_queued_deliveries_to_be_attempted() {
        let round = std::sync::Arc::new(Round::default());
        round.queued(3);
        let closing = std::sync::Arc::clone(&round);
        let closed = tokio::spawn(async move {
            closing
                .close_when_quiet(Duration::from_secs(30), Duration::from_secs(30))
                .await
        });
        // Nothing runs yet, but three deliveries wait for their slots: the round stays open.
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!closed.is_finished());
        let (first, second) = (Uuid::new_v4(), Uuid::new_v4());
        assert!(round.started());
        assert_eq!(round.finished(first, ok(200)), Report::Taken);
        round.withdrawn();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!closed.is_finished(), "one delivery still waits");
        assert!(round.started());
        assert_eq!(round.finished(second, ok(204)), Report::Taken);
        let taken = tokio::time::timeout(Duration::from_secs(10), closed)
            .await
            .expect("closed once every delivery was attempted")
            .unwrap();
        assert_eq!(
            taken,
            vec![(first, ok(200).unwrap()), (second, ok(204).unwrap())]
        );
    }

    #[tokio::test]
    async fn a_hurried_round_closes_without_waiting_for_what_still_runs() {
        let round = std::sync::Arc::new(Round::default());
        assert!(round.started());
        let closing = std::sync::Arc::clone(&round);
        let closed = tokio::spawn(async move {
            closing
                .close_when_quiet(Duration::from_secs(30), Duration::from_secs(30))
                .await
        });
        tokio::task::yield_now().await;
        round.hurry();
        let taken = tokio::time::timeout(Duration::from_secs(10), closed)
            .await
            .expect("closed at once")
            .unwrap();
        assert!(taken.is_empty());
        assert!(!round.has_ended());
        round.end(true);
        assert!(round.has_ended());
    }

    #[tokio::test]
    async fn a_round_whose_attempts_stop_answering_closes_and_lets_the_next_open() {
        let round = std::sync::Arc::new(Round::default());
        assert!(round.started());
        assert!(round.started());
        round.finished(Uuid::new_v4(), ok(200));
        // One attempt still runs and nothing more answers: quiet after 10 ms.
        tokio::time::timeout(
            Duration::from_secs(10),
            round.closed_or_quiet(Duration::from_millis(10)),
        )
        .await
        .expect("the next round may open");
        let taken = tokio::time::timeout(
            Duration::from_secs(10),
            round.close_when_quiet(Duration::from_millis(10), Duration::from_secs(30)),
        )
        .await
        .expect("closed once quiet");
        assert_eq!(taken.len(), 1);
    }

    #[tokio::test]
    async fn failures_are_never_taken_and_a_rolled_back_round_says_so() {
        let round = Round::default();
        assert!(round.started());
        assert_eq!(
            round.finished(Uuid::new_v4(), None),
            Report::RecordAfterCommit
        );
        assert!(
            round
                .close_when_quiet(Duration::ZERO, Duration::ZERO)
                .await
                .is_empty()
        );
        round.end(false);
        assert!(!round.committed().await);
    }
}
