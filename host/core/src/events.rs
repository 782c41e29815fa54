//! Events: facts about state changes, recorded in the same transaction as the change (the
//! transactional outbox), so an event exists exactly when its change committed. The webhook
//! engine fans them out; the tracking page reads a job's events (names and times) for its
//! timeline.
//!
//! The fan-out is woken after commit, not by a `NOTIFY` inside the recording transaction:
//! Postgres holds one database-wide lock from a notifying transaction's pre-commit until its
//! commit record is on disk, so notifying transactions commit one at a time (bookings were
//! capped at one per disk flush; BENCHMARKS.md). The process that commits rings its own
//! [`EventBell`]; anything else that records events calls [`announce`] after its commit.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use sqlx::{PgExecutor, PgPool, Postgres, Transaction};
use tokio::sync::Notify;

pub use courier_store::events::{insert_many, record};

/// Channel that wakes the fan-out of every process listening (see [`announce`]).
pub const EVENTS_CHANNEL: &str = "courier_events";

/// Wakes this process's webhook fan-out once a transaction that recorded events has
/// committed. Rings close together wake it once; a ring nobody waits for is kept for the next
/// wait. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct EventBell(Arc<Notify>);

impl EventBell {
    /// Call after the commit of a transaction that recorded events.
    pub fn ring(&self) {
        self.0.notify_one();
    }

    /// Resolves at the next ring (at once if one came since the last wait).
    pub async fn rung(&self) {
        self.0.notified().await;
    }
}

/// A transaction that may record events: its commit rings the bell when it did, so no caller
/// rings by hand (and none forgets to). Derefs to the transaction it wraps.
pub struct EventTransaction<'c> {
    tx: Transaction<'c, Postgres>,
    bell: EventBell,
    rings: bool,
}

impl EventTransaction<'static> {
    /// Begins a transaction on `pool`; `rings`: it will record events.
    pub async fn begin(pool: &PgPool, bell: &EventBell, rings: bool) -> Result<Self, sqlx::Error> {
        Ok(Self::wrap(pool.begin().await?, bell, rings))
    }
}

impl<'c> EventTransaction<'c> {
    /// `tx`, begun elsewhere; `rings`: it will record events.
    pub fn wrap(tx: Transaction<'c, Postgres>, bell: &EventBell, rings: bool) -> Self {
        Self {
            tx,
            bell: bell.clone(),
            rings,
        }
    }

    /// Says that the transaction recorded events after all: its commit rings the bell.
    pub fn recorded(&mut self) {
        self.rings = true;
    }

    /// Rolls back; nothing was recorded, nothing rings.
    pub async fn rollback(self) -> Result<(), sqlx::Error> {
        self.tx.rollback().await
    }

    /// Commits, then rings the bell if events were recorded.
    pub async fn commit(self) -> Result<(), sqlx::Error> {
        self.tx.commit().await?;
        if self.rings {
            self.bell.ring();
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
