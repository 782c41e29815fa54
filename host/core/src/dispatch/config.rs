//! `COURIER_OFFER_TIMEOUT_MS`, `COURIER_DISPATCH_*`, `COURIER_PROOF_MAX_BYTES` (documented in
//! docs/configuration.md).

use std::time::Duration;

use crate::infra::settings;

#[derive(Clone, Debug, clap::Args)]
pub struct DispatchConfig {
    /// How long a courier has to accept an offer before it goes to the next courier.
    #[arg(id = "offer-timeout-ms", long = "offer-timeout-ms", env = "COURIER_OFFER_TIMEOUT_MS",
          default_value = "30000", value_parser = chrono_millis)]
    pub offer_timeout: chrono::Duration,
    /// How long a search may last before the job fails with `job.failed`, from when the job
    /// is due: when it entered `searching`, its `scheduled_for` or its `pickup_ready_at`,
    /// whichever is last. Also the latest a parcel may be ready after the job is due.
    #[arg(id = "dispatch-deadline-secs", long = "dispatch-deadline-secs",
          env = "COURIER_DISPATCH_DEADLINE_SECS", default_value = "900",
          value_parser = settings::seconds)]
    pub deadline: chrono::Duration,
    /// How often the dispatch worker looks for due work (offers to make or expire, deadlines,
    /// settlements).
    #[arg(id = "dispatch-interval-ms", long = "dispatch-interval-ms",
          env = "COURIER_DISPATCH_INTERVAL_MS", default_value = "1000",
          value_parser = settings::millis)]
    pub interval: Duration,
    /// How far from a pickup (in a straight line) a courier may be to be planned for it;
    /// nearer pairs are routed on the road network.
    #[arg(id = "dispatch-radius-km", long = "dispatch-radius-km",
          env = "COURIER_DISPATCH_RADIUS_KM", default_value = "15", value_parser = kilometres)]
    pub radius_km: f64,
    /// The longest a courier is sent to wait at a pickup for a parcel that is not ready: a job
    /// with a later ready time is offered once the courier's trip leaves no longer a wait.
    #[arg(id = "dispatch-ready-wait-secs", long = "dispatch-ready-wait-secs",
          env = "COURIER_DISPATCH_READY_WAIT_SECS", default_value = "120",
          value_parser = settings::seconds)]
    pub ready_wait: chrono::Duration,
    /// Jobs from one pickup offered together to one courier, at most (1: one job each).
    #[arg(id = "dispatch-max-bundle", long = "dispatch-max-bundle",
          env = "COURIER_DISPATCH_MAX_BUNDLE", default_value = "3",
          value_parser = settings::positive_usize)]
    pub max_bundle: usize,
    /// Jobs ride together only when their parcels are ready within this of each other.
    #[arg(id = "dispatch-bundle-window-secs", long = "dispatch-bundle-window-secs",
          env = "COURIER_DISPATCH_BUNDLE_WINDOW_SECS", default_value = "600",
          value_parser = settings::seconds)]
    pub bundle_window: chrono::Duration,
    /// The most riding together may delay a job's drop-off, against riding alone.
    #[arg(id = "dispatch-max-detour-secs", long = "dispatch-max-detour-secs",
          env = "COURIER_DISPATCH_MAX_DETOUR_SECS", default_value = "600",
          value_parser = settings::seconds)]
    pub max_detour: chrono::Duration,
    /// Largest proof photo or signature (decoded bytes); the delivery route accepts a body of
    /// three times this.
    #[arg(id = "proof-max-bytes", long = "proof-max-bytes", env = "COURIER_PROOF_MAX_BYTES",
          default_value = "5242880", value_parser = settings::positive_usize)]
    pub proof_max_bytes: usize,
}

impl Default for DispatchConfig {
    fn default() -> Self {
        settings::from_lookup(|_| None).expect("the defaults are valid")
    }
}

fn chrono_millis(raw: &str) -> Result<chrono::Duration, String> {
    settings::positive(raw).map(|ms| chrono::Duration::milliseconds(ms as i64))
}

fn kilometres(raw: &str) -> Result<f64, String> {
    settings::positive(raw).map(|km| km as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let config = settings::from_lookup::<DispatchConfig>(|_| None).unwrap();
        assert_eq!(config.offer_timeout, chrono::Duration::seconds(30));
        assert_eq!(config.deadline, chrono::Duration::minutes(15));
        assert_eq!(config.ready_wait, chrono::Duration::minutes(2));
        assert_eq!(config.max_bundle, 3);
        assert_eq!(config.bundle_window, chrono::Duration::minutes(10));
        let config = settings::from_lookup::<DispatchConfig>(|n| match n {
            "COURIER_OFFER_TIMEOUT_MS" => Some("250".into()),
            "COURIER_DISPATCH_DEADLINE_SECS" => Some("2".into()),
            "COURIER_DISPATCH_INTERVAL_MS" => Some("20".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(config.offer_timeout, chrono::Duration::milliseconds(250));
        assert_eq!(config.deadline, chrono::Duration::seconds(2));
        assert_eq!(config.interval, Duration::from_millis(20));
        let bad = settings::from_lookup::<DispatchConfig>(|n| {
            (n == "COURIER_OFFER_TIMEOUT_MS").then(|| "soon".into())
        });
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("COURIER_OFFER_TIMEOUT_MS")
        );
    }
}
