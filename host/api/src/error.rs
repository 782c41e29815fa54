//! The one place where every refusal becomes `{code, message}` with its HTTP status: each
//! error answers with the [`Code`] its variant names (`#[derive(ErrorCode)]`), and a fault of
//! the service becomes `internal`, or `service.database_unavailable` when the database is
//! away.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use thiserror::Error;

use courier_domain::error::{self as codes, Answer, Code, ErrorCode};
use courier_domain::quote::QuoteRequestError;

use courier_core::audit::AuditQueryError;
use courier_core::auth::AuthError;
use courier_core::couriers::{CourierAuthError, CourierError};
use courier_core::infra::db::availability;
use courier_core::jobs::booking::BookingError;
use courier_core::jobs::fulfilment::FulfilmentError;
use courier_core::markets::RoutingError;
use courier_core::merchants::MerchantError;
use courier_core::payments::PaymentError;
use courier_core::pricing::{PriceBookError, PricingError};
use courier_core::quotes::QuoteError;
use courier_core::sandbox::SandboxError;
use courier_core::team::TeamError;
use courier_core::webhooks::WebhookError;

pub const ROUTE_NOT_FOUND: Code = Code::new(
    404,
    "not_found",
    "No such route. Also every sandbox endpoint called with a live key (as for any unknown route), a path segment that is not UTF-8, and provider events for an environment other than `test` or `live`.",
);
pub const METHOD_NOT_ALLOWED: Code = Code::new(
    405,
    "request.method_not_allowed",
    "The route exists, the method does not.",
);
pub const UNSUPPORTED_MEDIA_TYPE: Code = Code::new(
    415,
    "request.unsupported_media_type",
    "A JSON body without `Content-Type: application/json`.",
);
pub const MALFORMED_JSON: Code = Code::new(422, "request.malformed_json", "The body is not JSON.");
pub const BODY_TOO_LARGE: Code = Code::new(
    413,
    "request.body_too_large",
    "Body over `COURIER_MAX_BODY_BYTES` (price-book uploads: 16 MiB).",
);
pub const INVALID_QUERY: Code = Code::new(
    422,
    "request.invalid_query",
    "The query string cannot be read, or a value holds NUL. Places: `q` missing. Jobs list: `from` or `to` is not an ISO 8601 date-time. Audit trail: `merchant_id` is not a UUID, `from`/`to` not a date-time, or an unknown parameter.",
);
pub const INVALID_LOCATION: Code = Code::new(
    422,
    "request.invalid_location",
    "Places: `nearLatitude`/`nearLongitude` not both given or not a point on Earth. Reverse lookup: `latitude`/`longitude` missing or invalid. Courier API: a position that is not a point on Earth.",
);
pub const INVALID_LIMIT: Code = Code::new(
    422,
    "request.invalid_limit",
    "Places: `limit` not a whole number from 1 to 20.",
);
pub const UNKNOWN_STATUS: Code = Code::new(
    422,
    "request.unknown_status",
    "The jobs list's `status` names an unknown status.",
);
pub const INVALID_PAGE: Code = Code::new(
    422,
    "request.invalid_page",
    "`page` below 1 (jobs list, audit trail).",
);
pub const PAGE_TOO_DEEP: Code = Code::new(
    422,
    "request.page_too_deep",
    "The jobs list's `page` starts past its deepest match (10,000 by default, `COURIER_JOBS_LIST_DEPTH`); narrow the list with `from`, `to` or `status`.",
);
pub const INVALID_PAGE_SIZE: Code = Code::new(
    422,
    "request.invalid_page_size",
    "`size` outside 1–200 (jobs list, audit trail); refused, not clamped.",
);
pub const TIMEOUT: Code = Code::new(
    503,
    "service.timeout",
    "The request took longer than `COURIER_REQUEST_TIMEOUT_MS` and was abandoned (its transaction rolled back); retry (bookings with the same `Idempotency-Key`).",
);

