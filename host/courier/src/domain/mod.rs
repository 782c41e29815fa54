//! Business types and rules, free of I/O.

mod environment;
mod money;
pub mod booking;
pub mod job;
pub mod quote;

pub use environment::Environment;
pub use job::JobStatus;
pub use money::{Currency, UnknownCurrency};
