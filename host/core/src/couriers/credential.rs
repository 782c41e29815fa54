//! Courier credentials: `Authorization: Bearer crk_<key>.<secret>`. The key is looked up;
//! the secret is kept only as a keyed hash (HMAC-SHA256 under a subkey of the service's
//! secret key, bound to the key), like merchant secrets. Checked against the database on
//! every request, so a suspension takes effect at once.

use rand::distr::{Alphanumeric, SampleString};
use sqlx::PgPool;
use subtle::ConstantTimeEq;
use thiserror::Error;
use uuid::Uuid;

use crate::auth::AuthError;
use crate::infra::secrets::{SecretKey, hmac_sha256};
use courier_domain::dispatch::CourierStatus;
use courier_store::couriers as store;

use courier_domain::error::Code;
use courier_domain::error::ErrorCode;

pub const SUSPENDED: Code = Code::new(
    403,
    "courier.suspended",
    "The courier API, for a suspended courier.",
);

const KEY_PREFIX: &str = "crk_";

#[derive(Debug, Error, PartialEq, Eq, ErrorCode)]
pub enum CourierAuthError {
    #[error(transparent)]
    #[code(via)]
    Credential(#[from] AuthError),
    #[error("this courier is suspended")]
    #[code(SUSPENDED)]
    Suspended,
}

/// A new credential: the token shown once, the key and hash stored.
pub struct IssuedCredential {
    pub key: String,
    pub secret_hash: [u8; 32],
    pub token: String,
}

/// Who is calling the courier API.
#[derive(Clone, Debug)]
pub struct CourierIdentity {
    pub courier_id: Uuid,
    pub market_id: String,
    pub vehicle: courier_domain::Vehicle,
}

#[derive(Clone)]
pub struct CourierCredentials {
    pool: PgPool,
    hash_key: [u8; 32],
}

impl CourierCredentials {
    pub fn new(pool: PgPool, secret_key: &SecretKey) -> Self {
        Self {
            pool,
            hash_key: secret_key.derive("courier-credential-hash"),
        }
    }

    pub fn issue(&self) -> IssuedCredential {
        let mut rng = rand::rng();
        let key = format!("{KEY_PREFIX}{}", Alphanumeric.sample_string(&mut rng, 24));
        let secret = Alphanumeric.sample_string(&mut rng, 40);
        IssuedCredential {
            secret_hash: self.hash(&key, &secret),
            token: format!("{key}.{secret}"),
            key,
        }
    }

    /// Checks an `Authorization` header value (None when absent).
    pub async fn authenticate(
        &self,
        header: Option<&[u8]>,
    ) -> Result<CourierIdentity, CourierAuthError> {
        let (key, secret) = parse_bearer(header.ok_or(AuthError::Missing)?)?;
        self.check(key, secret).await
    }

    /// Checks a credential as issued (`crk_<key>.<secret>`), typed into the courier app.
    pub async fn authenticate_token(
        &self,
        token: &str,
    ) -> Result<CourierIdentity, CourierAuthError> {
        let (key, secret) = parse_token(token)?;
        self.check(key, secret).await
    }

    async fn check(&self, key: &str, secret: &str) -> Result<CourierIdentity, CourierAuthError> {
        let stored = store::find_by_key(&self.pool, key)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "looking up a courier credential failed");
                AuthError::Unavailable
            })?
            .ok_or(AuthError::Invalid)?;
        let expected = self.hash(key, secret);
        if !bool::from(stored.secret_hash.ct_eq(expected.as_slice())) {
            return Err(AuthError::Invalid.into());
        }
        if stored.status != CourierStatus::Active {
            return Err(CourierAuthError::Suspended);
        }
        Ok(CourierIdentity {
            courier_id: stored.id,
            market_id: stored.market_id,
            vehicle: stored.vehicle,
        })
    }

    fn hash(&self, key: &str, secret: &str) -> [u8; 32] {
        hmac_sha256(&self.hash_key, format!("{key}:{secret}").as_bytes())
    }
}

/// `Bearer crk_<key>.<secret>` → (key, secret).
fn parse_bearer(header: &[u8]) -> Result<(&str, &str), AuthError> {
    let header = std::str::from_utf8(header).map_err(|_| AuthError::Malformed)?;
    let (scheme, token) = header.trim().split_once(' ').ok_or(AuthError::Malformed)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::Malformed);
    }
    parse_token(token)
}

/// `crk_<key>.<secret>` → (key, secret).
fn parse_token(token: &str) -> Result<(&str, &str), AuthError> {
    let (key, secret) = token.trim().split_once('.').ok_or(AuthError::Malformed)?;
    if !key.starts_with(KEY_PREFIX) || secret.is_empty() {
        return Err(AuthError::Malformed);
    }
    Ok((key, secret))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_parsed() {
        assert_eq!(
            parse_bearer(b"Bearer crk_abc.s3cret").unwrap(),
            ("crk_abc", "s3cret")
        );
        assert_eq!(
            parse_bearer(b"bearer  crk_abc.s3cret ").unwrap(),
            ("crk_abc", "s3cret")
        );
        for bad in [
            &b"Basic crk_abc.s3cret"[..],
            b"Bearer crk_abc",
            b"Bearer ck_test_abc.s3cret",
            b"Bearer crk_abc.",
            b"Bearer",
            b"\xff",
        ] {
            assert_eq!(parse_bearer(bad), Err(AuthError::Malformed));
        }
    }
}
