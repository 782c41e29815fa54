//! Settings of merchants' teams: invitations, sign-in budgets per account, re-authentication.

use std::time::Duration;

use crate::infra::settings;

#[derive(Clone, Debug, clap::Args)]
pub struct TeamConfig {
    /// How long an invitation's link can be used.
    #[arg(id = "invitation-ttl-ms", long = "invitation-ttl-ms", env = "COURIER_INVITATION_TTL_MS",
          default_value = "604800000", value_parser = settings::millis)]
    pub invitation_ttl: Duration,
    /// Failed console sign-ins one account may have in a row; the next blocks it for
    /// `COURIER_SIGN_IN_BLOCK_MS`, the right password included (each client address also
    /// spends `COURIER_AUTH_FAILURE_LIMIT`).
    #[arg(id = "sign-in-failure-limit", long = "sign-in-failure-limit",
          env = "COURIER_SIGN_IN_FAILURE_LIMIT", default_value = "10",
          value_parser = settings::positive_i32)]
    pub sign_in_failure_limit: i32,
    /// How long an account past `COURIER_SIGN_IN_FAILURE_LIMIT` cannot sign in.
    #[arg(id = "sign-in-block-ms", long = "sign-in-block-ms", env = "COURIER_SIGN_IN_BLOCK_MS",
          default_value = "900000", value_parser = settings::millis)]
    pub sign_in_block: Duration,
    /// How long after giving their password a person may make or revoke keys and change
    /// settings; past it the console asks for the password again.
    #[arg(id = "reauthentication-ms", long = "reauthentication-ms",
          env = "COURIER_REAUTHENTICATION_MS", default_value = "600000",
          value_parser = settings::millis)]
    pub reauthentication: Duration,
    /// How long a password-reset link can be used.
    #[arg(id = "password-reset-ttl-ms", long = "password-reset-ttl-ms",
          env = "COURIER_PASSWORD_RESET_TTL_MS", default_value = "3600000",
          value_parser = settings::millis)]
    pub password_reset_ttl: Duration,
}

impl Default for TeamConfig {
    fn default() -> Self {
        settings::from_lookup(|_| None).expect("the defaults are valid")
    }
}
