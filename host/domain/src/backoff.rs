//! When a failed call is made again: after a base wait that doubles with each failure. The one
//! rule every retry of the service follows (charges, customer texts, webhook deliveries).

use std::time::Duration;

/// Doublings stop here (a millionfold base), far beyond any configured attempt count, so the
/// wait cannot overflow.
const MAX_DOUBLINGS: u32 = 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
}

impl Backoff {
    pub fn new(base: Duration) -> Self {
        Self { base }
    }

    /// The wait after the `failures`-th failure in a row: the base after the first, twice it
    /// after the second, and so on.
    pub fn wait_after(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(MAX_DOUBLINGS);
        self.base.saturating_mul(1 << doublings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_after_each_failure_and_stops_growing() {
        let backoff = Backoff::new(Duration::from_secs(5));
        assert_eq!(backoff.wait_after(0), Duration::from_secs(5));
        assert_eq!(backoff.wait_after(1), Duration::from_secs(5));
        assert_eq!(backoff.wait_after(2), Duration::from_secs(10));
        assert_eq!(backoff.wait_after(4), Duration::from_secs(40));
        assert_eq!(backoff.wait_after(u32::MAX), backoff.wait_after(21));
        assert_eq!(
            Backoff::new(Duration::MAX).wait_after(3),
            Duration::MAX,
            "saturates rather than overflows"
        );
    }
}
