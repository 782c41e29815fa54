//! Service configuration, read from the environment (documented in docs/configuration.md).

use std::net::SocketAddr;
use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("{name} is not valid: {reason}")]
    Invalid { name: &'static str, reason: String },
}

/// Everything the service reads from its environment.
#[derive(Clone, Debug)]
pub struct Config {
    /// `COURIER_LISTEN`: address the HTTP server binds.
    pub listen: SocketAddr,
    /// `DATABASE_URL`: when unset, a private cluster under `data_dir/pg` is used.
    pub database_url: Option<String>,
    /// `COURIER_DATA_DIR`: embedded Postgres, the secret key file, caches.
    pub data_dir: PathBuf,
    /// `COURIER_ADMIN_TOKEN`: bearer token for the operator API.
    pub admin_token: Option<String>,
    /// `COURIER_SECRET_KEY`: 64 hex digits; keys the credential hashes. When unset, a key is
    /// generated once and kept in `data_dir/secret.key`.
    pub secret_key: Option<String>,
    /// `COURIER_DB_POOL_SIZE`: connections per process.
    pub db_pool_size: u32,
    /// `COURIER_MAX_BODY_BYTES`: largest accepted request body.
    pub max_body_bytes: usize,
    /// `COURIER_MARKETS_FILE`: the markets (TOML); unset means the built-in demo market.
    pub markets_file: Option<PathBuf>,
    /// `COURIER_PLUGIN_INSTANCES`: plugin calls that may run at once in this process.
    pub plugin_instances: u32,
    /// `COURIER_QUOTE_TTL_SECS`: how long a quote can be booked.
    pub quote_lifetime: chrono::Duration,
    /// `COURIER_WEBHOOK_*`: webhook delivery timings and safety switches.
    pub webhooks: crate::webhooks::WebhookConfig,
    /// `COURIER_LIVE_PAYMENT_*`, `COURIER_CHARGE_RETRY_*`: payment adapters and charge retries.
    pub payments: crate::payments::PaymentsConfig,
    /// `COURIER_AUTH_CACHE_MS`: how long a verified credential is trusted without a database
    /// look-up; the bound on how long a revoked key keeps working.
    pub auth_cache: std::time::Duration,
    /// `COURIER_PUBLIC_URL`: the service's public address, for tracking links.
    pub public_url: String,
    /// `COURIER_SCHEDULER_INTERVAL_MS`: how often due work (scheduled searches) is looked for.
    pub scheduler_interval: std::time::Duration,
    /// `COURIER_TRACKING_TTL_SECS`, `COURIER_TRACKING_POLL_MS`: the public tracking page.
    pub tracking: crate::tracking::TrackingConfig,
    /// `COURIER_HEADER_READ_TIMEOUT_MS`: how long a client has to send a request's headers.
    pub header_read_timeout: std::time::Duration,
    /// `COURIER_SMS_*`: the SMS gateway and the customer texts' wording and retries.
    pub texts: crate::texts::TextsConfig,
    /// `COURIER_OFFER_TIMEOUT_MS`, `COURIER_DISPATCH_*`, `COURIER_PROOF_MAX_BYTES`: dispatch.
    pub dispatch: crate::dispatch::DispatchConfig,
    /// `COURIER_OPERATOR_TOKENS`: named operator tokens, `name=token,name=token`.
    pub operator_tokens: Vec<OperatorToken>,
    /// `COURIER_KEY_USAGE_FLUSH_MS`: how often the keys' `last_used_at` is written.
    pub key_usage_flush: std::time::Duration,
    /// `COURIER_RATE_LIMIT_*`, `COURIER_INSTANCES`: per-key request budgets.
    pub rate_limits: crate::rate_limit::RateLimitConfig,
    /// `COURIER_REQUEST_TIMEOUT_MS`: how long a request may take before it is abandoned.
    pub request_timeout: std::time::Duration,
    /// `COURIER_SANDBOX_*`: the simulator that moves test-environment jobs.
    pub sandbox: crate::sandbox::SandboxConfig,
}

/// One named operator token; the name is what the audit trail records.
#[derive(Clone)]
pub struct OperatorToken {
    pub name: String,
    pub token: String,
}

impl std::fmt::Debug for OperatorToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorToken")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Parses `name=token,name=token`: names of letters, digits, `.`, `_`, `-`, each used once.
fn operator_tokens(raw: Option<String>) -> Result<Vec<OperatorToken>, ConfigError> {
    let invalid = |reason: String| ConfigError::Invalid {
        name: "COURIER_OPERATOR_TOKENS",
        reason,
    };
    let Some(raw) = raw else {
        return Ok(Vec::new());
    };
    let mut tokens: Vec<OperatorToken> = Vec::new();
    for (position, entry) in raw.split(',').map(str::trim).enumerate() {
        let (name, token) = entry
            .split_once('=')
            .map(|(n, t)| (n.trim(), t.trim()))
            .ok_or_else(|| invalid(format!("entry {} is not name=token", position + 1)))?;
        let name_ok = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !name_ok {
            return Err(invalid(format!(
                "entry {}: a name is 1 to 64 letters, digits, `.`, `_` or `-`",
                position + 1
            )));
        }
        if token.is_empty() {
            return Err(invalid(format!("the token of {name} is empty")));
        }
        if tokens.iter().any(|t| t.name == name) {
            return Err(invalid(format!("{name} is named twice")));
        }
        tokens.push(OperatorToken {
            name: name.to_owned(),
            token: token.to_owned(),
        });
    }
    Ok(tokens)
}