pub const BUSY: Code = Code::new(
    503,
    "service.busy",
    "The tracking page's lookups are at their limit in this instance (`COURIER_TRACKING_CONCURRENCY`); retry after the `Retry-After` seconds.",
);

pub const DRAINING: Code = Code::new(
    503,
    "service.draining",
    "`GET /readyz` while the instance is stopping (told to by SIGTERM): it still serves requests for `COURIER_DRAIN_MS`, but a load balancer should send it no new ones.",
);

/// Problems with the request itself, independent of any resource.
#[derive(Debug, Error, ErrorCode)]
pub enum RequestError {
    #[error("no such route")]
    #[code(ROUTE_NOT_FOUND)]
    RouteNotFound,
    #[error("this route does not accept that method")]
    #[code(METHOD_NOT_ALLOWED)]
    MethodNotAllowed,
    #[error("the body must be JSON with `Content-Type: application/json`")]
    #[code(UNSUPPORTED_MEDIA_TYPE)]
    UnsupportedMediaType,
    #[error("the body is not valid JSON: {0}")]
    #[code(MALFORMED_JSON)]
    MalformedJson(String),
    #[error("the body does not have the expected shape: {0}")]
    #[code(codes::INVALID_BODY)]
    InvalidBody(String),
    #[error("the body is larger than this service accepts")]
    #[code(BODY_TOO_LARGE)]
    BodyTooLarge,
    #[error(
        "a card number was sent; the service never takes one (cards are added through the payment provider's card form)"
    )]
    #[code(courier_core::payments::RAW_CARD_NUMBER)]
    CardNumber,
    #[error("the query string is not valid: {0}")]
    #[code(INVALID_QUERY)]
    InvalidQuery(String),
    #[error("pickup: {0}")]
    #[code(courier_domain::quote::INVALID_PICKUP)]
    InvalidPickup(String),
    #[error("drop-off: {0}")]
    #[code(courier_domain::quote::INVALID_DROPOFF)]
    InvalidDropoff(String),
    #[error("{0}")]
    #[code(INVALID_LOCATION)]
    InvalidLocation(String),
    #[error("{0:?} is not a vehicle; use bicycle, electric_bicycle, motorcycle, car or van")]
    #[code(codes::UNKNOWN_VEHICLE)]
    UnknownVehicle(String),
    #[error("`limit` must be a whole number from 1 to {max}")]
    #[code(INVALID_LIMIT)]
    InvalidLimit { max: usize },
    #[error("{0:?} is not a job status")]
    #[code(UNKNOWN_STATUS)]
    UnknownStatus(String),
    #[error("`page` must be a whole number from 1")]
    #[code(INVALID_PAGE)]
    InvalidPage,
    #[error(
        "the list goes {depth} jobs deep; this page starts past them: narrow it with `from`, `to` or `status`"
    )]
    #[code(PAGE_TOO_DEEP)]
    PageTooDeep { depth: u32 },
    #[error("`size` must be a whole number from 1 to {max}")]
    #[code(INVALID_PAGE_SIZE)]
    InvalidPageSize { max: i64 },
}

