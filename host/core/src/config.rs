//! Service configuration, read from the environment (documented in docs/configuration.md).
//! Each feature declares its own settings (`crate::infra::settings`); this root assembles them.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::infra::settings;
pub use crate::infra::settings::ConfigError;

/// Everything the service reads from its environment.
#[derive(Clone, Debug, clap::Args)]
pub struct Config {
    /// Address the HTTP server binds.
    #[arg(id = "listen", long = "listen", env = "COURIER_LISTEN",
          default_value = Config::DEFAULT_LISTEN, value_parser = socket_address)]
    pub listen: SocketAddr,
    /// Serve the operator console (`/ops/`) only on this address, a listener of its own, so it
    /// need not share an origin (or a network) with the public pages; the main listener then
    /// answers 404 under `/ops/`. Unset: `/ops/` is served beside everything else.
    #[arg(id = "ops-listen", long = "ops-listen", env = "COURIER_OPS_LISTEN",
          value_parser = socket_address)]
    pub ops_listen: Option<SocketAddr>,
    /// The operator console's public address, for the links in operator invitations. Unset:
    /// `http://$COURIER_OPS_LISTEN` when that is set, else `COURIER_PUBLIC_URL`.
    #[arg(
        id = "ops-public-url",
        long = "ops-public-url",
        env = "COURIER_OPS_PUBLIC_URL"
    )]
    pub ops_public_url_setting: Option<String>,
    /// A PostgreSQL URL. Unset: the embedded cluster under `$COURIER_DATA_DIR/pg`.
    #[arg(id = "database-url", long = "database-url", env = "DATABASE_URL",
          value_parser = settings::secret)]
    pub database_url: Option<settings::Secret>,
    /// The embedded cluster, the generated secret key, prepared road networks (`networks/`), caches.
    #[arg(
        id = "data-dir",
        long = "data-dir",
        env = "COURIER_DATA_DIR",
        default_value = "./var"
    )]
    pub data_dir: PathBuf,
    /// 64 hex digits (32 bytes). Keys the hashes of API secrets. Unset: generated once into
    /// `$COURIER_DATA_DIR/secret.key` (mode 0600). Every instance sharing a database must use
    /// the same key: a process whose key is not the one the database was first used with
    /// refuses to start.
    #[arg(id = "secret-key", long = "secret-key", env = "COURIER_SECRET_KEY",
          value_parser = settings::secret)]
    pub secret_key: Option<settings::Secret>,
    /// Bearer token of the operator API (`/admin/v1`), operator `admin` in the audit trail. The
    /// operator API is closed while neither this nor `COURIER_OPERATOR_TOKENS` is set.
    /// At least 32 characters.
    #[arg(id = "admin-token", long = "admin-token", env = "COURIER_ADMIN_TOKEN",
          value_parser = operator_secret)]
    pub admin_token: Option<settings::Secret>,
    /// Named operator tokens, `name=token,name=token` (names: 1–64 letters, digits, `.`, `_`,
    /// `-`, each once; tokens: at least 32 characters, no two alike). The name is who the audit
    /// trail records.
    #[arg(id = "operator-tokens", long = "operator-tokens", env = "COURIER_OPERATOR_TOKENS",
          value_delimiter = ',', value_parser = operator_token)]
    pub operator_tokens: Vec<crate::auth::operators::OperatorToken>,
    /// Bearer token `GET /metrics` requires (at least 32 characters); unset, the metrics are
    /// public. They name routes and counts, never merchants or paths.
    #[arg(id = "metrics-token", long = "metrics-token", env = "COURIER_METRICS_TOKEN",
          value_parser = operator_secret)]
    pub metrics_token: Option<settings::Secret>,
    /// Failed operator sign-ins one client address may make per window
    /// (`COURIER_OPERATOR_FAILURE_WINDOW_MS`); past them it is answered 429 until the window
    /// ends, the right token included. Each failure is in the audit trail.
    #[arg(id = "operator-failure-limit", long = "operator-failure-limit",
          env = "COURIER_OPERATOR_FAILURE_LIMIT", default_value = "10",
          value_parser = settings::positive_u32)]
    pub operator_failure_limit: u32,
    /// Requests with wrong, unknown or malformed merchant or courier credentials one client
    /// address may make per window (`COURIER_AUTH_FAILURE_WINDOW_MS`); past them its requests
    /// are answered 429 `rate_limited` before any lookup, but for merchant credentials
    /// already verified in memory.
    #[arg(id = "auth-failure-limit", long = "auth-failure-limit",
          env = "COURIER_AUTH_FAILURE_LIMIT", default_value = "100",
          value_parser = settings::positive_u32)]
    pub auth_failure_limit: u32,
    /// Past its `COURIER_AUTH_FAILURE_LIMIT`, an address's refusals are answered at most this
    /// many a second; a faster client's requests wait their turn (up to a second, past which
    /// the refusal closes the connection), so a flood costs a bounded share of the service's
    /// time. 0: no pacing.
    #[arg(id = "auth-refusals-per-second", long = "auth-refusals-per-second",
          env = "COURIER_AUTH_REFUSALS_PER_SECOND", default_value = "1000",
          value_parser = clap::value_parser!(u32))]
    pub auth_refusals_per_second: u32,
    /// The window of `COURIER_AUTH_FAILURE_LIMIT`.
    #[arg(id = "auth-failure-window-ms", long = "auth-failure-window-ms",
          env = "COURIER_AUTH_FAILURE_WINDOW_MS", default_value = "60000",
          value_parser = settings::millis)]
    pub auth_failure_window: Duration,
    /// How long a merchant console session lasts from sign-in; it ends sooner at sign-out,
    /// when it is revoked from the sessions page, or when its person leaves the team.
    #[arg(id = "console-session-ms", long = "console-session-ms",
          env = "COURIER_CONSOLE_SESSION_MS", default_value = "28800000",
          value_parser = settings::millis)]
    pub console_session: Duration,
    /// How long a courier stays signed in to the couriers' app (`/courier/`) from sign-in: a
    /// shift; it ends sooner at sign-out or when the courier is suspended.
    #[arg(id = "courier-app-session-ms", long = "courier-app-session-ms",
          env = "COURIER_APP_SESSION_MS", default_value = "50400000",
          value_parser = settings::millis)]
    pub courier_app_session: Duration,
    /// Requests one client address may make to the public routes (`/track/*`, `/healthz`,
    /// `/readyz`, `/metrics`, `/v1/openapi.json`) per window (`COURIER_PUBLIC_REQUEST_WINDOW_MS`);
    /// past them it is answered 429 `rate_limited` with `Retry-After` until the window ends.
    #[arg(id = "public-request-limit", long = "public-request-limit",
          env = "COURIER_PUBLIC_REQUEST_LIMIT", default_value = "1200",
          value_parser = settings::positive_u32)]
    pub public_request_limit: u32,
    /// The window of `COURIER_PUBLIC_REQUEST_LIMIT`.
    #[arg(id = "public-request-window-ms", long = "public-request-window-ms",
          env = "COURIER_PUBLIC_REQUEST_WINDOW_MS", default_value = "60000",
          value_parser = settings::millis)]
    pub public_request_window: Duration,
    /// Tracking-page lookups (`/track/*`) in progress at once, per process; one past it is
    /// answered 503 `service.busy` with `Retry-After: 1` at once, so a flood of tracking
    /// requests cannot take the database connections merchants need.
    #[arg(id = "tracking-concurrency", long = "tracking-concurrency",
          env = "COURIER_TRACKING_CONCURRENCY", default_value = "32",
          value_parser = settings::positive_usize)]
    pub tracking_concurrency: usize,
    /// Load balancers and proxies whose `X-Forwarded-For` names the client (addresses or
    /// networks, comma-separated, e.g. `10.0.0.5,10.1.0.0/16`). Per-address budgets count the
    /// client so named; from any other peer the header is ignored. Empty: the peer is the
    /// client.
    #[arg(id = "trusted-proxies", long = "trusted-proxies", env = "COURIER_TRUSTED_PROXIES",
          value_delimiter = ',', value_parser = settings::network)]
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// The window of `COURIER_OPERATOR_FAILURE_LIMIT`.
    #[arg(id = "operator-failure-window-ms", long = "operator-failure-window-ms",
          env = "COURIER_OPERATOR_FAILURE_WINDOW_MS", default_value = "60000",
          value_parser = settings::millis)]
    pub operator_failure_window: std::time::Duration,
    /// Database connections per process.
    #[arg(id = "db-pool-size", long = "db-pool-size", env = "COURIER_DB_POOL_SIZE",
          default_value = "16", value_parser = settings::positive_u32)]
    pub db_pool_size: u32,
    /// The markets file ([below](#the-markets-file)). Unset: the built-in demo market.
    #[arg(
        id = "markets-file",
        long = "markets-file",
        env = "COURIER_MARKETS_FILE"
    )]
    pub markets_file: Option<PathBuf>,
    /// How long a quote can be booked.
    #[arg(id = "quote-ttl-secs", long = "quote-ttl-secs", env = "COURIER_QUOTE_TTL_SECS",
          default_value = "600", value_parser = settings::seconds)]
    pub quote_lifetime: chrono::Duration,
    /// Plugin calls that may run at once in one process (each reserves address space, not
    /// memory).
    #[arg(id = "plugin-instances", long = "plugin-instances", env = "COURIER_PLUGIN_INSTANCES",
          default_value = "256", value_parser = settings::positive_u32)]
    pub plugin_instances: u32,
    /// How long what the database said of a key (its stored hash, or that there is no such
    /// key) is trusted from memory. A revocation evicts it on every instance at once (Postgres
    /// `NOTIFY`); this is the worst-case bound should a notification be missed. `0` checks the
    /// database on every request.
    #[arg(id = "auth-cache-ms", long = "auth-cache-ms", env = "COURIER_AUTH_CACHE_MS",
          default_value = "5000", value_parser = settings::millis_or_zero)]
    pub auth_cache: Duration,
    /// How often the keys' `last_used_at` is written (one batched UPDATE per interval, at most
    /// once per key).
    #[arg(id = "key-usage-flush-ms", long = "key-usage-flush-ms",
          env = "COURIER_KEY_USAGE_FLUSH_MS", default_value = "5000",
          value_parser = settings::millis)]
    pub key_usage_flush: Duration,
    #[command(flatten)]
    pub rate_limits: crate::rate_limit::RateLimitConfig,
    /// How long a `/v1` or `/admin/v1` request may take; past it the request is abandoned with
    /// 503 `service.timeout`.
    #[arg(id = "request-timeout-ms", long = "request-timeout-ms",
          env = "COURIER_REQUEST_TIMEOUT_MS", default_value = "30000",
          value_parser = settings::millis)]
    pub request_timeout: Duration,
    /// The service's public address; tracking links are `$COURIER_PUBLIC_URL/track/<token>`.
    /// Unset: `http://$COURIER_LISTEN`.
    #[arg(id = "public-url", long = "public-url", env = "COURIER_PUBLIC_URL")]
    pub public_url_setting: Option<String>,
    /// How often due work (opening the search of scheduled jobs) is looked for.
    #[arg(id = "scheduler-interval-ms", long = "scheduler-interval-ms",
          env = "COURIER_SCHEDULER_INTERVAL_MS", default_value = "1000",
          value_parser = settings::millis)]
    pub scheduler_interval: Duration,
    /// How deep `GET /v1/jobs` lists: no page starts past this many matches, and `total`
    /// counts up to one more than it (one more means "more than this"), so a deep page or a
    /// large account costs a bounded read.
    #[arg(id = "jobs-list-depth", long = "jobs-list-depth", env = "COURIER_JOBS_LIST_DEPTH",
          default_value = "10000", value_parser = settings::positive_u32)]
    pub jobs_list_depth: u32,
    #[command(flatten)]
    pub tracking: crate::tracking::TrackingConfig,
    /// How long a client has to send a request's complete headers; slower connections are
    /// closed (slow-client attacks cannot hold connections open).
    #[arg(id = "header-read-timeout-ms", long = "header-read-timeout-ms",
          env = "COURIER_HEADER_READ_TIMEOUT_MS", default_value = "10000",
          value_parser = settings::millis)]
    pub header_read_timeout: Duration,
    /// How long a connection may stay open with no request in flight (HTTP/1 keep-alive and
    /// HTTP/2 alike) before it is closed. Keep it above a load balancer's own idle timeout for
    /// the connections it reuses (HAProxy's `timeout http-keep-alive`).
    #[arg(id = "idle-timeout-ms", long = "idle-timeout-ms", env = "COURIER_IDLE_TIMEOUT_MS",
          default_value = "75000", value_parser = settings::millis)]
    pub idle_timeout: Duration,
    /// Connections served at once; more wait, unaccepted, until one closes. Keep it under the
    /// process's open-file limit.
    #[arg(id = "max-connections", long = "max-connections", env = "COURIER_MAX_CONNECTIONS",
          default_value = "10000", value_parser = settings::positive_usize)]
    pub max_connections: usize,
    /// How long an instance told to stop (SIGTERM) keeps serving while `/readyz` answers 503
    /// `service.draining`, so that a load balancer's health check takes it out of rotation
    /// before it stops accepting connections. A second signal cuts it short; 0 stops at once.
    #[arg(id = "drain-ms", long = "drain-ms", env = "COURIER_DRAIN_MS", default_value = "5000",
          value_parser = settings::millis_or_zero)]
    pub drain: Duration,
    #[command(flatten)]
    pub dispatch: crate::dispatch::DispatchConfig,
    /// Largest request body accepted; larger gets 413 `request.body_too_large`.
    #[arg(id = "max-body-bytes", long = "max-body-bytes", env = "COURIER_MAX_BODY_BYTES",
          default_value = "262144", value_parser = settings::positive_usize)]
    pub max_body_bytes: usize,
    #[command(flatten)]
    pub payments: crate::payments::PaymentsConfig,
    #[command(flatten)]
    pub webhooks: crate::webhooks::WebhookConfig,
    #[command(flatten)]
    pub texts: crate::texts::TextsConfig,
    #[command(flatten)]
    pub team: crate::team::TeamConfig,
    #[command(flatten)]
    pub mail: crate::mail::MailConfig,
    #[command(flatten)]
    pub sandbox: crate::sandbox::SandboxConfig,
    #[command(flatten)]
    pub log: crate::infra::telemetry::LogSettings,
}

