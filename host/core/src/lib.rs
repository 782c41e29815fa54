//! Courier's features and the infrastructure they run on, under the HTTP layer
//! (`courier-api`) and over the store (`courier-store`) and the domain (`courier-domain`).
//!
//! Features, one folder or file each:
//! - `audit`: the operator audit trail.
//! - `auth`: merchant and operator credentials, issued and verified.
//! - `couriers`: couriers and their credentials for the courier API.
//! - `dispatch`: offers of searching jobs to couriers, deadlines, the due-work worker.
//! - `events`: the outbox transaction and the wakeup of the webhook fan-out.
//! - `idempotency`: the caller's `Idempotency-Key`, checked alike for every request that takes one.
//! - `jobs`: booking, the moves of fulfilment, the views of a job.
//! - `mail`: mail to people through the operator's SMTP relay, from a durable outbox.
//! - `markets`: where the service operates; road networks and places per market.
//! - `merchants`: onboarding, keys, account settings.
//! - `payments`: cards, charges, the provider adapters and their retries.
//! - `pricing`: price books per market: uploads, activation (hot swap), pricing.
//! - `quotes`: pricing a journey and keeping the quote.
//! - `rate_limit`: per-key request budgets, in memory.
//! - `sandbox`: the simulator of test jobs.
//! - `team`: the people of merchants' teams: invitations, roles, sign-in with a password.
//! - `texts`: the customer's texts.
//! - `tracking`: the public tracking page of a job.
//! - `webhooks`: endpoints, the fan-out and the delivery workers.
//!
//! And `config`, every feature's settings assembled; `infra`, what they all run on.

pub mod audit;
pub mod auth;
pub mod components;
pub mod config;
pub mod couriers;
pub mod dispatch;
pub mod events;
pub mod idempotency;
pub mod infra;
pub mod jobs;
pub mod mail;
pub mod markets;
pub mod merchants;
pub mod operations;
pub mod operator_accounts;
pub mod payments;
pub mod pricing;
pub mod quotes;
pub mod rate_limit;
pub mod sandbox;
pub mod team;
pub mod texts;
pub mod tracking;
pub mod webhooks;
