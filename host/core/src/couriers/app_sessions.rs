//! Sessions of the couriers' app (`/courier/`): opened with the courier's credential or with
//! a one-time code an operator gave it; carried by a cookie holding an unguessable token
//! (only its SHA-256 is stored); ended by signing out, by expiry, or at once when the courier
//! is suspended (the app then says so). A session's CSRF token is the courier's own (a keyed
//! hash of its id): a move kept on the phone while signed out still carries the right token
//! once the courier signs in again.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::Rng;
use rand::distr::{Alphanumeric, SampleString};
use serde_json::json;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use subtle::ConstantTimeEq;
use thiserror::Error;
use uuid::Uuid;

use super::credential::{CourierAuthError, CourierCredentials};
use crate::audit::{self, AuditAction, AuditRecord};
use crate::infra::clock::now;
use crate::infra::secrets::{SecretKey, hmac_sha256};
use courier_domain::Vehicle;
use courier_domain::dispatch::CourierStatus;
use courier_store::courier_sessions as store;
use courier_store::couriers as couriers_store;

/// How long an operator's sign-in code may be used.
pub const SIGN_IN_CODE_LIFETIME: chrono::Duration = chrono::Duration::minutes(15);
/// Letters and digits nobody confuses when reading them off a screen (no 0/O, 1/I/L).
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
const CODE_LENGTH: usize = 8;

/// Why a session ended before it expired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndedBecause {
    SignedOut,
    Suspended,
}

impl EndedBecause {
    fn as_str(self) -> &'static str {
        match self {
            EndedBecause::SignedOut => "signed_out",
            EndedBecause::Suspended => "suspended",
        }
    }
}

/// The courier of a session, as the app's pages need it (read with the session each time).
#[derive(Clone, Debug)]
pub struct AppCourier {
    pub id: Uuid,
    pub name: String,
    pub market: String,
    pub vehicle: Vehicle,
    pub online: bool,
}

impl From<&couriers_store::CourierRow> for AppCourier {
    fn from(row: &couriers_store::CourierRow) -> Self {
        Self {
            id: row.id,
            name: row.name.clone(),
            market: row.market_id.clone(),
            vehicle: row.vehicle,
            online: row.online,
        }
    }
}

/// A live session as the app's pages see it.
#[derive(Clone, Debug)]
pub struct CourierAppSession {
    pub courier: AppCourier,
    /// What each of the session's forms carries.
    pub csrf_token: String,
    pub expires_at: DateTime<Utc>,
}

impl CourierAppSession {
    /// Whether a form's token is the session's, compared in constant time.
    pub fn accepts(&self, csrf_token: &str) -> bool {
        self.csrf_token
            .as_bytes()
            .ct_eq(csrf_token.as_bytes())
            .into()
    }
}

/// What a session cookie finds.
#[derive(Clone, Debug)]
pub enum SessionLookup {
    Live(Box<CourierAppSession>),
    /// Ended before its time; a suspended courier is told why.
    Ended {
        because: EndedBecause,
        suspension_reason: Option<String>,
    },
}

/// Why a sign-in was refused.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SignInRefusal {
    /// Neither a credential nor an unused, unexpired code.
    #[error("that is not a courier credential or a sign-in code in use")]
    Unknown,
    #[error("this courier is suspended")]
    Suspended,
    #[error("the service cannot check sign-ins just now")]
    Unavailable,
}

