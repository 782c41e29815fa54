//! `COURIER_LIVE_PAYMENT_*`, `COURIER_PAYMENT_*` and `COURIER_CHARGE_RETRY_*` (documented in
//! docs/configuration.md).

use std::path::PathBuf;
use std::time::Duration;

use courier_domain::backoff::Backoff;

use crate::infra::settings;

#[derive(Clone, Debug, clap::Args)]
pub struct PaymentsConfig {
    /// The live payment-adapter component (`.wasm`). Unset: live card operations answer 422
    /// `payment.live_unavailable`. The sandbox adapter is refused here (the service does not
    /// start).
    #[arg(
        id = "live-payment-adapter",
        long = "live-payment-adapter",
        env = "COURIER_LIVE_PAYMENT_ADAPTER"
    )]
    pub live_adapter: Option<PathBuf>,
    /// A JSON file of one object of strings (provider keys, account ids) the live adapter reads
    /// through its `config` import.
    #[arg(
        id = "live-payment-config",
        long = "live-payment-config",
        env = "COURIER_LIVE_PAYMENT_CONFIG"
    )]
    pub live_config: Option<PathBuf>,
    #[command(flatten)]
    pub calls: CallLimits,
    /// `true` lets the live adapter reach loopback and private addresses. For tests against a
    /// local provider stand-in only; never in production.
    #[arg(id = "payment-allow-private", long = "payment-allow-private",
          env = "COURIER_PAYMENT_ALLOW_PRIVATE", default_value = "false",
          action = clap::ArgAction::Set,
        value_parser = settings::flag)]
    pub allow_private: bool,
    /// A PEM file of root certificates the live adapter trusts on top of the public roots. For
    /// tests against a local provider stand-in only; never in production.
    #[arg(
        id = "payment-extra-ca",
        long = "payment-extra-ca",
        env = "COURIER_PAYMENT_EXTRA_CA"
    )]
    pub extra_ca: Option<PathBuf>,
    #[command(flatten)]
    pub retry: RetryPolicy,
    #[command(flatten)]
    pub reconcile: ReconcileConfig,
    #[command(flatten)]
    pub card_form: CardFormDefaults,
}

/// What the provider's card form is started with when the merchant does not say
/// (`POST /v1/payment-methods/setup` takes each in its body).
#[derive(Clone, Debug, clap::Args)]
pub struct CardFormDefaults {
    /// ISO 4217, upper case: the currency the card form is set up for.
    #[arg(
        id = "card-form-currency",
        long = "card-form-currency",
        env = "COURIER_CARD_FORM_CURRENCY",
        default_value = "EUR"
    )]
    pub currency: String,
    /// ISO 3166-1 alpha-2, upper case: the country the card form is set up for.
    #[arg(
        id = "card-form-country",
        long = "card-form-country",
        env = "COURIER_CARD_FORM_COUNTRY",
        default_value = "GB"
    )]
    pub country: String,
    /// BCP 47: the card form's language.
    #[arg(
        id = "card-form-locale",
        long = "card-form-locale",
        env = "COURIER_CARD_FORM_LOCALE",
        default_value = "en-GB"
    )]
    pub locale: String,
    /// Where the provider's form sends the merchant back; unset: the service's public URL.
    #[arg(
        id = "card-form-return-url",
        long = "card-form-return-url",
        env = "COURIER_CARD_FORM_RETURN_URL"
    )]
    pub return_url: Option<String>,
    /// More origins (`https://host[:port]`, comma-separated) the merchant console may load a
    /// provider's card form from, beside the providers' own it knows (Stripe's and Adyen's): a
    /// mirror of a provider's script, or a provider's stand-in in tests. An adapter's card-form
    /// document naming any other origin is not drawn.
    #[arg(
        id = "card-form-origins",
        long = "card-form-origins",
        env = "COURIER_CARD_FORM_ORIGINS",
        value_delimiter = ',',
        value_parser = https_origin
    )]
    pub origins: Vec<String>,
}

