//! Price books: uploads per market (validated before they are kept), activations (a hot swap
//! that reaches every process), and pricing a journey with a market's active book.
//!
//! Each market's active book sits in a [`Slot`]: a request takes the `Arc` when it starts, so
//! an activation never disturbs a call in flight, and every price comes from exactly one
//! version. Activations are announced with `NOTIFY` on [`store::ACTIVATION_CHANNEL`] in the same
//! transaction; every process listens, and also reconciles periodically as a safety net.

mod compare;
pub mod convert;

pub use compare::{COMPARE_SAMPLE, Comparison};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use courier_plugins::{
    BookInfo, PluginEngine, PluginError, PreparedSettings, PriceBook, PriceLine, PriceRefusal,
    PriceRequest, Slot,
};
use serde::Serialize;
use sqlx::PgPool;
use thiserror::Error;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::infra::db::listen::Notice;
use crate::markets::{Market, Markets};
use courier_store::price_books as store;

use courier_domain::error::Code;
use courier_domain::error::ErrorCode;

pub const VERSION_NOT_FOUND: Code = Code::new(
    404,
    "price_book.version_not_found",
    "The market has no upload with that version; also a version in the path that is not a whole number of 32 bits (checked after `market.not_found`).",
);
pub const REJECTED: Code = Code::new(
    422,
    "price_book.rejected",
    "The component is not a working price book (does not compile, wrong world, traps, runs past its deadline, prices at zero).",
);
pub const INVALID_SETTINGS: Code = Code::new(
    422,
    "price_book.invalid_settings",
    "The book refuses the settings, or does not price a vehicle the market offers.",
);
pub const PRICING_UNAVAILABLE: Code = Code::new(
    503,
    "pricing.unavailable",
    "The market's price book failed (the operator is told through the log).",
)
.with_fixed_message("pricing is unavailable in this market right now; try again shortly");

/// How often every process re-reads the active versions, in case a notification was missed.
const RECONCILE_EVERY: Duration = Duration::from_secs(10);
/// Who made the activations a process makes on its own (first start of a market).
const SYSTEM: &str = "system";

#[derive(Debug, Error, ErrorCode)]
pub enum PriceBookError {
    #[error("there is no market {0:?}")]
    #[code(crate::markets::MARKET_NOT_FOUND)]
    UnknownMarket(String),
    #[error("market {market:?} has no price book upload {version}")]
    #[code(VERSION_NOT_FOUND)]
    UnknownVersion { market: String, version: String },
    #[error("the component is not a usable price book: {0}")]
    #[code(REJECTED)]
    Rejected(String),
    #[error("the price book refuses these settings: {0}")]
    #[code(INVALID_SETTINGS)]
    InvalidSettings(String),
    #[error("market {0:?} has no default component named {1:?}")]
    #[code(fault)]
    UnknownDefault(String, String),
    #[error(transparent)]
    #[code(fault)]
    Store(#[from] sqlx::Error),
}

/// Why a journey got no price.
#[derive(Debug, Error, ErrorCode)]
pub enum PricingError {
    #[error("the market has no active price book yet")]
    #[code(PRICING_UNAVAILABLE)]
    NoActiveBook,
    #[error("the price book does not offer this vehicle")]
    #[code(courier_domain::quote::VEHICLE_NOT_AVAILABLE)]
    VehicleNotOffered,
    #[error("the price book does not cover this journey")]
    #[code(courier_domain::quote::DESTINATION_NOT_COVERED)]
    NotCovered,
    #[error("the price book's settings are invalid: {0}")]
    #[code(PRICING_UNAVAILABLE)]
    InvalidSettings(String),
    #[error("the price book failed: {0}")]
    #[code(PRICING_UNAVAILABLE)]
    Plugin(#[from] PluginError),
}

/// A market's active price book.
pub struct ActiveBook {
    pub price_book_version: i32,
    pub upload_version: i32,
    pub book: PriceBook,
    /// The settings as the book prepared them when this version was loaded.
    pub settings: PreparedSettings,
}

/// A price and the version of the book that made it.
#[derive(Debug)]
pub struct Priced {
    pub lines: Vec<PriceLine>,
    pub price_book_version: i32,
}

/// A price-book upload of a market.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = PriceBookUpload)]
pub struct UploadSummary {
    pub market: String,
    pub version: i32,
    pub name: String,
    pub version_label: String,
    pub sha256: String,
    pub uploaded_by: String,
    pub uploaded_at: DateTime<Utc>,
    /// The `price_book_version`s under which this upload was activated.
    pub activations: Vec<i32>,
    /// Whether this upload is the market's book in force.
    pub active: bool,
}

/// One quote of a [`Comparison`], re-priced: `after_minor` is None where the new book refuses
/// to price it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repriced {
    pub quote_id: uuid::Uuid,
    pub vehicle: courier_domain::Vehicle,
    pub distance_metres: i32,
    pub currency: String,
    pub before_minor: i64,
    pub after_minor: Option<i64>,
}

/// An upload made the market's book in force.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = PriceBookActivation)]
pub struct Activation {
    pub market: String,
    pub version: i32,
    pub price_book_version: i32,
}

pub struct PriceBooks {
    engine: PluginEngine,
    pool: PgPool,
    markets: Arc<Markets>,
    active: HashMap<String, Slot<Option<ActiveBook>>>,
    /// Loaded components by sha256, so re-activating a version does not compile again.
    loaded: Mutex<HashMap<String, PriceBook>>,
}

impl PriceBooks {
    /// Registers each market's default book on its first start, loads every active book.
    pub async fn start(
        engine: PluginEngine,
        pool: PgPool,
        markets: Arc<Markets>,
    ) -> Result<Arc<Self>, PriceBookError> {
        let active = markets
            .all()
            .iter()
            .map(|m| (m.id().to_owned(), Slot::new(None)))
            .collect();
        let books = Arc::new(Self {
            engine,
            pool,
            markets,
            active,
            loaded: Mutex::new(HashMap::new()),
        });
        for market in books.markets.all() {
            books.register_default(market).await?;
        }
        books.refresh_all().await?;
        Ok(books)
    }

