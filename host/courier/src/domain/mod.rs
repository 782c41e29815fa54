//! Business types and rules, free of I/O.

mod environment;

pub use environment::Environment;
