//! Sessions of the operator console: opened by an operator's e-mail address and password, then
//! completed by their second factor (or, with none yet, by setting one up); carried by a cookie
//! holding an unguessable token (only its SHA-256 is stored); ended by signing out, by expiry,
//! or when the person is no longer an operator (their role is read with the session each time).

use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::distr::{Alphanumeric, SampleString};
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use subtle::ConstantTimeEq;
use uuid::Uuid;

use super::operators::Operator;
use courier_domain::operators::{OperatorRole, OpsPermission};
use courier_domain::team::Person;
use courier_store::operator_console as store;

/// What a session still owes before it opens the console.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecondFactorStep {
    /// A code from the person's app (or a recovery code).
    Code,
    /// The person has no second factor: they set one up.
    Setup,
}

/// A session as an operator console page sees it.
#[derive(Clone, Debug)]
pub struct OperatorSession {
    /// The person, named by their address (what the audit trail records).
    pub operator: Operator,
    pub person_id: Uuid,
    /// The person's name, for the page header.
    pub name: String,
    pub role: OperatorRole,
    /// What each of the session's forms carries.
    pub csrf_token: String,
    pub expires_at: DateTime<Utc>,
    /// None once the second factor was given.
    pub owes: Option<SecondFactorStep>,
}

impl OperatorSession {
    /// Whether a form's token is the session's, compared in constant time.
    pub fn accepts(&self, csrf_token: &str) -> bool {
        self.csrf_token
            .as_bytes()
            .ct_eq(csrf_token.as_bytes())
            .into()
    }

    /// Whether the session's role may do `permission`.
    pub fn may(&self, permission: OpsPermission) -> bool {
        self.role.may(permission)
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

    /// Opens a session for `person`, who gave their password and is an operator with `role`;
    /// it owes their second factor (`has_second_factor`: a code; else setting one up).
    pub async fn open(
        &self,
        person: &Person,
        role: OperatorRole,
        has_second_factor: bool,
    ) -> Result<OperatorSignedIn, sqlx::Error> {
        let token = random_token();
        let csrf_token = random_token();
        let now = crate::infra::clock::now();
        let expires_at = now + chrono::Duration::from_std(self.lifetime).unwrap_or_default();
        store::insert(
            &self.pool,
            &store::NewOperatorSession {
                token_hash: &hash(&token),
                person_id: person.id,
                operator: &person.email,
                csrf_token: &csrf_token,
                second_factor_pending: true,
                created_at: now,
                expires_at,
            },
        )
        .await?;
        Ok(OperatorSignedIn {
            token,
            session: OperatorSession {
                operator: Operator {
                    name: person.email.clone(),
                },
                person_id: person.id,
                name: person.name.clone(),
                role,
                csrf_token,
                expires_at,
                owes: Some(if has_second_factor {
                    SecondFactorStep::Code
                } else {
                    SecondFactorStep::Setup
                }),
            },
        })
    }

    /// The live session of `token`: none when it is unknown, expired, signed out, or its
    /// person is no longer an operator.
    pub async fn find(&self, token: &str) -> Result<Option<OperatorSession>, sqlx::Error> {
        let now = crate::infra::clock::now();
        let Some(row) = store::live(&self.pool, &hash(token), now).await? else {
            return Ok(None);
        };
        let owes = row
            .second_factor_pending
            .then_some(if row.has_second_factor {
                SecondFactorStep::Code
            } else {
                SecondFactorStep::Setup
            });
        Ok(Some(OperatorSession {
            operator: Operator { name: row.operator },
            person_id: row.person_id,
            name: row.name,
            role: row.role,
            csrf_token: row.csrf_token,
            expires_at: row.expires_at,
            owes,
        }))
    }

    /// The session of `token` was completed with its person's second factor.
    pub async fn second_factor_given(&self, token: &str) -> Result<(), sqlx::Error> {
        store::second_factor_given(&self.pool, &hash(token)).await
    }

    /// Ends the session of `token`.
    pub async fn close(&self, token: &str) -> Result<(), sqlx::Error> {
        store::end(&self.pool, &hash(token), crate::infra::clock::now()).await
    }
}