    /// Keeps this process's active books in step with every other process's activations:
    /// follows `notices` (on [`store::ACTIVATION_CHANNEL`], listened to before this is called)
    /// until the workers stop. Re-reads every market at once (activations made since start-up),
    /// when notices may have been missed, and every `RECONCILE_EVERY` in any case.
    pub fn follow(
        self: &Arc<Self>,
        mut notices: UnboundedReceiver<Notice>,
        workers: &crate::infra::workers::Workers,
    ) {
        let books = Arc::clone(self);
        workers.spawn(move |_| async move {
            if let Err(error) = books.refresh_all().await {
                tracing::warn!(%error, "reading price-book activations failed; retrying");
            }
            loop {
                let refreshed = match tokio::time::timeout(RECONCILE_EVERY, notices.recv()).await {
                    Ok(Some(Notice::Payload(market_id))) => books.refresh(&market_id).await,
                    Ok(Some(Notice::Missed)) | Err(_) => books.refresh_all().await,
                    Ok(None) => return,
                };
                if let Err(error) = refreshed {
                    tracing::warn!(%error, "following price-book activations failed; retrying");
                }
            }
        });
    }

    /// The active book of `market_id`, if it has one.
    pub fn active(&self, market_id: &str) -> Option<Arc<Option<ActiveBook>>> {
        self.active.get(market_id).map(Slot::get)
    }

    /// Prices a journey with the market's active book. Fast: call it on the request path.
    pub fn price(&self, market_id: &str, request: &PriceRequest) -> Result<Priced, PricingError> {
        let active = self.active(market_id).ok_or(PricingError::NoActiveBook)?;
        let active = active.as_ref().as_ref().ok_or(PricingError::NoActiveBook)?;
        price_with(active, request).map(|lines| Priced {
            lines,
            price_book_version: active.price_book_version,
        })
    }

