//! What couriers earn where their market says (`courier_pay` in the markets file): for each
//! offer, and for the jobs of a day.

use std::collections::HashMap;

use courier_domain::Currency;
use courier_domain::pay::CourierPay;
use uuid::Uuid;

use super::{Couriers, OfferedRoute};

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

impl Couriers {
    fn pay_of(&self, market: &str) -> Option<(CourierPay, Currency)> {
        let definition = &self.markets.get(market)?.definition;
        Some((definition.courier_pay?, definition.currency))
    }

    /// What `jobs` jobs of `metres` of road distance earn a courier of `market`; None where
    /// the market does not say what its couriers earn.
    pub fn earned(&self, market: &str, jobs: i64, metres: i64) -> Option<Earnings> {
        let (pay, currency) = self.pay_of(market)?;
        Some(Earnings {
            amount_minor: pay.earned(jobs, metres),
            currency,
        })
    }

    /// What each of `offers` earns a courier of `market` (its jobs and their road distance as
    /// quoted), in order; all None where the market does not say what its couriers earn.
    pub async fn offers_earn(
        &self,
        market: &str,
        offers: &[OfferedRoute],
    ) -> Result<Vec<Option<Earnings>>, sqlx::Error> {
        if self.pay_of(market).is_none() || offers.is_empty() {
            return Ok(vec![None; offers.len()]);
        }
        let ids: Vec<Uuid> = offers
            .iter()
            .flat_map(|o| o.jobs.iter().map(|j| j.id))
            .collect();
        let metres: HashMap<Uuid, i64> = courier_store::jobs::quoted_metres(&self.pool, &ids)
            .await?
            .into_iter()
            .collect();
        Ok(offers
            .iter()
            .map(|offer| {
                let distance = offer.jobs.iter().filter_map(|j| metres.get(&j.id)).sum();
                self.earned(market, offer.jobs.len() as i64, distance)
            })
            .collect())
    }
}
