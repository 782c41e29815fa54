//! SQL, one module per table group. Queries only: rules live in `domain`.

pub mod merchants;
