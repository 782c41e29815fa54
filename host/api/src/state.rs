//! What every handler can reach.

use std::sync::Arc;

use courier_core::auth::Authenticator;
use courier_core::config::Config;
use courier_core::markets::Markets;
use courier_core::pricing::PriceBooks;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub pool: sqlx::PgPool,
    pub authenticator: Authenticator,
    pub config: Arc<Config>,
    pub markets: Arc<Markets>,
    pub price_books: Arc<PriceBooks>,
    pub payments: Arc<courier_core::payments::Payments>,
    pub webhooks: Arc<courier_core::webhooks::Webhooks>,
    pub tracking: Arc<courier_core::tracking::Tracking>,
    pub texts: Arc<courier_core::texts::CustomerTexts>,
    pub couriers: courier_core::couriers::Couriers,
    pub fulfilment: courier_core::jobs::fulfilment::Fulfilment,
    pub sandbox: Arc<courier_core::sandbox::Simulator>,
    /// The accepted operator tokens and their names.
    pub operators: Arc<courier_core::auth::operators::OperatorTokens>,
    /// Per-key request budgets of this instance.
    pub rate_limiter: Arc<courier_core::rate_limit::RateLimiter>,
    /// What bookings need (shared with the booking recovery worker).
    pub booking: courier_core::jobs::booking::BookingContext,
}
