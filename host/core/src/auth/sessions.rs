//! Sessions of the merchant console: opened by signing in with an API key and its secret,
//! carried by a cookie holding an unguessable token (only its SHA-256 is stored), ended by
//! signing out, by expiry, or by the key's revocation.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::distr::{Alphanumeric, SampleString};
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use subtle::ConstantTimeEq;
use uuid::Uuid;

use super::credentials::Merchant;
use courier_store::console as store;
pub use courier_store::form_answers::KeptAnswer;
use courier_store::form_answers::{self, FormOwner};

/// How long a form's answer is kept for its repeats.
const FORM_ANSWERS_KEPT: chrono::Duration = chrono::Duration::days(1);

/// A session as a console page sees it.
#[derive(Clone, Debug)]
pub struct ConsoleSession {
    pub merchant: Merchant,
    /// The API key signed in with (its secret is never kept).
    pub key: String,
    /// What each of the session's forms carries.
    pub csrf_token: String,
    pub expires_at: DateTime<Utc>,
    /// The merchant's own request budgets: the console spends them as the API does.
    pub limits: courier_domain::limits::LimitOverrides,
}

impl ConsoleSession {
    /// Whether a form's token is the session's, compared in constant time.
    pub fn accepts(&self, csrf_token: &str) -> bool {
        self.csrf_token
            .as_bytes()
            .ct_eq(csrf_token.as_bytes())
            .into()
    }
}

/// What signing in gives: the cookie's token and the session it opened.
pub struct SignedIn {
    pub token: String,
    pub session: ConsoleSession,
}

pub struct ConsoleSessions {
    pool: PgPool,
    lifetime: Duration,
}

fn form_owner(session: &ConsoleSession) -> FormOwner {
    FormOwner {
        merchant_id: session.merchant.merchant_id,
        environment: session.merchant.environment,
    }
}

fn hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

fn random_token() -> String {
    Alphanumeric.sample_string(&mut rand::rng(), 43)
}

impl ConsoleSessions {
    /// Sessions that last `lifetime` from sign-in.
    pub fn new(pool: PgPool, lifetime: Duration) -> Self {
        Self { pool, lifetime }
    }

    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// Opens a session for a merchant signed in with the key `key` (with the merchant's request
    /// budgets, `limits`).
    pub async fn open(
        &self,
        merchant: Merchant,
        limits: courier_domain::limits::LimitOverrides,
        key: &str,
    ) -> Result<SignedIn, sqlx::Error> {
        let token = random_token();
        let csrf_token = random_token();
        let now = crate::infra::clock::now();
        let expires_at = now + chrono::Duration::from_std(self.lifetime).unwrap_or_default();
        store::insert(
            &self.pool,
            &hash(&token),
            merchant.merchant_id,
            merchant.key_id,
            &csrf_token,
            now,
            expires_at,
        )
        .await?;
        Ok(SignedIn {
            token,
            session: ConsoleSession {
                merchant,
                key: key.to_owned(),
                csrf_token,
                expires_at,
                limits,
            },
        })
    }

    /// The live session of `token`: none when it is unknown, expired, signed out, or its key
    /// was revoked.
    pub async fn find(&self, token: &str) -> Result<Option<ConsoleSession>, sqlx::Error> {
        let now = crate::infra::clock::now();
        Ok(store::live(&self.pool, &hash(token), now)
            .await?
            .map(|row| ConsoleSession {
                merchant: Merchant {
                    merchant_id: row.merchant_id,
                    environment: row.environment,
                    key_id: row.key_id,
                },
                key: row.key,
                csrf_token: row.csrf_token,
                expires_at: row.expires_at,
                limits: row.limits,
            }))
    }

    /// Claims a form's `once` token for its first post (at `form_path`); None when it was
    /// claimed before, with what that first post came to.
    pub async fn claim_form(
        &self,
        session: &ConsoleSession,
        once: Uuid,
        form_path: &str,
    ) -> Result<Option<KeptAnswer>, sqlx::Error> {
        let now = crate::infra::clock::now();
        form_answers::claim(
            &self.pool,
            form_owner(session),
            once,
            form_path,
            now,
            now - FORM_ANSWERS_KEPT,
        )
        .await
    }

    /// Keeps what a form's first post came to: a redirect's target, or a page (neither for a
    /// page that showed a secret, which is shown once).
    pub async fn answer_form(
        &self,
        session: &ConsoleSession,
        once: Uuid,
        location: Option<&str>,
        page: Option<&str>,
    ) -> Result<(), sqlx::Error> {
        let now = crate::infra::clock::now();
        form_answers::answer(&self.pool, form_owner(session), once, location, page, now).await
    }

    /// Gives a form's token back: its post was refused and changed nothing.
    pub async fn release_form(
        &self,
        session: &ConsoleSession,
        once: Uuid,
    ) -> Result<(), sqlx::Error> {
        form_answers::release(&self.pool, form_owner(session), once).await
    }

    /// The answer kept for a form's token, the session's merchant and environment's only.
    pub async fn form_answer(
        &self,
        session: &ConsoleSession,
        once: Uuid,
    ) -> Result<Option<KeptAnswer>, sqlx::Error> {
        form_answers::find(&self.pool, form_owner(session), once).await
    }

    /// Ends the session of `token`.
    pub async fn close(&self, token: &str) -> Result<(), sqlx::Error> {
        store::end(&self.pool, &hash(token), crate::infra::clock::now()).await
    }
}