impl Config {
    pub const DEFAULT_LISTEN: &'static str = "127.0.0.1:8080";

    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    /// Reads the configuration through `lookup`, so tests can supply their own values.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let listen = lookup("COURIER_LISTEN").unwrap_or_else(|| Self::DEFAULT_LISTEN.into());
        let listen = listen.parse().map_err(|e| ConfigError::Invalid {
            name: "COURIER_LISTEN",
            reason: format!("{e}"),
        })?;
        Ok(Self {
            listen,
            database_url: lookup("DATABASE_URL"),
            data_dir: lookup("COURIER_DATA_DIR")
                .unwrap_or_else(|| "./var".into())
                .into(),
            admin_token: lookup("COURIER_ADMIN_TOKEN"),
            secret_key: lookup("COURIER_SECRET_KEY"),
            db_pool_size: parse_or(&lookup, "COURIER_DB_POOL_SIZE", 16)?,
            max_body_bytes: parse_or(&lookup, "COURIER_MAX_BODY_BYTES", 256 * 1024)?,
            markets_file: lookup("COURIER_MARKETS_FILE").map(PathBuf::from),
            plugin_instances: parse_or(&lookup, "COURIER_PLUGIN_INSTANCES", 256)?,
            auth_cache: std::time::Duration::from_millis(parse_or(
                &lookup,
                "COURIER_AUTH_CACHE_MS",
                5000,
            )?),
            public_url: lookup("COURIER_PUBLIC_URL")
                .unwrap_or_else(|| format!("http://{listen}"))
                .trim_end_matches('/')
                .to_owned(),
            scheduler_interval: std::time::Duration::from_millis(parse_or(
                &lookup,
                "COURIER_SCHEDULER_INTERVAL_MS",
                1000,
            )?),
            quote_lifetime: chrono::Duration::seconds(parse_or(
                &lookup,
                "COURIER_QUOTE_TTL_SECS",
                600,
            )?),
            webhooks: crate::webhooks::WebhookConfig::from_lookup(&lookup)?,
            payments: crate::payments::PaymentsConfig::from_lookup(&lookup)?,
            tracking: tracking_config(&lookup)?,
            header_read_timeout: std::time::Duration::from_millis(parse_or(
                &lookup,
                "COURIER_HEADER_READ_TIMEOUT_MS",
                10_000,
            )?),
            texts: crate::texts::TextsConfig::from_lookup(&lookup)?,
            dispatch: crate::dispatch::DispatchConfig::from_lookup(&lookup)?,
            operator_tokens: operator_tokens(lookup("COURIER_OPERATOR_TOKENS"))?,
            key_usage_flush: positive_millis(&lookup, "COURIER_KEY_USAGE_FLUSH_MS", 5000)?,
            rate_limits: crate::rate_limit::RateLimitConfig::from_lookup(&lookup)?,
            request_timeout: positive_millis(&lookup, "COURIER_REQUEST_TIMEOUT_MS", 30_000)?,
            sandbox: crate::sandbox::SandboxConfig::from_lookup(&lookup)?,
        })
    }
}

fn tracking_config(
    lookup: &impl Fn(&str) -> Option<String>,
) -> Result<crate::tracking::TrackingConfig, ConfigError> {
    let defaults = crate::tracking::TrackingConfig::default();
    let ttl_secs: i64 = parse_or(
        lookup,
        "COURIER_TRACKING_TTL_SECS",
        defaults.ttl.num_seconds(),
    )?;
    if ttl_secs < 0 {
        return Err(ConfigError::Invalid {
            name: "COURIER_TRACKING_TTL_SECS",
            reason: "must not be negative".into(),
        });
    }
    let poll_ms: u64 = parse_or(
        lookup,
        "COURIER_TRACKING_POLL_MS",
        u64::try_from(defaults.poll_interval.as_millis()).unwrap_or(5000),
    )?;
    // Faster than this, open pages would load the service more than they help anyone.
    if poll_ms < 250 {
        return Err(ConfigError::Invalid {
            name: "COURIER_TRACKING_POLL_MS",
            reason: "must be at least 250".into(),
        });
    }
    Ok(crate::tracking::TrackingConfig {
        ttl: chrono::Duration::seconds(ttl_secs),
        poll_interval: std::time::Duration::from_millis(poll_ms),
    })
}

