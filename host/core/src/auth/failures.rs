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

/// Refusals of addresses past their failure budget, paced: at most one per `interval` per
/// address. A faster client's requests wait for their turn, holding nothing but a timer, so a
/// flood from one address costs the service a bounded share of its time however fast the
/// client sends; one that would wait longer than [`MOST_WAIT`] is answered at once and its
/// connection closed.
pub struct RefusalPace {
    interval: Duration,
    turns: Mutex<HashMap<IpAddr, Instant>>,
}

/// The longest a refusal waits for its turn.
pub const MOST_WAIT: Duration = Duration::from_secs(1);

/// When a paced refusal is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// After this wait.
    After(Duration),
    /// At once, closing the connection: the address has a second's worth waiting already.
    Now,
}

impl RefusalPace {
    /// `per_second` refusals per address; 0 paces nothing.
    pub fn new(per_second: u32) -> Self {
        Self {
            interval: if per_second == 0 {
                Duration::ZERO
            } else {
                Duration::from_secs(1) / per_second
            },
            turns: Mutex::new(HashMap::new()),
        }
    }

    /// Takes `client`'s next turn.
    pub fn turn(&self, client: IpAddr, now: Instant) -> Turn {
        if self.interval.is_zero() {
            return Turn::After(Duration::ZERO);
        }
        let mut turns = self.turns.lock().expect("the pace table is never poisoned");
        if turns.len() >= TRACKED_ADDRESSES && !turns.contains_key(&client) {
            turns.retain(|_, next| *next > now);
        }
        let next = turns.entry(client).or_insert(now);
        let at = (*next).max(now);
        if at - now > MOST_WAIT {
            return Turn::Now;
        }
        *next = at + self.interval;
        Turn::After(at - now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_paced_per_address_and_a_long_queue_is_cut() {
        let pace = RefusalPace::new(10);
        let (one, other): (IpAddr, IpAddr) =
            ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        let start = Instant::now();
        assert_eq!(pace.turn(one, start), Turn::After(Duration::ZERO));
        assert_eq!(
            pace.turn(one, start),
            Turn::After(Duration::from_millis(100))
        );
        assert_eq!(pace.turn(other, start), Turn::After(Duration::ZERO));
        for _ in 0..9 {
            assert!(matches!(pace.turn(one, start), Turn::After(_)));
        }
        assert_eq!(pace.turn(one, start), Turn::Now);
        // Once the queue has gone, turns come at the pace again.
        let later = start + Duration::from_secs(5);
        assert_eq!(pace.turn(one, later), Turn::After(Duration::ZERO));
        assert_eq!(
            RefusalPace::new(0).turn(one, start),
            Turn::After(Duration::ZERO)
        );
    }

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
