//! What a tracking page shows: the wording of a job's state, its timeline and its estimate.

pub mod eta;
pub mod timeline;
pub mod wording;