/// One `name=token` entry: a name of letters, digits, `.`, `_`, `-`.
fn operator_token(entry: &str) -> Result<crate::auth::operators::OperatorToken, String> {
    let (name, token) = entry
        .split_once('=')
        .map(|(n, t)| (n.trim(), t.trim()))
        .ok_or_else(|| format!("{:?} is not name=token", entry.trim()))?;
    let name_ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !name_ok {
        return Err(format!(
            "{name:?}: a name is 1 to 64 letters, digits, `.`, `_` or `-`"
        ));
    }
    operator_secret(token).map_err(|reason| format!("the token of {name}: {reason}"))?;
    Ok(crate::auth::operators::OperatorToken {
        name: name.to_owned(),
        token: token.to_owned(),
    })
}

/// Shortest operator token accepted: a token is all an operator shows.
pub const OPERATOR_TOKEN_MIN_LENGTH: usize = 32;

fn operator_secret(raw: &str) -> Result<settings::Secret, String> {
    let token = raw.trim();
    if token.chars().count() < OPERATOR_TOKEN_MIN_LENGTH {
        return Err(format!(
            "an operator token has at least {OPERATOR_TOKEN_MIN_LENGTH} characters"
        ));
    }
    Ok(settings::Secret::new(token))
}

fn socket_address(raw: &str) -> Result<SocketAddr, String> {
    raw.trim().parse().map_err(|e| format!("{raw:?}: {e}"))
}

