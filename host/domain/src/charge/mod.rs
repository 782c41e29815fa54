//! Charges: the moves a charge may make, saved cards, and card numbers that must never be
//! accepted.

pub mod card_number;
pub mod state;

pub use card_number::{contains_card_number, json_card_number_pointer, json_contains_card_number};
pub use state::{ChargeStatus, Decision, InvalidMove, Move};

crate::names::named_enum! {
    /// A saved card: `active` until the provider says it can no longer be charged, then `dead`.
    pub enum CardStatus {
        Active,
        Dead,
    }
}
