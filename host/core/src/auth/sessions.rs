//! Sessions of the merchant console: a person's, opened by signing in with their e-mail
//! address and password, in one of their teams and one environment at a time; carried by a
//! cookie holding an unguessable token (only its SHA-256 is stored); ended by signing out, by
//! expiry, by revoking it from the sessions page, or by the person leaving the team.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::distr::{Alphanumeric, SampleString};
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use subtle::ConstantTimeEq;
use uuid::Uuid;

use super::credentials::Merchant;
use courier_domain::Environment;
use courier_domain::team::{Acting, Permission, Person, Role};
use courier_store::console as store;
pub use courier_store::console::ListedSession;
pub use courier_store::form_answers::KeptAnswer;
use courier_store::form_answers::{self, FormOwner};

/// How long a form's answer is kept for its repeats.
const FORM_ANSWERS_KEPT: chrono::Duration = chrono::Duration::days(1);
/// How long a sign-in may wait for its second factor.
const CODE_WAIT: chrono::Duration = chrono::Duration::minutes(10);
/// How stale a session's "last seen" may get before a page notes it again: one write a minute
/// at most, not one a page.
const SEEN_EVERY: chrono::Duration = chrono::Duration::minutes(1);

/// A session as a console page sees it.
#[derive(Clone, Debug)]
pub struct ConsoleSession {
    pub id: Uuid,
    /// The merchant and environment the session is in (no key: `key_id` is nil).
    pub merchant: Merchant,
    pub merchant_name: String,
    pub person: Person,
    /// The person's role in the merchant's team.
    pub role: Role,
    /// What each of the session's forms carries.
    pub csrf_token: String,
    pub expires_at: DateTime<Utc>,
    /// When the person last gave their password.
    pub authenticated_at: DateTime<Utc>,
    /// The merchant's own request budgets: the console spends them as the API does.
    pub limits: courier_domain::limits::LimitOverrides,
    /// The team requires a second factor and the person has none yet: only its setup opens.
    pub needs_second_factor: bool,
}

impl ConsoleSession {
    /// Whether a form's token is the session's, compared in constant time.
    pub fn accepts(&self, csrf_token: &str) -> bool {
        self.csrf_token
            .as_bytes()
            .ct_eq(csrf_token.as_bytes())
            .into()
    }

    /// Whether the person's role may do `permission`.
    pub fn may(&self, permission: Permission) -> bool {
        self.role.may(permission)
    }

    /// Who the audit trail says acted: the person's address.
    pub fn actor(&self) -> &str {
        &self.person.email
    }

    /// The person acting on their team.
    pub fn acting(&self) -> Acting<'_> {
        Acting {
            person: &self.person,
            merchant_id: self.merchant.merchant_id,
            role: self.role,
        }
    }
}

/// What signing in gives: the cookie's token and the session it opened.
pub struct SignedIn {
    pub token: String,
}

/// Where a session was opened from, for its person's list of sessions.
pub struct OpenedFrom<'a> {
    pub user_agent: &'a str,
    pub client_address: &'a str,
}

pub struct ConsoleSessions {
    pool: PgPool,
    lifetime: Duration,
    reauthentication: Duration,
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

/// At most 200 characters of `text`: what a session list keeps of a browser's name.
fn clipped(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(200).collect()
}

impl ConsoleSessions {
    /// Sessions that last `lifetime` from sign-in, and ask for the password again
    /// `reauthentication` after it was last given.
    pub fn new(pool: PgPool, lifetime: Duration, reauthentication: Duration) -> Self {
        Self {
            pool,
            lifetime,
            reauthentication,
        }
    }

    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// Opens a session for `person` in `merchant_id`'s team (test environment first); with
    /// `code_wanted`, one that opens no page until the person's second factor is given.
    pub async fn open(
        &self,
        person: &Person,
        merchant_id: Uuid,
        from: &OpenedFrom<'_>,
        code_wanted: bool,
    ) -> Result<SignedIn, sqlx::Error> {
        let token = random_token();
        let now = crate::infra::clock::now();
        let expires_at = if code_wanted {
            now + CODE_WAIT
        } else {
            now + chrono::Duration::from_std(self.lifetime).unwrap_or_default()
        };
        store::insert(
            &self.pool,
            &store::NewSession {
                id: Uuid::new_v4(),
                token_hash: &hash(&token),
                person_id: person.id,
                merchant_id,
                environment: Environment::Test,
                csrf_token: &random_token(),
                now,
                expires_at,
                user_agent: &clipped(from.user_agent),
                client_address: &clipped(from.client_address),
                second_factor_pending: code_wanted,
            },
        )
        .await?;
        Ok(SignedIn { token })
    }

