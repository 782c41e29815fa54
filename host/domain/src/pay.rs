//! What couriers earn where a market says: so much a job and so much a kilometre of each
//! job's road distance, pickup to drop-off, as quoted.

/// A market's pay for couriers, in the market's currency's minor units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CourierPay {
    pub per_job_minor: i64,
    pub per_km_minor: i64,
}

impl CourierPay {
    /// What `jobs` jobs of `metres` of road distance together earn, the kilometres' part
    /// rounded to the nearest minor unit.
    pub fn earned(&self, jobs: i64, metres: i64) -> i64 {
        self.per_job_minor * jobs + (self.per_km_minor * metres + 500).div_euclid(1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_earns_its_fee_and_its_kilometres() {
        let pay = CourierPay {
            per_job_minor: 250,
            per_km_minor: 80,
        };
        assert_eq!(pay.earned(0, 0), 0);
        assert_eq!(pay.earned(1, 3_200), 250 + 256);
        // 2.5 km at 80 a km is 200; 1 m more rounds to it, 7 m more rounds up.
        assert_eq!(pay.earned(2, 2_501), 500 + 200);
        assert_eq!(pay.earned(2, 2_507), 500 + 201);
    }
}
