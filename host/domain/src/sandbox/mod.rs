//! The sandbox simulator's plans: scenarios, their stages, and the legs a simulated courier
//! drives.

pub mod leg;
pub mod plan;

pub use plan::Scenario;
