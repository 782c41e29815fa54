//! The operator audit trail: every operator action is recorded, in the transaction of the
//! change itself, with who did it and the values before and after.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

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
}
