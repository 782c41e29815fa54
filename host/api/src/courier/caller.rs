//! The courier behind a request, put in its extensions by `require_courier`, and the key its
//! move was sent with.

use axum::Extension;
use axum::http::HeaderMap;
use courier_core::couriers::CourierIdentity;
use courier_core::jobs::fulfilment::FulfilmentError;

use crate::error::ApiError;

pub(super) type Courier = Extension<CourierIdentity>;

/// The `Idempotency-Key` of a courier's move, if it has one; the move checks it.
pub(super) fn move_key(headers: &HeaderMap) -> Result<Option<&str>, ApiError> {
    headers
        .get("idempotency-key")
        .map(|value| courier_core::idempotency::header_key(Some(value.as_bytes())))
        .transpose()
        .map_err(|e| FulfilmentError::from(e).into())
}
