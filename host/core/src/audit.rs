//! The operator audit trail: every operator action is recorded, in the transaction of the
//! change itself, with who did it and the values before and after.

pub use courier_domain::audit::{
    AuditAction, AuditActionName, AuditRecord, AuditTargetType, TARGET_TYPES,
};
use courier_domain::error::Code;
use courier_domain::error::ErrorCode;
pub use courier_store::audit::{AuditEntry, AuditFilter, list, record};

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

#[derive(Debug, thiserror::Error, PartialEq, Eq, ErrorCode)]
pub enum AuditQueryError {
    #[error("{0:?} is not an audited action")]
    #[code(UNKNOWN_ACTION)]
    UnknownAction(String),
    #[error(
        "{0:?} is not a target type; use one of merchant, api_key, person, invitation, price_book, charge, job, courier, client_address"
    )]
    #[code(UNKNOWN_TARGET_TYPE)]
    UnknownTargetType(String),
}

/// The trail as operators read it, and the records made outside any change of their own.
#[derive(Clone)]
pub struct AuditTrail {
    pool: sqlx::PgPool,
}

impl AuditTrail {
    pub fn new(pool: sqlx::PgPool) -> Self {
        Self { pool }
    }

    /// A page of the filter's entries, newest first, and how many match.
    pub async fn list(&self, filter: &AuditFilter) -> Result<(Vec<AuditEntry>, i64), sqlx::Error> {
        list(&self.pool, filter).await
    }

    /// Records what changed nothing else (a refused sign-in), in a statement of its own.
    pub async fn record_on_its_own(&self, entry: &AuditRecord<'_>) -> Result<(), sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        record(&mut conn, entry).await.map(drop)
    }
}

/// The target type `name`, if it is one.
pub fn target_type(name: &str) -> Result<&'static str, AuditQueryError> {
    TARGET_TYPES
        .into_iter()
        .find(|t| *t == name)
        .ok_or_else(|| AuditQueryError::UnknownTargetType(name.to_owned()))
}

/// The audited action `name`, if it is one.
pub fn action(name: &str) -> Result<AuditAction, AuditQueryError> {
    AuditAction::parse(name).ok_or_else(|| AuditQueryError::UnknownAction(name.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_name_known_actions_and_target_types() {
        assert_eq!(target_type("api_key"), Ok("api_key"));
        assert_eq!(
            target_type("planet"),
            Err(AuditQueryError::UnknownTargetType("planet".into()))
        );
        assert_eq!(action("key.revoked"), Ok(AuditAction::KeyRevoked));
        assert!(action("key.stolen").is_err());
    }
}
