//! The stranger's flood, in a test binary of its own. It compares a merchant's quote rate with
//! and without the flood, which measures the service only when nothing else shares the
//! machine: cargo runs test binaries one after another, so this one never runs beside the
//! rest of the black-box suite (in the same binary, the suite's load halved the merchant's
//! rate and doubled the flood's relative cost).

// The black-box support module serves every test; this binary uses part of it.
#![allow(dead_code)]

#[path = "../e2e/support/mod.rs"]
mod support;

mod flood;
