//! Per-merchant request budgets, enforced in memory by each instance (GCRA: a token bucket kept
//! as one "theoretical arrival time" per merchant and budget), so no request waits on the
//! database.
//!
//! A budget is N requests per minute with bursts of up to N. With several instances, each
//! enforces its share: the limit divided by `COURIER_INSTANCES`, rounded up.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::infra::settings;

use courier_domain::error::Code;
use courier_domain::limits::LimitOverrides;

pub const RATE_LIMITED: Code = Code::new(
    429,
    "rate_limited",
    "The merchant has used its budget for this kind of request (see [rate limits](api-behaviour.md#rate-limits)), a courier its budget of requests (`COURIER_RATE_LIMIT_COURIER_PER_MINUTE`), or the client address its failed sign-ins (merchant or operator API); `Retry-After` says when to try again.",
);

/// The window a per-minute limit is spread over.
const WINDOW: Duration = Duration::from_secs(60);
/// Independent locks, so concurrent requests of different merchants rarely wait on each other.
const SHARDS: usize = 32;
/// Past this many remembered buckets a shard forgets the full ones (they carry no state).
const SHARD_SWEEP_AT: usize = 4096;

/// The separately limited kinds of request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Budget {
    /// `POST /v1/quotes`.
    Quotes,
    /// `POST /v1/jobs`.
    Bookings,
    /// Everything else under `/v1`.
    Reads,
    /// Every request of one courier: its API (`/courier/v1`) and its app (`/courier/`).
    Courier,
}

impl Budget {
    /// The budget a `/v1` request spends; `path` may or may not carry the `/v1` prefix.
    pub fn of(method: &http::Method, path: &str) -> Self {
        let path = path.strip_prefix("/v1").unwrap_or(path);
        let path = path.trim_end_matches('/');
        match (method == http::Method::POST, path) {
            (true, "/quotes") => Budget::Quotes,
            (true, "/jobs") => Budget::Bookings,
            _ => Budget::Reads,
        }
    }
}

/// Requests per minute of each budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::Args)]
pub struct Limits {
    /// Default budget of `POST /v1/quotes` per merchant (merchants may have their own, see [account
    /// settings](api-behaviour.md#account-settings)).
    #[arg(id = "rate-limit-quotes-per-minute", long = "rate-limit-quotes-per-minute",
          env = "COURIER_RATE_LIMIT_QUOTES_PER_MINUTE", default_value = "1200",
          value_parser = settings::positive_u32)]
    pub quotes_per_minute: u32,
    /// Default budget of `POST /v1/jobs` per merchant.
    #[arg(id = "rate-limit-bookings-per-minute", long = "rate-limit-bookings-per-minute",
          env = "COURIER_RATE_LIMIT_BOOKINGS_PER_MINUTE", default_value = "300",
          value_parser = settings::positive_u32)]
    pub bookings_per_minute: u32,
    /// Default budget of every other `/v1` request per merchant.
    #[arg(id = "rate-limit-reads-per-minute", long = "rate-limit-reads-per-minute",
          env = "COURIER_RATE_LIMIT_READS_PER_MINUTE", default_value = "1200",
          value_parser = settings::positive_u32)]
    pub reads_per_minute: u32,
    /// Budget of every request of one courier, its API's and its app's together.
    #[arg(id = "rate-limit-courier-per-minute", long = "rate-limit-courier-per-minute",
          env = "COURIER_RATE_LIMIT_COURIER_PER_MINUTE", default_value = "600",
          value_parser = settings::positive_u32)]
    pub courier_per_minute: u32,
}

impl Limits {
    pub fn of(&self, budget: Budget) -> u32 {
        match budget {
            Budget::Quotes => self.quotes_per_minute,
            Budget::Bookings => self.bookings_per_minute,
            Budget::Reads => self.reads_per_minute,
            Budget::Courier => self.courier_per_minute,
        }
    }
}

/// `COURIER_RATE_LIMIT_*` and `COURIER_INSTANCES`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::Args)]
pub struct RateLimitConfig {
    #[command(flatten)]
    pub defaults: Limits,
    /// How many instances serve together; each enforces every budget divided by this (rounded
    /// up).
    #[arg(id = "instances", long = "instances", env = "COURIER_INSTANCES", default_value = "1",
          value_parser = settings::positive_u32)]
    pub instances: u32,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        settings::from_lookup(|_| None).expect("the defaults are valid")
    }
}

