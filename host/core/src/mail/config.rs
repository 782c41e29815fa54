//! Settings of mail to people: the relay, the sender, retries.

use std::time::Duration;

use crate::infra::settings;

#[derive(Clone, Debug, clap::Args)]
pub struct MailConfig {
    /// The SMTP relay mail is sent through: `smtp://host:port` (no TLS, for a relay on the
    /// same host or network), `smtp://host:587?tls=required` (STARTTLS), or
    /// `smtps://user:password@host:465`. Unset: no mail is sent, and the command line prints
    /// invitation and password-reset links instead.
    #[arg(id = "smtp-url", long = "smtp-url", env = "COURIER_SMTP_URL",
          value_parser = settings::secret)]
    pub smtp_url: Option<settings::Secret>,
    /// Who mail is from: an address, or `Name <address>`.
    #[arg(id = "mail-from", long = "mail-from", env = "COURIER_MAIL_FROM",
          default_value = "Courier <courier@localhost>", value_parser = sender)]
    pub from: lettre::message::Mailbox,
    /// How long the relay has to answer one mail.
    #[arg(id = "smtp-timeout-ms", long = "smtp-timeout-ms", env = "COURIER_SMTP_TIMEOUT_MS",
          default_value = "10000", value_parser = settings::millis)]
    pub timeout: Duration,
    /// Wait after a mail's first failed attempt; doubles after each.
    #[arg(id = "mail-retry-base-ms", long = "mail-retry-base-ms",
          env = "COURIER_MAIL_RETRY_BASE_MS", default_value = "5000",
          value_parser = settings::millis)]
    pub retry_base: Duration,
    /// Attempts in all before a mail is given up as `failed`.
    #[arg(id = "mail-attempts", long = "mail-attempts", env = "COURIER_MAIL_ATTEMPTS",
          default_value = "8", value_parser = settings::positive_u32)]
    pub max_attempts: u32,
    /// How long one instance may hold a mail it is sending before another takes it over.
    #[arg(skip = Duration::from_secs(60))]
    pub lease: Duration,
}

fn sender(raw: &str) -> Result<lettre::message::Mailbox, String> {
    raw.parse()
        .map_err(|_| format!("{raw:?} is not an address, nor `Name <address>`"))
}

impl Default for MailConfig {
    fn default() -> Self {
        settings::from_lookup(|_| None).expect("the defaults are valid")
    }
}
