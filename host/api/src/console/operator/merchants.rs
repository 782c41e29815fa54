//! A merchant as operators see it: its name, settings and keys (with their last use), its
//! latest jobs and charges, and how its webhook endpoints stand (from their own rows: the
//! day's attempts cost tens of milliseconds an endpoint, so they stay on the health page).

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use uuid::Uuid;

use super::super::respond::{money, page, when};
use super::{OperatorBar, message, signed_in, unavailable};
use crate::state::AppState;
use courier_core::jobs::ListFilter;
use courier_core::merchants::{MerchantDetail, MerchantError};
use courier_core::payments::overview::ChargeFilter;
use courier_core::webhooks::{Endpoint, Owner};
use courier_domain::Environment;
use courier_domain::webhook::EndpointStatus;

/// Latest jobs, and latest charges, shown.
const LATEST: i64 = 20;

struct KeyLine {
    key: String,
    environment: &'static str,
    label: String,
    created: String,
    last_used: String,
    revoked: String,
}

struct JobLine {
    id: Uuid,
    reference: String,
    status: &'static str,
    market: String,
    price: String,
    booked: String,
}

struct ChargeLine {
    job_id: Uuid,
    environment: &'static str,
    status: &'static str,
    amount: String,
    raised: String,
}

struct EndpointLine {
    url: String,
    environment: &'static str,
    status: &'static str,
    suspended: bool,
    failures: i32,
    last_succeeded: String,
    last_failed: String,
}

