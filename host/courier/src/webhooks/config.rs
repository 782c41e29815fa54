//! The webhook engine's settings, read with the rest of the configuration.

use std::path::PathBuf;
use std::time::Duration;

use crate::config::{ConfigError, flag_setting};

/// Timings and safety switches of webhook delivery; defaults are the spec's values.
#[derive(Clone, Debug)]
pub struct WebhookConfig {
    /// `COURIER_WEBHOOK_RETRY_BASE_MS`: wait after the first failed attempt; doubles after each.
    pub retry_base: Duration,
    /// `COURIER_WEBHOOK_TIMEOUT_MS`: how long a receiver has to answer.
    pub timeout: Duration,
    /// `COURIER_WEBHOOK_SUSPEND_AFTER`: consecutive failures that suspend an endpoint.
    pub suspend_after: i32,
    /// Attempts per delivery, the first included (the spec's ten; not configurable).
    pub max_attempts: i32,
    /// `COURIER_WEBHOOK_ENDPOINT_CONCURRENCY`: requests in flight to one endpoint at once.
    pub endpoint_concurrency: usize,
    /// `COURIER_WEBHOOK_ALLOW_PRIVATE`: also deliver to loopback and private addresses.
    pub allow_private: bool,
    /// `COURIER_WEBHOOK_EXTRA_CA`: a PEM file of roots trusted on top of the public ones.
    pub extra_ca: Option<PathBuf>,
    /// `COURIER_WEBHOOK_POLL_MS`: how often the fan-out and the delivery workers look for work
    /// nothing woke them for (events committed by another process, retries falling due).
    pub poll: Duration,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        Self {
            retry_base: Duration::from_secs(10),
            timeout: Duration::from_secs(10),
            suspend_after: 20,
            max_attempts: 10,
            endpoint_concurrency: 16,
            allow_private: false,
            extra_ca: None,
            poll: Duration::from_secs(1),
        }
    }
}

impl WebhookConfig {
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let defaults = Self::default();
        let millis = |name: &'static str, default: Duration| -> Result<Duration, ConfigError> {
            Ok(match parse::<u64>(lookup, name)? {
                Some(ms) if ms > 0 => Duration::from_millis(ms),
                Some(_) => return Err(invalid(name, "must be at least 1")),
                None => default,
            })
        };
        let suspend_after = match parse::<i32>(lookup, "COURIER_WEBHOOK_SUSPEND_AFTER")? {
            Some(n) if n > 0 => n,
            Some(_) => {
                return Err(invalid(
                    "COURIER_WEBHOOK_SUSPEND_AFTER",
                    "must be at least 1",
                ));
            }
            None => defaults.suspend_after,
        };
        let endpoint_concurrency =
            match parse::<usize>(lookup, "COURIER_WEBHOOK_ENDPOINT_CONCURRENCY")? {
                Some(n) if n > 0 => n,
                Some(_) => {
                    return Err(invalid(
                        "COURIER_WEBHOOK_ENDPOINT_CONCURRENCY",
                        "must be at least 1",
                    ));
                }
                None => defaults.endpoint_concurrency,
            };
        let allow_private = flag_setting(lookup, "COURIER_WEBHOOK_ALLOW_PRIVATE")?;
        Ok(Self {
            retry_base: millis("COURIER_WEBHOOK_RETRY_BASE_MS", defaults.retry_base)?,
            timeout: millis("COURIER_WEBHOOK_TIMEOUT_MS", defaults.timeout)?,
            suspend_after,
            max_attempts: defaults.max_attempts,
            endpoint_concurrency,
            allow_private,
            extra_ca: lookup("COURIER_WEBHOOK_EXTRA_CA").map(PathBuf::from),
            poll: millis("COURIER_WEBHOOK_POLL_MS", defaults.poll)?,
        })
    }

    /// How long a claim on a delivery lasts: long enough for one attempt and its record, short
    /// enough that a crashed worker's deliveries are taken over promptly.
    pub fn lease(&self) -> Duration {
        self.timeout * 2 + Duration::from_secs(1)
    }
}

fn invalid(name: &'static str, reason: &str) -> ConfigError {
    ConfigError::Invalid {
        name,
        reason: reason.to_owned(),
    }
}

fn parse<T: std::str::FromStr>(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<T>, ConfigError>
where
    T::Err: std::fmt::Display,
{
    lookup(name)
        .map(|raw| {
            raw.trim()
                .parse()
                .map_err(|e: T::Err| invalid(name, &e.to_string()))
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_spec_values() {
        let config = WebhookConfig::from_lookup(&|_| None).unwrap();
        assert_eq!(config.retry_base, Duration::from_secs(10));
        assert_eq!(config.timeout, Duration::from_secs(10));
        assert_eq!(config.suspend_after, 20);
        assert_eq!(config.max_attempts, 10);
        assert!(!config.allow_private);
        assert_eq!(config.poll, Duration::from_secs(1));
    }

    #[test]
    fn values_are_read_and_checked() {
        let config = WebhookConfig::from_lookup(&|n| match n {
            "COURIER_WEBHOOK_RETRY_BASE_MS" => Some("5".into()),
            "COURIER_WEBHOOK_ALLOW_PRIVATE" => Some("true".into()),
            "COURIER_WEBHOOK_POLL_MS" => Some("60000".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(config.retry_base, Duration::from_millis(5));
        assert_eq!(config.poll, Duration::from_secs(60));
        assert!(config.allow_private);
        let never =
            WebhookConfig::from_lookup(&|n| (n == "COURIER_WEBHOOK_POLL_MS").then(|| "0".into()));
        assert!(
            never
                .unwrap_err()
                .to_string()
                .contains("COURIER_WEBHOOK_POLL_MS")
        );
        let bad = WebhookConfig::from_lookup(&|n| {
            (n == "COURIER_WEBHOOK_TIMEOUT_MS").then(|| "soon".into())
        });
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("COURIER_WEBHOOK_TIMEOUT_MS")
        );
    }
}
