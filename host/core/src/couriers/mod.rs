//! Couriers: created, suspended and reinstated by operators, each with a credential for the
//! courier API. A courier's identity outside operations is its id (a UUID): its name and
//! phone number are shown to operators and to the courier only.

mod app_sessions;
mod credential;
mod offered;
mod pay;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use thiserror::Error;
use uuid::Uuid;

pub use app_sessions::{
    AppCourier, CodeRefusal, CourierAppSession, CourierAppSessions, CourierSignedIn, EndedBecause,
    IssuedCode, SIGN_IN_CODE_LIFETIME, SessionLookup, SignInRefusal,
};
pub use courier_store::couriers::{CourierNamed, TrailPoint};
pub use credential::{CourierAuthError, CourierCredentials, CourierIdentity};
pub use offered::{OfferedRoute, StopKind, offered_routes};
pub use pay::Earnings;

use crate::audit::{self, AuditAction, AuditRecord};
use crate::infra::clock::now;
use crate::markets::Markets;
use courier_domain::booking::normalise_phone;
use courier_domain::dispatch::CourierStatus;
use courier_domain::pay::CourierPay;
use courier_domain::{Currency, Vehicle};
use courier_store::couriers::{self as store, CourierRow};
use courier_store::dispatch as offers;

use courier_domain::error::Code;
use courier_domain::error::ErrorCode;

pub const INVALID_NAME: Code = Code::new(
    422,
    "courier.invalid_name",
    "Creating a courier: an empty or long name.",
);
pub const INVALID_PHONE: Code = Code::new(
    422,
    "courier.invalid_phone",
    "Creating a courier: not a usable phone number.",
);
pub const UNKNOWN_MARKET: Code = Code::new(
    422,
    "courier.unknown_market",
    "Creating a courier: no such market.",
);
pub const VEHICLE_NOT_OFFERED: Code = Code::new(
    422,
    "courier.vehicle_not_offered",
    "Creating a courier: the market does not offer the vehicle (`request.unknown_vehicle` for a name that is not a vehicle).",
);
pub const INVALID_REASON: Code = Code::new(
    422,
    "courier.invalid_reason",
    "A suspension reason over 500 characters.",
);
pub const COURIER_NOT_FOUND: Code = Code::new(
    404,
    "courier.not_found",
    "No such courier (admin routes, reassignment).",
);

const MAX_NAME_CHARS: usize = 200;
/// Trail points are kept this long.
pub const TRAIL_RETENTION: chrono::Duration = chrono::Duration::days(7);
/// Trail points a page shows at most (a day at one every 15 s is 5,760).
const TRAIL_SHOWN: i64 = 6_000;
const MAX_REASON_CHARS: usize = 500;

#[derive(Debug, Error, ErrorCode)]
pub enum CourierError {
    #[error("`name` must be 1 to {MAX_NAME_CHARS} characters")]
    #[code(INVALID_NAME)]
    InvalidName,
    #[error("`phone` must be a usable phone number")]
    #[code(INVALID_PHONE)]
    InvalidPhone,
    #[error("{0:?} is not a vehicle; use bicycle, electric_bicycle, motorcycle, car or van")]
    #[code(courier_domain::error::UNKNOWN_VEHICLE)]
    UnknownVehicle(String),
    #[error("there is no market {0:?}")]
    #[code(UNKNOWN_MARKET)]
    UnknownMarket(String),
    #[error("the {vehicle} vehicle is not offered in market {market:?}")]
    #[code(VEHICLE_NOT_OFFERED)]
    VehicleNotOffered { vehicle: String, market: String },
    #[error("`reason` must be at most {MAX_REASON_CHARS} characters")]
    #[code(INVALID_REASON)]
    InvalidReason,
    #[error("no such courier")]
    #[code(COURIER_NOT_FOUND)]
    NotFound,
    #[error(transparent)]
    #[code(fault)]
    Store(#[from] sqlx::Error),
}

/// `POST /admin/v1/couriers`.
#[derive(Clone, Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewCourier {
    /// 1 to 200 characters.
    #[schema(value_type = String, required = true, min_length = 1, max_length = 200)]
    pub name: Option<String>,
    /// Usable in the market's country; international format advised.
    #[schema(value_type = String, required = true)]
    pub phone: Option<String>,
    /// One the market offers.
    #[schema(value_type = courier_domain::VehicleName, required = true)]
    pub vehicle: Option<String>,
    /// The market's id.
    #[schema(value_type = String, required = true)]
    pub market: Option<String>,
}

