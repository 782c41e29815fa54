//! Dispatch: which courier an offer goes to.

pub mod choice;

pub use choice::{Reachable, choose};
