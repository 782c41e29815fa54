//! Issuing and verifying API credentials. Secrets are kept only as a keyed hash.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::distr::{Alphanumeric, SampleString};
use sqlx::PgPool;
use subtle::ConstantTimeEq;
use thiserror::Error;
use uuid::Uuid;

use super::basic::BasicCredentials;
use crate::infra::secrets::{SecretKey, hmac_sha256};
use courier_domain::Environment;
use courier_domain::limits::LimitOverrides;
use courier_store as store;

use super::basic::parse_basic;

use courier_domain::error::Code;
use courier_domain::error::ErrorCode;

pub const MISSING_CREDENTIALS: Code = Code::new(
    401,
    "auth.missing_credentials",
    "No `Authorization` header (merchant, operator and courier APIs).",
);
pub const MALFORMED_CREDENTIALS: Code = Code::new(
    401,
    "auth.malformed_credentials",
    "Merchant API: not `Basic`, not base64, or not `key:secret`. Operator API: not `Bearer <token>`. Courier API: not `Bearer crk_<key>.<secret>`.",
);
pub const INVALID_CREDENTIALS: Code = Code::new(
    401,
    "auth.invalid_credentials",
    "Unknown key, wrong secret, revoked key, or a key presented with the wrong environment prefix (one code for all, so keys cannot be probed). Operator API: a token that is not configured (any token while none is). Courier API: an unknown courier key or a wrong secret.",
);

#[derive(Debug, Error, PartialEq, Eq, ErrorCode)]
pub enum AuthError {
    #[error("this request needs HTTP Basic credentials: the API key and secret")]
    #[code(MISSING_CREDENTIALS)]
    Missing,
    #[error("the Authorization header is not HTTP Basic `key:secret`")]
    #[code(MALFORMED_CREDENTIALS)]
    Malformed,
    #[error("the API key or secret is not valid")]
    #[code(INVALID_CREDENTIALS)]
    Invalid,
    #[error("credentials cannot be checked right now")]
    #[code(courier_domain::error::DATABASE_UNAVAILABLE)]
    Unavailable,
}

/// Who is calling: the merchant and the environment of the key used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Merchant {
    pub merchant_id: Uuid,
    pub environment: Environment,
    pub key_id: Uuid,
}

/// An authenticated caller and its merchant's request budgets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caller {
    pub merchant: Merchant,
    pub limits: LimitOverrides,
}

/// A freshly issued credential; the only moment the secret exists outside the caller's hands.
#[derive(Debug)]
pub struct IssuedKey {
    pub id: Uuid,
    pub key: String,
    pub secret: String,
}

/// Most keys kept in memory; past this the cache starts over.
const CACHE_CAPACITY: usize = 100_000;

/// What the database said of a key, trusted until `until`: its stored hash and caller, or
/// that there is no such key. Kept for unknown keys and wrong secrets too, so that a flood
/// of either costs no database round trip.
struct Looked {
    found: Option<Found>,
    until: Instant,
}

#[derive(Clone)]
struct Found {
    merchant_id: Uuid,
    secret_hash: Vec<u8>,
    /// None when the key cannot be used: revoked, or stored for the other environment.
    caller: Option<Caller>,
}

#[derive(Clone)]
pub struct Authenticator {
    pool: PgPool,
    hash_key: [u8; 32],
    /// Keys as last looked up, so a busy key (or a flood of unknown keys or wrong secrets)
    /// is not looked up on every request. A revocation evicts the key's entry on every
    /// instance at once (see `changes`); should that notice be missed, the entry still
    /// expires within `cache_for`.
    looked: Arc<Mutex<HashMap<String, Looked>>>,
    cache_for: Duration,
    /// Counts evictions: a look-up that began before one may have read what was just
    /// revoked, so its answer is not cached.
    evictions: Arc<AtomicU64>,
    /// Keys used since `last_used_at` was last written (see `usage`).
    used: Arc<Mutex<HashSet<Uuid>>>,
}

impl Authenticator {
    /// Checks every request against the database.
    pub fn new(pool: PgPool, secret_key: &SecretKey) -> Self {
        Self::with_cache(pool, secret_key, Duration::ZERO)
    }