    /// Validates and keeps a new upload for `market_id`; returns its version.
    pub async fn upload(
        &self,
        market_id: &str,
        component: Vec<u8>,
        settings: serde_json::Value,
        uploaded_by: &str,
    ) -> Result<UploadSummary, PriceBookError> {
        let market = self.market(market_id)?;
        let book = self.load(component.clone()).await?;
        let settings_text = settings.to_string();
        let info = self.check(market, &book, &settings_text).await?;
        let mut tx = self.pool.begin().await?;
        store::lock_market(&mut tx, market_id).await?;
        store::insert_component(&mut tx, book.sha256(), "price-book", &component).await?;
        let version = store::insert_upload(
            &mut tx,
            &store::NewUpload {
                market_id,
                sha256: book.sha256(),
                name: &info.name,
                version_label: &info.version,
                settings: &settings,
                uploaded_by,
            },
        )
        .await?;
        crate::audit::record(
            &mut tx,
            &crate::audit::AuditRecord {
                operator: uploaded_by,
                action: crate::audit::AuditAction::PriceBookUploaded,
                target_type: "price_book",
                target_id: format!("{market_id}/{version}"),
                merchant_id: None,
                before: None,
                after: Some(serde_json::json!({
                    "market": market_id,
                    "version": version,
                    "name": info.name,
                    "version_label": info.version,
                    "sha256": book.sha256(),
                    "settings": settings,
                })),
                occurred_at: crate::infra::clock::now(),
            },
        )
        .await?;
        tx.commit().await?;
        tracing::info!(
            market = market_id,
            version,
            uploaded_by,
            "price book uploaded"
        );
        self.summary(market_id, version).await
    }

    /// Makes upload `version` the active book of `market_id` under a new price_book_version.
    pub async fn activate(
        &self,
        market_id: &str,
        version: i32,
        activated_by: &str,
    ) -> Result<Activation, PriceBookError> {
        self.market(market_id)?;
        let mut tx = self.pool.begin().await?;
        store::lock_market(&mut tx, market_id).await?;
        if !store::upload_exists(&mut tx, market_id, version).await? {
            return Err(PriceBookError::UnknownVersion {
                market: market_id.to_owned(),
                version: version.to_string(),
            });
        }
        let previous = store::active_upload_version(&mut tx, market_id).await?;
        let price_book_version =
            store::insert_activation(&mut tx, market_id, version, activated_by).await?;
        store::notify_activation(&mut tx, market_id).await?;
        // Activating an upload older than the one in force is a rollback.
        let action = match previous {
            Some(active) if version < active => crate::audit::AuditAction::PriceBookRolledBack,
            _ => crate::audit::AuditAction::PriceBookActivated,
        };
        crate::audit::record(
            &mut tx,
            &crate::audit::AuditRecord {
                operator: activated_by,
                action,
                target_type: "price_book",
                target_id: format!("{market_id}/{version}"),
                merchant_id: None,
                before: Some(serde_json::json!({"market": market_id, "active_version": previous})),
                after: Some(serde_json::json!({
                    "market": market_id,
                    "active_version": version,
                    "price_book_version": price_book_version,
                })),
                occurred_at: crate::infra::clock::now(),
            },
        )
        .await?;
        tx.commit().await?;
        tracing::info!(
            market = market_id,
            version,
            price_book_version,
            activated_by,
            "price book activated"
        );
        self.refresh(market_id).await?;
        Ok(Activation {
            market: market_id.to_owned(),
            version,
            price_book_version,
        })
    }

    pub async fn list(&self, market_id: &str) -> Result<Vec<UploadSummary>, PriceBookError> {
        self.market(market_id)?;
        let active = store::active(&self.pool, market_id).await?;
        Ok(store::uploads(&self.pool, market_id)
            .await?
            .into_iter()
            .map(|row| summary(market_id, row, active.as_ref().map(|a| a.upload_version)))
            .collect())
    }

    /// A loaded upload of `market_id`, for pricing outside the active slot (comparisons).
    pub async fn upload_book(
        &self,
        market_id: &str,
        version: i32,
    ) -> Result<ActiveBook, PriceBookError> {
        self.market(market_id)?;
        let row = store::upload(&self.pool, market_id, version)
            .await?
            .ok_or_else(|| PriceBookError::UnknownVersion {
                market: market_id.to_owned(),
                version: version.to_string(),
            })?;
        let book = self.load_by_hash(&row.sha256).await?;
        let settings = prepare(&book, &row.settings.to_string())?;
        Ok(ActiveBook {
            price_book_version: 0,
            upload_version: version,
            book,
            settings,
        })
    }

    /// The limits every price book's call runs under.
    pub fn limits(&self) -> &courier_plugins::Limits {
        self.engine.limits()
    }