impl RateLimitConfig {
    /// What this instance enforces for a merchant: its overrides or the defaults, divided
    /// among the instances (rounded up, never below 1).
    pub fn limits_for(&self, overrides: &LimitOverrides) -> Limits {
        let share = |configured: u32| configured.div_ceil(self.instances).max(1);
        Limits {
            quotes_per_minute: share(
                overrides
                    .quotes_per_minute
                    .unwrap_or(self.defaults.quotes_per_minute),
            ),
            bookings_per_minute: share(
                overrides
                    .bookings_per_minute
                    .unwrap_or(self.defaults.bookings_per_minute),
            ),
            reads_per_minute: share(
                overrides
                    .reads_per_minute
                    .unwrap_or(self.defaults.reads_per_minute),
            ),
            courier_per_minute: share(self.defaults.courier_per_minute),
        }
    }
}

/// The outcome of one request against its budget: what the `RateLimit-*` headers say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Until the budget is whole again.
    pub reset: Duration,
    /// Until the next request would be allowed (zero when this one was).
    pub retry_after: Duration,
}

/// The buckets of every merchant and budget seen by this instance.
pub struct RateLimiter {
    shards: Vec<Mutex<Shard>>,
    hasher: RandomState,
}

/// Theoretical arrival times by merchant and budget; `sweep_at` grows with the busy merchants,
/// so a shard full of active buckets is not swept on every request.
struct Shard {
    buckets: HashMap<(Uuid, Budget), Instant>,
    sweep_at: usize,
}

impl Default for RateLimiter {
    fn default() -> Self {
        Self::new()
    }
}

impl RateLimiter {
    pub fn new() -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        buckets: HashMap::new(),
                        sweep_at: SHARD_SWEEP_AT,
                    })
                })
                .collect(),
            hasher: RandomState::new(),
        }
    }

    /// Spends one request of `owner`'s `budget` (a merchant's or a courier's) at `now` (passed in, so tests
    /// drive the clock).
    pub fn check(&self, owner: Uuid, budget: Budget, limit: u32, now: Instant) -> Decision {
        let limit = limit.max(1);
        let interval = WINDOW / limit;
        let capacity = interval * limit;
        let shard = &self.shards[(self.hasher.hash_one((owner, budget)) as usize) % SHARDS];
        let mut shard = shard.lock().expect("lock poisoned");
        // The theoretical arrival time: when the bucket would be full again. Never in the past.
        let tat = shard
            .buckets
            .get(&(owner, budget))
            .copied()
            .filter(|tat| *tat > now)
            .unwrap_or(now);
        let next_tat = tat + interval;
        let backlog = next_tat - now;
        if backlog > capacity {
            let retry_after = backlog - capacity;
            return Decision {
                allowed: false,
                limit,
                remaining: 0,
                reset: tat - now,
                retry_after,
            };
        }
        if shard.buckets.len() >= shard.sweep_at {
            shard.buckets.retain(|_, tat| *tat > now);
            shard.sweep_at = SHARD_SWEEP_AT.max(2 * shard.buckets.len());
        }
        shard.buckets.insert((owner, budget), next_tat);
        let remaining = ((capacity - backlog).as_nanos() / interval.as_nanos()) as u32;
        Decision {
            allowed: true,
            limit,
            remaining,
            reset: backlog,
            retry_after: Duration::ZERO,
        }
    }
}

