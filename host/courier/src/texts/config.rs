//! `COURIER_SMS_*` (documented in docs/configuration.md).

use std::time::Duration;

use super::gateway::GatewayConfig;
use crate::config::{ConfigError, positive_setting};
use courier_domain::text::MessageTemplate;

#[derive(Clone, Debug)]
pub struct TextsConfig {
    /// `COURIER_SMS_GATEWAY_URL` (+ `_USERNAME`, `_PASSWORD`, `_TIMEOUT_MS`). Unset: live
    /// texts are recorded as skipped (`no_gateway`).
    pub gateway: Option<GatewayConfig>,
    /// `COURIER_SMS_TEMPLATE`.
    pub template: MessageTemplate,
    /// `COURIER_SMS_SENDER`: the sender name when the merchant has not set one.
    pub default_sender: String,
    /// `COURIER_SMS_RETRY_BASE_MS`: the wait after the first failed attempt; it doubles.
    pub retry_base: Duration,
    /// `COURIER_SMS_ATTEMPTS`: attempts in all before a text is given up as failed.
    pub max_attempts: u32,
    /// How long one instance may hold a text it is sending before another takes it over.
    pub lease: Duration,
}

impl Default for TextsConfig {
    fn default() -> Self {
        Self {
            gateway: None,
            template: MessageTemplate::default(),
            default_sender: "Courier".to_owned(),
            retry_base: Duration::from_secs(5),
            max_attempts: 8,
            lease: Duration::from_secs(60),
        }
    }
}

impl TextsConfig {
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let defaults = Self::default();
        let invalid = |name: &'static str, reason: String| ConfigError::Invalid { name, reason };
        let gateway = match lookup("COURIER_SMS_GATEWAY_URL") {
            None => None,
            Some(raw) => {
                let url = reqwest::Url::parse(raw.trim())
                    .map_err(|e| invalid("COURIER_SMS_GATEWAY_URL", e.to_string()))?;
                if !matches!(url.scheme(), "http" | "https") {
                    return Err(invalid(
                        "COURIER_SMS_GATEWAY_URL",
                        "must be an http or https URL".into(),
                    ));
                }
                Some(GatewayConfig {
                    url,
                    username: lookup("COURIER_SMS_GATEWAY_USERNAME"),
                    password: lookup("COURIER_SMS_GATEWAY_PASSWORD"),
                    timeout: millis(lookup, "COURIER_SMS_GATEWAY_TIMEOUT_MS")?
                        .unwrap_or(Duration::from_secs(10)),
                })
            }
        };
        let template = match lookup("COURIER_SMS_TEMPLATE") {
            None => defaults.template,
            Some(raw) => MessageTemplate::parse(&raw)
                .map_err(|e| invalid("COURIER_SMS_TEMPLATE", e.to_string()))?,
        };
        Ok(Self {
            gateway,
            template,
            default_sender: lookup("COURIER_SMS_SENDER").unwrap_or(defaults.default_sender),
            retry_base: millis(lookup, "COURIER_SMS_RETRY_BASE_MS")?.unwrap_or(defaults.retry_base),
            max_attempts: match positive_setting(lookup, "COURIER_SMS_ATTEMPTS")? {
                Some(n) => u32::try_from(n).unwrap_or(u32::MAX),
                None => defaults.max_attempts,
            },
            lease: defaults.lease,
        })
    }
}

fn millis(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<Duration>, ConfigError> {
    Ok(positive_setting(lookup, name)?.map(Duration::from_millis))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let config = TextsConfig::from_lookup(&|_| None).unwrap();
        assert!(config.gateway.is_none());
        assert_eq!(config.max_attempts, 8);
        let config = TextsConfig::from_lookup(&|n| match n {
            "COURIER_SMS_GATEWAY_URL" => Some("https://sms.example/send".into()),
            "COURIER_SMS_GATEWAY_USERNAME" => Some("acct".into()),
            "COURIER_SMS_GATEWAY_PASSWORD" => Some("hunter2".into()),
            "COURIER_SMS_RETRY_BASE_MS" => Some("20".into()),
            _ => None,
        })
        .unwrap();
        let gateway = config.gateway.unwrap();
        assert_eq!(gateway.url.as_str(), "https://sms.example/send");
        assert!(!format!("{gateway:?}").contains("hunter2"));
        assert_eq!(config.retry_base, Duration::from_millis(20));
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (name, value) in [
            ("COURIER_SMS_GATEWAY_URL", "ftp://x/"),
            ("COURIER_SMS_TEMPLATE", "no link"),
            ("COURIER_SMS_ATTEMPTS", "0"),
        ] {
            let error = TextsConfig::from_lookup(&|n| (n == name).then(|| value.into()))
                .unwrap_err()
                .to_string();
            assert!(error.contains(name), "{error}");
        }
    }
}
