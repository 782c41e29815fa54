//! Payments as an operator handles them: the open mismatches reconciliation found between the
//! provider and the service's records, and the refund form (the operator API's refund: the
//! same rules, the same audit record under the operator's name).

use askama::Template;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use uuid::Uuid;

use super::super::respond::{field, money, page, when};
use super::{OperatorBar, message, signed_form, signed_in};
use crate::error::ApiError;
use crate::state::AppState;
use courier_core::auth::operator_sessions::OperatorSession;
use courier_core::payments::refunds::RefundOutcome;
use courier_core::payments::{ChargeView, PaymentError};

struct Mismatch {
    environment: &'static str,
    kind: String,
    subject: String,
    charge: String,
    provider_ref: String,
    ours: String,
    theirs: String,
    seen: String,
}

/// A charge as the refund's answer shows it.
struct Refunded {
    id: Uuid,
    status: String,
    amount: String,
    refunded: String,
    awaiting: bool,
}

#[derive(Template)]
#[template(path = "console/ops_payments.html")]
struct PaymentsPage {
    session: Option<OperatorBar>,
    mismatches: Vec<Mismatch>,
    refunded: Option<Refunded>,
    problem: Option<String>,
    charge: String,
    amount: String,
}

fn refunded(charge: &ChargeView, awaiting: bool) -> Refunded {
    Refunded {
        id: charge.id,
        status: charge.status.as_str().to_owned(),
        amount: money(&charge.currency, charge.amount_minor),
        refunded: money(&charge.currency, charge.refunded_amount_minor),
        awaiting,
    }
}

struct Outcome {
    status: StatusCode,
    refunded: Option<Refunded>,
    problem: Option<String>,
    charge: String,
    amount: String,
}

async fn render(state: &AppState, session: &OperatorSession, outcome: Outcome) -> Response {
    let mismatches = match state.payments.mismatches().await {
        Ok(found) => found,
        Err(error) => {
            tracing::error!(%error, "reading payment mismatches for the operator console failed");
            return message(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(session),
                "Try again shortly",
                "The console cannot reach its database just now.",
            );
        }
    };
    page(
        outcome.status,
        PaymentsPage {
            session: Some(OperatorBar::from(session)),
            mismatches: mismatches
                .into_iter()
                .map(|m| Mismatch {
                    environment: m.environment,
                    kind: m.kind,
                    subject: m.subject,
                    charge: m.charge_id.map(|c| c.to_string()).unwrap_or_default(),
                    provider_ref: m.provider_ref.unwrap_or_default(),
                    ours: m.ours,
                    theirs: m.theirs,
                    seen: format!("{} to {}", when(m.first_seen_at), when(m.last_seen_at)),
                })
                .collect(),
            refunded: outcome.refunded,
            problem: outcome.problem,
            charge: outcome.charge,
            amount: outcome.amount,
        }
        .render(),
    )
}

#[utoipa::path(
    get,
    path = "/ops/payments",
    operation_id = "opsConsolePayments",
    tag = "console",
    summary = "Open payment mismatches from reconciliation, and the refund form",
    security(()),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /ops/sign-in"),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn payments_page(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let outcome = Outcome {
        status: StatusCode::OK,
        refunded: None,
        problem: None,
        charge: String::new(),
        amount: String::new(),
    };
    render(&state, &session, outcome).await
}

#[utoipa::path(
    post,
    path = "/ops/payments/refund",
    operation_id = "opsConsoleRefund",
    tag = "console",
    summary = "Refunds part or all of a captured charge: form fields `charge`, `amount_minor` and `csrf`",
    security(()),
    request_body(content = String, description = "`charge=…&amount_minor=…&csrf=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "A page: refunded, with the charge after it", content_type = "text/html", body = String),
        (status = 202, description = "A page: the provider accepted the refund and confirms it later", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /ops/sign-in"),
        (status = 403, description = "A page: the form did not carry the session's token", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such charge", content_type = "text/html", body = String),
        (status = 409, description = "A page: the charge cannot be refunded", content_type = "text/html", body = String),
        (status = 422, description = "A page: the amount is not a whole number above zero, or more than is left", content_type = "text/html", body = String),
        (status = 503, description = "A page: the provider could not be reached", content_type = "text/html", body = String),
    )
)]
pub async fn refund(State(state): State<AppState>, request: Request) -> Response {
    let (session, fields) = match signed_form(&state, request).await {
        Ok(signed) => signed,
        Err(answer) => return answer,
    };
    let charge = field(&fields, "charge").unwrap_or("").trim().to_owned();
    let amount = field(&fields, "amount_minor")
        .unwrap_or("")
        .trim()
        .to_owned();
    let result = match (Uuid::parse_str(&charge), amount.parse::<i64>()) {
        (Err(_), _) => Err(PaymentError::ChargeNotFound),
        (_, Err(_)) => Err(PaymentError::InvalidRefundAmount),
        (Ok(id), Ok(minor)) => {
            state
                .payments
                .refund(id, minor, &session.operator.name)
                .await
        }
    };
    let outcome = match result {
        Ok(RefundOutcome::Paid(view)) => Outcome {
            status: StatusCode::OK,
            refunded: Some(refunded(&view, false)),
            problem: None,
            charge: String::new(),
            amount: String::new(),
        },
        Ok(RefundOutcome::AwaitingProvider(view)) => Outcome {
            status: StatusCode::ACCEPTED,
            refunded: Some(refunded(&view, true)),
            problem: None,
            charge: String::new(),
            amount: String::new(),
        },
        Err(error) => {
            let api = ApiError::from(error);
            let (status, code) = api.status_and_code();
            Outcome {
                status,
                refunded: None,
                problem: Some(format!("{api} ({code})")),
                charge,
                amount,
            }
        }
    };
    render(&state, &session, outcome).await
}
