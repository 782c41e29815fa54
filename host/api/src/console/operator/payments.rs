//! Payments as an operator handles them: every merchant's charges (filtered, paged), the newest
//! refunds, the open mismatches reconciliation found between the provider and the service's
//! records, and the refund form (the operator API's refund: the same rules, the same audit
//! record under the operator's name). Each drawn form carries a one-time token, the refund's
//! `Idempotency-Key`: the same form sent again (a reload, a double click, the back button)
//! finds the first refund instead of paying twice, and a refund asked for redirects to the
//! page that shows it, so reloading that page sends nothing.

use askama::Template;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use uuid::Uuid;

use super::super::respond::{field, money, page, see_other, when};
use super::{OperatorBar, message, permitted_form, signed_in, unavailable};
use crate::error::ApiError;
use crate::state::AppState;
use courier_core::auth::operator_sessions::OperatorSession;
use courier_core::idempotency::KeyError;
use courier_core::payments::overview::{ChargeFilter, ListedCharge, ListedRefund};
use courier_core::payments::refunds::RefundOutcome;
use courier_core::payments::{ChargeView, MAX_RELEASE_ROUNDS, PaymentError};
use courier_domain::Environment;
use courier_domain::charge::ChargeStatus;
use courier_domain::operators::OpsPermission;
use serde::Deserialize;

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

/// An abandoned booking's hold whose release is not confirmed.
struct UnreleasedLine {
    environment: &'static str,
    reference: String,
    hold_key: String,
    round: i32,
    /// Past the rounds the service asks: the operator releases it at the provider.
    given_up: bool,
    last_error: String,
    abandoned: String,
    next: String,
}

/// A charge as the refund's answer shows it.
struct Refunded {
    id: Uuid,
    status: String,
    amount: String,
    refunded: String,
    awaiting: bool,
}

/// A charge as a row of the list.
struct ChargeLine {
    id: String,
    raised: String,
    merchant: String,
    merchant_id: Uuid,
    environment: &'static str,
    job: String,
    status: &'static str,
    amount: String,
    refunded: String,
    provider_ref: String,
    decline: String,
}

impl From<ListedCharge> for ChargeLine {
    fn from(c: ListedCharge) -> Self {
        ChargeLine {
            id: c.id.to_string(),
            raised: when(c.raised_at),
            merchant: c.merchant_name,
            merchant_id: c.merchant_id,
            environment: c.environment.as_str(),
            job: c.job_id.to_string(),
            status: c.status.as_str(),
            amount: money(&c.currency, c.amount_minor),
            refunded: if c.refunded_amount_minor > 0 {
                money(&c.currency, c.refunded_amount_minor)
            } else {
                "—".into()
            },
            provider_ref: c.payment_ref.unwrap_or_default(),
            decline: c.decline_code.unwrap_or_default(),
        }
    }
}

/// A refund as a row of the list.
struct RefundLine {
    requested: String,
    merchant: String,
    environment: &'static str,
    charge: String,
    amount: String,
    status: String,
    operator: String,
    settled: String,
    problem: String,
}

impl From<ListedRefund> for RefundLine {
    fn from(r: ListedRefund) -> Self {
        RefundLine {
            requested: when(r.requested_at),
            merchant: r.merchant_name,
            environment: r.environment.as_str(),
            charge: r.charge_id.to_string(),
            amount: money(&r.currency, r.amount_minor),
            status: r.status,
            operator: r.operator,
            settled: r.settled_at.map(when).unwrap_or_else(|| "—".into()),
            problem: r.decline_code.or(r.last_error).unwrap_or_default(),
        }
    }
}

/// The charge list's filters as the page's query carries them.
#[derive(Deserialize, Default, Clone)]
pub struct ChargesQuery {
    /// One merchant's charges only (its id).
    #[serde(default)]
    merchant: String,
    #[serde(default)]
    environment: String,
    #[serde(default)]
    status: String,
    /// Where the previous page ended: `<microseconds since the epoch>_<charge id>`.
    #[serde(default)]
    before: String,
    /// A charge to refund: fills the refund form.
    #[serde(default)]
    charge: String,
    /// The one-time token of a refund just asked for: the page says how it stands.
    #[serde(default)]
    refunded: String,
}

