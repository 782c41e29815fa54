//! Dispatch: couriers, their offers, and the planner that decides which courier is offered
//! which jobs.

pub mod mdrp;
pub mod planner;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Why the planner offered a job to a courier, kept with the offer for operators.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OfferReason {
    /// The courier stood at the job's pickup collecting other parcels of it: no trip is
    /// cheaper than none.
    AtPickup,
    /// Matched over every open job and free courier of its vehicle in the market at once,
    /// and committed because the courier was to leave now; the times are the plan's.
    Planned {
        /// Free couriers of its vehicle, and open jobs of it, in that round.
        couriers_free: usize,
        jobs_open: usize,
        /// When the courier was to leave for the pickup, collect the parcels and drop this
        /// job's off.
        departs_at: DateTime<Utc>,
        pickup_at: DateTime<Utc>,
        dropoff_at: DateTime<Utc>,
    },
}

crate::names::named_enum! {
    /// An offer of a job to one courier: `open` until the courier accepts or declines it, it
    /// expires, or the job goes elsewhere (`withdrawn`).
    pub enum OfferStatus {
        Open,
        Accepted,
        Declined,
        Expired,
        Withdrawn,
    }
}

crate::names::named_enum! {
    /// A courier: `active` may take offers and sign in; `suspended` may do neither.
    pub enum CourierStatus {
        Active,
        Suspended,
    }
}
