//! Dispatch: a planner, run for each market every pass, offers its searching jobs to the
//! available couriers, one job or several from one pickup (a route) to each, in the order of
//! stops that serves them best; offers run out and move on; searches that find nobody before
//! the deadline fail. A job whose parcel is not ready yet is offered when its courier, leaving
//! now, would wait at most `COURIER_DISPATCH_READY_WAIT_SECS` for it.
//!
//! All of it is due work in Postgres, done by a worker every instance runs: each pass
//! expires offers, fails overdue searches, plans each market and offers what is due, and
//! finishes settlements left behind. A market is planned by one instance at a time (the pass
//! holds the market's advisory lock for its transaction; the others skip it), a route's jobs
//! are claimed with `FOR UPDATE SKIP LOCKED`, and the unique indexes on open offers (one per
//! job, one route per courier) make a conflicting offer lose, so any number of instances can
//! run side by side and a crash loses nothing.

mod config;
mod planning;

use std::collections::HashSet;
use std::sync::Arc;

use sqlx::{Acquire, PgConnection, PgPool};
use uuid::Uuid;

pub use config::DispatchConfig;
use courier_domain::dispatch::OfferStatus;
pub use courier_store::dispatch::{JobOffer, OfferRow};
use planning::PlannedRoute;
pub use planning::point;

use crate::infra::clock::now;
use crate::jobs::POSITION_FRESHNESS;
use crate::jobs::fulfilment::Fulfilment;
use crate::markets::{Market, Markets};
use courier_store::couriers as couriers_store;
use courier_store::dispatch as store;
use courier_store::jobs::JobRow;

/// Most searching jobs, and most available couriers, a market's plan takes in.
const SNAPSHOT_LIMIT: i64 = 500;
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
        self.plan_markets().await?;
        self.fulfilment.run_due_settlements().await?;
        Ok(())
    }

    /// Plans every market this instance can take and offers what is due.
    async fn plan_markets(&self) -> Result<(), sqlx::Error> {
        for market in self.markets.all() {
            // A network still loading cannot route: the market waits for it.
            if market.network().is_err() {
                continue;
            }
            let offered = self.plan_market(market).await?;
            if offered > 0 {
                tracing::debug!(market = market.id(), routes = offered, "routes offered");
            }
        }
        Ok(())
    }

    /// One market's plan, read, made and offered in one transaction holding the market's
    /// lock: the number of routes offered.
    async fn plan_market(&self, market: &Market) -> Result<usize, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        if !store::try_plan_market(&mut tx, market.id()).await? {
            return Ok(0);
        }
        let now = now();
        // Couriers first: with nobody to offer to, the searching jobs are not read at all (a
        // market can hold thousands while no courier is online).
        let fresh_since = now - POSITION_FRESHNESS;
        let couriers =
            couriers_store::available_in_market(&mut tx, market.id(), fresh_since, SNAPSHOT_LIMIT)
                .await?;
        let collecting = self.collecting(&mut tx, market, fresh_since).await?;
        if couriers.is_empty() && collecting.is_empty() {
            return Ok(0);
        }
        let jobs = store::open_searches(
            &mut tx,
            market.id(),
            self.live_jobs_only,
            now + READY_LOOKAHEAD,
            SNAPSHOT_LIMIT,
        )
        .await?;
        if jobs.is_empty() {
            return Ok(0);
        }
        let job_ids: Vec<Uuid> = jobs.iter().map(|j| j.id).collect();
        let offered_before: HashSet<(Uuid, Uuid)> = store::offered_pairs(&mut tx, &job_ids)
            .await?
            .into_iter()
            .collect();
        let snapshot = planning::Snapshot {
            jobs: &jobs,
            couriers: &couriers,
            collecting: &collecting,
            offered_before: &offered_before,
        };
        let routes = planning::plan(market, now, &snapshot, &self.config);
        let mut offered = 0;
        for route in &routes {
            if self.offer_route(&mut tx, route, now).await? {
                offered += 1;
            }
        }
        tx.commit().await?;
        Ok(offered)
    }

    /// The couriers of `market` that may be waiting at a pickup, with the jobs they hold.
    async fn collecting(
        &self,
        tx: &mut PgConnection,
        market: &Market,
        fresh_since: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<(couriers_store::AvailableCourier, Vec<JobRow>)>, sqlx::Error> {
        let couriers =
            couriers_store::collecting_in_market(tx, market.id(), fresh_since, SNAPSHOT_LIMIT)
                .await?;
        if couriers.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<Uuid> = couriers.iter().map(|c| c.id).collect();
        let held = store::assigned_jobs(tx, &ids).await?;
        Ok(couriers
            .into_iter()
            .map(|courier| {
                let holding = held
                    .iter()
                    .filter(|j| j.courier_id == Some(courier.id))
                    .cloned()
                    .collect();
                (courier, holding)
            })
            .collect())
    }

    /// Offers `route` to its courier, all its jobs or none (a savepoint): false when a job
    /// was claimed or offered meanwhile, or the courier was given a route.
    async fn offer_route(
        &self,
        tx: &mut PgConnection,
        route: &PlannedRoute,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<bool, sqlx::Error> {
        let mut savepoint = tx.begin().await?;
        for &job_id in &route.jobs {
            // Moved or held by another transaction since it was read: not offered now.
            if store::claim_unoffered_search(&mut savepoint, job_id)
                .await?
                .is_none()
            {
                savepoint.rollback().await?;
                return Ok(false);
            }
        }
        let route_id = Uuid::new_v4();
        let stops = route_stops(&route.jobs);
        for (position, &job_id) in route.jobs.iter().enumerate() {
            let first = position == 0;
            let offer = OfferRow {
                id: if first { route_id } else { Uuid::new_v4() },
                job_id,
                courier_id: route.courier_id,
                travel_seconds: i32::try_from(route.travel_seconds).unwrap_or(i32::MAX),
                status: OfferStatus::Open,
                offered_at: now,
                expires_at: now + self.config.offer_timeout,
                answered_at: None,
                route_id,
                stops: first.then(|| stops.clone()),
                reason: route
                    .reasons
                    .get(position)
                    .and_then(|reason| serde_json::to_value(reason).ok()),
            };
            if !store::insert_offer(&mut savepoint, &offer).await? {
                savepoint.rollback().await?;
                return Ok(false);
            }
        }
        savepoint.commit().await?;
        tracing::debug!(%route_id, courier_id = %route.courier_id, jobs = route.jobs.len(),
            "route offered");
        Ok(true)
    }
}

/// A route's stops in order: every job collected at the shared pickup, then each dropped
/// off in the planned order.
fn route_stops(jobs: &[Uuid]) -> serde_json::Value {
    let stop = |job: &Uuid, stop: &str| serde_json::json!({"job_id": job, "stop": stop});
    serde_json::Value::Array(
        jobs.iter()
            .map(|job| stop(job, "pickup"))
            .chain(jobs.iter().map(|job| stop(job, "dropoff")))
            .collect(),
    )
}
