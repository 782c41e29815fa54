//! Refusals of team operations: the operator API's and the command line's with codes; the
//! console's, which its pages put in words.

use chrono::{DateTime, Utc};

use courier_domain::error::{Code, ErrorCode};
use courier_domain::team::WeakPassword;

use crate::merchants::MERCHANT_NOT_FOUND;

pub const INVALID_EMAIL: Code = Code::new(
    422,
    "team.invalid_email",
    "An invitation's `email` is not an e-mail address (`name@domain`, at most 254 characters).",
);
pub const INVALID_ROLE: Code = Code::new(
    422,
    "team.invalid_role",
    "An invitation's `role` is not one of `owner`, `admin`, `developer`, `support`, `viewer`.",
);
pub const ALREADY_MEMBER: Code = Code::new(
    409,
    "team.already_member",
    "The invited address belongs to a member of the merchant's team already.",
);

/// Why an invitation could not be made.
#[derive(Debug, thiserror::Error, ErrorCode)]
pub enum TeamError {
    #[error("email is an e-mail address such as ana@example.com, of at most 254 characters")]
    #[code(INVALID_EMAIL)]
    InvalidEmail,
    #[error("{0:?} is not a role; use owner, admin, developer, support or viewer")]
    #[code(INVALID_ROLE)]
    InvalidRole(String),
    #[error("that address belongs to a member of the team already")]
    #[code(ALREADY_MEMBER)]
    AlreadyMember,
    #[error("no such merchant")]
    #[code(MERCHANT_NOT_FOUND)]
    MerchantNotFound,
    #[error(transparent)]
    #[code(fault)]
    Store(#[from] sqlx::Error),
}

/// Why an invitation's link could not be used.
#[derive(Debug, thiserror::Error)]
pub enum AcceptRefusal {
    #[error("the invitation was used already")]
    Used,
    #[error("the invitation has expired")]
    Expired,
    #[error("the invitation was withdrawn")]
    Withdrawn,
    #[error("no such invitation")]
    Unknown,
    #[error("a name is 1 to 100 characters")]
    InvalidName,
    #[error("the password is too weak")]
    WeakPassword(WeakPassword),
    #[error("the password is not the account's")]
    WrongPassword,
    #[error("the address has an account already")]
    AccountExists,
    #[error(transparent)]
    Store(#[from] sqlx::Error),
}

/// Why a sign-in was refused.
#[derive(Debug, thiserror::Error)]
pub enum SignInRefusal {
    /// No such address, or not its password (which of the two is never said).
    #[error("the address and password do not match an account")]
    Wrong,
    /// Too many failures in a row: no sign-in, right password or not, until `until`.
    #[error("the account is blocked until {until}")]
    Blocked { until: DateTime<Utc> },
    #[error(transparent)]
    Store(#[from] sqlx::Error),
}

/// Why a change to a team was refused.
#[derive(Debug, thiserror::Error)]
pub enum ChangeRefusal {
    /// The acting member's role may not make it.
    #[error("your role may not make this change")]
    NotAllowed,
    /// A team keeps at least one owner.
    #[error("a team keeps at least one owner")]
    LastOwner,
    /// One's own role and membership are not changed from the team page.
    #[error("you cannot change your own place in the team")]
    Yourself,
    #[error("no such member or invitation")]
    NotAMember,
    /// An owner requires a second factor of the team only once they have one.
    #[error("set up your own second factor first")]
    OwnFactorFirst,
    #[error(transparent)]
    Store(#[from] sqlx::Error),
}

/// Why a password-reset link could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ResetRefusal {
    #[error("the link was used already")]
    Used,
    #[error("the link has expired")]
    Expired,
    #[error("no such link")]
    Unknown,
    #[error("the password is too weak")]
    WeakPassword(WeakPassword),
    #[error(transparent)]
    Store(#[from] sqlx::Error),
}

/// Why a second-factor change was refused.
#[derive(Debug, thiserror::Error)]
pub enum FactorRefusal {
    /// Not the code of the app's current step (or one used already), nor an unused recovery code.
    #[error("that code does not match")]
    WrongCode,
    /// Confirming an enrolment that was not started (or was finished elsewhere).
    #[error("no enrolment is waiting")]
    NotStarted,
    #[error("that is not the account's password")]
    WrongPassword,
    /// Turning it off while a team of theirs requires it.
    #[error("a team requires it")]
    Required,
    #[error(transparent)]
    Store(#[from] sqlx::Error),
}
