//! The operators' desk: what needs a person now across every market (searches in the last
//! quarter of their dispatch deadline, couriers offline or suspended with jobs, suspended
//! webhook endpoints), and search by job reference, merchant name, courier name or phone.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use courier_domain::Environment;
use courier_domain::job::reference::typed_reference;
use courier_store::operations as store;
pub use courier_store::operations::{
    CourierAwayWithJobs, FoundCourier, FoundJob, FoundMerchant, SearchNearDeadline,
    SuspendedEndpoint,
};

/// Most rows of each kind the desk shows.
pub const SHOWN: i64 = 100;
/// Fewest digits a search matches against couriers' phones (fewer match nearly everyone).
const PHONE_DIGITS: usize = 4;

/// What needs a person now.
#[derive(Clone, Debug, Default)]
pub struct NeedsAPerson {
    pub searches: Vec<SearchNearDeadline>,
    pub couriers: Vec<CourierAwayWithJobs>,
    pub endpoints: Vec<SuspendedEndpoint>,
}

/// What a search found.
#[derive(Clone, Debug, Default)]
pub struct Found {
    pub jobs: Vec<FoundJob>,
    pub merchants: Vec<FoundMerchant>,
    pub couriers: Vec<FoundCourier>,
}

impl Found {
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty() && self.merchants.is_empty() && self.couriers.is_empty()
    }
}

pub struct OperationsDesk {
    pool: PgPool,
    /// `COURIER_DISPATCH_DEADLINE_SECS`: how long a due job searches before it fails.
    deadline: chrono::Duration,
}

impl OperationsDesk {
    pub fn new(pool: PgPool, deadline: chrono::Duration) -> Self {
        Self { pool, deadline }
    }

    /// What needs a person at `now`; searches and endpoints of `environment` only, when given.
    pub async fn needs_a_person(
        &self,
        now: DateTime<Utc>,
        environment: Option<Environment>,
    ) -> Result<NeedsAPerson, sqlx::Error> {
        let due_by = now - last_quarter_begins(self.deadline);
        let (searches, couriers, endpoints) = tokio::try_join!(
            store::searches_due_by(&self.pool, due_by, environment, SHOWN),
            store::couriers_away_with_jobs(&self.pool, SHOWN),
            store::suspended_endpoints(&self.pool, environment, SHOWN),
        )?;
        Ok(NeedsAPerson {
            searches,
            couriers,
            endpoints,
        })
    }

    /// When a search due at some moment fails: `deadline` later.
    pub fn fails_at(&self, due_at: DateTime<Utc>) -> DateTime<Utc> {
        due_at + self.deadline
    }

    /// Jobs by reference, merchants by name, couriers by name or phone, for what was typed.
    pub async fn search(&self, typed: &str) -> Result<Found, sqlx::Error> {
        let words = typed.trim();
        if words.is_empty() {
            return Ok(Found::default());
        }
        let digits = phone_digits(words);
        let job = async {
            match typed_reference(words) {
                Some(reference) => store::job_by_reference(&self.pool, &reference).await,
                None => Ok(None),
            }
        };
        let (job, merchants, couriers) = tokio::try_join!(
            job,
            store::merchants_named(&self.pool, words, SHOWN),
            store::couriers_named_or_called(&self.pool, words, digits.as_deref(), SHOWN),
        )?;
        Ok(Found {
            jobs: job.into_iter().collect(),
            merchants,
            couriers,
        })
    }
}

/// How long before its failure a search is shown as needing a person: its last quarter.
fn last_quarter_begins(deadline: chrono::Duration) -> chrono::Duration {
    deadline * 3 / 4
}

/// The digits of what was typed, when it reads as (part of) a phone number: digits, spaces,
/// `+`, `-`, `(` and `)` only, with at least [`PHONE_DIGITS`] digits.
fn phone_digits(typed: &str) -> Option<String> {
    let phone_like = typed
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, ' ' | '+' | '-' | '(' | ')'));
    let digits: String = typed.chars().filter(char::is_ascii_digit).collect();
    (phone_like && digits.len() >= PHONE_DIGITS).then_some(digits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phone_is_matched_by_its_digits_however_typed() {
        assert_eq!(phone_digits("+966 50 123").as_deref(), Some("96650123"));
        assert_eq!(
            phone_digits("(050) 123-4567").as_deref(),
            Some("0501234567")
        );
        assert_eq!(
            phone_digits("123"),
            None,
            "too few digits match nearly everyone"
        );
        assert_eq!(phone_digits("Hana 1234"), None, "a name, not a phone");
    }

    #[test]
    fn a_search_needs_a_person_in_its_last_quarter() {
        let deadline = chrono::Duration::minutes(20);
        assert_eq!(last_quarter_begins(deadline), chrono::Duration::minutes(15));
    }
}
