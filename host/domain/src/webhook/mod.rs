//! Webhook endpoints and deliveries, and the signature a receiver checks.

pub mod signer;

pub use signer::{signature, signature_with};

crate::names::named_enum! {
    /// A webhook endpoint: `active` receives deliveries; `suspended` (after failing too many
    /// times in a row) receives none until resumed.
    pub enum EndpointStatus {
        Active,
        Suspended,
    }
}

crate::names::named_enum! {
    /// One event's delivery to one endpoint: `pending` (an attempt is due or in progress),
    /// `delivered` (a 2xx came back), `failed` (the attempts ran out, or the receiver answered
    /// 410), `cancelled` (the endpoint was suspended before it could be delivered).
    pub enum DeliveryStatus {
        Pending,
        Delivered,
        Failed,
        Cancelled,
    }
}
