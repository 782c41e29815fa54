//! `COURIER_SMS_*` (documented in docs/configuration.md).

use std::time::Duration;

use courier_domain::text::MessageTemplate;

use super::gateway::GatewayConfig;
use crate::infra::settings;

#[derive(Clone, Debug, clap::Args)]
pub struct TextsConfig {
    /// The HTTP SMS gateway customer texts are posted to (see [customer
    /// texts](tracking-and-texts.md#customer-texts)). Unset: live texts are recorded as skipped
    /// (`no_gateway`).
    #[arg(id = "sms-gateway-url", long = "sms-gateway-url", env = "COURIER_SMS_GATEWAY_URL",
          value_parser = gateway_url)]
    pub gateway_url: Option<reqwest::Url>,
    /// HTTP Basic user name for the gateway.
    #[arg(
        id = "sms-gateway-username",
        long = "sms-gateway-username",
        env = "COURIER_SMS_GATEWAY_USERNAME"
    )]
    pub gateway_username: Option<String>,
    /// HTTP Basic password for the gateway.
    #[arg(
        id = "sms-gateway-password",
        long = "sms-gateway-password",
        env = "COURIER_SMS_GATEWAY_PASSWORD",
        value_parser = settings::secret
    )]
    pub gateway_password: Option<settings::Secret>,
    /// How long the gateway has to answer one text.
    #[arg(id = "sms-gateway-timeout-ms", long = "sms-gateway-timeout-ms",
          env = "COURIER_SMS_GATEWAY_TIMEOUT_MS", default_value = "10000",
          value_parser = settings::millis)]
    pub gateway_timeout: Duration,
    /// The text; placeholders `{sender}`, `{reference}`, `{tracking_url}` (required).
    #[arg(id = "sms-template", long = "sms-template", env = "COURIER_SMS_TEMPLATE",
          default_value = MessageTemplate::DEFAULT, value_parser = template)]
    pub template: MessageTemplate,
    /// Sender name of texts whose merchant has not set one.
    #[arg(
        id = "sms-sender",
        long = "sms-sender",
        env = "COURIER_SMS_SENDER",
        default_value = "Courier"
    )]
    pub default_sender: String,
    /// Wait after a text's first failed attempt; doubles after each.
    #[arg(id = "sms-retry-base-ms", long = "sms-retry-base-ms", env = "COURIER_SMS_RETRY_BASE_MS",
          default_value = "5000", value_parser = settings::millis)]
    pub retry_base: Duration,
    /// Attempts in all before a text is given up as `failed`.
    #[arg(id = "sms-attempts", long = "sms-attempts", env = "COURIER_SMS_ATTEMPTS",
          default_value = "8", value_parser = settings::positive_u32)]
    pub max_attempts: u32,
    /// How long one instance may hold a text it is sending before another takes it over.
    #[arg(skip = Duration::from_secs(60))]
    pub lease: Duration,
}

impl Default for TextsConfig {
    fn default() -> Self {
        settings::from_lookup(|_| None).expect("the defaults are valid")
    }
}

impl TextsConfig {
    /// The gateway texts are sent through, if one is configured.
    pub fn gateway(&self) -> Option<GatewayConfig> {
        Some(GatewayConfig {
            url: self.gateway_url.clone()?,
            username: self.gateway_username.clone(),
            password: self
                .gateway_password
                .as_ref()
                .map(|p| p.expose().to_owned()),
            timeout: self.gateway_timeout,
        })
    }
}

fn gateway_url(raw: &str) -> Result<reqwest::Url, String> {
    let url = reqwest::Url::parse(raw.trim()).map_err(|e| e.to_string())?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        _ => Err("must be an http or https URL".to_owned()),
    }
}

fn template(raw: &str) -> Result<MessageTemplate, String> {
    MessageTemplate::parse(raw).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let config = settings::from_lookup::<TextsConfig>(|_| None).unwrap();
        assert!(config.gateway().is_none());
        assert_eq!(config.max_attempts, 8);
        let config = settings::from_lookup::<TextsConfig>(|n| match n {
            "COURIER_SMS_GATEWAY_URL" => Some("https://sms.example/send".into()),
            "COURIER_SMS_GATEWAY_USERNAME" => Some("acct".into()),
            "COURIER_SMS_GATEWAY_PASSWORD" => Some("hunter2".into()),
            "COURIER_SMS_RETRY_BASE_MS" => Some("20".into()),
            _ => None,
        })
        .unwrap();
        let gateway = config.gateway().unwrap();
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
            let error = settings::from_lookup::<TextsConfig>(|n| (n == name).then(|| value.into()))
                .unwrap_err()
                .to_string();
            assert!(error.contains(name), "{error}");
        }
    }
}
