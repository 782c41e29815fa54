//! `COURIER_SANDBOX_SPEED`, `COURIER_SANDBOX_INTERVAL_MS` (documented in docs/configuration.md).

use std::time::Duration;

use crate::config::{ConfigError, positive_setting};

/// Fastest simulation accepted: a day's delivery in under a second.
const MAX_SPEED: f64 = 100_000.0;

#[derive(Clone, Debug)]
pub struct SandboxConfig {
    /// Simulated seconds per real second; 0 turns the simulator off.
    pub speed: f64,
    /// How often due steps are taken and simulated couriers' positions written.
    pub interval: Duration,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            speed: 1.0,
            interval: Duration::from_secs(1),
        }
    }
}

impl SandboxConfig {
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let defaults = Self::default();
        let speed = match lookup("COURIER_SANDBOX_SPEED") {
            None => defaults.speed,
            Some(raw) => match raw.trim().parse::<f64>() {
                Ok(speed) if (0.0..=MAX_SPEED).contains(&speed) => speed,
                _ => {
                    return Err(ConfigError::Invalid {
                        name: "COURIER_SANDBOX_SPEED",
                        reason: format!("{raw:?} is not a number from 0 to {MAX_SPEED}"),
                    });
                }
            },
        };
        Ok(Self {
            speed,
            interval: positive_setting(lookup, "COURIER_SANDBOX_INTERVAL_MS")?
                .map_or(defaults.interval, Duration::from_millis),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_is_read_and_checked() {
        let config = SandboxConfig::from_lookup(&|_| None).unwrap();
        assert_eq!(config.speed, 1.0);
        assert_eq!(config.interval, Duration::from_secs(1));
        let config = SandboxConfig::from_lookup(&|n| match n {
            "COURIER_SANDBOX_SPEED" => Some("0".into()),
            "COURIER_SANDBOX_INTERVAL_MS" => Some("50".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(config.speed, 0.0);
        assert_eq!(config.interval, Duration::from_millis(50));
        assert_eq!(
            SandboxConfig::from_lookup(&|n| (n == "COURIER_SANDBOX_SPEED").then(|| "2.5".into()))
                .unwrap()
                .speed,
            2.5
        );
        for bad in ["-1", "fast", "NaN", "1e9"] {
            let err = SandboxConfig::from_lookup(&|n| {
                (n == "COURIER_SANDBOX_SPEED").then(|| bad.to_owned())
            })
            .unwrap_err();
            assert!(err.to_string().contains("COURIER_SANDBOX_SPEED"), "{bad}");
        }
    }
}
