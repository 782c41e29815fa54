//! A payment adapter (`courier:payments/payment-adapter@2.1.0`) for Adyen's Checkout API, v71,
//! written from Adyen's public API reference.
//!
//! - `adyen.rs`: the wire: settings, requests with `X-API-Key` and `Idempotency-Key`, how an
//!   answer is sorted, and Adyen's currency decimals where they differ from ISO 4217.
//! - `operations.rs`: each operation of the contract as Checkout requests, and Adyen's answers
//!   as the contract's outcomes (holds answer at once; captures, cancels and refunds are
//!   `received`, so `pending`, and confirmed by notification).
//! - `notifications.rs`: Adyen's standard notifications, their HMAC signature checked, as the
//!   contract's provider events.
//! - `component.rs`: the WIT boundary; it only converts types.

#![cfg_attr(target_family = "wasm", no_std)]

extern crate alloc;

mod adyen;
#[cfg(target_family = "wasm")]
mod component;
mod notifications;
mod operations;
#[cfg(test)]
mod tests;

pub use adyen::{Failure, Method, Request, Response, Settings, Transport};
pub use notifications::{Event, EventKind, verify};
pub use operations::{Adapter, Attached, CardForm, Decline, Finished, Outcome, Refusal};
