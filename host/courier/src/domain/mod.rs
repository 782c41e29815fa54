//! Business types and rules, free of I/O.

mod environment;
mod money;

pub use environment::Environment;
pub use money::{Currency, UnknownCurrency};
