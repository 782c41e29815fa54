//! What every handler can reach.

use std::sync::Arc;

use crate::auth::Authenticator;
use crate::config::Config;
use crate::markets::Markets;
use crate::pricing::PriceBooks;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub pool: sqlx::PgPool,
    pub authenticator: Authenticator,
    pub config: Arc<Config>,
    pub markets: Arc<Markets>,
    pub price_books: Arc<PriceBooks>,
    pub payments: Arc<crate::payments::Payments>,
    pub webhooks: Arc<crate::webhooks::Webhooks>,
    pub tracking: Arc<crate::tracking::Tracking>,
    pub texts: Arc<crate::texts::CustomerTexts>,
    pub couriers: crate::couriers::Couriers,
    pub fulfilment: crate::jobs::fulfilment::Fulfilment,
    pub sandbox: Arc<crate::sandbox::Simulator>,
    /// The accepted operator tokens and their names.
    pub operators: Arc<super::admin::operators::OperatorTokens>,
    /// Per-key request budgets of this instance.
    pub rate_limiter: Arc<crate::rate_limit::RateLimiter>,
    /// What bookings need (shared with the booking recovery worker).
    pub booking: crate::jobs::booking::BookingContext,
}