#[derive(Template)]
#[template(path = "console/ops_merchant.html")]
struct MerchantPage {
    session: Option<OperatorBar>,
    id: Uuid,
    name: String,
    since: String,
    settings: Vec<(&'static str, String)>,
    keys: Vec<KeyLine>,
    /// Whose jobs are listed: `live` or `test`.
    jobs_shown: &'static str,
    jobs: Vec<JobLine>,
    jobs_total: i64,
    charges: Vec<ChargeLine>,
    endpoints: Vec<EndpointLine>,
}

/// The settings as the page lists them, the service's defaults said in words.
fn settings_of(detail: &MerchantDetail) -> Vec<(&'static str, String)> {
    let s = &detail.settings;
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_owned();
    let or_default =
        |v: Option<i32>| v.map_or_else(|| "the service's default".to_owned(), |v| v.to_string());
    vec![
        ("Tell customers by SMS", yes_no(s.notify_customer)),
        ("Photo required at delivery", yes_no(s.proof_photo_required)),
        (
            "Signature required at delivery",
            yes_no(s.proof_signature_required),
        ),
        (
            "SMS sender",
            s.sms_sender_name
                .clone()
                .unwrap_or_else(|| "the service's default".to_owned()),
        ),
        (
            "Preparation time",
            s.preparation_minutes
                .map_or_else(|| "none: ready when due".to_owned(), |m| format!("{m} min")),
        ),
        (
            "Quotes per minute",
            or_default(s.rate_limit_quotes_per_minute),
        ),
        (
            "Bookings per minute",
            or_default(s.rate_limit_bookings_per_minute),
        ),
        (
            "Reads per minute",
            or_default(s.rate_limit_reads_per_minute),
        ),
        (
            "Billing contact",
            s.contact_email.clone().unwrap_or_else(|| "none".to_owned()),
        ),
    ]
}

fn endpoint_line(endpoint: Endpoint, environment: Environment) -> EndpointLine {
    EndpointLine {
        url: endpoint.url,
        environment: environment.as_str(),
        status: endpoint.status.as_str(),
        suspended: endpoint.status == EndpointStatus::Suspended,
        failures: endpoint.consecutive_failures,
        last_succeeded: endpoint
            .last_succeeded_at
            .map(when)
            .unwrap_or_else(|| "never".to_owned()),
        last_failed: endpoint
            .last_failed_at
            .map(when)
            .unwrap_or_else(|| "never".to_owned()),
    }
}

/// The merchant's endpoints of both environments.
async fn endpoints_of(state: &AppState, merchant_id: Uuid) -> Vec<EndpointLine> {
    let endpoints = state.webhooks.endpoints();
    let mut lines = Vec::new();
    for environment in [Environment::Live, Environment::Test] {
        let owner = Owner {
            merchant_id,
            environment,
        };
        let Ok(listed) = endpoints.list(owner).await else {
            tracing::error!("listing a merchant's endpoints for the operator console failed");
            continue;
        };
        lines.extend(listed.into_iter().map(|e| endpoint_line(e, environment)));
    }
    lines
}

#[utoipa::path(
    get,
    path = "/ops/merchants/{id}",
    operation_id = "opsConsoleMerchant",
    tag = "console",
    summary = "A merchant: its name, settings and keys (with their last use), its latest 20 jobs (live, or test) and charges, and its webhook endpoints (status, failures in a row, last answered and failed)",
    security(()),
    params(
        ("id" = String, Path, description = "The merchant's id"),
        ("jobs" = Option<String>, Query, description = "Whose jobs: `live` (the default) or `test`"),
    ),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /ops/sign-in"),
        (status = 404, description = "A page: no such merchant", content_type = "text/html", body = String),
        (status = 503, description = "A page: the database is unavailable", content_type = "text/html", body = String),
    )
)]
pub async fn merchant_page(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let detail = match Uuid::parse_str(&id) {
        Ok(id) => state.merchants.show(id).await,
        Err(_) => Err(MerchantError::NotFound),
    };
    let detail = match detail {
        Ok(detail) => detail,
        Err(MerchantError::NotFound) => {
            return message(
                StatusCode::NOT_FOUND,
                Some(&session),
                "No such merchant",
                "There is no merchant with that id.",
            );
        }
        Err(error) => {
            tracing::error!(%error, "the operator console's merchant page failed");
            return unavailable(Some(&session));
        }
    };
    let environment = match query.get("jobs").map(String::as_str) {
        Some("test") => Environment::Test,
        _ => Environment::Live,
    };
    let filter = ListFilter {
        merchant_id: detail.id,
        environment,
        statuses: &[],
        from: None,
        to: None,
        limit: LATEST,
        offset: 0,
        count_up_to: 10_000,
    };
    let charge_filter = ChargeFilter {
        merchant_id: Some(detail.id),
        ..Default::default()
    };
    let (jobs, charges, endpoints) = tokio::join!(
        state.jobs.list(&filter),
        state.payments.charges_across(&charge_filter),
        endpoints_of(&state, detail.id),
    );
    let ((jobs, jobs_total), (mut charges, _)) = match (jobs, charges) {
        (Ok(jobs), Ok(charges)) => (jobs, charges),
        (Err(error), _) | (_, Err(error)) => {
            tracing::error!(%error, "reading a merchant's jobs or charges failed");
            return unavailable(Some(&session));
        }
    };
    charges.truncate(LATEST as usize);
    let body = MerchantPage {
        session: Some(OperatorBar::from(&session)),
        id: detail.id,
        name: detail.name.clone(),
        since: when(detail.created_at),
        settings: settings_of(&detail),
        keys: detail
            .keys
            .into_iter()
            .map(|k| KeyLine {
                key: k.key,
                environment: k.environment.as_str(),
                label: k.label,
                created: when(k.created_at),
                last_used: k
                    .last_used_at
                    .map(when)
                    .unwrap_or_else(|| "never".to_owned()),
                revoked: k.revoked_at.map(when).unwrap_or_default(),
            })
            .collect(),
        jobs_shown: environment.as_str(),
        jobs: jobs
            .into_iter()
            .map(|j| JobLine {
                id: j.id,
                status: j.status.as_str(),
                market: j.market_id.clone(),
                price: money(&j.currency, j.price_amount_minor),
                booked: when(j.booked_at),
                reference: j.reference,
            })
            .collect(),
        jobs_total,
        charges: charges
            .into_iter()
            .map(|c| ChargeLine {
                job_id: c.job_id,
                environment: c.environment.as_str(),
                status: c.status.as_str(),
                amount: money(&c.currency, c.amount_minor),
                raised: when(c.raised_at),
            })
            .collect(),
        endpoints,
    };
    page(StatusCode::OK, body.render())
}