    /// Trusts a verified credential for `cache_for`, which bounds how long a revoked key may
    /// still be accepted by this process.
    pub fn with_cache(pool: PgPool, secret_key: &SecretKey, cache_for: Duration) -> Self {
        Self {
            pool,
            hash_key: secret_key.derive("api-key-secret-hash"),
            looked: Arc::new(Mutex::new(HashMap::new())),
            cache_for,
            evictions: Arc::new(AtomicU64::new(0)),
            used: Arc::new(Mutex::new(HashSet::new())),
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
        // The thread's generator is not `Send`: done with it before any await.
        let (key, secret) = {
            let mut rng = rand::rng();
            let key = format!(
                "{}{}",
                environment.key_prefix(),
                Alphanumeric.sample_string(&mut rng, 24)
            );
            (key, Alphanumeric.sample_string(&mut rng, 40))
        };
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
        Ok(self.verify(header).await?.merchant)
    }

    /// Checks an `Authorization` header value; also gives the merchant's request budgets.
    pub async fn verify(&self, header: Option<&[u8]>) -> Result<Caller, AuthError> {
        let credentials =
            parse_basic(header.ok_or(AuthError::Missing)?).ok_or(AuthError::Malformed)?;
        self.verify_pair(credentials).await
    }

    /// Checks a key and its secret as the console's sign-in form sends them.
    pub async fn verify_key(&self, key: &str, secret: &str) -> Result<Caller, AuthError> {
        self.verify_pair(BasicCredentials {
            key: key.to_owned(),
            secret: secret.to_owned(),
        })
        .await
    }

    async fn verify_pair(&self, credentials: BasicCredentials) -> Result<Caller, AuthError> {
        let environment = Environment::of_key(&credentials.key).ok_or(AuthError::Invalid)?;
        let expected = self.hash(&credentials.key, &credentials.secret);
        let found = match self.cached(&credentials.key) {
            Some(found) => found,
            None => {
                let evictions_before = self.evictions.load(Ordering::Acquire);
                let stored = store::merchants::find_api_key(&self.pool, &credentials.key)
                    .await
                    .map_err(|e| {
                        tracing::error!(error = %e, "looking up an API key failed");
                        AuthError::Unavailable
                    })?;
                let found = stored.map(|stored| Found {
                    merchant_id: stored.merchant_id,
                    // The stored environment must agree with the key's prefix, so a key can
                    // never be presented as belonging to the other environment.
                    caller: (stored.environment == environment && !stored.revoked).then_some(
                        Caller {
                            merchant: Merchant {
                                merchant_id: stored.merchant_id,
                                environment,
                                key_id: stored.id,
                            },
                            limits: stored.limits,
                        },
                    ),
                    secret_hash: stored.secret_hash,
                });
                self.remember(credentials.key, found.clone(), evictions_before);
                found
            }
        };
        let found = found.ok_or(AuthError::Invalid)?;
        let matches: bool = found.secret_hash.ct_eq(expected.as_slice()).into();
        let caller = found.caller.filter(|_| matches).ok_or(AuthError::Invalid)?;
        self.note_use(caller.merchant.key_id);
        Ok(caller)
    }

    /// Whether `header` holds credentials verified a moment ago, answered from memory without
    /// a lookup: what an address past its failure budget may still use.
    pub fn verified_in_memory(&self, header: Option<&[u8]>) -> bool {
        let Some(credentials) = header.and_then(parse_basic) else {
            return false;
        };
        // The cache first: a stranger's unknown key costs no hashing.
        let Some(Some(found)) = self.cached(&credentials.key) else {
            return false;
        };
        let expected = self.hash(&credentials.key, &credentials.secret);
        found.caller.is_some() && bool::from(found.secret_hash.ct_eq(expected.as_slice()))
    }

    /// What was last looked up of `key`, while it is trusted: Some(None) for no such key.
    fn cached(&self, key: &str) -> Option<Option<Found>> {
        let looked = self.looked.lock().expect("lock poisoned");
        let entry = looked.get(key)?;
        (entry.until > Instant::now()).then(|| entry.found.clone())
    }

    fn remember(&self, key: String, found: Option<Found>, evictions_before: u64) {
        if self.cache_for.is_zero() {
            return;
        }
        let mut looked = self.looked.lock().expect("lock poisoned");
        // Evictions happen under this lock, so this check and the insert cannot straddle one.
        if self.evictions.load(Ordering::Acquire) != evictions_before {
            return;
        }
        if looked.len() >= CACHE_CAPACITY {
            looked.clear();
        }
        let until = Instant::now() + self.cache_for;
        looked.insert(key, Looked { found, until });
    }

    /// Drops what is remembered of `key` (revoked, or its merchant's budgets changed).
    pub fn forget_key(&self, key: &str) {
        self.evict(|looked| {
            looked.remove(key);
        });
    }

    /// Drops what is remembered of every key of `merchant_id`.
    pub fn forget_merchant(&self, merchant_id: Uuid) {
        self.evict(|looked| {
            looked.retain(|_, entry| {
                entry
                    .found
                    .as_ref()
                    .is_none_or(|found| found.merchant_id != merchant_id)
            });
        });
    }

    /// Drops everything remembered (changes may have been missed).
    pub fn forget_all(&self) {
        self.evict(HashMap::clear);
    }

    fn evict(&self, how: impl FnOnce(&mut HashMap<String, Looked>)) {
        let mut looked = self.looked.lock().expect("lock poisoned");
        how(&mut looked);
        self.evictions.fetch_add(1, Ordering::AcqRel);
    }

    fn note_use(&self, key_id: Uuid) {
        self.used.lock().expect("lock poisoned").insert(key_id);
    }

    /// The keys used since the last call.
    pub(super) fn take_used(&self) -> Vec<Uuid> {
        let mut used = self.used.lock().expect("lock poisoned");
        used.drain().collect()
    }

    pub(super) fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The keyed hash binds the secret to its key, so hashes cannot be swapped between keys.
    fn hash(&self, key: &str, secret: &str) -> [u8; 32] {
        let message = format!("{key}:{secret}");
        hmac_sha256(&self.hash_key, message.as_bytes())
    }
}