/// A courier as operators (and the courier) see it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct CourierView {
    pub id: Uuid,
    pub name: String,
    pub phone: String,
    #[schema(value_type = courier_domain::VehicleName)]
    pub vehicle: Vehicle,
    pub market: String,
    pub status: CourierStatus,
    pub online: bool,
    pub created_at: DateTime<Utc>,
    pub suspended_at: Option<DateTime<Utc>>,
    pub suspension_reason: Option<String>,
    /// Offers may carry several jobs (a route) this shift: the courier said so going online.
    pub takes_routes: bool,
}

impl From<&CourierRow> for CourierView {
    fn from(c: &CourierRow) -> Self {
        Self {
            id: c.id,
            name: c.name.clone(),
            phone: c.phone.clone(),
            vehicle: c.vehicle,
            market: c.market_id.clone(),
            status: c.status,
            online: c.online,
            created_at: c.created_at,
            suspended_at: c.suspended_at,
            suspension_reason: c.suspension_reason.clone(),
            takes_routes: c.takes_routes,
        }
    }
}

/// The answer to creating a courier: the only time its credential is shown.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedCourier {
    #[serde(flatten)]
    pub courier: CourierView,
    /// `Authorization: Bearer <credential>` on the courier API.
    pub credential: String,
}

/// The courier service. Cheap to clone.
#[derive(Clone)]
pub struct Couriers {
    pool: PgPool,
    markets: Arc<Markets>,
    credentials: CourierCredentials,
    /// `COURIER_TRACKING_TRAIL_EVERY_MS`.
    trail_every: chrono::Duration,
}

impl Couriers {
    pub fn new(
        pool: PgPool,
        markets: Arc<Markets>,
        credentials: CourierCredentials,
        trail_every: chrono::Duration,
    ) -> Self {
        Self {
            pool,
            markets,
            credentials,
            trail_every,
        }
    }

    pub fn credentials(&self) -> &CourierCredentials {
        &self.credentials
    }

    /// The courier's open, unexpired offers, one per route, soonest to expire first.
    pub async fn open_offers(&self, courier_id: Uuid) -> Result<Vec<OfferedRoute>, sqlx::Error> {
        let open = offers::open_offers(&self.pool, courier_id, now()).await?;
        Ok(offered_routes(&open))
    }

    /// The courier's jobs under way (assigned or in transit), oldest assignment first.
    pub async fn jobs_under_way(
        &self,
        courier_id: Uuid,
    ) -> Result<Vec<courier_store::jobs::JobRow>, sqlx::Error> {
        courier_store::fulfilment::courier_jobs(&self.pool, courier_id).await
    }

