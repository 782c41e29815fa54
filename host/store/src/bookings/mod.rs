//! A booking's SQL, in the order a booking runs it (the flow is told in
//! `courier_core::jobs::booking`):
//!
//! 1. [`claim`]: the idempotency key, the quote and the card, read in one statement, with the
//!    key claimed and the quote locked when the booking runs in a transaction;
//! 2. [`attempts`]: a live booking between its phases, while the provider answers its hold;
//! 3. [`write`](mod@write): the job, its quote marked used, its event, sandbox run and charge, and the
//!    key's stored answer, in one statement. Its conflicts (a key or quote taken meanwhile)
//!    are raised by `booking_conflict`, from `migrations/0110_bookings_written_at_once.sql`.

pub mod attempts;
pub mod claim;
pub mod write;
