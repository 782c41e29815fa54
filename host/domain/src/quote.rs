//! A quote request, parsed field by field so each problem gets the spec's own code.

use chrono::{DateTime, SubsecRound, Utc};
use courier_geo::{LatLon, Vehicle};
use serde_json::Value;
use thiserror::Error;

use crate::numeric::{Numeric, NumericValue};

use crate::error::Code;
use crate::error::ErrorCode;

pub const INVALID_PICKUP: Code = Code::new(
    422,
    "request.invalid_pickup",
    "Quotes: the pickup is missing, or its coordinates are not numbers or not a point on Earth. Routes: `fromLatitude`/`fromLongitude` missing, not numbers, or not a point on Earth.",
);
pub const INVALID_DROPOFF: Code = Code::new(
    422,
    "request.invalid_dropoff",
    "Quotes: the drop-off is missing, or its coordinates are not numbers or not a point on Earth. Routes: the same for `toLatitude`/`toLongitude`.",
);
pub const INVALID_WEIGHT: Code = Code::new(
    422,
    "request.invalid_weight",
    "`weight_grams` is not a whole number ≥ 0.",
);
pub const INVALID_SCHEDULED_FOR: Code = Code::new(
    422,
    "request.invalid_scheduled_for",
    "`scheduled_for` is not an ISO 8601 date-time with an offset; for quotes, also more than 30 days ahead.",
);
pub const SCHEDULED_IN_PAST: Code = Code::new(
    422,
    "job.scheduled_in_past",
    "`scheduled_for` has passed (the same code for quotes and bookings).",
);
pub const ORIGIN_NOT_COVERED: Code = Code::new(
    422,
    "pricing.origin_not_covered",
    "The pickup (routes: the start) is outside every market.",
);
pub const DESTINATION_NOT_COVERED: Code = Code::new(
    422,
    "pricing.destination_not_covered",
    "The drop-off (routes: the end) is outside the pickup's market, or, for quotes, the price book does not cover it (postcode zones).",
);
pub const VEHICLE_NOT_AVAILABLE: Code = Code::new(
    422,
    "pricing.vehicle_not_available",
    "The market (or, for quotes, its price book) does not offer the vehicle (quotes, routes).",
);
pub const NO_ROUTE: Code = Code::new(
    422,
    "pricing.no_route",
    "No road within 500 m of a stop, or no road connection, for the vehicle (quotes, routes).",
);

/// How far ahead a journey may be priced.
pub const MAX_SCHEDULE_AHEAD_DAYS: i64 = 30;