/// `https://host[:port]`, lower case, as a Content-Security-Policy names an origin; with
/// `subdomains`, also `https://*.host[:port]`. Nothing in it could end a policy's directive.
pub fn is_csp_origin(text: &str, subdomains: bool) -> bool {
    let Some(authority) = text.strip_prefix("https://") else {
        return false;
    };
    let authority = match authority.strip_prefix("*.") {
        Some(rest) if subdomains => rest,
        _ => authority,
    };
    let (host, port) = authority.rsplit_once(':').unwrap_or((authority, "443"));
    !host.is_empty()
        && !host.starts_with(['.', '-'])
        && host
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-'))
        && !port.is_empty()
        && port.len() <= 5
        && port.bytes().all(|b| b.is_ascii_digit())
}

/// An operator's origin (no wildcard), for `COURIER_CARD_FORM_ORIGINS`.
fn https_origin(raw: &str) -> Result<String, String> {
    let origin = raw.trim();
    if is_csp_origin(origin, false) {
        Ok(origin.to_owned())
    } else {
        Err(format!(
            "{origin:?} is not an origin such as https://js.example.com"
        ))
    }
}

impl Default for CardFormDefaults {
    /// The settings' own defaults, returning to `http://localhost/`.
    fn default() -> Self {
        CardFormDefaults {
            currency: "EUR".into(),
            country: "GB".into(),
            locale: "en-GB".into(),
            return_url: None,
            origins: Vec::new(),
        }
    }
}

/// How often the service checks its charges against the provider.
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct ReconcileConfig {
    /// How often each instance with a live adapter compares the recent charges with the
    /// provider's payments and records the mismatches operators see.
    #[arg(id = "reconcile-every-ms", long = "reconcile-every-ms",
          env = "COURIER_RECONCILE_EVERY_MS", default_value = "600000",
          value_parser = settings::millis)]
    pub every: Duration,
    /// How far back each scheduled check looks (charges raised since then).
    #[arg(id = "reconcile-window-ms", long = "reconcile-window-ms",
          env = "COURIER_RECONCILE_WINDOW_MS", default_value = "86400000",
          value_parser = settings::millis)]
    pub window: Duration,
}

impl Default for PaymentsConfig {
    fn default() -> Self {
        settings::from_lookup(|_| None).expect("the defaults are valid")
    }
}

/// Limits on calls to a provider over the network.
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct CallLimits {
    /// Provider calls over the network that may run at once in one process (at most half of
    /// `COURIER_PLUGIN_INSTANCES`: each call keeps a plugin instance while it waits). More are
    /// refused with 503 `payment.provider_busy`, never queued.
    #[arg(id = "payment-calls", long = "payment-calls", env = "COURIER_PAYMENT_CALLS",
          default_value = "64", value_parser = settings::positive_usize)]
    pub max_calls: usize,
    /// Deadline of one payment-adapter call, its DNS lookups, connections and HTTP exchanges
    /// included (each HTTP request gets at most what is left). A call in flight is left to its
    /// caller for twice this plus a second before the workers take it as lost.
    #[arg(id = "payment-deadline-ms", long = "payment-deadline-ms",
          env = "COURIER_PAYMENT_DEADLINE_MS", default_value = "10000",
          value_parser = settings::millis)]
    pub deadline: Duration,
    /// A live booking interrupted between its provider call and its outcome (a crash, a lost
    /// answer, an adapter no instance has) and still unfinished this long after it was made is
    /// abandoned: its hold is released and its key answers 409 `booking.abandoned`.
    #[arg(id = "booking-abandon-after-ms", long = "booking-abandon-after-ms",
          env = "COURIER_BOOKING_ABANDON_AFTER_MS", default_value = "600000",
          value_parser = settings::millis)]
    pub abandon_after: Duration,
    /// While live bookings come faster than this, their writes on either side of the
    /// provider's call (the reservation before it, the outcome after it) wait up to this long
    /// for other live bookings' to share one statement and one commit. Small beside the
    /// provider's answer; `0` writes each at once.
    #[arg(id = "booking-batch-window-ms", long = "booking-batch-window-ms",
          env = "COURIER_BOOKING_BATCH_WINDOW_MS", default_value = "2",
          value_parser = settings::millis_or_zero)]
    pub booking_batch_window: Duration,
}

