//! Dispatch: couriers, their offers, and the planner that decides which courier is offered
//! which jobs.

pub mod mdrp;
pub mod planner;

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
