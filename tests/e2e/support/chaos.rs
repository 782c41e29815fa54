//! Random faults on a provider stand-in's requests, drawn from a seed, for the money chaos run
//! (`tests/chaos`): each request pauses log-normally, and some meet a fault.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// What a drawn fault does to a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drawn {
    /// A 503 without acting.
    Unavailable,
    /// Acting, then closing the connection without answering.
    ActThenDrop,
    /// Acting only after this pause (the caller has usually given up by then).
    Hang(Duration),
}

/// A log-normal pause on every request (`median`, `p99`), and with `fault_rate` in all a 503
/// without acting (40%), acting then dropping the connection (40%), or acting only after
/// `hang` (20%).
pub struct RequestChaos {
    pub rng: StdRng,
    median: Duration,
    p99: Duration,
    fault_rate: f64,
    hang: Duration,
}

impl RequestChaos {
    pub fn new(
        seed: u64,
        median: Duration,
        p99: Duration,
        fault_rate: f64,
        hang: Duration,
    ) -> Self {
        RequestChaos {
            rng: StdRng::seed_from_u64(seed),
            median,
            p99,
            fault_rate,
            hang,
        }
    }

    /// The next request's fault, if any, and its pause.
    pub fn draw(&mut self) -> (Option<Drawn>, Duration) {
        let pause = spread_with(&mut self.rng, self.median, self.p99);
        let roll: f64 = self.rng.random();
        let fault = if roll < self.fault_rate * 0.4 {
            Some(Drawn::Unavailable)
        } else if roll < self.fault_rate * 0.8 {
            Some(Drawn::ActThenDrop)
        } else if roll < self.fault_rate {
            Some(Drawn::Hang(self.hang))
        } else {
            None
        };
        (fault, pause)
    }
}

/// A log-normal duration with this `median` and 99th percentile.
pub fn spread(median: Duration, p99: Duration) -> Duration {
    spread_with(&mut rand::rng(), median, p99)
}

/// [`spread`] drawn from `rng`.
pub fn spread_with(rng: &mut impl Rng, median: Duration, p99: Duration) -> Duration {
    let sigma = (p99.as_secs_f64() / median.as_secs_f64()).ln() / 2.326;
    // Box-Muller: one standard normal sample.
    let (u1, u2): (f64, f64) = (rng.random_range(f64::EPSILON..1.0), rng.random());
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    Duration::from_secs_f64(median.as_secs_f64() * (sigma * z).exp())
}