/// `true`/`1` or `false`/`0`; false when `name` is unset.
pub fn flag_setting(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<bool, ConfigError> {
    match lookup(name).as_deref() {
        None | Some("false") | Some("0") => Ok(false),
        Some("true") | Some("1") => Ok(true),
        Some(_) => Err(ConfigError::Invalid {
            name,
            reason: "use true or false".into(),
        }),
    }
}

/// A whole number above zero (capped so durations made from it cannot overflow), or None
/// when `name` is unset.
pub fn positive_setting(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<u64>, ConfigError> {
    let Some(raw) = lookup(name) else {
        return Ok(None);
    };
    match raw.trim().parse::<u64>() {
        Ok(n) if n > 0 && n <= 1 << 40 => Ok(Some(n)),
        _ => Err(ConfigError::Invalid {
            name,
            reason: format!("{raw:?} is not a whole number above zero"),
        }),
    }
}

/// A duration in milliseconds of at least 1.
fn positive_millis(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    default: u64,
) -> Result<std::time::Duration, ConfigError> {
    match parse_or(lookup, name, default)? {
        0 => Err(ConfigError::Invalid {
            name,
            reason: "must be at least 1".into(),
        }),
        ms => Ok(std::time::Duration::from_millis(ms)),
    }
}

fn parse_or<T: std::str::FromStr>(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    default: T,
) -> Result<T, ConfigError>
where
    T::Err: std::fmt::Display,
{
    match lookup(name) {
        None => Ok(default),
        Some(raw) => raw
            .trim()
            .parse()
            .map_err(|e: T::Err| ConfigError::Invalid {
                name,
                reason: e.to_string(),
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_apply_when_nothing_is_set() {
        let config = Config::from_lookup(|_| None).unwrap();
        assert_eq!(config.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(config.data_dir, PathBuf::from("./var"));
        assert!(config.database_url.is_none());
        assert_eq!(config.db_pool_size, 16);
        assert_eq!(config.tracking.ttl, chrono::Duration::days(7));
        assert_eq!(config.tracking.poll_interval.as_millis(), 5000);
    }

    #[test]
    fn tracking_settings_are_read_and_checked() {
        let config = Config::from_lookup(|n| match n {
            "COURIER_TRACKING_TTL_SECS" => Some("60".into()),
            "COURIER_TRACKING_POLL_MS" => Some("500".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(config.tracking.ttl, chrono::Duration::seconds(60));
        assert_eq!(config.tracking.poll_interval.as_millis(), 500);
        let err = Config::from_lookup(|n| (n == "COURIER_TRACKING_POLL_MS").then(|| "10".into()));
        assert!(
            err.unwrap_err()
                .to_string()
                .contains("COURIER_TRACKING_POLL_MS")
        );
        let err = Config::from_lookup(|n| (n == "COURIER_TRACKING_TTL_SECS").then(|| "-1".into()));
        assert!(
            err.unwrap_err()
                .to_string()
                .contains("COURIER_TRACKING_TTL_SECS")
        );
    }

    #[test]
    fn operator_tokens_are_named_and_checked() {
        let tokens = operator_tokens(Some("alice=tok1, bob = tok=2".into())).unwrap();
        assert_eq!(tokens.len(), 2);
        assert_eq!(
            (tokens[0].name.as_str(), tokens[0].token.as_str()),
            ("alice", "tok1")
        );
        assert_eq!(
            (tokens[1].name.as_str(), tokens[1].token.as_str()),
            ("bob", "tok=2")
        );
        assert!(
            !format!("{tokens:?}").contains("tok1"),
            "tokens stay out of logs"
        );
        for bad in [
            "alice",
            "=tok",
            "alice=",
            "al ice=tok",
            "a=1,a=2",
            "a=1,,b=2",
        ] {
            let err = operator_tokens(Some(bad.into())).unwrap_err().to_string();
            assert!(err.contains("COURIER_OPERATOR_TOKENS"), "{bad}: {err}");
        }
        assert!(operator_tokens(None).unwrap().is_empty());
    }

    #[test]
    fn a_zero_timeout_is_refused() {
        let err = Config::from_lookup(|n| (n == "COURIER_REQUEST_TIMEOUT_MS").then(|| "0".into()));
        assert!(
            err.unwrap_err()
                .to_string()
                .contains("COURIER_REQUEST_TIMEOUT_MS")
        );
    }

    #[test]
    fn bad_values_name_the_variable() {
        let err = Config::from_lookup(|n| (n == "COURIER_LISTEN").then(|| "nope".into()));
        assert!(err.unwrap_err().to_string().contains("COURIER_LISTEN"));
        let err = Config::from_lookup(|n| (n == "COURIER_DB_POOL_SIZE").then(|| "-1".into()));
        assert!(
            err.unwrap_err()
                .to_string()
                .contains("COURIER_DB_POOL_SIZE")
        );
    }
}
