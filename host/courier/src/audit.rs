//! The operator audit trail: every operator action is recorded, in the transaction of the
//! change itself, with who did it and the values before and after.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use courier_domain::error::Code;
use courier_domain::error::ErrorCode;

pub const UNKNOWN_ACTION: Code = Code::new(
    422,
    "audit.unknown_action",
    "The audit trail's `action` filter is not one of the recorded actions.",
);
pub const UNKNOWN_TARGET_TYPE: Code = Code::new(
    422,
    "audit.unknown_target_type",
    "The audit trail's `target_type` filter is not one of the target types.",
);

/// The kinds of thing operators act on: `AuditRecord::target_type`.
pub const TARGET_TYPES: [&str; 6] = [
    "merchant",
    "api_key",
    "price_book",
    "charge",
    "job",
    "courier",
];

courier_domain::named_values!(
    /// What an operator did, as the audit trail names it.
    pub AuditActionName: "What an operator did" = AuditAction::ALL.map(AuditAction::as_str)
);
courier_domain::named_values!(
    /// The kinds of thing operators act on.
    pub AuditTargetType: "The kind of thing an operator acted on" = TARGET_TYPES
);

/// What an operator did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AuditAction {
    MerchantCreated,
    KeyCreated,
    KeyRevoked,
    SettingsChanged,
    PriceBookUploaded,
    PriceBookActivated,
    PriceBookRolledBack,
    ChargeRefunded,
    JobStatusSet,
    JobCourierReassigned,
    CourierCreated,
    CourierSuspended,
    CourierReinstated,
}

impl AuditAction {
    pub const ALL: [AuditAction; 13] = [
        AuditAction::MerchantCreated,
        AuditAction::KeyCreated,
        AuditAction::KeyRevoked,
        AuditAction::SettingsChanged,
        AuditAction::PriceBookUploaded,
        AuditAction::PriceBookActivated,
        AuditAction::PriceBookRolledBack,
        AuditAction::ChargeRefunded,
        AuditAction::JobStatusSet,
        AuditAction::JobCourierReassigned,
        AuditAction::CourierCreated,
        AuditAction::CourierSuspended,
        AuditAction::CourierReinstated,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AuditAction::MerchantCreated => "merchant.created",
            AuditAction::KeyCreated => "key.created",
            AuditAction::KeyRevoked => "key.revoked",
            AuditAction::SettingsChanged => "merchant.settings_changed",
            AuditAction::PriceBookUploaded => "price_book.uploaded",
            AuditAction::PriceBookActivated => "price_book.activated",
            AuditAction::PriceBookRolledBack => "price_book.rolled_back",
            AuditAction::ChargeRefunded => "charge.refunded",
            AuditAction::JobStatusSet => "job.status_set",
            AuditAction::JobCourierReassigned => "job.courier_reassigned",
            AuditAction::CourierCreated => "courier.created",
            AuditAction::CourierSuspended => "courier.suspended",
            AuditAction::CourierReinstated => "courier.reinstated",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == name)
    }
}

/// One operator action. `target_type` names the kind of thing acted on (`merchant`,
/// `api_key`, `price_book`, `charge`, `job`, `courier`) and `target_id` which one.
#[derive(Clone, Debug)]
pub struct AuditRecord<'a> {
    pub operator: &'a str,
    pub action: AuditAction,
    pub target_type: &'static str,
    pub target_id: String,
    pub merchant_id: Option<Uuid>,
    /// Never secrets: key secrets, card data and tokens stay out of the trail.
    pub before: Option<Value>,
    pub after: Option<Value>,
    pub occurred_at: DateTime<Utc>,
}

/// Records `record` on `conn`, which should be the transaction of the change itself, so the
/// trail holds an action exactly when it took effect.
pub async fn record(
    conn: &mut PgConnection,
    record: &AuditRecord<'_>,
) -> Result<Uuid, sqlx::Error> {
    let id = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO audit_log \
         (id, operator, action, target_type, target_id, merchant_id, before, after, occurred_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(id)
    .bind(record.operator)
    .bind(record.action.as_str())
    .bind(record.target_type)
    .bind(&record.target_id)
    .bind(record.merchant_id)
    .bind(&record.before)
    .bind(&record.after)
    .bind(record.occurred_at)
    .execute(conn)
    .await?;
    Ok(id)
}

#[derive(Debug, thiserror::Error, PartialEq, Eq, ErrorCode)]
pub enum AuditQueryError {
    #[error("{0:?} is not an audited action")]
    #[code(UNKNOWN_ACTION)]
    UnknownAction(String),
    #[error(
        "{0:?} is not a target type; use one of merchant, api_key, price_book, charge, job, courier"
    )]
    #[code(UNKNOWN_TARGET_TYPE)]
    UnknownTargetType(String),
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

impl AuditFilter {
    pub fn target_type(name: &str) -> Result<&'static str, AuditQueryError> {
        TARGET_TYPES
            .into_iter()
            .find(|t| *t == name)
            .ok_or_else(|| AuditQueryError::UnknownTargetType(name.to_owned()))
    }

    pub fn action(name: &str) -> Result<AuditAction, AuditQueryError> {
        AuditAction::parse(name).ok_or_else(|| AuditQueryError::UnknownAction(name.to_owned()))
    }
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
    const MATCHES: &str = "($1::text IS NULL OR operator = $1) \
         AND ($2::text IS NULL OR action = $2) \
         AND ($3::text IS NULL OR target_type = $3) \
         AND ($4::text IS NULL OR target_id = $4) \
         AND ($5::uuid IS NULL OR merchant_id = $5) \
         AND ($6::timestamptz IS NULL OR occurred_at >= $6) \
         AND ($7::timestamptz IS NULL OR occurred_at < $7)";
    let action = filter.action.map(AuditAction::as_str);
    let entries = sqlx::query_as(&format!(
        "SELECT id, operator, action, target_type, target_id, merchant_id, before, after, \
                occurred_at \
         FROM audit_log WHERE {MATCHES} \
         ORDER BY occurred_at DESC, id DESC LIMIT $8 OFFSET $9"
    ))
    .bind(&filter.operator)
    .bind(action)
    .bind(filter.target_type)
    .bind(&filter.target_id)
    .bind(filter.merchant_id)
    .bind(filter.from)
    .bind(filter.to)
    .bind(filter.limit)
    .bind(filter.offset)
    .fetch_all(pool)
    .await?;
    let total: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM audit_log WHERE {MATCHES}"))
        .bind(&filter.operator)
        .bind(action)
        .bind(filter.target_type)
        .bind(&filter.target_id)
        .bind(filter.merchant_id)
        .bind(filter.from)
        .bind(filter.to)
        .fetch_one(pool)
        .await?;
    Ok((entries, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_names_round_trip() {
        for action in AuditAction::ALL {
            assert_eq!(AuditAction::parse(action.as_str()), Some(action));
        }
        assert_eq!(AuditAction::parse("key.stolen"), None);
    }

    #[test]
    fn filters_name_known_actions_and_target_types() {
        assert_eq!(AuditFilter::target_type("api_key"), Ok("api_key"));
        assert_eq!(
            AuditFilter::target_type("planet"),
            Err(AuditQueryError::UnknownTargetType("planet".into()))
        );
        assert_eq!(
            AuditFilter::action("key.revoked"),
            Ok(AuditAction::KeyRevoked)
        );
        assert!(AuditFilter::action("key.stolen").is_err());
    }
}
