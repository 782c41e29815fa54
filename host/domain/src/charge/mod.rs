//! Charges: the moves a charge may make, and card numbers that must never be accepted.

pub mod card_number;
pub mod state;

pub use card_number::{contains_card_number, json_contains_card_number};
pub use state::{ChargeStatus, Decision, InvalidMove, Move};
