//! `COURIER_LIVE_PAYMENT_*`, `COURIER_PAYMENT_*` and `COURIER_CHARGE_RETRY_*` (documented in
//! docs/configuration.md).

use std::path::PathBuf;
use std::time::Duration;

use crate::config::{ConfigError, flag_setting, positive_setting};

use super::{CallLimits, RetryPolicy};

#[derive(Clone, Debug)]
pub struct PaymentsConfig {
    /// `COURIER_LIVE_PAYMENT_ADAPTER`: the live payment adapter component (`.wasm`). Unset:
    /// live card operations are refused with `payment.live_unavailable`.
    pub live_adapter: Option<PathBuf>,
    /// `COURIER_LIVE_PAYMENT_CONFIG`: a JSON object of strings the live adapter reads through
    /// its `config` import (provider keys, account ids).
    pub live_config: Option<PathBuf>,
    /// `COURIER_CHARGE_RETRY_BASE_MS` and `COURIER_CHARGE_RETRY_ATTEMPTS`.
    pub retry: RetryPolicy,
    /// `COURIER_PAYMENT_CALLS` and `COURIER_PAYMENT_DEADLINE_MS`.
    pub calls: CallLimits,
    /// `COURIER_PAYMENT_ALLOW_PRIVATE`: adapters may also reach loopback and private
    /// addresses. For tests against a local provider stand-in only.
    pub allow_private: bool,
    /// `COURIER_PAYMENT_EXTRA_CA`: a PEM file of roots adapters trust on top of the public
    /// ones. For tests against a local provider stand-in only.
    pub extra_ca: Option<PathBuf>,
}

impl Default for PaymentsConfig {
    fn default() -> Self {
        Self {
            live_adapter: None,
            live_config: None,
            retry: RetryPolicy {
                base: Duration::from_secs(5),
                max_attempts: 8,
                lease: Duration::from_secs(60),
            },
            calls: CallLimits::default(),
            allow_private: false,
            extra_ca: None,
        }
    }
}

impl PaymentsConfig {
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let defaults = Self::default();
        let base = match positive_setting(lookup, "COURIER_CHARGE_RETRY_BASE_MS")? {
            Some(ms) => Duration::from_millis(ms),
            None => defaults.retry.base,
        };
        let max_attempts = match positive_setting(lookup, "COURIER_CHARGE_RETRY_ATTEMPTS")? {
            Some(n) => u32::try_from(n).unwrap_or(u32::MAX),
            None => defaults.retry.max_attempts,
        };
        let max_calls = match positive_setting(lookup, "COURIER_PAYMENT_CALLS")? {
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
            None => defaults.calls.max_calls,
        };
        let deadline = match positive_setting(lookup, "COURIER_PAYMENT_DEADLINE_MS")? {
            Some(ms) => Duration::from_millis(ms),
            None => defaults.calls.deadline,
        };
        Ok(Self {
            live_adapter: lookup("COURIER_LIVE_PAYMENT_ADAPTER").map(PathBuf::from),
            live_config: lookup("COURIER_LIVE_PAYMENT_CONFIG").map(PathBuf::from),
            retry: RetryPolicy {
                base,
                max_attempts,
                lease: defaults.retry.lease,
            },
            calls: CallLimits {
                max_calls,
                deadline,
            },
            allow_private: flag_setting(lookup, "COURIER_PAYMENT_ALLOW_PRIVATE")?,
            extra_ca: lookup("COURIER_PAYMENT_EXTRA_CA").map(PathBuf::from),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let config = PaymentsConfig::from_lookup(&|_| None).unwrap();
        assert_eq!(config.retry.base, Duration::from_secs(5));
        assert_eq!(config.retry.max_attempts, 8);
        assert!(config.live_adapter.is_none());
        assert_eq!(config.calls.max_calls, 64);
        assert_eq!(config.calls.deadline, Duration::from_secs(10));
        assert!(!config.allow_private);
        let config = PaymentsConfig::from_lookup(&|n| match n {
            "COURIER_CHARGE_RETRY_BASE_MS" => Some("20".into()),
            "COURIER_CHARGE_RETRY_ATTEMPTS" => Some("3".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(config.retry.base, Duration::from_millis(20));
        assert_eq!(config.retry.max_attempts, 3);
        let bad = PaymentsConfig::from_lookup(&|n| {
            (n == "COURIER_CHARGE_RETRY_ATTEMPTS").then(|| "0".into())
        });
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("COURIER_CHARGE_RETRY_ATTEMPTS")
        );
    }
}
