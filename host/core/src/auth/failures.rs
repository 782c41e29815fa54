//! Requests counted per client address in fixed windows: failed sign-ins, so guessing
//! credentials stays slow and a flood of wrong ones is turned away before it costs a lookup;
//! and requests to the public routes, which need no credentials at all.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Requests per client address (failed sign-ins, or public requests), in fixed windows: past
/// `limit` in one, the address waits for the window's end.
pub struct AddressBudget {
    limit: u32,
    window: Duration,
    seen: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

/// Addresses tracked at once; past it, the windows that ended are forgotten first.
const TRACKED_ADDRESSES: usize = 100_000;

impl AddressBudget {
    pub fn new(limit: u32, window: Duration) -> Self {
        Self {
            limit,
            window,
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// How long `client` must wait, if it used up its budget in the current window.
    pub fn wait(&self, client: IpAddr, now: Instant) -> Option<Duration> {
        let seen = self
            .seen
            .lock()
            .expect("the failure table is never poisoned");
        let &(started, failures) = seen.get(&client)?;
        let ends = started + self.window;
        (failures >= self.limit && ends > now).then(|| ends - now)
    }

    /// Counts one request of `client`'s.
    pub fn spend(&self, client: IpAddr, now: Instant) {
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
        let failures = AddressBudget::new(2, Duration::from_secs(1));
        let client: IpAddr = "192.0.2.1".parse().unwrap();
        let start = Instant::now();
        failures.spend(client, start);
        assert_eq!(failures.wait(client, start), None);
        failures.spend(client, start);
        assert_eq!(
            failures.wait(client, start + Duration::from_millis(400)),
            Some(Duration::from_millis(600))
        );
        assert_eq!(failures.wait(client, start + Duration::from_secs(1)), None);
        // A failure after the window starts a new one.
        failures.spend(client, start + Duration::from_secs(1));
        assert_eq!(failures.wait(client, start + Duration::from_secs(1)), None);
    }
}