    /// The book in force in each market, as operators see it.
    pub async fn in_use(&self) -> Result<Vec<crate::components::ComponentInUse>, PriceBookError> {
        let limits = self.engine.limits();
        let mut in_use = Vec::new();
        for market in self.markets.all() {
            let uploads = self.list(market.id()).await?;
            in_use.extend(uploads.into_iter().filter(|u| u.active).map(|u| {
                crate::components::ComponentInUse {
                    kind: "price book",
                    used_for: format!("market {}", u.market),
                    name: u.name,
                    version: u.version_label,
                    sha256: u.sha256,
                    world: courier_plugins::PRICE_BOOK_WORLD.to_owned(),
                    deadline: limits.call_deadline,
                    memory_bytes: limits.memory_bytes,
                    hosts: Vec::new(),
                }
            }));
        }
        Ok(in_use)
    }

    /// Re-prices the market's recent quotes under upload `version`; see [`Comparison`].
    pub async fn compare(
        &self,
        market_id: &str,
        version: i32,
    ) -> Result<Comparison, PriceBookError> {
        Ok(self.compare_quotes(market_id, version).await?.0)
    }

    /// [`compare`](Self::compare), with each quote re-priced (newest first), for a person to
    /// read them one by one.
    pub async fn compare_quotes(
        &self,
        market_id: &str,
        version: i32,
    ) -> Result<(Comparison, Vec<Repriced>), PriceBookError> {
        let market = self.market(market_id)?;
        let candidate = self.upload_book(market.id(), version).await?;
        let recent =
            courier_store::quotes::recent_in_market(&self.pool, market.id(), COMPARE_SAMPLE)
                .await?;
        let timezone = market.definition.timezone;
        let mut comparison = Comparison {
            market: market.id().to_owned(),
            version,
            ..Comparison::default()
        };
        tokio::task::spawn_blocking(move || {
            let mut repriced = Vec::with_capacity(recent.len());
            for quote in &recent {
                let after = match reprice(&candidate, quote, timezone) {
                    Ok(total) => Some(total),
                    Err(PricingError::VehicleNotOffered | PricingError::NotCovered) => None,
                    Err(e) => {
                        return Err(PriceBookError::Rejected(format!("re-pricing failed: {e}")));
                    }
                };
                comparison.record(quote.total_amount_minor, after);
                repriced.push(Repriced {
                    quote_id: quote.id,
                    vehicle: quote.vehicle,
                    distance_metres: quote.distance_metres,
                    currency: quote.currency.clone(),
                    before_minor: quote.total_amount_minor,
                    after_minor: after,
                });
            }
            Ok((comparison.finish(), repriced))
        })
        .await
        .map_err(|e| PriceBookError::Rejected(format!("comparison stopped: {e}")))?
    }

    async fn summary(
        &self,
        market_id: &str,
        version: i32,
    ) -> Result<UploadSummary, PriceBookError> {
        let active = store::active(&self.pool, market_id).await?;
        let row = store::upload(&self.pool, market_id, version)
            .await?
            .ok_or_else(|| PriceBookError::UnknownVersion {
                market: market_id.to_owned(),
                version: version.to_string(),
            })?;
        Ok(summary(market_id, row, active.map(|a| a.upload_version)))
    }

    /// An upload's version as a path names it: an unknown market first, then anything that is
    /// not a version number is an upload that does not exist.
    pub fn parse_version(&self, market_id: &str, raw: &str) -> Result<i32, PriceBookError> {
        self.market(market_id)?;
        raw.parse::<i32>()
            .ok()
            .filter(|version| *version > 0)
            .ok_or_else(|| PriceBookError::UnknownVersion {
                market: market_id.to_owned(),
                version: raw.to_owned(),
            })
    }

    fn market(&self, market_id: &str) -> Result<&Arc<Market>, PriceBookError> {
        self.markets
            .get(market_id)
            .ok_or_else(|| PriceBookError::UnknownMarket(market_id.to_owned()))
    }

