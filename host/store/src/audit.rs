//! The operator audit trail: written in the transaction of each change, read by operators.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use courier_domain::audit::{AuditAction, AuditActionName, AuditRecord, AuditTargetType};

/// Records `record` on `conn`, which should be the transaction of the change itself, so the
/// trail holds an action exactly when it took effect.
pub async fn record(
    conn: &mut PgConnection,
    record: &AuditRecord<'_>,
) -> Result<Uuid, sqlx::Error> {
    let id = Uuid::new_v4();
    sqlx::query!(
        "INSERT INTO audit_log \
         (id, operator, action, target_type, target_id, merchant_id, before, after, occurred_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        id,
        record.operator,
        record.action.as_str(),
        record.target_type,
        &record.target_id,
        record.merchant_id,
        record.before.as_ref(),
        record.after.as_ref(),
        record.occurred_at,
    )
    .execute(conn)
    .await?;
    Ok(id)
}

/// Which entries to read: every filter that is set must match.
#[derive(Clone, Debug, Default)]
pub struct AuditFilter {
    pub operator: Option<String>,
    pub action: Option<AuditAction>,
    pub target_type: Option<&'static str>,
    pub target_id: Option<String>,
    pub merchant_id: Option<Uuid>,
    /// Inclusive.
    pub from: Option<DateTime<Utc>>,
    /// Exclusive.
    pub to: Option<DateTime<Utc>>,
    pub limit: i64,
    pub offset: i64,
}

/// One recorded action, as read back.
#[derive(Clone, Debug, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct AuditEntry {
    pub id: Uuid,
    /// Who did it: the operator's name (`system` for the service itself).
    pub operator: String,
    /// What was done, e.g. `merchant.created`.
    #[schema(value_type = AuditActionName)]
    pub action: String,
    #[schema(value_type = AuditTargetType)]
    pub target_type: String,
    /// Which one: a UUID, an API key, or `<market>/<version>` for a price book.
    pub target_id: String,
    /// The merchant concerned, if any.
    pub merchant_id: Option<Uuid>,
    /// The values before the change; never secrets.
    #[schema(value_type = Option<Object>)]
    pub before: Option<Value>,
    /// The values after the change; never secrets.
    #[schema(value_type = Option<Object>)]
    pub after: Option<Value>,
    pub occurred_at: DateTime<Utc>,
}

/// The entries matching `filter`, newest first, and how many match in all.
pub async fn list(
    pool: &PgPool,
    filter: &AuditFilter,
) -> Result<(Vec<AuditEntry>, i64), sqlx::Error> {
    let action = filter.action.map(AuditAction::as_str);
    let entries = sqlx::query_as!(
        AuditEntry,
        "SELECT id, operator, action, target_type, target_id, merchant_id, before, after, \
                occurred_at \
         FROM audit_log WHERE ($1::text IS NULL OR operator = $1) \
         AND ($2::text IS NULL OR action = $2) \
         AND ($3::text IS NULL OR target_type = $3) \
         AND ($4::text IS NULL OR target_id = $4) \
         AND ($5::uuid IS NULL OR merchant_id = $5) \
         AND ($6::timestamptz IS NULL OR occurred_at >= $6) \
         AND ($7::timestamptz IS NULL OR occurred_at < $7) \
         ORDER BY occurred_at DESC, id DESC LIMIT $8 OFFSET $9",
        filter.operator.as_deref(),
        action,
        filter.target_type,
        filter.target_id.as_deref(),
        filter.merchant_id,
        filter.from,
        filter.to,
        filter.limit,
        filter.offset,
    )
    .fetch_all(pool)
    .await?;
    let total: i64 = sqlx::query_scalar!(
        "SELECT count(*) AS \"count!\" FROM audit_log WHERE ($1::text IS NULL OR operator = $1) \
         AND ($2::text IS NULL OR action = $2) \
         AND ($3::text IS NULL OR target_type = $3) \
         AND ($4::text IS NULL OR target_id = $4) \
         AND ($5::uuid IS NULL OR merchant_id = $5) \
         AND ($6::timestamptz IS NULL OR occurred_at >= $6) \
         AND ($7::timestamptz IS NULL OR occurred_at < $7)",
        filter.operator.as_deref(),
        action,
        filter.target_type,
        filter.target_id.as_deref(),
        filter.merchant_id,
        filter.from,
        filter.to,
    )
    .fetch_one(pool)
    .await?;
    Ok((entries, total))
}