/// Why no sign-in code was given.
#[derive(Debug, Error)]
pub enum CodeRefusal {
    #[error("no such courier")]
    NotFound,
    #[error("this courier is suspended")]
    Suspended,
    #[error(transparent)]
    Store(#[from] sqlx::Error),
}

/// What signing in gives: the cookie's token and its courier.
pub struct CourierSignedIn {
    pub token: String,
    pub courier_id: Uuid,
}

/// A sign-in code as the operator reads it out, and until when it works.
pub struct IssuedCode {
    /// `XXXX-XXXX`.
    pub code: String,
    pub expires_at: DateTime<Utc>,
}

pub struct CourierAppSessions {
    pool: PgPool,
    lifetime: Duration,
    credentials: CourierCredentials,
    code_key: [u8; 32],
    csrf_key: [u8; 32],
}

fn token_hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

fn random_token() -> String {
    Alphanumeric.sample_string(&mut rand::rng(), 43)
}

/// A code as typed (any case, with or without the hyphen and spaces), in its stored form;
/// None when it cannot be a code.
fn normalise_code(typed: &str) -> Option<String> {
    let code: String = typed
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| c.to_ascii_uppercase())
        .collect();
    (code.len() == CODE_LENGTH && code.bytes().all(|b| CODE_ALPHABET.contains(&b))).then_some(code)
}

impl CourierAppSessions {
    /// Sessions that last `lifetime` (a shift) from sign-in.
    pub fn new(
        pool: PgPool,
        lifetime: Duration,
        credentials: CourierCredentials,
        secret_key: &SecretKey,
    ) -> Self {
        Self {
            pool,
            lifetime,
            credentials,
            code_key: secret_key.derive("courier-sign-in-code"),
            csrf_key: secret_key.derive("courier-app-csrf"),
        }
    }

    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    fn code_hash(&self, code: &str) -> [u8; 32] {
        hmac_sha256(&self.code_key, code.as_bytes())
    }

    /// The courier's CSRF token: the same in each of its sessions, unknown to anyone else.
    fn csrf_token(&self, courier_id: Uuid) -> String {
        hex::encode(hmac_sha256(&self.csrf_key, courier_id.as_bytes()))
    }

    /// Signs in with what the courier typed: its credential (`crk_…`) or an operator's code,
    /// which is then used up.
    pub async fn sign_in(&self, typed: &str) -> Result<CourierSignedIn, SignInRefusal> {
        let typed = typed.trim();
        let courier_id = if typed.starts_with("crk_") {
            match self.credentials.authenticate_token(typed).await {
                Ok(identity) => identity.courier_id,
                Err(CourierAuthError::Suspended) => return Err(SignInRefusal::Suspended),
                Err(CourierAuthError::Credential(crate::auth::AuthError::Unavailable)) => {
                    return Err(SignInRefusal::Unavailable);
                }
                Err(CourierAuthError::Credential(_)) => return Err(SignInRefusal::Unknown),
            }
        } else {
            let code = normalise_code(typed).ok_or(SignInRefusal::Unknown)?;
            let found = store::use_code(&self.pool, &self.code_hash(&code), now()).await;
            let courier_id = unavailable(found)?.ok_or(SignInRefusal::Unknown)?;
            let courier = unavailable(couriers_store::find(&self.pool, courier_id).await)?
                .ok_or(SignInRefusal::Unknown)?;
            if courier.status != CourierStatus::Active {
                return Err(SignInRefusal::Suspended);
            }
            courier_id
        };
        let token = random_token();
        let created_at = now();
        let expires_at = created_at + chrono::Duration::from_std(self.lifetime).unwrap_or_default();
        let opened = store::insert(
            &self.pool,
            &store::NewCourierSession {
                token_hash: &token_hash(&token),
                courier_id,
                csrf_token: &self.csrf_token(courier_id),
                created_at,
                expires_at,
            },
        )
        .await;
        unavailable(opened)?;
        Ok(CourierSignedIn { token, courier_id })
    }

