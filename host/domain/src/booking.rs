//! A booking request, parsed and checked field by field, so each problem gets the spec's code
//! and a message naming the stop, item or field at fault.

use chrono::{DateTime, Utc};
use courier_geo::LatLon;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;
use uuid::Uuid;

use crate::numeric::Numeric;
use crate::quote::{QuoteRequestError, scheduled_for, whole};

use crate::error::Code;
use crate::error::ErrorCode;

pub const QUOTE_NOT_FOUND: Code = Code::new(
    422,
    "quote.not_found",
    "No such quote for this merchant and environment (or `quote_id` is not a UUID).",
);
pub const QUOTE_EXPIRED: Code = Code::new(422, "quote.expired", "The quote is past `expires_at`.");
pub const QUOTE_ALREADY_USED: Code = Code::new(422, "quote.already_used", "The quote was booked.");
pub const STOP_MISMATCH: Code = Code::new(
    422,
    "quote.stop_mismatch",
    "A stop's coordinates are not the quoted point.",
);
pub const SCHEDULE_MISMATCH: Code = Code::new(
    422,
    "quote.schedule_mismatch",
    "`scheduled_for` is not what the quote was priced for.",
);
pub const INVALID_STOP: Code = Code::new(
    422,
    "request.invalid_stop",
    "A contact lacks coordinates, address, name or a usable phone; the message names the stop and the field.",
);
pub const ITEM_INVALID: Code = Code::new(
    422,
    "order.item_invalid",
    "An item has no name, a negative price, a quantity under one, or amounts too large; the message names the item.",
);
pub const DISCOUNT_EXCEEDS_ITEMS: Code = Code::new(
    422,
    "order.discount_exceeds_items",
    "`discount_minor` is more than the items come to.",
);
pub const INVALID_AMOUNT: Code = Code::new(
    422,
    "order.invalid_amount",
    "`discount_minor` or `items_total_minor` is not a whole number ≥ 0.",
);
pub const INVALID_NOTIFY_CUSTOMER: Code = Code::new(
    422,
    "request.invalid_notify_customer",
    "`notify_customer` is not a boolean or null.",
);

/// Longest free text accepted in a contact (address, name, notes).
const MAX_TEXT_CHARS: usize = 500;
/// Most items one booking may list.
pub const MAX_ITEMS: usize = 200;

#[derive(Debug, Error, PartialEq, Eq, ErrorCode)]
pub enum BookingRequestError {
    #[error("the body must be a JSON object")]
    #[code(crate::error::INVALID_BODY)]
    NotAnObject,
    #[error("quote_id must be the id of a quote")]
    #[code(QUOTE_NOT_FOUND)]
    QuoteNotFound,
    #[error("{0}")]
    #[code(INVALID_STOP)]
    InvalidStop(String),
    #[error("{0}")]
    #[code(ITEM_INVALID)]
    ItemInvalid(String),
    #[error("discount_minor ({discount}) exceeds what the items come to ({subtotal})")]
    #[code(DISCOUNT_EXCEEDS_ITEMS)]
    DiscountExceedsItems { discount: i64, subtotal: i64 },
    #[error("{0}")]
    #[code(INVALID_AMOUNT)]
    InvalidAmount(String),
    #[error("scheduled_for has passed")]
    #[code(crate::quote::SCHEDULED_IN_PAST)]
    ScheduledInPast,
    #[error("scheduled_for: {0}")]
    #[code(crate::quote::INVALID_SCHEDULED_FOR)]
    InvalidScheduledFor(String),
    #[error("notify_customer must be true, false or null")]
    #[code(INVALID_NOTIFY_CUSTOMER)]
    InvalidNotifyCustomer,
    #[error(transparent)]
    #[code(via)]
    PickupReady(#[from] crate::job::ready::ReadyError),
}

/// Which stop a contact is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopRole {
    Pickup,
    Dropoff,
}

impl StopRole {
    pub fn as_str(self) -> &'static str {
        match self {
            StopRole::Pickup => "pickup",
            StopRole::Dropoff => "dropoff",
        }
    }
}

/// A stop's contact, as stored and shown back ("as sent", the phone number normalised).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Contact {
    pub latitude: f64,
    pub longitude: f64,
    pub address: String,
    pub postcode: Option<String>,
    pub contact_name: String,
    pub contact_phone: String,
    pub notes: Option<String>,
}

impl Contact {
    pub fn point(&self) -> LatLon {
        LatLon::new(self.latitude, self.longitude)
    }
}

