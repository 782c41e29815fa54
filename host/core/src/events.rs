//! Events: facts about state changes, recorded in the same transaction as the change (the
//! transactional outbox), so an event exists exactly when its change committed. The webhook
//! engine fans them out; the tracking page reads a job's events (names and times) for its
//! timeline.
//!
//! The fan-out is woken after commit, not by a `NOTIFY` inside the recording transaction:
//! Postgres holds one database-wide lock from a notifying transaction's pre-commit until its
//! commit record is on disk, so notifying transactions commit one at a time (bookings were
//! capped at one per disk flush; BENCHMARKS.md). The process that commits wakes its own
//! fan-out ([`FanOutWakeup`]); anything else that records events calls [`announce`] after its
//! commit.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use sqlx::{PgExecutor, PgPool, Postgres, Transaction};
use tokio::sync::Notify;

pub use courier_store::events::{RECORDED, insert_many, insert_many_telling, record};

/// Channel that wakes the fan-out of every process listening (see [`announce`]).
pub const EVENTS_CHANNEL: &str = "courier_events";

/// Wakes this process's webhook fan-out once a transaction that recorded events has
/// committed. Wakeups close together wake it once; a wakeup nobody waits for is kept for the
/// next wait. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct FanOutWakeup(Arc<Notify>);

impl FanOutWakeup {
    /// Call after the commit of a transaction that recorded events.
    pub fn wake(&self) {
        self.0.notify_one();
    }

    /// Resolves at the next wakeup (at once if one came since the last wait).
    pub async fn woken(&self) {
        self.0.notified().await;
    }
}

/// A transaction that may record events: once it says it did ([`recorded`](Self::recorded)),
/// its commit wakes the fan-out, so no caller wakes it by hand (and none forgets to). Derefs to
/// the transaction it wraps.
pub struct EventTransaction<'c> {
    tx: Transaction<'c, Postgres>,
    wakeup: FanOutWakeup,
    recorded_events: bool,
}

impl EventTransaction<'static> {
    /// Begins a transaction on `pool` that has recorded no events yet.
    pub async fn begin(pool: &PgPool, wakeup: &FanOutWakeup) -> Result<Self, sqlx::Error> {
        Ok(Self::wrap(pool.begin().await?, wakeup))
    }
}

impl<'c> EventTransaction<'c> {
    /// `tx`, begun elsewhere, that has recorded no events yet.
    pub fn wrap(tx: Transaction<'c, Postgres>, wakeup: &FanOutWakeup) -> Self {
        Self {
            tx,
            wakeup: wakeup.clone(),
            recorded_events: false,
        }
    }

    /// Says that the transaction recorded events: its commit wakes the fan-out.
    pub fn recorded(&mut self) {
        self.recorded_events = true;
    }

    /// Rolls back; nothing was recorded, nothing is woken.
    pub async fn rollback(self) -> Result<(), sqlx::Error> {
        self.tx.rollback().await
    }

    /// Commits, then wakes the fan-out if events were recorded.
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        self.tx.commit().await?;
        if self.recorded_events {
            self.wakeup.wake();
        }
        Ok(())
    }
}

impl<'c> Deref for EventTransaction<'c> {
    type Target = Transaction<'c, Postgres>;

    fn deref(&self) -> &Self::Target {
        &self.tx
    }
}

impl DerefMut for EventTransaction<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.tx
    }
}

/// Tells the fan-out of every process that events were committed: for recorders outside the
/// service's processes. Must run after the recording transaction commits (a notification
/// sent on its own costs no disk flush and does not hold other commits back).
pub async fn announce(executor: impl PgExecutor<'_>) -> Result<(), sqlx::Error> {
    courier_store::notify(executor, EVENTS_CHANNEL, "").await
}
