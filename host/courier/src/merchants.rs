//! Onboarding: a merchant is created with one test and one live credential.

use serde::Serialize;
use sqlx::PgPool;
use uuid::Uuid;

use crate::auth::Authenticator;
use crate::domain::Environment;
use crate::store;

/// What `courier merchant create` prints: the only time the secrets are shown.
#[derive(Debug, Serialize)]
pub struct NewMerchant {
    pub merchant_id: Uuid,
    pub name: String,
    pub test_key: String,
    pub test_secret: String,
    pub live_key: String,
    pub live_secret: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CreateMerchantError {
    #[error("a merchant needs a non-empty name")]
    EmptyName,
    #[error(transparent)]
    Store(#[from] sqlx::Error),
}

pub async fn create(
    pool: &PgPool,
    authenticator: &Authenticator,
    name: &str,
) -> Result<NewMerchant, CreateMerchantError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(CreateMerchantError::EmptyName);
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

/// Account settings bookings read (the spec's "account setting" for `notify_customer`, and
/// which proof a delivery needs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, sqlx::FromRow)]
pub struct AccountSettings {
    /// `notify_customer` of bookings that do not say.
    pub notify_customer: bool,
    pub proof_photo_required: bool,
    pub proof_signature_required: bool,
}

/// A change to some account settings; what is absent stays as it is.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsChange {
    pub notify_customer: Option<bool>,
    pub proof_photo_required: Option<bool>,
    pub proof_signature_required: Option<bool>,
}

/// The merchant's settings, None when there is no such merchant.
pub async fn settings(
    pool: &PgPool,
    merchant_id: Uuid,
) -> Result<Option<AccountSettings>, sqlx::Error> {
    store::merchants::settings(pool, merchant_id).await
}

/// Applies `change`; returns the settings after it, None when there is no such merchant.
pub async fn change_settings(
    pool: &PgPool,
    merchant_id: Uuid,
    change: &SettingsChange,
) -> Result<Option<AccountSettings>, sqlx::Error> {
    store::merchants::change_settings(pool, merchant_id, change).await
}