/// An order item with what its line comes to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Item {
    pub name: String,
    pub unit_price_minor: i64,
    pub quantity: i32,
    pub line_total_minor: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BookingRequest {
    pub quote_id: Uuid,
    pub pickup: Contact,
    pub dropoff: Contact,
    pub scheduled_for: Option<DateTime<Utc>>,
    pub items: Vec<Item>,
    pub items_subtotal_minor: i64,
    pub discount_minor: i64,
    pub items_total_minor: i64,
    pub notify_customer: Option<bool>,
    /// As sent; checked against the job's window when the quote is known.
    pub pickup_ready_at: Option<DateTime<Utc>>,
}

impl BookingRequest {
    /// Parses everything but the phone numbers' usability, which needs the market's country:
    /// see [`normalise_phone`].
    pub fn parse(body: &Value, now: DateTime<Utc>) -> Result<Self, BookingRequestError> {
        let body = body.as_object().ok_or(BookingRequestError::NotAnObject)?;
        let quote_id = body
            .get("quote_id")
            .and_then(Value::as_str)
            .and_then(|id| Uuid::parse_str(id.trim()).ok())
            .ok_or(BookingRequestError::QuoteNotFound)?;
        let pickup = contact(body.get("pickup"), StopRole::Pickup)?;
        let dropoff = contact(body.get("dropoff"), StopRole::Dropoff)?;
        let scheduled_for = scheduled_for(body.get("scheduled_for"), now).map_err(|e| match e {
            QuoteRequestError::ScheduledInPast => BookingRequestError::ScheduledInPast,
            other => BookingRequestError::InvalidScheduledFor(
                other
                    .to_string()
                    .trim_start_matches("scheduled_for: ")
                    .to_owned(),
            ),
        })?;
        let items = items(body.get("items"))?;
        let items_subtotal_minor = items
            .iter()
            .try_fold(0i64, |sum, item| sum.checked_add(item.line_total_minor))
            .ok_or_else(|| {
                BookingRequestError::ItemInvalid("the items together come to too much".into())
            })?;
        let discount_minor =
            optional_amount(body.get("discount_minor"), "discount_minor")?.unwrap_or(0);
        if discount_minor > items_subtotal_minor {
            return Err(BookingRequestError::DiscountExceedsItems {
                discount: discount_minor,
                subtotal: items_subtotal_minor,
            });
        }
        let items_total_minor =
            optional_amount(body.get("items_total_minor"), "items_total_minor")?
                .unwrap_or(items_subtotal_minor - discount_minor);
        let notify_customer = match body.get("notify_customer") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => return Err(BookingRequestError::InvalidNotifyCustomer),
        };
        let pickup_ready_at = crate::job::ready::parse(body.get("pickup_ready_at"))?;
        Ok(Self {
            quote_id,
            pickup,
            dropoff,
            scheduled_for,
            items,
            items_subtotal_minor,
            discount_minor,
            items_total_minor,
            notify_customer,
            pickup_ready_at,
        })
    }
}

/// A phone number in E.164 form if it is a real, usable number; `region` (ISO 3166 alpha-2)
/// reads numbers written without a country code.
pub fn normalise_phone(raw: &str, region: Option<&str>) -> Option<String> {
    let region = region.and_then(|r| r.parse::<rlibphonenumber::enums::Region>().ok());
    let number = rlibphonenumber::PHONE_NUMBER_UTIL.parse(raw, region).ok()?;
    number.is_valid().then(|| {
        number
            .format_as(rlibphonenumber::PhoneNumberFormat::E164)
            .into_owned()
    })
}

