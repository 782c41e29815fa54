//! Requests counted per client address in fixed windows: failed sign-ins, so guessing
//! credentials stays slow and a flood of wrong ones is turned away before it costs a lookup;
//! and requests to the public routes, which need no credentials at all.
//!
//! An address is counted under its [`budget_key`]: an IPv4 address itself, an IPv6 address
//! by its /64 (one host may use any of a /64's 2^64 addresses). Each table is split into
//! shards, so requests from different addresses rarely wait on one lock, and keeps its
//! entries in the order they were last renewed, so forgetting the stalest one when a shard
//! is full takes one step, not a scan of every entry.

use std::hash::{BuildHasher, RandomState};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hashlink::LinkedHashMap;

/// Addresses tracked at once per table; past it, the stalest is forgotten.
const TRACKED_ADDRESSES: usize = 100_000;
/// Independent locks per table.
const SHARDS: usize = 16;

/// What an address is counted under: an IPv4 address (or an IPv4 address written as
/// IPv6, `::ffff:a.b.c.d`) itself; an IPv6 address by its /64.
pub fn budget_key(address: IpAddr) -> IpAddr {
    match address.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !(u64::MAX as u128))),
        v4 => v4,
    }
}

/// Entries by [`budget_key`], sharded, each shard in order of last renewal (stalest first).
struct AddressTable<V> {
    shards: Vec<Mutex<LinkedHashMap<IpAddr, V>>>,
    hasher: RandomState,
    per_shard: usize,
}

impl<V> AddressTable<V> {
    fn new(capacity: usize) -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(LinkedHashMap::new()))
                .collect(),
            hasher: RandomState::new(),
            per_shard: capacity.div_ceil(SHARDS).max(1),
        }
    }

    /// The shard of `key`, locked.
    fn shard(&self, key: IpAddr) -> MutexGuard<'_, LinkedHashMap<IpAddr, V>> {
        let index = (self.hasher.hash_one(key) as usize) % SHARDS;
        self.shards[index]
            .lock()
            .expect("an address table is never poisoned")
    }

    /// Puts `key`'s `value` at the back of `shard` (the freshest), forgetting the stalest
    /// entry first when the shard is full.
    fn renew(shard: &mut LinkedHashMap<IpAddr, V>, key: IpAddr, value: V, per_shard: usize) {
        shard.remove(&key);
        if shard.len() >= per_shard {
            shard.pop_front();
        }
        shard.insert(key, value);
    }
}

/// Requests per client address (failed sign-ins, or public requests), in fixed windows: past
/// `limit` in one, the address waits for the window's end.
pub struct AddressBudget {
    limit: u32,
    window: Duration,
    /// When each address's window started, and its requests in it.
    seen: AddressTable<(Instant, u32)>,
}

impl AddressBudget {
    pub fn new(limit: u32, window: Duration) -> Self {
        Self::with_capacity(limit, window, TRACKED_ADDRESSES)
    }

    fn with_capacity(limit: u32, window: Duration, capacity: usize) -> Self {
        Self {
            limit,
            window,
            seen: AddressTable::new(capacity),
        }
    }

    /// How long `client` must wait, if it used up its budget in the current window.
    pub fn wait(&self, client: IpAddr, now: Instant) -> Option<Duration> {
        let key = budget_key(client);
        let shard = self.seen.shard(key);
        let &(started, requests) = shard.get(&key)?;
        let ends = started + self.window;
        (requests >= self.limit && ends > now).then(|| ends - now)
    }

    /// Counts one request of `client`'s.
    pub fn spend(&self, client: IpAddr, now: Instant) {
        let key = budget_key(client);
        let mut shard = self.seen.shard(key);
        // Windows start in order, so the ended ones are at the front: each is dropped once.
        while let Some((_, &(started, _))) = shard.front() {
            if started + self.window > now {
                break;
            }
            shard.pop_front();
        }
        match shard.get_mut(&key) {
            Some((started, requests)) if *started + self.window > now => *requests += 1,
            _ => AddressTable::renew(&mut shard, key, (now, 1), self.seen.per_shard),
        }
    }
}

/// Refusals of addresses past their failure budget, paced: at most one per `interval` per
/// address. A faster client's requests wait for their turn, holding nothing but a timer, so a
/// flood from one address costs the service a bounded share of its time however fast the
/// client sends; one that would wait longer than [`MOST_WAIT`] is answered at once and its
/// connection closed.
pub struct RefusalPace {
    interval: Duration,
    /// Each address's next turn.
    turns: AddressTable<Instant>,
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
            turns: AddressTable::new(TRACKED_ADDRESSES),
        }
    }

    /// Takes `client`'s next turn.
    pub fn turn(&self, client: IpAddr, now: Instant) -> Turn {
        if self.interval.is_zero() {
            return Turn::After(Duration::ZERO);
        }
        let key = budget_key(client);
        let mut turns = self.turns.shard(key);
        // The least recently paced first: past turns there are forgotten, each once.
        while let Some((_, &next)) = turns.front() {
            if next > now {
                break;
            }
            turns.pop_front();
        }
        let next = turns.get(&key).copied().unwrap_or(now);
        let at = next.max(now);
        if at - now > MOST_WAIT {
            return Turn::Now;
        }
        AddressTable::renew(&mut turns, key, at + self.interval, self.turns.per_shard);
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

    #[test]
    fn an_ipv6_client_is_counted_by_its_64_and_a_mapped_ipv4_as_ipv4() {
        let key = |raw: &str| budget_key(raw.parse().unwrap());
        assert_eq!(
            key("2001:db8:1:2:aaaa::1"),
            key("2001:db8:1:2:ffff:ffff:ffff:ffff")
        );
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:192.0.2.1"), key("192.0.2.1"));
        let budget = AddressBudget::new(2, Duration::from_secs(60));
        let start = Instant::now();
        budget.spend("2001:db8:1:2::1".parse().unwrap(), start);
        budget.spend("2001:db8:1:2::2".parse().unwrap(), start);
        assert!(
            budget
                .wait("2001:db8:1:2::3".parse().unwrap(), start)
                .is_some()
        );
        assert_eq!(budget.wait("2001:db8:1:3::1".parse().unwrap(), start), None);
    }

    #[test]
    fn a_full_table_forgets_its_stalest_address_first() {
        // One entry per shard at most: with more addresses than shards, the stalest go.
        let budget = AddressBudget::with_capacity(1, Duration::from_secs(60), SHARDS);
        let start = Instant::now();
        let addresses: Vec<IpAddr> = (0..=255u8).map(|n| IpAddr::from([192, 0, 2, n])).collect();
        for (n, address) in addresses.iter().enumerate() {
            budget.spend(*address, start + Duration::from_millis(n as u64));
        }
        let remembered = addresses
            .iter()
            .filter(|a| budget.wait(**a, start + Duration::from_secs(1)).is_some())
            .count();
        assert!(remembered <= SHARDS, "{remembered}");
        // The last one spent is never the one forgotten.
        assert!(
            budget
                .wait(addresses[255], start + Duration::from_secs(1))
                .is_some()
        );
    }
}
