//! Reading jobs: a merchant's own job, a page of them, where a job's courier is, a proof file.
//! Moves are [`super::fulfilment`]'s; this only reads.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use crate::auth::Merchant;
use courier_domain::job::proof::ProofKind;
use courier_store::dispatch::{self as dispatch_store, JobOffer};
use courier_store::fulfilment::{self as fulfilment_store, ProofFileRow};
use courier_store::jobs::{self as store, JobRow, ListFilter};

/// Where a courier was last seen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeenAt {
    pub latitude: f64,
    pub longitude: f64,
    pub seen_at: DateTime<Utc>,
}

/// The job reads the merchant API serves.
#[derive(Clone)]
pub struct JobReader {
    pool: PgPool,
}

impl JobReader {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// The job `id` if it is `merchant`'s, in the merchant's environment.
    pub async fn find(&self, merchant: &Merchant, id: Uuid) -> Result<Option<JobRow>, sqlx::Error> {
        store::find(&self.pool, merchant.merchant_id, merchant.environment, id).await
    }

    /// Any merchant's job, in either environment: for operators.
    pub async fn find_any(&self, id: Uuid) -> Result<Option<JobRow>, sqlx::Error> {
        store::find_any(&self.pool, id).await
    }

    /// The jobs the courier was put on at or after `since`, the latest first: for operators.
    pub async fn of_courier_since(
        &self,
        courier_id: Uuid,
        since: DateTime<Utc>,
    ) -> Result<Vec<JobRow>, sqlx::Error> {
        store::of_courier_since(&self.pool, courier_id, since).await
    }

    /// What the courier finished since `since`, for its app's "today".
    pub async fn courier_day(
        &self,
        courier_id: Uuid,
        since: DateTime<Utc>,
    ) -> Result<store::CourierDay, sqlx::Error> {
        store::courier_day(&self.pool, courier_id, since).await
    }

    /// Every offer of the job, the first made first, with its courier: for operators.
    pub async fn offers_of(&self, job_id: Uuid) -> Result<Vec<JobOffer>, sqlx::Error> {
        dispatch_store::offers_of_job(&self.pool, job_id).await
    }

    /// A page of the filter's jobs, newest first, and how many match (counted up to the
    /// filter's `count_up_to`).
    pub async fn list(&self, filter: &ListFilter<'_>) -> Result<(Vec<JobRow>, i64), sqlx::Error> {
        store::list(&self.pool, filter).await
    }

    /// Where `courier_id` was last seen, if at or after `fresh_since`.
    pub async fn courier_position(
        &self,
        courier_id: Uuid,
        fresh_since: DateTime<Utc>,
    ) -> Result<Option<SeenAt>, sqlx::Error> {
        let position = store::courier_position(&self.pool, courier_id, fresh_since).await?;
        Ok(position.map(|(latitude, longitude, seen_at)| SeenAt {
            latitude,
            longitude,
            seen_at,
        }))
    }

    /// The job's proof file of `kind`, as the courier's app sent it.
    pub async fn proof_file(
        &self,
        job_id: Uuid,
        kind: ProofKind,
    ) -> Result<Option<ProofFileRow>, sqlx::Error> {
        fulfilment_store::proof_file(&self.pool, job_id, kind).await
    }
}
