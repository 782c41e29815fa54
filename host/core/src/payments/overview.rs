//! Payments across merchants, for operators: every merchant's charges, newest first, the
//! newest refunds, and abandoned bookings' holds whose release is not confirmed.

use super::Payments;
pub use courier_store::abandoned_holds::UnreleasedHold;
use courier_store::charges as store;
pub use courier_store::charges::{ChargeFilter, ChargeMoveRow, ListedCharge, ListedRefund};

/// Charges listed on one page.
pub const CHARGES_PER_PAGE: i64 = 50;
/// Refunds listed.
pub const REFUNDS_SHOWN: i64 = 50;
/// Unreleased holds listed.
pub const UNRELEASED_SHOWN: i64 = 50;

impl Payments {
    /// A page of every merchant's charges that `filter` lets through, newest first, and
    /// whether more follow it.
    pub async fn charges_across(
        &self,
        filter: &ChargeFilter,
    ) -> Result<(Vec<ListedCharge>, bool), sqlx::Error> {
        let mut charges = store::charges_across(&self.pool, filter, CHARGES_PER_PAGE + 1).await?;
        let more = charges.len() as i64 > CHARGES_PER_PAGE;
        charges.truncate(CHARGES_PER_PAGE as usize);
        Ok((charges, more))
    }

    /// Every move of a charge, oldest first (the caller has found the charge its own).
    pub async fn moves_of(&self, charge_id: uuid::Uuid) -> Result<Vec<ChargeMoveRow>, sqlx::Error> {
        store::moves_of(&self.pool, charge_id).await
    }

    /// The newest refunds of every merchant, up to [`REFUNDS_SHOWN`].
    pub async fn recent_refunds(&self) -> Result<Vec<ListedRefund>, sqlx::Error> {
        store::recent_refunds(&self.pool, REFUNDS_SHOWN).await
    }

    /// Abandoned bookings' holds whose release the provider has not confirmed (those past the
    /// rounds first), up to [`UNRELEASED_SHOWN`].
    pub async fn unreleased_holds(&self) -> Result<Vec<UnreleasedHold>, sqlx::Error> {
        courier_store::abandoned_holds::unreleased(&self.pool, UNRELEASED_SHOWN).await
    }
}
