//! What every handler can reach.

use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use courier_core::auth::Authenticator;
use courier_core::config::Config;
use courier_core::markets::Markets;
use courier_core::pricing::PriceBooks;

/// What every handler can reach, behind one `Arc`: axum clones the state for every request
/// and every layer that reads it, and a profile of quotes found cloning and dropping the
/// services one by one (a reference count each) took 9% of the service's CPU.
#[derive(Clone)]
pub struct AppState(Arc<AppServices>);

impl AppState {
    pub fn new(services: AppServices) -> Self {
        Self(Arc::new(services))
    }
}

impl Deref for AppState {
    type Target = AppServices;

    fn deref(&self) -> &AppServices {
        &self.0
    }
}

/// The services of [`AppState`].
pub struct AppServices {
    /// Whether the database answers (`/readyz`).
    pub readiness: courier_core::infra::db::Readiness,
    pub authenticator: Authenticator,
    pub config: Arc<Config>,
    pub markets: Arc<Markets>,
    pub price_books: Arc<PriceBooks>,
    /// Writes quotes, several in one statement under load.
    pub quote_writer: courier_core::quotes::QuoteWriter,
    pub payments: Arc<courier_core::payments::Payments>,
    pub webhooks: Arc<courier_core::webhooks::Webhooks>,
    pub tracking: Arc<courier_core::tracking::Tracking>,
    pub texts: Arc<courier_core::texts::CustomerTexts>,
    pub couriers: courier_core::couriers::Couriers,
    /// The couriers' app's sessions.
    pub courier_app_sessions: Arc<courier_core::couriers::CourierAppSessions>,
    pub fulfilment: courier_core::jobs::fulfilment::Fulfilment,
    /// Reads a merchant's jobs.
    pub jobs: courier_core::jobs::reading::JobReader,
    /// What needs an operator now, and the operators' search.
    pub desk: courier_core::operations::OperationsDesk,
    /// Merchants, their keys and settings, as operators manage them.
    pub merchants: courier_core::merchants::Merchants,
    /// Merchants' teams: the people who sign in to the console.
    pub teams: courier_core::team::Teams,
    /// Operators' accounts: invitations, sign-in.
    pub operator_accounts: courier_core::operator_accounts::OperatorAccounts,
    /// The operators' audit trail.
    pub audit: courier_core::audit::AuditTrail,
    pub sandbox: Arc<courier_core::sandbox::Simulator>,
    /// The accepted operator tokens and their names.
    pub operators: Arc<courier_core::auth::operators::OperatorTokens>,
    /// Per-key request budgets of this instance.
    pub rate_limiter: Arc<courier_core::rate_limit::RateLimiter>,
    /// What bookings need (shared with the booking recovery worker).
    pub booking: courier_core::jobs::booking::BookingContext,
    /// Whether this instance is stopping.
    pub draining: Draining,
    /// The merchant console's sessions.
    pub console_sessions: Arc<courier_core::auth::ConsoleSessions>,
    /// The operator console's sessions.
    pub operator_sessions: Arc<courier_core::auth::operator_sessions::OperatorSessions>,
    /// Failed merchant sign-ins per client address.
    pub auth_failures: Arc<courier_core::auth::failures::AddressBudget>,
    /// How fast addresses past their failure budget are refused.
    pub refusal_pace: Arc<courier_core::auth::failures::RefusalPace>,
    /// Whose `X-Forwarded-For` names the client.
    pub trusted_proxies: Arc<courier_core::auth::client::TrustedProxies>,
    /// Requests to the public routes per client address.
    pub public_requests: Arc<courier_core::auth::failures::AddressBudget>,
    /// Tracking-page lookups in progress at once.
    pub tracking_slots: Arc<tokio::sync::Semaphore>,
    /// The plugin engine: what its components' recent calls were.
    pub plugin_engine: courier_core::components::PluginEngine,
}

/// Set once the instance is told to stop: `/readyz` answers 503 `service.draining` and HTTP/1
/// responses close their connection, while requests are still served for the drain period.
#[derive(Clone, Debug, Default)]
pub struct Draining(Arc<AtomicBool>);

impl Draining {
    pub fn begin(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_on(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