    /// What the session of `token` is now: None when it is unknown or expired.
    pub async fn find(&self, token: &str) -> Result<Option<SessionLookup>, sqlx::Error> {
        let hash = token_hash(token);
        let Some(row) = store::find(&self.pool, &hash, now()).await? else {
            return Ok(None);
        };
        let courier = couriers_store::find(&self.pool, row.courier_id).await?;
        let suspended = |courier: Option<&couriers_store::CourierRow>| SessionLookup::Ended {
            because: EndedBecause::Suspended,
            suspension_reason: courier.and_then(|c| c.suspension_reason.clone()),
        };
        match (row.ended_because.as_deref(), courier) {
            (Some("suspended"), courier) => Ok(Some(suspended(courier.as_ref()))),
            (Some(_), _) => Ok(Some(SessionLookup::Ended {
                because: EndedBecause::SignedOut,
                suspension_reason: None,
            })),
            (None, Some(courier)) if courier.status == CourierStatus::Active => {
                Ok(Some(SessionLookup::Live(Box::new(CourierAppSession {
                    courier: AppCourier::from(&courier),
                    csrf_token: row.csrf_token,
                    expires_at: row.expires_at,
                }))))
            }
            // Suspended by a path that did not end its sessions: ended now.
            (None, courier) => {
                store::end(&self.pool, &hash, EndedBecause::Suspended.as_str(), now()).await?;
                Ok(Some(suspended(courier.as_ref())))
            }
        }
    }

    /// Ends the session of `token`: the courier signed out.
    pub async fn sign_out(&self, token: &str) -> Result<(), sqlx::Error> {
        store::end(
            &self.pool,
            &token_hash(token),
            EndedBecause::SignedOut.as_str(),
            now(),
        )
        .await
    }

    /// A one-time sign-in code for the courier, from `operator` (recorded in the audit
    /// trail, never the code), replacing any unused one. A suspended courier gets none.
    pub async fn issue_code(
        &self,
        operator: &str,
        courier_id: Uuid,
    ) -> Result<IssuedCode, CodeRefusal> {
        let courier = couriers_store::find(&self.pool, courier_id)
            .await?
            .ok_or(CodeRefusal::NotFound)?;
        if courier.status != CourierStatus::Active {
            return Err(CodeRefusal::Suspended);
        }
        let code = random_code();
        let issued_at = now();
        let expires_at = issued_at + SIGN_IN_CODE_LIFETIME;
        let mut tx = self.pool.begin().await?;
        store::replace_code(
            &mut tx,
            courier_id,
            &self.code_hash(&code),
            operator,
            issued_at,
            expires_at,
        )
        .await?;
        audit::record(
            &mut tx,
            &AuditRecord {
                operator,
                action: AuditAction::CourierSignInCodeIssued,
                target_type: "courier",
                target_id: courier_id.to_string(),
                merchant_id: None,
                before: None,
                after: Some(json!({ "expires_at": expires_at })),
                occurred_at: issued_at,
            },
        )
        .await?;
        tx.commit().await?;
        Ok(IssuedCode {
            code: format!("{}-{}", &code[..4], &code[4..]),
            expires_at,
        })
    }
}

/// A new sign-in code (the thread's generator is not kept across an await).
fn random_code() -> String {
    let mut rng = rand::rng();
    (0..CODE_LENGTH)
        .map(|_| CODE_ALPHABET[rng.random_range(0..CODE_ALPHABET.len())] as char)
        .collect()
}

fn unavailable<T>(result: Result<T, sqlx::Error>) -> Result<T, SignInRefusal> {
    result.map_err(|error| {
        tracing::error!(%error, "a courier app sign-in could not reach the database");
        SignInRefusal::Unavailable
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_read_as_people_type_them() {
        assert_eq!(normalise_code("abcd-efgh").as_deref(), Some("ABCDEFGH"));
        assert_eq!(normalise_code(" AB CD EF GH ").as_deref(), Some("ABCDEFGH"));
        assert_eq!(normalise_code("ABCDEFG"), None, "too short");
        assert_eq!(normalise_code("ABCDEFGHJ"), None, "too long");
        assert_eq!(normalise_code("ABCDEFG0"), None, "0 is never in a code");
        assert_eq!(normalise_code("ÄBCDEFGH"), None);
    }
}
