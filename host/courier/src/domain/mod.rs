//! Business types and rules, free of I/O.

pub mod booking;
mod environment;
pub mod job;
mod money;
pub mod quote;

pub use environment::Environment;
pub use job::JobStatus;
pub use money::{Currency, UnknownCurrency};
