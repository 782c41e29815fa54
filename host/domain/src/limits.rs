//! A merchant's own request budgets.

/// Per-minute overrides of one merchant (None: the global default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LimitOverrides {
    pub quotes_per_minute: Option<u32>,
    pub bookings_per_minute: Option<u32>,
    pub reads_per_minute: Option<u32>,
}
