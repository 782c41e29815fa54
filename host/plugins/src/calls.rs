//! The calls each component answered lately, kept in this process's memory for operators:
//! when, which export, how long against the deadline, the memory its instance reached against
//! the cap, how it ended, and the lines an adapter logged. Bounded: the newest
//! [`KEPT_PER_COMPONENT`] calls of at most [`COMPONENTS_KEPT`] components (the one called
//! least lately is forgotten first).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use crate::outbound::GuestLine;

/// Calls kept per component.
pub const KEPT_PER_COMPONENT: usize = 50;
/// Components whose calls are kept.
pub const COMPONENTS_KEPT: usize = 64;

/// One call, as it ended.
#[derive(Clone, Debug, PartialEq)]
pub struct CallRecord {
    pub at: SystemTime,
    /// The export called (`price`, `shape`, `authorise`…).
    pub operation: &'static str,
    /// Wall time, instantiation included.
    pub took: Duration,
    /// The call's deadline: CPU time for computations, wall time for adapters.
    pub deadline: Duration,
    /// The most linear memory the instance had.
    pub memory_bytes: usize,
    pub memory_limit: usize,
    /// The guest's work: wasmtime fuel, about one unit per WebAssembly instruction. Not a
    /// limit: the deadline is.
    pub fuel: u64,
    /// `None` when the component answered; else why the call failed.
    pub failure: Option<String>,
    /// What an adapter logged (the `log` import).
    pub lines: Vec<GuestLine>,
}

/// A call under way: what to record when it ends.
pub(crate) struct CallStart {
    at: SystemTime,
    started: Instant,
}

impl CallStart {
    pub(crate) fn now() -> Self {
        CallStart {
            at: SystemTime::now(),
            started: Instant::now(),
        }
    }

    pub(crate) fn at(&self) -> SystemTime {
        self.at
    }

    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

struct Kept {
    calls: VecDeque<CallRecord>,
    /// The order of its last call among all calls kept.
    last: u64,
}

#[derive(Default)]
struct Components {
    kept: HashMap<String, Kept>,
    calls: u64,
}

#[derive(Default)]
pub(crate) struct RecentCalls {
    components: Mutex<Components>,
}

impl RecentCalls {
    /// Keeps `record` as `sha256`'s newest call.
    pub(crate) fn record(&self, sha256: &str, record: CallRecord) {
        let mut components = self
            .components
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        components.calls += 1;
        let order = components.calls;
        let by_component = &mut components.kept;
        // The common case, a component seen before, takes one lookup and no allocation.
        if let Some(kept) = by_component.get_mut(sha256) {
            if kept.calls.len() == KEPT_PER_COMPONENT {
                kept.calls.pop_front();
            }
            kept.calls.push_back(record);
            kept.last = order;
            return;
        }
        if by_component.len() >= COMPONENTS_KEPT {
            let least_lately = by_component
                .iter()
                .min_by_key(|(_, kept)| kept.last)
                .map(|(sha256, _)| sha256.clone());
            if let Some(sha256) = least_lately {
                by_component.remove(&sha256);
            }
        }
        let mut calls = VecDeque::with_capacity(KEPT_PER_COMPONENT);
        calls.push_back(record);
        by_component.insert(sha256.to_owned(), Kept { calls, last: order });
    }

    /// `sha256`'s kept calls, newest first.
    pub(crate) fn of(&self, sha256: &str) -> Vec<CallRecord> {
        self.components
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .kept
            .get(sha256)
            .map(|kept| kept.calls.iter().rev().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(operation: &'static str) -> CallRecord {
        CallRecord {
            at: SystemTime::now(),
            operation,
            took: Duration::from_millis(1),
            deadline: Duration::from_millis(50),
            memory_bytes: 1 << 16,
            memory_limit: 64 << 20,
            fuel: 1_000,
            failure: None,
            lines: Vec::new(),
        }
    }

    #[test]
    fn the_newest_calls_are_kept_newest_first() {
        let recent = RecentCalls::default();
        recent.record("a", call("first"));
        for _ in 0..KEPT_PER_COMPONENT {
            recent.record("a", call("later"));
        }
        recent.record("a", call("newest"));
        let kept = recent.of("a");
        assert_eq!(kept.len(), KEPT_PER_COMPONENT);
        assert_eq!(kept[0].operation, "newest");
        assert!(kept.iter().all(|c| c.operation != "first"));
        assert!(recent.of("b").is_empty());
    }

    #[test]
    fn the_component_called_least_lately_is_forgotten_first() {
        let recent = RecentCalls::default();
        for n in 0..COMPONENTS_KEPT {
            recent.record(&n.to_string(), call("price"));
        }
        // "0" is called again: "1" is now the one called least lately.
        recent.record("0", call("price"));
        recent.record("new", call("price"));
        assert_eq!(recent.of("0").len(), 2);
        assert!(recent.of("1").is_empty());
        assert_eq!(recent.of("new").len(), 1);
    }
}
