//! Helper lookups for forms: routes, place search, reverse lookup (spec section 4, "Lookups").

use std::collections::HashMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use courier_geo::{LatLon, Place, Route, Vehicle};
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiError, RequestError};
use super::extract::ApiQuery;
use super::state::AppState;
use courier_domain::numeric::NumericValue;

/// Largest `limit` of a place search.
pub const MAX_PLACES_LIMIT: usize = 20;
const DEFAULT_PLACES_LIMIT: usize = 5;

type Query = ApiQuery<HashMap<String, String>>;

#[derive(Serialize, ToSchema)]
pub struct PointBody {
    pub latitude: f64,
    pub longitude: f64,
}

impl From<LatLon> for PointBody {
    fn from(point: LatLon) -> Self {
        Self {
            latitude: point.lat,
            longitude: point.lon,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct RouteBody {
    distance_metres: u32,
    duration_seconds: u32,
    shape: Vec<PointBody>,
}

impl From<Route> for RouteBody {
    fn from(route: Route) -> Self {
        Self {
            distance_metres: route.distance_metres,
            duration_seconds: route.duration_seconds,
            shape: route.shape.into_iter().map(PointBody::from).collect(),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct PlaceBody {
    name: String,
    latitude: f64,
    longitude: f64,
    postcode: Option<String>,
}

impl From<Place> for PlaceBody {
    fn from(place: Place) -> Self {
        Self {
            name: place.name,
            latitude: place.latitude,
            longitude: place.longitude,
            postcode: place.postcode,
        }
    }
}

/// `GET /v1/routes`
#[utoipa::path(
    get,
    path = "/routes",
    operation_id = "getRoute",
    tag = "lookups",
    summary = "The road route between two points, as quotes price it",
    params(
        ("fromLatitude" = f64, Query, minimum = -90, maximum = 90),
        ("fromLongitude" = f64, Query, minimum = -180, maximum = 180),
        ("toLatitude" = f64, Query, minimum = -90, maximum = 90),
        ("toLongitude" = f64, Query, minimum = -180, maximum = 180),
        ("vehicle" = Option<courier_domain::VehicleName>, Query, description = "Omitted means the smallest vehicle the market offers"),
    ),
    responses(
        (status = 200, description = "Every bend in order", body = RouteBody),
        (status = 422, description = "request.invalid_pickup request.invalid_dropoff request.unknown_vehicle pricing.origin_not_covered pricing.destination_not_covered pricing.vehicle_not_available pricing.no_route payment.raw_card_number"),
        (status = 503, description = "lookup.not_ready lookup.unavailable"),
    )
)]
pub async fn route(
    State(state): State<AppState>,
    ApiQuery(query): Query,
) -> Result<Json<RouteBody>, ApiError> {
    let from =
        point(&query, "fromLatitude", "fromLongitude").map_err(RequestError::InvalidPickup)?;
    let to = point(&query, "toLatitude", "toLongitude").map_err(RequestError::InvalidDropoff)?;
    let vehicle = optional_vehicle(&query)?;
    let market = state.markets.locate(from)?;
    let vehicle = vehicle.unwrap_or_else(|| market.smallest_vehicle());
    Ok(Json(market.route(vehicle, from, to)?.into()))
}

/// `GET /v1/places`
#[utoipa::path(
    get,
    path = "/places",
    operation_id = "searchPlaces",
    tag = "lookups",
    summary = "Address suggestions for forms, best match first",
    params(
        ("q" = String, Query, description = "What the person typed"),
        ("nearLatitude" = Option<f64>, Query, minimum = -90, maximum = 90, description = "With nearLongitude: prefer places near here"),
        ("nearLongitude" = Option<f64>, Query, minimum = -180, maximum = 180),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 20, description = "Default 5"),
    ),
    responses(
        (status = 200, description = "Suggestions", body = Vec<PlaceBody>),
        (status = 422, description = "request.invalid_query payment.raw_card_number request.invalid_location request.invalid_limit"),
        (status = 503, description = "lookup.not_ready lookup.unavailable"),
    )
)]
pub async fn search_places(
    State(state): State<AppState>,
    ApiQuery(query): Query,
) -> Result<Json<Vec<PlaceBody>>, ApiError> {
    let text = query
        .get("q")
        .ok_or_else(|| RequestError::InvalidQuery("`q` is required".into()))?;
    let near = match (query.get("nearLatitude"), query.get("nearLongitude")) {
        (None, None) => None,
        _ => Some(
            point(&query, "nearLatitude", "nearLongitude")
                .map_err(RequestError::InvalidLocation)?,
        ),
    };
    let limit = match query.get("limit") {
        None => DEFAULT_PLACES_LIMIT,
        Some(raw) => usize::from_text(raw.trim())
            .filter(|l| (1..=MAX_PLACES_LIMIT).contains(l))
            .ok_or(RequestError::InvalidLimit {
                max: MAX_PLACES_LIMIT,
            })?,
    };
    if text.trim().is_empty() {
        return Ok(Json(Vec::new()));
    }
    let places = state.markets.search_places(text, near, limit)?;
    Ok(Json(places.into_iter().map(PlaceBody::from).collect()))
}

/// `GET /v1/places/reverse`
#[utoipa::path(
    get,
    path = "/places/reverse",
    operation_id = "reversePlace",
    tag = "lookups",
    summary = "The address at a point",
    params(
        ("latitude" = f64, Query, minimum = -90, maximum = 90),
        ("longitude" = f64, Query, minimum = -180, maximum = 180),
    ),
    responses(
        (status = 200, description = "The nearest address", body = PlaceBody),
        (status = 204, description = "Nothing found near the point"),
        (status = 422, description = "request.invalid_location payment.raw_card_number"),
        (status = 503, description = "lookup.not_ready lookup.unavailable"),
    )
)]
pub async fn reverse_place(
    State(state): State<AppState>,
    ApiQuery(query): Query,
) -> Result<Response, ApiError> {
    let at = point(&query, "latitude", "longitude").map_err(RequestError::InvalidLocation)?;
    Ok(match state.markets.reverse_place(at)? {
        Some(place) => Json(PlaceBody::from(place)).into_response(),
        None => StatusCode::NO_CONTENT.into_response(),
    })
}

/// A point on Earth from two query parameters; the error names the parameter.
fn point(query: &HashMap<String, String>, lat: &str, lon: &str) -> Result<LatLon, String> {
    let coordinate = |name: &str| -> Result<f64, String> {
        let raw = query
            .get(name)
            .ok_or_else(|| format!("`{name}` is required"))?;
        f64::from_text(raw.trim()).ok_or_else(|| format!("`{name}` must be a number"))
    };
    let point = LatLon::new(coordinate(lat)?, coordinate(lon)?);
    if !point.is_valid() {
        return Err(format!(
            "`{lat}` must be within -90..90 and `{lon}` within -180..180"
        ));
    }
    Ok(point)
}

fn optional_vehicle(query: &HashMap<String, String>) -> Result<Option<Vehicle>, RequestError> {
    query
        .get("vehicle")
        .map(|name| {
            name.parse::<Vehicle>()
                .map_err(|_| RequestError::UnknownVehicle(name.clone()))
        })
        .transpose()
}
