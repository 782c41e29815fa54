//! The Meal Delivery Routing Problem's benchmark (Reyes et al., "The Meal Delivery Routing
//! Problem", 2018; the public Grubhub instances): an instance read from its files, replayed
//! on a virtual clock under a dispatch policy, and the solution written in the three files its
//! published evaluator reads.
//!
//! The benchmark's rules (`MDRPInstances.pdf` §1): travel between two points takes
//! `ceil(euclidean metres / metres per minute)` minutes; a pickup happens no earlier than the
//! order's ready time and the courier's arrival plus half the pickup service, and the courier
//! leaves half the service later; a drop-off happens at the arrival plus half the drop-off
//! service; couriers pick nothing up after their off-time, always accept, and wait where their
//! last assignment ended.

mod instance;
mod simulate;
mod solution;

pub use instance::{Instance, InstanceError, Order, Parameters, Place, Point};
pub use simulate::{Policy, simulate};
pub use solution::{Assignment, Delivery, Move, Solution, Summary};