    /// The market's configured book and settings become upload 1 and price_book_version 1,
    /// the first time the market starts.
    async fn register_default(&self, market: &Market) -> Result<(), PriceBookError> {
        let mut conn = self.pool.acquire().await?;
        if store::has_activation(&mut conn, market.id()).await? {
            return Ok(());
        }
        drop(conn);
        let definition = &market.definition;
        let component = default_component(&definition.price_book).ok_or_else(|| {
            PriceBookError::UnknownDefault(definition.id.clone(), definition.price_book.clone())
        })?;
        let book = self.load(component.to_vec()).await?;
        let settings_text = definition.price_book_settings.to_string();
        let info = self.check(market, &book, &settings_text).await?;
        let mut tx = self.pool.begin().await?;
        store::lock_market(&mut tx, market.id()).await?;
        // Another process may have registered it while this one was checking.
        if store::has_activation(&mut tx, market.id()).await? {
            return Ok(());
        }
        store::insert_component(&mut tx, book.sha256(), "price-book", component).await?;
        let version = store::insert_upload(
            &mut tx,
            &store::NewUpload {
                market_id: market.id(),
                sha256: book.sha256(),
                name: &info.name,
                version_label: &info.version,
                settings: &definition.price_book_settings,
                uploaded_by: SYSTEM,
            },
        )
        .await?;
        store::insert_activation(&mut tx, market.id(), version, SYSTEM).await?;
        store::notify_activation(&mut tx, market.id()).await?;
        tx.commit().await?;
        tracing::info!(
            market = market.id(),
            "default price book registered and activated"
        );
        Ok(())
    }

    /// Validation before an upload is kept: the book accepts the settings, offers every vehicle
    /// of the market, and prices sample journeys for each without failing.
    async fn check(
        &self,
        market: &Market,
        book: &PriceBook,
        settings: &str,
    ) -> Result<BookInfo, PriceBookError> {
        let book = book.clone();
        let settings = settings.to_owned();
        let definition_vehicles = market.definition.vehicles.clone();
        let market_id = market.id().to_owned();
        let currency = market.definition.currency.code();
        let timezone = market.definition.timezone;
        tokio::task::spawn_blocking(move || {
            let settings = prepare(&book, &settings)?;
            let info = settings.info().clone();
            let active = ActiveBook {
                price_book_version: 0,
                upload_version: 0,
                book,
                settings,
            };
            for vehicle in definition_vehicles {
                let vehicle = convert::vehicle(vehicle);
                if !info.vehicles.contains(&vehicle) {
                    return Err(PriceBookError::InvalidSettings(format!(
                        "the market offers {} but the book does not price it",
                        vehicle.as_str()
                    )));
                }
                for request in sample_requests(&market_id, &currency, timezone, vehicle) {
                    match price_with(&active, &request) {
                        Ok(lines) if courier_plugins::total_minor(&lines) > 0 => {}
                        Ok(_) => {
                            return Err(PriceBookError::Rejected(format!(
                                "a {} journey of {} m priced at zero or less",
                                vehicle.as_str(),
                                request.distance_metres
                            )));
                        }
                        // A book may need postcodes the samples do not have.
                        Err(PricingError::NotCovered) => {}
                        Err(PricingError::InvalidSettings(reason)) => {
                            return Err(PriceBookError::InvalidSettings(reason));
                        }
                        Err(e) => {
                            return Err(PriceBookError::Rejected(format!(
                                "pricing a sample {} journey: {e}",
                                vehicle.as_str()
                            )));
                        }
                    }
                }
            }
            Ok(info)
        })
        .await
        .map_err(|e| PriceBookError::Rejected(format!("validation stopped: {e}")))?
    }

    /// Compiles (or takes from the on-disk cache) and links a component, off the async path.
    async fn load(&self, component: Vec<u8>) -> Result<PriceBook, PriceBookError> {
        let engine = self.engine.clone();
        let book = tokio::task::spawn_blocking(move || PriceBook::load(&engine, &component))
            .await
            .map_err(|e| PriceBookError::Rejected(format!("loading stopped: {e}")))?
            .map_err(|e| PriceBookError::Rejected(e.to_string()))?;
        self.loaded
            .lock()
            .expect("lock poisoned")
            .insert(book.sha256().to_owned(), book.clone());
        Ok(book)
    }

    async fn load_by_hash(&self, sha256: &str) -> Result<PriceBook, PriceBookError> {
        let cached = self
            .loaded
            .lock()
            .expect("lock poisoned")
            .get(sha256)
            .cloned();
        match cached {
            Some(book) => Ok(book),
            None => {
                let bytes = store::component_bytes(&self.pool, sha256).await?;
                self.load(bytes).await
            }
        }
    }

    async fn refresh_all(&self) -> Result<(), PriceBookError> {
        for market in self.markets.all() {
            self.refresh(market.id()).await?;
        }
        Ok(())
    }