    /// The live session of `token`: none when it is unknown, expired, signed out, revoked, or
    /// its person has left the team.
    pub async fn find(&self, token: &str) -> Result<Option<ConsoleSession>, sqlx::Error> {
        let now = crate::infra::clock::now();
        let Some(row) = store::live(&self.pool, &hash(token), now).await? else {
            return Ok(None);
        };
        if now - row.last_seen_at > SEEN_EVERY {
            store::seen(&self.pool, row.id, now).await?;
        }
        Ok(Some(ConsoleSession {
            id: row.id,
            merchant: Merchant {
                merchant_id: row.merchant_id,
                environment: row.environment,
                key_id: Uuid::nil(),
            },
            merchant_name: row.merchant_name,
            person: Person {
                id: row.person_id,
                email: row.email,
                name: row.name,
            },
            role: row.role,
            csrf_token: row.csrf_token,
            expires_at: row.expires_at,
            authenticated_at: row.authenticated_at,
            limits: row.limits,
            needs_second_factor: row.needs_second_factor,
        }))
    }

    /// The person whose sign-in with `token` waits for its second factor.
    pub async fn waiting_for_code(&self, token: &str) -> Result<Option<Uuid>, sqlx::Error> {
        store::waiting_for_code(&self.pool, &hash(token), crate::infra::clock::now()).await
    }

    /// The second factor of `token`'s sign-in was given: the session opens pages for its
    /// whole lifetime from now.
    pub async fn code_given(&self, token: &str) -> Result<(), sqlx::Error> {
        let now = crate::infra::clock::now();
        let expires_at = now + chrono::Duration::from_std(self.lifetime).unwrap_or_default();
        store::code_given(&self.pool, &hash(token), now, expires_at).await
    }

    /// Moves the session of `token` to `merchant_id`'s team and `environment`; false when its
    /// person is not in that team.
    pub async fn switch(
        &self,
        token: &str,
        merchant_id: Uuid,
        environment: Environment,
    ) -> Result<bool, sqlx::Error> {
        store::switch(&self.pool, &hash(token), merchant_id, environment).await
    }

    /// Whether the session's person gave their password recently enough for a sensitive change.
    pub fn recently_authenticated(&self, session: &ConsoleSession) -> bool {
        let window = chrono::Duration::from_std(self.reauthentication).unwrap_or_default();
        crate::infra::clock::now() - session.authenticated_at < window
    }

    /// The session of `token`'s person has just given their password again.
    pub async fn reauthenticated(&self, token: &str) -> Result<(), sqlx::Error> {
        store::reauthenticated(&self.pool, &hash(token), crate::infra::clock::now()).await
    }

    /// The person's live sessions, the most recently used first.
    pub async fn of_person(&self, person_id: Uuid) -> Result<Vec<ListedSession>, sqlx::Error> {
        store::of_person(&self.pool, person_id, crate::infra::clock::now()).await
    }

    /// Ends the person's session `id`; false when they have none by that id.
    pub async fn revoke(&self, person_id: Uuid, id: Uuid) -> Result<bool, sqlx::Error> {
        store::revoke(&self.pool, person_id, id).await
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