impl Config {
    pub const DEFAULT_LISTEN: &'static str = "127.0.0.1:8080";

    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(settings::environment)
    }

    /// Reads the configuration through `lookup`, so tests can supply their own values.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let config: Self = settings::from_lookup(lookup)?;
        let mut names = std::collections::HashSet::new();
        if let Some(twice) = config
            .operator_tokens
            .iter()
            .find(|token| !names.insert(token.name.as_str()))
        {
            return Err(ConfigError::Invalid {
                name: "COURIER_OPERATOR_TOKENS".into(),
                reason: format!("{} is named twice", twice.name),
            });
        }
        // One token, two names: the trail could not tell who acted.
        let mut tokens = std::collections::HashSet::new();
        let all = config
            .admin_token
            .iter()
            .map(settings::Secret::expose)
            .chain(config.operator_tokens.iter().map(|t| t.token.as_str()));
        if all.into_iter().any(|token| !tokens.insert(token)) {
            return Err(ConfigError::Invalid {
                name: "COURIER_OPERATOR_TOKENS".into(),
                reason: "two operators share one token (COURIER_ADMIN_TOKEN included)".into(),
            });
        }
        Ok(config)
    }

    /// Why the consoles' session cookies go without `Secure` though others can reach the
    /// service (it listens on `bound`, not only on loopback, and `COURIER_PUBLIC_URL` is not
    /// https): said once at start. None when it listens on loopback only or the public URL is
    /// https.
    pub fn insecure_cookies(&self, bound: SocketAddr) -> Option<String> {
        let public_url = self.public_url();
        if bound.ip().is_loopback() || public_url.starts_with("https://") {
            return None;
        }
        Some(format!(
            "the service listens on {bound}, beyond this machine, and COURIER_PUBLIC_URL \
             ({public_url}) is not https: console session cookies go without the Secure flag, \
             so anyone on the way can read them. Serve it behind TLS and set COURIER_PUBLIC_URL \
             to its https address."
        ))
    }

    /// The operator console's public address, without a trailing `/`.
    pub fn ops_public_url(&self) -> String {
        match (&self.ops_public_url_setting, self.ops_listen) {
            (Some(url), _) => url.trim_end_matches('/').to_owned(),
            (None, Some(listen)) => format!("http://{listen}"),
            (None, None) => self.public_url(),
        }
    }

    /// The service's public address, without a trailing `/`.
    pub fn public_url(&self) -> String {
        self.public_url_setting
            .clone()
            .unwrap_or_else(|| format!("http://{}", self.listen))
            .trim_end_matches('/')
            .to_owned()
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
    fn the_configuration_printed_shows_no_secret() {
        let secrets = [
            (
                "DATABASE_URL",
                "postgres://courier:db-password-9f3@db/courier",
            ),
            (
                "COURIER_SECRET_KEY",
                "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e",
            ),
            (
                "COURIER_ADMIN_TOKEN",
                "admin-token-0123456789abcdef0123456789",
            ),
            (
                "COURIER_OPERATOR_TOKENS",
                "ana=ana-token-0123456789abcdef0123456789",
            ),
            (
                "COURIER_METRICS_TOKEN",
                "metrics-token-0123456789abcdef012345678",
            ),
            ("COURIER_SMS_GATEWAY_URL", "https://sms.example/send"),
            ("COURIER_SMS_GATEWAY_PASSWORD", "sms-password-4d2"),
        ];
        let config = Config::from_lookup(|name| {
            secrets
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        })
        .unwrap();
        let printed = format!("{config:?} {:?}", config.texts.gateway());
        for needle in [
            "db-password-9f3",
            "5e5e5e5e",
            "admin-token",
            "ana-token",
            "metrics-token",
            "sms-password",
        ] {
            assert!(!printed.contains(needle), "{needle} in {printed}");
        }
        // Still there to use.
        assert_eq!(
            config.admin_token.as_ref().map(settings::Secret::expose),
            Some("admin-token-0123456789abcdef0123456789")
        );
    }

    #[test]
    fn listening_beyond_loopback_without_https_is_said_at_start() {
        let config = |public: Option<&str>| {
            Config::from_lookup(|name| {
                (name == "COURIER_PUBLIC_URL")
                    .then(|| public.map(str::to_owned))
                    .flatten()
            })
            .unwrap()
        };
        let anywhere: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let loopback: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let said = config(None).insecure_cookies(anywhere).unwrap();
        assert!(said.contains("without the Secure flag"), "{said}");
        assert!(
            config(Some("http://courier.example"))
                .insecure_cookies(anywhere)
                .is_some()
        );
        assert!(
            config(Some("https://courier.example"))
                .insecure_cookies(anywhere)
                .is_none()
        );
        assert!(config(None).insecure_cookies(loopback).is_none());
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
        const ALICE: &str = "alice-0123456789abcdef0123456789abcdef";
        const BOB: &str = "bob=0123456789abcdef0123456789abcdef";
        let read = |raw: &str| {
            let raw = raw.to_owned();
            Config::from_lookup(move |n| (n == "COURIER_OPERATOR_TOKENS").then(|| raw.clone()))
                .map(|config| config.operator_tokens)
        };
        let tokens = read(&format!("alice={ALICE}, bob = {BOB}")).unwrap();
        assert_eq!(tokens.len(), 2);
        assert_eq!(
            (tokens[0].name.as_str(), tokens[0].token.as_str()),
            ("alice", ALICE)
        );
        assert_eq!(
            (tokens[1].name.as_str(), tokens[1].token.as_str()),
            ("bob", BOB)
        );
        assert!(
            !format!("{tokens:?}").contains(ALICE),
            "tokens stay out of logs"
        );
        for bad in [
            "alice".to_owned(),
            format!("={ALICE}"),
            "alice=".to_owned(),
            format!("al ice={ALICE}"),
            format!("a={ALICE},a={BOB}"),
            format!("a={ALICE},,b={BOB}"),
            // Too short, even by one character.
            "alice=short-token".to_owned(),
            format!("alice={}", &ALICE[..31]),
            // Two names, one token.
            format!("alice={ALICE},bob={ALICE}"),
        ] {
            let err = read(&bad).unwrap_err().to_string();
            assert!(err.contains("COURIER_OPERATOR_TOKENS"), "{bad}: {err}");
        }
        assert_eq!(read(&format!("a={}", &ALICE[..32])).unwrap().len(), 1);
        let none = Config::from_lookup(|_| None).unwrap();
        assert!(none.operator_tokens.is_empty());
    }

    #[test]
    fn the_admin_token_is_long_and_nobody_else_s() {
        const TOKEN: &str = "admin-0123456789abcdef0123456789abcdef";
        let read = |admin: &str, named: Option<String>| {
            let admin = admin.to_owned();
            Config::from_lookup(move |n| match n {
                "COURIER_ADMIN_TOKEN" => Some(admin.clone()),
                "COURIER_OPERATOR_TOKENS" => named.clone(),
                _ => None,
            })
        };
        assert!(read(TOKEN, None).is_ok());
        let err = read("admin-token", None).unwrap_err().to_string();
        assert!(err.contains("COURIER_ADMIN_TOKEN"), "{err}");
        let err = read(TOKEN, Some(format!("bob={TOKEN}")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("share one token"), "{err}");
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