#[derive(Debug, Error, PartialEq, Eq, ErrorCode)]
pub enum QuoteRequestError {
    #[error("pickup: {0}")]
    #[code(INVALID_PICKUP)]
    InvalidPickup(String),
    #[error("drop-off: {0}")]
    #[code(INVALID_DROPOFF)]
    InvalidDropoff(String),
    #[error("{0:?} is not a vehicle; use bicycle, electric_bicycle, motorcycle, car or van")]
    #[code(crate::error::UNKNOWN_VEHICLE)]
    UnknownVehicle(String),
    #[error("weight_grams must be a whole number of grams, zero or more")]
    #[code(INVALID_WEIGHT)]
    InvalidWeight,
    #[error("scheduled_for: {0}")]
    #[code(INVALID_SCHEDULED_FOR)]
    InvalidScheduledFor(String),
    #[error("scheduled_for has passed")]
    #[code(SCHEDULED_IN_PAST)]
    ScheduledInPast,
    #[error("the body must be a JSON object")]
    #[code(crate::error::INVALID_BODY)]
    NotAnObject,
    #[error(transparent)]
    #[code(via)]
    PickupReady(#[from] crate::job::ready::ReadyError),
}

/// A quoted stop: coordinates locate, the postcode matters only in postcode-priced markets.
#[derive(Clone, Debug, PartialEq)]
pub struct Stop {
    pub point: LatLon,
    pub postcode: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct QuoteRequest {
    pub pickup: Stop,
    pub dropoff: Stop,
    pub vehicle: Option<Vehicle>,
    pub weight_grams: u32,
    pub scheduled_for: Option<DateTime<Utc>>,
    /// As sent; checked against the job's window by the quote's maker, which knows the
    /// dispatch deadline.
    pub pickup_ready_at: Option<DateTime<Utc>>,
}

impl QuoteRequest {
    pub fn parse(body: &Value, now: DateTime<Utc>) -> Result<Self, QuoteRequestError> {
        let body = body.as_object().ok_or(QuoteRequestError::NotAnObject)?;
        let pickup = stop(body.get("pickup")).map_err(QuoteRequestError::InvalidPickup)?;
        let dropoff = stop(body.get("dropoff")).map_err(QuoteRequestError::InvalidDropoff)?;
        let vehicle = match body.get("vehicle") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => Some(
                name.parse()
                    .map_err(|_| QuoteRequestError::UnknownVehicle(name.clone()))?,
            ),
            Some(other) => return Err(QuoteRequestError::UnknownVehicle(other.to_string())),
        };
        let weight_grams = match body.get("weight_grams") {
            None | Some(Value::Null) => 0,
            Some(value) => {
                serde_json::from_value::<Numeric<u32>>(value.clone())
                    .map_err(|_| QuoteRequestError::InvalidWeight)?
                    .0
            }
        };
        let scheduled_for = scheduled_for(body.get("scheduled_for"), now)?;
        let pickup_ready_at = crate::job::ready::parse(body.get("pickup_ready_at"))?;
        Ok(Self {
            pickup,
            dropoff,
            vehicle,
            weight_grams,
            scheduled_for,
            pickup_ready_at,
        })
    }
}

/// `scheduled_for`, which must be in the future (and not absurdly far).
pub fn scheduled_for(
    value: Option<&Value>,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, QuoteRequestError> {
    let text = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(text)) => text,
        Some(_) => {
            return Err(QuoteRequestError::InvalidScheduledFor(
                "must be an ISO 8601 date-time string".into(),
            ));
        }
    };
    let at = DateTime::parse_from_rfc3339(text.trim())
        .map_err(|_| {
            QuoteRequestError::InvalidScheduledFor(
                "must be an ISO 8601 date-time with an offset, e.g. 2026-11-21T18:30:00Z".into(),
            )
        })?
        .with_timezone(&Utc)
        // Stored with microsecond precision: compare what will be stored.
        .trunc_subsecs(6);
    if at <= now {
        return Err(QuoteRequestError::ScheduledInPast);
    }
    if at > now + chrono::Duration::days(MAX_SCHEDULE_AHEAD_DAYS) {
        return Err(QuoteRequestError::InvalidScheduledFor(format!(
            "may be at most {MAX_SCHEDULE_AHEAD_DAYS} days ahead"
        )));
    }
    Ok(Some(at))
}

fn stop(value: Option<&Value>) -> Result<Stop, String> {
    let object = value
        .and_then(Value::as_object)
        .ok_or_else(|| "must be an object with latitude and longitude".to_owned())?;
    let coordinate = |name: &str| -> Result<f64, String> {
        let value = object
            .get(name)
            .ok_or_else(|| format!("{name} is required"))?;
        serde_json::from_value::<Numeric<f64>>(value.clone())
            .map(|n| n.0)
            .map_err(|_| format!("{name} must be a number"))
    };
    let point = LatLon::new(coordinate("latitude")?, coordinate("longitude")?);
    if !point.is_valid() {
        return Err("latitude must be within -90..90 and longitude within -180..180".into());
    }
    let postcode = match object.get("postcode") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) if p.trim().is_empty() => None,
        Some(Value::String(p)) if p.len() <= 16 => Some(p.trim().to_owned()),
        Some(_) => return Err("postcode must be a string of at most 16 characters".into()),
    };
    Ok(Stop { point, postcode })
}

