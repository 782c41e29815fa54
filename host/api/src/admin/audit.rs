//! `GET /admin/v1/audit`: the operator audit trail, filtered, newest first, in pages.

use std::collections::HashMap;

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::{ApiError, RequestError};
use crate::extract::ApiQuery;
use crate::jobs::{date_time_parameter, whole_parameter};
use crate::state::AppState;
use courier_core::audit::{self, AuditEntry, AuditFilter};
use courier_core::audit::{AuditActionName, AuditTargetType};

const DEFAULT_PAGE_SIZE: i64 = 50;
const MAX_PAGE_SIZE: i64 = 200;
const PARAMETERS: [&str; 9] = [
    "operator",
    "action",
    "target_type",
    "target_id",
    "merchant_id",
    "from",
    "to",
    "page",
    "size",
];

/// A page of the audit trail.
#[derive(Serialize, ToSchema)]
pub struct AuditPage {
    items: Vec<AuditEntry>,
    total: i64,
    page: i64,
    size: i64,
}

#[utoipa::path(
    get,
    path = "/audit",
    operation_id = "listAuditEntries",
    tag = "admin",
    summary = "The operator audit trail, filtered, newest first, in pages",
    params(
        ("operator" = Option<String>, Query, description = "Only this operator's actions"),
        ("action" = Option<AuditActionName>, Query, description = "Only this action"),
        ("target_type" = Option<AuditTargetType>, Query, description = "Only actions on this kind of thing"),
        ("target_id" = Option<String>, Query, description = "Only actions on this one (with its kind, best)"),
        ("merchant_id" = Option<uuid::Uuid>, Query, description = "Only actions concerning this merchant"),
        ("from" = Option<chrono::DateTime<chrono::Utc>>, Query, description = "At or after"),
        ("to" = Option<chrono::DateTime<chrono::Utc>>, Query, description = "Before"),
        ("page" = Option<i64>, Query, minimum = 1, description = "From 1; default 1"),
        ("size" = Option<i64>, Query, minimum = 1, maximum = 200, description = "Up to 200; default 50"),
    ),
    responses(
        (status = 200, description = "A page of entries", body = AuditPage),
        (status = 422, description = "request.invalid_query payment.raw_card_number request.invalid_page request.invalid_page_size audit.unknown_action audit.unknown_target_type"),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<HashMap<String, String>>,
) -> Result<Json<AuditPage>, ApiError> {
    if let Some(unknown) = query.keys().find(|k| !PARAMETERS.contains(&k.as_str())) {
        return Err(RequestError::InvalidQuery(format!("unknown parameter `{unknown}`")).into());
    }
    let text = |name: &str| {
        query
            .get(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let page = whole_parameter(&query, "page", 1)
        .filter(|p| *p >= 1)
        .ok_or(RequestError::InvalidPage)?;
    let size = whole_parameter(&query, "size", DEFAULT_PAGE_SIZE)
        .filter(|s| (1..=MAX_PAGE_SIZE).contains(s))
        .ok_or(RequestError::InvalidPageSize { max: MAX_PAGE_SIZE })?;
    let offset = (page - 1)
        .checked_mul(size)
        .ok_or(RequestError::InvalidPage)?;
    let merchant_id = text("merchant_id")
        .map(|raw| {
            uuid::Uuid::parse_str(&raw).map_err(|_| {
                RequestError::InvalidQuery("`merchant_id` must be a merchant id (a UUID)".into())
            })
        })
        .transpose()?;
    let filter = AuditFilter {
        operator: text("operator"),
        action: text("action").map(|a| audit::action(&a)).transpose()?,
        target_type: text("target_type")
            .map(|t| audit::target_type(&t))
            .transpose()?,
        target_id: text("target_id"),
        merchant_id,
        from: date_time_parameter(&query, "from")?,
        to: date_time_parameter(&query, "to")?,
        limit: size,
        offset,
    };
    let (items, total) = state.audit.list(&filter).await?;
    Ok(Json(AuditPage {
        items,
        total,
        page,
        size,
    }))
}