impl ChargesQuery {
    fn filter(&self) -> Option<ChargeFilter> {
        fn optional(text: &str) -> Option<&str> {
            (!text.is_empty()).then_some(text)
        }
        let environment = match optional(&self.environment) {
            Some(name) => Some(Environment::parse(name)?),
            None => None,
        };
        let status = match optional(&self.status) {
            Some(name) => Some(ChargeStatus::parse(name)?),
            None => None,
        };
        let before = match optional(&self.before) {
            Some(mark) => {
                let (micros, id) = mark.split_once('_')?;
                let at = chrono::DateTime::from_timestamp_micros(micros.parse().ok()?)?;
                Some((at, Uuid::parse_str(id).ok()?))
            }
            None => None,
        };
        let merchant_id = match optional(&self.merchant) {
            Some(id) => Some(Uuid::parse_str(id).ok()?),
            None => None,
        };
        Some(ChargeFilter {
            merchant_id,
            environment,
            status,
            before,
        })
    }

    /// The query of the page after one that ended at `last`.
    fn next(&self, last: &ListedCharge) -> String {
        let mark = format!("{}_{}", last.raised_at.timestamp_micros(), last.id);
        form_urlencoded::Serializer::new(String::new())
            .append_pair("merchant", &self.merchant)
            .append_pair("environment", &self.environment)
            .append_pair("status", &self.status)
            .append_pair("before", &mark)
            .finish()
    }
}

#[derive(Template)]
#[template(path = "console/ops_payments.html")]
struct PaymentsPage {
    session: Option<OperatorBar>,
    charges: Vec<ChargeLine>,
    /// The next page's query, when there is one.
    older: Option<String>,
    /// The one merchant whose charges are listed (its id), or empty for all.
    only_merchant: String,
    environment: String,
    status: String,
    statuses: Vec<&'static str>,
    refunds: Vec<RefundLine>,
    mismatches: Vec<Mismatch>,
    unreleased: Vec<UnreleasedLine>,
    refunded: Option<Refunded>,
    problem: Option<String>,
    charge: String,
    amount: String,
    /// The refund form's one-time token.
    request: String,
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
    /// The form's token: the refused form's own (sending it again is the same request), or a
    /// new one.
    request: Uuid,
}

/// The refund's `Idempotency-Key` for the form's one-time token.
fn request_key(token: Uuid) -> String {
    format!("ops-console-{token}")
}

fn not_a_filter(session: &OperatorSession) -> Response {
    message(
        StatusCode::BAD_REQUEST,
        Some(session),
        "Not a filter",
        "Filter the charges by an environment and a status from the lists.",
    )
}

async fn render(
    state: &AppState,
    session: &OperatorSession,
    query: &ChargesQuery,
    outcome: Outcome,
) -> Response {
    let Some(filter) = query.filter() else {
        return not_a_filter(session);
    };
    let payments = &state.payments;
    // Independent reads, each on a connection of its own, at once.
    let read = tokio::try_join!(
        payments.charges_across(&filter),
        payments.recent_refunds(),
        payments.mismatches(),
        payments.unreleased_holds(),
    );
    let ((charges, more), refunds, mismatches, unreleased) = match read {
        Ok(found) => found,
        Err(error) => {
            tracing::error!(%error, "reading payments for the operator console failed");
            return unavailable(Some(session));
        }
    };
    page(
        outcome.status,
        PaymentsPage {
            session: Some(OperatorBar::from(session)),
            older: more
                .then(|| charges.last().map(|last| query.next(last)))
                .flatten(),
            charges: charges.into_iter().map(ChargeLine::from).collect(),
            only_merchant: query.merchant.clone(),
            environment: query.environment.clone(),
            status: query.status.clone(),
            statuses: ChargeStatus::ALL.iter().map(|s| s.as_str()).collect(),
            refunds: refunds.into_iter().map(RefundLine::from).collect(),
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
            unreleased: unreleased
                .into_iter()
                .map(|h| UnreleasedLine {
                    environment: h.environment.as_str(),
                    reference: h.reference,
                    hold_key: h.hold_key,
                    round: h.round.min(MAX_RELEASE_ROUNDS),
                    given_up: h.round > MAX_RELEASE_ROUNDS,
                    last_error: h.last_error.unwrap_or_default(),
                    abandoned: when(h.abandoned_at),
                    next: h
                        .due_at
                        .map(when)
                        .unwrap_or_else(|| "awaiting the provider".into()),
                })
                .collect(),
            refunded: outcome.refunded,
            problem: outcome.problem,
            charge: outcome.charge,
            amount: outcome.amount,
            request: outcome.request.to_string(),
        }
        .render(),
    )
}