/// Every refusal of the API. Its catalogue (`courier_domain::error::catalogue::<ApiError>()`)
/// is every code the API answers with.
#[derive(Debug, Error, ErrorCode)]
pub enum ApiError {
    #[error(transparent)]
    #[code(via)]
    Auth(#[from] AuthError),
    #[error(transparent)]
    #[code(via)]
    Request(#[from] RequestError),
    #[error(transparent)]
    #[code(via)]
    Routing(#[from] RoutingError),
    #[error(transparent)]
    #[code(via)]
    AdminAuth(AuthError),
    #[error(transparent)]
    #[code(via)]
    PriceBook(#[from] PriceBookError),
    #[error(transparent)]
    #[code(via)]
    QuoteRequest(#[from] QuoteRequestError),
    #[error(transparent)]
    #[code(via)]
    Quote(#[from] QuoteError),
    #[error(transparent)]
    #[code(via)]
    Booking(#[from] BookingError),
    #[error("no such job")]
    #[code(courier_domain::job::JOB_NOT_FOUND)]
    JobNotFound,
    #[error("no such merchant")]
    #[code(courier_core::merchants::MERCHANT_NOT_FOUND)]
    MerchantNotFound,
    #[error("no such tracking page (unknown link, or the delivery ended a while ago)")]
    #[code(courier_core::tracking::TRACKING_NOT_FOUND)]
    TrackingNotFound,
    #[error(transparent)]
    #[code(via)]
    Pricing(#[from] PricingError),
    #[error(transparent)]
    #[code(via)]
    Payment(#[from] PaymentError),
    #[error("the database is unavailable; try again shortly")]
    #[code(codes::DATABASE_UNAVAILABLE)]
    DatabaseUnavailable,
    #[error("internal error")]
    #[code(codes::INTERNAL)]
    Internal,
    #[error(transparent)]
    #[code(fault)]
    Store(#[from] sqlx::Error),
    #[error(transparent)]
    #[code(via)]
    Webhook(#[from] WebhookError),
    #[error(transparent)]
    #[code(via)]
    Courier(#[from] CourierError),
    #[error(transparent)]
    #[code(via)]
    CourierAuth(#[from] CourierAuthError),
    #[error(transparent)]
    #[code(via)]
    Fulfilment(#[from] FulfilmentError),
    #[error(transparent)]
    #[code(via)]
    Sandbox(#[from] SandboxError),
    #[error("this job has no such proof file")]
    #[code(courier_domain::job::proof::PROOF_FILE_NOT_FOUND)]
    ProofFileNotFound,
    #[error(transparent)]
    #[code(via)]
    Merchant(#[from] MerchantError),
    #[error(transparent)]
    #[code(via)]
    AuditQuery(#[from] AuditQueryError),
    #[error(transparent)]
    #[code(via)]
    Team(#[from] TeamError),
    #[error(transparent)]
    #[code(via)]
    OperatorInvite(#[from] courier_core::operator_accounts::OperatorInviteError),
    #[error(transparent)]
    #[code(via)]
    Passkey(#[from] courier_core::team::PasskeyRefusal),
    #[error(
        "this key has used its budget for this kind of request; retry after {} s",
        courier_core::rate_limit::whole_seconds(*retry_after)
    )]
    #[code(courier_core::rate_limit::RATE_LIMITED)]
    RateLimited { retry_after: std::time::Duration },
    #[error("the request took longer than this service allows and was abandoned; try again")]
    #[code(TIMEOUT)]
    Timeout,
    #[error("this instance is stopping; send requests to another")]
    #[code(DRAINING)]
    Draining,
    #[error("too many tracking lookups at once; try again in a second")]
    #[code(BUSY)]
    Busy,
}

impl ApiError {
    /// The code this error is answered with.
    pub fn code(&self) -> &'static Code {
        match self.answer() {
            Answer::Refused(code) => code,
            Answer::Fault(cause) => match cause.downcast_ref::<sqlx::Error>() {
                Some(error) if availability::is_unavailable(error) => &codes::DATABASE_UNAVAILABLE,
                _ => &codes::INTERNAL,
            },
        }
    }

    /// What a person or a client is told: the code's fixed message where its detail is for
    /// the log only (faults), else the refusal's own words.
    pub fn public_message(&self) -> String {
        self.code()
            .fixed_message
            .map_or_else(|| self.to_string(), str::to_owned)
    }

    /// Status and stable code of every refusal.
    pub fn status_and_code(&self) -> (StatusCode, &'static str) {
        let code = self.code();
        (status_of(code), code.code)
    }
}

fn status_of(code: &Code) -> StatusCode {
    StatusCode::from_u16(code.status).expect("codes carry valid statuses")
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: &'a str,
    message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = self.code();
        let status = status_of(code);
        // A fixed message stands in for detail meant for the log only.
        let message = match code.fixed_message {
            Some(fixed) => {
                if *code == codes::DATABASE_UNAVAILABLE {
                    if let Answer::Fault(cause) = self.answer()
                        && let Some(error) = cause.downcast_ref::<sqlx::Error>()
                    {
                        availability::take_note(error);
                    }
                    tracing::warn!(error = %self, "database unavailable");
                } else {
                    tracing::error!(error = %self, code = code.code, "request failed");
                }
                fixed.to_owned()
            }
            None => self.to_string(),
        };
        let body = ErrorBody {
            code: code.code,
            message,
        };
        let mut response = (status, Json(body)).into_response();
        if *code == BUSY {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return response;
        }
        if *code == codes::DATABASE_UNAVAILABLE {
            // Long enough for a failover or a restart to make progress, short enough to notice
            // its end.
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
            return response;
        }
        if let ApiError::RateLimited { retry_after } = self {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(courier_core::rate_limit::whole_seconds(retry_after).max(1)),
            );
            return response;
        }
        let challenge = match self {
            ApiError::Auth(_) => "Basic realm=\"courier\", charset=\"UTF-8\"",
            ApiError::AdminAuth(_) => "Bearer realm=\"courier-admin\"",
            ApiError::CourierAuth(_) => "Bearer realm=\"courier-couriers\"",
            _ => return response,
        };
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server error as the driver reports it, with its SQLSTATE.
    #[derive(Debug)]
    struct ServerError(&'static str);

    impl std::fmt::Display for ServerError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "server error {}", self.0)
        }
    }

    impl std::error::Error for ServerError {}

    impl sqlx::error::DatabaseError for ServerError {
        fn message(&self) -> &str {
            "server error"
        }
        fn code(&self) -> Option<std::borrow::Cow<'_, str>> {
            Some(self.0.into())
        }
        fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
            self
        }
        fn kind(&self) -> sqlx::error::ErrorKind {
            sqlx::error::ErrorKind::Other
        }
    }

    #[test]
    fn a_database_going_away_is_503_and_a_failing_statement_is_500() {
        let code_of = |error: sqlx::Error| ApiError::from(error).status_and_code();
        let server = |code| sqlx::Error::Database(Box::new(ServerError(code)));
        let unavailable = (
            StatusCode::SERVICE_UNAVAILABLE,
            "service.database_unavailable",
        );
        // Terminated by the administrator, starting up or shutting down, connection lost.
        for code in ["57P01", "57P02", "57P03", "08006", "08001"] {
            assert_eq!(code_of(server(code)), unavailable, "{code}");
        }
        assert_eq!(code_of(sqlx::Error::PoolTimedOut), unavailable);
        // The same through the errors that carry a database error.
        assert_eq!(
            ApiError::from(PriceBookError::Store(server("57P01"))).status_and_code(),
            unavailable
        );
        assert_eq!(
            ApiError::from(PaymentError::Store(server("57P01"))).status_and_code(),
            unavailable
        );
        // A unique violation or a syntax error is the service's own fault.
        for code in ["23505", "42601"] {
            assert_eq!(
                code_of(server(code)),
                (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
                "{code}"
            );
        }
    }

    #[tokio::test]
    async fn internal_errors_leak_nothing() {
        let error = ApiError::from(sqlx::Error::RowNotFound);
        assert_eq!(error.status_and_code().1, "internal");
        let body = axum::body::to_bytes(error.into_response().into_body(), 1024)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["message"], "internal error");
    }

    #[test]
    fn refusals_over_budget_say_when_to_retry() {
        let response = ApiError::RateLimited {
            retry_after: std::time::Duration::from_millis(1500),
        }
        .into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "2");
    }

    #[test]
    fn unauthorised_responses_carry_a_challenge() {
        let response = ApiError::Auth(AuthError::Missing).into_response();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert!(response.headers().contains_key(header::WWW_AUTHENTICATE));
    }
}