    /// Swaps in the market's latest activation if this process does not have it yet.
    async fn refresh(&self, market_id: &str) -> Result<(), PriceBookError> {
        let Some(slot) = self.active.get(market_id) else {
            return Ok(());
        };
        let Some(row) = store::active(&self.pool, market_id).await? else {
            return Ok(());
        };
        let current = slot.get();
        if current.as_ref().as_ref().map(|a| a.price_book_version) == Some(row.price_book_version) {
            return Ok(());
        }
        let book = self.load_by_hash(&row.sha256).await?;
        let settings = prepare(&book, &row.settings.to_string())?;
        slot.replace(Some(ActiveBook {
            price_book_version: row.price_book_version,
            upload_version: row.upload_version,
            book,
            settings,
        }));
        tracing::info!(
            market = market_id,
            price_book_version = row.price_book_version,
            "active price book swapped in"
        );
        Ok(())
    }
}

fn summary(market_id: &str, row: store::UploadRow, active_upload: Option<i32>) -> UploadSummary {
    UploadSummary {
        market: market_id.to_owned(),
        active: active_upload == Some(row.version),
        version: row.version,
        name: row.name,
        version_label: row.version_label,
        sha256: row.sha256,
        uploaded_by: row.uploaded_by,
        uploaded_at: row.uploaded_at,
        activations: row.activations,
    }
}

/// The book's own check and preparation of a settings document.
fn prepare(book: &PriceBook, settings: &str) -> Result<PreparedSettings, PriceBookError> {
    match book.prepare(settings) {
        Ok(Ok(prepared)) => Ok(prepared),
        Ok(Err(reason)) => Err(PriceBookError::InvalidSettings(reason)),
        Err(e) => Err(PriceBookError::Rejected(e.to_string())),
    }
}

/// Prices with one book, mapping its refusals.
pub fn price_with(
    active: &ActiveBook,
    request: &PriceRequest,
) -> Result<Vec<PriceLine>, PricingError> {
    match active.book.price(request, &active.settings)? {
        Ok(lines) => Ok(lines),
        Err(PriceRefusal::VehicleNotOffered) => Err(PricingError::VehicleNotOffered),
        Err(PriceRefusal::NotCovered) => Err(PricingError::NotCovered),
        Err(PriceRefusal::InvalidSettings(reason)) => Err(PricingError::InvalidSettings(reason)),
    }
}

/// The components a markets file may name as its default price book.
fn default_component(name: &str) -> Option<&'static [u8]> {
    (name == "standard-price-book").then_some(courier_plugins::defaults::STANDARD_PRICE_BOOK)
}

/// Journeys a new book must price: short and long, light and heavy-ish, now.
fn sample_requests(
    market_id: &str,
    currency: &str,
    timezone: chrono_tz::Tz,
    vehicle: courier_plugins::Vehicle,
) -> Vec<PriceRequest> {
    [(1_200, 300, 0), (9_500, 1_500, 1_000)]
        .into_iter()
        .map(
            |(distance_metres, duration_seconds, weight_grams)| PriceRequest {
                market: market_id.to_owned(),
                currency: currency.to_owned(),
                vehicle,
                distance_metres,
                duration_seconds,
                weight_grams,
                pickup_postcode: None,
                dropoff_postcode: None,
                local_time: convert::local_time(Utc::now(), timezone),
                demand_permille: 0,
                merchant: "validation".to_owned(),
            },
        )
        .collect()
}

/// What `quote` comes to under `book`.
fn reprice(
    book: &ActiveBook,
    quote: &courier_store::quotes::QuoteRow,
    timezone: chrono_tz::Tz,
) -> Result<i64, PricingError> {
    let vehicle = quote.vehicle;
    let request = courier_plugins::PriceRequest {
        market: quote.market_id.clone(),
        currency: quote.currency.clone(),
        vehicle: convert::vehicle(vehicle),
        distance_metres: u32::try_from(quote.distance_metres).unwrap_or(0),
        duration_seconds: u32::try_from(quote.duration_seconds).unwrap_or(0),
        weight_grams: u32::try_from(quote.weight_grams).unwrap_or(0),
        pickup_postcode: quote.pickup_postcode.clone(),
        dropoff_postcode: quote.dropoff_postcode.clone(),
        local_time: convert::local_time(quote.priced_for, timezone),
        demand_permille: u32::try_from(quote.demand_permille).unwrap_or(u32::MAX),
        merchant: quote.merchant_id.to_string(),
    };
    price_with(book, &request).map(|lines| courier_plugins::total_minor(&lines))
}
