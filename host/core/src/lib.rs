//! Courier's features and infrastructure, under the HTTP layer (`courier-api`) and over the
//! store (`courier-store`) and the domain (`courier-domain`).
//!
//! - `audit`: the operator audit trail.
//! - `auth`: merchant credentials (HTTP Basic), issued and verified.
//! - `couriers`: couriers and their credentials for the courier API.
//! - `db`: the Postgres connection, the embedded cluster, migrations.
//! - `dispatch`: offers of searching jobs to couriers, deadlines, the due-work worker.
//! - `markets`: where the service operates; road networks and places per market.
//! - `pricing`: price books per market: uploads, activation (hot swap), pricing.
//! - `rate_limit`: per-key request budgets, in memory.
//! - `tracking`: the public tracking page of a job.
//! - `workers`: the one lifecycle of the workers that claim due work in batches.

pub mod audit;
pub mod auth;
pub mod clock;
pub mod config;
pub mod couriers;
pub mod db;
pub mod dispatch;
pub mod events;
pub mod jobs;
pub mod markets;
pub mod merchants;
pub mod payments;
pub mod pricing;
pub mod quotes;
pub mod rate_limit;
pub mod sandbox;
pub mod secrets;
pub mod settings;
pub mod telemetry;
pub mod texts;
pub mod tracking;
pub mod webhooks;
pub mod workers;
