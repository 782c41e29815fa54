//! A payment adapter (`courier:payments/payment-adapter@2.1.0`) for the example provider, a
//! plain JSON API described in `README.md`. Written by `courier adapter new` as the start of
//! yours: keep the layout, rewrite `provider.rs` and `operations.rs` for your provider's API,
//! record cassettes from its sandbox, and certify.
//!
//! - `provider.rs`: the provider's wire format: settings, requests, and how an answer is sorted
//!   (success, decline, key in use, no usable answer).
//! - `operations.rs`: each operation of the contract as requests, and the answers as outcomes.
//!   Plain Rust over a [`Transport`], unit tested natively with scripted answers (`tests.rs`).
//! - `component.rs`: the WIT boundary; it only converts types.
//!
//! The rules the host holds every adapter to are in the contract (`wit/payments.wit`) and in
//! Courier's `docs/writing-an-adapter.md`; `courier adapter certify` checks them.

#![cfg_attr(target_family = "wasm", no_std)]

extern crate alloc;

#[cfg(target_family = "wasm")]
mod component;
mod operations;
mod provider;
#[cfg(test)]
mod tests;

pub use operations::{
    Adapter, Attached, CardForm, Decline, Finished, Lookup, Outcome, PaymentPage, PaymentState,
    Refusal, Status,
};
pub use provider::{Failure, Method, Request, Response, Settings, Transport};
