//! The audit trail as an operator searches it: who did what to which, when, before and after.

use askama::Template;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chrono::{NaiveDate, TimeZone, Utc};
use serde::Deserialize;

use super::super::respond::{page, when};
use super::{OperatorBar, message, signed_in, unavailable};
use crate::state::AppState;
use courier_core::audit::{self, AuditFilter};

/// Entries per page.
const PAGE_SIZE: i64 = 50;

struct Entry {
    at: String,
    operator: String,
    action: String,
    target: String,
    before: String,
    after: String,
}

#[derive(Template)]
#[template(path = "console/ops_audit.html")]
struct AuditPage {
    session: Option<OperatorBar>,
    operator: String,
    action: String,
    target_type: String,
    target_id: String,
    from: String,
    to: String,
    entries: Vec<Entry>,
    shown: String,
    page: i64,
    previous: Option<String>,
    next: Option<String>,
}

/// The search form's fields, as the page sends them.
#[derive(Deserialize, Default)]
pub struct AuditQuery {
    operator: Option<String>,
    action: Option<String>,
    target_type: Option<String>,
    target_id: Option<String>,
    from: Option<String>,
    to: Option<String>,
    page: Option<String>,
}

fn filled(value: Option<&String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

fn day(value: Option<&String>) -> Option<chrono::DateTime<Utc>> {
    let date = NaiveDate::parse_from_str(value?.trim(), "%Y-%m-%d").ok()?;
    Some(Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0)?))
}

fn shown_json(value: Option<&serde_json::Value>) -> String {
    value.map_or_else(String::new, serde_json::Value::to_string)
}

#[utoipa::path(
    get,
    path = "/ops/audit",
    operation_id = "opsConsoleAudit",
    tag = "console",
    summary = "The audit trail, searched by operator, action, target and day, newest first",
    security(()),
    params(
        ("operator" = Option<String>, Query, description = "Only this operator's actions"),
        ("action" = Option<String>, Query, description = "Only this action, e.g. price_book.activated"),
        ("target_type" = Option<String>, Query, description = "Only actions on this kind of thing"),
        ("target_id" = Option<String>, Query, description = "Only actions on this one"),
        ("from" = Option<String>, Query, description = "From this day (YYYY-MM-DD, UTC)"),
        ("to" = Option<String>, Query, description = "Before this day (YYYY-MM-DD, UTC)"),
        ("page" = Option<i64>, Query, description = "From 1"),
    ),
    responses(
        (status = 200, description = "The page", content_type = "text/html", body = String),
        (status = 303, description = "Signed out: to /ops/sign-in"),
        (status = 422, description = "A page: an unknown action or target type", content_type = "text/html", body = String),
    )
)]
pub async fn audit_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer,
    };
    let query = query.map(|q| q.0).unwrap_or_default();
    let action = filled(query.action.as_ref());
    let target_type = filled(query.target_type.as_ref());
    let named = action
        .as_deref()
        .map(audit::action)
        .transpose()
        .and_then(|action| {
            let target = target_type.as_deref().map(audit::target_type).transpose()?;
            Ok((action, target))
        });
    let (action_filter, target_filter) = match named {
        Ok(named) => named,
        Err(error) => {
            return message(
                StatusCode::UNPROCESSABLE_ENTITY,
                Some(&session),
                "Audit trail",
                &error.to_string(),
            );
        }
    };
    let page_number = query
        .page
        .as_deref()
        .and_then(|p| p.trim().parse::<i64>().ok())
        .filter(|p| (1..=100_000).contains(p))
        .unwrap_or(1);
    let filter = AuditFilter {
        operator: filled(query.operator.as_ref()),
        action: action_filter,
        target_type: target_filter,
        target_id: filled(query.target_id.as_ref()),
        merchant_id: None,
        from: day(query.from.as_ref()),
        to: day(query.to.as_ref()),
        limit: PAGE_SIZE,
        offset: (page_number - 1) * PAGE_SIZE,
    };
    let (entries, total) = match state.audit.list(&filter).await {
        Ok(found) => found,
        Err(error) => {
            tracing::error!(%error, "reading the audit trail for the operator console failed");
            return unavailable(Some(&session));
        }
    };
    let search: Vec<(&str, String)> = [
        ("operator", filter.operator.clone()),
        ("action", action.clone()),
        ("target_type", target_type.clone()),
        ("target_id", filter.target_id.clone()),
        ("from", filled(query.from.as_ref())),
        ("to", filled(query.to.as_ref())),
    ]
    .into_iter()
    .filter_map(|(name, value)| value.map(|v| (name, v)))
    .collect();
    let link = |page: i64| {
        let mut url = form_urlencoded::Serializer::new(String::new());
        for (name, value) in &search {
            url.append_pair(name, value);
        }
        url.append_pair("page", &page.to_string());
        format!("/ops/audit?{}", url.finish())
    };
    let first = filter.offset + 1;
    let last = filter.offset + i64::try_from(entries.len()).unwrap_or(0);
    page(
        StatusCode::OK,
        AuditPage {
            session: Some(OperatorBar::from(&session)),
            operator: filter.operator.clone().unwrap_or_default(),
            action: action.unwrap_or_default(),
            target_type: target_type.unwrap_or_default(),
            target_id: filter.target_id.clone().unwrap_or_default(),
            from: filled(query.from.as_ref()).unwrap_or_default(),
            to: filled(query.to.as_ref()).unwrap_or_default(),
            shown: if entries.is_empty() {
                format!("None of {total} entries")
            } else {
                format!("Entries {first} to {last} of {total}, newest first")
            },
            entries: entries
                .into_iter()
                .map(|e| Entry {
                    at: when(e.occurred_at),
                    operator: e.operator,
                    action: e.action,
                    target: format!("{} {}", e.target_type, e.target_id),
                    before: shown_json(e.before.as_ref()),
                    after: shown_json(e.after.as_ref()),
                })
                .collect(),
            page: page_number,
            previous: (page_number > 1).then(|| link(page_number - 1)),
            next: (last < total).then(|| link(page_number + 1)),
        }
        .render(),
    )
}
