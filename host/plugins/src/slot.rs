//! Hot swap: the active version of a plugin, replaceable while calls run.

use std::sync::Arc;

use arc_swap::ArcSwap;

/// Holds the active version of something (a price book with its settings,
/// an adapter...). A call takes the `Arc` once, at its start, and uses that
/// version to the end: replacing the slot never disturbs a call in flight,
/// and the old version is freed when its last call finishes.
pub struct Slot<T> {
    current: ArcSwap<T>,
}

impl<T> Slot<T> {
    pub fn new(value: T) -> Self {
        Slot {
            current: ArcSwap::from_pointee(value),
        }
    }

    /// The active version, for the whole of one call.
    pub fn get(&self) -> Arc<T> {
        self.current.load_full()
    }

    /// Makes `value` the active version; returns the one it replaces.
    pub fn replace(&self, value: T) -> Arc<T> {
        self.current.swap(Arc::new(value))
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Slot<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Slot").field(&self.current.load()).finish()
    }
}
