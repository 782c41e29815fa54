//! Dispatch: searching jobs are offered, one courier at a time, to the available courier
//! with the shortest road trip to the pickup; offers run out and move on; searches that find
//! nobody before the deadline fail. A job whose parcel is not ready yet is offered when that
//! courier, leaving now, would wait at most `COURIER_DISPATCH_READY_WAIT_SECS` for it.
//!
//! All of it is due work in Postgres, done by a worker every instance runs: each pass
//! expires offers, fails overdue searches, offers jobs that have no open offer, and finishes
//! settlements left behind. Rows are claimed with `FOR UPDATE SKIP LOCKED`, and the unique
//! indexes on open offers (one per job, one per courier) make a second dispatcher's offer
//! lose, so any number of instances can run side by side and a crash loses nothing.

mod config;

use std::sync::Arc;

use courier_geo::LatLon;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

pub use config::DispatchConfig;
use courier_domain::dispatch::{OfferStatus, Reachable, choose};
pub use courier_store::dispatch::OfferRow;

use crate::infra::clock::now;
use crate::jobs::POSITION_FRESHNESS;
use crate::jobs::fulfilment::Fulfilment;
use crate::markets::Markets;
use courier_store::couriers::{self as couriers_store, CandidateSearch};
use courier_store::dispatch as store;
use courier_store::jobs::JobRow;

/// Couriers routed per job: the nearest in a straight line.
const CANDIDATES: i64 = 10;
/// Jobs claimed (and offered, if a courier is available) per pass.
const JOBS_PER_PASS: usize = 50;
/// Jobs read per pass to claim those: instances passing at once skip each other's.
const JOBS_READ_PER_PASS: i64 = 4 * JOBS_PER_PASS as i64;
const KM_PER_DEGREE_OF_LATITUDE: f64 = 111.2;
/// Jobs ready later than this are not looked at: no courier within the search radius is
/// further away than this from a pickup.
const READY_LOOKAHEAD: chrono::Duration = chrono::Duration::minutes(30);

pub struct Dispatcher {
    pool: PgPool,
    markets: Arc<Markets>,
    fulfilment: Fulfilment,
    config: DispatchConfig,
    /// Test-environment jobs are left to the sandbox simulator.
    live_jobs_only: bool,
}

impl Dispatcher {
    pub fn new(
        pool: PgPool,
        markets: Arc<Markets>,
        fulfilment: Fulfilment,
        config: DispatchConfig,
        live_jobs_only: bool,
    ) -> Self {
        Self {
            pool,
            markets,
            fulfilment,
            config,
            live_jobs_only,
        }
    }

    /// Runs a pass every `COURIER_DISPATCH_INTERVAL_MS` until the workers stop.
    pub fn run(self: Arc<Self>, workers: &crate::infra::workers::Workers) {
        let every = self.config.interval;
        workers.run("dispatch work", every, move || {
            let dispatcher = Arc::clone(&self);
            async move {
                dispatcher.run_pass().await?;
                Ok::<_, crate::jobs::fulfilment::FulfilmentError>(
                    crate::infra::workers::Pass::Partial,
                )
            }
        });
    }

    pub async fn run_pass(&self) -> Result<(), crate::jobs::fulfilment::FulfilmentError> {
        store::expire_offers(&self.pool, now()).await?;
        let failed = self
            .fulfilment
            .fail_overdue_searches(self.config.deadline)
            .await?;
        if failed > 0 {
            tracing::info!(jobs = failed, "searches failed at the dispatch deadline");
        }
        self.offer_searching_jobs().await?;
        self.fulfilment.run_due_settlements().await?;
        Ok(())
    }

    /// The jobs that have searched longest, read once per pass; then one transaction per job,
    /// so a transaction holds at most one new offer and two instances offering at once can
    /// only wait on each other, never in a circle.
    async fn offer_searching_jobs(&self) -> Result<(), sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        let searching = store::unoffered_searches(
            &mut conn,
            self.live_jobs_only,
            now() + READY_LOOKAHEAD,
            JOBS_READ_PER_PASS,
        )
        .await?;
        drop(conn);
        let mut claimed = 0;
        for job_id in searching {
            if claimed == JOBS_PER_PASS {
                break;
            }
            let mut tx = self.pool.begin().await?;
            // Offered or held by another instance since it was read: skipped.
            let Some(job) = store::claim_unoffered_search(&mut tx, job_id).await? else {
                continue;
            };
            claimed += 1;
            if let Some(offer) = self.offer(&mut tx, &job).await? {
                tracing::debug!(job_id = %job.id, courier_id = %offer.courier_id, "job offered");
            }
            tx.commit().await?;
        }
        Ok(())
    }

    /// Offers `job` (locked) to the best available courier, if there is one.
    async fn offer(
        &self,
        conn: &mut PgConnection,
        job: &JobRow,
    ) -> Result<Option<OfferRow>, sqlx::Error> {
        let vehicle = job.vehicle;
        let (Some(market), Some(pickup)) = (self.markets.get(&job.market_id), point(&job.pickup))
        else {
            tracing::error!(job_id = %job.id, "a searching job has no market or pickup");
            return Ok(None);
        };
        let now = now();
        let search = CandidateSearch {
            job_id: job.id,
            market_id: &job.market_id,
            vehicle,
            latitude: pickup.lat,
            longitude: pickup.lon,
            box_degrees: self.config.radius_km / KM_PER_DEGREE_OF_LATITUDE,
            fresh_since: now - POSITION_FRESHNESS,
            limit: CANDIDATES,
        };
        let nearby = couriers_store::candidates(conn, &search).await?;
        let mut reachable: Vec<Reachable> = nearby
            .iter()
            .enumerate()
            .map(|(rank, c)| Reachable {
                courier_id: c.id,
                travel_seconds: market
                    .route(vehicle, LatLon::new(c.latitude, c.longitude), pickup)
                    .ok()
                    .map(|route| route.duration_seconds),
                rank,
            })
            .collect();
        while let Some(best) = choose(&reachable) {
            if let (Some(ready), Some(travel)) = (job.pickup_ready_at, best.travel_seconds) {
                let arrives = now + chrono::Duration::seconds(i64::from(travel));
                if arrives + self.config.ready_wait < ready {
                    // Too early to send anyone: asked again at the next pass.
                    return Ok(None);
                }
            }
            let offer = OfferRow {
                id: Uuid::new_v4(),
                job_id: job.id,
                courier_id: best.courier_id,
                travel_seconds: best
                    .travel_seconds
                    .map_or(i32::MAX, |s| i32::try_from(s).unwrap_or(i32::MAX)),
                status: OfferStatus::Open,
                offered_at: now,
                expires_at: now + self.config.offer_timeout,
                answered_at: None,
            };
            if store::insert_offer(conn, &offer).await? {
                return Ok(Some(offer));
            }
            // Another instance offered that courier a job meanwhile: the next best, then.
            reachable.retain(|c| c.courier_id != best.courier_id);
        }
        Ok(None)
    }
}

/// A stop's point as booked.
pub fn point(stop: &serde_json::Value) -> Option<LatLon> {
    Some(LatLon::new(
        stop["latitude"].as_f64()?,
        stop["longitude"].as_f64()?,
    ))
}
