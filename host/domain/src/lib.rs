//! Courier's business types and rules, free of I/O: what a job, quote, booking, charge and
//! event are, which moves each may make, and how requests about them are validated. The host's
//! storage, features and HTTP layers build on this crate; it depends on none of them.
//!
//! - `audit`: what operators do, as the audit trail names it.
//! - `backoff`: when a failed call is made again.
//! - `booking`: validation of a booking request and the job it prepares.
//! - `charge`: the charge state machine; card numbers that must never be stored.
//! - `dispatch`: offers, and the planner that decides which courier is offered which jobs.
//! - `error`: stable error codes and how each error is answered.
//! - `event`: the events the service records and sends to webhooks.
//! - `job`: job states, their transitions, references, proof of delivery.
//! - `limits`: a merchant's own request budgets.
//! - `quote`: validation of a quote request.
//! - `sandbox`: the simulator's scenarios and legs.
//! - `team`: a merchant's team: roles and what each may do, addresses and passwords.
//! - `text`: the wording and rules of customer texts.
//! - `tracking`: what a tracking page says, its timeline and estimate.
//! - `webhook`: the signature of a webhook delivery.
//! - `money`, `numeric`, `environment`, `VehicleName`: shared value types.

// The error derive names this crate by its path, inside it as everywhere else.
extern crate self as courier_domain;

pub mod audit;
pub mod backoff;
pub mod booking;
pub mod charge;
pub mod dispatch;
mod environment;
pub mod error;
pub mod event;
pub mod job;
pub mod limits;
mod money;
mod names;
pub mod numeric;
pub mod operators;
pub mod pay;
pub mod quote;
pub mod sandbox;
mod schema;
pub mod team;
pub mod text;
pub mod tracking;
mod vehicle;
pub mod webhook;

pub use courier_geo::Vehicle;
pub use environment::Environment;
pub use job::JobStatus;
pub use money::{Currency, UnknownCurrency};
pub use vehicle::VehicleName;
