//! The money chaos run, in a test binary of its own: two instances on one database, a payment
//! provider's stand-in (Stripe's, then Adyen's) with random faults, `kill -9` of either
//! instance at random, merchants retrying their keys, cancellations, deliveries and refunds.
//! Afterwards the provider's books and ours must agree exactly.
//!
//! `cargo test -p courier --test chaos` runs both short with a fixed seed (as CI does);
//! `CHAOS_SEED=<n> CHAOS_BOOKINGS=<n> CHAOS_SECONDS=<n> cargo test -p courier --test chaos`
//! runs them longer, with another seed (see BENCHMARKS.md).

// The black-box support module serves every test; this binary uses part of it.
#![allow(dead_code)]

#[path = "../e2e/support/mod.rs"]
mod support;

mod chaos;
mod provider;
