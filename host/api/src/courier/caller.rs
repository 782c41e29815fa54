//! The courier behind a request, put in its extensions by `require_courier`.

use axum::Extension;
use courier_core::couriers::CourierIdentity;

pub(super) type Courier = Extension<CourierIdentity>;
