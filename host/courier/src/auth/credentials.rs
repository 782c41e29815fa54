//! Issuing and verifying API credentials. Secrets are kept only as a keyed hash.

use rand::distr::{Alphanumeric, SampleString};
use sqlx::PgPool;
use subtle::ConstantTimeEq;
use thiserror::Error;
use uuid::Uuid;

use crate::domain::Environment;
use crate::secrets::{SecretKey, hmac_sha256};
use crate::store;

use super::parse_basic;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum AuthError {
    #[error("this request needs HTTP Basic credentials: the API key and secret")]
    Missing,
    #[error("the Authorization header is not HTTP Basic `key:secret`")]
    Malformed,
    #[error("the API key or secret is not valid")]
    Invalid,
    #[error("credentials cannot be checked right now")]
    Unavailable,
}

/// Who is calling: the merchant and the environment of the key used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Merchant {
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub key_id: Uuid,
}

/// A freshly issued credential; the only moment the secret exists outside the caller's hands.
#[derive(Debug)]
pub struct IssuedKey {
    pub id: Uuid,
    pub key: String,
    pub secret: String,
}

#[derive(Clone)]
pub struct Authenticator {
    pool: PgPool,
    hash_key: [u8; 32],
}

impl Authenticator {
    pub fn new(pool: PgPool, secret_key: &SecretKey) -> Self {
        Self {
            pool,
            hash_key: secret_key.derive("api-key-secret-hash"),
        }
    }

    /// Makes a new key and secret for `merchant_id` in `environment`, stored hashed.
    pub async fn issue(
        &self,
        tx: &mut sqlx::PgConnection,
        merchant_id: Uuid,
        environment: Environment,
        label: &str,
    ) -> Result<IssuedKey, sqlx::Error> {
        let mut rng = rand::rng();
        let key = format!(
            "{}{}",
            environment.key_prefix(),
            Alphanumeric.sample_string(&mut rng, 24)
        );
        let secret = Alphanumeric.sample_string(&mut rng, 40);
        let id = Uuid::new_v4();
        let new_key = store::merchants::NewApiKey {
            id,
            merchant_id,
            key: &key,
            environment,
            secret_hash: &self.hash(&key, &secret),
            label,
        };
        store::merchants::insert_api_key(tx, &new_key).await?;
        Ok(IssuedKey { id, key, secret })
    }

    /// Checks an `Authorization` header value (None when the header is absent).
    pub async fn authenticate(&self, header: Option<&[u8]>) -> Result<Merchant, AuthError> {
        let credentials = parse_basic(header.ok_or(AuthError::Missing)?)?;
        let environment = Environment::of_key(&credentials.key).ok_or(AuthError::Invalid)?;
        let expected = self.hash(&credentials.key, &credentials.secret);
        let stored = store::merchants::find_api_key(&self.pool, &credentials.key)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "looking up an API key failed");
                AuthError::Unavailable
            })?
            .ok_or(AuthError::Invalid)?;
        let matches: bool = stored.secret_hash.ct_eq(expected.as_slice()).into();
        // The stored environment must agree with the key's prefix, so a key can never be
        // presented as belonging to the other environment.
        if !matches || stored.environment != environment || stored.revoked {
            return Err(AuthError::Invalid);
        }
        Ok(Merchant {
            merchant_id: stored.merchant_id,
            environment,
            key_id: stored.id,
        })
    }

    /// The keyed hash binds the secret to its key, so hashes cannot be swapped between keys.
    fn hash(&self, key: &str, secret: &str) -> [u8; 32] {
        let message = format!("{key}:{secret}");
        hmac_sha256(&self.hash_key, message.as_bytes())
    }
}