impl Default for CallLimits {
    fn default() -> Self {
        settings::from_lookup(|_| None).expect("the defaults are valid")
    }
}

impl CallLimits {
    /// How long a call in flight is left to its caller: the deadline, and as long again
    /// for the scheduler and the database on a busy machine.
    pub fn lease(&self) -> Duration {
        self.deadline.saturating_mul(2) + Duration::from_secs(1)
    }
}

/// When unreachable providers are asked again: after `base`, doubling, `max_attempts` calls
/// in all (the first included); then the charge is `failed` with `last_error`.
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct RetryPolicy {
    /// First wait before a provider call that found the provider unreachable is made again;
    /// doubles after each attempt.
    #[arg(id = "charge-retry-base-ms", long = "charge-retry-base-ms",
          env = "COURIER_CHARGE_RETRY_BASE_MS", default_value = "5000",
          value_parser = settings::millis)]
    pub base: Duration,
    /// Provider calls in all (the first included) before an unreachable charge is given up as
    /// `failed`.
    #[arg(id = "charge-retry-attempts", long = "charge-retry-attempts",
          env = "COURIER_CHARGE_RETRY_ATTEMPTS", default_value = "8",
          value_parser = settings::positive_u32)]
    pub max_attempts: u32,
    /// How long a claimed retry is left to the instance that claimed it.
    #[arg(skip = Duration::from_secs(60))]
    pub lease: Duration,
}

impl RetryPolicy {
    /// The wait after the `attempts`-th failed call.
    pub fn delay_after(&self, attempts: u32) -> Duration {
        Backoff::new(self.base).wait_after(attempts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let config = settings::from_lookup::<PaymentsConfig>(|_| None).unwrap();
        assert_eq!(config.retry.base, Duration::from_secs(5));
        assert_eq!(config.retry.max_attempts, 8);
        assert!(config.live_adapter.is_none());
        assert_eq!(config.calls.max_calls, 64);
        assert_eq!(config.calls.deadline, Duration::from_secs(10));
        assert!(!config.allow_private);
        let config = settings::from_lookup::<PaymentsConfig>(|n| match n {
            "COURIER_CHARGE_RETRY_BASE_MS" => Some("20".into()),
            "COURIER_CHARGE_RETRY_ATTEMPTS" => Some("3".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(config.retry.base, Duration::from_millis(20));
        assert_eq!(config.retry.max_attempts, 3);
        let bad = settings::from_lookup::<PaymentsConfig>(|n| {
            (n == "COURIER_CHARGE_RETRY_ATTEMPTS").then(|| "0".into())
        });
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("COURIER_CHARGE_RETRY_ATTEMPTS")
        );
    }

    #[test]
    fn card_form_origins_are_https_origins_only() {
        let origins = |raw: &str| {
            let raw = raw.to_owned();
            settings::from_lookup::<PaymentsConfig>(move |n| {
                (n == "COURIER_CARD_FORM_ORIGINS").then(|| raw.clone())
            })
            .map(|c| c.card_form.origins)
        };
        assert_eq!(
            origins("https://localhost:8443,https://js.mirror.example").unwrap(),
            ["https://localhost:8443", "https://js.mirror.example"]
        );
        for bad in [
            "http://js.example",
            "https://js.example/v3/",
            "https://*.example",
            "https://JS.example",
            "https://js.example; script-src *",
        ] {
            assert!(origins(bad).is_err(), "{bad}");
        }
        let none = settings::from_lookup::<PaymentsConfig>(|_| None).unwrap();
        assert!(none.card_form.origins.is_empty());
    }
}