/// Whole seconds, rounded up: what `Retry-After` and `RateLimit-Reset` carry.
pub fn whole_seconds(duration: Duration) -> u64 {
    duration.as_secs() + u64::from(duration.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn key() -> Uuid {
        Uuid::new_v4()
    }

    #[test]
    fn a_full_budget_allows_a_burst_of_the_limit_then_refuses() {
        let limiter = RateLimiter::new();
        let key = key();
        let start = Instant::now();
        for expected_remaining in (0..10).rev() {
            let decision = limiter.check(key, Budget::Quotes, 10, start);
            assert!(decision.allowed);
            assert_eq!(decision.remaining, expected_remaining);
            assert_eq!(decision.limit, 10);
        }
        let refused = limiter.check(key, Budget::Quotes, 10, start);
        assert!(!refused.allowed);
        assert_eq!(refused.remaining, 0);
        // One request comes back every 6 s (10 per minute).
        assert_eq!(refused.retry_after, Duration::from_secs(6));
        assert_eq!(refused.reset, Duration::from_secs(60));
    }

    #[test]
    fn the_budget_refills_at_the_limit_rate() {
        let limiter = RateLimiter::new();
        let key = key();
        let start = Instant::now();
        for _ in 0..10 {
            assert!(limiter.check(key, Budget::Reads, 10, start).allowed);
        }
        let almost = start + Duration::from_millis(5999);
        let refused = limiter.check(key, Budget::Reads, 10, almost);
        assert!(!refused.allowed);
        assert_eq!(refused.retry_after, Duration::from_millis(1));
        let later = start + Duration::from_secs(6);
        let allowed = limiter.check(key, Budget::Reads, 10, later);
        assert!(allowed.allowed);
        assert_eq!(allowed.remaining, 0);
        assert!(!limiter.check(key, Budget::Reads, 10, later).allowed);
        // After a quiet minute the whole burst is back.
        let quiet = later + Duration::from_secs(60);
        assert_eq!(limiter.check(key, Budget::Reads, 10, quiet).remaining, 9);
    }

    #[test]
    fn budgets_and_keys_are_separate() {
        let limiter = RateLimiter::new();
        let (first, second) = (key(), key());
        let now = Instant::now();
        assert!(limiter.check(first, Budget::Quotes, 1, now).allowed);
        assert!(!limiter.check(first, Budget::Quotes, 1, now).allowed);
        assert!(limiter.check(first, Budget::Bookings, 1, now).allowed);
        assert!(limiter.check(first, Budget::Reads, 1, now).allowed);
        assert!(limiter.check(second, Budget::Quotes, 1, now).allowed);
    }

    #[test]
    fn idle_buckets_are_forgotten_without_changing_decisions() {
        let limiter = RateLimiter::new();
        let start = Instant::now();
        let many = SHARDS * SHARD_SWEEP_AT;
        for _ in 0..many {
            limiter.check(key(), Budget::Reads, 60, start);
        }
        // A second later every earlier bucket is full again, so carries no state.
        let later = start + Duration::from_secs(2);
        let busy = key();
        assert!(limiter.check(busy, Budget::Reads, 1, later).allowed);
        for _ in 0..3 * many {
            limiter.check(key(), Budget::Reads, 60, later);
        }
        assert!(!limiter.check(busy, Budget::Reads, 1, later).allowed);
        let remembered: usize = limiter
            .shards
            .iter()
            .map(|s| s.lock().unwrap().buckets.len())
            .sum();
        assert!(remembered < 4 * many, "{remembered}");
    }

    #[test]
    fn requests_are_sorted_into_budgets() {
        assert_eq!(Budget::of(&Method::POST, "/quotes"), Budget::Quotes);
        assert_eq!(Budget::of(&Method::POST, "/v1/quotes"), Budget::Quotes);
        assert_eq!(Budget::of(&Method::POST, "/v1/jobs"), Budget::Bookings);
        assert_eq!(Budget::of(&Method::GET, "/v1/jobs"), Budget::Reads);
        assert_eq!(Budget::of(&Method::GET, "/v1/quotes"), Budget::Reads);
        assert_eq!(Budget::of(&Method::POST, "/v1/webhooks"), Budget::Reads);
    }

    #[test]
    fn each_instance_enforces_its_share_of_the_limit() {
        let config = RateLimitConfig {
            defaults: Limits {
                quotes_per_minute: 100,
                bookings_per_minute: 10,
                reads_per_minute: 1,
                courier_per_minute: 600,
            },
            instances: 3,
        };
        let overrides = LimitOverrides {
            bookings_per_minute: Some(30),
            ..LimitOverrides::default()
        };
        assert_eq!(
            config.limits_for(&overrides),
            Limits {
                quotes_per_minute: 34,
                bookings_per_minute: 10,
                reads_per_minute: 1,
                courier_per_minute: 200,
            }
        );
    }

    #[test]
    fn configuration_is_read_and_checked() {
        let config = settings::from_lookup::<RateLimitConfig>(|name| match name {
            "COURIER_RATE_LIMIT_QUOTES_PER_MINUTE" => Some("50".into()),
            "COURIER_INSTANCES" => Some("2".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(config.defaults.quotes_per_minute, 50);
        assert_eq!(config.defaults.bookings_per_minute, 300);
        assert_eq!(config.instances, 2);
        let err = settings::from_lookup::<RateLimitConfig>(|name| {
            (name == "COURIER_INSTANCES").then(|| "0".into())
        });
        assert!(err.unwrap_err().to_string().contains("COURIER_INSTANCES"));
    }

    #[test]
    fn seconds_round_up() {
        assert_eq!(whole_seconds(Duration::ZERO), 0);
        assert_eq!(whole_seconds(Duration::from_millis(1)), 1);
        assert_eq!(whole_seconds(Duration::from_secs(6)), 6);
    }
}
