//! What every feature runs on, and nothing feature-specific: settings read from the
//! environment, the database (pool, embedded cluster, the one LISTEN connection), the one
//! lifecycle of background workers, the secret key, the clock, logs and metrics.

pub mod clock;
pub mod db;
mod log_lines;
pub mod secrets;
pub mod settings;
pub mod telemetry;
pub mod workers;
