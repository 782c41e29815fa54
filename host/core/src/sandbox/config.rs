//! `COURIER_SANDBOX_SPEED`, `COURIER_SANDBOX_INTERVAL_MS` (documented in docs/configuration.md).

use std::time::Duration;

use crate::infra::settings;

/// Fastest simulation accepted: a day's delivery in under a second.
const MAX_SPEED: f64 = 100_000.0;

#[derive(Clone, Debug, clap::Args)]
pub struct SandboxConfig {
    /// How fast the sandbox simulator moves test-environment jobs, in simulated seconds per
    /// real second (`1` = real time, `60` = a minute a second, up to `100000`). `0` turns it
    /// off: test jobs then move only through the courier and operator APIs (and `…/advance`),
    /// and are offered to real couriers like live jobs.
    #[arg(id = "sandbox-speed", long = "sandbox-speed", env = "COURIER_SANDBOX_SPEED",
          default_value = "1", value_parser = speed)]
    pub speed: f64,
    /// How often the simulator takes due steps and writes its couriers' positions.
    #[arg(id = "sandbox-interval-ms", long = "sandbox-interval-ms",
          env = "COURIER_SANDBOX_INTERVAL_MS", default_value = "1000",
          value_parser = settings::millis)]
    pub interval: Duration,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        settings::from_lookup(|_| None).expect("the defaults are valid")
    }
}

fn speed(raw: &str) -> Result<f64, String> {
    match raw.trim().parse::<f64>() {
        Ok(speed) if (0.0..=MAX_SPEED).contains(&speed) => Ok(speed),
        _ => Err(format!("{raw:?} is not a number from 0 to {MAX_SPEED}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_is_read_and_checked() {
        let config = settings::from_lookup::<SandboxConfig>(|_| None).unwrap();
        assert_eq!(config.speed, 1.0);
        assert_eq!(config.interval, Duration::from_secs(1));
        let config = settings::from_lookup::<SandboxConfig>(|n| match n {
            "COURIER_SANDBOX_SPEED" => Some("0".into()),
            "COURIER_SANDBOX_INTERVAL_MS" => Some("50".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(config.speed, 0.0);
        assert_eq!(config.interval, Duration::from_millis(50));
        assert_eq!(
            settings::from_lookup::<SandboxConfig>(
                |n| (n == "COURIER_SANDBOX_SPEED").then(|| "2.5".into())
            )
            .unwrap()
            .speed,
            2.5
        );
        for bad in ["-1", "fast", "NaN", "1e9"] {
            let err = settings::from_lookup::<SandboxConfig>(|n| {
                (n == "COURIER_SANDBOX_SPEED").then(|| bad.to_owned())
            })
            .unwrap_err();
            assert!(err.to_string().contains("COURIER_SANDBOX_SPEED"), "{bad}");
        }
    }
}