fn contact(value: Option<&Value>, role: StopRole) -> Result<Contact, BookingRequestError> {
    let stop = role.as_str();
    let invalid = |what: String| BookingRequestError::InvalidStop(format!("{stop}: {what}"));
    let object = value
        .and_then(Value::as_object)
        .ok_or_else(|| invalid("must be an object".into()))?;
    let coordinate = |name: &str| -> Result<f64, BookingRequestError> {
        object
            .get(name)
            .and_then(|v| serde_json::from_value::<Numeric<f64>>(v.clone()).ok())
            .map(|n| n.0)
            .ok_or_else(|| invalid(format!("{name} must be a number")))
    };
    let (latitude, longitude) = (coordinate("latitude")?, coordinate("longitude")?);
    if !LatLon::new(latitude, longitude).is_valid() {
        return Err(invalid(
            "latitude and longitude must be a point on Earth".into(),
        ));
    }
    let required = |name: &str| -> Result<String, BookingRequestError> {
        match object.get(name) {
            Some(Value::String(text)) if !text.trim().is_empty() => {
                if text.chars().count() > MAX_TEXT_CHARS {
                    Err(invalid(format!(
                        "{name} is longer than {MAX_TEXT_CHARS} characters"
                    )))
                } else {
                    Ok(text.trim().to_owned())
                }
            }
            _ => Err(invalid(format!("{name} is required"))),
        }
    };
    let optional = |name: &str| -> Result<Option<String>, BookingRequestError> {
        match object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) if text.chars().count() <= MAX_TEXT_CHARS => {
                Ok(Some(text.clone()))
            }
            Some(_) => Err(invalid(format!(
                "{name} must be a string of at most {MAX_TEXT_CHARS} characters"
            ))),
        }
    };
    Ok(Contact {
        latitude,
        longitude,
        address: required("address")?,
        postcode: optional("postcode")?,
        contact_name: required("contact_name")?,
        contact_phone: required("contact_phone")?,
        notes: optional("notes")?,
    })
}

fn items(value: Option<&Value>) -> Result<Vec<Item>, BookingRequestError> {
    let list = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => {
            return Err(BookingRequestError::ItemInvalid(
                "items must be an array".into(),
            ));
        }
    };
    if list.len() > MAX_ITEMS {
        return Err(BookingRequestError::ItemInvalid(format!(
            "at most {MAX_ITEMS} items may be listed"
        )));
    }
    list.iter()
        .enumerate()
        .map(|(index, item)| {
            let invalid =
                |what: &str| BookingRequestError::ItemInvalid(format!("items[{index}]: {what}"));
            let name = match item.get("name") {
                Some(Value::String(name)) if !name.trim().is_empty() => name.trim().to_owned(),
                _ => return Err(invalid("name is required")),
            };
            let unit_price_minor = item
                .get("unit_price_minor")
                .and_then(whole::<i64>)
                .ok_or_else(|| invalid("unit_price_minor must be a whole number"))?;
            if unit_price_minor < 0 {
                return Err(invalid("unit_price_minor must not be negative"));
            }
            let quantity = item
                .get("quantity")
                .and_then(whole::<i32>)
                .ok_or_else(|| invalid("quantity must be a whole number"))?;
            if quantity < 1 {
                return Err(invalid("quantity must be at least 1"));
            }
            let line_total_minor = unit_price_minor
                .checked_mul(i64::from(quantity))
                .ok_or_else(|| invalid("the line comes to too much"))?;
            Ok(Item {
                name,
                unit_price_minor,
                quantity,
                line_total_minor,
            })
        })
        .collect()
}

