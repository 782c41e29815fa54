//! Merchants as operators manage them: onboarding, their API keys, their account settings.
//! Every change is recorded in the audit trail in its own transaction.

mod error;
mod keys;
mod service;
mod settings;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;
use uuid::Uuid;

use crate::audit::{self, AuditAction, AuditRecord};
use courier_domain::Environment;
use courier_store as store;

use error::MAX_NAME_CHARS;
pub use error::{MERCHANT_NOT_FOUND, MerchantError, SettingsError};
pub use keys::{ApiKey, CreatedKey};
pub use service::Merchants;
pub use settings::{AccountSettings, SettingsChange};

/// Who `create` records as the operator: the service itself (set-up scripts, tests, benches).
pub const SYSTEM_OPERATOR: &str = "system";

/// What `courier merchant create` prints: the only time the secrets are shown.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct NewMerchant {
    pub merchant_id: Uuid,
    pub name: String,
    pub test_key: String,
    pub test_secret: String,
    pub live_key: String,
    pub live_secret: String,
}

/// A merchant in the operators' list.
pub type MerchantSummary = store::merchants::MerchantRow;

/// One merchant with its settings and keys (never their secrets).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MerchantDetail {
    pub id: Uuid,
    pub name: String,
    pub created_at: DateTime<Utc>,
    pub settings: AccountSettings,
    pub keys: Vec<ApiKey>,
}

impl Merchants {
    /// Creates a merchant with one test and one live key, recorded as done by the service itself.
    pub async fn create(&self, name: &str) -> Result<NewMerchant, MerchantError> {
        self.create_as(name, SYSTEM_OPERATOR).await
    }

    /// Creates a merchant with one test and one live key (labelled `default`), for `operator`.
    pub async fn create_as(
        &self,
        name: &str,
        operator: &str,
    ) -> Result<NewMerchant, MerchantError> {
        let pool = &self.pool;
        let authenticator = &self.authenticator;
        let name = name.trim();
        if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
            return Err(MerchantError::InvalidName);
        }
        let merchant_id = Uuid::new_v4();
        let mut tx = pool.begin().await?;
        store::merchants::insert_merchant(&mut tx, merchant_id, name).await?;
        let test = authenticator
            .issue(&mut tx, merchant_id, Environment::Test, "default")
            .await?;
        let live = authenticator
            .issue(&mut tx, merchant_id, Environment::Live, "default")
            .await?;
        let key_record = |key: &str, environment: Environment| json!({"key": key, "environment": environment.as_str(), "label": "default"});
        audit::record(
            &mut tx,
            &AuditRecord {
                operator,
                action: AuditAction::MerchantCreated,
                target_type: "merchant",
                target_id: merchant_id.to_string(),
                merchant_id: Some(merchant_id),
                before: None,
                after: Some(json!({
                    "name": name,
                    "keys": [
                        key_record(&test.key, Environment::Test),
                        key_record(&live.key, Environment::Live),
                    ],
                })),
                occurred_at: crate::infra::clock::now(),
            },
        )
        .await?;
        tx.commit().await?;
        Ok(NewMerchant {
            merchant_id,
            name: name.to_owned(),
            test_key: test.key,
            test_secret: test.secret,
            live_key: live.key,
            live_secret: live.secret,
        })
    }

    /// Every merchant, newest first.
    pub async fn list(&self) -> Result<Vec<MerchantSummary>, MerchantError> {
        Ok(store::merchants::list_merchants(&self.pool).await?)
    }

    /// One merchant with its settings and keys.
    pub async fn show(&self, merchant_id: Uuid) -> Result<MerchantDetail, MerchantError> {
        let pool = &self.pool;
        let mut conn = pool.acquire().await?;
        let merchant = store::merchants::find_merchant(&mut conn, merchant_id)
            .await?
            .ok_or(MerchantError::NotFound)?;
        let settings = store::merchants::settings(&mut conn, merchant_id, false)
            .await?
            .ok_or(MerchantError::NotFound)?;
        let keys = store::merchants::keys_of(&mut conn, merchant_id).await?;
        Ok(MerchantDetail {
            id: merchant.id,
            name: merchant.name,
            created_at: merchant.created_at,
            settings,
            keys,
        })
    }
}

/// A merchant id as operators type it; anything that is not a UUID names no merchant.
pub fn parse_id(raw: &str) -> Result<Uuid, MerchantError> {
    Uuid::parse_str(raw.trim()).map_err(|_| MerchantError::NotFound)
}
