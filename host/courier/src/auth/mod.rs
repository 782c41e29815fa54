//! Merchant authentication: HTTP Basic `key:secret`, the environment taken from the key.

mod basic;
mod credentials;
mod extract;

pub use basic::{BasicCredentials, parse_basic};
pub use credentials::{AuthError, Authenticator, IssuedKey, Merchant};
