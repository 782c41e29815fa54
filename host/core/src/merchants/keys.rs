//! A merchant's API keys: several per environment, each labelled; created and revoked by
//! operators, and by the merchant in the console. A secret exists in clear only in the answer
//! to its creation.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;
use uuid::Uuid;

use super::error::{MAX_LABEL_CHARS, MerchantError};
use crate::audit::{self, AuditAction, AuditRecord};
use crate::auth::CredentialChange;
use courier_domain::Environment;
use courier_store as store;

/// A key as operators see it (no secret, no hash).
pub type ApiKey = store::merchants::KeyRow;

/// A new key with its secret: shown once.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedKey {
    pub merchant_id: Uuid,
    pub key: String,
    pub secret: String,
    pub environment: Environment,
    pub label: String,
    pub created_at: DateTime<Utc>,
}

impl super::service::Merchants {
    /// Issues a new key for `merchant_id` in `environment` (`test` or `live`).
    pub async fn create_key(
        &self,
        merchant_id: Uuid,
        environment: &str,
        label: &str,
        operator: &str,
    ) -> Result<CreatedKey, MerchantError> {
        let pool = &self.pool;
        let authenticator = &self.authenticator;
        let environment = Environment::parse(environment.trim())
            .ok_or_else(|| MerchantError::InvalidEnvironment(environment.to_owned()))?;
        let label = label.trim();
        if label.is_empty() || label.chars().count() > MAX_LABEL_CHARS {
            return Err(MerchantError::InvalidLabel);
        }
        let mut tx = pool.begin().await?;
        if !store::merchants::lock_merchant(&mut tx, merchant_id).await? {
            return Err(MerchantError::NotFound);
        }
        let issued = authenticator
            .issue(&mut tx, merchant_id, environment, label)
            .await?;
        let stored = store::merchants::find_key(&mut tx, issued.id).await?;
        audit::record(
            &mut tx,
            &AuditRecord {
                operator,
                action: AuditAction::KeyCreated,
                target_type: "api_key",
                target_id: issued.key.clone(),
                merchant_id: Some(merchant_id),
                before: None,
                after: Some(json!({
                    "key": issued.key,
                    "environment": environment.as_str(),
                    "label": label,
                })),
                occurred_at: stored.created_at,
            },
        )
        .await?;
        let what = format!(
            "a {} key, {} ({label}), was made",
            environment.as_str(),
            issued.key
        );
        self.tell_owners(&mut tx, merchant_id, &what, operator)
            .await?;
        tx.commit().await?;
        Ok(CreatedKey {
            merchant_id,
            key: issued.key,
            secret: issued.secret,
            environment,
            label: label.to_owned(),
            created_at: stored.created_at,
        })
    }

    /// Revokes `key` (idempotent: revoking a revoked key changes and records nothing). Every
    /// instance is told at once, from the revoking transaction.
    pub async fn revoke_key(&self, key: &str, operator: &str) -> Result<ApiKey, MerchantError> {
        let pool = &self.pool;
        let authenticator = &self.authenticator;
        let key = key.trim();
        // No key id holds NUL, and PostgreSQL text cannot: not a key, not a failed query.
        if key.contains('\0') {
            return Err(MerchantError::KeyNotFound);
        }
        let mut tx = pool.begin().await?;
        let stored = store::merchants::lock_key(&mut tx, key)
            .await?
            .ok_or(MerchantError::KeyNotFound)?;
        if stored.revoked_at.is_some() {
            return Ok(stored);
        }
        let now = crate::infra::clock::now();
        let revoked = store::merchants::revoke_key(&mut tx, stored.id, now).await?;
        audit::record(
            &mut tx,
            &AuditRecord {
                operator,
                action: AuditAction::KeyRevoked,
                target_type: "api_key",
                target_id: revoked.key.clone(),
                merchant_id: Some(revoked.merchant_id),
                before: Some(json!({"revoked_at": null})),
                after: Some(json!({"revoked_at": now})),
                occurred_at: now,
            },
        )
        .await?;
        crate::auth::announce(&mut tx, &CredentialChange::Key(revoked.key.clone())).await?;
        let what = format!("the key {} ({}) was revoked", revoked.key, revoked.label);
        self.tell_owners(&mut tx, revoked.merchant_id, &what, operator)
            .await?;
        tx.commit().await?;
        // This process need not wait for its own notice.
        authenticator.forget_key(&revoked.key);
        Ok(revoked)
    }
}
