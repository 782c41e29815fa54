//! Failed sign-ins counted per client address, so guessing credentials stays slow and a flood
//! of wrong ones is turned away before it costs a lookup.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures per client address (sign-ins with a wrong token or key), in fixed windows: past
/// `limit` in one, the address waits for the window's end.
pub struct FailureBudget {
    limit: u32,
    window: Duration,
    seen: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

/// Addresses tracked at once; past it, the windows that ended are forgotten first.
const TRACKED_ADDRESSES: usize = 100_000;

impl FailureBudget {
    pub fn new(limit: u32, window: Duration) -> Self {
        Self {
            limit,
            window,
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// How long `client` must wait, if it used up its failures in the current window.
    pub fn wait(&self, client: IpAddr, now: Instant) -> Option<Duration> {
        let seen = self
            .seen
            .lock()
            .expect("the failure table is never poisoned");
        let &(started, failures) = seen.get(&client)?;
        let ends = started + self.window;
        (failures >= self.limit && ends > now).then(|| ends - now)
    }

    pub fn failed(&self, client: IpAddr, now: Instant) {
        let mut seen = self
            .seen
            .lock()
            .expect("the failure table is never poisoned");
        if seen.len() >= TRACKED_ADDRESSES && !seen.contains_key(&client) {
            let window = self.window;
            seen.retain(|_, (started, _)| *started + window > now);
            if seen.len() >= TRACKED_ADDRESSES {
                // Every window still runs: the oldest goes.
                if let Some(oldest) = seen.iter().min_by_key(|(_, (started, _))| *started) {
                    let oldest = *oldest.0;
                    seen.remove(&oldest);
                }
            }
        }
        let entry = seen.entry(client).or_insert((now, 0));
        if entry.0 + self.window <= now {
            *entry = (now, 0);
        }
        entry.1 += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_counted_per_window() {
        let failures = FailureBudget::new(2, Duration::from_secs(1));
        let client: IpAddr = "192.0.2.1".parse().unwrap();
        let start = Instant::now();
        failures.failed(client, start);
        assert_eq!(failures.wait(client, start), None);
        failures.failed(client, start);
        assert_eq!(
            failures.wait(client, start + Duration::from_millis(400)),
            Some(Duration::from_millis(600))
        );
        assert_eq!(failures.wait(client, start + Duration::from_secs(1)), None);
        // A failure after the window starts a new one.
        failures.failed(client, start + Duration::from_secs(1));
        assert_eq!(failures.wait(client, start + Duration::from_secs(1)), None);
    }
}
