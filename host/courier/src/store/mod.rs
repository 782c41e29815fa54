//! SQL, one module per table group. Queries only: rules live in `domain`.

pub mod bookings;
pub mod couriers;
pub mod dispatch;
pub mod fulfilment;
pub mod jobs;
pub mod merchants;
pub mod payments;
pub mod price_books;
pub mod quotes;
pub mod sandbox;
pub mod texts;
pub mod tracking;
pub mod webhooks;
pub mod writes;