fn optional_amount(value: Option<&Value>, name: &str) -> Result<Option<i64>, BookingRequestError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match whole::<i64>(value) {
            Some(amount) if amount >= 0 => Ok(Some(amount)),
            _ => Err(BookingRequestError::InvalidAmount(format!(
                "{name} must be a whole number of minor units, zero or more"
            ))),
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-11-21T12:00:00Z".parse().unwrap()
    }

    fn stop() -> Value {
        json!({
            "latitude": 47.14, "longitude": "9.52", "address": "Städtle 1, Vaduz",
            "contact_name": "Anna", "contact_phone": "+423 236 60 00",
        })
    }

    fn body() -> Value {
        json!({
            "quote_id": "6f1c3d7e-1111-4c4c-8888-123456789abc",
            "pickup": stop(),
            "dropoff": stop(),
        })
    }

    fn parse(body: Value) -> Result<BookingRequest, BookingRequestError> {
        BookingRequest::parse(&body, now())
    }

    #[test]
    fn a_parcel_booking_has_no_items() {
        let request = parse(body()).unwrap();
        assert!(request.items.is_empty());
        assert_eq!(
            (
                request.items_subtotal_minor,
                request.discount_minor,
                request.items_total_minor
            ),
            (0, 0, 0)
        );
        assert_eq!(request.pickup.address, "Städtle 1, Vaduz");
        assert_eq!(request.notify_customer, None);
    }

    #[test]
    fn items_come_to_their_lines_less_the_discount_unless_a_total_is_sent() {
        let mut request = body();
        request["items"] = json!([
            {"name": "Bread", "unit_price_minor": 250, "quantity": 2},
            {"name": "Free sample", "unit_price_minor": "0", "quantity": "1"},
        ]);
        request["discount_minor"] = json!(100);
        let parsed = parse(request.clone()).unwrap();
        assert_eq!(parsed.items[0].line_total_minor, 500);
        assert_eq!(parsed.items_subtotal_minor, 500);
        assert_eq!(parsed.items_total_minor, 400);
        request["items_total_minor"] = json!(450);
        assert_eq!(parse(request).unwrap().items_total_minor, 450);
    }

    #[test]
    fn bad_items_name_the_item_and_field() {
        for (item, expected) in [
            (
                json!({"unit_price_minor": 1, "quantity": 1}),
                "items[0]: name",
            ),
            (
                json!({"name": " ", "unit_price_minor": 1, "quantity": 1}),
                "items[0]: name",
            ),
            (
                json!({"name": "x", "unit_price_minor": -1, "quantity": 1}),
                "negative",
            ),
            (
                json!({"name": "x", "unit_price_minor": 1, "quantity": 0}),
                "at least 1",
            ),
            (
                json!({"name": "x", "unit_price_minor": 1, "quantity": 1.5}),
                "quantity",
            ),
            (
                json!({"name": "x", "unit_price_minor": i64::MAX, "quantity": 2}),
                "too much",
            ),
        ] {
            let mut request = body();
            request["items"] = json!([item]);
            match parse(request) {
                Err(BookingRequestError::ItemInvalid(message)) => {
                    assert!(message.contains(expected), "{message}")
                }
                other => panic!("{other:?}"),
            }
        }
        let mut overflow = body();
        overflow["items"] = json!([
            {"name": "a", "unit_price_minor": i64::MAX, "quantity": 1},
            {"name": "b", "unit_price_minor": 1, "quantity": 1},
        ]);
        assert!(matches!(
            parse(overflow),
            Err(BookingRequestError::ItemInvalid(_))
        ));
    }

    #[test]
    fn a_discount_cannot_exceed_the_items() {
        let mut request = body();
        request["items"] = json!([{"name": "x", "unit_price_minor": 300, "quantity": 1}]);
        request["discount_minor"] = json!(301);
        assert_eq!(
            parse(request.clone()),
            Err(BookingRequestError::DiscountExceedsItems {
                discount: 301,
                subtotal: 300
            })
        );
        request["discount_minor"] = json!(-1);
        assert!(matches!(
            parse(request),
            Err(BookingRequestError::InvalidAmount(_))
        ));
        let mut no_items = body();
        no_items["discount_minor"] = json!(1);
        assert!(matches!(
            parse(no_items),
            Err(BookingRequestError::DiscountExceedsItems { .. })
        ));
    }

    #[test]
    fn contacts_need_address_name_and_phone() {
        for field in ["address", "contact_name", "contact_phone"] {
            let mut request = body();
            request["dropoff"].as_object_mut().unwrap().remove(field);
            match parse(request) {
                Err(BookingRequestError::InvalidStop(message)) => {
                    assert!(
                        message.starts_with("dropoff: ") && message.contains(field),
                        "{message}"
                    )
                }
                other => panic!("{other:?}"),
            }
        }
        let mut request = body();
        request["pickup"]["latitude"] = json!("north");
        assert!(
            matches!(parse(request), Err(BookingRequestError::InvalidStop(m)) if m.starts_with("pickup"))
        );
    }

    #[test]
    fn phones_must_be_real_numbers() {
        assert_eq!(
            normalise_phone("+423 236 60 00", None).as_deref(),
            Some("+4232366000")
        );
        assert_eq!(
            normalise_phone("236 60 00", Some("LI")).as_deref(),
            Some("+4232366000")
        );
        assert_eq!(
            normalise_phone("410 396 3100", Some("US")).as_deref(),
            Some("+14103963100")
        );
        assert_eq!(normalise_phone("12", Some("US")), None);
        assert_eq!(normalise_phone("call me", Some("US")), None);
        assert_eq!(
            normalise_phone("236 60 00", None),
            None,
            "no country code, no region"
        );
    }

    #[test]
    fn other_fields_are_checked() {
        let mut request = body();
        request["quote_id"] = json!("not-a-uuid");
        assert_eq!(parse(request), Err(BookingRequestError::QuoteNotFound));
        let mut request = body();
        request["scheduled_for"] = json!("2026-11-21T11:00:00Z");
        assert_eq!(parse(request), Err(BookingRequestError::ScheduledInPast));
        let mut request = body();
        request["notify_customer"] = json!("yes");
        assert_eq!(
            parse(request),
            Err(BookingRequestError::InvalidNotifyCustomer)
        );
        assert_eq!(
            BookingRequest::parse(&json!(null), now()),
            Err(BookingRequestError::NotAnObject)
        );
    }
}
