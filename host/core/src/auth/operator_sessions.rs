//! Sessions of the operator console: opened by signing in with an operator token, carried by a
//! cookie holding an unguessable token (only its SHA-256 is stored), ended by signing out, by
//! expiry, or when the operator token it was opened with is no longer configured.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::distr::{Alphanumeric, SampleString};
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use subtle::ConstantTimeEq;

use super::operators::{Operator, OperatorTokens, digest};
use courier_store::operator_console as store;

/// A session as an operator console page sees it.
#[derive(Clone, Debug)]
pub struct OperatorSession {
    pub operator: Operator,
    /// What each of the session's forms carries.
    pub csrf_token: String,
    pub expires_at: DateTime<Utc>,
}

impl OperatorSession {
    /// Whether a form's token is the session's, compared in constant time.
    pub fn accepts(&self, csrf_token: &str) -> bool {
        self.csrf_token
            .as_bytes()
            .ct_eq(csrf_token.as_bytes())
            .into()
    }
}

/// What signing in gives: the cookie's token and the session it opened.
pub struct OperatorSignedIn {
    pub token: String,
    pub session: OperatorSession,
}

pub struct OperatorSessions {
    pool: PgPool,
    lifetime: Duration,
}

fn hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// What binds a session to the operator token it was opened with, without keeping the token.
fn credential_check(session_token: &str, operator_digest: &[u8; 32]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"courier operator session\0");
    hasher.update(session_token.as_bytes());
    hasher.update(operator_digest);
    hasher.finalize().into()
}

fn random_token() -> String {
    Alphanumeric.sample_string(&mut rand::rng(), 43)
}

impl OperatorSessions {
    /// Sessions that last `lifetime` from sign-in.
    pub fn new(pool: PgPool, lifetime: Duration) -> Self {
        Self { pool, lifetime }
    }

    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// Opens a session for `operator`, signed in with `operator_token`.
    pub async fn open(
        &self,
        operator: Operator,
        operator_token: &str,
    ) -> Result<OperatorSignedIn, sqlx::Error> {
        let token = random_token();
        let now = crate::infra::clock::now();
        let row = store::OperatorSessionRow {
            operator: operator.name.clone(),
            credential_check: credential_check(&token, &digest(operator_token)).to_vec(),
            csrf_token: random_token(),
            expires_at: now + chrono::Duration::from_std(self.lifetime).unwrap_or_default(),
        };
        store::insert(&self.pool, &hash(&token), &row, now).await?;
        Ok(OperatorSignedIn {
            token,
            session: OperatorSession {
                operator,
                csrf_token: row.csrf_token,
                expires_at: row.expires_at,
            },
        })
    }

    /// The live session of `token`: none when it is unknown, expired, signed out, or the
    /// operator token it was opened with is no longer among `tokens`.
    pub async fn find(
        &self,
        token: &str,
        tokens: &OperatorTokens,
    ) -> Result<Option<OperatorSession>, sqlx::Error> {
        let now = crate::infra::clock::now();
        let Some(row) = store::live(&self.pool, &hash(token), now).await? else {
            return Ok(None);
        };
        let stands = tokens.vouches(&row.operator, |operator_digest| {
            credential_check(token, operator_digest)
                .ct_eq(row.credential_check.as_slice())
                .into()
        });
        Ok(stands.then_some(OperatorSession {
            operator: Operator { name: row.operator },
            csrf_token: row.csrf_token,
            expires_at: row.expires_at,
        }))
    }

    /// Ends the session of `token`.
    pub async fn close(&self, token: &str) -> Result<(), sqlx::Error> {
        store::end(&self.pool, &hash(token), crate::infra::clock::now()).await
    }
}