/// Whole numbers arrive as JSON numbers or numeric strings; used by other parsers too.
pub fn whole<T: NumericValue>(value: &Value) -> Option<T> {
    serde_json::from_value::<Numeric<T>>(value.clone())
        .ok()
        .map(|n| n.0)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-11-21T12:00:00Z".parse().unwrap()
    }

    fn parse(body: Value) -> Result<QuoteRequest, QuoteRequestError> {
        QuoteRequest::parse(&body, now())
    }

    fn body() -> Value {
        json!({
            "pickup": {"latitude": 47.14, "longitude": "9.52", "postcode": "9490"},
            "dropoff": {"latitude": "47.165", "longitude": 9.51},
        })
    }

    #[test]
    fn numbers_and_numeric_strings_locate_the_stops() {
        let request = parse(body()).unwrap();
        assert_eq!(request.pickup.point, LatLon::new(47.14, 9.52));
        assert_eq!(request.pickup.postcode.as_deref(), Some("9490"));
        assert_eq!(request.dropoff.point, LatLon::new(47.165, 9.51));
        assert_eq!(request.dropoff.postcode, None);
        assert_eq!(request.weight_grams, 0);
        assert_eq!(request.vehicle, None);
        assert_eq!(request.scheduled_for, None);
    }

    #[test]
    fn each_bad_field_gets_its_own_error() {
        let mut missing = body();
        missing["pickup"]
            .as_object_mut()
            .unwrap()
            .remove("latitude");
        assert!(
            matches!(parse(missing), Err(QuoteRequestError::InvalidPickup(m)) if m.contains("latitude"))
        );
        let mut off_earth = body();
        off_earth["dropoff"]["latitude"] = json!(91);
        assert!(matches!(
            parse(off_earth),
            Err(QuoteRequestError::InvalidDropoff(_))
        ));
        let mut no_dropoff = body();
        no_dropoff.as_object_mut().unwrap().remove("dropoff");
        assert!(matches!(
            parse(no_dropoff),
            Err(QuoteRequestError::InvalidDropoff(_))
        ));
        let mut text = body();
        text["pickup"]["longitude"] = json!("east");
        assert!(matches!(
            parse(text),
            Err(QuoteRequestError::InvalidPickup(_))
        ));
        let mut truck = body();
        truck["vehicle"] = json!("truck");
        assert_eq!(
            parse(truck),
            Err(QuoteRequestError::UnknownVehicle("truck".into()))
        );
        for weight in [json!(-1), json!(1.5), json!("heavy")] {
            let mut heavy = body();
            heavy["weight_grams"] = weight;
            assert_eq!(parse(heavy), Err(QuoteRequestError::InvalidWeight));
        }
        assert_eq!(
            QuoteRequest::parse(&json!([1]), now()),
            Err(QuoteRequestError::NotAnObject)
        );
    }

    #[test]
    fn weight_and_vehicle_are_read() {
        let mut request = body();
        request["weight_grams"] = json!("2500");
        request["vehicle"] = json!("electric_bicycle");
        let parsed = parse(request).unwrap();
        assert_eq!(parsed.weight_grams, 2500);
        assert_eq!(parsed.vehicle, Some(Vehicle::ElectricBicycle));
    }

    #[test]
    fn scheduled_for_must_be_a_future_date_time() {
        let at = |v: Value| scheduled_for(Some(&v), now());
        assert_eq!(
            at(json!("2026-11-21T14:00:00+01:00")).unwrap(),
            Some("2026-11-21T13:00:00Z".parse().unwrap())
        );
        assert_eq!(
            at(json!("2026-11-21T11:59:59Z")),
            Err(QuoteRequestError::ScheduledInPast)
        );
        assert!(matches!(
            at(json!("tomorrow")),
            Err(QuoteRequestError::InvalidScheduledFor(_))
        ));
        assert!(matches!(
            at(json!("2026-11-21T18:00:00")),
            Err(QuoteRequestError::InvalidScheduledFor(_))
        ));
        assert!(matches!(
            at(json!("2027-06-01T00:00:00Z")),
            Err(QuoteRequestError::InvalidScheduledFor(_))
        ));
        assert_eq!(at(Value::Null), Ok(None));
    }
}
