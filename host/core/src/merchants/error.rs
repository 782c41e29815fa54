//! Refusals of merchant, key and settings operations, and the limits they name.

use courier_domain::error::{Code, ErrorCode};

pub const INVALID_NAME: Code = Code::new(
    422,
    "merchant.invalid_name",
    "The merchant's name is empty (after trimming) or over 200 characters.",
);
pub const MERCHANT_NOT_FOUND: Code = Code::new(
    404,
    "merchant.not_found",
    "No such merchant (also for an id that is not a UUID).",
);
pub const KEY_NOT_FOUND: Code = Code::new(
    404,
    "key.not_found",
    "No such key (also a key id holding NUL).",
);
pub const INVALID_ENVIRONMENT: Code = Code::new(
    422,
    "key.invalid_environment",
    "`environment` is not `test` or `live`.",
);
pub const INVALID_LABEL: Code = Code::new(
    422,
    "key.invalid_label",
    "The key's label is empty (after trimming) or over 100 characters.",
);

pub const INVALID_SMS_SENDER_NAME: Code = Code::new(
    422,
    "settings.invalid_sms_sender_name",
    "`sms_sender_name` is not 3–11 letters and digits with a letter, nor `null`.",
);
pub const INVALID_RATE_LIMIT: Code = Code::new(
    422,
    "settings.invalid_rate_limit",
    "A budget that is not a whole number from 1 to 1,000,000, nor `null`.",
);
pub const INVALID_CONTACT_EMAIL: Code = Code::new(
    422,
    "settings.invalid_contact_email",
    "`contact_email` is not an email address (`name@domain.tld`, at most 254 characters), nor \
     `null`.",
);
pub const INVALID_PREPARATION_MINUTES: Code = Code::new(
    422,
    "settings.invalid_preparation_minutes",
    "`preparation_minutes` is not a whole number from 0 to 240, nor `null`.",
);

/// Largest per-minute budget a merchant can be given.
pub const MAX_PER_MINUTE: i64 = 1_000_000;

#[derive(Debug, thiserror::Error, PartialEq, Eq, ErrorCode)]
pub enum SettingsError {
    #[error(
        "sms_sender_name is 3 to 11 letters and digits (A-Z, a-z, 0-9) with at least one \
         letter, or null for the service's default sender"
    )]
    #[code(INVALID_SMS_SENDER_NAME)]
    InvalidSmsSenderName,
    #[error(
        "{field} is a whole number of requests per minute from 1 to {MAX_PER_MINUTE}, or null \
         for the service's default"
    )]
    #[code(INVALID_RATE_LIMIT)]
    InvalidRateLimit { field: &'static str },
    #[error(
        "contact_email is an email address such as billing@example.com, of at most 254 \
         characters, or null for none"
    )]
    #[code(INVALID_CONTACT_EMAIL)]
    InvalidContactEmail,
    #[error(
        "preparation_minutes is a whole number of minutes from 0 to {}, or null for none",
        courier_domain::job::ready::MAX_PREPARATION_MINUTES
    )]
    #[code(INVALID_PREPARATION_MINUTES)]
    InvalidPreparationMinutes,
}

/// Longest merchant name accepted.
pub(super) const MAX_NAME_CHARS: usize = 200;

/// Longest key label accepted.
pub(super) const MAX_LABEL_CHARS: usize = 100;

#[derive(Debug, thiserror::Error, ErrorCode)]
pub enum MerchantError {
    #[error("a merchant needs a non-empty name of at most {MAX_NAME_CHARS} characters")]
    #[code(INVALID_NAME)]
    InvalidName,
    #[error("no such merchant")]
    #[code(MERCHANT_NOT_FOUND)]
    NotFound,
    #[error("no such API key")]
    #[code(KEY_NOT_FOUND)]
    KeyNotFound,
    #[error("{0:?} is not an environment; use test or live")]
    #[code(INVALID_ENVIRONMENT)]
    InvalidEnvironment(String),
    #[error("a key's label is 1 to {} characters", MAX_LABEL_CHARS)]
    #[code(INVALID_LABEL)]
    InvalidLabel,
    #[error(transparent)]
    #[code(via)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    #[code(fault)]
    Store(#[from] sqlx::Error),
}
