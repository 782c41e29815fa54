//! Payments across merchants, for operators: every merchant's charges, newest first, and the
//! newest refunds.

use super::Payments;
use courier_store::charges as store;
pub use courier_store::charges::{ChargeFilter, ChargeMoveRow, ListedCharge, ListedRefund};

/// Charges listed on one page.
pub const CHARGES_PER_PAGE: i64 = 50;
/// Refunds listed.
pub const REFUNDS_SHOWN: i64 = 50;

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
}