    pub async fn create(
        &self,
        operator: &str,
        request: &NewCourier,
    ) -> Result<CreatedCourier, CourierError> {
        let name = request.name.as_deref().map(str::trim).unwrap_or_default();
        if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
            return Err(CourierError::InvalidName);
        }
        let vehicle_name = request.vehicle.as_deref().unwrap_or_default();
        let vehicle: Vehicle = vehicle_name
            .parse()
            .map_err(|_| CourierError::UnknownVehicle(vehicle_name.to_owned()))?;
        let market_id = request.market.as_deref().unwrap_or_default();
        let market = self
            .markets
            .get(market_id)
            .ok_or_else(|| CourierError::UnknownMarket(market_id.to_owned()))?;
        if !market.offers(vehicle) {
            return Err(CourierError::VehicleNotOffered {
                vehicle: vehicle.as_str().to_owned(),
                market: market_id.to_owned(),
            });
        }
        let phone = normalise_phone(
            request.phone.as_deref().unwrap_or_default(),
            market.definition.country.as_deref(),
        )
        .ok_or(CourierError::InvalidPhone)?;
        let issued = self.credentials.issue();
        let row = CourierRow {
            id: Uuid::new_v4(),
            name: name.to_owned(),
            phone,
            vehicle,
            market_id: market_id.to_owned(),
            status: CourierStatus::Active,
            online: false,
            credential_key: issued.key,
            secret_hash: issued.secret_hash.to_vec(),
            created_at: now(),
            suspended_at: None,
            suspension_reason: None,
            takes_routes: false,
        };
        let view = CourierView::from(&row);
        let mut tx = self.pool.begin().await?;
        store::insert(&mut tx, &row).await?;
        audit::record(
            &mut tx,
            &AuditRecord {
                operator,
                action: AuditAction::CourierCreated,
                target_type: "courier",
                target_id: row.id.to_string(),
                merchant_id: None,
                before: None,
                after: Some(serde_json::to_value(&view).expect("couriers serialise")),
                occurred_at: row.created_at,
            },
        )
        .await?;
        tx.commit().await?;
        Ok(CreatedCourier {
            courier: view,
            credential: issued.token,
        })
    }

    pub async fn get(&self, id: Uuid) -> Result<CourierView, CourierError> {
        store::find(&self.pool, id)
            .await?
            .as_ref()
            .map(CourierView::from)
            .ok_or(CourierError::NotFound)
    }

    pub async fn list(&self, market: Option<&str>) -> Result<Vec<CourierView>, CourierError> {
        Ok(store::list(&self.pool, market)
            .await?
            .iter()
            .map(CourierView::from)
            .collect())
    }

    /// The suspended couriers of `market`, by name, up to `limit`.
    pub async fn suspended_in_market(
        &self,
        market: &str,
        limit: i64,
    ) -> Result<Vec<CourierNamed>, CourierError> {
        Ok(store::suspended_in_market(&self.pool, market, limit).await?)
    }

    /// Suspends a courier: refused by the courier API from now on, offline, its open offer
    /// withdrawn, its app sessions ended. A job already under way stays with it until an
    /// operator reassigns it.
    /// Suspending a suspended courier changes nothing.
    pub async fn suspend(
        &self,
        operator: &str,
        id: Uuid,
        reason: Option<&str>,
    ) -> Result<CourierView, CourierError> {
        let reason = reason.map(str::trim).filter(|r| !r.is_empty());
        if reason.is_some_and(|r| r.chars().count() > MAX_REASON_CHARS) {
            return Err(CourierError::InvalidReason);
        }
        self.change_status(operator, id, CourierStatus::Suspended, reason)
            .await
    }

    /// Reinstates a suspended courier (offline until it goes online).
    pub async fn reinstate(&self, operator: &str, id: Uuid) -> Result<CourierView, CourierError> {
        self.change_status(operator, id, CourierStatus::Active, None)
            .await
    }

    async fn change_status(
        &self,
        operator: &str,
        id: Uuid,
        status: CourierStatus,
        reason: Option<&str>,
    ) -> Result<CourierView, CourierError> {
        let mut tx = self.pool.begin().await?;
        let before = store::lock(&mut tx, id)
            .await?
            .ok_or(CourierError::NotFound)?;
        if before.status == status {
            return Ok(CourierView::from(&before));
        }
        let now = now();
        let suspended = status == CourierStatus::Suspended;
        let after =
            store::set_status(&mut tx, id, status, suspended.then_some(now), reason).await?;
        if suspended {
            offers::withdraw_courier_offers(&mut tx, id, now).await?;
            courier_store::courier_sessions::end_all_of_courier(&mut tx, id, "suspended", now)
                .await?;
        }
        let (before, after) = (CourierView::from(&before), CourierView::from(&after));
        audit::record(
            &mut tx,
            &AuditRecord {
                operator,
                action: if suspended {
                    AuditAction::CourierSuspended
                } else {
                    AuditAction::CourierReinstated
                },
                target_type: "courier",
                target_id: id.to_string(),
                merchant_id: None,
                before: Some(serde_json::to_value(&before).expect("couriers serialise")),
                after: Some(serde_json::to_value(&after).expect("couriers serialise")),
                occurred_at: now,
            },
        )
        .await?;
        tx.commit().await?;
        Ok(after)
    }

    /// Online couriers can be offered jobs, several at a time if they take routes; going
    /// offline withdraws the open offer.
    pub async fn set_online(
        &self,
        id: Uuid,
        online: bool,
        takes_routes: bool,
    ) -> Result<CourierView, CourierError> {
        let mut tx = self.pool.begin().await?;
        let row = courier_store::couriers::set_online(&mut tx, id, online, takes_routes).await?;
        if !online {
            offers::withdraw_courier_offers(&mut tx, id, now()).await?;
        }
        tx.commit().await?;
        Ok(CourierView::from(&row))
    }

    /// Keeps where the courier is now, and on its trail (a point per
    /// `COURIER_TRACKING_TRAIL_EVERY_MS` at most).
    pub async fn report_position(
        &self,
        id: Uuid,
        latitude: f64,
        longitude: f64,
    ) -> Result<DateTime<Utc>, CourierError> {
        let seen_at = now();
        store::report_position(
            &self.pool,
            id,
            latitude,
            longitude,
            seen_at,
            self.trail_every,
        )
        .await?;
        Ok(seen_at)
    }

    /// Where the courier has been since `since`, oldest first: its latest [`TRAIL_SHOWN`]
    /// points.
    pub async fn trail_since(
        &self,
        id: Uuid,
        since: DateTime<Utc>,
    ) -> Result<Vec<TrailPoint>, sqlx::Error> {
        store::trail_since(&self.pool, id, since, TRAIL_SHOWN).await
    }
}

/// What couriers earn where their market says (`courier_pay` in the markets file).
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
        let metres: std::collections::HashMap<Uuid, i64> =
            courier_store::jobs::quoted_metres(&self.pool, &ids)
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
