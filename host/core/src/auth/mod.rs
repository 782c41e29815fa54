//! Merchant authentication: HTTP Basic `key:secret`, the environment taken from the key; the
//! console's sessions of people.

mod basic;
mod changes;
pub mod client;
mod credentials;
pub mod failures;
pub mod operator_sessions;
pub mod operators;
mod sessions;
mod usage;

pub use basic::{BasicCredentials, parse_basic};
pub use changes::{CHANGES_CHANNEL, CredentialChange, announce, follow_changes};
pub use credentials::{AuthError, Authenticator, Caller, IssuedKey, Merchant};
pub use sessions::{
    ConsoleSession, ConsoleSessions, KeptAnswer, ListedSession, OpenedFrom, SignedIn,
};
pub use usage::flush_usage;
