//! Webhook deliveries: the signature a receiver checks.

pub mod signer;

pub use signer::signature;
