//! The one place where every refusal becomes `{code, message}` with its HTTP status.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use thiserror::Error;

use crate::audit::AuditQueryError;
use crate::auth::AuthError;
use crate::couriers::{CourierAuthError, CourierError};
use crate::jobs::booking::BookingError;
use crate::jobs::fulfilment::FulfilmentError;
use crate::markets::RoutingError;
use crate::merchants::{MerchantError, SettingsError};
use crate::pricing::{PriceBookError, PricingError};
use crate::quotes::QuoteError;
use crate::sandbox::SandboxError;
use crate::webhooks::WebhookError;
use courier_domain::booking::BookingRequestError;
use courier_domain::job::proof::ProofError;
use courier_domain::quote::QuoteRequestError;

/// Problems with the request itself, independent of any resource.
#[derive(Debug, Error)]
pub enum RequestError {
    #[error("no such route")]
    RouteNotFound,
    #[error("this route does not accept that method")]
    MethodNotAllowed,
    #[error("the body must be JSON with `Content-Type: application/json`")]
    UnsupportedMediaType,
    #[error("the body is not valid JSON: {0}")]
    MalformedJson(String),
    #[error("the body does not have the expected shape: {0}")]
    InvalidBody(String),
    #[error("the body is larger than this service accepts")]
    BodyTooLarge,
    #[error("the query string is not valid: {0}")]
    InvalidQuery(String),
    #[error("pickup: {0}")]
    InvalidPickup(String),
    #[error("drop-off: {0}")]
    InvalidDropoff(String),
    #[error("{0}")]
    InvalidLocation(String),
    #[error("{0:?} is not a vehicle; use bicycle, electric_bicycle, motorcycle, car or van")]
    UnknownVehicle(String),
    #[error("`limit` must be a whole number from 1 to {max}")]
    InvalidLimit { max: usize },
    #[error("{0:?} is not a job status")]
    UnknownStatus(String),
    #[error("`page` must be a whole number from 1")]
    InvalidPage,
    #[error("`size` must be a whole number from 1 to {max}")]
    InvalidPageSize { max: i64 },
}

