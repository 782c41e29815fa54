//! The webhook engine's settings, read with the rest of the configuration.

use std::path::PathBuf;
use std::time::Duration;

use crate::infra::settings;

/// Timings and safety switches of webhook delivery; defaults are the spec's values.
#[derive(Clone, Debug, clap::Args)]
pub struct WebhookConfig {
    /// Wait after a webhook attempt's first failure; doubles after each (ten attempts in all).
    #[arg(id = "webhook-retry-base-ms", long = "webhook-retry-base-ms",
          env = "COURIER_WEBHOOK_RETRY_BASE_MS", default_value = "10000",
          value_parser = settings::millis)]
    pub retry_base: Duration,
    /// How long a webhook receiver has to answer (connecting included).
    #[arg(id = "webhook-timeout-ms", long = "webhook-timeout-ms",
          env = "COURIER_WEBHOOK_TIMEOUT_MS", default_value = "10000",
          value_parser = settings::millis)]
    pub timeout: Duration,
    /// Consecutive failed attempts that suspend a webhook endpoint.
    #[arg(id = "webhook-suspend-after", long = "webhook-suspend-after",
          env = "COURIER_WEBHOOK_SUSPEND_AFTER", default_value = "20",
          value_parser = settings::positive_i32)]
    pub suspend_after: i32,
    /// Consecutive failed attempts after which the people who manage a merchant's webhooks
    /// (owners, admins, developers) are mailed that the endpoint is failing, and its console
    /// pages warn, before it is suspended; at or past `COURIER_WEBHOOK_SUSPEND_AFTER` there is
    /// no warning (the suspension is still mailed).
    #[arg(id = "webhook-warn-after", long = "webhook-warn-after",
          env = "COURIER_WEBHOOK_WARN_AFTER", default_value = "10",
          value_parser = settings::positive_i32)]
    pub warn_after: i32,
    /// Attempts per delivery, the first included (the spec's ten; not configurable).
    #[arg(skip = 10_i32)]
    pub max_attempts: i32,
    /// Webhook requests in flight to one endpoint at once, per process.
    #[arg(id = "webhook-endpoint-concurrency", long = "webhook-endpoint-concurrency",
          env = "COURIER_WEBHOOK_ENDPOINT_CONCURRENCY", default_value = "16",
          value_parser = settings::positive_usize)]
    pub endpoint_concurrency: usize,
    /// Webhook requests in flight at once for one merchant (all its endpoints), per process:
    /// its fair share of the send slots, so one merchant's backlog leaves the rest for others.
    #[arg(id = "webhook-merchant-concurrency", long = "webhook-merchant-concurrency",
          env = "COURIER_WEBHOOK_MERCHANT_CONCURRENCY", default_value = "64",
          value_parser = settings::positive_usize)]
    pub merchant_concurrency: usize,
    /// Webhook requests in flight at once, all merchants together, per process.
    #[arg(id = "webhook-concurrency", long = "webhook-concurrency",
          env = "COURIER_WEBHOOK_CONCURRENCY", default_value = "256",
          value_parser = settings::positive_usize)]
    pub concurrency: usize,
    /// `false`: this process records events and serves the webhook API but neither fans events
    /// out nor sends them; processes sharing its database that keep the default deliver them
    /// (instances that only serve the API; maintenance).
    #[arg(id = "webhook-delivery", long = "webhook-delivery",
          env = "COURIER_WEBHOOK_DELIVERY", default_value = "true",
          action = clap::ArgAction::Set, value_parser = settings::flag)]
    pub delivery: bool,
    /// Webhook endpoints one merchant may have in one environment; a registration past it is
    /// refused with `webhook.too_many_endpoints`. Each event is signed and sent once per
    /// endpoint, so the cap bounds what one event can cost.
    #[arg(id = "webhook-max-endpoints", long = "webhook-max-endpoints",
          env = "COURIER_WEBHOOK_MAX_ENDPOINTS", default_value = "16",
          value_parser = settings::positive_i32)]
    pub max_endpoints: i32,
    /// `true` also delivers to loopback, private and other non-public addresses (local
    /// development and tests only).
    #[arg(id = "webhook-allow-private", long = "webhook-allow-private",
          env = "COURIER_WEBHOOK_ALLOW_PRIVATE", default_value = "false",
          action = clap::ArgAction::Set,
        value_parser = settings::flag)]
    pub allow_private: bool,
    /// How often the webhook fan-out and delivery workers look for work nothing woke them for:
    /// events committed by another instance or process that did not announce them, and
    /// retries falling due. Events this instance commits wake its fan-out at once.
    #[arg(id = "webhook-poll-ms", long = "webhook-poll-ms", env = "COURIER_WEBHOOK_POLL_MS",
          default_value = "1000", value_parser = settings::millis)]
    pub poll: Duration,
    /// A PEM file of root certificates trusted for webhook receivers on top of the public
    /// roots (test receivers with their own certificate).
    #[arg(
        id = "webhook-extra-ca",
        long = "webhook-extra-ca",
        env = "COURIER_WEBHOOK_EXTRA_CA"
    )]
    pub extra_ca: Option<PathBuf>,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        settings::from_lookup(|_| None).expect("the defaults are valid")
    }
}

impl WebhookConfig {
    /// How long a claim on a delivery lasts: long enough for one attempt and its record, short
    /// enough that a crashed worker's deliveries are taken over promptly.
    pub fn lease(&self) -> Duration {
        self.timeout * 2 + Duration::from_secs(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_spec_values() {
        let config = settings::from_lookup::<WebhookConfig>(|_| None).unwrap();
        assert_eq!(config.retry_base, Duration::from_secs(10));
        assert_eq!(config.timeout, Duration::from_secs(10));
        assert_eq!(config.suspend_after, 20);
        assert_eq!(config.max_attempts, 10);
        assert!(!config.allow_private);
        assert!(config.delivery);
        assert_eq!(config.poll, Duration::from_secs(1));
        assert_eq!(
            (
                config.concurrency,
                config.merchant_concurrency,
                config.endpoint_concurrency
            ),
            (256, 64, 16)
        );
    }

    #[test]
    fn values_are_read_and_checked() {
        let config = settings::from_lookup::<WebhookConfig>(|n| match n {
            "COURIER_WEBHOOK_RETRY_BASE_MS" => Some("5".into()),
            "COURIER_WEBHOOK_ALLOW_PRIVATE" => Some("true".into()),
            "COURIER_WEBHOOK_POLL_MS" => Some("60000".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(config.retry_base, Duration::from_millis(5));
        assert_eq!(config.poll, Duration::from_secs(60));
        assert!(config.allow_private);
        let never = settings::from_lookup::<WebhookConfig>(|n| {
            (n == "COURIER_WEBHOOK_POLL_MS").then(|| "0".into())
        });
        assert!(
            never
                .unwrap_err()
                .to_string()
                .contains("COURIER_WEBHOOK_POLL_MS")
        );
        let bad = settings::from_lookup::<WebhookConfig>(|n| {
            (n == "COURIER_WEBHOOK_TIMEOUT_MS").then(|| "soon".into())
        });
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("COURIER_WEBHOOK_TIMEOUT_MS")
        );
    }
}
