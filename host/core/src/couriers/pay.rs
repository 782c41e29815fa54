//! What couriers earn where their market says (`courier_pay` in the markets file): for each
//! offer, and for the jobs of a day.

use courier_domain::Currency;

/// An amount a courier earns, in its market's currency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Earnings {
    pub amount_minor: i64,
    pub currency: Currency,
}

impl Earnings {
    /// As people read it: `12.50 CHF`.
    pub fn formatted(&self) -> String {
        self.currency.format(self.amount_minor)
    }
}