#[utoipa::path(
    get,
    path = "/ops/payments",
    operation_id = "opsConsolePayments",
    tag = "console",
    summary = "Every merchant's charges (filtered by merchant, environment and status, 50 a page, newest first), the newest refunds, open payment mismatches from reconciliation, abandoned bookings' holds whose release is not confirmed, and the refund form",
    security(()),
    params(
        ("merchant" = Option<String>, Query, description = "One merchant's id; empty or absent for all"),
        ("environment" = Option<String>, Query, description = "`test` or `live`; empty or absent for both"),
        ("status" = Option<String>, Query, description = "A charge status; empty or absent for all"),
        ("before" = Option<String>, Query, description = "Where the previous page ended, from its `Older charges` link"),
        ("charge" = Option<String>, Query, description = "A charge id to fill the refund form with"),
        ("refunded" = Option<String>, Query, description = "The one-time token of a refund just asked for: the page says how it stands"),
    ),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /ops/sign-in"),
        (status = 400, description = "A page: a filter that is not a merchant's id, an environment, a status or a page mark", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn payments_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<ChargesQuery>, QueryRejection>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let Ok(Query(query)) = query else {
        return not_a_filter(&session);
    };
    // The page a refund's form redirected to: how that refund stands now.
    let mut outcome = Outcome {
        status: StatusCode::OK,
        refunded: None,
        problem: None,
        charge: query.charge.trim().to_owned(),
        amount: String::new(),
        request: Uuid::new_v4(),
    };
    if let Ok(token) = Uuid::parse_str(query.refunded.trim()) {
        match state.payments.refund_answer(&request_key(token)).await {
            Ok(Some(RefundOutcome::Paid(view))) => outcome.refunded = Some(refunded(&view, false)),
            Ok(Some(RefundOutcome::AwaitingProvider(view))) => {
                outcome.refunded = Some(refunded(&view, true))
            }
            Ok(None) => {}
            Err(error) => outcome.problem = Some(said(error).1),
        }
    }
    render(&state, &session, &query, outcome).await
}

#[utoipa::path(
    post,
    path = "/ops/payments/refund",
    operation_id = "opsConsoleRefund",
    tag = "console",
    summary = "Refunds part or all of a captured charge, once per form: form fields `charge`, `amount_minor`, `request` (the form's one-time token, the refund's idempotency key) and `csrf`",
    security(()),
    request_body(content = String, description = "`charge=…&amount_minor=…&request=…&csrf=…`", content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "Refunded, or accepted by the provider to be confirmed later: to `/ops/payments?refunded={request}`, the page that says so; or signed out: to /ops/sign-in"),
        (status = 403, description = "A page: the form did not carry the session's token, or the operator's role does not refund", content_type = "text/html", body = String),
        (status = 404, description = "A page: no such charge", content_type = "text/html", body = String),
        (status = 409, description = "A page: the charge cannot be refunded; or the form's refund is still waiting for the provider (send it again shortly), or its token was used for another charge or amount", content_type = "text/html", body = String),
        (status = 422, description = "A page: the amount is not a whole number above zero, or more than is left; or the form had no one-time token", content_type = "text/html", body = String),
        (status = 503, description = "A page: the provider could not be reached", content_type = "text/html", body = String),
    )
)]
pub async fn refund(State(state): State<AppState>, request: Request) -> Response {
    let (session, fields) =
        match permitted_form(&state, request, OpsPermission::Refund, "refunding charges").await {
            Ok(signed) => signed,
            Err(answer) => return answer,
        };
    let charge = field(&fields, "charge").unwrap_or("").trim().to_owned();
    let amount = field(&fields, "amount_minor")
        .unwrap_or("")
        .trim()
        .to_owned();
    // A form drawn before it had a token sends nothing: the page draws one with it.
    let token = field(&fields, "request").and_then(|t| Uuid::parse_str(t.trim()).ok());
    let result = match (token, Uuid::parse_str(&charge), amount.parse::<i64>()) {
        (None, _, _) => Err(PaymentError::Key(KeyError::Missing)),
        (_, Err(_), _) => Err(PaymentError::ChargeNotFound),
        (_, _, Err(_)) => Err(PaymentError::InvalidRefundAmount),
        (Some(token), Ok(id), Ok(minor)) => state
            .payments
            .refund(id, minor, &session.operator.name, &request_key(token))
            .await
            .map(|_| token),
    };
    match result {
        Ok(token) => see_other(&format!("/ops/payments?refunded={token}#refunded")),
        Err(error) => {
            let (status, problem) = said(error);
            let outcome = Outcome {
                status,
                refunded: None,
                problem: Some(problem),
                charge,
                amount,
                request: token.unwrap_or_else(Uuid::new_v4),
            };
            render(&state, &session, &ChargesQuery::default(), outcome).await
        }
    }
}

/// A refusal as the page says it: its status, and its words with its code.
fn said(error: PaymentError) -> (StatusCode, String) {
    let api = ApiError::from(error);
    let (status, code) = api.status_and_code();
    (status, format!("{api} ({code})"))
}
