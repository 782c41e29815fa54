//! The current time as the database keeps it.

use chrono::{DateTime, SubsecRound, Utc};

/// Now, to the microsecond: what Postgres stores, so a time read back equals the time written.
pub fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}
