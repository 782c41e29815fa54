//! `COURIER_OFFER_TIMEOUT_MS`, `COURIER_DISPATCH_*`, `COURIER_PROOF_MAX_BYTES` (documented in
//! docs/configuration.md).

use std::time::Duration;

use crate::config::{ConfigError, positive_setting};

#[derive(Clone, Debug)]
pub struct DispatchConfig {
    /// `COURIER_OFFER_TIMEOUT_MS`: how long a courier has to answer an offer.
    pub offer_timeout: chrono::Duration,
    /// `COURIER_DISPATCH_DEADLINE_SECS`: how long a search may last before the job fails.
    pub deadline: chrono::Duration,
    /// `COURIER_DISPATCH_INTERVAL_MS`: how often due dispatch work is looked for.
    pub interval: Duration,
    /// `COURIER_DISPATCH_RADIUS_KM`: how far from the pickup couriers are looked for.
    pub radius_km: f64,
    /// `COURIER_PROOF_MAX_BYTES`: the largest proof photo or signature accepted.
    pub proof_max_bytes: usize,
}

impl Default for DispatchConfig {
    fn default() -> Self {
        Self {
            offer_timeout: chrono::Duration::seconds(30),
            deadline: chrono::Duration::minutes(15),
            interval: Duration::from_secs(1),
            radius_km: 15.0,
            proof_max_bytes: 5 << 20,
        }
    }
}

impl DispatchConfig {
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let defaults = Self::default();
        Ok(Self {
            offer_timeout: positive_setting(lookup, "COURIER_OFFER_TIMEOUT_MS")?
                .map_or(defaults.offer_timeout, |ms| {
                    chrono::Duration::milliseconds(ms as i64)
                }),
            deadline: positive_setting(lookup, "COURIER_DISPATCH_DEADLINE_SECS")?
                .map_or(defaults.deadline, |s| chrono::Duration::seconds(s as i64)),
            interval: positive_setting(lookup, "COURIER_DISPATCH_INTERVAL_MS")?
                .map_or(defaults.interval, Duration::from_millis),
            radius_km: positive_setting(lookup, "COURIER_DISPATCH_RADIUS_KM")?
                .map_or(defaults.radius_km, |km| km as f64),
            proof_max_bytes: positive_setting(lookup, "COURIER_PROOF_MAX_BYTES")?
                .map_or(defaults.proof_max_bytes, |b| {
                    usize::try_from(b).unwrap_or(usize::MAX)
                }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let config = DispatchConfig::from_lookup(&|_| None).unwrap();
        assert_eq!(config.offer_timeout, chrono::Duration::seconds(30));
        assert_eq!(config.deadline, chrono::Duration::minutes(15));
        let config = DispatchConfig::from_lookup(&|n| match n {
            "COURIER_OFFER_TIMEOUT_MS" => Some("250".into()),
            "COURIER_DISPATCH_DEADLINE_SECS" => Some("2".into()),
            "COURIER_DISPATCH_INTERVAL_MS" => Some("20".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(config.offer_timeout, chrono::Duration::milliseconds(250));
        assert_eq!(config.deadline, chrono::Duration::seconds(2));
        assert_eq!(config.interval, Duration::from_millis(20));
        let bad = DispatchConfig::from_lookup(&|n| {
            (n == "COURIER_OFFER_TIMEOUT_MS").then(|| "soon".into())
        });
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("COURIER_OFFER_TIMEOUT_MS")
        );
    }
}