#[derive(Debug, Error)]
pub enum ApiError {
    #[error(transparent)]
    Auth(#[from] AuthError),
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error(transparent)]
    Routing(#[from] RoutingError),
    #[error(transparent)]
    AdminAuth(AuthError),
    #[error(transparent)]
    PriceBook(PriceBookError),
    #[error(transparent)]
    QuoteRequest(#[from] QuoteRequestError),
    #[error(transparent)]
    Booking(BookingError),
    #[error("no such job")]
    JobNotFound,
    #[error("no such merchant")]
    MerchantNotFound,
    #[error("no such tracking page (unknown link, or the delivery ended a while ago)")]
    TrackingNotFound,
    #[error(transparent)]
    Pricing(#[from] PricingError),
    #[error(transparent)]
    Payment(crate::payments::PaymentError),
    #[error("the database is unavailable; try again shortly")]
    DatabaseUnavailable,
    #[error("internal error")]
    Internal,
    #[error(transparent)]
    Webhook(WebhookError),
    #[error(transparent)]
    Courier(CourierError),
    #[error(transparent)]
    CourierAuth(CourierAuthError),
    #[error(transparent)]
    Fulfilment(FulfilmentError),
    #[error(transparent)]
    Sandbox(SandboxError),
    #[error("this job has no such proof file")]
    ProofFileNotFound,
    #[error(transparent)]
    Merchant(MerchantError),
    #[error(transparent)]
    AuditQuery(#[from] AuditQueryError),
    #[error(
        "this key has used its budget for this kind of request; retry after {} s",
        crate::rate_limit::whole_seconds(*retry_after)
    )]
    RateLimited { retry_after: std::time::Duration },
    #[error("the request took longer than this service allows and was abandoned; try again")]
    Timeout,
}

impl From<PriceBookError> for ApiError {
    fn from(error: PriceBookError) -> Self {
        match error {
            PriceBookError::Store(e) => e.into(),
            other => ApiError::PriceBook(other),
        }
    }
}

impl From<CourierError> for ApiError {
    fn from(error: CourierError) -> Self {
        match error {
            CourierError::Store(e) => e.into(),
            other => ApiError::Courier(other),
        }
    }
}

impl From<FulfilmentError> for ApiError {
    fn from(error: FulfilmentError) -> Self {
        match error {
            FulfilmentError::Store(e) => e.into(),
            FulfilmentError::JobNotFound => ApiError::JobNotFound,
            FulfilmentError::Proof(ProofError::InvalidText(message)) => {
                RequestError::InvalidBody(message.to_owned()).into()
            }
            other => ApiError::Fulfilment(other),
        }
    }
}

impl From<SandboxError> for ApiError {
    fn from(error: SandboxError) -> Self {
        match error {
            SandboxError::Store(e) => e.into(),
            SandboxError::Fulfilment(e) => e.into(),
            SandboxError::JobNotFound => ApiError::JobNotFound,
            other => ApiError::Sandbox(other),
        }
    }
}

impl From<MerchantError> for ApiError {
    fn from(error: MerchantError) -> Self {
        match error {
            MerchantError::NotFound => ApiError::MerchantNotFound,
            MerchantError::Store(e) => e.into(),
            other => ApiError::Merchant(other),
        }
    }
}

impl From<WebhookError> for ApiError {
    fn from(error: WebhookError) -> Self {
        match error {
            WebhookError::Store(e) => e.into(),
            other => ApiError::Webhook(other),
        }
    }
}

impl From<BookingError> for ApiError {
    fn from(error: BookingError) -> Self {
        match error {
            BookingError::Store(e) => e.into(),
            // Hold refusals are the card's: the payment codes.
            BookingError::Hold(e) => crate::payments::PaymentError::from(e).into(),
            other => ApiError::Booking(other),
        }
    }
}

impl From<QuoteError> for ApiError {
    fn from(error: QuoteError) -> Self {
        match error {
            QuoteError::Request(e) => e.into(),
            QuoteError::Routing(e) => e.into(),
            QuoteError::Pricing(e) => e.into(),
            QuoteError::Store(e) => e.into(),
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(error: sqlx::Error) -> Self {
        if database_unavailable(&error) {
            tracing::warn!(%error, "database unavailable");
            ApiError::DatabaseUnavailable
        } else {
            tracing::error!(%error, "database error");
            ApiError::Internal
        }
    }
}

/// Whether `error` says the database is away rather than that the request failed in it: no
/// connection to be had, or the server refusing or closing connections (SQLSTATE class 08,
/// connection exceptions, and 57P, shutting down or restarting: a connection the server closed
/// while idle reports its `57P01` on the next query).
fn database_unavailable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => true,
        sqlx::Error::Database(e) => e
            .code()
            .is_some_and(|code| code.starts_with("08") || code.starts_with("57P")),
        _ => false,
    }
}

impl ApiError {
    /// Status and stable code of every refusal.
    pub fn status_and_code(&self) -> (StatusCode, &'static str) {
        use RequestError as R;
        match self {
            ApiError::Auth(error) | ApiError::AdminAuth(error) => auth_status_and_code(error),
            ApiError::DatabaseUnavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                "service.database_unavailable",
            ),
            ApiError::PriceBook(error) => price_book_status_and_code(error),
            ApiError::QuoteRequest(error) => quote_request_status_and_code(error),
            ApiError::Booking(error) => booking_status_and_code(error),
            ApiError::JobNotFound => (StatusCode::NOT_FOUND, "job.not_found"),
            ApiError::MerchantNotFound => (StatusCode::NOT_FOUND, "merchant.not_found"),
            ApiError::TrackingNotFound => (StatusCode::NOT_FOUND, "tracking.not_found"),
            ApiError::Request(R::UnknownStatus(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.unknown_status")
            }
            ApiError::Request(R::InvalidPage) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.invalid_page")
            }
            ApiError::Request(R::InvalidPageSize { .. }) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "request.invalid_page_size",
            ),
            ApiError::Pricing(error) => pricing_status_and_code(error),
            ApiError::Payment(error) => payment_status_and_code(error),
            ApiError::Request(R::RouteNotFound) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::Request(R::MethodNotAllowed) => {
                (StatusCode::METHOD_NOT_ALLOWED, "request.method_not_allowed")
            }
            ApiError::Request(R::UnsupportedMediaType) => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "request.unsupported_media_type",
            ),
            ApiError::Request(R::MalformedJson(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.malformed_json")
            }
            ApiError::Request(R::InvalidBody(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.invalid_body")
            }
            ApiError::Request(R::BodyTooLarge) => {
                (StatusCode::PAYLOAD_TOO_LARGE, "request.body_too_large")
            }
            ApiError::Request(R::InvalidQuery(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.invalid_query")
            }
            ApiError::Request(R::InvalidPickup(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.invalid_pickup")
            }
            ApiError::Request(R::InvalidDropoff(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.invalid_dropoff")
            }
            ApiError::Request(R::InvalidLocation(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.invalid_location")
            }
            ApiError::Request(R::UnknownVehicle(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.unknown_vehicle")
            }
            ApiError::Request(R::InvalidLimit { .. }) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "request.invalid_limit")
            }
            ApiError::Routing(error) => routing_status_and_code(error),
            ApiError::Internal => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
            ApiError::Webhook(error) => webhook_status_and_code(error),
            ApiError::Courier(error) => courier_status_and_code(error),
            ApiError::CourierAuth(CourierAuthError::Credential(error)) => {
                auth_status_and_code(error)
            }
            ApiError::CourierAuth(CourierAuthError::Suspended) => {
                (StatusCode::FORBIDDEN, "courier.suspended")
            }
            ApiError::Fulfilment(error) => fulfilment_status_and_code(error),
            ApiError::Sandbox(error) => sandbox_status_and_code(error),
            ApiError::ProofFileNotFound => (StatusCode::NOT_FOUND, "proof.not_found"),
            ApiError::Merchant(error) => merchant_status_and_code(error),
            ApiError::AuditQuery(AuditQueryError::UnknownAction(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "audit.unknown_action")
            }
            ApiError::AuditQuery(AuditQueryError::UnknownTargetType(_)) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "audit.unknown_target_type",
            ),
            ApiError::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
            ApiError::Timeout => (StatusCode::SERVICE_UNAVAILABLE, "service.timeout"),
        }
    }
}

fn merchant_status_and_code(error: &MerchantError) -> (StatusCode, &'static str) {
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    match error {
        MerchantError::InvalidName => (unprocessable, "merchant.invalid_name"),
        MerchantError::NotFound => (StatusCode::NOT_FOUND, "merchant.not_found"),
        MerchantError::KeyNotFound => (StatusCode::NOT_FOUND, "key.not_found"),
        MerchantError::InvalidEnvironment(_) => (unprocessable, "key.invalid_environment"),
        MerchantError::InvalidLabel => (unprocessable, "key.invalid_label"),
        MerchantError::Settings(SettingsError::InvalidSmsSenderName) => {
            (unprocessable, "settings.invalid_sms_sender_name")
        }
        MerchantError::Settings(SettingsError::InvalidRateLimit { .. }) => {
            (unprocessable, "settings.invalid_rate_limit")
        }
        MerchantError::Store(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
    }
}

fn auth_status_and_code(error: &AuthError) -> (StatusCode, &'static str) {
    match error {
        AuthError::Missing => (StatusCode::UNAUTHORIZED, "auth.missing_credentials"),
        AuthError::Malformed => (StatusCode::UNAUTHORIZED, "auth.malformed_credentials"),
        AuthError::Invalid => (StatusCode::UNAUTHORIZED, "auth.invalid_credentials"),
        AuthError::Unavailable => (
            StatusCode::SERVICE_UNAVAILABLE,
            "service.database_unavailable",
        ),
    }
}

fn price_book_status_and_code(error: &PriceBookError) -> (StatusCode, &'static str) {
    match error {
        PriceBookError::UnknownMarket(_) => (StatusCode::NOT_FOUND, "market.not_found"),
        PriceBookError::UnknownVersion { .. } => {
            (StatusCode::NOT_FOUND, "price_book.version_not_found")
        }
        PriceBookError::Rejected(_) => (StatusCode::UNPROCESSABLE_ENTITY, "price_book.rejected"),
        PriceBookError::InvalidSettings(_) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            "price_book.invalid_settings",
        ),
        PriceBookError::UnknownDefault(..) | PriceBookError::Store(_) => {
            (StatusCode::INTERNAL_SERVER_ERROR, "internal")
        }
    }
}

fn booking_status_and_code(error: &BookingError) -> (StatusCode, &'static str) {
    use BookingRequestError as B;
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    match error {
        BookingError::MissingKey => (unprocessable, "request.missing_idempotency_key"),
        BookingError::InvalidKey => (unprocessable, "request.invalid_idempotency_key"),
        BookingError::KeyReused => (StatusCode::CONFLICT, "idempotency.key_reused"),
        BookingError::InProgress => (StatusCode::CONFLICT, "idempotency.in_progress"),
        BookingError::Abandoned => (StatusCode::CONFLICT, "booking.abandoned"),
        BookingError::QuoteNotFound | BookingError::Request(B::QuoteNotFound) => {
            (unprocessable, "quote.not_found")
        }
        BookingError::QuoteExpired(_) => (unprocessable, "quote.expired"),
        BookingError::QuoteAlreadyUsed => (unprocessable, "quote.already_used"),
        BookingError::StopMismatch(_) => (unprocessable, "quote.stop_mismatch"),
        BookingError::ScheduleMismatch => (unprocessable, "quote.schedule_mismatch"),
        BookingError::Request(B::ScheduledInPast) => (unprocessable, "job.scheduled_in_past"),
        BookingError::Request(B::InvalidScheduledFor(_)) => {
            (unprocessable, "request.invalid_scheduled_for")
        }
        BookingError::Request(B::InvalidStop(_)) => (unprocessable, "request.invalid_stop"),
        BookingError::Request(B::ItemInvalid(_)) => (unprocessable, "order.item_invalid"),
        BookingError::Request(B::DiscountExceedsItems { .. }) => {
            (unprocessable, "order.discount_exceeds_items")
        }
        BookingError::Request(B::InvalidAmount(_)) => (unprocessable, "order.invalid_amount"),
        BookingError::Request(B::InvalidNotifyCustomer) => {
            (unprocessable, "request.invalid_notify_customer")
        }
        BookingError::Request(B::NotAnObject) => (unprocessable, "request.invalid_body"),
        BookingError::Store(_) | BookingError::Hold(_) => {
            (StatusCode::INTERNAL_SERVER_ERROR, "internal")
        }
    }
}

fn quote_request_status_and_code(error: &QuoteRequestError) -> (StatusCode, &'static str) {
    let code = match error {
        QuoteRequestError::InvalidPickup(_) => "request.invalid_pickup",
        QuoteRequestError::InvalidDropoff(_) => "request.invalid_dropoff",
        QuoteRequestError::UnknownVehicle(_) => "request.unknown_vehicle",
        QuoteRequestError::InvalidWeight => "request.invalid_weight",
        QuoteRequestError::InvalidScheduledFor(_) => "request.invalid_scheduled_for",
        QuoteRequestError::ScheduledInPast => "job.scheduled_in_past",
        QuoteRequestError::NotAnObject => "request.invalid_body",
    };
    (StatusCode::UNPROCESSABLE_ENTITY, code)
}

fn pricing_status_and_code(error: &PricingError) -> (StatusCode, &'static str) {
    match error {
        PricingError::VehicleNotOffered => (
            StatusCode::UNPROCESSABLE_ENTITY,
            "pricing.vehicle_not_available",
        ),
        PricingError::NotCovered => (
            StatusCode::UNPROCESSABLE_ENTITY,
            "pricing.destination_not_covered",
        ),
        // The market's book is broken or missing: the service's fault, not the caller's.
        PricingError::NoActiveBook | PricingError::InvalidSettings(_) | PricingError::Plugin(_) => {
            (StatusCode::SERVICE_UNAVAILABLE, "pricing.unavailable")
        }
    }
}

fn webhook_status_and_code(error: &WebhookError) -> (StatusCode, &'static str) {
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    match error {
        WebhookError::InvalidUrl(_) => (unprocessable, "webhook.invalid_url"),
        WebhookError::UnknownEvent(_) => (unprocessable, "webhook.unknown_event"),
        WebhookError::InvalidEvents => (unprocessable, "request.invalid_body"),
        WebhookError::NotFound => (StatusCode::NOT_FOUND, "webhook.not_found"),
        WebhookError::Store(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
    }
}

fn payment_status_and_code(error: &crate::payments::PaymentError) -> (StatusCode, &'static str) {
    use crate::payments::PaymentError as P;
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    match error {
        P::RawCardNumber => (unprocessable, "payment.raw_card_number"),
        P::WrongEnvironment(_) => (unprocessable, "payment.reference_wrong_environment"),
        P::UnknownReference => (unprocessable, "payment.unknown_reference"),
        P::LiveUnavailable => (unprocessable, "payment.live_unavailable"),
        P::PaymentMethodNotFound => (StatusCode::NOT_FOUND, "payment_method.not_found"),
        P::CardDead { .. } => (unprocessable, "payment.card_dead"),
        P::CardDeclined { .. } => (unprocessable, "payment.card_declined"),
        P::NoPaymentMethod => (unprocessable, "payment.no_payment_method"),
        P::ProviderUnreachable => (
            StatusCode::SERVICE_UNAVAILABLE,
            "payment.provider_unreachable",
        ),
        P::ProviderBusy => (StatusCode::SERVICE_UNAVAILABLE, "payment.provider_busy"),
        P::ChargeNotFound => (StatusCode::NOT_FOUND, "charge.not_found"),
        P::NotRefundable { .. } => (StatusCode::CONFLICT, "charge.not_refundable"),
        P::InvalidRefundAmount => (unprocessable, "charge.invalid_amount"),
        P::RefundExceedsCaptured { .. } => (unprocessable, "charge.refund_exceeds_captured"),
        P::InvalidMove(_) => (StatusCode::CONFLICT, "charge.invalid_state"),
        P::Adapter(_) | P::Store(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
    }
}

fn courier_status_and_code(error: &CourierError) -> (StatusCode, &'static str) {
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    match error {
        CourierError::InvalidName => (unprocessable, "courier.invalid_name"),
        CourierError::InvalidPhone => (unprocessable, "courier.invalid_phone"),
        CourierError::UnknownVehicle(_) => (unprocessable, "request.unknown_vehicle"),
        CourierError::UnknownMarket(_) => (unprocessable, "courier.unknown_market"),
        CourierError::VehicleNotOffered { .. } => (unprocessable, "courier.vehicle_not_offered"),
        CourierError::InvalidReason => (unprocessable, "courier.invalid_reason"),
        CourierError::NotFound => (StatusCode::NOT_FOUND, "courier.not_found"),
        CourierError::Store(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
    }
}

fn fulfilment_status_and_code(error: &FulfilmentError) -> (StatusCode, &'static str) {
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    match error {
        FulfilmentError::JobNotFound => (StatusCode::NOT_FOUND, "job.not_found"),
        FulfilmentError::InvalidTransition(_) => (StatusCode::CONFLICT, "job.invalid_transition"),
        FulfilmentError::NotCancellable(_) => (StatusCode::CONFLICT, "job.not_cancellable"),
        FulfilmentError::OfferNotFound => (StatusCode::NOT_FOUND, "offer.not_found"),
        FulfilmentError::OfferExpired => (StatusCode::CONFLICT, "offer.expired"),
        FulfilmentError::OfferNotOpen => (StatusCode::CONFLICT, "offer.not_open"),
        FulfilmentError::CourierNotFound => (StatusCode::NOT_FOUND, "courier.not_found"),
        FulfilmentError::CourierNotAvailable(_) => (unprocessable, "courier.not_available"),
        FulfilmentError::ReasonRequired => (unprocessable, "job.reason_required"),
        FulfilmentError::Proof(error) => (unprocessable, proof_code(error)),
        FulfilmentError::Store(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
    }
}

fn sandbox_status_and_code(error: &SandboxError) -> (StatusCode, &'static str) {
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    match error {
        SandboxError::UnknownScenario(_) => (unprocessable, "sandbox.unknown_scenario"),
        SandboxError::TestOnly => (unprocessable, "sandbox.test_only"),
        SandboxError::ScenarioLocked => (StatusCode::CONFLICT, "sandbox.scenario_locked"),
        SandboxError::NothingToAdvance(_) => (StatusCode::CONFLICT, "sandbox.nothing_to_advance"),
        SandboxError::JobNotFound => (StatusCode::NOT_FOUND, "job.not_found"),
        SandboxError::RouteUnavailable => {
            (StatusCode::SERVICE_UNAVAILABLE, "sandbox.route_unavailable")
        }
        SandboxError::Fulfilment(error) => fulfilment_status_and_code(error),
        SandboxError::Store(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
    }
}

fn proof_code(error: &ProofError) -> &'static str {
    match error {
        ProofError::InvalidOutcome => "proof.invalid_outcome",
        ProofError::RecipientNameRequired => "proof.recipient_name_required",
        ProofError::PhotoRequired => "proof.photo_required",
        ProofError::SignatureRequired => "proof.signature_required",
        ProofError::FileTooLarge { .. } => "proof.file_too_large",
        ProofError::UnsupportedContentType(_) => "proof.unsupported_content_type",
        ProofError::InvalidFile(_) => "proof.invalid_file",
        ProofError::InvalidText(_) => "request.invalid_body",
    }
}

fn routing_status_and_code(error: &RoutingError) -> (StatusCode, &'static str) {
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    match error {
        RoutingError::OriginNotCovered => (unprocessable, "pricing.origin_not_covered"),
        RoutingError::DestinationNotCovered => (unprocessable, "pricing.destination_not_covered"),
        RoutingError::VehicleNotAvailable(_) => (unprocessable, "pricing.vehicle_not_available"),
        RoutingError::NoRoute(_) => (unprocessable, "pricing.no_route"),
        RoutingError::NotReady => (StatusCode::SERVICE_UNAVAILABLE, "lookup.not_ready"),
        RoutingError::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "lookup.unavailable"),
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: &'a str,
    message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        // A fault of the service is described in the log only.
        let service_fault = status == StatusCode::INTERNAL_SERVER_ERROR
            || matches!(self, ApiError::Pricing(_) if status == StatusCode::SERVICE_UNAVAILABLE);
        let message = if service_fault {
            tracing::error!(error = %self, "request failed");
            match status {
                StatusCode::INTERNAL_SERVER_ERROR => "internal error".to_owned(),
                _ => {
                    "pricing is unavailable in this market right now; try again shortly".to_owned()
                }
            }
        } else {
            self.to_string()
        };
        let body = ErrorBody { code, message };
        let mut response = (status, Json(body)).into_response();
        if let ApiError::RateLimited { retry_after } = self {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(crate::rate_limit::whole_seconds(retry_after).max(1)),
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
            ApiError::from(crate::payments::PaymentError::Store(server("57P01"))).status_and_code(),
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

    #[test]
    fn internal_errors_leak_nothing() {
        let error = ApiError::from(sqlx::Error::RowNotFound);
        assert_eq!(error.to_string(), "internal error");
        assert_eq!(error.status_and_code().1, "internal");
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
